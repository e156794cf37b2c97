"""Quantization parameters and the exact integer/float32 arithmetic every int8 kernel reproduces bit for bit.

A quantized tensor holds integers q with real value `scale * (q - zero_point)`. python_ref/README.md ("Quantized
int8") states the rules in words; this module is their executable form, shared by the reference kernels
(python_ref/qops.py), the .wrt reader's checks and the converters.

Every float operation here is one IEEE-754 binary32 operation (numpy float32 arrays and scalars), rounded to
nearest even, in the order written: no double, no fused multiply-add, no libm. That is what makes SIMD kernels on
every ISA able to match these results exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

F32 = np.float32
QUANT_DTYPES = (np.dtype(np.int8), np.dtype(np.uint8))
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


@dataclass(frozen=True, eq=False)
class QuantParams:
    """Per-tensor (axis = -1, one value) or per-channel (one value per index of `axis`) affine quantization."""

    scale: np.ndarray  # float32, 1-D
    zero_point: np.ndarray  # int64, 1-D, same length
    axis: int = -1

    @staticmethod
    def make(scale: Any, zero_point: Any = 0, axis: int = -1) -> QuantParams:
        s = np.atleast_1d(np.asarray(scale, dtype=F32)).reshape(-1)
        z = np.atleast_1d(np.asarray(zero_point, dtype=np.int64)).reshape(-1)
        if z.size == 1 and s.size > 1:
            z = np.repeat(z, s.size)
        return QuantParams(s, z, int(axis))

    @property
    def per_tensor(self) -> bool:
        return self.axis < 0

    @property
    def s(self) -> np.float32:
        """The scale of a per-tensor quantized tensor."""
        return F32(self.scale[0])

    @property
    def z(self) -> int:
        return int(self.zero_point[0])

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, QuantParams) and self.axis == other.axis
                and np.array_equal(self.scale, other.scale) and np.array_equal(self.zero_point, other.zero_point))

    def __hash__(self) -> int:
        return hash((self.axis, self.scale.tobytes(), self.zero_point.tobytes()))

    def __repr__(self) -> str:
        if self.per_tensor:
            return f"QuantParams(scale={float(self.scale[0]):.9g}, zero_point={self.z})"
        return f"QuantParams({self.scale.size} channels on axis {self.axis})"

    def along(self, shape: tuple[int, ...], values: np.ndarray) -> np.ndarray:
        """A per-channel vector shaped to broadcast against a tensor of `shape` (per-tensor: a scalar array)."""
        if self.per_tensor:
            return values[:1].reshape(())
        view = [1] * len(shape)
        view[self.axis] = values.size
        return values.reshape(view)


def qrange(dtype: Any) -> tuple[int, int]:
    info = np.iinfo(np.dtype(dtype))
    return int(info.min), int(info.max)


# -- the arithmetic ----------------------------------------------------------------------------------------------
def rne(v: np.ndarray) -> np.ndarray:
    """Round half to even of float32 values (already clamped to a small range), as int64."""
    return np.rint(np.asarray(v, F32)).astype(np.int64)


def wrap32(acc: np.ndarray) -> np.ndarray:
    """Integers reduced to int32 two's complement (accumulators wrap; well-formed models never get there)."""
    a = np.asarray(acc).astype(np.int64)
    return ((a - INT32_MIN) & 0xFFFFFFFF) + INT32_MIN


def to_f32(acc: np.ndarray) -> np.ndarray:
    """int32 -> float32 conversion, rounding to nearest even beyond 2^24 (cvtdq2ps, f32x4.convert_i32x4_s)."""
    return wrap32(acc).astype(np.int32).astype(F32)


def mul_scale(a: Any, b: Any) -> np.float32 | np.ndarray:
    return np.multiply(np.asarray(a, F32), np.asarray(b, F32), dtype=F32)


def div_scale(a: Any, b: Any) -> np.float32 | np.ndarray:
    return np.divide(np.asarray(a, F32), np.asarray(b, F32), dtype=F32)


def conv_scale(sx: Any, sw: Any, sy: Any) -> np.ndarray:
    """Requantization scale of a product: f32(f32(sx * sw) / sy) (XNNPACK computes it so)."""
    return div_scale(mul_scale(sx, sw), sy)


def avg_scale(sx: Any, n: Any, sy: Any) -> np.ndarray:
    """Requantization scale of a mean of n values: f32(sx / f32(f32(n) * sy))."""
    return div_scale(sx, mul_scale(np.asarray(n, F32), sy))


