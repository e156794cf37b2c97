"""Training on the C engine (native or wasm): the frozen layers run once per sample as an ordinary model on the
engine (the graph cut where the trained layers begin), and the trained layers, a chain of fully connected layers
with their activations, run their forward and backward passes and the optimizer step as engine calls
(engine_steps.py): this host code only orders the calls and keeps the arrays.

The chain from the first trained layer to the output may hold FULLY_CONNECTED and CONV_2D (any groups, depthwise
included; trained, fused clamp allowed), MAX_POOL_2D and AVERAGE_POOL_2D (a fused clamp runs as a CLIP after
them), RELU, CLIP (relu6), SIGMOID, TANH, HARD_SWISH, RESHAPE (a flatten) and a final SOFTMAX (its input is the
logits).
Anything else is refused, naming the op, before any work (engine="ref" trains every model python_ref/train can).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from python_ref import shapes
from python_ref.opdefs import OPS
from python_ref.train.optim import ADAM_BETAS, ADAM_EPS
from python_ref.wrt_file import WrtModel
from wasmrt.errors import UnsupportedOpError
from wasmrt.train.engine_steps import Out, Steps
from wasmrt.train.export import graph_from_wrt, write_graph

F32 = np.float32
INF = math.inf
# the activations the engine has gradients for (train.c wrt_train_grad); HARD_SWISH's reads the forward's input
ACTIVATIONS = ("RELU", "CLIP", "SIGMOID", "TANH", "HARD_SWISH")


@dataclass
class _Layer:
    op: str                 # FULLY_CONNECTED, an activation, RESHAPE or SOFTMAX
    w: str = ""             # parameter names (FULLY_CONNECTED)
    b: str = ""
    lo: float = -INF        # fused clamp, or a CLIP's / RELU's bounds
    hi: float = INF
    geo: np.ndarray | None = None  # CONV_2D, pools: oh, ow, kh, kw, sh, sw, dh, dw, pt, pl, then (train.c) a
    # convolution's groups, or a pooling's kind (0 max, 1 average, 2 average with count_include_pad), pb, pr
    out: tuple[int, ...] = ()      # the output's shape per sample


def _geometry(m: WrtModel, op: object, kh: int, kw: int) -> np.ndarray:
    a = shapes.full_attrs(op.op, op.attrs)  # type: ignore[attr-defined]
    oh, ow = m.tensors[op.outputs[0]].shape[1:3]  # type: ignore[attr-defined]
    (sh, sw), (dh, dw), (pt, pl, pb, pr) = a["strides"], a["dilations"], a["pads"]
    kind = op.op  # type: ignore[attr-defined]
    extra = [int(a["groups"])] if kind == "CONV_2D" else [POOL_KINDS[kind]] if kind == "MAX_POOL_2D" else \
        [POOL_KIND_COUNT_PAD if a["count_include_pad"] else POOL_KINDS[kind], pb, pr]
    return np.array([oh, ow, kh, kw, sh, sw, dh, dw, pt, pl, *extra], np.int32)


# wrt_train_pool: the pooling's kind in geo[10] (train.c), and an average pooling's that counts the padding
POOL_KINDS = {"MAX_POOL_2D": 0, "AVERAGE_POOL_2D": 1}
POOL_KIND_COUNT_PAD = 2
POOLS = tuple(POOL_KINDS)


def _chain(m: WrtModel, start: int, params: set[str], logits: int, engine: str) -> list[_Layer]:
    """The ops from `start` as layers, or UnsupportedOpError naming the first one the engine trainer cannot run."""
    t = m.tensors
    layers: list[_Layer] = []
    prev = None
    for k in range(start, len(m.ops)):
        op = m.ops[k]
        where = f"op {k} ({op.op} {op.name!r})"
        if prev is not None and op.inputs[0] != prev:
            raise UnsupportedOpError(f"engine training: {where} does not read the previous op's output (the trained "
                                     "layers must be a chain); use engine='ref'")
        if op.op == "FULLY_CONNECTED":
            w = t[op.inputs[1]].name
            b = t[op.inputs[2]].name if len(op.inputs) > 2 and op.inputs[2] >= 0 else ""
            if w not in params or (b and b not in params):
                raise UnsupportedOpError(f"engine training: {where} is frozen inside the trained layers; use "
                                         "engine='ref'")
            layers.append(_Layer("FULLY_CONNECTED", w, b, float(op.attrs.get("act_min", -INF)),
                                 float(op.attrs.get("act_max", INF))))
        elif op.op == "CONV_2D" and len([i for i in op.inputs if i >= 0]) <= 3:
            w = t[op.inputs[1]].name
            b = t[op.inputs[2]].name if len(op.inputs) > 2 and op.inputs[2] >= 0 else ""
            if w not in params or (b and b not in params):
                raise UnsupportedOpError(f"engine training: {where} is frozen inside the trained layers; use "
                                         "engine='ref'")
            a = shapes.full_attrs(op.op, op.attrs)
            kh, kw = t[op.inputs[1]].shape[1:3]
            layers.append(_Layer("CONV_2D", w, b, float(a["act_min"]), float(a["act_max"]), _geometry(m, op, kh, kw),
                                 tuple(t[op.outputs[0]].shape[1:])))
        elif op.op in POOLS:
            a = shapes.full_attrs(op.op, op.attrs)
            kh, kw = a["kernel"]
            layers.append(_Layer(op.op, geo=_geometry(m, op, kh, kw), out=tuple(t[op.outputs[0]].shape[1:])))
            if a["act_min"] > -INF or a["act_max"] < INF:  # the fused clamp: its gradient is a CLIP's
                layers.append(_Layer("CLIP", lo=float(a["act_min"]), hi=float(a["act_max"])))
        elif op.op in ACTIVATIONS:
            clip = op.op == "CLIP"
            layers.append(_Layer(op.op, lo=float(op.attrs["min"]) if clip else -INF,
                                 hi=float(op.attrs["max"]) if clip else INF))
        elif op.op == "RESHAPE" and len(t[op.outputs[0]].shape) == 2:
            layers.append(_Layer("RESHAPE"))
        elif op.op == "SOFTMAX" and op.outputs[0] in m.outputs and op.inputs[0] == logits:
            layers.append(_Layer("SOFTMAX"))
        else:
            raise UnsupportedOpError(f"engine training: {where} is not supported by the engine trainer (fully "
                                     "connected layers, convolutions, pooling, activations, a flatten and a final "
                                     "softmax); use engine='ref' or train fewer layers")
        prev = op.outputs[0]
    return layers


class EngineHead:
    """The trained layers on the engine: step(features, labels) -> (loss, logits), params updated in place."""

    def __init__(self, m: WrtModel, start: int, params: dict[str, np.ndarray], logits: int, loss: str,
                 optimizer: str, lr: float, momentum: float, weight_decay: float, engine: str,
                 variant: str | None = None) -> None:
        self.layers = _chain(m, start, set(params), logits, engine)
        self.steps = Steps(engine, variant)
        self.params = params
        self.loss, self.optimizer = loss, optimizer
        self.lr, self.momentum, self.weight_decay = lr, momentum, weight_decay
        self.state = {n: [np.zeros_like(p) for _ in range(2 if optimizer == "adam" else 1)] for n, p in params.items()}
        self.t = 0

    def forward(self, x: np.ndarray) -> tuple[list[np.ndarray], dict[int, np.ndarray]]:
        """Every layer's input, then the logits (the last layer before a SOFTMAX); and each convolution's patches."""
        acts = [np.ascontiguousarray(x, F32)]
        cols: dict[int, np.ndarray] = {}
        for k, ly in enumerate(self.layers):
            v = acts[-1]
            if ly.op == "FULLY_CONNECTED":
                w = self.params[ly.w]
                v = acts[-1] = v.reshape(len(v), -1)
                y = np.empty((len(v), w.shape[0]), F32)
                self.steps.call("wrt_train_dense_forward", len(v), w.shape[1], w.shape[0], v, w,
                                self.params[ly.b] if ly.b else None, ly.lo, ly.hi, np.empty(w.size, F32), Out(y))
            elif ly.op == "CONV_2D":
                w = self.params[ly.w]
                y = np.empty((len(v), *ly.out), F32)
                n, h, wd, cin = v.shape
                cols[k] = np.empty((n * ly.out[0] * ly.out[1], w[0].size * int(ly.geo[10])), F32)  # every group's
                self.steps.call("wrt_train_conv_forward", n, h, wd, cin, w.shape[0], ly.geo, v, w,
                                self.params[ly.b] if ly.b else None, ly.lo, ly.hi, Out(cols[k]),
                                np.empty(w.size, F32), Out(y))
            elif ly.op in POOLS:
                y = np.empty((len(v), *ly.out), F32)
                self.steps.call("wrt_train_pool", *v.shape, ly.geo, v, None, Out(y))
            elif ly.op in ACTIVATIONS:
                y = _activation(ly, v)
            elif ly.op == "RESHAPE":
                y = v.reshape(len(v), -1)
            else:  # SOFTMAX: the loss reads its input
                y = v
            acts.append(y)
        return acts, cols

    def step(self, x: np.ndarray, labels: np.ndarray) -> tuple[float, np.ndarray, dict[str, np.ndarray]]:
        """One training step on a batch: (loss, logits, gradients). The caller checks the loss before update()."""
        acts, cols = self.forward(x)
        z = acts[-1]
        dz = np.empty_like(z)
        loss = np.zeros(1, F32)
        if self.loss == "cross_entropy":
            self.steps.call("wrt_train_softmax_xent", z.shape[0], z.shape[1], z,
                            np.ascontiguousarray(labels, np.int32), Out(dz), Out(loss))
        else:
            target = np.ascontiguousarray(labels, F32).reshape(z.shape)
            self.steps.call("wrt_train_mse", z.size, z, target, Out(dz), Out(loss))
        grads: dict[str, np.ndarray] = {}
        g = dz
        for k in range(len(self.layers) - 1, -1, -1):
            ly, v, y = self.layers[k], acts[k], acts[k + 1]
            first = k == 0
            if ly.op in ("FULLY_CONNECTED", "CONV_2D"):
                w = self.params[ly.w]
                dw = np.empty_like(w)
                db = np.empty(w.shape[0], F32) if ly.b else None
                dx = None if first else np.empty_like(v)  # the first trained layer's input needs no gradient
                if ly.op == "FULLY_CONNECTED":
                    g = np.ascontiguousarray(g)
                    self.steps.call("wrt_train_dense_backward", len(v), w.shape[1], w.shape[0], v, w, y, ly.lo,
                                    ly.hi, Out(g), None if dx is None else Out(dx), Out(dw),
                                    None if db is None else Out(db))
                else:
                    g = np.ascontiguousarray(g, F32).reshape(-1, w.shape[0])
                    dcols = None if first else np.empty_like(cols[k])
                    self.steps.call("wrt_train_conv_backward", *v.shape, w.shape[0], ly.geo, cols[k], w, y, ly.lo,
                                    ly.hi, Out(g), None if dcols is None else Out(dcols),
                                    None if dx is None else Out(dx), Out(dw), None if db is None else Out(db))
                grads[ly.w] = dw
                if db is not None:
                    grads[ly.b] = db
                if dx is None:
                    break
                g = dx
            elif ly.op in POOLS:
                dx = np.empty_like(v)
                self.steps.call("wrt_train_pool", *v.shape, ly.geo, v, np.ascontiguousarray(g, F32), Out(dx))
                g = dx
            elif ly.op == "RESHAPE":
                g = np.ascontiguousarray(g).reshape(v.shape)
            elif ly.op in ACTIVATIONS:
                dx = np.empty_like(g)
                src = v if ly.op == "HARD_SWISH" else y
                self.steps.call("wrt_train_grad", OPS[ly.op].code, g.size, np.ascontiguousarray(src),
                                np.ascontiguousarray(g), Out(dx), ly.lo, ly.hi)
                g = dx
        return float(loss[0]), z, grads

    def update(self, grads: dict[str, np.ndarray]) -> None:
        """The optimizer step on every parameter."""
        self.t += 1
        for name, g in grads.items():
            p, st = self.params[name], self.state[name]
            if self.optimizer == "sgd":
                self.steps.call("wrt_train_sgd", p.size, Out(p), g, Out(st[0]), self.lr, self.momentum,
                                self.weight_decay)
            else:
                self.steps.call("wrt_train_adam", p.size, Out(p), g, Out(st[0]), Out(st[1]), self.lr, *ADAM_BETAS,
                                ADAM_EPS, self.weight_decay, self.t)


def _activation(ly: _Layer, v: np.ndarray) -> np.ndarray:
    """The forward of an activation between trained layers: the reference op (element-wise, cheap next to the
    layers' products)."""
    from python_ref import dispatch

    attrs = {"min": ly.lo, "max": ly.hi} if ly.op == "CLIP" else {}
    return np.ascontiguousarray(dispatch.run(ly.op, [v], attrs)[0], F32)


def frozen_features(m: WrtModel, start: int, frontier: list[int], x: np.ndarray, engine: str,
                    variant: str | None = None) -> np.ndarray:
    """The activation the trained layers read, for every sample, from the frozen layers run on the engine (the
    model cut before op `start`, its output that activation). start 0: the inputs themselves."""
    if start == 0:
        return x
    if len(frontier) != 1:
        raise UnsupportedOpError(f"engine training: the trained layers read {len(frontier)} activations of the frozen "
                                 "part; the engine trainer takes one (use engine='ref')")
    from wasmrt.engines import load

    g = graph_from_wrt(m)
    g.nodes = g.nodes[:start]
    g.outputs = [m.tensors[frontier[0]].name]
    opts = {"variant": variant} if engine == "wasm" and variant else {}
    model = load(write_graph(g), engine, **opts)
    spec = model.inputs[0]
    per = int(spec.shape[0]) if spec.shape and int(spec.shape[0]) > 0 else 1
    parts = []
    for s in range(0, len(x), per):
        chunk = x[s:s + per]
        if len(chunk) < per:
            chunk = np.concatenate([chunk, np.zeros((per - len(chunk), *x.shape[1:]), x.dtype)])
        out = next(iter(model.run({spec.name: chunk}).values()))
        parts.append(np.asarray(out, F32)[:min(per, len(x) - s)])
    return np.ascontiguousarray(np.concatenate(parts))
