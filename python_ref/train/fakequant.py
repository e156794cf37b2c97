"""Fake-quantized forward and straight-through backward over int8 ops: quantization-aware training of the int8
path (python_ref/train/README.md, "Quantization-aware training").

The forward pass is the int8 model itself: each op runs python_ref's int8 rules (python_ref/qops.py) on integer
tensors, so its outputs are the engines' bytes. The trained layers (CONV_2D, FULLY_CONNECTED) keep real-valued
parameters that every forward pass rounds to the stored integers:
- weights `u` in units of the layer's per-channel weight scale: `q = clip(rne(u), -127, 127)`;
- a bias shift `d` in units of the output scale: `b = b0 + rne(d * sy / (sx * sw[c]))`, b0 the layer's int32 bias
  (a FULLY_CONNECTED with float_output has no output scale: `sy` is then the chain's `float_step`).
Scales and zero points stay fixed, so the trained model is the same int8 format.

The backward pass treats each op as its float op on the dequantized values (python_ref/train/grads.py) and passes
rounding straight through: the gradient reaches an int8 output where it is strictly inside its clamp bounds (the
fused activation's, else the int8 range), QUANTIZE and DEQUANTIZE pass it unchanged, and it reaches `u` where
|u| <= 127 (the clipped straight-through estimator).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from python_ref import dispatch, shapes
from python_ref import quant as qm
from python_ref.errors import InputError
from python_ref.opdefs import Q_MOVES, quant_form
from python_ref.quant import QuantParams
from python_ref.train.grads import backward

TRAINED = ("CONV_2D", "FULLY_CONNECTED")
BITS_MAX = 127
MOVES = quant_form(Q_MOVES)  # ops that move integers unchanged: no rounding, no clamp
Quant = tuple[list[QuantParams | None], list[QuantParams | None]]


@dataclass
class QOp:
    """One int8 op of a graph: names of its tensors, its attributes and the quantization of its inputs/outputs."""

    op: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any]
    quant: Quant


def weights_int8(u: np.ndarray) -> np.ndarray:
    """The stored weights of real-valued weights u (in units of the weight scale)."""
    return np.clip(qm.rne(np.asarray(u, np.float64)), -BITS_MAX, BITS_MAX).astype(np.int8)


def output_step(op: QOp, float_step: float = 1.0) -> float:
    """The real value of one output step: the output scale, or float_step for a float output."""
    qy = op.quant[1][0]
    return float(qy.s) if qy is not None else float(float_step)


def bias_units(op: QOp, float_step: float = 1.0) -> np.ndarray:
    """How many int32 bias units one output step is, per output channel: sy / f32(sx * sw[c])."""
    (qx, qw, *_), _ = op.quant
    cout = qw.scale.size if not qw.per_tensor else 1
    unit = qm.mul_scale(qx.s, qw.scale if not qw.per_tensor else np.full(cout, qw.s)).astype(np.float64)
    return output_step(op, float_step) / unit


def bias_int32(b0: np.ndarray, d: np.ndarray, op: QOp, float_step: float = 1.0) -> np.ndarray:
    """The stored bias: b0 moved by d output steps, rounded to the nearest int32 unit."""
    moved = b0.astype(np.float64) + qm.rne(np.asarray(d, np.float64) * bias_units(op, float_step))
    return np.clip(moved, qm.INT32_MIN, qm.INT32_MAX).astype(np.int32)


def clamp_bounds(op: QOp, y: np.ndarray) -> tuple[float, float]:
    """The values where op's output is clamped: integers, or the fused clamp's reals for a float output."""
    a = shapes.full_attrs(op.op, op.attrs)
    qy = op.quant[1][0]
    if qy is None:
        return (float(a["act_min"]), float(a["act_max"])) if "act_min" in a else (-np.inf, np.inf)
    return qm.act_bounds(a, qy, y.dtype) if "act_min" in a else qm.qrange(y.dtype)


def _float_attrs(op: str, attrs: dict[str, Any]) -> dict[str, Any]:
    """The float op's attributes without the fused clamp: the straight-through mask replaces it."""
    a = dict(shapes.full_attrs(op, attrs))
    if "act_min" in a:
        a["act_min"], a["act_max"] = -np.inf, np.inf
    if a.get("float_output"):
        a["float_output"] = False
    return a


def batch_attrs(op: QOp, x: np.ndarray | None) -> dict[str, Any]:
    """A RESHAPE whose target keeps the file's one-sample batch (first dimension 1) keeps the batch's, as the
    tape's (python_ref/train/tape.py)."""
    shape = op.attrs.get("shape") if op.op == "RESHAPE" else None
    if shape is None or x is None or not len(shape) or int(shape[0]) != 1 or x.shape[0] == 1:
        return op.attrs
    return {**op.attrs, "shape": (0, *shape[1:])}


