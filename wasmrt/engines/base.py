"""What every engine's Model offers: input/output specs, feed checks, run()."""

from __future__ import annotations

from typing import Any

import numpy as np

from python_ref.interpreter import TensorSpec, check_feeds
from python_ref.wrt_file import DTYPES

__all__ = ["DTYPES", "ERR_FORMAT", "ERR_INPUT", "ERR_NOMEM", "ERR_UNSUPPORTED", "Model", "TensorSpec"]

# C engine error codes (kernels_wasm/engine/wasmrt.h)
ERR_FORMAT, ERR_UNSUPPORTED, ERR_NOMEM, ERR_INPUT = 1, 2, 3, 4


class Model:
    """A loaded model: `inputs`, `outputs` (TensorSpec lists) and `run({name: array}) -> {name: array}`."""

    engine: str = ""
    variant: str = ""  # kernel target the engine picked (scalar, avx2, wasm_simd128, ...)

    def __init__(self, inputs: list[TensorSpec], outputs: list[TensorSpec]) -> None:
        self.inputs = inputs
        self.outputs = outputs

    def check_feeds(self, feeds: dict[str, Any]) -> list[np.ndarray]:
        """Feeds in input order, contiguous, with the exact dtype and shape the model declares."""
        return check_feeds(self.inputs, feeds)

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
