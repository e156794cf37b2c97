"""A tape over a .wrt graph: the forward pass of the reference ops keeping every value backward needs, then the
gradients of chosen constant tensors (the parameters) from the gradients of the outputs.

A batch is any size along the inputs' first dimension (the file's shapes are those of one batch; every op infers its
shapes from its inputs, as for a model with run-time sizes, and a RESHAPE that keeps the file's first dimension
keeps the batch's). Gradients that meet at a tensor read by several ops are summed in float64 and rounded once to
float32.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from python_ref import dispatch
from python_ref.errors import InputError, UnsupportedOpError
from python_ref.train.grads import BACKWARD, backward
from python_ref.wrt_file import OpInfo, WrtModel

F32 = np.float32


class Tape:
    """Tape(model, params): params names constant float32 tensors of the model; their values live in
    `tape.params` (float32 arrays, updated in place by an optimizer) and replace the file's in every forward pass."""

    def __init__(self, model: WrtModel, params: Iterable[str]) -> None:
        self.model = model
        t = model.tensors
        by_name = {x.name: i for i, x in enumerate(t)}
        self.params: dict[str, np.ndarray] = {}
        self._param_of: dict[int, str] = {}
        for name in params:
            i = by_name.get(name)
            if i is None or t[i].data is None:
                raise ValueError(f"{name!r} is not a constant tensor of the model")
            if t[i].dtype != F32 or t[i].quant is not None:
                raise UnsupportedOpError(f"tensor {name!r}: only float32 parameters train (it is {t[i].dtype}"
                                         f"{', quantized' if t[i].quant is not None else ''})")
            self.params[name] = np.array(t[i].data, F32)
            self._param_of[i] = name
        # tensors whose value depends on a parameter: their gradients flow
        self.depends = set(self._param_of)
        for op in model.ops:
            if any(i in self.depends for i in op.inputs):
                self.depends.update(op.outputs)
        self.first = next((k for k, op in enumerate(model.ops) if any(i in self.depends for i in op.inputs)),
                          len(model.ops))

    def without_gradient(self, target: int) -> list[int]:
        """The ops between a parameter and `target` that have no gradient rule (python_ref/train/grads.py): training
        through them is impossible, so callers refuse before any work."""
        reaches = {target}
        bad = []
        for k in range(len(self.model.ops) - 1, -1, -1):
            op = self.model.ops[k]
            if not any(o in reaches for o in op.outputs):
                continue
            ins = [i for i in op.inputs if i >= 0 and i in self.depends]
            reaches.update(ins)
            if ins and op.op not in BACKWARD:
                bad.append(k)
        return bad[::-1]

    def tensor(self, name: str) -> int:
        for i, x in enumerate(self.model.tensors):
            if x.name == name:
                return i
        raise KeyError(f"the model has no tensor {name!r}")

    def frontier(self, start: int) -> list[int]:
        """The activations that the ops from `start` on read and that are made before it (or are graph inputs):
        what a forward pass from `start` needs (wasmrt.train caches them for frozen features)."""
        t = self.model.tensors
        made_later = {o for op in self.model.ops[start:] for o in op.outputs}
        seen: list[int] = []
        for op in self.model.ops[start:]:
            for i in op.inputs:
                if i >= 0 and t[i].data is None and i not in made_later and i not in seen:
                    seen.append(i)
        for i in self.model.outputs:
            if i not in made_later and i not in seen:
                seen.append(i)
        return seen

    def feeds(self, feeds: dict[str, np.ndarray]) -> dict[int, np.ndarray]:
        """Graph inputs by name -> by tensor index: float32 of the declared rank and sample shape, any batch size."""
        t = self.model.tensors
        out: dict[int, np.ndarray] = {}
        for i in self.model.inputs:
            spec = t[i]
            if spec.name not in feeds:
                raise InputError(f"missing input {spec.name!r} (shape {list(spec.shape)}, {spec.dtype})")
            x = np.asarray(feeds[spec.name])
            if x.dtype != spec.dtype:
                raise InputError(f"input {spec.name!r}: dtype {x.dtype}, expected {spec.dtype}")
            if x.ndim != len(spec.shape) or x.shape[1:] != spec.shape[1:] or x.shape[0] < 1:
                raise InputError(f"input {spec.name!r}: shape {list(x.shape)}, expected [batch, "
                                 f"{', '.join(map(str, spec.shape[1:]))}]")
            out[i] = np.ascontiguousarray(x)
        return out

    def _get(self, values: dict[int, np.ndarray], i: int) -> np.ndarray | None:
        if i < 0:
            return None
        if i in self._param_of:
            return self.params[self._param_of[i]]
        d = self.model.tensors[i].data
        return d if d is not None else values[i]

    def forward(self, values: dict[int, np.ndarray], start: int = 0, stop: int | None = None) -> dict[int, np.ndarray]:
        """Run the ops from `start` up to `stop` (excluded; default: the end); values holds what they read (graph
        inputs, or a frontier). Returns every value (the tape)."""
        values = dict(values)
        t = self.model.tensors
        for k in range(start, len(self.model.ops) if stop is None else stop):
            op = self.model.ops[k]
            if any(i >= 0 and t[i].quant is not None for i in (*op.inputs, *op.outputs)):
                raise UnsupportedOpError(f"op {k} ({op.op} {op.name!r}) is quantized: only float graphs train")
            results = dispatch.run(op.op, [self._get(values, i) for i in op.inputs], self._attrs(op, values))
            for i, r in zip(op.outputs, results, strict=True):
                values[i] = r
        return values

    def _attrs(self, op: OpInfo, values: dict[int, np.ndarray]) -> dict[str, Any]:
        """The op's attributes for this batch: a RESHAPE that keeps the file's batch dimension (the first) keeps the
        batch's (converters write the one-sample batch into its target shape)."""
        if op.op != "RESHAPE":
            return op.attrs
        t = self.model.tensors
        src, dst = t[op.inputs[0]].shape, t[op.outputs[0]].shape
        x = values.get(op.inputs[0])
        if x is None or not src or not dst or src[0] != dst[0] or x.shape[0] == src[0]:
            return op.attrs
        return {**op.attrs, "shape": (0, *dst[1:])}

    def gradients(self, values: dict[int, np.ndarray], out_grads: dict[int, np.ndarray],
                  start: int = 0) -> dict[str, np.ndarray]:
        """d(loss)/d(param) for every parameter, given d(loss)/d(output) for some tensors (float32)."""
        pending: dict[int, list[np.ndarray]] = {i: [np.asarray(g, F32)] for i, g in out_grads.items()}
        for k in range(len(self.model.ops) - 1, max(start, self.first) - 1, -1):
            op = self.model.ops[k]
            if not any(o in pending for o in op.outputs):
                continue
            need = [i >= 0 and i in self.depends for i in op.inputs]
            if not any(need):
                continue
            ys = [values[o] for o in op.outputs]
            gys = [_total(pending.pop(o)) if o in pending else np.zeros_like(y) for o, y in zip(op.outputs, ys,
                                                                                               strict=True)]
            got = backward(op.op, [self._get(values, i) for i in op.inputs], ys, gys, op.attrs, need)
            for i, g in zip(op.inputs, got, strict=True):
                if g is not None:
                    pending.setdefault(i, []).append(g)
        return {name: _total(pending[i]) if i in pending else np.zeros_like(self.params[name])
                for i, name in self._param_of.items()}


def _total(gs: list[np.ndarray]) -> np.ndarray:
    if len(gs) == 1:
        return gs[0]
    return np.sum([g.astype(np.float64) for g in gs], axis=0).astype(F32)
