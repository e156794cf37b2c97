"""Turn a .wrt model into WebGPU work: the packed constants and one dispatch per op (kernel, parameters, grid).

Pure Python and numpy (no GPU here): the Python engine (webgpu.py) runs the plan on wgpu-native; the JS backend
builds the same plan (js_bindings/src/webgpu/plan.js). Activations live in one arena buffer at the offsets of the
.wrt memory plan; constants in one buffer, packed for the kernels (convolution weights as [G][K][og], depthwise
[KH*KW][CO], dense [K][N]). An op without a WGSL kernel, or a dtype other than float32, is refused here, naming it;
with fallback=True it is listed in Plan.wasm_ops instead, for the wasm engine to run (webgpu_split.py).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from python_ref import shapes
from python_ref.wrt_file import OpInfo, TensorInfo, WrtModel
from wasmrt.errors import UnsupportedOpError

KERNELS_FILE = Path(__file__).with_name("webgpu_kernels.json")
F32 = np.dtype("<f4")
CONST_ALIGN = 64  # elements (256 bytes) between packed constants

BINARY = {"ADD": "add", "SUB": "sub", "MUL": "mul", "DIV": "div", "MAXIMUM": "max", "MINIMUM": "min",
          "PRELU": "prelu"}
UNARY = {"RELU": "relu", "CLIP": "clip", "LEAKY_RELU": "leaky_relu", "HARD_SWISH": "hard_swish",
         "HARD_SIGMOID": "hard_sigmoid", "SIGMOID": "sigmoid", "TANH": "tanh", "EXP": "exp", "SQRT": "sqrt",
         "ABS": "abs", "NEG": "neg"}
REDUCE = {"MEAN": "mean", "REDUCE_SUM": "sum", "REDUCE_MAX": "max"}
SUPPORTED = ("CONV_2D", "CONV_TRANSPOSE_2D", "FULLY_CONNECTED", *BINARY, *UNARY, "MAX_POOL_2D", "AVERAGE_POOL_2D",
             *REDUCE, "SOFTMAX", "RESHAPE", "TRANSPOSE", "CONCATENATION", "SLICE", "PAD", "RESIZE", "DEPTH_TO_SPACE")


@cache
def kernel_table() -> dict[str, Any]:
    """The generated WGSL kernels and their parameter layouts (kernels_wasm/gen/kernels/gpu.py)."""
    return json.loads(KERNELS_FILE.read_text(encoding="utf-8"))


@dataclass
class Dispatch:
    kernel: str
    params: dict[str, float | int]
    groups: tuple[int, int, int]
    op: int      # index of the op in the model
    flops: float = 0.0  # multiply-adds x 2 of this dispatch (convolutions and dense layers)

    def packed(self) -> bytes:
        """The uniform block: the kernel's parameters in layout order, u32 or f32, padded to 16 bytes."""
        layout = kernel_table()["kernels"][self.kernel]["params"]
        words = np.zeros(max(4, -(-len(layout) // 4) * 4), np.uint32)
        for k, p in enumerate(layout):
            name, _, kind = p.partition(":")
            v = self.params.get(name, 0)
            words[k] = np.float32(v).view(np.uint32) if kind else np.uint32(int(v) & 0xFFFFFFFF)
        return words.tobytes()


@dataclass
class Plan:
    constants: np.ndarray          # float32, the constants buffer
    dispatches: list[Dispatch]
    arena_bytes: int
    flops: float                   # per run
    wasm_ops: dict[int, str] = field(default_factory=dict)  # fallback: op index -> why the GPU cannot run it

    def kernels(self) -> list[str]:
        return sorted({d.kernel for d in self.dispatches})


def _strides(shape: tuple[int, ...]) -> list[int]:
    out, s = [], 1
    for d in reversed(shape):
        out.append(s)
        s *= d
    return out[::-1]


def _pad6(vals: list[int], fill: int) -> list[int]:
    rank = kernel_table()["rank"]
    return [fill] * (rank - len(vals)) + list(vals)


def _vec(prefix: str, vals: list[int]) -> dict[str, int]:
    return {f"{prefix}{k}": v for k, v in enumerate(vals)}


def _grid1d(n: int) -> tuple[dict[str, int], tuple[int, int, int]]:
    groups = max(1, -(-n // kernel_table()["workgroup"]))
    gx = min(groups, 65535)
    return {"gx": gx, "n": n}, (gx, -(-groups // gx), 1)


def _act(a: dict[str, Any]) -> dict[str, float]:
    return {"act_min": float(a.get("act_min", -math.inf)), "act_max": float(a.get("act_max", math.inf))}


class Planner:
    def __init__(self, model: WrtModel, label: str, fallback: bool = False) -> None:
        self.m = model
        self.fallback = fallback
        self.wasm_ops: dict[int, str] = {}
        self.label = label
        self.chunks: list[np.ndarray] = []
        self.size = 0
        self.dispatches: list[Dispatch] = []
        self.flops = 0.0
        self.rank = kernel_table()["rank"]
        self.const_bit = kernel_table()["const_bit"]

    # -- operands --------------------------------------------------------------------------------------------------
    def refuse(self, k: int, op: OpInfo, detail: str) -> UnsupportedOpError:
        return UnsupportedOpError(op.op, op.name or f"#{k}", f"{self.label} (engine webgpu)", detail)

    def pack(self, arr: np.ndarray) -> int:
        """Append a float32 constant to the constants buffer; its element offset."""
        off = self.size
        flat = np.ascontiguousarray(arr, F32).reshape(-1)
        pad = (-flat.size) % CONST_ALIGN
        self.chunks.append(flat)
        if pad:
            self.chunks.append(np.zeros(pad, F32))
        self.size += flat.size + pad
        return off

    def t(self, i: int) -> TensorInfo:
        return self.m.tensors[i]

    def operand(self, i: int) -> int:
        """Offset of a tensor for rd(): arena elements, or packed constant with the constant bit."""
        t = self.t(i)
        if t.data is not None:
            return self.const_bit | self.pack(t.data)
        return t.arena_offset // 4

    def act(self, k: int, op: OpInfo, i: int) -> int:
        """Arena element offset of an activation input (the convolution kernels read only the arena)."""
        t = self.t(i)
        if t.data is not None:
            raise self.refuse(k, op, f"input {t.name!r} is a constant; this engine needs it computed")
        return t.arena_offset // 4

    def add(self, k: int, kernel: str, params: dict[str, Any], groups: tuple[int, int, int],
            flops: float = 0.0) -> None:
        self.dispatches.append(Dispatch(kernel, params, groups, k, flops))
        self.flops += flops

    # -- the model -------------------------------------------------------------------------------------------------
    def plan(self) -> Plan:
        for k, op in enumerate(self.m.ops):
            outs = [self.t(i) for i in op.outputs]
            if all(0 in t.shape for t in outs):
                continue
            mark = len(self.chunks), self.size, len(self.dispatches), self.flops
            try:
                self.plan_op(k, op)
            except UnsupportedOpError as e:
                if not self.fallback:
                    raise
                # the op runs on wasm: drop what it packed or dispatched before the refusal
                del self.chunks[mark[0]:], self.dispatches[mark[2]:]
                self.size, self.flops = mark[1], mark[3]
                self.wasm_ops[k] = e.detail
        consts = np.concatenate(self.chunks) if self.chunks else np.zeros(CONST_ALIGN, F32)
        return Plan(consts, self.dispatches, self.m.arena_size, self.flops, self.wasm_ops)

    def plan_op(self, k: int, op: OpInfo) -> None:
        if op.op not in SUPPORTED:
            raise self.refuse(k, op, f"no WGSL kernel for {op.op}; the webgpu engine runs "
                                     f"{', '.join(sorted(SUPPORTED))}")
        for i in [*op.inputs, *op.outputs]:
            if i >= 0 and self.t(i).dtype != F32:
                raise self.refuse(k, op, f"tensor {self.t(i).name!r} is {self.t(i).dtype}; the webgpu engine "
                                         "runs float32 models")
        kind = "binary" if op.op in BINARY else "unary" if op.op in UNARY else "reduce" if op.op in REDUCE \
            else op.op.lower()
        getattr(self, "op_" + kind)(k, op)

    # -- convolutions and dense ------------------------------------------------------------------------------------
    def _conv_common(self, k: int, op: OpInfo) -> tuple[dict[str, Any], TensorInfo, TensorInfo, np.ndarray]:
        x, w, y = self.t(op.inputs[0]), self.t(op.inputs[1]), self.t(op.outputs[0])
        if w.data is None:
            raise self.refuse(k, op, f"weights {w.name!r} are computed at run time; this engine needs constants")
        a = shapes.full_attrs(op.op, op.attrs)
        has_b = len(op.inputs) > 2 and op.inputs[2] >= 0
        has_r = len(op.inputs) > 3 and op.inputs[3] >= 0
        p: dict[str, Any] = {"x": self.act(k, op, op.inputs[0]), "y": y.arena_offset // 4,
                             "flags": (1 if has_b else 0) | (2 if has_r else 0), **_act(a)}
        if has_b:
            p["b"] = self.pack(self.t(op.inputs[2]).data)
        if has_r:
            p["r"] = self.act(k, op, op.inputs[3])
        return p, x, y, w.data

    def op_conv_2d(self, k: int, op: OpInfo) -> None:
        p, x, y, w = self._conv_common(k, op)
        a = shapes.full_attrs(op.op, op.attrs)
        n, h, wd, ci = x.shape
        _, oh, ow, co = y.shape
        _, kh, kw, cg = w.shape
        g = int(a["groups"])
        og = co // g
        (sh, sw), (dh, dw), (pt, pl, pb, pr) = a["strides"], a["dilations"], a["pads"]
        p.update(H=h, W=wd, CI=ci, OH=oh, OW=ow, CO=co, KH=kh, KW=kw, cg=cg, og=og, sh=sh, sw=sw, dh=dh, dw=dw,
                 pt=pt, pl=pl)
        flops = 2.0 * n * oh * ow * co * kh * kw * cg
        if cg == 1 and g == ci and g > 1:
            p["w"] = self.pack(w.reshape(co, kh * kw).T)
            extra, groups = _grid1d(n * oh * ow * co)
            self.add(k, "dwconv", {**p, **extra}, groups, flops)
            return
        kk = kh * kw * cg
        p["w"] = self.pack(w.reshape(g, og, kk).transpose(0, 2, 1))
        direct = kh == kw == 1 and sh == sw == 1 and pt == pl == pb == pr == 0
        self.gemm(k, p, n * oh * ow, og, kk, g, direct, flops)

    def gemm(self, k: int, p: dict[str, Any], m: int, og: int, kk: int, g: int, direct: bool, flops: float) -> None:
        tile = "128x128" if og >= 128 and m >= 1024 else "64x64" if og >= 48 else "32x32"
        bm, bn = kernel_table()["kernels"][f"gemm_{tile}"]["tile"]
        self.add(k, f"{'gemm' if direct else 'conv'}_{tile}", {**p, "M": m, "K": kk},
                 (-(-og // bn), -(-m // bm), g), flops)

    def op_fully_connected(self, k: int, op: OpInfo) -> None:
        p, x, _, w = self._conv_common(k, op)
        nout, kk = w.shape
        m = math.prod(x.shape[:-1])
        p.update(w=self.pack(w.T), H=1, W=1, CI=kk, OH=1, OW=1, CO=nout, KH=1, KW=1, cg=kk, og=nout, sh=1, sw=1,
                 dh=1, dw=1)
        self.gemm(k, p, m, nout, kk, 1, True, 2.0 * m * nout * kk)

    def op_conv_transpose_2d(self, k: int, op: OpInfo) -> None:
        p, x, y, w = self._conv_common(k, op)
        a = shapes.full_attrs(op.op, op.attrs)
        n, h, wd, ci = x.shape
        _, oh, ow, co = y.shape
        _, kh, kw, cg = w.shape
        g = int(a["groups"])
        (sh, sw), (dh, dw), (pt, pl, _, _) = a["strides"], a["dilations"], a["pads"]
        p.update(w=self.pack(w), H=h, W=wd, CI=ci, OH=oh, OW=ow, CO=co, KH=kh, KW=kw, cg=cg, og=co // g, sh=sh,
                 sw=sw, dh=dh, dw=dw, pt=pt, pl=pl)
        extra, groups = _grid1d(n * oh * ow * co)
        self.add(k, "conv_transpose", {**p, **extra}, groups, 2.0 * n * h * wd * co * kh * kw * cg)

    # -- element-wise ----------------------------------------------------------------------------------------------
    def op_binary(self, k: int, op: OpInfo) -> None:
        y = self.t(op.outputs[0])
        r = len(y.shape)
        if r > self.rank:
            raise self.refuse(k, op, f"rank {r} > {self.rank}")
        p: dict[str, Any] = {"y": y.arena_offset // 4, **_act(shapes.full_attrs(op.op, op.attrs))}
        for name, i in zip(("a", "b"), op.inputs, strict=True):
            t = self.t(i)
            sh = [1] * (r - len(t.shape)) + list(t.shape)
            st = [0 if d == 1 else s for d, s in zip(sh, _strides(tuple(sh)), strict=True)]
            p[name] = self.operand(i)
            p.update(_vec("s" + name, _pad6(st, 0)))
        p.update(_vec("d", _pad6(list(y.shape), 1)))
        extra, groups = _grid1d(math.prod(y.shape))
        self.add(k, f"binary_{BINARY[op.op]}", {**p, **extra}, groups)

    def op_unary(self, k: int, op: OpInfo) -> None:
        a = shapes.full_attrs(op.op, op.attrs)
        y = self.t(op.outputs[0])
        params = {"CLIP": (a.get("min"), a.get("max")), "LEAKY_RELU": (a.get("alpha"), 0.0),
                  "HARD_SIGMOID": (a.get("alpha"), a.get("beta"))}.get(op.op, (0.0, 0.0))
        extra, groups = _grid1d(math.prod(y.shape))
        self.add(k, f"unary_{UNARY[op.op]}", {"x": self.operand(op.inputs[0]), "y": y.arena_offset // 4,
                                              "p0": float(params[0]), "p1": float(params[1]),
                                              **extra}, groups)

    # -- data movement ---------------------------------------------------------------------------------------------
    def copy(self, k: int, x: int, y: int, dims: list[int], sx: list[int], sy: list[int],
             act: dict[str, float] | None = None) -> None:
        if len(dims) > self.rank:
            raise self.refuse(k, self.m.ops[k], f"rank {len(dims)} > {self.rank}")
        extra, groups = _grid1d(math.prod(dims))
        p = {"x": x, "y": y, **_vec("d", _pad6(dims, 1)), **_vec("sx", _pad6(sx, 0)), **_vec("sy", _pad6(sy, 0)),
             **(act or {"act_min": -math.inf, "act_max": math.inf}), **extra}
        self.add(k, "copy", p, groups)

    def op_reshape(self, k: int, op: OpInfo) -> None:
        x, y = self.t(op.inputs[0]), self.t(op.outputs[0])
        if x.data is None and x.arena_offset == y.arena_offset:
            return  # the planner gave both the same bytes: nothing to do
        n = math.prod(y.shape)
        self.copy(k, self.operand(op.inputs[0]), y.arena_offset // 4, [n], [1], [1])

    def op_transpose(self, k: int, op: OpInfo) -> None:
        x, y = self.t(op.inputs[0]), self.t(op.outputs[0])
        perm = shapes.transpose_perm(len(x.shape), shapes.full_attrs(op.op, op.attrs)["perm"])
        sx = _strides(x.shape)
        self.copy(k, self.operand(op.inputs[0]), y.arena_offset // 4, list(y.shape), [sx[q] for q in perm],
                  _strides(y.shape))

    def op_depth_to_space(self, k: int, op: OpInfo) -> None:
        x, y = self.t(op.inputs[0]), self.t(op.outputs[0])
        a = shapes.full_attrs(op.op, op.attrs)
        n, h, w, c = x.shape
        b = int(a["block"])
        co = c // (b * b)
        if int(a["mode"]) == 0:  # DCR: channel (i * b + j) * co + k; view (n,h,w,b,b,co), out (n,h,i,w,j,co)
            view, perm = (n, h, w, b, b, co), (0, 1, 3, 2, 4, 5)
        else:  # CRD: channel k * b * b + i * b + j; view (n,h,w,co,b,b), out (n,h,i,w,j,k)
            view, perm = (n, h, w, co, b, b), (0, 1, 4, 2, 5, 3)
        sx = _strides(view)
        dims = [view[q] for q in perm]
        self.copy(k, self.operand(op.inputs[0]), y.arena_offset // 4, dims, [sx[q] for q in perm], _strides(
            tuple(dims)))

    def op_concatenation(self, k: int, op: OpInfo) -> None:
        y = self.t(op.outputs[0])
        a = shapes.full_attrs(op.op, op.attrs)
        axis = int(a["axis"])
        sy = _strides(y.shape)
        at = 0
        for i in op.inputs:
            t = self.t(i)
            self.copy(k, self.operand(i), y.arena_offset // 4 + at * sy[axis], list(t.shape), _strides(t.shape),
                      sy, _act(a))
            at += t.shape[axis]

    def op_slice(self, k: int, op: OpInfo) -> None:
        x, y = self.t(op.inputs[0]), self.t(op.outputs[0])
        sx = _strides(x.shape)
        prm = shapes.slice_params(x.shape, shapes.full_attrs(op.op, op.attrs))
        base = sum(b * s for (b, _, _, _), s in zip(prm, sx, strict=True))
        steps = [(st * s) & 0xFFFFFFFF for (_, _, st, _), s in zip(prm, sx, strict=True)]  # u32 wrap-around
        self.copy(k, self.operand(op.inputs[0]) + base, y.arena_offset // 4, list(y.shape), steps, _strides(y.shape))

    def op_pad(self, k: int, op: OpInfo) -> None:
        x, y = self.t(op.inputs[0]), self.t(op.outputs[0])
        a = shapes.full_attrs(op.op, op.attrs)
        r = len(x.shape)
        if r > self.rank:
            raise self.refuse(k, op, f"rank {r} > {self.rank}")
        before = [int(v) for v in a["pads"][:r]]
        extra, groups = _grid1d(math.prod(y.shape))
        p = {"x": self.operand(op.inputs[0]), "y": y.arena_offset // 4, "mode": int(a["mode"]),
             "value": float(a["value"]), **_vec("d", _pad6(list(y.shape), 1)), **_vec("e", _pad6(list(x.shape), 1)),
             **_vec("p", _pad6(before, 0)), **_vec("sx", _pad6(_strides(x.shape), 0)), **extra}
        self.add(k, "pad", p, groups)

    def op_resize(self, k: int, op: OpInfo) -> None:
        x, y = self.t(op.inputs[0]), self.t(op.outputs[0])
        a = shapes.full_attrs(op.op, op.attrs)
        _, h, w, c = x.shape
        _, oh, ow, _ = y.shape
        extra, groups = _grid1d(math.prod(y.shape))
        p = {"x": self.operand(op.inputs[0]), "y": y.arena_offset // 4, "H": h, "W": w, "C": c, "OH": oh, "OW": ow,
             "scale_h": float(a["scales"][0]), "scale_w": float(a["scales"][1]), "mode": int(a["mode"]),
             "coord": int(a["coord"]), "nearest": int(a["nearest"]), **extra}
        self.add(k, "resize", p, groups)

    # -- pooling, reductions, softmax ------------------------------------------------------------------------------
    def _pool(self, k: int, op: OpInfo, kind: str) -> None:
        x, y = self.t(op.inputs[0]), self.t(op.outputs[0])
        a = shapes.full_attrs(op.op, op.attrs)
        _, h, w, c = x.shape
        _, oh, ow, _ = y.shape
        (kh, kw), (sh, sw), (dh, dw), (pt, pl, pb, pr) = a["kernel"], a["strides"], a["dilations"], a["pads"]
        if oh == ow == 1 and (kh, kw) == (h, w) and not any(a["pads"]) and a["act_min"] == -math.inf \
                and a["act_max"] == math.inf:  # a global pool: a workgroup per output, not one invocation
            self.reduce(k, op, (1, 2), "mean" if kind == "avg" else "max")
            return
        extra, groups = _grid1d(math.prod(y.shape))
        p = {"x": self.operand(op.inputs[0]), "y": y.arena_offset // 4, "H": h, "W": w, "C": c, "OH": oh, "OW": ow,
             "KH": kh, "KW": kw, "sh": sh, "sw": sw, "dh": dh, "dw": dw, "pt": pt, "pl": pl, "pb": pb, "pr": pr,
             "cip": int(bool(a["count_include_pad"])), **_act(a), **extra}
        self.add(k, f"{kind}pool", p, groups)

    def op_max_pool_2d(self, k: int, op: OpInfo) -> None:
        self._pool(k, op, "max")

    def op_average_pool_2d(self, k: int, op: OpInfo) -> None:
        self._pool(k, op, "avg")

    def op_reduce(self, k: int, op: OpInfo) -> None:
        x = self.t(op.inputs[0])
        if len(x.shape) > self.rank:
            raise self.refuse(k, op, f"rank {len(x.shape)} > {self.rank}")
        axes = shapes.reduce_axes(shapes.full_attrs(op.op, op.attrs)["axes"], len(x.shape))
        self.reduce(k, op, axes, REDUCE[op.op])

    def reduce(self, k: int, op: OpInfo, axes: tuple[int, ...], kind: str) -> None:
        x, y = self.t(op.inputs[0]), self.t(op.outputs[0])
        sx = _strides(x.shape)
        kept = [1 if q in axes else d for q, d in enumerate(x.shape)]
        red = [d if q in axes else 1 for q, d in enumerate(x.shape)]
        nout, nred = math.prod(kept), math.prod(red)
        gx = min(nout, 65535)
        p = {"x": self.operand(op.inputs[0]), "y": y.arena_offset // 4, "gx": gx, "n": nout, "nred": nred,
             "scale": 1.0 / max(1, nred), **_vec("d", _pad6(kept, 1)), **_vec("ds", _pad6(sx, 0)),
             **_vec("r", _pad6(red, 1)), **_vec("rs", _pad6(sx, 0))}
        self.add(k, f"reduce_{kind}", p, (gx, -(-nout // gx), 1))

    def op_softmax(self, k: int, op: OpInfo) -> None:
        x, y = self.t(op.inputs[0]), self.t(op.outputs[0])
        axis = int(shapes.full_attrs(op.op, op.attrs)["axis"]) % max(1, len(x.shape))
        ln = x.shape[axis] if x.shape else 1
        inner = math.prod(x.shape[axis + 1:])
        extra, groups = _grid1d(math.prod(x.shape) // max(1, ln))
        self.add(k, "softmax", {"x": self.operand(op.inputs[0]), "y": y.arena_offset // 4, "len": ln,
                                "inner": inner, **extra}, groups)


def plan(model: WrtModel, label: str = "<model>", fallback: bool = False) -> Plan:
    return Planner(model, label, fallback).plan()
