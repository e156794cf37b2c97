"""The C engine compiled to WebAssembly, run by wasmtime (scalar, SIMD128 or relaxed SIMD module).

Each Model gets its own instance (its own linear memory) unless one is passed in; WasmInstance is also the
low-level handle the memory-reuse tests drive directly. An instance is used by one thread at a time (its lock);
after a trap (an engine bug) it refuses further calls, since its memory may be inconsistent.

With threads > 1 a model runs in the threaded build (wasmrt-<variant>-mt.wasm) on a shared memory that further
instances of the module, one per engine thread, run parallel regions in (wrt_worker_run, on Python threads: wasm
calls release the GIL). Those threads live as long as the process, so one such instance per (variant, threads) is
shared by every model that asks for it.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from python_ref.wrt_file import read_metadata
from wasmrt import paths
from wasmrt.engines.base import DEFAULT_LIMITS, DTYPES, Limits, TensorSpec, conv_algo, sparse_policy
from wasmrt.engines.c_model import CEngineModel
from wasmrt.engines.errors import engine_error
from wasmrt.errors import WasmrtError

VARIANTS = ("scalar", "simd", "relaxed")
THREADED = ("simd", "relaxed")  # variants with a threaded build
DEFAULT_VARIANT = "relaxed"
STACK_BYTES = 256 * 1024  # each engine thread's stack, as the main one (wasmrt/dev/build.py)
MAX_PAGES = 32768  # the threaded modules' declared memory maximum (build.THREADS_MAX_MEMORY)
_lock = threading.Lock()
_engines: dict[bool, object] = {}
_modules: dict[tuple[Path, bool], object] = {}
_threaded: dict[tuple[str, int], WasmInstance] = {}


def wasm_path(variant: str, folder: Path | None = None) -> Path:
    """The module file shipped in the package, or in `folder` (modules built for given models: `wasmrt build
    --for`); an engine never builds (`wasmrt build` refreshes the shipped ones in a checkout)."""
    if variant not in VARIANTS and variant.removesuffix("-mt") not in THREADED:
        raise ValueError(f"wasm variant {variant!r}: expected one of {', '.join(VARIANTS)}")
    path = (folder or paths.wasm_dir()) / f"wasmrt-{variant}.wasm"
    if not path.is_file():
        raise WasmrtError(f"the wasm engine's module {path} is missing: run `wasmrt build` in a checkout, or "
                          "reinstall the package")
    return path


def _module(file: str, deterministic: bool = False, folder: Path | None = None):  # -> (Engine, Module)
    """deterministic: wasmtime's deterministic relaxed SIMD (on x86 its int8 dot product is then signed x signed, as
    aarch64's sdot, instead of pmaddubsw's saturating unsigned x signed), for the tests of every kernel table."""
    import wasmtime

    with _lock:
        if deterministic not in _engines:
            cfg = wasmtime.Config()
            cfg.wasm_simd = True
            cfg.wasm_relaxed_simd = True
            cfg.wasm_relaxed_simd_deterministic = deterministic
            cfg.wasm_threads = True
            cfg.shared_memory = True
            _engines[deterministic] = wasmtime.Engine(cfg)
        engine = _engines[deterministic]
        path = wasm_path(file, folder)
        if (path, deterministic) not in _modules:
            _modules[path, deterministic] = wasmtime.Module(engine, path.read_bytes())
        return engine, _modules[path, deterministic]


@atexit.register
def _close_cached() -> None:
    """Close the cached wasmtime handles at exit, while wasmtime can: at interpreter teardown its functions are
    gone first, and the handles' finalizers then print errors. (wasmtime counts references: stores still running
    keep what they use.)"""
    with _lock:
        for handle in (*_modules.values(), *_engines.values()):
            handle.close()
        _modules.clear()
        _engines.clear()


def _shared_memory(engine):  # -> wasmtime.SharedMemory usable as an import
    import wasmtime
    from wasmtime import _ffi as ffi

    class SharedMemory(wasmtime.SharedMemory):
        # wasmtime-py 30-50 wraps the pointer once too often when a shared memory is an import
        def _as_extern(self):  # type: ignore[no-untyped-def]
            union = ffi.wasmtime_extern_union(sharedmemory=self.ptr())
            return ffi.wasmtime_extern_t(ffi.WASMTIME_EXTERN_SHAREDMEMORY, union)

    return SharedMemory(engine, wasmtime.MemoryType(wasmtime.Limits(64, MAX_PAGES), shared=True))


def threaded_instance(variant: str, threads: int) -> WasmInstance:
    """The process-wide instance of `variant` running on `threads` threads (created on first use)."""
    with _lock:
        inst = _threaded.get((variant, threads))
    if inst is None:
        inst = WasmInstance(variant, threads)
        with _lock:
            inst = _threaded.setdefault((variant, threads), inst)
    return inst


class WasmInstance:
    """One instance of a wasmrt module: its exports and linear memory (and, threaded, its engine threads)."""

    def __init__(self, variant: str = DEFAULT_VARIANT, threads: int = 1, deterministic: bool = False,
                 folder: Path | None = None) -> None:
        """folder: where the modules are (default: the package's full modules)."""
        import wasmtime

        threaded = threads > 1 and variant in THREADED
        engine, module = _module(f"{variant}-mt" if threaded else variant, deterministic, folder)
        self.variant_name = variant
        self.store = wasmtime.Store(engine)
        self.shared = _shared_memory(engine) if threaded else None
        self.instance = wasmtime.Instance(self.store, module, [self.shared] if threaded else [])
        self.exports = self.instance.exports(self.store)
        self.memory = self.exports["memory"]
        self.lock = threading.RLock()
        self.broken: str | None = None
        self.threads = 1
        for _ in range(threads - 1 if threaded else 0):
            stack = self.ptr("wrt_alloc", STACK_BYTES)
            if not stack:
                break
            ready = threading.Event()
            threading.Thread(target=self._engine_thread, args=(engine, module, stack + STACK_BYTES, ready),
                             name="wasmrt-engine", daemon=True).start()
            ready.wait()
            self.threads += 1

    def _engine_thread(self, engine, module, stack_top: int, ready: threading.Event) -> None:  # type: ignore[no-untyped-def]
        import wasmtime

        store = wasmtime.Store(engine)
        ex = wasmtime.Instance(store, module, [self.shared]).exports(store)
        ex["__stack_pointer"].set_value(store, stack_top)  # the main instance's stack is elsewhere in the memory
        ready.set()
        ex["wrt_worker_run"](store)  # never returns

    def call(self, name: str, *args: float) -> int:
        import wasmtime

        with self.lock:
            if self.broken:
                raise WasmrtError(f"this wasm engine instance stopped after a crash ({self.broken}); load the model "
                                  "again")
            try:
                r = self.exports[name](self.store, *args)
            except wasmtime.Trap as e:
                try:
                    where = self.cstr(int(self.exports["wrt_active_op"](self.store)) & 0xFFFFFFFF)
                except wasmtime.Trap:  # the engine's state is too damaged to say
                    where = ""
                reason = e.message.strip().splitlines()[-1].strip()  # "1: wasm trap: out of bounds memory access"
                self.broken = reason.split(": ", 1)[-1] + (f" in {where}" if where else "")
                raise WasmrtError(f"the engine crashed in {name}: {self.broken} (please report this with the "
                                  "model)") from None
        return 0 if r is None else int(r)

    def ptr(self, name: str, *args: float) -> int:
        return self.call(name, *args) & 0xFFFFFFFF

    @property
    def pages(self) -> int:
        return int(self.shared.size() if self.shared else self.memory.size(self.store))

    def _len(self) -> int:
        return int(self.shared.data_len() if self.shared else self.memory.data_len(self.store))

    def _base(self, ptr: int, n: int) -> int:
        if ptr < 0 or ptr + n > self._len():
            raise WasmrtError(f"wasm memory access [{ptr}, {ptr + n}) out of bounds")
        data = self.shared.data_ptr() if self.shared else self.memory.data_ptr(self.store)
        return ctypes.cast(data, ctypes.c_void_p).value + ptr

    def write(self, ptr: int, data: bytes | np.ndarray) -> None:
        if isinstance(data, np.ndarray):
            ctypes.memmove(self._base(ptr, data.nbytes), data.ctypes.data, data.nbytes)
        else:
            ctypes.memmove(self._base(ptr, len(data)), data, len(data))

    def read_into(self, ptr: int, out: np.ndarray) -> None:
        ctypes.memmove(out.ctypes.data, self._base(ptr, out.nbytes), out.nbytes)

    def read(self, ptr: int, n: int) -> bytes:
        return ctypes.string_at(self._base(ptr, n), n)

    def cstr(self, ptr: int) -> str:
        if not ptr:
            return ""
        raw = self.read(ptr, min(4096, self._len() - ptr))
        return raw.split(b"\0", 1)[0].decode("utf-8", "replace")

    def error_message(self) -> str:
        return self.cstr(self.ptr("wrt_error_message"))

    def call_float(self, name: str, *args: float) -> float:
        """An export that returns a double (call() returns ints); 0.0 for one that returns nothing."""
        with self.lock:
            if self.broken:
                raise WasmrtError(f"this wasm engine instance stopped after a crash ({self.broken})")
            r = self.exports[name](self.store, *args)
        return 0.0 if r is None else float(r)

    def load(self, data: bytes, name: str = "", limits: Limits = DEFAULT_LIMITS, sparse: str = "auto",
             conv: str = "auto", choices: Sequence[int] = (), force: int = -1) -> int:
        """A streamed load (wrt_load_begin/wrt_load_next): the engine frees its copy of the file once the structure
        is read and asks for each constant again as it packs it, so the file's bytes and the packed weights are never
        in linear memory together. Returns the model pointer or raises the engine's error."""
        policy, algo = sparse_policy(sparse), conv_algo(conv)
        with self.lock:
            io = self.ptr("wrt_alloc", 12)  # the error code, then the engine's requests {address, file offset}
            buf = self.ptr("wrt_alloc", len(data) or 1) if io else 0
            if not buf:
                if io:
                    self.call("wrt_free", io)
                raise WasmrtError(f"{name}: out of wasm memory for the {len(data):,}-byte model")
            old_policy = self.call("wrt_set_sparse_policy", policy)
            old_algo = self.call("wrt_set_conv_algo", algo)
            try:
                self._set_choices(choices, force)
                self.write(buf, data)
                model = self.ptr("wrt_load_begin", buf, len(data), limits.max_memory, limits.max_work, io)
                code = int(np.frombuffer(self.read(io, 4), "<i4")[0])
                while model:
                    n = self.call("wrt_load_next", model, io + 4)
                    if n == 0:
                        break
                    if n < 0:
                        code = -n
                        self.call("wrt_release", model)
                        model = 0
                        break
                    dst, at = (int(v) for v in np.frombuffer(self.read(io + 4, 8), "<u4"))
                    self.write(dst, data[at:at + n])
            finally:
                if not self.broken:
                    self.call("wrt_free", io)
                    self.call("wrt_set_sparse_policy", old_policy)
                    self.call("wrt_set_conv_algo", old_algo)
                    self.call("wrt_set_choices", 0, 0)
                    self.call("wrt_force_choice", -1)
        if not model:
            raise engine_error(code, self.error_message(), name)
        return model


    def _set_choices(self, choices: Sequence[int], force: int) -> None:
        """wrt_set_choices / wrt_force_choice for the next load (the engine copies the vector)."""
        self.call("wrt_force_choice", force)
        if not choices:
            return
        vec = np.asarray(choices, "<i4")
        buf = self.ptr("wrt_alloc", vec.nbytes)
        if not buf:
            raise WasmrtError("out of wasm memory for the choice vector")
        try:
            self.write(buf, vec)
            code = self.call("wrt_set_choices", buf, len(vec))
        finally:
            self.call("wrt_free", buf)
        if code:
            raise engine_error(code, self.error_message(), "")


class WasmModel(CEngineModel):
    engine = "wasm"

    def __init__(self, data: bytes, name: str = "", variant: str | None = None,
                 instance: WasmInstance | None = None, limits: Limits = DEFAULT_LIMITS, threads: int = 1,
                 sparse: str = "auto", conv: str = "auto", choices: Sequence[int] = (), force: int = -1) -> None:
        variant = variant or DEFAULT_VARIANT
        if instance is None:
            instance = threaded_instance(variant, threads) if threads > 1 else WasmInstance(variant)
        self.wasm = instance
        self._ptr: int | None = None
        self._ptr = self.wasm.load(bytes(data), name, limits, sparse, conv, choices, force)
        self.threads = self.wasm.call("wrt_set_threads", self._ptr, self.wasm.threads) if self.wasm.threads > 1 else 1
        self.variant = self.wasm.cstr(self.wasm.ptr("wrt_model_target", self._ptr))
        super().__init__(self._specs(0), self._specs(1))
        self.metadata = read_metadata(bytes(data))
        self.arena_size = self.wasm.ptr("wrt_arena_size", self._ptr)
        self.weights_size = self.wasm.ptr("wrt_weights_size", self._ptr)
        self.memory_size = self.wasm.ptr("wrt_memory_size", self._ptr)

    # per-op algorithm choice (wasmrt.engines.choose)
    def op_count(self) -> int:
        return self.wasm.call("wrt_num_ops", self._live())

    def op_info(self, i: int) -> tuple[str, str, str, list[str], int]:
        w, p = self.wasm, self._live()
        text = [w.cstr(w.ptr(f, p, i)) for f in ("wrt_op_type", "wrt_op_name", "wrt_op_kernel")]
        cands = [w.cstr(w.ptr("wrt_op_choice_name", p, i, k)) for k in range(w.call("wrt_op_num_choices", p, i))]
        return text[0], text[1], text[2], cands, w.call("wrt_op_chosen", p, i)

    def op_choice(self, i: int) -> tuple[int, int]:
        w, p = self.wasm, self._live()
        return w.call("wrt_op_num_choices", p, i), w.call("wrt_op_chosen", p, i)

    def op_span(self, i: int) -> int:
        return self.wasm.call("wrt_op_span", self._live(), i)

    def run_ops(self, begin: int, end: int) -> None:
        with self.wasm.lock:
            code = self.wasm.call("wrt_run_ops", self._live(), begin, end)
            if code:
                raise engine_error(code, self.wasm.error_message(), "")

    def tune(self, name: str, *args: float) -> float:
        return self.wasm.call_float(name, *args)

    def _specs(self, which: int) -> list[TensorSpec]:
        w, p = self.wasm, self._ptr
        count = w.call("wrt_num_inputs" if which == 0 else "wrt_num_outputs", p)
        specs = []
        for i in range(count):
            rank = w.call("wrt_tensor_rank", p, which, i)
            shape = tuple(w.call("wrt_tensor_dim", p, which, i, a) for a in range(rank))
            bounds = None
            if which == 0:
                b = tuple((w.call("wrt_input_dim_min", p, i, a), w.call("wrt_input_dim_max", p, i, a))
                          for a in range(rank))
                bounds = b if any(lo != hi for lo, hi in b) else None
            specs.append(TensorSpec(w.cstr(w.ptr("wrt_tensor_name", p, which, i)), shape,
                                    DTYPES[w.call("wrt_tensor_dtype", p, which, i)], bounds))
        return specs

    def _resize_locked(self, shapes: list[tuple[int, ...]]) -> None:
        with self.wasm.lock:
            if self._ptr is None:
                raise WasmrtError("the model was released")
            w = self.wasm
            dims = np.array([d for s in shapes for d in s], "<i4")
            buf = w.ptr("wrt_alloc", max(dims.nbytes, 4))
            if not buf:
                raise WasmrtError("out of wasm memory for the input shapes")
            try:
                w.write(buf, dims)
                code = w.call("wrt_resize_inputs", self._ptr, buf, len(dims))
            finally:
                if not w.broken:
                    w.call("wrt_free", buf)
            if code:
                raise engine_error(code, w.error_message(), "")
            self.inputs, self.outputs = self._specs(0), self._specs(1)
            self.arena_size = w.ptr("wrt_arena_size", self._ptr)
            self.memory_size = w.ptr("wrt_memory_size", self._ptr)

    def _run(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        with self.wasm.lock:  # models sharing an instance share its memory and its error message
            return self._run_locked(arrays)

    def _run_locked(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        if self._ptr is None:
            raise WasmrtError("the model was released")
        w, p = self.wasm, self._ptr
        for i, a in enumerate(arrays):
            w.write(w.ptr("wrt_input_ptr", p, i), a)
        code = w.call("wrt_run", p)
        if code:
            raise engine_error(code, w.error_message(), "")
        outs = []
        for i, spec in enumerate(self.outputs):
            y = np.empty(spec.shape, spec.dtype)
            w.read_into(w.ptr("wrt_output_ptr", p, i), y)
            outs.append(y)
        return outs

    def _free(self) -> None:
        if self._ptr is not None:
            ptr, self._ptr = self._ptr, None
            if not self.wasm.broken:
                self.wasm.call("wrt_release", ptr)

    def __del__(self) -> None:
        if getattr(self, "_ptr", None) is not None:
            with contextlib.suppress(Exception):  # interpreter shutdown: the instance may already be gone
                self.release()
