"""The C engine's training steps (kernels_wasm/engine/train.c), natively (ctypes) or in wasm (wasmtime), on numpy
arrays. The engine does the arithmetic; this module only moves the arrays: natively it passes their addresses, in
wasm it copies them into one block of the module's memory and back."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

import numpy as np

from python_ref.errors import error_for_code
from wasmrt.errors import WasmrtError

F32 = np.float32
_P = ctypes.c_void_p
_I, _Z, _F = ctypes.c_int, ctypes.c_size_t, ctypes.c_float
# export -> (argument kinds): a = array, i = int, z = size_t, f = float; every export returns an error code
SIGNATURES: dict[str, str] = {
    "wrt_train_dense_forward": "iiiaaaffaa",
    "wrt_train_dense_backward": "iiiaaaffaaaa",
    "wrt_train_grad": "izaaaff",
    "wrt_train_softmax_xent": "iiaaaa",
    "wrt_train_mse": "zaaaa",
    "wrt_train_sgd": "zaaafff",
    "wrt_train_adam": "zaaaafffffi",
    "wrt_train_conv_forward": "iiiiiaaaaffaaa",
    "wrt_train_conv_backward": "iiiiiaaaaffaaaaa",
    "wrt_train_pool": "iiiiaaaa",
}
_CTYPE = {"a": _P, "i": _I, "z": _Z, "f": _F}


@dataclass
class Out:
    """An array the step writes (in wasm: copied back after the call)."""

    array: np.ndarray


Arg = np.ndarray | Out | int | float | None


class Steps:
    """engine: "native" or "wasm" (variant: the wasm module, default the best this host runs)."""

    def __init__(self, engine: str, variant: str | None = None) -> None:
        self.engine = engine
        if engine == "native":
            from wasmrt.engines import native

            self._lib = native.library()
            for name, kinds in SIGNATURES.items():
                fn = getattr(self._lib, name)
                fn.restype, fn.argtypes = _I, [_CTYPE[k] for k in kinds]
        elif engine == "wasm":
            from wasmrt.engines.wasm import DEFAULT_VARIANT, WasmInstance

            self._wasm = WasmInstance(variant or DEFAULT_VARIANT)
            self._block, self._block_size = 0, 0
        else:
            raise ValueError(f"engine must be 'native' or 'wasm' for engine training, got {engine!r}")

    def call(self, name: str, *args: Arg) -> None:
        kinds = SIGNATURES[name]
        if len(args) != len(kinds):
            raise TypeError(f"{name}: {len(kinds)} arguments, got {len(args)}")
        for a, k in zip(args, kinds, strict=True):
            arr = a.array if isinstance(a, Out) else a
            if k == "a" and arr is not None and (not isinstance(arr, np.ndarray) or not arr.flags.c_contiguous
                                                  or arr.dtype not in (F32, np.int32)):
                raise TypeError(f"{name}: arrays must be C-contiguous float32 or int32")
        code = self._invoke(name, args)
        if code:
            raise error_for_code(code, self._message())

    def _invoke(self, name: str, args: tuple[Arg, ...]) -> int:
        """The export's error code (a subclass may carry the call elsewhere: the aarch64 tests run it under qemu)."""
        return self._native(name, args) if self.engine == "native" else self._in_wasm(name, args)

    def _message(self) -> str:
        if self.engine == "native":
            from wasmrt.engines import native

            return (native.library().wrt_error_message() or b"").decode()
        return self._wasm.error_message()

    def _native(self, name: str, args: tuple[Arg, ...]) -> int:
        conv: list[Any] = []
        for a in args:
            arr = a.array if isinstance(a, Out) else a
            conv.append(arr.ctypes.data if isinstance(arr, np.ndarray) else arr)
        return int(getattr(self._lib, name)(*conv))

    def _in_wasm(self, name: str, args: tuple[Arg, ...]) -> int:
        arrays = [(i, a.array if isinstance(a, Out) else a) for i, a in enumerate(args)
                  if isinstance(a, Out | np.ndarray)]
        offsets, total = [], 0
        for _, arr in arrays:
            offsets.append(total)
            total += (arr.nbytes + 15) // 16 * 16
        if total > self._block_size:
            if self._block:
                self._wasm.call("wrt_free", self._block)
            self._block = self._wasm.ptr("wrt_alloc", max(total, 1 << 16))
            if not self._block:
                raise WasmrtError(f"wasm: no memory for the training step ({total} bytes)")
            self._block_size = max(total, 1 << 16)
        conv: list[Any] = [0 if a is None else a for a in args]
        for (i, arr), off in zip(arrays, offsets, strict=True):
            self._wasm.write(self._block + off, arr)
            conv[i] = self._block + off
        code = self._wasm.call(name, *conv)
        for (i, arr), off in zip(arrays, offsets, strict=True):
            if isinstance(args[i], Out):
                self._wasm.read_into(self._block + off, arr)
        return code
