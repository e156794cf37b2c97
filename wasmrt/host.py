"""Which Python this is: CPython (every engine, the converters) or Pyodide (CPython compiled to WebAssembly, in a
page or in Node), where only wasmrt.web runs models, through the JS package, and what needs native code or numpy's
C core (convert, quantize, sparsify, the native and wasmtime engines) says so in one line."""

from __future__ import annotations

import sys

from wasmrt.errors import UnavailableError

IN_PYODIDE = sys.platform == "emscripten"


def require_cpython(what: str) -> None:
    """Raise UnavailableError in Pyodide: `what` needs CPython."""
    if IN_PYODIDE:
        raise UnavailableError(f"{what} needs CPython (numpy, native code or wasmtime); in Pyodide, wasmrt runs "
                               "models through the JS runtime: rt = await wasmrt.web.init()")
