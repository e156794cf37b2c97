"""The JS side of wasmrt.web, through Pyodide's JS bridge: importing the JS package, feeding and reading tensors
without extra copies (an input crosses as a typed-array view of Pyodide's memory, which the runtime copies once
into the engine; an output is copied once, into the numpy array or buffer Python keeps), and JS errors raised as
the same Python classes (by class name: both bindings' classes come from python_ref/errors.py)."""

from __future__ import annotations

import functools
import os
from typing import Any

from wasmrt import errors
from wasmrt.errors import UnavailableError, WasmrtError

# Small JS helpers evaluated once: a dynamic import (which Python cannot spell), feeds built from Pyodide buffer
# views (released after the run), and outputs flattened to [name, dtype, shape, data] so Python reads each in a call.
GLUE = r"""
// float16 data as its bits: a host's Float16Array has no Python buffer format
const bits = (t) => (t.dtype === "float16" && !(t.data instanceof Uint16Array)
  ? new Uint16Array(t.data.buffer, t.data.byteOffset, t.data.length) : t.data);
const flat = (out) => Object.entries(out).map(([k, t]) => [k, t.dtype, Array.from(t.shape), bits(t)]);
// feeds as views of Pyodide's memory (no copy), released once fn (sync or async) is done with them
function withFeeds(names, datas, kinds, dtypes, shapes, fn) {
  const feeds = {}, bufs = [];
  const release = () => { for (const b of bufs) b.release(); };
  let out;
  try {
    for (let i = 0; i < names.length; i++) {
      const b = datas[i].getBuffer(kinds[i]);
      bufs.push(b);
      feeds[names[i]] = shapes[i] ? { data: b.data, shape: shapes[i], dtype: dtypes[i] } : b.data;
    }
    out = fn(feeds);
  } catch (e) {
    release();
    throw e;
  }
  if (out instanceof Promise) return out.finally(release);
  release();
  return out;
}
({
  isNode: typeof process !== "undefined" && !!(process.versions && process.versions.node) &&
    typeof window === "undefined",
  importModule: (spec) => import(spec),
  nodeUrl: (path) => "file://" + path.split("/").map(encodeURIComponent).join("/"),
  // A model whose run() is its runSync() (the wasm backend's) runs synchronously: awaiting its promise from Python
  // would cost event-loop turns (Pyodide resumes a coroutine in a task, not a microtask), which a loaded machine makes
  // milliseconds. Other backends (WebGPU) run through their promise.
  hasRunSync: (model) => typeof model.runSync === "function",
  runSync(model, names, datas, kinds, dtypes, shapes) {
    return withFeeds(names, datas, kinds, dtypes, shapes, (feeds) => flat(model.runSync(feeds)));
  },
  async run(model, names, datas, kinds, dtypes, shapes) {
    return withFeeds(names, datas, kinds, dtypes, shapes, async (feeds) => flat(await model.run(feeds)));
  },
  // pipeline[method](frame) on a frame that is a view of Pyodide's memory (channels undefined: JS infers them)
  async onFrame(pipeline, method, pixels, width, height, channels) {
    const b = pixels.getBuffer("u8");
    try {
      return await pipeline[method]({ data: b.data, width, height, channels });
    } finally {
      b.release();
    }
  },
  // replaceBackground / blurBackground on views of Pyodide's memory -> [data, width, height, channels]
  compose(vision, how, frame, width, height, channels, mask, background, bgChannels, radius) {
    const bufs = [];
    const view = (p, kind) => { const b = p.getBuffer(kind); bufs.push(b); return b.data; };
    try {
      const img = { data: view(frame, "u8"), width, height, channels };
      const m = view(mask, "f32");
      const out = how === "blur" ? vision.blurBackground(img, m, radius === undefined ? {} : { radius })
        : vision.replaceBackground(img, m, bgChannels
          ? { data: view(background, "u8"), width, height, channels: bgChannels } : background);
      return [out.data, out.width, out.height, out.channels];
    } finally {
      for (const b of bufs) b.release();
    }
  },
  // a segmenter's replaceBackground / blurBackground (one call, mask handed back) on copies of Pyodide's memory (the
  // compositing reads them after the model's run, when Python may have grown that memory)
  // -> [data, width, height, channels, mask, model, ms]
  async segmentCompose(seg, how, frame, width, height, channels, background, bgChannels, radius) {
    const copy = (p) => { const b = p.getBuffer("u8"); try { return b.data.slice(); } finally { b.release(); } };
    const img = { data: copy(frame), width, height, channels };
    const r = how === "blur" ? await seg.blurBackground(img, { radius, mask: true })
      : await seg.replaceBackground(img, bgChannels ? { data: copy(background), width, height, channels: bgChannels }
        : background, { mask: true });
    return [r.image.data, r.image.width, r.image.height, r.image.channels, r.mask.data, r.model, r.ms];
  },
  async detect(mesh, pixels, width, height, channels) {
    const b = pixels.getBuffer("u8");
    try {
      return await mesh.detect({ data: b.data, width, height, channels });
    } finally {
      b.release();
    }
  },
})
"""


