"""wasmrt: convert ONNX and TFLite models to .wrt and run them (reference, native, WebAssembly)."""

__version__ = "0.1.0"

from wasmrt import train  # callable: wasmrt.train(model, dataset, ...) (wasmrt/train/__init__.py)
from wasmrt.engines import Model, load
from wasmrt.stream import Stream

__all__ = ["Model", "Stream", "__version__", "load", "train"]
