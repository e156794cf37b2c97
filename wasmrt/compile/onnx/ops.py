"""ONNX op -> wasmrt IR converters for data-dependent nodes (constant nodes are folded before they get here).

Each converter reads its node's inputs from the Context (constants as numpy arrays, runtime tensors as IR names
in the layout it asks for), emits IR nodes and binds the node's outputs. See onnx_import.py for the layout policy.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import onnx

from python_ref import recurrent
from python_ref.opdefs import (
    Activation,
    CastTo,
    CoordMode,
    Coupling,
    DepthToSpaceMode,
    Direction,
    GeluMode,
    NearestMode,
    PadMode,
    ResizeMode,
    ScatterReduction,
)
from python_ref.shapes import CAST_DTYPES
from wasmrt.compile.onnx.context import (
    MAX_CONCAT,
    MAX_CONST_ELEMENTS,
    Context,
    Value,
    cl_inverse,
    cl_perm,
    ir_axis,
    node_name,
)
from wasmrt.compile.onnx.shapes import explicit_pads, reshape_target, slice_params
from wasmrt.compile.registry import registrar

OpConverter = Callable[[Context, onnx.NodeProto, dict[str, Any]], None]
CONVERTERS: dict[str, OpConverter] = {}

# Inputs (by index) that must be known at import time; the conformance test freezes these.
CONSTANT_INPUTS: dict[str, tuple[int, ...]] = {
    "Conv": (1, 2), "ConvTranspose": (1, 2), "BatchNormalization": (1, 2, 3, 4), "Clip": (1, 2),
    "Pad": (1, 2, 3), "Reshape": (1,), "Slice": (1, 2, 3, 4), "Split": (1,), "Squeeze": (1,), "Unsqueeze": (1,),
    "ReduceMean": (1,), "ReduceMax": (1,), "ReduceMin": (1,), "ReduceSum": (1,), "ReduceL1": (1,),
    "ReduceL2": (1,), "ReduceSumSquare": (1,), "Resize": (1, 2, 3), "Upsample": (1,),
    "Expand": (1,), "Tile": (1,), "Dropout": (1, 2), "CastLike": (1,),
    "QuantizeLinear": (1, 2), "DequantizeLinear": (1, 2), "QLinearConv": (1, 2, 3, 4, 5, 6, 7, 8),
    "QLinearMatMul": (1, 2, 4, 5, 6, 7), "ConvInteger": (1, 2, 3), "MatMulInteger": (2, 3),
    "LSTM": (1, 2, 3, 7), "GRU": (1, 2, 3), "RNN": (1, 2, 3),  # weights: packed once, at load
}
F32 = np.float32


converts = registrar(CONVERTERS)


# -- shared helpers ------------------------------------------------------------------------------------------------
def _x(ctx: Context, node: onnx.NodeProto) -> Value:
    return ctx.value(node.input[0])


def _ints(a: Any, n: int, fill: int) -> tuple[int, ...]:
    return tuple(int(v) for v in a) if a is not None and len(a) else (fill,) * n


def _in_ir_order(vals: list, rank: int, channels_last: bool) -> list:
    """Reorder a per-ONNX-axis list into the order of the IR tensor's axes."""
    return [vals[a] for a in cl_perm(rank)] if channels_last else list(vals)


def _broadcast(ctx: Context, names: list[str], keep_dtypes: bool = False) -> tuple[list[str], bool]:
    """IR operands of an element-wise op with numpy broadcasting, choosing channels-last when a runtime operand
    already is and every other runtime operand can follow (constants are broadcast and permuted to match)."""
    vals = [ctx.value(n) for n in names]
    rank = max(v.rank for v in vals)
    dyn = [v for v in vals if not v.is_const]
    cl = any(v.channels_last for v in dyn) and all(v.rank == rank or math.prod(v.shape) == 1 for v in dyn)
    # constants take the element type of the runtime operands (float32 unless the op works on integers or bools)
    dtype = ctx.graph.tensors[dyn[0].ir].dtype if dyn and not keep_dtypes else F32
    irs = []
    for n, v in zip(names, vals, strict=True):
        if v.is_const:
            irs.append(ctx.const_ir(v.const.astype(v.const.dtype if keep_dtypes else dtype), n, cl, rank))
        else:  # a size-1 runtime operand of lower rank broadcasts the same in either layout
            irs.append(ctx.ir(n, cl and v.rank == rank))
    return irs, cl


def _elementwise(ctx: Context, node: onnx.NodeProto, op: str, names: list[str], out: str,
                 attrs: dict[str, Any] | None = None, keep_dtypes: bool = False) -> None:
    irs, cl = _broadcast(ctx, names, keep_dtypes)
    ctx.bind(out, ctx.emit(op, irs, attrs, out, _label(node)), cl)


def _label(node: onnx.NodeProto) -> str:
    return node_name(node)


def _unary(ctx: Context, node: onnx.NodeProto, op: str, attrs: dict[str, Any] | None = None) -> str:
    x = _x(ctx, node)
    ctx.emit_value(op, [ctx.ir(node.input[0], x.channels_last)], attrs, node, channels_last=x.channels_last)
    return node.output[0]


def _reshape(ctx: Context, node: onnx.NodeProto, shape: tuple[int, ...], out_index: int = 0) -> None:
    ctx.emit_value("RESHAPE", [ctx.ir(node.input[0])], {"shape": tuple(shape)}, node, out_index)


def _slice_value(ctx: Context, src: str, params: list[tuple[int, int, int]], out: str, label: str) -> None:
    """SLICE a value (any layout) with per-ONNX-axis (start, end, step); the result keeps the layout."""
    v = ctx.value(src)
    p = _in_ir_order(params, v.rank, v.channels_last)
    attrs = {"starts": tuple(s for s, _, _ in p), "ends": tuple(e for _, e, _ in p), "steps": tuple(s for *_, s in p)}
    ctx.bind(out, ctx.emit("SLICE", [ctx.ir(src, v.channels_last)], attrs, out, label), v.channels_last)


# -- element-wise ----------------------------------------------------------------------------------------------------
_BINARY = {"Add": "ADD", "Sub": "SUB", "Mul": "MUL", "Div": "DIV", "Pow": "POW", "PRelu": "PRELU"}
_VARIADIC = {"Max": "MAXIMUM", "Min": "MINIMUM", "Sum": "ADD", "Mean": "ADD"}
_UNARY = {"Relu": "RELU", "Sigmoid": "SIGMOID", "Tanh": "TANH", "Exp": "EXP", "Sqrt": "SQRT", "Abs": "ABS",
          "Neg": "NEG", "HardSwish": "HARD_SWISH", "Erf": "ERF", "Log": "LOG", "Floor": "FLOOR", "Ceil": "CEIL",
          "Not": "NOT"}


