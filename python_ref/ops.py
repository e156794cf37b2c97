"""Reference implementation of every op in python_ref/opdefs.py, in numpy.

The reference aims to be the most accurate answer, not the fastest: floating-point ops compute in float64 and round
once to the output dtype (float32). Convolutions and matrix products accumulate in float64. Integer ops follow numpy
(wrap-around), except DIV, which truncates toward zero as ONNX does. See python_ref/README.md for the spec.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from python_ref import mediapipe_ops, recurrent, shapes
from python_ref.opdefs import CoordMode, DepthToSpaceMode, GeluMode, NearestMode, PadMode, ResizeMode, ScatterReduction

Attrs = dict[str, Any]
F64 = np.float64


# -- helpers ---------------------------------------------------------------------------------------------------------
def _act(y: np.ndarray, a: Attrs) -> np.ndarray:
    """The fused output clamp, applied last, after rounding to the output dtype."""
    lo, hi = float(a["act_min"]), float(a["act_max"])
    if lo == -math.inf and hi == math.inf:
        return y
    return np.clip(y, lo, hi).astype(y.dtype, copy=False)


def _is_float(x: np.ndarray) -> bool:
    return x.dtype.kind == "f"


def _f64(x: np.ndarray) -> np.ndarray:
    return x.astype(F64, copy=False)


def _pad_hw(x: np.ndarray, top: int, left: int, bottom: int, right: int, value: float) -> np.ndarray:
    """NHWC spatial padding with a constant (all pads >= 0)."""
    n, h, w, c = x.shape
    out = np.full((n, top + h + bottom, left + w + right, c), value, x.dtype)
    out[:, top:top + h, left:left + w] = x
    return out


def _tap(xp: np.ndarray, i: int, j: int, oh: int, ow: int, sh: int, sw: int) -> np.ndarray:
    """View of the padded input read by kernel tap (i, j) (already dilated offsets) for every output pixel."""
    return xp[:, i:i + (oh - 1) * sh + 1:sh, j:j + (ow - 1) * sw + 1:sw]


# -- convolution and dense -------------------------------------------------------------------------------------------
def conv2d_sums(x: np.ndarray, w: np.ndarray, a: Attrs) -> np.ndarray:
    """float64 CONV_2D without bias: the sum over taps of x * w, padded positions reading 0. With integer-valued
    operands (the int8 kernels pass x - zx and w - zw) every partial sum is an exact integer."""
    (sh, sw), (dh, dw), (pt, pl, pb, pr) = a["strides"], a["dilations"], a["pads"]
    g = int(a["groups"])
    _, kh, kw, cg = w.shape
    oh = shapes.conv_out(x.shape[1], kh, sh, dh, pt, pb)
    ow = shapes.conv_out(x.shape[2], kw, sw, dw, pl, pr)
    xp = _pad_hw(_f64(x), pt, pl, pb, pr, 0.0)
    if cg == 1 and g > 1:
        return _depthwise(xp, _f64(w), g, oh, ow, (sh, sw), (dh, dw))
    return _im2col_conv(xp, _f64(w), g, oh, ow, (sh, sw), (dh, dw))


def _conv2d(xs: list[np.ndarray | None], a: Attrs) -> np.ndarray:
    x, w, b = xs[0], xs[1], xs[2] if len(xs) > 2 else None
    y = conv2d_sums(x, w, a)
    if b is not None:
        y = y + _f64(b)
    y = y.astype(x.dtype)
    if len(xs) > 3 and xs[3] is not None:  # residual: added to the rounded result, as a separate ADD would
        y = y + xs[3]
    return _act(y, a)


_IM2COL_BYTES = 64 << 20  # bound on the float64 patch matrix; larger outputs are done in bands of rows


def _im2col_conv(xp: np.ndarray, w: np.ndarray, g: int, oh: int, ow: int, s: tuple[int, int],
                 d: tuple[int, int]) -> np.ndarray:
    """Patches [N*rows*OW, G, KH*KW*Cg] times w [G, Og, KH*KW*Cg], one band of output rows at a time."""
    cout, kh, kw, cg = w.shape
    n = xp.shape[0]
    wg = w.reshape(g, cout // g, kh * kw * cg).transpose(0, 2, 1)  # [G, KH*KW*Cg, Og]
    y = np.empty((n, oh, ow, cout), F64)
    band = max(1, _IM2COL_BYTES // (8 * n * ow * kh * kw * cg * g))
    for r0 in range(0, oh, band):
        rows = min(band, oh - r0)
        xb = xp[:, r0 * s[0]:]
        cols = np.empty((n, rows, ow, kh * kw, g * cg), F64)
        for i in range(kh):
            for j in range(kw):
                cols[:, :, :, i * kw + j] = _tap(xb, i * d[0], j * d[1], rows, ow, s[0], s[1])
        m = n * rows * ow
        cols = cols.reshape(m, kh * kw, g, cg).transpose(2, 0, 1, 3).reshape(g, m, kh * kw * cg)
        y[:, r0:r0 + rows] = np.matmul(cols, wg).transpose(1, 0, 2).reshape(n, rows, ow, cout)
    return y


def _depthwise(xp: np.ndarray, w: np.ndarray, g: int, oh: int, ow: int, s: tuple[int, int],
               d: tuple[int, int]) -> np.ndarray:
    """groups == Cin: loop over kernel taps, vectorized over N, OH, OW, C (channel multiplier m = Cout / Cin)."""
    cout, kh, kw, _ = w.shape
    m = cout // g
    y = np.zeros((xp.shape[0], oh, ow, cout), F64)
    for i in range(kh):
        for j in range(kw):
            t = _tap(xp, i * d[0], j * d[1], oh, ow, s[0], s[1])
            if m > 1:  # output channel c*m + k reads input channel c
                t = np.repeat(t, m, axis=3)
            y += t * w[:, i, j, 0]
    return y


def conv_transpose2d_sums(x: np.ndarray, w: np.ndarray, a: Attrs) -> np.ndarray:
    """float64 CONV_TRANSPOSE_2D without bias (exact for integer-valued operands, as conv2d_sums)."""
    (sh, sw), (dh, dw), (pt, pl, pb, pr) = a["strides"], a["dilations"], a["pads"]
    oph, opw = a["output_padding"]
    g = int(a["groups"])
    cout, kh, kw, cg = w.shape
    n, h, wd, _ = x.shape
    og = cout // g
    # every input pixel times every tap: [N, H, W, G, KH, KW, Og]
    xg = _f64(x).reshape(n * h * wd, g, cg).transpose(1, 0, 2)  # [G, M, Cg]
    wg = _f64(w).reshape(g, og, kh, kw, cg).transpose(0, 4, 2, 3, 1).reshape(g, cg, kh * kw * og)
    contrib = np.matmul(xg, wg).reshape(g, n, h, wd, kh, kw, og)
    oh = (h - 1) * sh - pt - pb + dh * (kh - 1) + 1 + oph
    ow = (wd - 1) * sw - pl - pr + dw * (kw - 1) + 1 + opw
    # scatter-add into the uncropped output, large enough for the pads and output_padding
    fh = max((h - 1) * sh + dh * (kh - 1) + 1, pt + oh)
    fw = max((wd - 1) * sw + dw * (kw - 1) + 1, pl + ow)
    full = np.zeros((n, fh, fw, g, og), F64)
    for i in range(kh):
        for j in range(kw):
            r0, c0 = i * dh, j * dw
            full[:, r0:r0 + (h - 1) * sh + 1:sh, c0:c0 + (wd - 1) * sw + 1:sw] += \
                contrib[:, :, :, :, i, j].transpose(1, 2, 3, 0, 4)
    return full[:, pt:pt + oh, pl:pl + ow].reshape(n, oh, ow, cout)


def _conv_transpose2d(xs: list[np.ndarray | None], a: Attrs) -> np.ndarray:
    x, w, b = xs[0], xs[1], xs[2] if len(xs) > 2 else None
    y = conv_transpose2d_sums(x, w, a)
    if b is not None:
        y = y + _f64(b)
    return _act(y.astype(x.dtype), a)


def _fully_connected(xs: list[np.ndarray | None], a: Attrs) -> np.ndarray:
    x, w, b = xs[0], xs[1], xs[2] if len(xs) > 2 else None
    y = _f64(x) @ _f64(w).T
    if b is not None:
        y = y + _f64(b)
    return _act(y.astype(x.dtype), a)


def _matmul(xs: list[np.ndarray | None], a: Attrs) -> np.ndarray:
    x, w = xs
    if _is_float(x):
        return np.matmul(_f64(x), _f64(w)).astype(x.dtype)
    return np.matmul(x, w)


# -- element-wise ----------------------------------------------------------------------------------------------------
def _int_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Integer division truncating toward zero (C, ONNX), not numpy's floor division."""
    if np.any(y == 0):
        raise ValueError("DIV: integer division by zero")
    q = x // y
    fix = (x % y != 0) & ((x < 0) != (y < 0))
    return q + fix.astype(q.dtype)


