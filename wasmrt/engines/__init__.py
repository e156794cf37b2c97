"""Run .wrt models: the numpy reference ("ref"), the native C engine ("native"), the C engine compiled to
WebAssembly ("wasm", run by wasmtime), the WGSL kernels on a GPU ("webgpu", through wgpu-native), or whichever of
native and WebGPU a short trial finds faster ("auto")."""

from __future__ import annotations

from wasmrt.host import require_cpython

require_cpython("wasmrt.engines (the ref, native, wasmtime and webgpu engines)")


import functools
import hashlib
from collections.abc import Sequence
from pathlib import Path

from wasmrt.engines.base import Limits, Model, TensorSpec
from wasmrt.engines.choose import check_mode, load_chosen
from wasmrt.errors import ModelFormatError

ENGINES = ("ref", "native", "wasm", "webgpu", "auto")

__all__ = ["ENGINES", "Limits", "Model", "TensorSpec", "load"]


@functools.cache
def wasm_identity(path: Path) -> str:
    """A wasm module's build: its bytes' digest."""
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def load(source: str | Path | bytes | bytearray | memoryview, engine: str = "ref",
         variant: str | None = None, *, max_memory: int | None = None, max_work: float | None = None,
         threads: int | str = 1, sparse: str = "auto", conv: str = "auto", fallback: str | None = None,
         choose: str = "rules") -> Model:
    """Load a .wrt model from a path or bytes on one engine.

    variant: native: "scalar" | "avx2" | "avx512" (default: the best the CPU runs); wasm: "scalar" | "simd" |
    "relaxed" (default "relaxed"); webgpu: "f32" (default) | "f16" (activations and weights stored as f16 on
    adapters with `shader-f16`, f32 arithmetic; it runs on the process's WebGPU adapter, and an op without a WGSL
    kernel is refused at load, naming it, unless fallback="wasm"); ref: ignored.
    engine "auto": where a WebGPU adapter works, the model is loaded on native and WebGPU (f32), both run a short
    interleaved trial on zeros of its inputs, and the faster keeps it; without wgpu or an adapter, or where WebGPU
    cannot run the model, native runs it. `model.choice` says which and why ({"engine", "reason", "ms"}); the pick
    is cached per model, adapter and native build. The native engine's options (max_memory, max_work, threads,
    sparse, conv, choose) apply to its copy; variant and fallback are not taken.
    fallback (webgpu): "wasm" runs the ops without a WGSL kernel on the wasm engine; `model.fallback` lists those
    ops and the tensors crossing between GPU and wasm memory at each boundary (empty when all run on the GPU).
    max_memory, max_work (native and wasm): the model's resource limits, checked at load before anything large is
    allocated: the bytes it may claim (default 1 GiB) and the estimated work of one run in multiply-adds (default
    2^33). A model beyond them is refused with an error naming the limit.
    threads (native and wasm): threads a run may use, or "auto" (the CPUs this process may run on); results are the
    same bytes for any number. `model.threads` says how many it got (1 where a build has no threads).
    sparse (native and wasm): which kernels run block-sparse weights: "auto" (sparse from the target's measured
    break-even sparsity, dense below it), "always" (sparse wherever possible) or "never"; for benchmarks and tests,
    the results agree within the float tolerance.
    conv (native and wasm): which algorithm runs dense 3x3 (and other KxK) convolutions: "auto" (the engine's
    rules), "igemm" (indirect GEMM), "wino2" or "wino4" (Winograd F(2x2, 3x3) / F(4x4, 3x3) wherever it applies:
    3x3, stride 1, dilation 1, one group); Winograd results are within python_ref/winograd.py's written tolerance
    of the direct convolution. Profiles (wasmrt.bench.profile, `wasmrt bench --profile`) name each layer's kernel.
    choose (native and wasm): how each layer's algorithm is chosen among its candidates (docs/choices.md): "rules"
    (default: the engine's fixed rules), "measure" (each candidate timed on this machine at the first load, the
    fastest per layer; cached in the user cache directory, so later loads cost nothing) or "deterministic" (the
    dense path everywhere: the same bytes on every machine of a target and any thread count). `model.plan()` lists
    each op's candidates, the chosen one and the measured times; per-op choices override sparse= and conv=.
    """
    if not isinstance(source, str | Path | bytes | bytearray | memoryview):
        raise TypeError(f"wasmrt.load: expected a path (str or Path) or the model's bytes, got {type(source).__name__}")
    if fallback is not None and engine != "webgpu":
        raise ValueError(f"wasmrt.load: fallback applies to engine 'webgpu', not {engine!r}")
    if check_mode(choose) != "rules" and engine not in ("native", "wasm", "auto"):
        raise ValueError(f"wasmrt.load: choose applies to the C engine (native, wasm), not {engine!r}")
    if engine == "auto" and variant is not None:
        raise ValueError("wasmrt.load: engine 'auto' takes no variant (native picks its best, WebGPU runs f32)")
    limits = Limits.of(max_memory, max_work)
    threads = Limits.threads_of(threads)
    if isinstance(source, str | Path):
        name = str(source)
        try:
            data = Path(source).read_bytes()
        except OSError as e:
            raise ModelFormatError(f"{name}: cannot read model file: {e.strerror}") from None
    else:
        name, data = "<bytes>", bytes(source)
    if engine == "ref":
        from wasmrt.engines.ref import RefModel

        return RefModel(data, name)
    if engine == "native":
        return _native(data, name, variant, limits, threads, sparse, conv, choose)
    if engine == "wasm":
        from wasmrt.engines.wasm import DEFAULT_VARIANT, WasmInstance, WasmModel, threaded_instance, wasm_path

        v = variant or DEFAULT_VARIANT
        instance = threaded_instance(v, threads) if threads > 1 else WasmInstance(v)

        def wasm(choices: Sequence[int], force: int) -> Model:
            return WasmModel(data, name, v, instance=instance, limits=limits, threads=threads, sparse=sparse,
                             conv=conv, choices=choices, force=force)

        ident = wasm_identity(wasm_path(v)) if choose == "measure" else ""
        return load_chosen(wasm, choose, data, f"wasm {v} {ident} sparse={sparse} conv={conv}", threads)
    if engine == "webgpu":
        from wasmrt.engines.webgpu import WebGPUModel

        return WebGPUModel(data, name, storage=variant or "f32", fallback=fallback)
    if engine == "auto":
        from wasmrt.engines.auto import load_auto
        from wasmrt.engines.native import build_identity
        from wasmrt.engines.webgpu import WebGPUModel

        return load_auto(data, lambda: _native(data, name, None, limits, threads, sparse, conv, choose),
                         lambda: WebGPUModel(data, name), f"{build_identity(None)} threads={threads}")
    raise ValueError(f"unknown engine {engine!r}; expected one of {', '.join(ENGINES)}")


def _native(data: bytes, name: str, variant: str | None, limits: Limits, threads: int, sparse: str, conv: str,
            choose: str) -> Model:
    from wasmrt.engines.native import NativeModel, build_identity

    def native(choices: Sequence[int], force: int) -> Model:
        return NativeModel(data, name, variant, limits=limits, threads=threads, sparse=sparse, conv=conv,
                           choices=choices, force=force)

    ident = build_identity(variant) if choose == "measure" else ""
    return load_chosen(native, choose, data, f"native {ident} sparse={sparse} conv={conv}", threads)
