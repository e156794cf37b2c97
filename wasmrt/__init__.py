"""wasmrt: convert ONNX and TFLite models to .wrt and run them (reference, native, WebAssembly).

In Pyodide (CPython compiled to WebAssembly, in a page or in Node) the package holds only what runs there:
`rt = await wasmrt.web.init()` runs models on the JS runtime; load, Model and Stream, which need CPython, say so.
"""

from __future__ import annotations

from typing import Any

from wasmrt.host import IN_PYODIDE, require_cpython

__version__ = "0.1.0"

if not IN_PYODIDE:
    from wasmrt.engines import Model, load
    from wasmrt.stream import Stream
else:
    from wasmrt import web  # noqa: F401  (imports nothing of the CPython engines)

__all__ = ["Model", "Stream", "__version__", "load", "train"]


def __getattr__(name: str) -> Any:
    """wasmrt.train (callable: wasmrt.train(model, dataset, ...)), imported on first use: it pulls in the writer.
    In Pyodide, what needs CPython (load, Model, Stream, train) says so in one line."""
    if IN_PYODIDE and name in ("Model", "Stream", "load", "train"):
        require_cpython(f"wasmrt.{name}")
    if name == "train":
        import importlib

        return importlib.import_module("wasmrt.train")
    raise AttributeError(f"module 'wasmrt' has no attribute {name!r}")
