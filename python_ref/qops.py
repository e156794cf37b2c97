"""Reference of the quantized (int8) variants of the ops: chosen when an op's integer inputs carry quantization
parameters, as in TFLite. The rules are in python_ref/README.md ("Quantized int8"); the arithmetic primitives
(requantization, bounds, rescaling) in python_ref/quant.py.

Accumulations are exact integers (computed in float64 with integer-valued operands, which BLAS sums exactly below
2^53, then wrapped to int32); everything after them is float32, one rounding per operation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from python_ref import ops as fops
from python_ref import quant as qm
from python_ref.opdefs import PadMode, ResizeMode
from python_ref.quant import F32, QuantParams

Attrs = dict[str, Any]
Q = QuantParams | None
Xs = list[np.ndarray | None]
Qs = list[Q]
_Kernel = Callable[[Xs, Attrs, Qs, Qs, np.dtype], np.ndarray]
KERNELS: dict[str, _Kernel] = {}
BILINEAR_BITS = 11  # RESIZE bilinear weights are integers in [0, 2^11]


def kernel(*names: str) -> Callable[[_Kernel], _Kernel]:
    def register(fn: _Kernel) -> _Kernel:
        for n in names:
            KERNELS[n] = fn
        return fn
    return register


def run(op: str, xs: list[np.ndarray | None], a: Attrs, qin: list[Q], qout: list[Q], dtype: np.dtype) -> np.ndarray:
    """One quantized op; the caller (python_ref.dispatch.run) has checked shapes and quantization rules."""
    return KERNELS[op](xs, a, qin, qout, dtype)


def _centered(x: np.ndarray, q: QuantParams) -> np.ndarray:
    """x - zero_point as float64 (exact), per-tensor or per-channel along q.axis."""
    return x.astype(np.float64) - q.along(x.shape, q.zero_point).astype(np.float64)


def _bias(acc: np.ndarray, b: np.ndarray | None) -> np.ndarray:
    acc = qm.wrap32(np.rint(acc).astype(np.int64))  # the float64 sums are exact integers
    return acc if b is None else qm.wrap32(acc + b.astype(np.int64))


_SUMS: dict[str, Callable[[np.ndarray, np.ndarray, Attrs], np.ndarray]] = {
    "CONV_2D": fops.conv2d_sums,
    "CONV_TRANSPOSE_2D": fops.conv_transpose2d_sums,
    "FULLY_CONNECTED": lambda x, w, a: x @ w.T,
}


def accumulate(op: str, xs: Xs, a: Attrs, qin: Qs) -> np.ndarray:
    """The int32 accumulators of CONV_2D, CONV_TRANSPOSE_2D or FULLY_CONNECTED: b + sum (x - zx)(w - zw[o])."""
    b = xs[2] if len(xs) > 2 else None
    return _bias(_SUMS[op](_centered(xs[0], qin[0]), _centered(xs[1], qin[1]), a), b)


def _weighted(xs: Xs, a: Attrs, qin: Qs, qout: Qs, dtype: np.dtype, op: str) -> np.ndarray:
    """acc requantized per output channel with m[o] = f32(f32(sx * sw[o]) / sy); with float_output (a
    FULLY_CONNECTED), acc dequantized instead: y = f32(f32(acc) * f32(sx * sw[o])), then the fused clamp."""
    qx, qw, qy = qin[0], qin[1], qout[0]
    if a.get("float_output"):
        unit = qm.mul_scale(qx.s, qw.scale if not qw.per_tensor else qw.s)
        y = np.multiply(qm.to_f32(accumulate(op, xs, a, qin)), unit, dtype=F32)
        return np.minimum(np.maximum(y, F32(a["act_min"])), F32(a["act_max"]))
    m = qm.conv_scale(qx.s, qw.scale if not qw.per_tensor else qw.s, qy.s)
    return qm.requantize(accumulate(op, xs, a, qin), m, qy, *qm.act_bounds(a, qy, dtype))


for _name in _SUMS:
    KERNELS[_name] = (lambda op: lambda xs, a, qin, qout, dtype: _weighted(xs, a, qin, qout, dtype, op))(_name)


@kernel("MATMUL")
def _matmul(xs: Xs, a: Attrs, qin: Qs, qout: Qs, dtype: np.dtype) -> np.ndarray:
    acc = _bias(np.matmul(_centered(xs[0], qin[0]), _centered(xs[1], qin[1])), None)
    return qm.requantize(acc, qm.conv_scale(qin[0].s, qin[1].s, qout[0].s), qout[0], *qm.qrange(dtype))


# -- element-wise ------------------------------------------------------------------------------------------------
def _add_sub(sub: bool) -> _Kernel:
    """XNNPACK's fixed-point add: ra = f32(sa / sy), rb = +-f32(sb / sy) -> multipliers ma, mb and shift
    (quant.add_params); acc = 2^(shift-1) - ma*za - mb*zb + ma*a + mb*b (int32); y = zy + clamp(acc >> shift)."""
    def k(xs: Xs, a: Attrs, qin: Qs, qout: Qs, dtype: np.dtype) -> np.ndarray:
        qa, qb, qy = qin[0], qin[1], qout[0]
        rb = qm.div_scale(qb.s, qy.s)
        ma, mb, shift = qm.add_params(qm.div_scale(qa.s, qy.s), -rb if sub else rb)
        bias = (1 << (shift - 1)) - ma * qa.z - mb * qb.z
        acc = qm.wrap32(bias + ma * xs[0].astype(np.int64) + mb * xs[1].astype(np.int64))
        lo, hi = qm.act_bounds(a, qy, dtype)
        return qy.z + np.clip(acc >> shift, lo - qy.z, hi - qy.z)
    return k


KERNELS["ADD"], KERNELS["SUB"] = _add_sub(False), _add_sub(True)


@kernel("MUL")
def _mul(xs: Xs, a: Attrs, qin: Qs, qout: Qs, dtype: np.dtype) -> np.ndarray:
    qa, qb, qy = qin[0], qin[1], qout[0]
    acc = (xs[0].astype(np.int64) - qa.z) * (xs[1].astype(np.int64) - qb.z)
    return qm.requantize(acc, qm.conv_scale(qa.s, qb.s, qy.s), qy, *qm.act_bounds(a, qy, dtype))


def _extremum(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> _Kernel:
    """Both operands rescaled to the output's parameters (a monotonic map), then the max or min."""
    def k(xs: Xs, a: Attrs, qin: Qs, qout: Qs, dtype: np.dtype) -> np.ndarray:
        lo, hi = qm.act_bounds(a, qout[0], dtype)
        return fn(qm.rescale(xs[0], qin[0], qout[0], lo, hi), qm.rescale(xs[1], qin[1], qout[0], lo, hi))
    return k


