"""TFLite -> wasmrt Graph.

TFLite already uses our layouts (NHWC activations, OHWI convolution weights), so the importer maps ops one to one
(depthwise weights aside), turns SAME/VALID into explicit pads and fused activations into act_min/act_max, and
folds every op whose inputs are all constant (fp16 weights behind DEQUANTIZE, weight transposes, shape arithmetic)
with the reference implementation. The per-op rules live in ops.py and recurrent.py, the import's state in
context.py, the FlatBuffer decoding in reader.py.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from wasmrt.compile.ir import Graph
from wasmrt.compile.tflite import ops, recurrent
from wasmrt.compile.tflite.context import Context, OpConverter
from wasmrt.compile.tflite.reader import read_model
from wasmrt.errors import ModelFormatError

# every converter, by TFLite builtin name (or custom code)
CONVERTERS: dict[str, OpConverter] = {**ops.CONVERTERS, **recurrent.CONVERTERS}


def import_tflite(path_or_bytes: str | os.PathLike[str] | bytes,
                  input_shapes: Mapping[str, Sequence[int]] | None = None) -> Graph:
    """Convert a TFLite model to a Graph: float (fp16 weights allowed) or quantized (int8/uint8, per tensor or per
    channel, QUANTIZE/DEQUANTIZE at the borders; uint8 runs as int8 inside, see python_ref/README.md).

    input_shapes overrides the shape of graph inputs by name (needed when the file leaves a dimension dynamic).
    """
    if isinstance(path_or_bytes, bytes | bytearray | memoryview):
        data, source = bytes(path_or_bytes), "<tflite bytes>"
    else:
        source = os.path.basename(os.fspath(path_or_bytes))
        try:
            with open(path_or_bytes, "rb") as f:
                data = f.read()
        except OSError as e:
            raise ModelFormatError(f"{source}: cannot read the file ({e.strerror})") from e
    model = read_model(data, source)
    return Context(model, dict(input_shapes or {}), CONVERTERS).convert()