def bound(v: float, q: QuantParams, dtype: Any) -> int:
    """A real clamp bound (a fused activation's act_min/act_max, a CLIP's min/max) as an integer of the output:
    rne(clamp(f32(f32(v / scale) + f32(zero_point)), qmin, qmax)); -inf/+inf are the dtype's range."""
    qmin, qmax = qrange(dtype)
    if v == -math.inf:
        return qmin
    if v == math.inf:
        return qmax
    t = F32(F32(F32(v) / q.s) + F32(q.z))
    return int(np.rint(min(max(t, F32(qmin)), F32(qmax))))


ADD_MULTIPLIER_BITS = 20  # XNNPACK's qs8 add: 20-bit multipliers, shift in [12, 30]


def add_params(ra: np.float32, rb: np.float32) -> tuple[int, int, int]:
    """(a_multiplier, b_multiplier, shift) of the fixed-point ADD for the scale ratios ra = f32(sa / sy) and
    rb = f32(sb / sy) (rb < 0 for SUB): shift = 20 - exponent(max(|ra|, |rb|)), each multiplier
    rne(|r| * 2^shift) (exact exponent arithmetic, one rounding) with r's sign. Needs 2^-10 <= max < 2^8."""
    big = max(abs(float(ra)), abs(float(rb)))
    exponent = int(np.float32(big).view(np.uint32) >> 23) - 127
    shift = ADD_MULTIPLIER_BITS - exponent
    if not 12 <= shift <= 30:
        raise ValueError(f"ADD/SUB scale ratio {big:.6g} outside [2^-10, 2^8)")

    def mult(r: np.float32) -> int:
        m = int(np.rint(np.float64(abs(float(r))) * 2.0 ** shift))  # |r| * 2^shift is exact in float64
        return -m if np.signbit(r) else m

    return mult(ra), mult(rb), shift


def act_bounds(attrs: dict[str, Any], q: QuantParams, dtype: Any, lo_key: str = "act_min",
               hi_key: str = "act_max") -> tuple[int, int]:
    if lo_key not in attrs:
        return qrange(dtype)
    return bound(float(attrs[lo_key]), q, dtype), bound(float(attrs[hi_key]), q, dtype)


def requantize(acc: np.ndarray, m: Any, q: QuantParams, lo: int, hi: int) -> np.ndarray:
    """The fp32 requantization: z + clamp(rne(f32(f32(acc) * m)), lo - z, hi - z).

    acc: int32 accumulators; m: float32 multiplier(s), broadcast against acc. Clamping in the float domain before
    rounding (as kernels do) gives the same integers, since the bounds are integers."""
    return finish(np.multiply(to_f32(acc), np.asarray(m, F32), dtype=F32), q, lo, hi)


def finish(v: np.ndarray, q: QuantParams, lo: int, hi: int) -> np.ndarray:
    """z + clamp(rne(v), lo - z, hi - z) of float32 values v already in output units."""
    return q.z + rne(np.clip(np.asarray(v, F32), F32(lo - q.z), F32(hi - q.z)))


def rescale(x: np.ndarray, qx: QuantParams, qy: QuantParams, lo: int, hi: int) -> np.ndarray:
    """An integer tensor moved to other quantization parameters: requantize(x - zx, f32(sx / sy)).
    With equal parameters the multiplier is exactly 1 and this is the identity (plus the clamp)."""
    return requantize(x.astype(np.int64) - qx.z, div_scale(qx.s, qy.s), qy, lo, hi)


def quantize(x: np.ndarray, q: QuantParams, dtype: Any) -> np.ndarray:
    """float -> integer: z + clamp(rne(f32(x / scale))), NaN -> z (per-tensor, or per-channel along q.axis)."""
    x = np.asarray(x, F32)
    qmin, qmax = qrange(dtype)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        v = np.divide(x, q.along(x.shape, q.scale), dtype=F32)
    v = np.where(np.isnan(v), F32(0), v)
    z = q.along(x.shape, q.zero_point)
    v = np.clip(v, (qmin - z).astype(F32), (qmax - z).astype(F32))
    return (rne(v) + z).astype(dtype)


def dequantize(x: np.ndarray, q: QuantParams) -> np.ndarray:
    """integer -> float32: f32(f32(x - z) * scale) (per-tensor, or per-channel along q.axis)."""
    d = (x.astype(np.int64) - q.along(x.shape, q.zero_point)).astype(F32)
    return np.multiply(d, q.along(x.shape, q.scale), dtype=F32)