@converts(*_BINARY)
def _binary(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    _elementwise(ctx, node, _BINARY[node.op_type], list(node.input[:2]), node.output[0])


@converts(*_VARIADIC)
def _variadic(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    names = [n for n in node.input if n]
    acc, out = names[0], node.output[0]
    for k, name in enumerate(names[1:]):
        target = out if k == len(names) - 2 and node.op_type != "Mean" else f"{out}/partial{k}"
        _elementwise(ctx, node, _VARIADIC[node.op_type], [acc, name], target)
        acc = target
    if node.op_type == "Mean":
        ctx.set_const(f"{out}/count", np.array(1.0 / len(names), F32))
        _elementwise(ctx, node, "MUL", [acc, f"{out}/count"], out)
    elif len(names) == 1:
        ctx.alias(out, acc)


@converts(*_UNARY)
def _simple_unary(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    _unary(ctx, node, _UNARY[node.op_type])


@converts("Reciprocal")
def _reciprocal(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    ctx.set_const(f"{node.output[0]}/one", np.array(1.0, F32))
    _elementwise(ctx, node, "DIV", [f"{node.output[0]}/one", node.input[0]], node.output[0])


@converts("LeakyRelu")
def _leaky_relu(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    _unary(ctx, node, "LEAKY_RELU", {"alpha": float(a.get("alpha", 0.01))})


@converts("HardSigmoid")
def _hard_sigmoid(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    _unary(ctx, node, "HARD_SIGMOID", {"alpha": float(a.get("alpha", 0.2)), "beta": float(a.get("beta", 0.5))})


def _scalar(ctx: Context, node: onnx.NodeProto, arr: np.ndarray, what: str) -> float:
    if arr.size != 1:  # exporters sometimes write shape [1] where ONNX says scalar: accept any single value
        raise ctx.unsupported(node, f"{what} must be a single value, got shape {list(arr.shape)}")
    return float(arr.reshape(-1)[0])


@converts("Clip")
def _clip(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    if ctx.opset < 11:
        lo, hi = float(a.get("min", -math.inf)), float(a.get("max", math.inf))
    else:
        lo_arr, hi_arr = ctx.opt_const(node, 1, "min"), ctx.opt_const(node, 2, "max")
        lo = -math.inf if lo_arr is None else _scalar(ctx, node, lo_arr, "min")
        hi = math.inf if hi_arr is None else _scalar(ctx, node, hi_arr, "max")
    lo = min(lo, hi)  # ONNX: with min > max every value becomes max
    _unary(ctx, node, "CLIP", {"min": lo, "max": hi})


_RUNTIME_FLOATS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))
_CAST_CODES = {np.dtype(d): c for c, d in CAST_DTYPES.items() if d != np.float16}


@converts("Identity", "Dropout", "Cast", "CastLike")
def _passthrough(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    if node.op_type in ("Cast", "CastLike"):
        _cast(ctx, node, a)
        return
    if node.op_type == "Dropout" and ctx.has(node, 2) and bool(ctx.const(node, 2, "training_mode")):
        raise ctx.unsupported(node, "training-mode Dropout")
    ctx.alias(node.output[0], node.input[0])
    if node.op_type == "Dropout" and len(node.output) > 1 and node.output[1]:
        ctx.set_const(node.output[1], np.ones(ctx.shape(node.input[0]), bool))


def _cast(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    if node.op_type == "Cast":
        to = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(a["to"]))
    else:  # CastLike: only the template's dtype matters; runtime tensors are float32
        template = ctx.value(node.input[1])
        to = template.const.dtype if template.is_const else np.dtype(np.float32)
    x = _x(ctx, node)
    src = ctx.graph.tensors[x.ir].dtype if not x.is_const else x.const.dtype
    if x.is_const:
        ctx.set_const(node.output[0], x.const.astype(to))
        return
    target = np.dtype(F32) if to in _RUNTIME_FLOATS else to
    if target not in _CAST_CODES:
        raise ctx.unsupported(node, f"cast to {to} (targets: float16/32/64 as float32, int8, uint8, int32, "
                              "int64, bool)")
    y = node.input[0] if target == src else _unary(ctx, node, "CAST", {"to": _CAST_CODES[target]})
    if to == np.float16:  # computed in float32, with float16's rounding and range: there and back
        label = _label(node)
        half = ctx.emit("CAST", [ctx.ir(y)], {"to": CastTo.FLOAT16}, f"{node.output[0]}/f16", label)
        y = ctx.emit("CAST", [half], {"to": CastTo.FLOAT32}, f"{node.output[0]}/f16_f32", label)
        ctx.bind(node.output[0], y, False)
    elif y == node.input[0]:
        ctx.alias(node.output[0], node.input[0])


@converts("BatchNormalization")
def _batch_norm(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    if a.get("training_mode", 0) or any(node.output[1:]):
        raise ctx.unsupported(node, "training-mode BatchNormalization (only inference is supported)")
    scale, bias, mean, var = (ctx.const(node, i).astype(np.float64) for i in range(1, 5))
    mul = scale / np.sqrt(var + a.get("epsilon", 1e-5))
    add = bias - mean * mul
    per_channel = (-1,) + (1,) * (_x(ctx, node).rank - 2)
    out = node.output[0]
    ctx.set_const(f"{out}/bn_scale", mul.astype(F32).reshape(per_channel))
    ctx.set_const(f"{out}/bn_shift", add.astype(F32).reshape(per_channel))
    _elementwise(ctx, node, "MUL", [node.input[0], f"{out}/bn_scale"], f"{out}/bn_mul")
    _elementwise(ctx, node, "ADD", [f"{out}/bn_mul", f"{out}/bn_shift"], out)


# -- convolution and dense ---------------------------------------------------------------------------------------------
def _spatial_in(ctx: Context, node: onnx.NodeProto) -> tuple[str, tuple[int, ...]]:
    """The input as a 4-D NHWC IR tensor (a 1-D signal [N,C,L] becomes [N,1,L,C]) and its ONNX spatial dims."""
    x = _x(ctx, node)
    if x.rank == 4:
        return ctx.ir(node.input[0], True), x.shape[2:]
    if x.rank == 3:
        n, c, length = x.shape
        ir = ctx.emit("RESHAPE", [ctx.ir(node.input[0], True)], {"shape": (n, 1, length, c)},
                      node.input[0] + "/as_2d")
        return ir, x.shape[2:]
    raise ctx.unsupported(node, f"only 1-D and 2-D spatial inputs are supported, got rank {x.rank}")


def _spatial_out(ctx: Context, node: onnx.NodeProto, op: str, inputs: list[str], attrs: dict[str, Any],
                 one_d: bool) -> None:
    if not one_d:
        ctx.emit_value(op, inputs, attrs, node, channels_last=True)
        return
    y = ctx.emit(op, inputs, attrs, node.output[0] + "/2d", _label(node))
    n, _, length, c = ctx.graph.tensors[y].shape
    ctx.emit_value("RESHAPE", [y], {"shape": (n, length, c)}, node, channels_last=True)


def _lift(vals: tuple[int, ...] | list[int], fill: int) -> tuple[int, ...]:
    """Spatial parameters of a 1-D op as those of a 2-D op over a height-1 image."""
    return (fill, *vals) if len(vals) == 1 else tuple(vals)


def _lift_pads(pads: list[int]) -> tuple[int, ...]:
    return (0, pads[0], 0, pads[1]) if len(pads) == 2 else tuple(pads)


def _spatial_attrs(a: dict, n: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    return _ints(a.get("strides"), n, 1), _ints(a.get("dilations"), n, 1)


@converts("Conv")
def _conv(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    w = ctx.const(node, 1, "the weights (input 1)").astype(F32)
    if w.ndim not in (3, 4):
        raise ctx.unsupported(node, f"only 1-D and 2-D convolutions are supported (weights of rank {w.ndim})")
    x_ir, spatial = _spatial_in(ctx, node)
    n = w.ndim - 2
    strides, dilations = _spatial_attrs(a, n)
    pads = explicit_pads(a, spatial, w.shape[2:], strides, dilations)
    if n == 1:
        w = w[:, :, None, :]
    inputs = [x_ir, ctx.mark_quantized(ctx.const_ir(w.transpose(0, 2, 3, 1), node.input[1] + "/ohwi"),
                                       node.input[1], 0)]
    if ctx.has(node, 2):
        b = ctx.const_ir(ctx.const(node, 2, "the bias (input 2)").astype(F32), node.input[2])
        inputs.append(ctx.mark_quantized(b, node.input[2], 0))
    attrs = {"strides": _lift(strides, 1), "dilations": _lift(dilations, 1), "pads": _lift_pads(pads),
             "groups": int(a.get("group", 1))}
    _spatial_out(ctx, node, "CONV_2D", inputs, attrs, n == 1)


def _conv_transpose_pads(a: dict, spatial: tuple[int, ...], kernel: tuple[int, ...], strides: tuple[int, ...],
                         dilations: tuple[int, ...], out_pad: list[int]) -> list[int]:
    """Explicit pads of a ConvTranspose from pads, auto_pad or output_shape (extra output_padding when needed)."""
    n = len(kernel)
    auto = a.get("auto_pad", "NOTSET")
    target = list(a["output_shape"])[-n:] if a.get("output_shape") else None
    if target is None and auto in ("SAME_UPPER", "SAME_LOWER"):
        target = [spatial[i] * strides[i] for i in range(n)]
    if target is None:
        return [0] * (2 * n) if auto == "VALID" else [int(p) for p in a.get("pads", [0] * (2 * n))]
    begins, ends = [], []
    for i in range(n):
        full = strides[i] * (spatial[i] - 1) + out_pad[i] + (kernel[i] - 1) * dilations[i] + 1
        total = full - int(target[i])
        if total < 0:  # asked for more rows than the transposed conv yields: extend with output_padding
            out_pad[i] -= total
            total = 0
        # onnx's specification (and its reference): SAME_UPPER puts the odd pixel at the end, anything else
        # (including NOTSET with output_shape) at the beginning.
        small, big = total // 2, total - total // 2
        begins.append(small if auto == "SAME_UPPER" else big)
        ends.append(big if auto == "SAME_UPPER" else small)
    return begins + ends


@converts("ConvTranspose")
def _conv_transpose(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    w = ctx.const(node, 1, "the weights (input 1)").astype(F32)
    if w.ndim not in (3, 4):
        raise ctx.unsupported(node, f"only 1-D and 2-D transposed convolutions are supported (rank {w.ndim})")
    x_ir, spatial = _spatial_in(ctx, node)
    n, groups = w.ndim - 2, int(a.get("group", 1))
    strides, dilations = _spatial_attrs(a, n)
    out_pad = list(_ints(a.get("output_padding"), n, 0))
    pads = _conv_transpose_pads(a, spatial, w.shape[2:], strides, dilations, out_pad)
    if n == 1:
        w = w[:, :, None, :]
    cin, cout_g, kh, kw = w.shape
    # ONNX [Cin, Cout/g, KH, KW] -> ours [Cout, KH, KW, Cin/g], group by group
    w = w.reshape(groups, cin // groups, cout_g, kh, kw).transpose(0, 2, 3, 4, 1).reshape(-1, kh, kw, cin // groups)
    inputs = [x_ir, ctx.mark_quantized(ctx.const_ir(w, node.input[1] + "/ohwi"), node.input[1],
                                       1 if groups == 1 else -2)]
    if ctx.has(node, 2):
        b = ctx.const_ir(ctx.const(node, 2, "the bias (input 2)").astype(F32), node.input[2])
        inputs.append(ctx.mark_quantized(b, node.input[2], 0))
    attrs = {"strides": _lift(strides, 1), "dilations": _lift(dilations, 1), "pads": _lift_pads(pads),
             "groups": groups, "output_padding": _lift(out_pad, 0)}
    _spatial_out(ctx, node, "CONV_TRANSPOSE_2D", inputs, attrs, n == 1)


def _add_bias(ctx: Context, node: onnx.NodeProto, y_name: str, c: str, beta: float) -> None:
    """out = y + beta * C, with C constant or runtime."""
    out = node.output[0]
    if beta != 1.0:
        if ctx.is_const(c):
            ctx.set_const(f"{out}/beta_c", (ctx.value(c).const * beta).astype(F32))
        else:
            ctx.set_const(f"{out}/beta", np.array(beta, F32))
            _elementwise(ctx, node, "MUL", [c, f"{out}/beta"], f"{out}/beta_c")
        c = f"{out}/beta_c"
    _elementwise(ctx, node, "ADD", [y_name, c], out)


@converts("Gemm")
def _gemm(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    alpha, beta = float(a.get("alpha", 1.0)), float(a.get("beta", 1.0))
    out, label = node.output[0], _label(node)
    a_ir = ctx.ir(node.input[0])
    if a.get("transA", 0):
        a_ir = ctx.emit("TRANSPOSE", [a_ir], {"perm": (1, 0)}, node.input[0] + "/T")
    has_c = ctx.has(node, 2) and beta != 0.0
    b_name = node.input[1]
    if ctx.is_const(b_name):  # FULLY_CONNECTED with alpha folded into the weights and beta * C as its bias
        b = ctx.value(b_name).const.astype(np.float64)
        w = (b if a.get("transB", 0) else b.T) * alpha
        inputs = [a_ir, ctx.const_ir(w.astype(F32), b_name + "/fc")]
        if alpha == 1.0:
            ctx.mark_quantized(inputs[1], b_name, 0 if a.get("transB", 0) else 1)
        if has_c:  # the bias is built at full length: an empty weight may still claim 2^31 output columns
            ctx.check_size(node, (w.shape[0],), "the bias", MAX_CONST_ELEMENTS)
        c_vec = _bias_vector(ctx, node.input[2], w.shape[0], beta) if has_c else None
        if c_vec is not None:
            inputs.append(ctx.const_ir(c_vec, node.input[2] + "/fc_bias"))
            if beta == 1.0:
                ctx.mark_quantized(inputs[2], node.input[2], 0)
        if not has_c or c_vec is not None:
            ctx.emit_value("FULLY_CONNECTED", inputs, None, node)
            return
        y = ctx.emit("FULLY_CONNECTED", inputs, None, f"{out}/ab", label)
    else:
        b_ir = ctx.ir(b_name)
        if a.get("transB", 0):
            b_ir = ctx.emit("TRANSPOSE", [b_ir], {"perm": (1, 0)}, b_name + "/T")
        y = ctx.emit("MATMUL", [a_ir, b_ir], None, f"{out}/ab", label)
        if alpha != 1.0:
            y = ctx.emit("MUL", [y, ctx.const_ir(np.array(alpha, F32), f"{out}/alpha")], None, f"{out}/ab", label)
    ctx.bind(f"{out}/ab", y, False)
    if has_c:
        _add_bias(ctx, node, f"{out}/ab", node.input[2], beta)
    else:
        ctx.alias(out, f"{out}/ab")


def _bias_vector(ctx: Context, c: str, n: int, beta: float) -> np.ndarray | None:
    """beta * C as a [N] bias when C is constant and broadcasts along rows only."""
    v = ctx.value(c)
    if not v.is_const or v.const.ndim > 2 or (v.const.ndim == 2 and v.const.shape[0] != 1):
        return None
    if v.const.size not in (1, n):
        return None
    return np.broadcast_to(v.const.reshape(-1) * beta, (n,)).astype(F32)


def _matmul_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """numpy.matmul's result shape: a 1-D operand gains a unit dim that the result drops again."""
    a2 = a if len(a) > 1 else (1, *a)
    b2 = b if len(b) > 1 else (*b, 1)
    out = (*np.broadcast_shapes(a2[:-2], b2[:-2]), a2[-2], b2[-1])
    if len(b) == 1:
        out = out[:-1]
    if len(a) == 1:
        out = out[:-2] + out[-1:] if len(b) > 1 else out[:-1]
    return out


@converts("MatMul")
def _matmul(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    va, vb = ctx.value(node.input[0]), ctx.value(node.input[1])
    out_shape = _matmul_shape(va.shape, vb.shape)
    a_ir = ctx.ir(node.input[0])
    if va.rank == 1:
        a_ir = ctx.emit("RESHAPE", [a_ir], {"shape": (1, va.shape[0])}, node.input[0] + "/row")
    if vb.is_const and vb.rank == 2:
        w = ctx.mark_quantized(ctx.const_ir(vb.const.T.astype(F32), node.input[1] + "/fc"), node.input[1], 1)
        y = ctx.emit("FULLY_CONNECTED", [a_ir, w], None, node.output[0], _label(node))
    else:
        b_ir = ctx.ir(node.input[1])
        if vb.rank == 1:
            b_ir = ctx.emit("RESHAPE", [b_ir], {"shape": (vb.shape[0], 1)}, node.input[1] + "/col")
        y = ctx.emit("MATMUL", [a_ir, b_ir], None, node.output[0], _label(node))
    if ctx.graph.tensors[y].shape != tuple(out_shape):
        y = ctx.emit("RESHAPE", [y], {"shape": tuple(out_shape)}, node.output[0], _label(node))
    ctx.bind(node.output[0], y, False)


# -- pooling and reductions --------------------------------------------------------------------------------------------
@converts("MaxPool", "AveragePool")
def _pool(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    if len(node.output) > 1 and node.output[1]:
        raise ctx.unsupported(node, "the indices output of MaxPool is not supported")
    kernel = tuple(int(k) for k in a["kernel_shape"])
    x_ir, spatial = _spatial_in(ctx, node)
    if len(kernel) != len(spatial):
        raise ctx.unsupported(node, f"kernel_shape {kernel} does not match the input's spatial rank")
    strides, dilations = _spatial_attrs(a, len(kernel))
    pads = explicit_pads(a, spatial, kernel, strides, dilations)
    same = a.get("auto_pad", "NOTSET") in ("SAME_UPPER", "SAME_LOWER")
    attrs = {"kernel": _lift(kernel, 1), "strides": _lift(strides, 1), "dilations": _lift(dilations, 1),
             "pads": _lift_pads(pads), "ceil_mode": bool(a.get("ceil_mode", 0)) and not same,
             "count_include_pad": bool(a.get("count_include_pad", 0))}
    op = "MAX_POOL_2D" if node.op_type == "MaxPool" else "AVERAGE_POOL_2D"
    _spatial_out(ctx, node, op, [x_ir], attrs, len(kernel) == 1)


@converts("GlobalAveragePool", "GlobalMaxPool")
def _global_pool(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    x = _x(ctx, node)
    if x.rank < 3:
        raise ctx.unsupported(node, f"input of rank {x.rank} has no spatial axes")
    op = "MEAN" if node.op_type == "GlobalAveragePool" else "REDUCE_MAX"
    attrs = {"axes": tuple(range(1, x.rank - 1)), "keepdims": True}
    ctx.emit_value(op, [ctx.ir(node.input[0], True)], attrs, node, channels_last=True)


_REDUCE = {"ReduceMean": "MEAN", "ReduceMax": "REDUCE_MAX", "ReduceSum": "REDUCE_SUM", "ReduceMin": "REDUCE_MAX",
           "ReduceL1": "REDUCE_SUM", "ReduceL2": "REDUCE_SUM", "ReduceSumSquare": "REDUCE_SUM"}


@converts(*_REDUCE)
def _reduce(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    x = _x(ctx, node)
    axes = ctx.opt_const(node, 1, "axes") if len(node.input) > 1 else a.get("axes")
    if axes is None or len(axes) == 0:
        if a.get("noop_with_empty_axes", 0):
            ctx.alias(node.output[0], node.input[0])
            return
        axes = range(x.rank)
    keep = bool(a.get("keepdims", 1))
    cl = x.channels_last and keep
    ir_axes = tuple(sorted(ir_axis(int(ax), x.rank, cl) for ax in axes))
    src, op, out = ctx.ir(node.input[0], cl), _REDUCE[node.op_type], node.output[0]
    # min = -max(-x); L1 = sum|x|; L2 = sqrt(sum x^2)
    pre = {"ReduceMin": "NEG", "ReduceL1": "ABS"}.get(node.op_type)
    if pre:
        src = ctx.emit(pre, [src], None, f"{out}/pre", _label(node))
    if node.op_type in ("ReduceL2", "ReduceSumSquare"):
        src = ctx.emit("MUL", [src, src], None, f"{out}/sq", _label(node))
    post = {"ReduceMin": "NEG", "ReduceL2": "SQRT"}.get(node.op_type)
    y = ctx.emit(op, [src], {"axes": ir_axes, "keepdims": keep}, out + "/r" if post else out, _label(node))
    if post:
        y = ctx.emit(post, [y], None, out, _label(node))
    ctx.bind(out, y, cl)


@converts("Softmax")
def _softmax(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    x = _x(ctx, node)
    axis = int(a.get("axis", 1 if ctx.opset < 13 else -1)) % max(x.rank, 1)
    if ctx.opset >= 13 or axis == x.rank - 1:
        ir_ax = ir_axis(axis, x.rank, x.channels_last)
        ctx.emit_value("SOFTMAX", [ctx.ir(node.input[0], x.channels_last)], {"axis": ir_ax}, node,
                       channels_last=x.channels_last)
        return
    # Before opset 13 the input is coerced to 2-D at `axis` and softmax runs over the flattened tail.
    out = node.output[0]
    flat = (math.prod(x.shape[:axis]), math.prod(x.shape[axis:]))
    y = ctx.emit("RESHAPE", [ctx.ir(node.input[0])], {"shape": flat}, f"{out}/2d", _label(node))
    y = ctx.emit("SOFTMAX", [y], {"axis": 1}, f"{out}/softmax2d", _label(node))
    ctx.emit_value("RESHAPE", [y], {"shape": x.shape}, node)


# -- data movement -----------------------------------------------------------------------------------------------------
@converts("Reshape")
def _reshape_op(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    x = _x(ctx, node)
    shape = ctx.const(node, 1, "the target shape")
    try:
        target = reshape_target(x.shape, shape, bool(a.get("allowzero", 0)))
    except ValueError as e:
        raise ctx.unsupported(node, str(e)) from None
    _reshape(ctx, node, target)


@converts("Flatten")
def _flatten(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    x = _x(ctx, node)
    axis = int(a.get("axis", 1))
    axis = axis + x.rank if axis < 0 else axis
    _reshape(ctx, node, (math.prod(x.shape[:axis]), math.prod(x.shape[axis:])))


@converts("Squeeze")
def _squeeze(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    x = _x(ctx, node)
    axes = ctx.opt_const(node, 1, "axes") if len(node.input) > 1 else a.get("axes")
    drop = {i for i, d in enumerate(x.shape) if d == 1} if axes is None else {int(v) % x.rank for v in axes}
    _reshape(ctx, node, tuple(d for i, d in enumerate(x.shape) if i not in drop))


@converts("Unsqueeze")
def _unsqueeze(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    x = _x(ctx, node)
    axes = ctx.const(node, 1, "axes") if len(node.input) > 1 else a["axes"]
    rank = x.rank + len(axes)
    new = {int(v) % rank for v in axes}
    dims = iter(x.shape)
    _reshape(ctx, node, tuple(1 if i in new else next(dims) for i in range(rank)))


@converts("Transpose")
def _transpose(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    x = _x(ctx, node)
    perm = [int(p) for p in a.get("perm", range(x.rank - 1, -1, -1))]
    # Compose with the stored layout: ONNX axis perm[i] lives at IR axis where[perm[i]].
    where = cl_inverse(x.rank) if x.channels_last else tuple(range(x.rank))
    ir_perm = tuple(where[p] for p in perm)
    src = ctx.ir(node.input[0], x.channels_last)
    if ir_perm == tuple(range(x.rank)):
        ctx.bind(node.output[0], src, False)
    else:
        ctx.emit_value("TRANSPOSE", [src], {"perm": ir_perm}, node)


@converts("Concat")
def _concat(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    names = [n for n in node.input if n and math.prod(ctx.shape(n)) > 0] or [node.input[0]]  # drop empty parts
    vals = [ctx.value(n) for n in names]
    rank = vals[0].rank
    axis = int(a["axis"]) % rank
    cl = rank >= 3 and any(v.channels_last for v in vals if not v.is_const)
    irs = [ctx.ir(n, cl) for n in names]
    if len(irs) == 1:
        ctx.bind(node.output[0], irs[0], cl)
        return
    ctx.emit_value("CONCATENATION", irs, {"axis": ir_axis(axis, rank, cl)}, node, channels_last=cl)


@converts("Slice")
def _slice(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    x = _x(ctx, node)
    if ctx.opset < 10:
        starts, ends, axes, steps = a["starts"], a["ends"], a.get("axes"), None
    else:
        starts, ends = ctx.const(node, 1, "starts"), ctx.const(node, 2, "ends")
        axes, steps = ctx.opt_const(node, 3, "axes"), ctx.opt_const(node, 4, "steps")
    params = slice_params(x.shape, starts, ends, axes, steps)
    _slice_value(ctx, node.input[0], params, node.output[0], _label(node))


@converts("Split")
def _split(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    x = _x(ctx, node)
    axis = int(a.get("axis", 0)) % x.rank
    dim = x.shape[axis]
    sizes = ctx.opt_const(node, 1, "split") if len(node.input) > 1 else a.get("split")
    if sizes is None or len(sizes) == 0:
        parts = len(node.output)
        if int(a.get("num_outputs", parts)) != parts:
            raise ValueError(f"num_outputs = {a['num_outputs']}, but the node has {parts} outputs")
        chunk = -(-dim // parts)
        sizes = [min(chunk, dim - k * chunk) for k in range(parts)]
    offset = 0
    for out, size in zip(node.output, sizes, strict=True):
        params = [(0, d, 1) for d in x.shape]
        params[axis] = (offset, offset + int(size), 1)
        offset += int(size)
        if out:
            _slice_value(ctx, node.input[0], params, out, _label(node))


_PAD_MODES = {"constant": PadMode.CONSTANT, "reflect": PadMode.REFLECT, "edge": PadMode.EDGE}


@converts("Pad")
def _pad(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    x = _x(ctx, node)
    mode = a.get("mode", "constant")
    if mode not in _PAD_MODES:
        raise ctx.unsupported(node, f"pad mode {mode!r}")
    if ctx.opset < 11:
        pads, value = list(a["pads"]), float(a.get("value", 0.0))
    else:
        pads = [int(p) for p in ctx.const(node, 1, "pads")]
        v = ctx.opt_const(node, 2, "constant_value")
        value = 0.0 if v is None or v.size == 0 else float(v.reshape(-1)[0])
    axes = ctx.opt_const(node, 3, "axes")
    axes = list(range(x.rank)) if axes is None else [int(ax) % x.rank for ax in axes]
    begin, end = [0] * x.rank, [0] * x.rank
    for k, ax in enumerate(axes):
        begin[ax], end[ax] = int(pads[k]), int(pads[k + len(axes)])
    src, out = node.input[0], node.output[0]
    if min(begin + end) < 0:  # negative pads crop
        params = [(max(-b, 0), d - max(-e, 0), 1) for b, e, d in zip(begin, end, x.shape, strict=True)]
        _slice_value(ctx, src, params, f"{out}/crop", _label(node))
        src, begin, end = f"{out}/crop", [max(b, 0) for b in begin], [max(e, 0) for e in end]
    if not any(begin + end):
        ctx.alias(out, src)
        return
    cl = ctx.value(src).channels_last
    ir_pads = tuple(_in_ir_order(begin, x.rank, cl) + _in_ir_order(end, x.rank, cl))
    ctx.bind(out, ctx.emit("PAD", [ctx.ir(src, cl)], {"pads": ir_pads, "mode": _PAD_MODES[mode], "value": value},
                           out, _label(node)), cl)


@converts("Gather")
def _gather(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    x = _x(ctx, node)
    axis = int(a.get("axis", 0)) % x.rank
    if not ctx.is_const(node.input[1]):  # run-time indices (token ids into an embedding table, ...)
        src = ctx.ir(node.input[0], dtype=None)
        ctx.emit_value("GATHER", [src, ctx.ir(node.input[1], dtype=None)], {"axis": axis}, node)
        return
    idx = ctx.const(node, 1, "the indices").astype(np.int64)
    idx = np.where(idx < 0, idx + x.shape[axis], idx).astype(np.int32)
    cl = x.channels_last and idx.ndim == 1  # rank unchanged: the layout can stay
    inputs = [ctx.ir(node.input[0], cl, dtype=None), ctx.const_ir(idx, node.input[1] + "/i32")]
    ctx.emit_value("GATHER", inputs, {"axis": ir_axis(axis, x.rank, cl)}, node, channels_last=cl)


@converts("Expand")
def _expand(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    x = _x(ctx, node)
    shape = np.broadcast_shapes(x.shape, tuple(int(d) for d in ctx.const(node, 1, "the shape")))
    if shape == x.shape:
        ctx.alias(node.output[0], node.input[0])
        return
    ctx.check_size(node, shape, "the expanded result")
    ctx.emit_value("EXPAND", [ctx.ir(node.input[0], dtype=None)], {"shape": tuple(int(d) for d in shape)}, node)


@converts("Tile")
def _tile(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    x = _x(ctx, node)
    repeats = [int(r) for r in ctx.const(node, 1, "repeats")]
    if len(repeats) != x.rank or not all(1 <= r <= MAX_CONCAT for r in repeats):
        raise ValueError(f"repeats {repeats} must be {x.rank} values in [1, {MAX_CONCAT}]")
    ctx.check_size(node, tuple(d * r for d, r in zip(x.shape, repeats, strict=True)), "the tiled result")
    src = ctx.ir(node.input[0], x.channels_last)
    for ax, r in enumerate(repeats):
        if r != 1:
            src = ctx.emit("CONCATENATION", [src] * r, {"axis": ir_axis(ax, x.rank, x.channels_last)},
                           f"{node.output[0]}/tile{ax}", _label(node))
    ctx.bind(node.output[0], src, x.channels_last)


@converts("DepthToSpace")
def _depth_to_space(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    mode = DepthToSpaceMode.CRD if a.get("mode", "DCR") == "CRD" else DepthToSpaceMode.DCR
    attrs = {"block": int(a["blocksize"]), "mode": mode}
    ctx.emit_value("DEPTH_TO_SPACE", [ctx.ir(node.input[0], True)], attrs, node, channels_last=True)


# -- Resize ------------------------------------------------------------------------------------------------------
_COORD = {"half_pixel": CoordMode.HALF_PIXEL, "align_corners": CoordMode.ALIGN_CORNERS,
          "asymmetric": CoordMode.ASYMMETRIC, "pytorch_half_pixel": CoordMode.PYTORCH_HALF_PIXEL,
          "tf_half_pixel_for_nn": CoordMode.TF_HALF_PIXEL_FOR_NN, "half_pixel_symmetric": CoordMode.HALF_PIXEL}
_NEAREST = {"round_prefer_floor": NearestMode.ROUND_PREFER_FLOOR, "round_prefer_ceil": NearestMode.ROUND_PREFER_CEIL,
            "floor": NearestMode.FLOOR, "ceil": NearestMode.CEIL}


def _resize_inputs(ctx: Context, node: onnx.NodeProto, a: dict) -> tuple[np.ndarray | None, np.ndarray | None]:
    """(scales, sizes) over every axis of the input, from whichever form this op version uses."""
    if node.op_type == "Upsample" or ctx.opset < 11:
        scales = ctx.const(node, 1, "scales") if len(node.input) > 1 else np.asarray(a["scales"])
        return np.asarray(scales, np.float64), None
    scales = ctx.opt_const(node, 2, "scales")
    sizes = ctx.opt_const(node, 3, "sizes")
    scales = None if scales is None or scales.size == 0 else scales.astype(np.float64)
    sizes = None if sizes is None or sizes.size == 0 else sizes.astype(np.int64)
    rank = _x(ctx, node).rank
    axes = [int(ax) % rank for ax in a.get("axes", range(rank))]
    if scales is not None:
        full = np.ones(rank)
        full[axes] = scales
        return full, None
    if sizes is None:
        raise ctx.unsupported(node, "neither scales nor sizes given")
    full_sizes = np.array(_x(ctx, node).shape, np.int64)
    full_sizes[axes] = sizes
    return None, full_sizes


def _legacy_nearest(ctx: Context, node: onnx.NodeProto, scales: np.ndarray) -> str:
    """Upsample and Resize-10 (as onnxruntime runs them): truncate when enlarging, round up when shrinking."""
    hw = scales[2:]
    if np.any(hw < 1) and np.any(hw > 1):
        raise ctx.unsupported(node, "opset < 11 nearest resize that enlarges one axis and shrinks the other")
    return "ceil" if np.any(hw < 1) else "floor"


@converts("Resize", "Upsample")
def _resize(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    x = _x(ctx, node)
    mode = a.get("mode", "nearest")
    if mode not in ("nearest", "linear", "bilinear"):
        raise ctx.unsupported(node, f"{mode} interpolation (only nearest and linear are supported)")
    if a.get("antialias", 0) and mode != "nearest":
        raise ctx.unsupported(node, "antialiased resizing")
    legacy = node.op_type == "Upsample" or ctx.opset < 11
    coord_name = "asymmetric" if legacy else a.get("coordinate_transformation_mode", "half_pixel")
    if coord_name not in _COORD:
        raise ctx.unsupported(node, f"coordinate_transformation_mode {coord_name!r}")
    if x.rank != 4:
        raise ctx.unsupported(node, f"only 4-D inputs resize (rank {x.rank})")
    scales, sizes = _resize_inputs(ctx, node, a)
    nearest = _legacy_nearest(ctx, node, scales) if legacy else a.get("nearest_mode", "round_prefer_floor")
    n, c, h, w = x.shape
    coord_scales: tuple[float, float] = (0.0, 0.0)  # 0: the coordinate map uses out/in
    if scales is not None:
        if scales[0] != 1 or scales[1] != 1:
            raise ctx.unsupported(node, f"resizing the batch or channel axis (scales {scales.tolist()})")
        # output size rounds down, computed from the float32 scale the model holds
        coord_scales = (float(np.float32(scales[2])), float(np.float32(scales[3])))
        out_hw = (math.floor(h * coord_scales[0]), math.floor(w * coord_scales[1]))
    else:
        policy = a.get("keep_aspect_ratio_policy", "stretch")
        if policy != "stretch":
            ratio = [sizes[2] / h, sizes[3] / w]
            s = min(ratio) if policy == "not_larger" else max(ratio)
            out_hw = (int(s * h + 0.5), int(s * w + 0.5))
            coord_scales = (s, s)
        else:
            out_hw = (int(sizes[2]), int(sizes[3]))
        if sizes[0] != n or sizes[1] != c:
            raise ctx.unsupported(node, f"resizing the batch or channel axis (sizes {sizes.tolist()})")
    if coord_name == "half_pixel_symmetric" and scales is not None and any(
            o != d * s for o, d, s in zip(out_hw, (h, w), coord_scales, strict=True)):
        raise ctx.unsupported(node, "half_pixel_symmetric with a fractional output size")
    attrs = {"size": out_hw, "scales": coord_scales, "mode": ResizeMode.NEAREST if mode == "nearest" else
             ResizeMode.BILINEAR, "coord": _COORD[coord_name], "nearest": _NEAREST[nearest]}
    ctx.emit_value("RESIZE", [ctx.ir(node.input[0], True)], attrs, node, channels_last=True)


# -- transformer blocks, comparisons, logic ----------------------------------------------------------------------------
@converts("LayerNormalization")
def _layer_norm(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    x = _x(ctx, node)
    axis = int(a.get("axis", -1)) % x.rank
    norm = x.shape[axis:]
    ins = [ctx.ir(node.input[0])]
    for k, what in ((1, "scale"), (2, "bias")):
        if ctx.has(node, k):
            v = ctx.value(node.input[k])
            if v.rank > len(norm):  # ONNX allows leading 1s: drop them
                if v.is_const:
                    ins.append(ctx.const_ir(v.const.astype(F32).reshape(v.shape[v.rank - len(norm):]), node.input[k]))
                    continue
                raise ctx.unsupported(node, f"a run-time {what} of rank {v.rank} > {len(norm)}")
            ins.append(ctx.ir(node.input[k]))
        else:
            ins.append("")
    while ins and ins[-1] == "":
        ins.pop()
    eps = float(a.get("epsilon", 1e-5))
    ctx.emit_value("LAYER_NORM", ins, {"axis": axis, "epsilon": eps}, node)
    if any(node.output[1:]):
        _layer_norm_stats(ctx, node, ctx.ir(node.input[0]), tuple(range(axis, x.rank)), eps)


def _layer_norm_stats(ctx: Context, node: onnx.NodeProto, x: str, axes: tuple[int, ...], eps: float) -> None:
    """LayerNormalization's optional outputs Mean and InvStdDev = 1 / sqrt(var + epsilon), over the normalized
    axes with them kept as 1s (rarely asked for outside training, but part of the op)."""
    label, base = _label(node), node.output[0]
    reduce = {"axes": axes, "keepdims": True}
    mean = ctx.emit("MEAN", [x], reduce, node.output[1] or f"{base}/mean", label)
    dev = ctx.emit("SUB", [x, mean], None, f"{base}/dev", label)
    var = ctx.emit("MEAN", [ctx.emit("MUL", [dev, dev], None, f"{base}/dev2", label)], reduce, f"{base}/var", label)
    std = ctx.emit("SQRT", [ctx.emit("ADD", [var, ctx.const_ir(np.full((), eps, F32), f"{base}/eps")], None,
                                     f"{base}/var_eps", label)], None, f"{base}/std", label)
    inv = ctx.emit("DIV", [ctx.const_ir(np.ones((), F32), f"{base}/one"), std], None,
                   node.output[2] if len(node.output) > 2 and node.output[2] else f"{base}/inv_std", label)
    if node.output[1]:
        ctx.bind(node.output[1], mean, False)
    if len(node.output) > 2 and node.output[2]:
        ctx.bind(node.output[2], inv, False)


@converts("Gelu")
def _gelu(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    mode = GeluMode.TANH if a.get("approximate", "none") == "tanh" else GeluMode.EXACT
    _unary(ctx, node, "GELU", {"mode": mode})


_COMPARE = {"Equal": "EQUAL", "Less": "LESS", "Greater": "GREATER", "LessOrEqual": "LESS_EQUAL",
            "GreaterOrEqual": "GREATER_EQUAL", "And": "AND", "Or": "OR", "Xor": "XOR"}


@converts(*_COMPARE)
def _compare(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    _elementwise(ctx, node, _COMPARE[node.op_type], list(node.input[:2]), node.output[0])


@converts("Where")
def _where(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    c, x, y = node.input[:3]
    vals = [ctx.value(n) for n in (x, y)]
    dyn = [v for v in vals if not v.is_const]
    dt = ctx.graph.tensors[dyn[0].ir].dtype if dyn else np.result_type(*(v.const.dtype for v in vals))
    for n, v in ((x, vals[0]), (y, vals[1])):  # constant branches in the element type of the run-time one
        if v.is_const:
            ctx.set_const(n + "/as_" + dt.name, v.const.astype(dt))
    names = [c] + [n + "/as_" + dt.name if v.is_const else n for n, v in ((x, vals[0]), (y, vals[1]))]
    _elementwise(ctx, node, "WHERE", names, node.output[0], keep_dtypes=True)


_REDUCTIONS = {"none": ScatterReduction.NONE, "add": ScatterReduction.ADD, "mul": ScatterReduction.MUL,
               "max": ScatterReduction.MAX, "min": ScatterReduction.MIN}


@converts("ScatterND")
def _scatter_nd(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    red = a.get("reduction", "none")
    if red not in _REDUCTIONS:
        raise ctx.unsupported(node, f"reduction {red!r}")
    data = ctx.ir(node.input[0], dtype=None)
    dt = ctx.graph.tensors[data].dtype
    upd = ctx.ir(node.input[2], dtype=dt)
    ctx.emit_value("SCATTER_ND", [data, ctx.ir(node.input[1], dtype=None), upd], {"reduction": _REDUCTIONS[red]},
                   node)


# -- recurrent layers --------------------------------------------------------------------------------------------------
_ACTIVATIONS = {"sigmoid": Activation.SIGMOID, "tanh": Activation.TANH, "relu": Activation.RELU,
                "affine": Activation.AFFINE, "leakyrelu": Activation.LEAKY_RELU,
                "thresholdedrelu": Activation.THRESHOLDED_RELU, "scaledtanh": Activation.SCALED_TANH,
                "hardsigmoid": Activation.HARD_SIGMOID, "elu": Activation.ELU, "softsign": Activation.SOFTSIGN,
                "softplus": Activation.SOFTPLUS}
_USES_ALPHA = {Activation.AFFINE, Activation.LEAKY_RELU, Activation.THRESHOLDED_RELU, Activation.SCALED_TANH,
               Activation.HARD_SIGMOID, Activation.ELU}
_USES_BETA = {Activation.AFFINE, Activation.SCALED_TANH, Activation.HARD_SIGMOID}
_DIRECTIONS = {"forward": Direction.FORWARD, "reverse": Direction.REVERSE, "bidirectional": Direction.BIDIRECTIONAL}


def _rnn_activations(ctx: Context, node: onnx.NodeProto, a: dict, per_dir: int, d: int) -> dict[str, Any]:
    """activations with one alpha and beta each: ONNX lists alphas (betas) only for the activations that take one,
    in order (onnxruntime's reading); a missing value is the activation's default."""
    names = list(a.get("activations") or [])
    if not names:
        return {}
    if len(names) == per_dir and d == 2:  # the forward list serves both directions
        names = names * 2
    if len(names) != per_dir * d:
        raise ctx.unsupported(node, f"{len(names)} activations, expected {per_dir * d}")
    codes = []
    for n in names:
        key = (n.decode() if isinstance(n, bytes) else str(n)).lower()
        if key not in _ACTIVATIONS:
            raise ctx.unsupported(node, f"activation {n!r}")
        codes.append(_ACTIVATIONS[key])
    alphas, betas = list(a.get("activation_alpha") or []), list(a.get("activation_beta") or [])
    defaults = recurrent.DEFAULT_PARAMS
    al, be = [], []
    for c in codes:
        da, db = defaults.get(c, (0.0, 0.0))
        al.append(float(alphas.pop(0)) if c in _USES_ALPHA and alphas else da)
        be.append(float(betas.pop(0)) if c in _USES_BETA and betas else db)
    return {"activations": tuple(int(c) for c in codes), "activation_alpha": tuple(al), "activation_beta": tuple(be)}


@converts("LSTM", "GRU", "RNN")
def _recurrent(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    op = node.op_type
    direction = str(a.get("direction", "forward"))
    if direction not in _DIRECTIONS:
        raise ctx.unsupported(node, f"direction {direction!r}")
    d = 2 if direction == "bidirectional" else 1
    layout = int(a.get("layout", 0))
    label, out = _label(node), node.output[0] if node.output and node.output[0] else f"{_label(node)}/y"
    x = ctx.ir(node.input[0])
    if layout:  # batch-major [B, T, I] -> [T, B, I]
        x = ctx.emit("TRANSPOSE", [x], {"perm": (1, 0, 2)}, f"{out}/x_tbi", label)
    ins = [x] + [ctx.const_ir(ctx.const(node, k, what).astype(F32), node.input[k]) for k, what in
                 ((1, "the weights W"), (2, "the recurrence R"))]
    ins.append(ctx.const_ir(ctx.const(node, 3, "the bias B").astype(F32), node.input[3]) if ctx.has(node, 3) else "")
    ins.append(ctx.ir(node.input[4], dtype=np.int32) if ctx.has(node, 4) else "")
    n_states = 2 if op == "LSTM" else 1
    for k in range(5, 5 + n_states):
        if not ctx.has(node, k):
            ins.append("")
            continue
        s = ctx.ir(node.input[k])
        if layout:  # [B, D, H] -> [D, B, H]
            s = ctx.emit("TRANSPOSE", [s], {"perm": (1, 0, 2)}, f"{node.input[k]}/dbh", label)
        ins.append(s)
    attrs: dict[str, Any] = {"direction": _DIRECTIONS[direction],
                             **_rnn_activations(ctx, node, a, {"LSTM": 3, "GRU": 2, "RNN": 1}[op], d)}
    if a.get("clip") is not None:
        attrs["clip"] = float(a["clip"])
    if op == "LSTM":
        ins.append(ctx.const_ir(ctx.const(node, 7, "the peepholes P").astype(F32), node.input[7])
                   if ctx.has(node, 7) else "")
        if a.get("input_forget", 0):
            attrs["coupling"] = Coupling.FORGET_FROM_INPUT
    if op == "GRU":
        attrs["linear_before_reset"] = bool(a.get("linear_before_reset", 0))
    while ins[-1] == "":
        ins.pop()
    names = [ctx.graph.unique_name(f"{out}/{k}") for k in ("y", "y_h", "y_c")[:3 if op == "LSTM" else 2]]
    try:
        ctx.graph.add_node(op, ins, attrs, name=label, outputs=names)
    except ValueError as e:
        raise ctx.unsupported(node, str(e)) from None
    for k, onnx_name in enumerate(node.output[:len(names)]):
        if not onnx_name:
            continue
        y = names[k]
        if layout:  # Y [T, D, B, H] -> [B, T, D, H]; Y_h, Y_c [D, B, H] -> [B, D, H]
            perm = (2, 0, 1, 3) if k == 0 else (1, 0, 2)
            y = ctx.emit("TRANSPOSE", [y], {"perm": perm}, f"{onnx_name}/batch_major", label)
        ctx.bind(onnx_name, y, False)