def _binary(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[[list[np.ndarray | None], Attrs],
                                                                            np.ndarray]:
    def kernel(xs: list[np.ndarray | None], a: Attrs) -> np.ndarray:
        x, y = xs
        if _is_float(x):
            out = fn(_f64(x), _f64(y)).astype(x.dtype)
        else:
            with np.errstate(over="ignore"):
                out = np.asarray(fn(x, y)).astype(x.dtype)
        return _act(out, a) if "act_min" in a else out
    return kernel


def _div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if _is_float(x):
        with np.errstate(divide="ignore", invalid="ignore"):
            return x / y
    return _int_div(x, y)


def _pow(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.power(x, y)


def _unary(fn: Callable[[np.ndarray], np.ndarray], keep_int: bool = False) -> Callable[
        [list[np.ndarray | None], Attrs], np.ndarray]:
    """fn computed in float64 for floats (one rounding); integer inputs go straight through fn when keep_int."""
    def kernel(xs: list[np.ndarray | None], a: Attrs) -> np.ndarray:
        x = xs[0]
        if keep_int and not _is_float(x):
            return fn(x).astype(x.dtype)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            return fn(_f64(x)).astype(x.dtype)
    return kernel


def _prelu(xs: list[np.ndarray | None], a: Attrs) -> np.ndarray:
    x, s = _f64(xs[0]), _f64(xs[1])
    return np.where(x >= 0, x, s * x).astype(xs[0].dtype)


def _clip(xs: list[np.ndarray | None], a: Attrs) -> np.ndarray:
    x = xs[0]
    lo, hi = float(a["min"]), float(a["max"])
    if not _is_float(x):  # bounds into the integer range, so they do not promote the dtype
        info = np.iinfo(x.dtype)
        lo, hi = max(math.ceil(lo), info.min) if lo > -math.inf else info.min, \
            min(math.floor(hi), info.max) if hi < math.inf else info.max
    return np.minimum(np.maximum(x, x.dtype.type(lo)), x.dtype.type(hi))


def _leaky_relu(xs: list[np.ndarray | None], a: Attrs) -> np.ndarray:
    x = _f64(xs[0])
    return np.where(x >= 0, x, float(a["alpha"]) * x).astype(xs[0].dtype)


def _hard_sigmoid(xs: list[np.ndarray | None], a: Attrs) -> np.ndarray:
    x = _f64(xs[0])
    return np.clip(float(a["alpha"]) * x + float(a["beta"]), 0.0, 1.0).astype(xs[0].dtype)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(x))  # never overflows
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


# -- pooling and reductions ------------------------------------------------------------------------------------------
def _pool_geometry(x: np.ndarray, a: Attrs) -> tuple[int, int, list[tuple[int, int]], tuple[int, ...]]:
    """Output size, dilated tap offsets, and the bottom/right pad a ceil_mode window may need beyond the pads."""
    (kh, kw), (sh, sw), (dh, dw) = a["kernel"], a["strides"], a["dilations"]
    pt, pl, pb, pr = a["pads"]
    ceil = bool(a["ceil_mode"])
    oh = shapes.pool_out(x.shape[1], kh, sh, dh, pt, pb, ceil)
    ow = shapes.pool_out(x.shape[2], kw, sw, dw, pl, pr, ceil)
    # rows the windows read past the input + top pad (explicit bottom pad first, then the ceil_mode overhang)
    need_b = (oh - 1) * sh + dh * (kh - 1) + 1 - pt - x.shape[1]
    need_r = (ow - 1) * sw + dw * (kw - 1) + 1 - pl - x.shape[2]
    taps = [(i * dh, j * dw) for i in range(kh) for j in range(kw)]
    return oh, ow, taps, (pt, pl, max(need_b, pb), max(need_r, pr))


def _max_pool2d(xs: list[np.ndarray | None], a: Attrs) -> np.ndarray:
    x = xs[0]
    oh, ow, taps, (pt, pl, eb, er) = _pool_geometry(x, a)
    sh, sw = a["strides"]
    lowest = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    xp = _pad_hw(x, pt, pl, eb, er, lowest)  # padded positions never win
    y = None
    for i, j in taps:
        t = _tap(xp, i, j, oh, ow, sh, sw)
        y = t.copy() if y is None else np.maximum(y, t)
    return _act(y, a)


def _average_pool2d(xs: list[np.ndarray | None], a: Attrs) -> np.ndarray:
    acc, cnt = average_pool_sums(xs[0], a)
    return _act((acc / cnt).astype(xs[0].dtype), a)


def average_pool_sums(x: np.ndarray, a: Attrs) -> tuple[np.ndarray, np.ndarray]:
    """float64 window sums (padded positions read 0) and the divisor of each output position ([1, OH, OW, 1])."""
    oh, ow, taps, (pt, pl, eb, er) = _pool_geometry(x, a)
    sh, sw = a["strides"]
    pb, pr = a["pads"][2], a["pads"][3]
    n, h, w, c = x.shape
    xp = _pad_hw(_f64(x), pt, pl, eb, er, 0.0)
    # divisor: taps on the input, plus taps on the explicit pads when count_include_pad; never the ceil overhang
    mask = np.zeros((1, xp.shape[1], xp.shape[2], 1), F64)
    if a["count_include_pad"]:
        mask[:, :pt + h + pb, :pl + w + pr] = 1.0
    else:
        mask[:, pt:pt + h, pl:pl + w] = 1.0
    acc = np.zeros((n, oh, ow, c), F64)
    cnt = np.zeros((1, oh, ow, 1), F64)
    for i, j in taps:
        acc += _tap(xp, i, j, oh, ow, sh, sw)
        cnt += _tap(mask, i, j, oh, ow, sh, sw)
    return acc, cnt


def _reduce(fn: str) -> Callable[[list[np.ndarray | None], Attrs], np.ndarray]:
    def kernel(xs: list[np.ndarray | None], a: Attrs) -> np.ndarray:
        x = xs[0]
        axes = shapes.reduce_axes(a["axes"], x.ndim)
        keep = bool(a["keepdims"])
        if fn == "max":
            return np.max(x, axis=axes, keepdims=keep)
        if fn == "sum" and not _is_float(x):
            return np.sum(x, axis=axes, keepdims=keep, dtype=x.dtype)
        r = np.sum(_f64(x), axis=axes, keepdims=keep)
        if fn == "mean":
            r = r / max(1, math.prod(x.shape[i] for i in axes))
        return r.astype(x.dtype)
    return kernel


def _softmax(xs: list[np.ndarray | None], a: Attrs) -> np.ndarray:
    x = _f64(xs[0])
    axis = int(a["axis"])
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))  # stable: the largest exponent is 0
    return (e / np.sum(e, axis=axis, keepdims=True)).astype(xs[0].dtype)


