"""Output shape and dtype of every op, from input shapes, dtypes and attributes (no data needed).

This module is also the validator of the op set: every rule an op's inputs and attributes must satisfy is checked
here and reported as a ValueError that names the op and the problem. python_ref.ops calls it before computing.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from python_ref.opdefs import (
    OPS,
    UNARY,
    Activation,
    CastTo,
    CoordMode,
    DepthToSpaceMode,
    Direction,
    GeluMode,
    NearestMode,
    PadMode,
    QuantType,
    ResizeMode,
    ScatterReduction,
    family,
)
from python_ref.quant import QUANT_DTYPES

Spec = tuple[tuple[int, ...], np.dtype]
Shape = tuple[int, ...]

_FLOAT_ONLY = {name for name, d in OPS.items() if d.float_only}  # opdefs: OpDef.float_only
BOOL = np.dtype(np.bool_)
CAST_DTYPES = {CastTo.FLOAT32: np.dtype(np.float32), CastTo.FLOAT16: np.dtype(np.float16),
               CastTo.INT8: np.dtype(np.int8), CastTo.UINT8: np.dtype(np.uint8), CastTo.INT32: np.dtype(np.int32),
               CastTo.INT64: np.dtype(np.int64), CastTo.BOOL: BOOL}
MAX_SPLIT = 4096  # outputs of one SPLIT (the format's limit on an op's outputs)
_INT_INDEX = (np.dtype(np.int32), np.dtype(np.int64))
# ops of _FLOAT_ONLY that also take int8/uint8 as quantized tensors (python_ref.qrules requires the parameters)
_QUANTIZABLE = {name for name, d in OPS.items() if d.needs_quant}
_I32, _F32 = np.dtype(np.int32), np.dtype(np.float32)
QUANT_TYPES = {QuantType.INT8: np.dtype(np.int8), QuantType.UINT8: np.dtype(np.uint8)}


class _Err:
    """Raises ValueError messages prefixed with the op name."""

    def __init__(self, op: str) -> None:
        self.op = op

    def __call__(self, msg: str) -> ValueError:
        return ValueError(f"{self.op}: {msg}")

    def check(self, cond: bool, msg: str) -> None:
        if not cond:
            raise self(msg)


def full_attrs(op: str, attrs: dict[str, Any]) -> dict[str, Any]:
    """attrs completed with the op's defaults; unknown attribute names are an error."""
    if op not in OPS:
        raise ValueError(f"unknown op {op!r}")
    full = OPS[op].defaults()
    unknown = set(attrs) - set(full)
    if unknown:
        raise ValueError(f"{op}: unknown attributes {sorted(unknown)}")
    full.update(attrs)
    return full


def infer(op: str, inputs: list[Spec | None], attrs: dict[str, Any]) -> list[Spec]:
    """Shapes and dtypes of op's outputs. inputs holds None for an absent optional input."""
    a = full_attrs(op, attrs)
    err = _Err(op)
    specs = [None if s is None else (tuple(int(d) for d in s[0]), np.dtype(s[1])) for s in inputs]
    _check_arity(op, specs, err)
    x = specs[0]
    if op in _FLOAT_ONLY and x is not None:
        hint = " (quantized element-wise functions are LOOKUP tables, made by the converters)" \
            if x[1] in QUANT_DTYPES else ""
        err.check(x[1].kind == "f" or (op in _QUANTIZABLE and x[1] in QUANT_DTYPES),
                  f"input dtype {x[1]} is not a floating-point type{hint}")
    _check_act(a, err)
    out = _RULES[op](specs, a, err)
    return out if isinstance(out, list) else [out]


# -- helpers ---------------------------------------------------------------------------------------------------------
def _check_arity(op: str, specs: list[Spec | None], err: _Err) -> None:
    d = OPS[op]
    n = len(specs)
    if d.variadic:
        err.check(n >= 1 and all(s is not None for s in specs), f"needs at least one input, got {n}")
        return
    err.check(d.min_inputs <= n <= len(d.inputs), f"takes {d.min_inputs}..{len(d.inputs)} inputs, got {n}")
    for k, s in enumerate(specs):
        if s is None and not d.inputs[k].endswith("?"):
            raise err(f"required input {d.inputs[k]!r} is missing")


def _check_act(a: dict[str, Any], err: _Err) -> None:
    if "act_min" in a:
        err.check(float(a["act_min"]) <= float(a["act_max"]),
                  f"act_min {a['act_min']} is greater than act_max {a['act_max']}")


def _rank(spec: Spec, rank: int, what: str, err: _Err) -> Shape:
    err.check(len(spec[0]) == rank, f"{what} must have rank {rank}, got shape {list(spec[0])}")
    return spec[0]


