"""The C engine as a native shared library, through ctypes: a checkout's build/native/libwasmrt.so (`wasmrt build`
makes it), or, installed, wasmrt/engines/lib/libwasmrt.so (a platform wheel ships it; `pip install` from a checkout
or an sdist compiles it with the machine's C compiler). Loading never compiles: a missing library, or a checkout's
built from other C sources, is an error that says what to run.

The library picks its kernels at load time from the CPU (AVX-512 VNNI > AVX-512 > AVX2+FMA > scalar; the VNNI table
differs only in its int8 kernels); `variant` (or the
WASMRT_FORCE_TARGET environment variable) forces one, which must be available on this CPU.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from python_ref.wrt_file import read_metadata
from wasmrt.engines.base import DEFAULT_LIMITS, DTYPES, Limits, TensorSpec, conv_algo, sparse_policy
from wasmrt.engines.c_model import CEngineModel
from wasmrt.engines.errors import engine_error
from wasmrt.errors import WasmrtError

VARIANTS = ("scalar", "avx2", "avx512", "avx512vnni")
_lib: ctypes.CDLL | None = None
_lock = threading.Lock()


# Beside the library (names from the build recipe, wasmrt/dev/native_build.py, which this layer does not import):
INPUTS_SUFFIX = ".inputs.json"  # a checkout's: the globs and SHA-256 of the C sources `wasmrt build` compiled
UNAVAILABLE_SUFFIX = ".unavailable"  # an installed package's: why the package build made no library


def library_path() -> Path:
    from wasmrt import paths

    return paths.native_library()


def _changed_sources(root: Path, lib: Path) -> list[str]:
    """The C sources that differ from those `lib` was built from (every one when there is no record of them)."""
    try:
        record = json.loads(lib.with_name(lib.name + INPUTS_SUFFIX).read_text())
        files, globs = dict(record["files"]), list(record["globs"])
    except (OSError, ValueError, KeyError, TypeError):
        return ["(no record of the sources it was built from)"]
    changed = [rel for rel, digest in files.items()
               if not (root / rel).is_file() or hashlib.sha256((root / rel).read_bytes()).hexdigest() != digest]
    added = {p.relative_to(root).as_posix() for g in globs for p in root.glob(g)} - files.keys()
    return sorted([*changed, *added])


def unavailable_reason() -> str | None:
    """Why the native library cannot be loaded here, or None when it can."""
    from wasmrt import paths

    path = library_path()
    root = paths.checkout()
    if root is not None:
        rel = path.relative_to(root) if path.is_relative_to(root) else path
        fix = f"run `wasmrt build --only native` in {root} (loading an engine never compiles C)"
        if not path.is_file():
            return f"the native library {rel} is not built: {fix}"
        changed = _changed_sources(root, path)
        if changed:
            more = f" and {len(changed) - 1} more" if len(changed) > 1 else ""
            return f"the native library {rel} was built from other C sources ({changed[0]}{more}): {fix}"
        return None
    if path.is_file():
        return None
    note = path.with_name(path.name + UNAVAILABLE_SUFFIX)
    fix = ('the wasm engine runs without it (engine="wasm"); for the native engine install a C compiler (gcc or '
           "clang) and reinstall wasmrt from source (pip install --force-reinstall --no-cache-dir <checkout or sdist>)")
    try:
        lines = note.read_text().splitlines()
        reason = lines[0].strip()
    except (OSError, IndexError):
        return f"the native library is missing from the installed package ({path}): reinstall wasmrt; {fix}"
    details = f" (the compiler's words: {note})" if len(lines) > 1 else ""
    return f"the native engine was not built when wasmrt was installed: {reason}{details}; {fix}"


def _declare(lib: ctypes.CDLL) -> None:
    c = ctypes
    sig = {
        "wrt_load": (c.c_void_p, [c.c_void_p, c.c_size_t, c.POINTER(c.c_int)]),
        "wrt_release": (None, [c.c_void_p]),
        "wrt_run": (c.c_int, [c.c_void_p]),
        "wrt_error_message": (c.c_char_p, []),
        "wrt_target_name": (c.c_char_p, []),
        "wrt_model_target": (c.c_char_p, [c.c_void_p]),
        "wrt_num_inputs": (c.c_int, [c.c_void_p]),
        "wrt_num_outputs": (c.c_int, [c.c_void_p]),
        "wrt_tensor_name": (c.c_char_p, [c.c_void_p, c.c_int, c.c_int]),
        "wrt_tensor_rank": (c.c_int, [c.c_void_p, c.c_int, c.c_int]),
        "wrt_tensor_dim": (c.c_int, [c.c_void_p, c.c_int, c.c_int, c.c_int]),
        "wrt_tensor_dtype": (c.c_int, [c.c_void_p, c.c_int, c.c_int]),
        "wrt_tensor_bytes": (c.c_size_t, [c.c_void_p, c.c_int, c.c_int]),
        "wrt_input_ptr": (c.c_void_p, [c.c_void_p, c.c_int]),
        "wrt_output_ptr": (c.c_void_p, [c.c_void_p, c.c_int]),
        "wrt_arena_size": (c.c_size_t, [c.c_void_p]),
        "wrt_weights_size": (c.c_size_t, [c.c_void_p]),
        "wrt_load_with_limits": (c.c_void_p, [c.c_void_p, c.c_size_t, c.c_double, c.c_double, c.POINTER(c.c_int)]),
        "wrt_memory_size": (c.c_size_t, [c.c_void_p]),
        "wrt_work_estimate": (c.c_double, [c.c_void_p]),
        "wrt_set_sparse_policy": (c.c_int, [c.c_int]),
        "wrt_set_conv_algo": (c.c_int, [c.c_int]),
        "wrt_input_dim_min": (c.c_int, [c.c_void_p, c.c_int, c.c_int]),
        "wrt_input_dim_max": (c.c_int, [c.c_void_p, c.c_int, c.c_int]),
        "wrt_resize_inputs": (c.c_int, [c.c_void_p, c.POINTER(c.c_int32), c.c_int]),
        "wrt_set_threads": (c.c_int, [c.c_void_p, c.c_int]),
        "wrt_num_ops": (c.c_int, [c.c_void_p]),
        "wrt_op_type": (c.c_char_p, [c.c_void_p, c.c_int]),
        "wrt_op_name": (c.c_char_p, [c.c_void_p, c.c_int]),
        "wrt_op_kernel": (c.c_char_p, [c.c_void_p, c.c_int]),
        "wrt_run_ops": (c.c_int, [c.c_void_p, c.c_int, c.c_int]),
        "wrt_op_span": (c.c_int, [c.c_void_p, c.c_int]),
        "wrt_op_num_choices": (c.c_int, [c.c_void_p, c.c_int]),
        "wrt_op_choice_name": (c.c_char_p, [c.c_void_p, c.c_int, c.c_int]),
        "wrt_op_chosen": (c.c_int, [c.c_void_p, c.c_int]),
        "wrt_set_choices": (c.c_int, [c.POINTER(c.c_int32), c.c_int]),
        "wrt_force_choice": (c.c_int, [c.c_int]),
        "wrt_tune_param": (c.c_int, [c.c_int]),
        "wrt_tune_begin": (c.c_int, [c.c_int]),
        "wrt_tune_time": (None, [c.c_int, c.c_int, c.c_double]),
        "wrt_tune_median": (c.c_double, [c.c_int, c.c_int]),
        "wrt_tune_pick": (c.c_int, [c.c_int, c.c_int]),
    }
    for name, (res, args) in sig.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args


def library() -> ctypes.CDLL:
    """The loaded library; a WasmrtError saying why and what to do when there is none to load here."""
    global _lib
    with _lock:
        if _lib is None:
            reason = unavailable_reason()
            if reason:
                raise WasmrtError(reason)
            lib = ctypes.CDLL(str(library_path()))
            _declare(lib)
            _lib = lib
        return _lib


@functools.cache
def _library_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def build_identity(variant: str | None) -> str:
    """The library's build (its bytes' digest) and the kernel target a load would pick (for the choice cache)."""
    lib = library()
    return f"{_library_digest(library_path())} {variant or lib.wrt_target_name().decode()}"


class NativeModel(CEngineModel):
    engine = "native"

    def __init__(self, data: bytes, name: str = "", variant: str | None = None,
                 limits: Limits = DEFAULT_LIMITS, threads: int = 1, sparse: str = "auto",
                 conv: str = "auto", choices: Sequence[int] = (), force: int = -1) -> None:
        lib = library()
        policy, algo = sparse_policy(sparse), conv_algo(conv)
        self._lib = lib
        self._ptr: int | None = None
        if variant is not None and variant not in VARIANTS:
            raise ValueError(f"native variant {variant!r}: expected one of {', '.join(VARIANTS)}")
        err = ctypes.c_int(0)
        buf = ctypes.create_string_buffer(bytes(data), len(data))
        with _lock:  # the forced target, the sparse policy and the conv algorithm are read during wrt_load
            old = os.environ.get("WASMRT_FORCE_TARGET")
            if variant is not None:
                os.environ["WASMRT_FORCE_TARGET"] = variant
            old_policy = lib.wrt_set_sparse_policy(policy)
            old_algo = lib.wrt_set_conv_algo(algo)
            vec = (ctypes.c_int32 * max(len(choices), 1))(*choices)
            lib.wrt_set_choices(vec, len(choices))
            lib.wrt_force_choice(force)
            try:
                ptr = lib.wrt_load_with_limits(buf, len(data), limits.max_memory, limits.max_work, ctypes.byref(err))
                message = lib.wrt_error_message().decode("utf-8", "replace")
            finally:
                lib.wrt_set_sparse_policy(old_policy)
                lib.wrt_set_conv_algo(old_algo)
                lib.wrt_set_choices(None, 0)
                lib.wrt_force_choice(-1)
                if variant is not None:
                    if old is None:
                        os.environ.pop("WASMRT_FORCE_TARGET", None)
                    else:
                        os.environ["WASMRT_FORCE_TARGET"] = old
        if not ptr:
            raise engine_error(err.value, message, name)
        self._ptr = ptr
        self.variant = lib.wrt_model_target(ptr).decode()
        if variant is not None and self.variant != variant:
            self.release()
            raise WasmrtError(f"native variant {variant!r} is not available on this CPU or build "
                              f"(would run {lib.wrt_target_name().decode()!r})")
        super().__init__(self._specs(0), self._specs(1))
        self.metadata = read_metadata(bytes(data))
        self.arena_size = int(lib.wrt_arena_size(ptr))
        self.weights_size = int(lib.wrt_weights_size(ptr))
        self.memory_size = int(lib.wrt_memory_size(ptr))
        self.threads = int(lib.wrt_set_threads(ptr, threads))
        self.work = float(lib.wrt_work_estimate(ptr))

    # per-op algorithm choice (wasmrt.engines.choose)
    def op_count(self) -> int:
        return int(self._lib.wrt_num_ops(self._live()))

    def op_info(self, i: int) -> tuple[str, str, str, list[str], int]:
        lib, p = self._lib, self._live()
        fns = (lib.wrt_op_type, lib.wrt_op_name, lib.wrt_op_kernel)
        text = [(f(p, i) or b"").decode("utf-8", "replace") for f in fns]
        cands = [lib.wrt_op_choice_name(p, i, k).decode() for k in range(lib.wrt_op_num_choices(p, i))]
        return text[0], text[1], text[2], cands, int(lib.wrt_op_chosen(p, i))

    def op_choice(self, i: int) -> tuple[int, int]:
        lib, p = self._lib, self._live()
        return int(lib.wrt_op_num_choices(p, i)), int(lib.wrt_op_chosen(p, i))

    def op_span(self, i: int) -> int:
        return int(self._lib.wrt_op_span(self._live(), i))

    def run_ops(self, begin: int, end: int) -> None:
        code = self._lib.wrt_run_ops(self._live(), begin, end)
        if code:
            raise engine_error(code, self._lib.wrt_error_message().decode("utf-8", "replace"), "")

    def tune(self, name: str, *args: float) -> float:
        with _lock:  # the procedure's state is process-wide
            r = getattr(self._lib, name)(*args)
        return 0.0 if r is None else float(r)

    def _specs(self, which: int) -> list[TensorSpec]:
        lib, p = self._lib, self._ptr
        count = lib.wrt_num_inputs(p) if which == 0 else lib.wrt_num_outputs(p)
        specs = []
        for i in range(count):
            rank = lib.wrt_tensor_rank(p, which, i)
            shape = tuple(lib.wrt_tensor_dim(p, which, i, a) for a in range(rank))
            bounds = None
            if which == 0:
                b = tuple((lib.wrt_input_dim_min(p, i, a), lib.wrt_input_dim_max(p, i, a)) for a in range(rank))
                bounds = b if any(lo != hi for lo, hi in b) else None
            specs.append(TensorSpec(lib.wrt_tensor_name(p, which, i).decode("utf-8", "replace"), shape,
                                    DTYPES[lib.wrt_tensor_dtype(p, which, i)], bounds))
        return specs

    def _resize_locked(self, shapes: list[tuple[int, ...]]) -> None:
        if self._ptr is None:
            raise WasmrtError("the model was released")
        dims = [d for s in shapes for d in s]
        arr = (ctypes.c_int32 * max(len(dims), 1))(*dims)
        code = self._lib.wrt_resize_inputs(self._ptr, arr, len(dims))
        if code:
            raise engine_error(code, self._lib.wrt_error_message().decode("utf-8", "replace"), "")
        self.inputs, self.outputs = self._specs(0), self._specs(1)
        self.arena_size = int(self._lib.wrt_arena_size(self._ptr))
        self.memory_size = int(self._lib.wrt_memory_size(self._ptr))
        self.work = float(self._lib.wrt_work_estimate(self._ptr))

    def _run(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        if self._ptr is None:
            raise WasmrtError("the model was released")
        lib, p = self._lib, self._ptr
        for i, a in enumerate(arrays):
            ctypes.memmove(lib.wrt_input_ptr(p, i), a.ctypes.data, a.nbytes)
        code = lib.wrt_run(p)
        if code:
            raise engine_error(code, lib.wrt_error_message().decode("utf-8", "replace"), "")
        outs = []
        for i, spec in enumerate(self.outputs):
            y = np.empty(spec.shape, spec.dtype)
            ctypes.memmove(y.ctypes.data, lib.wrt_output_ptr(p, i), y.nbytes)
            outs.append(y)
        return outs

    def _free(self) -> None:
        if self._ptr is not None:
            self._lib.wrt_release(self._ptr)
            self._ptr = None

    def __del__(self) -> None:
        if getattr(self, "_ptr", None) is not None:
            self.release()