# -- data movement ---------------------------------------------------------------------------------------------------
def _reshape(xs: list[np.ndarray | None], a: Attrs) -> np.ndarray:
    return xs[0].reshape(shapes.reshape_target(xs[0].shape, a["shape"]))


def _transpose(xs: list[np.ndarray | None], a: Attrs) -> np.ndarray:
    return np.transpose(xs[0], shapes.transpose_perm(xs[0].ndim, a["perm"]))


def _concatenation(xs: list[np.ndarray | None], a: Attrs) -> np.ndarray:
    y = np.concatenate(xs, axis=int(a["axis"]))
    return _act(y, a) if _is_float(y) else y


def _slice(xs: list[np.ndarray | None], a: Attrs) -> np.ndarray:
    # a negative step with end -1 runs through index 0, which a Python slice spells as end=None
    idx = tuple(slice(b, None if (s < 0 and e == -1) else e, s) for b, e, s, _ in shapes.slice_params(xs[0].shape, a))
    return xs[0][idx]


_NP_PAD = {PadMode.CONSTANT: "constant", PadMode.REFLECT: "reflect", PadMode.EDGE: "edge"}


def _pad(xs: list[np.ndarray | None], a: Attrs) -> np.ndarray:
    x = xs[0]
    r = x.ndim
    if r == 0:  # nothing to pad (numpy's pad refuses 0-d arrays)
        return x.copy()
    p = [int(v) for v in a["pads"]]
    width = [(p[i], p[i + r]) for i in range(r)]
    mode = PadMode(int(a["mode"]))
    if mode == PadMode.CONSTANT:
        return np.pad(x, width, mode="constant", constant_values=np.asarray(a["value"]).astype(x.dtype))
    return np.pad(x, width, mode=_NP_PAD[mode])