# -- choosing parameters (converters; not part of what engines compute) -----------------------------------------
def params_for_range(lo: float, hi: float, dtype: Any = np.int8) -> QuantParams:
    """Asymmetric per-tensor parameters covering [lo, hi] (widened to include 0, so zero is exact)."""
    qmin, qmax = qrange(dtype)
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError(f"cannot quantize the range [{lo}, {hi}]")
    if hi - lo < 1e-8:
        hi = lo + 1e-8
    scale = F32((hi - lo) / (qmax - qmin))
    z = int(np.clip(round(qmin - lo / float(scale)), qmin, qmax))
    return QuantParams.make(scale, z)


def symmetric_weights(w: np.ndarray, axis: int = 0, bits_max: int = 127, min_scale: Any = 0.0
                      ) -> tuple[np.ndarray, QuantParams]:
    """int8 weights in [-127, 127] with one symmetric scale per index of `axis` (zero point 0), each scale at
    least min_scale (per channel: see bias_min_scale)."""
    w = np.asarray(w, np.float64)
    moved = np.moveaxis(w, axis, 0).reshape(w.shape[axis], -1)
    amax = np.max(np.abs(moved), axis=1) if moved.shape[1] else np.zeros(w.shape[axis])
    scale = np.maximum(amax / bits_max, np.asarray(min_scale, np.float64))
    scale = np.where(scale > 0, scale, 1.0).astype(F32)
    view = [1] * w.ndim
    view[axis] = -1
    q = np.clip(np.rint(w / scale.astype(np.float64).reshape(view)), -bits_max, bits_max).astype(np.int8)
    return q, QuantParams.make(scale, np.zeros(scale.size, np.int64), axis)


BIAS_LIMIT = float(1 << 30)  # a quantized bias leaves room in int32 for the products it is added to


def bias_min_scale(b: np.ndarray, sx: Any) -> np.ndarray:
    """The smallest weight scale per channel that keeps |b / (sx * sw)| <= 2^30: a channel whose weights are
    (almost) all zero but whose bias is not would otherwise overflow int32 (TFLite widens the weight scale too)."""
    return np.abs(np.asarray(b, np.float64)) / (float(sx) * BIAS_LIMIT)


def bias_int32(b: np.ndarray, sx: Any, sw: np.ndarray) -> np.ndarray:
    """A float bias as int32 in units of f32(sx * sw[c]), rounded to nearest even, saturated."""
    unit = mul_scale(sx, sw).astype(np.float64)
    return np.clip(np.rint(np.asarray(b, np.float64) / unit), INT32_MIN, INT32_MAX).astype(np.int32)


# -- dynamic quantization (ONNX DynamicQuantizeLinear; onnxruntime's dynamic int8 ops) ------------------------------
DYNAMIC_QMAX = 255  # DynamicQuantizeLinear quantizes to uint8 [0, 255]


def dynamic_params(x: np.ndarray) -> tuple[np.float32, np.float32]:
    """(scale, zero point) that ONNX DynamicQuantizeLinear measures on x, the zero point as an integer-valued
    float32: lo = min(0, min x), hi = max(0, max x); scale = f32(f32(hi - lo) / 255), 1 where hi == lo (onnxruntime;
    then every quantized value is 0 whatever the scale); zp = rne(clamp(-f32(lo / scale), 0, 255))."""
    x = np.asarray(x, F32)
    hi = F32(max(F32(0), np.max(x))) if x.size else F32(0)
    lo = F32(min(F32(0), np.min(x))) if x.size else F32(0)
    scale = F32(1) if hi == lo else np.divide(np.subtract(hi, lo, dtype=F32), F32(DYNAMIC_QMAX), dtype=F32)
    zp = np.rint(np.clip(-np.divide(lo, scale, dtype=F32), F32(0), F32(DYNAMIC_QMAX)))
    return F32(scale), F32(zp)


def dynamic_quantize(x: np.ndarray) -> tuple[np.ndarray, np.float32, np.uint8]:
    """ONNX DynamicQuantizeLinear: (y uint8, scale, zero point) with y = clamp(rne(f32(x / scale)) + zp, 0, 255)
    (the scale and zero point of dynamic_params; round half to even)."""
    x = np.asarray(x, F32)
    scale, zp = dynamic_params(x)
    y = np.clip(np.rint(np.divide(x, scale, dtype=F32)) + zp, F32(0), F32(DYNAMIC_QMAX))
    return y.astype(np.uint8), scale, np.uint8(zp)
