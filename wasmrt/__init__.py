"""wasmrt: convert ONNX and TFLite models to .wrt and run them (reference, native, WebAssembly)."""

__version__ = "0.1.0"

from wasmrt.engines import Model, load
from wasmrt.stream import Stream

__all__ = ["Model", "Stream", "__version__", "load", "train"]


def __getattr__(name: str) -> object:
    """wasmrt.train (callable: wasmrt.train(model, dataset, ...)), imported on first use: it pulls in the writer."""
    if name == "train":
        import importlib

        return importlib.import_module("wasmrt.train")
    raise AttributeError(f"module 'wasmrt' has no attribute {name!r}")