def resize_coords(out: int, inp: int, scale: float, coord: CoordMode) -> np.ndarray:
    """Input coordinate of every output index, in float32 as onnxruntime computes it."""
    f = np.float32
    s = f(scale) if scale > 0 else f(out) / f(inp)
    xo = np.arange(out, dtype=f)
    if coord == CoordMode.HALF_PIXEL:
        return (xo + f(0.5)) / s - f(0.5)
    if coord == CoordMode.PYTORCH_HALF_PIXEL:
        return (xo + f(0.5)) / s - f(0.5) if out > 1 else np.zeros(out, f)
    if coord == CoordMode.ALIGN_CORNERS:
        return xo * f(inp - 1) / f(out - 1) if out > 1 else np.zeros(out, f)
    if coord == CoordMode.ASYMMETRIC:
        return xo / s
    if coord == CoordMode.TF_HALF_PIXEL_FOR_NN:
        return (xo + f(0.5)) / s
    raise ValueError(f"RESIZE: unknown coord mode {coord}")


def nearest_index(x: np.ndarray, inp: int, mode: NearestMode) -> np.ndarray:
    """Round input coordinates to a pixel index by the nearest mode, clamped to [0, inp - 1]."""
    fl = np.floor(x)
    tie = (x - fl) == 0.5
    if mode == NearestMode.ROUND_PREFER_FLOOR:
        idx = np.where(tie, fl, np.floor(x + 0.5))
    elif mode == NearestMode.ROUND_PREFER_CEIL:
        idx = np.where(tie, fl + 1, np.floor(x + 0.5))
    elif mode == NearestMode.FLOOR:
        idx = fl
    else:
        idx = np.ceil(x)
    return np.clip(idx, 0, inp - 1).astype(np.int64)