def _same_dtype(specs: list[Spec | None], err: _Err) -> np.dtype:
    dts = {s[1] for s in specs if s is not None}
    err.check(len(dts) == 1, f"inputs have different dtypes {sorted(str(d) for d in dts)}")
    return dts.pop()


def _ints(a: dict[str, Any], name: str, n: int, lo: int, err: _Err) -> tuple[int, ...]:
    v = tuple(int(i) for i in a[name])
    err.check(len(v) == n, f"{name} must have {n} values, got {list(v)}")
    err.check(all(i >= lo for i in v), f"{name} must all be >= {lo}, got {list(v)}")
    return v


def _enum(cls: type[enum.IntEnum], a: dict[str, Any], name: str, err: _Err) -> enum.IntEnum:
    try:
        return cls(int(a[name]))
    except ValueError:
        raise err(f"{name} = {a[name]!r} is not one of {[m.name for m in cls]}") from None


def _axis(axis: int, rank: int, err: _Err, what: str = "axis") -> int:
    err.check(-rank <= axis < rank, f"{what} {axis} is out of range for rank {rank}")
    return axis % rank


def _broadcast(a: Shape, b: Shape, err: _Err) -> Shape:
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        raise err(f"shapes {list(a)} and {list(b)} do not broadcast") from None


def conv_out(size: int, k: int, s: int, d: int, p0: int, p1: int) -> int:
    """Output size of a convolution along one axis (floor rounding)."""
    return (size + p0 + p1 - d * (k - 1) - 1) // s + 1