class FakeQuant:
    """FakeQuant(ops, consts, trained): ops, a chain of int8 ops in execution order (the tail of a quantized graph,
    read from the tensors it does not make itself); consts, the constant tensors they read (int8 weights, int32
    biases, tables); trained, the indices of the CONV_2D / FULLY_CONNECTED ops whose weights and biases train.

    `params` holds `w:<k>` (weights in scale units, float32) and `b:<k>` (bias shift in output steps) per trained
    op k; an optimizer (python_ref/train/optim.py) updates them in place. float_step: the output step of a trained
    layer with a float output (FULLY_CONNECTED's float_output), in its output's real units."""

    def __init__(self, ops: list[QOp], consts: dict[str, np.ndarray], trained: Iterable[int],
                 float_step: float = 1.0) -> None:
        if not (float_step > 0 and np.isfinite(float_step)):
            raise InputError(f"float_step must be > 0, got {float_step}")
        self.ops, self.consts, self.float_step = ops, consts, float(float_step)
        self.trained = sorted(set(trained))
        self.params: dict[str, np.ndarray] = {}
        for k in self.trained:
            op = ops[k]
            if op.op not in TRAINED:
                raise InputError(f"op {k} ({op.op}): only {', '.join(TRAINED)} layers train")
            qx, qw = op.quant[0][0], op.quant[0][1]
            if qx is None or qw is None or np.any(qw.zero_point != 0) or (not qw.per_tensor and qw.axis != 0):
                raise InputError(f"op {k} ({op.op}): not an int8 layer with symmetric weights")
            self.params[f"w:{k}"] = consts[op.inputs[1]].astype(np.float32)
            self.params[f"b:{k}"] = np.zeros(consts[op.inputs[1]].shape[0], np.float32)
        made = {o for op in ops for o in op.outputs}
        self.inputs = list(dict.fromkeys(i for op in ops for i in op.inputs if i and i not in made
                                         and i not in consts))
        # tensors whose value depends on a trained parameter: gradients flow through them
        self.depends: set[str] = set()
        for k, op in enumerate(ops):
            if k in self.trained or any(i in self.depends for i in op.inputs):
                self.depends.update(op.outputs)

    def stored(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The int8 weights and int32 bias trained op k stores now (what the exported model holds)."""
        op = self.ops[k]
        b0 = self.consts[op.inputs[2]] if len(op.inputs) > 2 and op.inputs[2] else \
            np.zeros(self.consts[op.inputs[1]].shape[0], np.int32)
        return weights_int8(self.params[f"w:{k}"]), bias_int32(b0, self.params[f"b:{k}"], op, self.float_step)

    def _inputs(self, k: int, values: dict[str, np.ndarray]) -> list[np.ndarray | None]:
        op = self.ops[k]
        xs = [None if not i else values[i] if i in values else self.consts[i] for i in op.inputs]
        if k in self.trained:
            w, b = self.stored(k)
            xs = [xs[0], w, b]
        return xs

    def forward(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Every value of the chain (integers, the int8 engines' bytes) from its input tensors (a batch along the
        first dimension)."""
        missing = [n for n in self.inputs if n not in feeds]
        if missing:
            raise InputError(f"no value for the chain's input(s) {missing}")
        values = dict(feeds)
        for k, op in enumerate(self.ops):
            xs = self._inputs(k, values)
            outs = dispatch.run(op.op, xs, batch_attrs(op, xs[0]), op.quant)
            values.update(zip(op.outputs, outs, strict=True))
        return values

    def gradients(self, values: dict[str, np.ndarray], grads: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The gradient of each parameter from the gradients of chain values (with respect to their real values,
        (q - z) * s), straight through every rounding."""
        g = {n: np.asarray(v, np.float64) for n, v in grads.items()}
        out: dict[str, np.ndarray] = {}
        for k in range(len(self.ops) - 1, -1, -1):
            op = self.ops[k]
            if not any(o in g for o in op.outputs) or not any(o in self.depends for o in op.outputs):
                continue
            (qin, qout) = op.quant
            xs = self._inputs(k, values)
            ys = [values[o] for o in op.outputs]
            gys = []
            for y, o, q in zip(ys, op.outputs, qout, strict=True):
                gy = g.pop(o, np.zeros(y.shape))
                if op.op not in MOVES and (q is not None or op.attrs.get("float_output")):
                    lo, hi = clamp_bounds(op, y)
                    gy = gy * ((y > lo) & (y < hi))
                gys.append(gy.astype(np.float32))
            real = [None if x is None else qm.dequantize(x, q) if q is not None else x.astype(np.float32)
                    for x, q in zip(xs, qin, strict=True)]
            yr = [qm.dequantize(y, q) if q is not None else y for y, q in zip(ys, qout, strict=True)]
            trained = k in self.trained
            need = [bool(i) and i in self.depends for i in op.inputs]
            if trained:
                need = [need[0], True] + [False] * (len(need) - 2)
            if op.op in ("QUANTIZE", "DEQUANTIZE"):  # the identity on real values, rounding passed through
                got = [gys[0]]
            else:
                got = backward(op.op, real, yr, gys, _float_attrs(op.op, batch_attrs(op, xs[0])), need)
            for i, gi, want in zip(op.inputs, got, need, strict=True):
                if want and gi is not None and i in self.depends:
                    g[i] = g[i] + gi if i in g else gi.astype(np.float64)
            if trained:
                u = self.params[f"w:{k}"]
                sw = qin[1].along(u.shape, qin[1].scale).astype(np.float64)
                out[f"w:{k}"] = (got[1] * sw * (np.abs(u) <= BITS_MAX)).astype(np.float32)
                cout = u.shape[0]
                gb = gys[0].astype(np.float64).reshape(-1, cout).sum(0)
                out[f"b:{k}"] = (gb * output_step(op, self.float_step)).astype(np.float32)
        return out