def _linear_axis(x: np.ndarray, coords: np.ndarray, axis: int) -> np.ndarray:
    """Linear interpolation of float64 x along axis at coords clamped to the input range."""
    n = x.shape[axis]
    c = np.clip(coords.astype(F64), 0.0, n - 1)
    i0 = np.floor(c).astype(np.int64)
    i1 = np.minimum(i0 + 1, n - 1)
    shape = [1] * x.ndim
    shape[axis] = len(c)
    frac = (c - i0).reshape(shape)
    return np.take(x, i0, axis=axis) * (1.0 - frac) + np.take(x, i1, axis=axis) * frac


def _resize(xs: list[np.ndarray | None], a: Attrs) -> np.ndarray:
    x = xs[0]
    (oh, ow), (sh, sw) = shapes.resize_size(x.shape, a), a["scales"]
    coord, mode = CoordMode(int(a["coord"])), ResizeMode(int(a["mode"]))
    ch = resize_coords(int(oh), x.shape[1], float(sh), coord)
    cw = resize_coords(int(ow), x.shape[2], float(sw), coord)
    if mode == ResizeMode.NEAREST:
        nm = NearestMode(int(a["nearest"]))
        y = np.take(x, nearest_index(ch, x.shape[1], nm), axis=1)
        return np.take(y, nearest_index(cw, x.shape[2], nm), axis=2)
    y = _linear_axis(_f64(x), ch, 1)
    return _linear_axis(y, cw, 2).astype(x.dtype)


