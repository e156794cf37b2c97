"""What every engine's Model offers: input/output specs, feed checks, run()."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from wasmrt.errors import InputError

# .wrt dtype codes (schema/wrt.fbs DType)
DTYPES: dict[int, np.dtype] = {0: np.dtype(np.float32), 1: np.dtype(np.float16), 2: np.dtype(np.int8),
                               3: np.dtype(np.uint8), 4: np.dtype(np.int32), 5: np.dtype(np.int64),
                               6: np.dtype(np.bool_)}

# C engine error codes (kernels_wasm/engine/wasmrt.h)
ERR_FORMAT, ERR_UNSUPPORTED, ERR_NOMEM, ERR_INPUT = 1, 2, 3, 4


@dataclass(frozen=True)
class TensorSpec:
    name: str
    shape: tuple[int, ...]
    dtype: np.dtype


class Model:
    """A loaded model: `inputs`, `outputs` (TensorSpec lists) and `run({name: array}) -> {name: array}`."""

    engine: str = ""
    variant: str = ""  # kernel target the engine picked (scalar, avx2, wasm_simd128, ...)

    def __init__(self, inputs: list[TensorSpec], outputs: list[TensorSpec]) -> None:
        self.inputs = inputs
        self.outputs = outputs

    def check_feeds(self, feeds: dict[str, Any]) -> list[np.ndarray]:
        """Feeds in input order, contiguous, with the exact dtype and shape the model declares."""
        names = [s.name for s in self.inputs]
        unknown = sorted(set(feeds) - set(names))
        if unknown:
            raise InputError(f"unknown input {unknown[0]!r}; the model's inputs are {sorted(names)}")
        out = []
        for spec in self.inputs:
            if spec.name not in feeds:
                raise InputError(f"missing input {spec.name!r} (shape {list(spec.shape)}, {spec.dtype})")
            arr = np.asarray(feeds[spec.name])
            if arr.dtype != spec.dtype:
                raise InputError(f"input {spec.name!r}: dtype {arr.dtype}, expected {spec.dtype}")
            if arr.shape != spec.shape:
                raise InputError(f"input {spec.name!r}: shape {list(arr.shape)}, expected {list(spec.shape)}")
            out.append(np.ascontiguousarray(arr))
        return out

    def run(self, feeds: dict[str, Any]) -> dict[str, np.ndarray]:
        arrays = self.check_feeds(feeds)
        return dict(zip((s.name for s in self.outputs), self._run(arrays), strict=True))

    def _run(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        raise NotImplementedError

    def release(self) -> None:
        """Free the engine's memory now (also done when the object is garbage collected)."""

    def __enter__(self) -> Model:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __repr__(self) -> str:
        ins = ", ".join(f"{s.name}{list(s.shape)}" for s in self.inputs)
        return f"<wasmrt.Model engine={self.engine} variant={self.variant} inputs=[{ins}]>"