KERNELS["MAXIMUM"], KERNELS["MINIMUM"] = _extremum(np.maximum), _extremum(np.minimum)


@kernel("PRELU")
def _prelu(xs: Xs, a: Attrs, qin: Qs, qout: Qs, dtype: np.dtype) -> np.ndarray:
    """x >= zx: requantize(x - zx, sx/sy); else requantize((x - zx)(slope - zs), sx*ss/sy), the slope's
    parameters per tensor or per channel along the slope's axis."""
    x, s = xs
    qx, qs, qy = qin[0], qin[1], qout[0]
    lo, hi = qm.qrange(dtype)
    d = x.astype(np.int64) - qx.z
    pos = qm.requantize(d, qm.div_scale(qx.s, qy.s), qy, lo, hi)
    ds = s.astype(np.int64) - qs.along(s.shape, qs.zero_point)
    neg = qm.requantize(d * ds, qm.conv_scale(qx.s, qs.along(s.shape, qs.scale), qy.s), qy, lo, hi)
    return np.where(d >= 0, pos, neg)


@kernel("RELU", "CLIP")
def _clamp(xs: Xs, a: Attrs, qin: Qs, qout: Qs, dtype: np.dtype) -> np.ndarray:
    lo, hi = (qm.bound(0.0, qout[0], dtype), qm.qrange(dtype)[1]) if "min" not in a else \
        qm.act_bounds(a, qout[0], dtype, "min", "max")
    return qm.rescale(xs[0], qin[0], qout[0], lo, hi)


