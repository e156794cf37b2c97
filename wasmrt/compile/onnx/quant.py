"""ONNX quantization ops -> the IR's QUANTIZE / DEQUANTIZE around float ops; wasmrt/compile/qdq.py then makes int8
ops of them (python_ref/README.md, "Quantized int8").

- QDQ models (onnxruntime quantize_static): QuantizeLinear / DequantizeLinear on activations become QUANTIZE /
  DEQUANTIZE; a DequantizeLinear of constant integers (weights, int32 biases) folds to the float constant it stands
  for, and its parameters are kept (Context.qsources) so the weights keep their integers.
- QOperator models: QLinearConv, QLinearMatMul and onnxruntime's com.microsoft QLinearAdd, QLinearMul,
  QLinearSigmoid, QLinearLeakyRelu, QLinearAveragePool, QLinearGlobalAveragePool, QLinearConcat, QLinearSoftmax
  and QGemm are imported as DEQUANTIZE -> the float op -> QUANTIZE.
- ConvInteger / MatMulInteger compute their exact integer sums as a float conv / matmul of x - x_zp and w - w_zp
  (the int32 result then goes through Cast and a scale multiply, which stay float).
- DynamicQuantizeLinear quantizes with a range measured at run time, which has no static int8 form: its output is
  the float input itself with scale 1 and zero point 0, so the following ConvInteger/MatMulInteger + scale multiply
  compute the float product with the int8 weights (more precisely than onnxruntime, which also rounds x).
uint8 tensors are int8 inside (values and zero points minus 128), which changes no result.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import helper

from python_ref.quant import QuantParams, dequantize
from wasmrt.compile.onnx import ops
from wasmrt.compile.onnx.context import Context
from wasmrt.compile.onnx.ops import OpConverter

CONVERTERS: dict[str, OpConverter] = {}  # this module's converters; importer.py merges them with ops.py's

MS_DOMAIN = "com.microsoft"
F32 = np.float32


def params(ctx: Context, node: onnx.NodeProto, scale_i: int, zp_i: int, axis: int | None = None,
           per_tensor: bool = False) -> tuple[QuantParams, np.dtype]:
    """The (scale, zero point) inputs of a quantization op as our parameters (uint8 shifted to int8) and the
    integer type they describe (ONNX: uint8 when the zero point is absent)."""
    scale = np.asarray(ctx.const(node, scale_i, "the scale"), np.float32).reshape(-1)
    zp = ctx.const(node, zp_i, "the zero point") if ctx.has(node, zp_i) else np.zeros(1, np.uint8)
    dtype = np.dtype(zp.dtype)
    if dtype not in (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int32)):
        raise ctx.unsupported(node, f"{dtype} quantization (wasmrt reads int8, uint8 and int32)")
    z = np.asarray(zp, np.int64).reshape(-1) - (128 if dtype == np.uint8 else 0)
    if scale.size > 1 and per_tensor:
        raise ctx.unsupported(node, "per-channel quantization of a run-time tensor")
    return QuantParams.make(scale, z, -1 if scale.size == 1 else int(axis if axis is not None else 1)), dtype


def _layout(ctx: Context, name: str) -> bool:
    return ctx.value(name).channels_last


def quantize_linear(ctx: Context, node: onnx.NodeProto, a: dict[str, Any]) -> None:
    if a.get("block_size", 0):
        raise ctx.unsupported(node, "blocked quantization")
    q, _ = params(ctx, node, 1, 2, per_tensor=True)
    x = node.input[0]
    cl = _layout(ctx, x)
    ctx.emit_quantized("QUANTIZE", [ctx.ir(x, cl)], node, q, cl)


def dequantize_linear(ctx: Context, node: onnx.NodeProto, a: dict[str, Any]) -> None:
    x = node.input[0]
    q, _ = params(ctx, node, 1, 2, a.get("axis", 1), per_tensor=True)
    ir = ctx.ir(x, _layout(ctx, x), dtype=None)
    if ctx.graph.tensors[ir].quant != q:
        raise ctx.unsupported(node, f"DequantizeLinear with parameters {q} of a tensor quantized with "
                                    f"{ctx.graph.tensors[ir].quant}")
    ctx.emit_value("DEQUANTIZE", [ir], None, node, channels_last=_layout(ctx, x))


CONVERTERS["DequantizeLinear"] = dequantize_linear
CONVERTERS["QuantizeLinear"] = quantize_linear


def fold_dequantize(ctx: Context, node: onnx.NodeProto, a: dict[str, Any]) -> bool:
    """DequantizeLinear of a constant: the float constant, remembering the integers' parameters. False for other
    nodes (folded generically)."""
    if node.op_type != "DequantizeLinear" or node.domain not in ("", "ai.onnx"):
        return False
    x = np.asarray(ctx.const(node, 0, "the integers"))
    if x.dtype not in (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int32)):
        raise ctx.unsupported(node, f"{x.dtype} quantization (wasmrt reads int8, uint8 and int32)")
    q, _ = params(ctx, node, 1, 2, a.get("axis", 1) % max(x.ndim, 1))
    if not q.per_tensor and x.shape[q.axis] != q.scale.size:
        raise ctx.unsupported(node, f"{q.scale.size} scales for axis {q.axis} of shape {list(x.shape)}")
    ctx.set_const(node.output[0], dequantize(x.astype(np.int64) - (128 if x.dtype == np.uint8 else 0), q))
    ctx.qsources[node.output[0]] = q
    return True


# -- QOperator: DEQUANTIZE -> float op -> QUANTIZE ------------------------------------------------------------
def _float_input(ctx: Context, node: onnx.NodeProto, x_i: int, s_i: int, z_i: int, tag: str, axis: int = 0) -> str:
    """The real value of a quantized operand, as an ONNX name in ctx: constants dequantized (parameters kept;
    per-channel scales on `axis`, negative counting from the end), run-time tensors through DEQUANTIZE."""
    name = f"{node.output[0]}/{tag}"
    x = node.input[x_i]
    if ctx.is_const(x):
        v = np.asarray(ctx.value(x).const)
        q, _ = params(ctx, node, s_i, z_i, axis % max(v.ndim, 1))
        ctx.set_const(name, dequantize(v.astype(np.int64) - (128 if v.dtype == np.uint8 else 0), q))
        ctx.qsources[name] = q
        return name
    q, _ = params(ctx, node, s_i, z_i, per_tensor=True)
    ir = ctx.ir(x, _layout(ctx, x), dtype=None)
    if ctx.graph.tensors[ir].quant != q:
        raise ctx.unsupported(node, f"input {x!r} is quantized with {ctx.graph.tensors[ir].quant}, the node says {q}")
    ctx.bind(name, ctx.emit("DEQUANTIZE", [ir], None, name), _layout(ctx, x))
    return name


def _float_op(ctx: Context, node: onnx.NodeProto, op_type: str, inputs: list[str], attrs: dict[str, Any]) -> str:
    out = f"{node.output[0]}/float"
    synthetic = helper.make_node(op_type, inputs, [out], name=node.name or out)
    ops.CONVERTERS[op_type](ctx, synthetic, attrs)
    return out


def _quantized_output(ctx: Context, node: onnx.NodeProto, y: str, s_i: int, z_i: int) -> None:
    q, _ = params(ctx, node, s_i, z_i, per_tensor=True)
    cl = _layout(ctx, y)
    ctx.emit_quantized("QUANTIZE", [ctx.ir(y, cl)], node, q, cl)


def _qlinear(op_type: str, operands: list[tuple[int, ...]], out: tuple[int, int], extra: tuple[int, ...] = ()
             ) -> Any:
    """operands: (x, scale, zero point[, per-channel axis]) input indices; out: (scale, zero point) of y (absent
    in QGemm: a float output)."""
    def convert(ctx: Context, node: onnx.NodeProto, a: dict[str, Any]) -> None:
        ins = [_float_input(ctx, node, *o[:3], f"x{k}", *o[3:]) for k, o in enumerate(operands)]
        for i in extra:  # an int32 bias in units of x_scale * w_scale
            if ctx.has(node, i):
                ins.append(_bias(ctx, node, i))
        attrs = {k: v for k, v in a.items() if k != "channels_last"}
        y = _float_op(ctx, node, op_type, ins, attrs)
        if ctx.has(node, out[0]):
            _quantized_output(ctx, node, y, *out)
        else:
            ctx.alias(node.output[0], y)
    return convert


def _bias(ctx: Context, node: onnx.NodeProto, i: int) -> str:
    sx = np.float32(np.asarray(ctx.const(node, 1)).reshape(-1)[0])
    sw = np.asarray(ctx.const(node, 4), np.float32).reshape(-1)
    unit = np.multiply(sx, sw, dtype=np.float32)
    b = np.asarray(ctx.const(node, i, "the bias"), np.int64)
    name = f"{node.output[0]}/bias"
    ctx.set_const(name, (b * unit.astype(np.float64)).astype(np.float32))
    ctx.qsources[name] = QuantParams.make(unit, 0, -1 if unit.size == 1 else 0)
    return name


CONVERTERS["QLinearConv"] = _qlinear("Conv", [(0, 1, 2), (3, 4, 5)], (6, 7), extra=(8,))
CONVERTERS["QLinearMatMul"] = _qlinear("MatMul", [(0, 1, 2), (3, 4, 5, -1)], (6, 7))
MS_OPS = {
    "QLinearAdd": _qlinear("Add", [(0, 1, 2), (3, 4, 5)], (6, 7)),
    "QLinearMul": _qlinear("Mul", [(0, 1, 2), (3, 4, 5)], (6, 7)),
    "QLinearSigmoid": _qlinear("Sigmoid", [(0, 1, 2)], (3, 4)),
    "QLinearLeakyRelu": _qlinear("LeakyRelu", [(0, 1, 2)], (3, 4)),
    "QLinearAveragePool": _qlinear("AveragePool", [(0, 1, 2)], (3, 4)),
    "QLinearGlobalAveragePool": _qlinear("GlobalAveragePool", [(0, 1, 2)], (3, 4)),
    "QLinearSoftmax": _qlinear("Softmax", [(0, 1, 2)], (3, 4)),
    "QGemm": None,  # below: the weights' channel axis depends on transB
}


def _qgemm(ctx: Context, node: onnx.NodeProto, a: dict[str, Any]) -> None:
    axis = 0 if a.get("transB", 0) else -1
    _qlinear("Gemm", [(0, 1, 2), (3, 4, 5, axis)], (7, 8), extra=(6,))(ctx, node, a)


def _qlinear_concat(ctx: Context, node: onnx.NodeProto, a: dict[str, Any]) -> None:
    n = (len(node.input) - 2) // 3
    ins = [_float_input(ctx, node, 2 + 3 * k, 3 + 3 * k, 4 + 3 * k, f"x{k}") for k in range(n)]
    _quantized_output(ctx, node, _float_op(ctx, node, "Concat", ins, a), 0, 1)


MS_OPS["QLinearConcat"] = _qlinear_concat
MS_OPS["QGemm"] = _qgemm
CONVERTERS.update(MS_OPS)


# -- integer ops without requantization ---------------------------------------------------------------------
def _integer_operand(ctx: Context, node: onnx.NodeProto, x_i: int, z_i: int, tag: str) -> str:
    """x - x_zp as float (exact integers): constants directly, run-time tensors from DynamicQuantizeLinear (float
    already, zero point 0) as they are."""
    x = node.input[x_i]
    zp = np.asarray(ctx.const(node, z_i, "the zero point"), np.int64) if ctx.has(node, z_i) else np.zeros(1, np.int64)
    if ctx.is_const(x):
        name = f"{node.output[0]}/{tag}"
        v = np.asarray(ctx.value(x).const, np.int64)
        zp = zp.reshape((-1,) + (1,) * (v.ndim - 1)) if zp.size > 1 else zp.reshape(())
        ctx.set_const(name, (v - zp).astype(np.float32))
        return name
    if x in ctx.dynamic and not np.any(zp):
        return x
    raise ctx.unsupported(node, f"input {x!r} is an integer tensor computed at run time (only "
                                "DynamicQuantizeLinear outputs and constants are supported)")


def _integer(op_type: str) -> Any:
    def convert(ctx: Context, node: onnx.NodeProto, a: dict[str, Any]) -> None:
        ins = [_integer_operand(ctx, node, 0, 2, "a"), _integer_operand(ctx, node, 1, 3, "b")]
        ctx.alias(node.output[0], _float_op(ctx, node, op_type, ins, a))
    return convert


def _dynamic_quantize(ctx: Context, node: onnx.NodeProto, a: dict[str, Any]) -> None:
    ctx.alias(node.output[0], node.input[0])
    ctx.dynamic.add(node.output[0])
    ctx.set_const(node.output[1], np.array(1.0, np.float32))
    ctx.set_const(node.output[2], np.array(0, np.uint8))


CONVERTERS["ConvInteger"] = _integer("Conv")
CONVERTERS["MatMulInteger"] = _integer("MatMul")
CONVERTERS["DynamicQuantizeLinear"] = _dynamic_quantize