def pyodide_modules() -> tuple[Any, Any]:
    """(js, pyodide.ffi) or UnavailableError outside Pyodide."""
    try:
        import js  # type: ignore[import-not-found]
        import pyodide.ffi  # type: ignore[import-not-found]
    except ImportError:
        raise UnavailableError("wasmrt.web runs in Pyodide (Python in a page or in Node), through the JS runtime; "
                               "in CPython use wasmrt.load") from None
    return js, pyodide.ffi


@functools.cache
def glue() -> Any:
    pyodide_modules()
    from pyodide.code import run_js  # type: ignore[import-not-found]

    return run_js(GLUE)


_VISION: list[Any] = []  # the JS vision module last imported (Runtime.vision): compositing takes no runtime


def remember_vision(module: Any) -> None:
    _VISION[:] = [module]


def vision_module(who: str) -> Any:
    """The JS package's vision module, once a pipeline has imported it."""
    if not _VISION:
        raise RuntimeError(f"{who}: the JS vision module is not loaded yet; create a pipeline first, or "
                           "await rt.vision()")
    return _VISION[0]


def error_class(name: str) -> type[WasmrtError] | None:
    """The Python class of a JS wasmrt error, by its name (ModelFormatError, InputError, ...)."""
    cls = getattr(errors, name, None)
    return cls if isinstance(cls, type) and issubclass(cls, WasmrtError) else None


# JS's own error classes the vision pipelines throw for a bad frame or option, as Python's
BUILTIN_ERRORS: dict[str, type[Exception]] = {"TypeError": TypeError, "RangeError": ValueError}


def translated(e: BaseException, builtins: bool = False) -> BaseException:
    """A JsException carrying a wasmrt JS error (builtins: or a JS TypeError / RangeError) -> the Python error of
    the same class and message (else e)."""
    js_error = getattr(e, "js_error", None) or e
    name = str(getattr(js_error, "name", "") or "")
    cls = error_class(name) or (BUILTIN_ERRORS.get(name) if builtins else None)
    if cls is None:
        return e
    return cls(str(getattr(js_error, "message", "") or e))


def call_sync(fn: Any, *args: Any, builtins: bool = False) -> Any:
    """Call a JS function; a wasmrt JS error arrives as its Python class, as in call()."""
    _, ffi = pyodide_modules()
    try:
        return fn(*args)
    except ffi.JsException as e:
        err = translated(e, builtins)
        if err is e:
            raise
        raise err from None


async def call(awaitable: Any, builtins: bool = False) -> Any:
    """Await a JS promise; a wasmrt JS error arrives as its Python class, with one line, not a JS stack."""
    _, ffi = pyodide_modules()
    try:
        return await awaitable
    except ffi.JsException as e:
        err = translated(e, builtins)
        if err is e:
            raise
        raise err from None


def module_spec(source: str) -> str:
    """What import() takes for the JS package's entry: a URL or bare specifier as it is; in Node, a file path
    (absolute, or relative to the working directory) as a file: URL."""
    g = glue()
    if g.isNode and not source.startswith(("file:", "http:", "https:", "data:", "node:")) and (
            source.startswith(("/", "./", "../")) or os.path.sep in source):
        path = source if source.startswith("/") else os.path.join(str(_node_cwd()), source)
        return str(g.nodeUrl(os.path.normpath(path)))
    return source


def _node_cwd() -> str:
    js, _ = pyodide_modules()
    return str(js.process.cwd())
