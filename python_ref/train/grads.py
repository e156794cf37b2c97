"""Backward semantics of the ops a trained layer uses: the gradient of each op's inputs given its output's gradient.

Float rules (python_ref/train/README.md): every gradient is computed in float64 from the float32 values the forward
pass kept and the float32 output gradient, and rounded once to float32; the reductions of a gradient (over the
batch and the output pixels for a weight, over the taps for an input) accumulate in float64, as the forward ops do.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from python_ref import shapes
from python_ref.ops import _pad_hw, _pool_geometry, _tap

Attrs = dict[str, Any]
F64 = np.float64
Grads = list[np.ndarray | None]
# (inputs, outputs, output gradients, attributes, which inputs need a gradient) -> input gradients, float64 or None
Backward = Callable[[list[np.ndarray | None], list[np.ndarray], list[np.ndarray], Attrs, list[bool]], Grads]


def _f64(x: np.ndarray) -> np.ndarray:
    return np.asarray(x).astype(F64, copy=False)


def clamp_mask(y: np.ndarray, a: Attrs) -> np.ndarray | None:
    """Where the fused output clamp [act_min, act_max] lets the gradient through: strictly inside the bounds (a value
    clamped to a bound, or lying on it, gets none: PyTorch's relu and hardtanh rule). None: no clamp."""
    lo, hi = float(a.get("act_min", -math.inf)), float(a.get("act_max", math.inf))
    if lo == -math.inf and hi == math.inf:
        return None
    return (y > lo) & (y < hi)


def unbroadcast(g: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum a broadcast result's gradient back to an operand's shape (numpy broadcasting rules)."""
    extra = g.ndim - len(shape)
    if extra:
        g = g.sum(axis=tuple(range(extra)))
    axes = tuple(i for i, d in enumerate(shape) if d == 1 and g.shape[i] != 1)
    return g.sum(axis=axes, keepdims=True) if axes else g


# -- convolution and dense -------------------------------------------------------------------------------------------
def _conv_cols(x: np.ndarray, a: Attrs, kh: int, kw: int) -> tuple[np.ndarray, int, int]:
    """The padded input's patches [N, OH, OW, KH*KW, Cin] (float64) and the output size."""
    (sh, sw), (dh, dw), (pt, pl, pb, pr) = a["strides"], a["dilations"], a["pads"]
    oh = shapes.conv_out(x.shape[1], kh, sh, dh, pt, pb)
    ow = shapes.conv_out(x.shape[2], kw, sw, dw, pl, pr)
    xp = _pad_hw(_f64(x), pt, pl, pb, pr, 0.0)
    cols = np.empty((x.shape[0], oh, ow, kh * kw, x.shape[3]), F64)
    for i in range(kh):
        for j in range(kw):
            cols[:, :, :, i * kw + j] = _tap(xp, i * dh, j * dw, oh, ow, sh, sw)
    return cols, oh, ow


def _scatter_taps(dcols: np.ndarray, x_shape: tuple[int, ...], a: Attrs, kh: int, kw: int) -> np.ndarray:
    """The input gradient from the patches' gradient [N, OH, OW, KH*KW, Cin]: each tap adds back where it read
    (col2im); what lands in the padding is dropped."""
    (sh, sw), (dh, dw), (pt, pl, pb, pr) = a["strides"], a["dilations"], a["pads"]
    n, h, w, c = x_shape
    oh, ow = dcols.shape[1], dcols.shape[2]
    dxp = np.zeros((n, pt + h + pb, pl + w + pr, c), F64)
    for i in range(kh):
        for j in range(kw):
            r0, c0 = i * dh, j * dw
            dxp[:, r0:r0 + (oh - 1) * sh + 1:sh, c0:c0 + (ow - 1) * sw + 1:sw] += dcols[:, :, :, i * kw + j]
    return dxp[:, pt:pt + h, pl:pl + w]


def conv2d_backward(xs: list[np.ndarray | None], ys: list[np.ndarray], gys: list[np.ndarray], a: Attrs,
                    need: list[bool]) -> Grads:
    """CONV_2D (NHWC, OHWI weights, groups): dx by col2im of gy times w, dw = gy^T times the patches, db = sum gy;
    the residual input gets the (clamp-masked) output gradient."""
    x, w = xs[0], xs[1]
    gy = _f64(gys[0])
    mask = clamp_mask(ys[0], a)
    if mask is not None:
        gy = gy * mask
    g = int(a["groups"])
    depthwise = w.shape[3] == 1 and g > 1  # as the forward op (python_ref/ops.py conv2d_sums)
    out = _depthwise_backward(x, w, gy, a, need) if depthwise else _dense_backward(x, w, gy, a, need, g)
    out += [None] * (len(xs) - 2)
    if len(xs) > 2 and xs[2] is not None and need[2]:
        out[2] = gy.sum(axis=(0, 1, 2))
    if len(xs) > 3 and xs[3] is not None and need[3]:
        out[3] = gy
    return out


_COLS_BYTES = 64 << 20  # bound on the float64 patch matrix: larger batches go through in slices of samples


def _dense_backward(x: np.ndarray, w: np.ndarray, gy: np.ndarray, a: Attrs, need: list[bool], g: int) -> Grads:
    """dx and dw of a dense or grouped convolution through the patch matrix (im2col / col2im), a slice of samples
    at a time; dw sums the slices' parts in float64."""
    per_sample = 8 * gy.shape[1] * gy.shape[2] * w.shape[1] * w.shape[2] * x.shape[3]
    step = max(1, _COLS_BYTES // max(1, per_sample))
    if x.shape[0] <= step:
        return _dense_slice(x, w, gy, a, need, g)
    parts = [_dense_slice(x[s:s + step], w, gy[s:s + step], a, need, g) for s in range(0, x.shape[0], step)]
    return [np.concatenate([p[0] for p in parts]) if need[0] else None,
            np.sum([p[1] for p in parts], axis=0) if need[1] else None]


def _dense_slice(x: np.ndarray, w: np.ndarray, gy: np.ndarray, a: Attrs, need: list[bool], g: int) -> Grads:
    cout, kh, kw, cg = w.shape
    og = cout // g
    n = x.shape[0]
    cols, oh, ow = _conv_cols(x, a, kh, kw)
    m = n * oh * ow
    gyg = gy.reshape(m, g, og).transpose(1, 0, 2)  # [G, M, Og]
    out: Grads = [None, None]
    if need[0]:
        wg = _f64(w).reshape(g, og, kh * kw * cg)
        dcols = np.matmul(gyg, wg).reshape(g, m, kh * kw, cg).transpose(1, 2, 0, 3)
        out[0] = _scatter_taps(dcols.reshape(n, oh, ow, kh * kw, g * cg), x.shape, a, kh, kw)
    if need[1]:
        colg = cols.reshape(m, kh * kw, g, cg).transpose(2, 0, 1, 3).reshape(g, m, kh * kw * cg)
        out[1] = np.matmul(gyg.transpose(0, 2, 1), colg).reshape(cout, kh, kw, cg)
    return out


def _depthwise_backward(x: np.ndarray, w: np.ndarray, gy: np.ndarray, a: Attrs, need: list[bool]) -> Grads:
    """groups == Cin, tap by tap as the forward op (no patch matrix: KH*KW times the input would not fit for large
    maps); output channel c*m + k reads input channel c."""
    (sh, sw), (dh, dl), (pt, pl, pb, pr) = a["strides"], a["dilations"], a["pads"]
    cout, kh, kw, _ = w.shape
    n, h, wd, cin = x.shape
    m = cout // cin
    oh, ow = gy.shape[1], gy.shape[2]
    xp = _pad_hw(_f64(x), pt, pl, pb, pr, 0.0)
    gym = gy.reshape(n, oh, ow, cin, m)
    wm = _f64(w).reshape(cin, m, kh, kw)
    dxp = np.zeros(xp.shape, F64) if need[0] else None
    dwm = np.zeros((cin, m, kh, kw), F64) if need[1] else None
    for i in range(kh):
        for j in range(kw):
            if dwm is not None:
                t = _tap(xp, i * dh, j * dl, oh, ow, sh, sw)
                dwm[:, :, i, j] = np.einsum("nhwc,nhwcm->cm", t, gym, optimize=True)
            if dxp is not None:
                r0, c0 = i * dh, j * dl
                dxp[:, r0:r0 + (oh - 1) * sh + 1:sh, c0:c0 + (ow - 1) * sw + 1:sw] += \
                    np.einsum("nhwcm,cm->nhwc", gym, wm[:, :, i, j], optimize=True)
    return [None if dxp is None else dxp[:, pt:pt + h, pl:pl + wd],
            None if dwm is None else dwm.reshape(cout, kh, kw, 1)]


def fully_connected_backward(xs: list[np.ndarray | None], ys: list[np.ndarray], gys: list[np.ndarray], a: Attrs,
                             need: list[bool]) -> Grads:
    """y = x w^T + b: dx = gy w, dw = gy^T x (over every leading index), db = sum gy."""
    x, w = xs[0], xs[1]
    gy = _f64(gys[0])
    mask = clamp_mask(ys[0], a)
    if mask is not None:
        gy = gy * mask
    out: Grads = [None] * len(xs)
    g2, x2 = gy.reshape(-1, gy.shape[-1]), _f64(x).reshape(-1, x.shape[-1])
    if need[0]:
        out[0] = (g2 @ _f64(w)).reshape(x.shape)
    if need[1]:
        out[1] = g2.T @ x2
    if len(xs) > 2 and xs[2] is not None and need[2]:
        out[2] = g2.sum(axis=0)
    return out


def matmul_backward(xs: list[np.ndarray | None], ys: list[np.ndarray], gys: list[np.ndarray], a: Attrs,
                    need: list[bool]) -> Grads:
    """numpy.matmul of operands of rank >= 2: da = gy b^T, db = a^T gy, summed over broadcast batch dimensions."""
    x, w = _f64(xs[0]), _f64(xs[1])
    if x.ndim < 2 or w.ndim < 2:
        raise NotImplementedError("MATMUL gradient: operands of rank 1 are not supported")
    gy = _f64(gys[0])
    da = unbroadcast(np.matmul(gy, np.swapaxes(w, -1, -2)), x.shape) if need[0] else None
    db = unbroadcast(np.matmul(np.swapaxes(x, -1, -2), gy), w.shape) if need[1] else None
    return [da, db]


# -- element-wise ----------------------------------------------------------------------------------------------------
def _binary(rule: Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]) -> Backward:
    def backward(xs: list[np.ndarray | None], ys: list[np.ndarray], gys: list[np.ndarray], a: Attrs,
                 need: list[bool]) -> Grads:
        gy = _f64(gys[0])
        mask = clamp_mask(ys[0], a)
        if mask is not None:
            gy = gy * mask
        ga, gb = rule(gy, _f64(xs[0]), _f64(xs[1]))
        return [unbroadcast(ga, xs[0].shape) if need[0] else None, unbroadcast(gb, xs[1].shape) if need[1] else None]
    return backward


def _unary(rule: Callable[[np.ndarray, np.ndarray, np.ndarray, Attrs], np.ndarray]) -> Backward:
    """rule(gy, x, y, attrs) -> dx, all float64."""
    def backward(xs: list[np.ndarray | None], ys: list[np.ndarray], gys: list[np.ndarray], a: Attrs,
                 need: list[bool]) -> Grads:
        return [rule(_f64(gys[0]), _f64(xs[0]), _f64(ys[0]), a) if need[0] else None]
    return backward


def _clip_rule(g: np.ndarray, x: np.ndarray, y: np.ndarray, a: Attrs) -> np.ndarray:
    return g * ((x > float(a["min"])) & (x < float(a["max"])))


def _hard_swish_rule(g: np.ndarray, x: np.ndarray, y: np.ndarray, a: Attrs) -> np.ndarray:
    # x < -3: 0; -3 <= x <= 3: (2x + 3) / 6; x > 3: 1 (PyTorch's hardswish_backward)
    return g * np.where(x < -3.0, 0.0, np.where(x <= 3.0, x / 3.0 + 0.5, 1.0))


def _hard_sigmoid_rule(g: np.ndarray, x: np.ndarray, y: np.ndarray, a: Attrs) -> np.ndarray:
    z = float(a["alpha"]) * x + float(a["beta"])
    return g * float(a["alpha"]) * ((z > 0.0) & (z < 1.0))


# -- pooling and reductions ------------------------------------------------------------------------------------------
def max_pool_backward(xs: list[np.ndarray | None], ys: list[np.ndarray], gys: list[np.ndarray], a: Attrs,
                      need: list[bool]) -> Grads:
    """Each window's gradient goes to the first tap (row-major over the kernel) that holds the window's maximum."""
    x, y = xs[0], ys[0]
    gy = _f64(gys[0])
    mask = clamp_mask(y, a)
    if mask is not None:
        gy = gy * mask
    oh, ow, taps, (pt, pl, eb, er) = _pool_geometry(x, a)
    sh, sw = a["strides"]
    # the window maximum before the fused clamp: the max over the taps (padding never wins)
    xp = _pad_hw(x, pt, pl, eb, er, -np.inf)
    best = None
    for i, j in taps:
        t = _tap(xp, i, j, oh, ow, sh, sw)
        best = t.copy() if best is None else np.maximum(best, t)
    dxp = np.zeros(xp.shape, F64)
    taken = np.zeros(gy.shape, bool)
    for i, j in taps:
        hit = (_tap(xp, i, j, oh, ow, sh, sw) == best) & ~taken
        dxp[:, i:i + (oh - 1) * sh + 1:sh, j:j + (ow - 1) * sw + 1:sw] += gy * hit
        taken |= hit
    return [dxp[:, pt:pt + x.shape[1], pl:pl + x.shape[2]]]


def average_pool_backward(xs: list[np.ndarray | None], ys: list[np.ndarray], gys: list[np.ndarray], a: Attrs,
                          need: list[bool]) -> Grads:
    """Each window's gradient divided by its divisor (python_ref/README.md) and spread over its taps."""
    x = xs[0]
    gy = _f64(gys[0])
    mask = clamp_mask(ys[0], a)
    if mask is not None:
        gy = gy * mask
    oh, ow, taps, (pt, pl, eb, er) = _pool_geometry(x, a)
    sh, sw = a["strides"]
    pb, pr = a["pads"][2], a["pads"][3]
    n, h, w, c = x.shape
    hp, wp = pt + h + eb, pl + w + er
    valid = np.zeros((1, hp, wp, 1), F64)
    if a["count_include_pad"]:
        valid[:, :pt + h + pb, :pl + w + pr] = 1.0
    else:
        valid[:, pt:pt + h, pl:pl + w] = 1.0
    cnt = np.zeros((1, oh, ow, 1), F64)
    for i, j in taps:
        cnt += _tap(valid, i, j, oh, ow, sh, sw)
    share = gy / cnt
    dxp = np.zeros((n, hp, wp, c), F64)
    for i, j in taps:
        dxp[:, i:i + (oh - 1) * sh + 1:sh, j:j + (ow - 1) * sw + 1:sw] += share
    return [dxp[:, pt:pt + h, pl:pl + w]]


def _reduce_backward(mean: bool) -> Backward:
    def backward(xs: list[np.ndarray | None], ys: list[np.ndarray], gys: list[np.ndarray], a: Attrs,
                 need: list[bool]) -> Grads:
        x = xs[0]
        axes = shapes.reduce_axes(a["axes"], x.ndim)
        g = _f64(gys[0])
        if not a["keepdims"]:
            g = np.expand_dims(g, axes)
        if mean:
            g = g / max(1, math.prod(x.shape[i] for i in axes))
        return [np.broadcast_to(g, x.shape)]
    return backward


def softmax_backward(xs: list[np.ndarray | None], ys: list[np.ndarray], gys: list[np.ndarray], a: Attrs,
                     need: list[bool]) -> Grads:
    y, g = _f64(ys[0]), _f64(gys[0])
    axis = int(a["axis"])
    return [y * (g - np.sum(g * y, axis=axis, keepdims=True))] + [None] * (len(xs) - 1)


# -- data movement ---------------------------------------------------------------------------------------------------
def reshape_backward(xs: list[np.ndarray | None], ys: list[np.ndarray], gys: list[np.ndarray], a: Attrs,
                     need: list[bool]) -> Grads:
    return [_f64(gys[0]).reshape(xs[0].shape)]


def transpose_backward(xs: list[np.ndarray | None], ys: list[np.ndarray], gys: list[np.ndarray], a: Attrs,
                       need: list[bool]) -> Grads:
    perm = shapes.transpose_perm(xs[0].ndim, a["perm"])
    return [np.transpose(_f64(gys[0]), np.argsort(perm))]


def concatenation_backward(xs: list[np.ndarray | None], ys: list[np.ndarray], gys: list[np.ndarray], a: Attrs,
                           need: list[bool]) -> Grads:
    gy = _f64(gys[0])
    mask = clamp_mask(ys[0], a)
    if mask is not None:
        gy = gy * mask
    axis = int(a["axis"]) % gy.ndim
    cuts = np.cumsum([x.shape[axis] for x in xs])[:-1]
    return [p if want else None for p, want in zip(np.split(gy, cuts, axis=axis), need, strict=True)]


BACKWARD: dict[str, Backward] = {
    "CONV_2D": conv2d_backward,
    "FULLY_CONNECTED": fully_connected_backward,
    "MATMUL": matmul_backward,
    "ADD": _binary(lambda g, x, y: (g, g)),
    "SUB": _binary(lambda g, x, y: (g, -g)),
    "MUL": _binary(lambda g, x, y: (g * y, g * x)),
    "DIV": _binary(lambda g, x, y: (g / y, -g * x / (y * y))),
    "RELU": _unary(lambda g, x, y, a: g * (x > 0.0)),
    "CLIP": _unary(_clip_rule),
    "LEAKY_RELU": _unary(lambda g, x, y, a: g * np.where(x > 0.0, 1.0, float(a["alpha"]))),
    "HARD_SWISH": _unary(_hard_swish_rule),
    "HARD_SIGMOID": _unary(_hard_sigmoid_rule),
    "SIGMOID": _unary(lambda g, x, y, a: g * y * (1.0 - y)),
    "TANH": _unary(lambda g, x, y, a: g * (1.0 - y * y)),
    "EXP": _unary(lambda g, x, y, a: g * y),
    "MAX_POOL_2D": max_pool_backward,
    "AVERAGE_POOL_2D": average_pool_backward,
    "MEAN": _reduce_backward(mean=True),
    "REDUCE_SUM": _reduce_backward(mean=False),
    "SOFTMAX": softmax_backward,
    "RESHAPE": reshape_backward,
    "TRANSPOSE": transpose_backward,
    "CONCATENATION": concatenation_backward,
}


def backward(op: str, xs: list[np.ndarray | None], ys: list[np.ndarray], gys: list[np.ndarray], attrs: Attrs,
             need: list[bool]) -> list[np.ndarray | None]:
    """The float32 gradient of each input of one op that `need` asks for (None elsewhere). attrs: the op's full
    attributes (shapes.full_attrs)."""
    rule = BACKWARD.get(op)
    if rule is None:
        raise NotImplementedError(f"{op}: no gradient (trainable ops: {', '.join(sorted(BACKWARD))})")
    a = shapes.full_attrs(op, attrs)
    got = rule(xs, ys, gys, a, need)
    return [None if g is None or not want else np.asarray(g, F64).astype(np.float32)
            for g, want in zip(got, need, strict=True)]