def _depth_to_space(xs: list[np.ndarray | None], a: Attrs) -> np.ndarray:
    x = xs[0]
    n, h, w, c = x.shape
    b = int(a["block"])
    co = c // (b * b)
    if DepthToSpaceMode(int(a["mode"])) == DepthToSpaceMode.DCR:  # channel = (i * b + j) * co + k
        y = x.reshape(n, h, w, b, b, co).transpose(0, 1, 3, 2, 4, 5)
    else:  # CRD: channel = k * b * b + i * b + j
        y = x.reshape(n, h, w, co, b, b).transpose(0, 1, 4, 2, 5, 3)
    return y.reshape(n, h * b, w * b, co)


def _gather(xs: list[np.ndarray | None], a: Attrs) -> np.ndarray:
    x, ind = xs
    ax = int(a["axis"]) % x.ndim
    if np.any((ind < -x.shape[ax]) | (ind >= x.shape[ax])):
        raise ValueError(f"GATHER: indices out of range [{-x.shape[ax]}, {x.shape[ax]}) on axis {ax}")
    return np.take(x, ind, axis=ax)


# -- transformer blocks, comparisons, integer arithmetic ---------------------------------------------------------------
def _layer_norm(xs: list[np.ndarray | None], a: Attrs) -> np.ndarray:
    x = _f64(xs[0])
    axes = tuple(range(int(a["axis"]) % x.ndim, x.ndim))
    mean = np.mean(x, axis=axes, keepdims=True)
    var = np.mean((x - mean) ** 2, axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(var + float(np.float32(a["epsilon"])))
    if len(xs) > 1 and xs[1] is not None:
        y = y * _f64(xs[1])
    if len(xs) > 2 and xs[2] is not None:
        y = y + _f64(xs[2])
    return y.astype(xs[0].dtype)


_erf = np.vectorize(math.erf, otypes=[F64])


def _gelu(xs: list[np.ndarray | None], a: Attrs) -> np.ndarray:
    x = _f64(xs[0])
    if GeluMode(int(a["mode"])) == GeluMode.TANH:
        y = 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    else:
        y = 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))
    return y.astype(xs[0].dtype)


def _where(xs: list[np.ndarray | None], a: Attrs) -> np.ndarray:
    return np.where(xs[0], xs[1], xs[2])


def _expand(xs: list[np.ndarray | None], a: Attrs) -> np.ndarray:
    return np.broadcast_to(xs[0], shapes.expand_shape(xs[0].shape, a["shape"]))


def _cast(xs: list[np.ndarray | None], a: Attrs) -> np.ndarray:
    x = xs[0]
    to = shapes.CAST_DTYPES[int(a["to"])]
    if x.dtype.kind == "f" and to.kind in "iu":  # truncation toward zero; numpy warns for NaN / out of range
        with np.errstate(invalid="ignore"):
            return np.trunc(x).astype(to)
    return x.astype(to)