@kernel("LOOKUP")
def _lookup(xs: Xs, a: Attrs, qin: Qs, qout: Qs, dtype: np.dtype) -> np.ndarray:
    x, table = xs
    return table[x.astype(np.int64) - qm.qrange(x.dtype)[0]]


# -- pooling and reductions --------------------------------------------------------------------------------------
@kernel("MAX_POOL_2D")
def _max_pool2d(xs: Xs, a: Attrs, qin: Qs, qout: Qs, dtype: np.dtype) -> np.ndarray:
    m = fops.compute("MAX_POOL_2D", [xs[0]], {k: v for k, v in a.items() if not k.startswith("act_")})
    return qm.rescale(m, qin[0], qout[0], *qm.act_bounds(a, qout[0], dtype))


@kernel("AVERAGE_POOL_2D")
def _average_pool2d(xs: Xs, a: Attrs, qin: Qs, qout: Qs, dtype: np.dtype) -> np.ndarray:
    acc, cnt = fops.average_pool_sums(_centered(xs[0], qin[0]), a)
    m = qm.avg_scale(qin[0].s, cnt, qout[0].s)  # one multiplier per output position (its divisor)
    return qm.requantize(_bias(acc, None), m, qout[0], *qm.act_bounds(a, qout[0], dtype))


@kernel("MEAN")
def _mean(xs: Xs, a: Attrs, qin: Qs, qout: Qs, dtype: np.dtype) -> np.ndarray:
    x = xs[0]
    axes = fops.shapes.reduce_axes(a["axes"], x.ndim)
    acc = np.sum(_centered(x, qin[0]), axis=axes, keepdims=bool(a["keepdims"]))
    n = max(1, int(np.prod([x.shape[i] for i in axes])))
    return qm.requantize(_bias(acc, None), qm.avg_scale(qin[0].s, n, qout[0].s), qout[0], *qm.qrange(dtype))


@kernel("REDUCE_MAX")
def _reduce_max(xs: Xs, a: Attrs, qin: Qs, qout: Qs, dtype: np.dtype) -> np.ndarray:
    axes = fops.shapes.reduce_axes(a["axes"], xs[0].ndim)
    m = np.max(xs[0], axis=axes, keepdims=bool(a["keepdims"]))
    return qm.rescale(m, qin[0], qout[0], *qm.qrange(dtype))


@kernel("SOFTMAX")
def _softmax(xs: Xs, a: Attrs, qin: Qs, qout: Qs, dtype: np.dtype) -> np.ndarray:
    """e = T[max - x] (int32 table), S = sum e along the axis, r = f32(1 / f32(f32(S) * sy)),
    y = z + clamp(rne(f32(f32(e) * r)))."""
    x, table = xs[0].astype(np.int64), xs[1].astype(np.int64)
    axis = int(a["axis"]) % x.ndim
    e = table[np.max(x, axis=axis, keepdims=True) - x]
    total = qm.wrap32(np.sum(e, axis=axis, keepdims=True))
    r = np.divide(F32(1), np.multiply(qm.to_f32(total), qout[0].s, dtype=F32), dtype=F32)
    return qm.finish(np.multiply(qm.to_f32(e), r, dtype=F32), qout[0], *qm.qrange(dtype))


# -- data movement -----------------------------------------------------------------------------------------------
def _copy(name: str) -> _Kernel:
    """Data movement: the float op's copy (the checks require equal input and output parameters)."""
    return lambda xs, a, qin, qout, dtype: fops.compute(name, xs, a)


