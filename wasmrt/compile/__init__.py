"""Model file -> .wrt: the importers (onnx/, tflite/), the IR, graph passes, the memory planner and the writer.

    from wasmrt.compile import convert
    data = convert("model.onnx", input_shapes={"x": (1, 3, 224, 224)}).data
"""

from wasmrt.host import require_cpython

require_cpython("wasmrt.compile (convert, sparsify)")

from wasmrt.compile.converter import Converted, convert

__all__ = ["Converted", "convert"]
