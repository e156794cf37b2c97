"""The numpy reference engine (python_ref) behind the common Model interface."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from python_ref import Interpreter
from wasmrt.engines.base import Model


class RefModel(Model):
    engine = "ref"
    variant = "numpy"

    def __init__(self, data: bytes, name: str | None = None) -> None:
        self.interp = Interpreter(data, name)
        self.metadata = self.interp.metadata
        super().__init__(self.interp.inputs, self.interp.outputs)

    def _resize_locked(self, shapes: list[tuple[int, ...]]) -> None:
        sizes = dict(zip((s.name for s in self.inputs), shapes, strict=True))
        out_shapes = self.interp.output_shapes(sizes)
        self.inputs = [replace(s, shape=sizes[s.name]) for s in self.inputs]
        self.outputs = [replace(s, shape=out_shapes[s.name]) for s in self.outputs]

    def _run(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        res = self.interp.run({s.name: a for s, a in zip(self.inputs, arrays, strict=True)})
        return [res[s.name] for s in self.outputs]
