"""Run a .wrt model with the reference ops: the oracle every other engine is checked against."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from python_ref import ops
from python_ref.errors import InputError
from python_ref.wrt_file import WrtModel, read_wrt


@dataclass(frozen=True)
class TensorSpec:
    name: str
    shape: tuple[int, ...]
    dtype: np.dtype


def check_feeds(specs: list[TensorSpec], feeds: dict[str, Any]) -> list[np.ndarray]:
    """Feeds in input order, contiguous, with exactly the dtype and shape each input declares (every engine's
    rule: no silent casts or reshapes). Raises InputError naming the input and what is wrong."""
    names = [s.name for s in specs]
    unknown = sorted(set(feeds) - set(names))
    if unknown:
        raise InputError(f"unknown input {unknown[0]!r}; the model's inputs are {sorted(names)}")
    out = []
    for spec in specs:
        if spec.name not in feeds:
            raise InputError(f"missing input {spec.name!r} (shape {list(spec.shape)}, {spec.dtype})")
        arr = np.asarray(feeds[spec.name])
        if arr.dtype != spec.dtype:
            raise InputError(f"input {spec.name!r}: dtype {arr.dtype}, expected {spec.dtype}")
        if arr.shape != spec.shape:
            raise InputError(f"input {spec.name!r}: shape {list(arr.shape)}, expected {list(spec.shape)}")
        out.append(arr if arr.flags.c_contiguous else arr.copy(order="C"))  # (ascontiguousarray makes 0-d 1-d)
    return out


class Interpreter:
    """Interpreter(path_or_bytes).run({input_name: array}) -> {output_name: array}."""

    def __init__(self, model: bytes | str | Path | WrtModel, name: str | None = None) -> None:
        self.model = model if isinstance(model, WrtModel) else read_wrt(model, name)
        t = self.model.tensors
        self.inputs = [TensorSpec(t[i].name, t[i].shape, t[i].dtype) for i in self.model.inputs]
        self.outputs = [TensorSpec(t[i].name, t[i].shape, t[i].dtype) for i in self.model.outputs]
        self.metadata: dict[str, Any] = self.model.metadata
        # Free each activation after its last reader, so large models run in bounded memory.
        self._last_use: dict[int, int] = {}
        for k, op in enumerate(self.model.ops):
            for i in op.inputs:
                if i >= 0:
                    self._last_use[i] = k

    def check_feeds(self, feeds: dict[str, Any]) -> dict[int, np.ndarray]:
        return dict(zip(self.model.inputs, check_feeds(self.inputs, feeds), strict=True))

    def run(self, feeds: dict[str, Any]) -> dict[str, np.ndarray]:
        values: dict[int, np.ndarray] = self.check_feeds(feeds)
        tensors = self.model.tensors
        keep = set(self.model.outputs)

        def get(i: int) -> np.ndarray | None:
            if i < 0:
                return None
            return tensors[i].data if tensors[i].data is not None else values[i]

        for k, op in enumerate(self.model.ops):
            if all(0 in tensors[i].shape for i in op.outputs):  # nothing to compute (engines skip these ops too)
                results = [np.zeros(tensors[i].shape, tensors[i].dtype) for i in op.outputs]
            else:
                results = ops.run(op.op, [get(i) for i in op.inputs], op.attrs)
                if len(results) != len(op.outputs):
                    raise RuntimeError(f"op {k} ({op.op} {op.name!r}) produced {len(results)} outputs, the model "
                                       f"lists {len(op.outputs)}")
            for i, r in zip(op.outputs, results, strict=True):
                spec = tensors[i]
                if r.shape != spec.shape:
                    raise RuntimeError(f"op {k} ({op.op} {op.name!r}) produced {r.shape} for tensor "
                                       f"{spec.name!r}, the model says {spec.shape}")
                values[i] = r.astype(spec.dtype, copy=False)
            for i in op.inputs:
                if i >= 0 and self._last_use.get(i) == k and i not in keep:
                    values.pop(i, None)
        return {tensors[i].name: values[i] for i in self.model.outputs}
