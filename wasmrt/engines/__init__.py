"""Run .wrt models: the numpy reference ("ref"), the native C engine ("native") or the C engine compiled to
WebAssembly ("wasm", run by wasmtime)."""

from __future__ import annotations

from pathlib import Path

from wasmrt.engines.base import Model, TensorSpec
from wasmrt.errors import ModelFormatError

ENGINES = ("ref", "native", "wasm")

__all__ = ["ENGINES", "Model", "TensorSpec", "load"]


def load(source: str | Path | bytes | bytearray | memoryview, engine: str = "ref",
         variant: str | None = None) -> Model:
    """Load a .wrt model from a path or bytes on one engine.

    variant: native: "scalar" | "avx2" | "avx512" (default: the best the CPU runs); wasm: "scalar" | "simd" |
    "relaxed" (default "relaxed"); ref: ignored.
    """
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
        from wasmrt.engines.native import NativeModel

        return NativeModel(data, name, variant)
    if engine == "wasm":
        from wasmrt.engines.wasm import WasmModel

        return WasmModel(data, name, variant)
    raise ValueError(f"unknown engine {engine!r}; expected one of {', '.join(ENGINES)}")