def _compare(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[[list[np.ndarray | None], Attrs],
                                                                             np.ndarray]:
    return lambda xs, a: fn(xs[0], xs[1])


def _scatter_nd(xs: list[np.ndarray | None], a: Attrs) -> np.ndarray:
    x, ind, upd = xs
    k = ind.shape[-1]
    idx = ind.reshape(-1, k).astype(np.int64)
    dims = np.array(x.shape[:k], np.int64)
    if np.any((idx < -dims) | (idx >= dims)):
        raise ValueError(f"SCATTER_ND: indices out of range for axes of size {dims.tolist()}")
    idx = np.where(idx < 0, idx + dims, idx)
    y = x.copy()
    u = upd.reshape(len(idx), *x.shape[k:])
    red = ScatterReduction(int(a["reduction"]))
    fn = {ScatterReduction.ADD: np.add, ScatterReduction.MUL: np.multiply, ScatterReduction.MAX: np.maximum,
          ScatterReduction.MIN: np.minimum}.get(red)
    with np.errstate(over="ignore"):
        for row, val in zip(idx, u, strict=True):  # in index order: a repeated index takes the last update
            at = tuple(row)
            y[at] = val if fn is None else fn(y[at], val)
    return y


def _split(xs: list[np.ndarray | None], a: Attrs) -> list[np.ndarray]:
    ax = int(a["axis"]) % xs[0].ndim
    bounds = np.cumsum([0, *[int(s) for s in a["sizes"]]])
    return [np.take(xs[0], np.arange(b0, b1), axis=ax) for b0, b1 in itertools.pairwise(bounds)]


_Kernel = Callable[[list[np.ndarray | None], Attrs], np.ndarray | list[np.ndarray]]
KERNELS: dict[str, _Kernel] = {
    "CONV_2D": _conv2d,
    "CONV_TRANSPOSE_2D": _conv_transpose2d,
    "FULLY_CONNECTED": _fully_connected,
    "MATMUL": _matmul,
    "ADD": _binary(np.add),
    "SUB": _binary(np.subtract),
    "MUL": _binary(np.multiply),
    "DIV": _binary(_div),
    "MAXIMUM": _binary(np.maximum),
    "MINIMUM": _binary(np.minimum),
    "POW": _binary(_pow),
    "PRELU": _prelu,
    "RELU": _unary(lambda x: np.maximum(x, 0), keep_int=True),
    "CLIP": _clip,
    "LEAKY_RELU": _leaky_relu,
    "HARD_SWISH": _unary(lambda x: x * np.clip(x + 3.0, 0.0, 6.0) / 6.0),
    "HARD_SIGMOID": _hard_sigmoid,
    "SIGMOID": _unary(_sigmoid),
    "TANH": _unary(np.tanh),
    "EXP": _unary(np.exp),
    "SQRT": _unary(np.sqrt),
    "ABS": _unary(np.abs, keep_int=True),
    "NEG": _unary(np.negative, keep_int=True),
    "MAX_POOL_2D": _max_pool2d,
    "AVERAGE_POOL_2D": _average_pool2d,
    "MEAN": _reduce("mean"),
    "REDUCE_MAX": _reduce("max"),
    "REDUCE_SUM": _reduce("sum"),
    "SOFTMAX": _softmax,
    "RESHAPE": _reshape,
    "TRANSPOSE": _transpose,
    "CONCATENATION": _concatenation,
    "SLICE": _slice,
    "PAD": _pad,
    "RESIZE": _resize,
    "DEPTH_TO_SPACE": _depth_to_space,
    "GATHER": _gather,
    "LAYER_NORM": _layer_norm,
    "GELU": _gelu,
    "ERF": _unary(_erf),
    "LOG": _unary(np.log),
    "FLOOR": _unary(np.floor),
    "CEIL": _unary(np.ceil),
    "WHERE": _where,
    "EXPAND": _expand,
    "CAST": _cast,
    "EQUAL": _compare(np.equal),
    "LESS": _compare(np.less),
    "GREATER": _compare(np.greater),
    "LESS_EQUAL": _compare(np.less_equal),
    "GREATER_EQUAL": _compare(np.greater_equal),
    "NOT": lambda xs, a: np.logical_not(xs[0]),
    "AND": _compare(np.logical_and),
    "OR": _compare(np.logical_or),
    "XOR": _compare(np.logical_xor),
    "SCATTER_ND": _scatter_nd,
    "SPLIT": _split,
    **recurrent.KERNELS,
    **mediapipe_ops.KERNELS,
}
QUANTIZED_ONLY = ("QUANTIZE", "DEQUANTIZE", "LOOKUP")  # python_ref/qops.py computes them


def compute(op: str, xs: list[np.ndarray | None], attrs: Attrs) -> np.ndarray:
    """The float (or plain-integer) kernel alone, without checks: for quantized kernels that move integers."""
    return KERNELS[op](xs, shapes.full_attrs(op, attrs))

_missing = set(shapes.OPS) - set(KERNELS) - set(QUANTIZED_ONLY)
assert not _missing, f"reference kernels missing for {sorted(_missing)}"
