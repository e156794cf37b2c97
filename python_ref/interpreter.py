"""Run a .wrt model with the reference ops: the oracle every other engine is checked against."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from python_ref import dispatch, shapes
from python_ref.errors import InputError
from python_ref.wrt_file import WrtModel, read_wrt


@dataclass(frozen=True)
class TensorSpec:
    name: str
    shape: tuple[int, ...]  # the current shape (for a model with run-time sizes: the last one it ran with)
    dtype: np.dtype
    bounds: tuple[tuple[int, int], ...] | None = None  # inputs sized at run time: (min, max) per dimension

    def accepts(self, shape: tuple[int, ...]) -> bool:
        if self.bounds is None:
            return tuple(shape) == self.shape
        return len(shape) == len(self.bounds) and all(lo <= d <= hi for d, (lo, hi) in zip(shape, self.bounds,
                                                                                         strict=True))

    def describe(self) -> str:
        if self.bounds is None:
            return str(list(self.shape))
        return "[" + ", ".join(str(lo) if lo == hi else f"{lo}..{hi}" for lo, hi in self.bounds) + "]"


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
        if not spec.accepts(arr.shape):
            raise InputError(f"input {spec.name!r}: shape {list(arr.shape)}, expected {spec.describe()}")
        out.append(arr if arr.flags.c_contiguous else arr.copy(order="C"))  # (ascontiguousarray makes 0-d 1-d)
    return out


class Interpreter:
    """Interpreter(path_or_bytes).run({input_name: array}) -> {output_name: array}."""

    def __init__(self, model: bytes | str | Path | WrtModel, name: str | None = None) -> None:
        self.model = model if isinstance(model, WrtModel) else read_wrt(model, name)
        t = self.model.tensors
        self.inputs = [TensorSpec(t[i].name, t[i].shape, t[i].dtype, t[i].bounds) for i in self.model.inputs]
        self.outputs = [TensorSpec(t[i].name, t[i].shape, t[i].dtype) for i in self.model.outputs]
        self.metadata: dict[str, Any] = self.model.metadata
        # Free each activation after its last reader, so large models run in bounded memory.
        self._last_use: dict[int, int] = {}
        for k, op in enumerate(self.model.ops):
            for i in op.inputs:
                if i >= 0:
                    self._last_use[i] = k

    def output_shapes(self, input_shapes: dict[str, tuple[int, ...]]) -> dict[str, tuple[int, ...]]:
        """The outputs' shapes for these input shapes (a model with run-time sizes), by the ops' shape rules."""
        t = self.model.tensors
        spec = {i: (tuple(input_shapes.get(t[i].name, t[i].shape)), t[i].dtype) for i in self.model.inputs}
        for k, op in enumerate(self.model.ops):
            ins = [None if i < 0 else (t[i].data.shape, t[i].dtype) if t[i].data is not None else spec[i]
                   for i in op.inputs]
            try:
                outs = shapes.infer(op.op, ins, op.attrs)
            except ValueError as e:
                raise InputError(f"at input sizes {input_shapes}: op {k} ({op.op} {op.name!r}): {e}") from None
            for i, (s, dt) in zip(op.outputs, outs, strict=True):
                spec[i] = (tuple(s), dt)
        return {t[i].name: spec[i][0] for i in self.model.outputs}

    def check_feeds(self, feeds: dict[str, Any]) -> dict[int, np.ndarray]:
        return dict(zip(self.model.inputs, check_feeds(self.inputs, feeds), strict=True))

    def run(self, feeds: dict[str, Any]) -> dict[str, np.ndarray]:
        values: dict[int, np.ndarray] = self.check_feeds(feeds)
        tensors = self.model.tensors
        keep = set(self.model.outputs)
        # inputs of another size than the file was planned for: every shape follows from the ops' rules
        resized = any(values[i].shape != tensors[i].shape for i in self.model.inputs)

        def get(i: int) -> np.ndarray | None:
            if i < 0:
                return None
            return tensors[i].data if tensors[i].data is not None else values[i]

        for k, op in enumerate(self.model.ops):
            shapes_now = [tensors[i].shape for i in op.outputs]
            if resized:
                ins = [get(i) for i in op.inputs]
                shapes_now = [s for s, _ in shapes.infer(op.op, [None if x is None else (x.shape, x.dtype)
                                                                 for x in ins], op.attrs)]
            if all(0 in s for s in shapes_now):  # nothing to compute (engines skip these ops too)
                results = [np.zeros(s, tensors[i].dtype) for s, i in zip(shapes_now, op.outputs, strict=True)]
            else:
                quant = ([tensors[i].quant if i >= 0 else None for i in op.inputs],
                         [tensors[i].quant for i in op.outputs])
                results = dispatch.run(op.op, [get(i) for i in op.inputs], op.attrs, quant)
                if len(results) != len(op.outputs):
                    raise RuntimeError(f"op {k} ({op.op} {op.name!r}) produced {len(results)} outputs, the model "
                                       f"lists {len(op.outputs)}")
            for i, r in zip(op.outputs, results, strict=True):
                spec = tensors[i]
                if r.shape != spec.shape and not resized:
                    raise RuntimeError(f"op {k} ({op.op} {op.name!r}) produced {r.shape} for tensor "
                                       f"{spec.name!r}, the model says {spec.shape}")
                values[i] = r.astype(spec.dtype, copy=False)
            for i in op.inputs:
                if i >= 0 and self._last_use.get(i) == k and i not in keep:
                    values.pop(i, None)
        return {tensors[i].name: values[i] for i in self.model.outputs}
