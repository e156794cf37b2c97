"""wasmrt in Pyodide (Python in a page, PyScript, JupyterLite, or Pyodide in Node): models run on the JS runtime (the
npm package "wasmrt"), through Pyodide's JS bridge.

    rt = await wasmrt.web.init()                     # the JS package: import map / node_modules "wasmrt", or a URL
    m = await rt.load("models/face_detector.wrt")    # URL, bytes, a path in Pyodide's file system (Node: or Node's)
    out = await m.run({"input": x})                  # numpy array, or a buffer (memoryview, array.array, bytes)
    m.inputs, m.outputs, m.labels; m.release()

Errors are the classes of wasmrt.errors, as in CPython. Outputs are numpy arrays when the program has imported
numpy, else memoryviews of the output's shape (docs/pyodide.md).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import Any, NamedTuple

from wasmrt.errors import InputError, WasmrtError
from wasmrt.web import bridge
from wasmrt.web.tensors import make_output, to_feed

__all__ = ["Model", "Runtime", "TensorInfo", "init"]

BARE = re.compile(r"^(@[\w.-]+/)?[\w-]+$")  # an npm package name: resolved by the import map or node_modules


class TensorInfo(NamedTuple):
    name: str
    shape: tuple[int, ...]
    dtype: str


def _infos(js_list: Any) -> list[TensorInfo]:
    return [TensorInfo(str(t.name), tuple(int(d) for d in t.shape), str(t.dtype)) for t in js_list]


def _package_specs(package: str) -> tuple[str, str]:
    """(the JS package's entry, its vision entry) for import(): a package name, or its folder / src/index.js."""
    if BARE.match(package):
        return package, f"{package}/vision"
    g = bridge.glue()
    if not g.isNode or re.match(r"^[a-z]+:", package):
        js, _ = bridge.pyodide_modules()
        if not g.isNode and getattr(js, "location", None) is not None:
            package = str(js.URL.new(package, js.location.href).href)  # import() would resolve it from pyodide's
    base = package.removesuffix("/src/index.js") if package.endswith(".js") else package.rstrip("/")
    return bridge.module_spec(f"{base}/src/index.js"), bridge.module_spec(f"{base}/vision/index.js")


async def init(package: str = "wasmrt", *, variant: str = "auto", threads: int | str = 1,
               wasm_paths: str | None = None, backend: str = "wasm") -> Runtime:
    """Load the JS runtime and start it (JS init(): the variant and threads chosen as in JS).

    package: the npm package "wasmrt" by name (a page's import map, Node's node_modules), or the URL (Node: path)
    of its folder or of its src/index.js. wasm_paths: where the wasm modules are, when not in the package's dist/.
    """
    _, ffi = bridge.pyodide_modules()
    entry, vision = _package_specs(package)
    mod = await bridge.call(bridge.glue().importModule(entry))
    opts: dict[str, Any] = {"variant": variant, "threads": threads, "backend": backend}
    if wasm_paths is not None:
        opts["wasmPaths"] = bridge.module_spec(wasm_paths) if bridge.glue().isNode else wasm_paths
    js_rt = await bridge.call(mod.init(ffi.to_js(opts, dict_converter=_js_object())))
    return Runtime(js_rt, mod, vision)


def _js_object() -> Any:
    js, _ = bridge.pyodide_modules()
    return js.Object.fromEntries


class Runtime:
    """The JS runtime (variant, reason, threads as JS reports them); load() gives Models."""

    def __init__(self, js_rt: Any, js_module: Any, vision_spec: str) -> None:
        self.js = js_rt
        self.module = js_module
        self._vision_spec = vision_spec
        self._vision: Any = None

    variant = property(lambda self: str(self.js.variant))
    reason = property(lambda self: str(self.js.reason))
    threads = property(lambda self: int(self.js.threads))

    async def load(self, source: str | PurePath | bytes | bytearray | memoryview, *, name: str | None = None,
                   max_memory: int | None = None, max_work: float | None = None) -> Model:
        """source: a URL (the page's, or Node's file path), a path in Pyodide's file system, or the model's bytes."""
        js, ffi = bridge.pyodide_modules()
        if isinstance(source, PurePath):
            source = str(source)
        if isinstance(source, str) and os.path.isfile(source):  # Pyodide's file system
            with open(source, "rb") as f:
                name, source = name or source, f.read()
        if isinstance(source, bytes | bytearray | memoryview):
            data = memoryview(source).cast("B")
            arg = js.Uint8Array.new(data.nbytes)
            arg.assign(data)
        elif isinstance(source, str):
            arg = source
        else:
            raise TypeError(f"load: expected a URL, a path or the model's bytes, got {type(source).__name__}")
        opts = {k: v for k, v in (("name", name), ("maxMemory", max_memory), ("maxWork", max_work)) if v is not None}
        return Model(await bridge.call(self.js.load(arg, ffi.to_js(opts, dict_converter=_js_object()))))

    async def vision(self) -> Any:
        """The JS package's vision module (FaceMesh, HandTracker, SelfieSegmenter, compositing)."""
        if self._vision is None:
            self._vision = await bridge.call(bridge.glue().importModule(self._vision_spec))
            bridge.remember_vision(self._vision)
        return self._vision


class Model:
    """A model on the JS runtime: inputs, outputs (TensorInfo), labels, await run(feeds), release()."""

    def __init__(self, js_model: Any) -> None:
        self.js = js_model
        self.inputs = _infos(js_model.inputs)
        self.outputs = _infos(js_model.outputs)
        self.labels = [str(s) for s in js_model.labels]
        self.name = str(js_model.name)
        self._sync = bool(bridge.glue().hasRunSync(js_model))  # see bridge.GLUE

    def __repr__(self) -> str:
        ins = ", ".join(f"{t.name}{list(t.shape)}:{t.dtype}" for t in self.inputs)
        return f"<wasmrt.web.Model {self.name!r} inputs=[{ins}]>"

    def __enter__(self) -> Model:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    async def run(self, feeds: Mapping[str, Any]) -> dict[str, Any]:
        """feeds: {input name: numpy array | buffer | (buffer, shape) | (buffer, shape, dtype)} (a 1-D buffer alone
        takes the input's shape; dtype, when the buffer's format does not say it: bytes are uint8); returns
        {output name: numpy array, or memoryview when numpy is not loaded}."""
        if not isinstance(feeds, Mapping):
            raise InputError("run() takes {input name: array}")
        _, ffi = bridge.pyodide_modules()
        items = []
        for k, v in feeds.items():
            parts = v if isinstance(v, tuple) and len(v) in (2, 3) and isinstance(v[1], Sequence) else (v,)
            items.append((str(k), to_feed(str(k), *parts)))
        proxies = [ffi.create_proxy(f.data) for _, f in items]
        args = (self.js, ffi.to_js([k for k, _ in items]), ffi.to_js(proxies), ffi.to_js([f.kind for _, f in items]),
                ffi.to_js([f.dtype for _, f in items]),
                ffi.to_js([list(f.shape) if f.shape is not None else 0 for _, f in items]))
        try:
            g = bridge.glue()
            res = bridge.call_sync(g.runSync, *args) if self._sync else await bridge.call(g.run(*args))
        finally:
            for p in proxies:
                p.destroy()
        out = {}
        for item in res:
            k, dtype, shape, data = item
            out[str(k)] = make_output(str(dtype), [int(d) for d in shape], data.assign_to)
        return out

    def release(self) -> None:
        try:
            self.js.release()
        except Exception as e:
            err = bridge.translated(e)
            if isinstance(err, WasmrtError):
                raise err from None
            raise