def pool_out(size: int, k: int, s: int, d: int, p0: int, p1: int, ceil_mode: bool) -> int:
    """Output size of a pooling along one axis; with ceil_mode, a last window starting past input+p0 is dropped."""
    span = size + p0 + p1 - d * (k - 1) - 1
    if not ceil_mode:
        return span // s + 1
    out = -(-span // s) + 1
    if (out - 1) * s >= size + p0:
        out -= 1
    return out


def _spatial(a: dict[str, Any], err: _Err) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    return _ints(a, "strides", 2, 1, err), _ints(a, "dilations", 2, 1, err), _ints(a, "pads", 4, 0, err)


# -- convolution and dense -------------------------------------------------------------------------------------------
def _conv_weights(specs: list[Spec | None], a: dict[str, Any], err: _Err) -> tuple[Shape, Shape, int]:
    x = _rank(specs[0], 4, "input x (NHWC)", err)
    w = _rank(specs[1], 4, "weights w (OHWI)", err)
    _weight_dtypes(specs, err)
    g = int(a["groups"])
    err.check(g >= 1, f"groups must be >= 1, got {g}")
    err.check(w[0] % g == 0, f"{w[0]} output channels are not divisible by groups={g}")
    b = specs[2] if len(specs) > 2 else None
    if b is not None:
        err.check(b[0] == (w[0],), f"bias has shape {list(b[0])}, expected [{w[0]}]")
    err.check(w[1] >= 1 and w[2] >= 1 and w[3] >= 1, f"weights have an empty dimension: {list(w)}")
    return x, w, g


def _weight_dtypes(specs: list[Spec | None], err: _Err) -> None:
    """Float ops: every input of one dtype. Quantized: int8/uint8 x and w, int32 bias."""
    if specs[0][1] not in QUANT_DTYPES:
        _same_dtype(specs, err)
        return
    err.check(specs[1][1] in QUANT_DTYPES, f"quantized input {specs[0][1]} needs int8 or uint8 weights, got "
              f"{specs[1][1]}")
    b = specs[2] if len(specs) > 2 else None
    err.check(b is None or b[1] == _I32, f"the bias of a quantized op must be int32, got {b and b[1]}")


def _conv2d(specs: list[Spec | None], a: dict[str, Any], err: _Err) -> Spec:
    x, w, g = _conv_weights(specs, a, err)
    err.check(x[3] % g == 0, f"input has {x[3]} channels, not divisible by groups={g}")
    err.check(x[3] == w[3] * g, f"input has {x[3]} channels but weights expect {w[3] * g} (groups={g})")
    (sh, sw), (dh, dw), (pt, pl, pb, pr) = _spatial(a, err)
    oh, ow = conv_out(x[1], w[1], sh, dh, pt, pb), conv_out(x[2], w[2], sw, dw, pl, pr)
    err.check(oh >= 1 and ow >= 1, f"output would be empty ({oh}x{ow}): kernel {w[1]}x{w[2]} with dilation "
              f"{dh}x{dw} does not fit input {x[1]}x{x[2]} padded by {[pt, pl, pb, pr]}")
    y = (x[0], oh, ow, w[0])
    r = specs[3] if len(specs) > 3 else None
    if r is not None:
        err.check(tuple(r[0]) == y and r[1] == specs[0][1],
                  f"residual r is {list(r[0])} {r[1]}, but the output is {list(y)} {specs[0][1]}")
    return y, specs[0][1]


def _conv_transpose2d(specs: list[Spec | None], a: dict[str, Any], err: _Err) -> Spec:
    x, w, g = _conv_weights(specs, a, err)
    err.check(x[3] == w[3] * g, f"input has {x[3]} channels but weights expect {w[3] * g} (groups={g})")
    (sh, sw), (dh, dw), (pt, pl, pb, pr) = _spatial(a, err)
    oph, opw = _ints(a, "output_padding", 2, 0, err)
    err.check(oph < max(sh, dh) and opw < max(sw, dw),
              f"output_padding {[oph, opw]} must be smaller than the stride or the dilation")
    oh = (x[1] - 1) * sh - pt - pb + dh * (w[1] - 1) + 1 + oph
    ow = (x[2] - 1) * sw - pl - pr + dw * (w[2] - 1) + 1 + opw
    err.check(oh >= 1 and ow >= 1, f"output would be empty ({oh}x{ow}): pads {[pt, pl, pb, pr]} are too large")
    return (x[0], oh, ow, w[0]), specs[0][1]


def _fully_connected(specs: list[Spec | None], a: dict[str, Any], err: _Err) -> Spec:
    x = specs[0][0]
    w = _rank(specs[1], 2, "weights w [N, K]", err)
    _weight_dtypes(specs, err)
    err.check(len(x) >= 1, "input must have rank >= 1")
    err.check(x[-1] == w[1], f"input has K={x[-1]} features but weights expect {w[1]}")
    b = specs[2] if len(specs) > 2 else None
    if b is not None:
        err.check(b[0] == (w[0],), f"bias has shape {list(b[0])}, expected [{w[0]}]")
    if a["float_output"]:
        err.check(specs[0][1] in QUANT_DTYPES, f"float_output needs an int8 or uint8 input, got {specs[0][1]}")
        return (*x[:-1], w[0]), np.dtype(np.float32)
    return (*x[:-1], w[0]), specs[0][1]


def _matmul(specs: list[Spec | None], a: dict[str, Any], err: _Err) -> Spec:
    sa, sb = specs[0][0], specs[1][0]
    dt = _same_dtype(specs, err)
    err.check(len(sa) >= 1 and len(sb) >= 1, "inputs must have rank >= 1")
    a2 = (1, *sa) if len(sa) == 1 else sa  # numpy promotes 1-D operands, then drops the added axis
    b2 = (*sb, 1) if len(sb) == 1 else sb
    err.check(a2[-1] == b2[-2], f"inner dimensions differ: {list(sa)} @ {list(sb)}")
    batch = _broadcast(a2[:-2], b2[:-2], err)
    out = (*batch, *((a2[-2],) if len(sa) > 1 else ()), *((b2[-1],) if len(sb) > 1 else ()))
    return out, dt


# -- element-wise ----------------------------------------------------------------------------------------------------
def _binary(specs: list[Spec | None], a: dict[str, Any], err: _Err) -> Spec:
    dt = _same_dtype(specs, err)
    return _broadcast(specs[0][0], specs[1][0], err), dt


def _prelu(specs: list[Spec | None], a: dict[str, Any], err: _Err) -> Spec:
    dt = _same_dtype(specs, err)
    x, s = specs[0][0], specs[1][0]
    err.check(_broadcast(x, s, err) == x, f"slope shape {list(s)} does not broadcast to input shape {list(x)}")
    return x, dt


def _unary(specs: list[Spec | None], a: dict[str, Any], err: _Err) -> Spec:
    return specs[0]


def _clip(specs: list[Spec | None], a: dict[str, Any], err: _Err) -> Spec:
    err.check(float(a["min"]) <= float(a["max"]), f"min {a['min']} is greater than max {a['max']}")
    return specs[0]


# -- pooling and reductions ------------------------------------------------------------------------------------------
def _pool(specs: list[Spec | None], a: dict[str, Any], err: _Err) -> Spec:
    x = _rank(specs[0], 4, "input x (NHWC)", err)
    kh, kw = _ints(a, "kernel", 2, 1, err)
    (sh, sw), (dh, dw), (pt, pl, pb, pr) = _spatial(a, err)
    ceil = bool(a["ceil_mode"])
    oh, ow = pool_out(x[1], kh, sh, dh, pt, pb, ceil), pool_out(x[2], kw, sw, dw, pl, pr, ceil)
    err.check(oh >= 1 and ow >= 1, f"output would be empty ({oh}x{ow}): kernel {kh}x{kw} with dilation {dh}x{dw} "
              f"does not fit input {x[1]}x{x[2]} padded by {[pt, pl, pb, pr]}")
    err.check(pt < dh * (kh - 1) + 1 and pb < dh * (kh - 1) + 1 and pl < dw * (kw - 1) + 1
              and pr < dw * (kw - 1) + 1, f"pads {[pt, pl, pb, pr]} must be smaller than the kernel extent")
    return (x[0], oh, ow, x[3]), specs[0][1]


def reduce_axes(axes: Any, rank: int, err: _Err | None = None) -> tuple[int, ...]:
    """Normalized, sorted reduction axes; empty means every axis."""
    err = err or _Err("REDUCE")
    if len(axes) == 0:
        return tuple(range(rank))
    norm = tuple(sorted(_axis(int(ax), rank, err) for ax in axes))
    err.check(len(set(norm)) == len(norm), f"axes {list(axes)} repeat an axis")
    return norm


def _reduce(specs: list[Spec | None], a: dict[str, Any], err: _Err) -> Spec:
    x = specs[0][0]
    axes = reduce_axes(a["axes"], len(x), err)
    for ax in axes:
        err.check(x[ax] > 0 or err.op != "REDUCE_MAX", f"cannot reduce the empty axis {ax}")
    if a["keepdims"]:
        return tuple(1 if i in axes else d for i, d in enumerate(x)), specs[0][1]
    return tuple(d for i, d in enumerate(x) if i not in axes), specs[0][1]


def _softmax(specs: list[Spec | None], a: dict[str, Any], err: _Err) -> Spec:
    x = specs[0][0]
    err.check(len(x) >= 1, "input must have rank >= 1")
    _axis(int(a["axis"]), len(x), err)
    table = specs[1] if len(specs) > 1 else None
    if specs[0][1] in QUANT_DTYPES:
        err.check(table is not None, "a quantized SOFTMAX needs its int32 exponential table (input 1)")
    else:
        err.check(table is None, "the table input is only for quantized (int8/uint8) inputs")
    return specs[0]


# -- quantization ----------------------------------------------------------------------------------------------------
def _quantize(specs: list[Spec | None], a: dict[str, Any], err: _Err) -> Spec:
    x = specs[0]
    err.check(x[1] == _F32 or x[1] in QUANT_DTYPES, f"input must be float32, int8 or uint8, got {x[1]}")
    return x[0], QUANT_TYPES[_enum(QuantType, a, "dtype", err)]


def _dequantize(specs: list[Spec | None], a: dict[str, Any], err: _Err) -> Spec:
    err.check(specs[0][1] in QUANT_DTYPES, f"input must be int8 or uint8, got {specs[0][1]}")
    return specs[0][0], _F32


def _lookup(specs: list[Spec | None], a: dict[str, Any], err: _Err) -> Spec:
    x, table = specs
    err.check(x[1] in QUANT_DTYPES, f"input must be int8 or uint8, got {x[1]}")
    err.check(table[0] == (256,) and table[1] in QUANT_DTYPES,
              f"table must be [256] of int8 or uint8, got {list(table[0])} of {table[1]}")
    return x[0], table[1]


# -- data movement ---------------------------------------------------------------------------------------------------
def reshape_target(shape: Shape, target: Any, err: _Err | None = None) -> Shape:
    """The resolved RESHAPE target: at most one -1 (inferred), 0 copies the input's dimension at the same index
    (a dimension that changes at run time), every other entry >= 1."""
    err = err or _Err("RESHAPE")
    t = [int(d) for d in target]
    size = math.prod(shape)
    err.check(t.count(-1) <= 1, f"shape {t} has more than one -1")
    err.check(all(d >= 0 or d == -1 for d in t), f"shape {t} has an entry < 0 other than -1")
    err.check(all(d != 0 or i < len(shape) for i, d in enumerate(t)),
              f"shape {t} copies (0) a dimension the input {list(shape)} does not have")
    t = [shape[i] if d == 0 else d for i, d in enumerate(t)]
    if -1 in t:
        known = math.prod(d for d in t if d != -1)
        err.check(known > 0, f"cannot infer the -1 of {t}: it has a zero dimension")
        err.check(size % known == 0, f"cannot reshape {list(shape)} ({size} elements) to {t}")
        t[t.index(-1)] = size // known
    err.check(math.prod(t) == size, f"cannot reshape {list(shape)} ({size} elements) to {t}")
    return tuple(t)


def _reshape(specs: list[Spec | None], a: dict[str, Any], err: _Err) -> Spec:
    return reshape_target(specs[0][0], a["shape"], err), specs[0][1]


def transpose_perm(rank: int, perm: Any, err: _Err | None = None) -> tuple[int, ...]:
    """perm as a tuple; empty means reverse the axes (ONNX default)."""
    err = err or _Err("TRANSPOSE")
    p = tuple(int(i) for i in perm) or tuple(range(rank - 1, -1, -1))
    err.check(sorted(p) == list(range(rank)), f"perm {list(p)} is not a permutation of {rank} axes")
    return p


def _transpose(specs: list[Spec | None], a: dict[str, Any], err: _Err) -> Spec:
    x = specs[0][0]
    p = transpose_perm(len(x), a["perm"], err)
    return tuple(x[i] for i in p), specs[0][1]


def _concatenation(specs: list[Spec | None], a: dict[str, Any], err: _Err) -> Spec:
    dt = _same_dtype(specs, err)
    first = specs[0][0]
    axis = int(a["axis"])
    err.check(0 <= axis < len(first), f"axis {axis} must be in [0, {len(first)})")
    total = 0
    for k, (s, _) in enumerate(specs):
        same = len(s) == len(first) and all(d == e for i, (d, e) in enumerate(zip(s, first, strict=True)) if i != axis)
        err.check(same, f"input {k} has shape {list(s)}, incompatible with {list(first)} on axis {axis}")
        total += s[axis]
    if a["act_min"] != -math.inf or a["act_max"] != math.inf:
        err.check(dt.kind == "f" or dt in QUANT_DTYPES, "a fused activation needs a floating-point or quantized input")
    return (*first[:axis], total, *first[axis + 1:]), dt


def slice_params(shape: Shape, a: dict[str, Any], err: _Err | None = None) -> list[tuple[int, int, int, int]]:
    """Per axis (start, end, step, length): values past the axis are clamped to it (a slice to the end of an axis
    whose size changes at run time); negative values other than end = -1 with a negative step are errors."""
    err = err or _Err("SLICE")
    r = len(shape)
    starts, ends, steps = (tuple(int(v) for v in a[k]) for k in ("starts", "ends", "steps"))
    err.check(len(starts) == len(ends) == len(steps) == r,
              f"starts/ends/steps must each have {r} values (one per axis), got {len(starts)}/{len(ends)}/{len(steps)}")
    out = []
    for ax, (b, e, s, d) in enumerate(zip(starts, ends, steps, shape, strict=True)):
        err.check(s != 0, f"step of axis {ax} is 0")
        if s > 0:
            err.check(b >= 0 and e >= 0, f"axis {ax}: start {b} / end {e} must be >= 0")
            b, e = min(b, d), min(e, d)
            n = max(0, -(-(e - b) // s))
        else:
            err.check(b >= 0 and e >= -1, f"axis {ax}: with step {s}, start {b} must be >= 0 and end {e} >= -1")
            b, e = min(b, d - 1), min(e, d - 1)
            n = max(0, -(-(b - e) // -s)) if d > 0 else 0
        out.append((b, e, s, n))
    return out


def _slice(specs: list[Spec | None], a: dict[str, Any], err: _Err) -> Spec:
    return tuple(p[3] for p in slice_params(specs[0][0], a, err)), specs[0][1]


def _pad(specs: list[Spec | None], a: dict[str, Any], err: _Err) -> Spec:
    x = specs[0][0]
    r = len(x)
    pads = _ints(a, "pads", 2 * r, 0, err)
    mode = _enum(PadMode, a, "mode", err)
    for ax, d in enumerate(x):
        lo, hi = pads[ax], pads[ax + r]
        if mode == PadMode.REFLECT:
            err.check(lo <= d - 1 and hi <= d - 1, f"reflect pads {lo},{hi} of axis {ax} must be < its size {d}")
        elif mode == PadMode.EDGE:
            err.check(d > 0 or lo == hi == 0, f"edge padding of the empty axis {ax}")
    dt = specs[0][1]
    if mode == PadMode.CONSTANT and dt.kind in "iub":  # the value must exist in the element type (truncated to 0)
        lo, hi = (0, 1) if dt.kind == "b" else (np.iinfo(dt).min, np.iinfo(dt).max)
        v = float(a["value"])
        err.check(math.isfinite(v) and lo <= math.trunc(v) <= hi,
                  f"pad value {a['value']} is not representable as {dt}")
    return tuple(d + pads[i] + pads[i + r] for i, d in enumerate(x)), specs[0][1]


def _resize(specs: list[Spec | None], a: dict[str, Any], err: _Err) -> Spec:
    x = _rank(specs[0], 4, "input x (NHWC)", err)
    oh, ow = resize_size(x, a, err)
    for cls, name in ((ResizeMode, "mode"), (CoordMode, "coord"), (NearestMode, "nearest")):
        _enum(cls, a, name, err)
    err.check(x[1] >= 1 and x[2] >= 1, f"input spatial size {x[1]}x{x[2]} is empty")
    return (x[0], oh, ow, x[3]), specs[0][1]


def resize_size(x: Shape, a: dict[str, Any], err: _Err | None = None) -> tuple[int, int]:
    """RESIZE's output (h, w): size, where an entry 0 means floor(in * scale) (an input size that changes at run
    time)."""
    err = err or _Err("RESIZE")
    size = _ints(a, "size", 2, 0, err)
    sc = tuple(float(s) for s in a["scales"])
    err.check(len(sc) == 2 and all(s >= 0 for s in sc), f"scales must be 2 values >= 0, got {list(sc)}")
    out = []
    for k, (n, s) in enumerate(zip(size, sc, strict=True)):
        if n == 0:
            err.check(s > 0, f"size {k} is 0 (from the scale) but scales[{k}] is 0")
            n = math.floor(x[1 + k] * float(np.float32(s)))  # the stored float32 scale, times in double
        err.check(n >= 1, f"the output size {list(size)} is empty")
        out.append(int(n))
    return out[0], out[1]


def _depth_to_space(specs: list[Spec | None], a: dict[str, Any], err: _Err) -> Spec:
    x = _rank(specs[0], 4, "input x (NHWC)", err)
    b = int(a["block"])
    _enum(DepthToSpaceMode, a, "mode", err)
    err.check(b >= 1, f"block must be >= 1, got {b}")
    err.check(x[3] % (b * b) == 0, f"{x[3]} channels are not divisible by block*block = {b * b}")
    return (x[0], x[1] * b, x[2] * b, x[3] // (b * b)), specs[0][1]


def _gather(specs: list[Spec | None], a: dict[str, Any], err: _Err) -> Spec:
    x, (ind, idt) = specs[0][0], specs[1]
    err.check(len(x) >= 1, "input must have rank >= 1")
    err.check(idt in _INT_INDEX, f"indices must be int32 or int64, got {idt}")
    ax = _axis(int(a["axis"]), len(x), err)
    return (*x[:ax], *ind, *x[ax + 1:]), specs[0][1]


# -- transformer blocks, comparisons, integer arithmetic ---------------------------------------------------------------
def _layer_norm(specs: list[Spec | None], a: dict[str, Any], err: _Err) -> Spec:
    x = specs[0][0]
    dt = _same_dtype(specs, err)
    err.check(len(x) >= 1, "input must have rank >= 1")
    ax = _axis(int(a["axis"]), len(x), err)
    norm = x[ax:]
    for k, what in ((1, "scale"), (2, "bias")):
        s = specs[k] if len(specs) > k else None
        if s is not None:
            err.check(len(s[0]) <= len(norm) and _broadcast(norm, s[0], err) == norm,
                      f"{what} shape {list(s[0])} does not broadcast to the normalized shape {list(norm)}")
    err.check(float(a["epsilon"]) >= 0, f"epsilon must be >= 0, got {a['epsilon']}")
    return x, dt


def _gelu(specs: list[Spec | None], a: dict[str, Any], err: _Err) -> Spec:
    _enum(GeluMode, a, "mode", err)
    return specs[0]


def _where(specs: list[Spec | None], a: dict[str, Any], err: _Err) -> Spec:
    (c, cd), (sa, da), (sb, db) = specs
    err.check(cd == BOOL, f"cond must be bool, got {cd}")
    err.check(da == db, f"a and b have different dtypes {da} and {db}")
    return _broadcast(_broadcast(c, sa, err), sb, err), da


def expand_shape(x: Shape, shape: Any, err: _Err | None = None) -> Shape:
    err = err or _Err("EXPAND")
    t = tuple(int(d) for d in shape)
    err.check(all(d >= 0 for d in t), f"shape {list(t)} has a negative entry")
    return _broadcast(x, t, err)


def _expand(specs: list[Spec | None], a: dict[str, Any], err: _Err) -> Spec:
    return expand_shape(specs[0][0], a["shape"], err), specs[0][1]


def _cast(specs: list[Spec | None], a: dict[str, Any], err: _Err) -> Spec:
    to = _enum(CastTo, a, "to", err)
    return specs[0][0], CAST_DTYPES[to]


def _compare(specs: list[Spec | None], a: dict[str, Any], err: _Err) -> Spec:
    _same_dtype(specs, err)
    return _broadcast(specs[0][0], specs[1][0], err), BOOL


def _logical(specs: list[Spec | None], a: dict[str, Any], err: _Err) -> Spec:
    for s in specs:
        err.check(s[1] == BOOL, f"inputs must be bool, got {s[1]}")
    if len(specs) == 1:
        return specs[0]
    return _broadcast(specs[0][0], specs[1][0], err), BOOL


def _scatter_nd(specs: list[Spec | None], a: dict[str, Any], err: _Err) -> Spec:
    (x, dt), (ind, idt), (upd, udt) = specs
    err.check(idt in _INT_INDEX, f"indices must be int32 or int64, got {idt}")
    err.check(udt == dt, f"updates have dtype {udt}, x has {dt}")
    err.check(len(x) >= 1 and len(ind) >= 1, "x and indices must have rank >= 1")
    k = ind[-1]
    err.check(1 <= k <= len(x), f"indices address {k} axes, x has {len(x)}")
    want = (*ind[:-1], *x[k:])
    err.check(tuple(upd) == want, f"updates have shape {list(upd)}, expected {list(want)}")
    _enum(ScatterReduction, a, "reduction", err)
    return x, dt


def _split(specs: list[Spec | None], a: dict[str, Any], err: _Err) -> list[Spec]:
    x, dt = specs[0]
    err.check(len(x) >= 1, "input must have rank >= 1")
    ax = _axis(int(a["axis"]), len(x), err)
    sizes = [int(s) for s in a["sizes"]]
    err.check(1 <= len(sizes) <= MAX_SPLIT, f"sizes must have 1..{MAX_SPLIT} entries, got {len(sizes)}")
    err.check(all(s >= 0 for s in sizes) and sum(sizes) == x[ax],
              f"sizes {sizes} must be >= 0 and sum to the axis length {x[ax]}")
    return [((*x[:ax], s, *x[ax + 1:]), dt) for s in sizes]


# -- recurrent layers ----------------------------------------------------------------------------------------------
RNN_GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
RNN_ACTIVATIONS = {"LSTM": 3, "GRU": 2, "RNN": 1}


def rnn_dims(op: str, specs: list[Spec | None], a: dict[str, Any], err: _Err) -> tuple[int, int, int, int, int, int]:
    """(T, B, I, D, H, P) of a recurrent op, with every input checked against them (P: LSTM projection size)."""
    x = _rank(specs[0], 3, "input x [T, B, I]", err)
    w = _rank(specs[1], 3, "weights w [D, gates*H, I]", err)
    r = _rank(specs[2], 3, "recurrence r [D, gates*H, P]", err)
    _same_dtype([s for k, s in enumerate(specs) if k != 4], err)
    direction = _enum(Direction, a, "direction", err)
    d = 2 if direction == Direction.BIDIRECTIONAL else 1
    g = RNN_GATES[op]
    t, b, i = x
    err.check(w[0] == d and r[0] == d, f"w and r must have {d} direction(s) on axis 0, got {w[0]} and {r[0]}")
    err.check(w[1] % g == 0 and w[1] > 0, f"w axis 1 ({w[1]}) must be {g} * hidden size")
    h = w[1] // g
    err.check(w[2] == i, f"w expects {w[2]} input features, x has {i}")
    proj = specs[8] if op == "LSTM" and len(specs) > 8 else None
    p = proj[0][1] if proj is not None else h
    err.check(r[1] == g * h and r[2] == p, f"r must have shape [{d}, {g * h}, {p}], got {list(r)}")

    def want(k: int, what: str, shape: tuple[int, ...]) -> None:
        s = specs[k] if len(specs) > k else None
        if s is not None:
            err.check(s[0] == shape, f"{what} has shape {list(s[0])}, expected {list(shape)}")

    want(3, "bias b", (d, 2 * g * h))
    if len(specs) > 4 and specs[4] is not None:
        err.check(specs[4][0] == (b,) and specs[4][1] in _INT_INDEX,
                  f"seq_lens must be int32/int64 of shape [{b}], got {specs[4][1]} {list(specs[4][0])}")
    want(5, "initial state h0", (d, b, p))
    if op == "LSTM":
        want(6, "initial cell c0", (d, b, h))
        want(7, "peepholes p", (d, 3 * h))
        if proj is not None:
            want(8, "projection proj_w", (d, p, h))
        want(9, "projection bias proj_b", (d, p))
        err.check(proj is not None or len(specs) <= 9 or specs[9] is None, "proj_b needs proj_w")
        want(10, "layer norm ln", (d, 4, h))
    acts = [int(v) for v in a["activations"]]
    n = RNN_ACTIVATIONS[op]
    err.check(len(acts) in (0, n * d), f"activations must have {n * d} entries ({n} per direction), got {len(acts)}")
    for v in acts:
        err.check(v in {int(m) for m in Activation}, f"activation {v} is not one of {[m.name for m in Activation]}")
    for k in ("activation_alpha", "activation_beta"):
        err.check(len(a[k]) in (0, n * d), f"{k} must have {n * d} entries (one per activation), got {len(a[k])}")
    for k in ("clip", "cell_clip", "proj_clip"):
        if k in a:
            err.check(float(a[k]) > 0, f"{k} must be > 0 (inf: none), got {a[k]}")
    return t, b, i, d, h, p


def _recurrent(specs: list[Spec | None], a: dict[str, Any], err: _Err) -> list[Spec]:
    t, b, _, d, h, p = rnn_dims(err.op, specs, a, err)
    dt = specs[0][1]
    outs = [((t, d, b, p), dt), ((d, b, p), dt)]
    if err.op == "LSTM":
        outs.append(((d, b, h), dt))
    return outs


# -- MediaPipe's attention mesh ops ---------------------------------------------------------------------------------
def _landmarks_to_transform_matrix(specs: list[Spec | None], a: dict[str, Any], err: _Err) -> Spec:
    x = _rank(specs[0], 3, "landmarks [1, N, 3]", err)
    err.check(x[0] == 1 and x[2] == 3, f"landmarks must have shape [1, N, 3], got {list(x)}")
    n = x[1]
    for name in ("rotation_idx", "subset"):
        idx = [int(v) for v in a[name]]
        err.check(all(0 <= v < n for v in idx), f"{name} {idx} indexes landmarks outside [0, {n})")
    err.check(len(a["rotation_idx"]) == 2, "rotation_idx must have 2 values")
    err.check(len(a["subset"]) >= 1, "subset must not be empty")
    _ints(a, "size", 2, 1, err)
    sc = tuple(float(v) for v in a["scales"])
    err.check(len(sc) == 2 and all(v > 0 for v in sc), f"scales must be 2 values > 0, got {list(sc)}")
    return (1, 4, 4), specs[0][1]


def _matrix_4x4(spec: Spec, err: _Err) -> None:
    err.check(spec[0] == (1, 4, 4), f"matrix must have shape [1, 4, 4], got {list(spec[0])}")


def _transform_tensor_bilinear(specs: list[Spec | None], a: dict[str, Any], err: _Err) -> Spec:
    x = _rank(specs[0], 4, "input x (NHWC)", err)
    _same_dtype(specs, err)
    _matrix_4x4(specs[1], err)
    err.check(x[0] == 1, f"batch must be 1, got {x[0]}")
    oh, ow = _ints(a, "size", 2, 1, err)
    return (1, oh, ow, x[3]), specs[0][1]


def _transform_landmarks(specs: list[Spec | None], a: dict[str, Any], err: _Err) -> Spec:
    x = specs[0][0]
    _same_dtype(specs, err)
    _matrix_4x4(specs[1], err)
    dims = int(a["dimensions"])
    err.check(dims in (2, 3), f"dimensions must be 2 or 3, got {dims}")
    err.check(len(x) >= 1 and x[-1] % dims == 0, f"the last axis of {list(x)} is not a multiple of {dims}")
    err.check(float(a["scale"]) != 0, "scale must not be 0")
    return specs[0]


_Rule = Callable[[list[Spec | None], dict[str, Any], _Err], Spec | list[Spec]]
_RULES: dict[str, _Rule] = {
    **{k: _unary for k in family(UNARY)},  # element-wise unary ops (opdefs); an entry below adds checks
    "CONV_2D": _conv2d,
    "CONV_TRANSPOSE_2D": _conv_transpose2d,
    "FULLY_CONNECTED": _fully_connected,
    "MATMUL": _matmul,
    **{k: _binary for k in ("ADD", "SUB", "MUL", "DIV", "MAXIMUM", "MINIMUM", "POW")},
    "PRELU": _prelu,
    "CLIP": _clip,
    "MAX_POOL_2D": _pool,
    "AVERAGE_POOL_2D": _pool,
    "MEAN": _reduce,
    "REDUCE_MAX": _reduce,
    "REDUCE_SUM": _reduce,
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
    "WHERE": _where,
    "EXPAND": _expand,
    "CAST": _cast,
    **{k: _compare for k in ("EQUAL", "LESS", "GREATER", "LESS_EQUAL", "GREATER_EQUAL")},
    **{k: _logical for k in ("NOT", "AND", "OR", "XOR")},
    "SCATTER_ND": _scatter_nd,
    "SPLIT": _split,
    **{k: _recurrent for k in ("LSTM", "GRU", "RNN")},
    "LANDMARKS_TO_TRANSFORM_MATRIX": _landmarks_to_transform_matrix,
    "TRANSFORM_TENSOR_BILINEAR": _transform_tensor_bilinear,
    "TRANSFORM_LANDMARKS": _transform_landmarks,
    "QUANTIZE": _quantize,
    "DEQUANTIZE": _dequantize,
    "LOOKUP": _lookup,
}

missing = set(OPS) - set(_RULES)
assert not missing, f"shape rules missing for {sorted(missing)}"
del missing