for _name in ("RESHAPE", "TRANSPOSE", "SLICE", "DEPTH_TO_SPACE", "GATHER"):
    KERNELS[_name] = _copy(_name)


@kernel("PAD")
def _pad(xs: Xs, a: Attrs, qin: Qs, qout: Qs, dtype: np.dtype) -> np.ndarray:
    x = xs[0]
    if PadMode(int(a["mode"])) != PadMode.CONSTANT:
        return fops.compute("PAD", [x], a)
    fill = int(qm.quantize(np.float32(a["value"]), qout[0], dtype))  # the real value, quantized
    r = x.ndim
    p = [int(v) for v in a["pads"]]
    return np.pad(x, [(p[i], p[i + r]) for i in range(r)], mode="constant", constant_values=fill)


@kernel("CONCATENATION")
def _concatenation(xs: Xs, a: Attrs, qin: Qs, qout: Qs, dtype: np.dtype) -> np.ndarray:
    lo, hi = qm.act_bounds(a, qout[0], dtype)
    parts = [qm.rescale(x, q, qout[0], lo, hi) for x, q in zip(xs, qin, strict=True)]
    return np.concatenate(parts, axis=int(a["axis"]))


def _bilinear_axis(out: int, inp: int, scale: float, coord: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per output index: i0, i1 and the integer weight of i1, rne(f32(f * 2^11)), f = c - floor(c) in float32."""
    c = np.clip(fops.resize_coords(out, inp, scale, coord), F32(0), F32(inp - 1))
    i0 = np.floor(c)
    frac = np.multiply(np.subtract(c, i0, dtype=F32), F32(1 << BILINEAR_BITS), dtype=F32)
    i0 = i0.astype(np.int64)
    return i0, np.minimum(i0 + 1, inp - 1), qm.rne(frac)


@kernel("RESIZE")
def _resize(xs: Xs, a: Attrs, qin: Qs, qout: Qs, dtype: np.dtype) -> np.ndarray:
    """NEAREST copies. BILINEAR on the raw integers: top = v00*(2^11 - aw) + v01*aw (likewise bottom), then
    v = top*(2^11 - ah) + bottom*ah and y = (v + 2^21) >> 22 (round half up); equal in/out parameters."""
    x = xs[0]
    if ResizeMode(int(a["mode"])) == ResizeMode.NEAREST:
        return fops.compute("RESIZE", [x], a)
    (oh, ow), (sh, sw) = a["size"], a["scales"]
    one = 1 << BILINEAR_BITS
    h0, h1, ah = _bilinear_axis(int(oh), x.shape[1], float(sh), a["coord"])
    w0, w1, aw = _bilinear_axis(int(ow), x.shape[2], float(sw), a["coord"])
    v = x.astype(np.int64)
    aw_ = aw.reshape(1, 1, -1, 1)
    top = v[:, h0][:, :, w0] * (one - aw_) + v[:, h0][:, :, w1] * aw_
    bottom = v[:, h1][:, :, w0] * (one - aw_) + v[:, h1][:, :, w1] * aw_
    ah_ = ah.reshape(1, -1, 1, 1)
    acc = top * (one - ah_) + bottom * ah_
    return (acc + (1 << (2 * BILINEAR_BITS - 1))) >> (2 * BILINEAR_BITS)


# -- (de)quantization --------------------------------------------------------------------------------------------
@kernel("QUANTIZE")
def _quantize(xs: Xs, a: Attrs, qin: Qs, qout: Qs, dtype: np.dtype) -> np.ndarray:
    x = xs[0]
    if x.dtype.kind == "f":
        return qm.quantize(x, qout[0], dtype)
    return qm.rescale(x, qin[0], qout[0], *qm.qrange(dtype))


@kernel("DEQUANTIZE")
def _dequantize(xs: Xs, a: Attrs, qin: Qs, qout: Qs, dtype: np.dtype) -> np.ndarray:
    return qm.dequantize(xs[0], qin[0])
