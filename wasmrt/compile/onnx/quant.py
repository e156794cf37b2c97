"""ONNX quantization ops -> the IR's QUANTIZE / DEQUANTIZE around float ops; wasmrt/compile/qdq.py then makes int8
ops of them (python_ref/README.md, "Quantized int8").

- QDQ models (onnxruntime quantize_static): QuantizeLinear / DequantizeLinear on activations become QUANTIZE /
  DEQUANTIZE; a DequantizeLinear of constant integers (weights, int32 biases) folds to the float constant it stands
  for, and its parameters are kept (Context.qsources) so the weights keep their integers.
- QOperator models: QLinearConv, QLinearMatMul and onnxruntime's com.microsoft QLinearAdd, QLinearMul,
  QLinearSigmoid, QLinearLeakyRelu, QLinearAveragePool, QLinearGlobalAveragePool, QLinearConcat, QLinearSoftmax
  and QGemm are imported as DEQUANTIZE -> the float op -> QUANTIZE.
- Data movement on a QOperator model's uint8 between QLinear ops (MaxPool, Reshape, Flatten, Transpose, Concat of
  equal parameters, Resize nearest, Pad with an integer fill, ...) is DEQUANTIZE -> the float op -> QUANTIZE with
  the input's parameters, which qdq.py makes the int8 op.
- Dynamic quantization, exact to the spec: DynamicQuantizeLinear expands into float ops that compute its uint8
  values, scale and zero point bit for bit (python_ref.quant.dynamic_quantize; round half to even as
  f32(f32(v + 1.5 * 2^23) - 1.5 * 2^23)), the integers held in float32. ConvInteger / MatMulInteger compute their
  exact integer sums as a float conv / matmul of x - x_zp and w - w_zp (exact while the sums stay below 2^24, i.e.
  K <= 514 for any uint8 x int8 values; beyond, float32 rounds them relatively by 2^-24). onnxruntime's
  com.microsoft DynamicQuantizeMatMul, MatMulIntegerToFloat and DynamicQuantizeLSTM (unrolled over its time steps,
  its input and each step's state quantized as onnxruntime does) expand likewise.
uint8 tensors are int8 inside (values and zero points minus 128), which changes no result.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import helper

from python_ref.quant import DYNAMIC_QMAX, QuantParams, dequantize
from wasmrt.compile.onnx import ops
from wasmrt.compile.onnx.context import Context, node_name
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


# -- dynamic quantization: expanded into float ops that compute the integers exactly -------------------------------
RNE_MAGIC = 12582912.0  # 1.5 * 2^23: f32(f32(v + M) - M) is v rounded half to even for |v| < 2^22


class _Expansion:
    """ONNX nodes standing for one node, converted one by one by the importer (so constants fold and layouts
    follow as for the model's own nodes); names are the node's output name plus a suffix."""

    def __init__(self, ctx: Context, node: onnx.NodeProto, base: str = "") -> None:
        self.ctx, self.node, self.base = ctx, node, base or node.output[0]
        self._convert = ctx.convert_node
        self._n = 0

    def const(self, value: Any, dtype: Any = F32) -> str:
        self._n += 1
        name = f"{self.base}/c{self._n}"
        self.ctx.set_const(name, np.asarray(value, dtype))
        return name

    def op(self, op_type: str, inputs: list[str], out: str = "", n_out: int = 1, **attrs: Any) -> Any:
        """Convert one ONNX node; its output name(s) (out: the first one's name, else a fresh one)."""
        outs = []
        for k in range(n_out):
            self._n += 1
            outs.append(out if out and k == 0 else f"{self.base}/{op_type.lower()}{self._n}")
        self._convert(self.ctx, helper.make_node(op_type, inputs, outs, name=f"{node_name(self.node)}/{op_type}"
                                                 f"{self._n}", **attrs))
        return outs[0] if n_out == 1 else outs

    def rne(self, v: str) -> str:
        """v rounded half to even (|v| < 2^22 here: v is at most 255.x in magnitude)."""
        return self.op("Sub", [self.op("Add", [v, self.const(RNE_MAGIC)]), self.const(RNE_MAGIC)])

    def dynamic_quantize(self, x: str, outs: tuple[str, str, str] = ("", "", "")) -> tuple[str, str, str]:
        """ONNX DynamicQuantizeLinear of x as float ops (python_ref.quant.dynamic_quantize, bit for bit): the
        quantized values and the zero point as float32 integers, the scale; each name in outs when given."""
        zero, qmax = self.const(0.0), self.const(float(DYNAMIC_QMAX))
        hi = self.op("Max", [self.op("ReduceMax", [x], keepdims=0), zero])
        lo = self.op("Min", [self.op("ReduceMin", [x], keepdims=0), zero])
        span = self.op("Sub", [hi, lo])
        scale = self.op("Where", [self.op("Equal", [span, zero]), self.const(1.0), self.op("Div", [span, qmax])],
                        out=outs[1])
        zp = self.rne(self.op("Clip", [self.op("Neg", [self.op("Div", [lo, scale])]), zero, qmax]))
        if outs[2]:
            zp = self.op("Identity", [zp], out=outs[2])
        y = self.op("Clip", [self.op("Add", [self.rne(self.op("Div", [x, scale])), zp]), zero, qmax], out=outs[0])
        self.ctx.dynamic.add(y)
        return y, scale, zp

    def integers(self, x_i: int, z_i: int, axis: int = 0) -> str:
        """Input x_i minus its zero point (input z_i) as float32 integers: constants directly (per-channel zero
        points along `axis` of x), run-time tensors from DynamicQuantizeLinear through a SUB."""
        ctx, node = self.ctx, self.node
        x = node.input[x_i]
        if ctx.is_const(x):
            v = np.asarray(ctx.value(x).const, np.int64)
            zp = np.asarray(ctx.const(node, z_i, "the zero point"), np.int64) if ctx.has(node, z_i) else \
                np.zeros(1, np.int64)
            view = [1] * v.ndim
            if zp.size > 1:
                view[axis % v.ndim] = -1
            return self.const((v - zp.reshape(view)).astype(F32))
        if x not in ctx.dynamic:
            raise ctx.unsupported(node, f"input {x!r} is an integer tensor computed at run time (only "
                                        "DynamicQuantizeLinear outputs and constants are supported)")
        return self.op("Sub", [x, node.input[z_i]]) if ctx.has(node, z_i) else x


def _dynamic_quantize(ctx: Context, node: onnx.NodeProto, a: dict[str, Any]) -> None:
    outs = tuple(node.output) + ("",) * (3 - len(node.output))
    _Expansion(ctx, node).dynamic_quantize(node.input[0], (outs[0], outs[1], outs[2]))


def _integer(op_type: str, w_axis: int) -> Any:
    """ConvInteger / MatMulInteger: the exact int32 sums as a float conv / matmul of x - x_zp and w - w_zp
    (integers below 2^24 in magnitude are exact in float32; w_axis: the weights' per-channel axis)."""
    def convert(ctx: Context, node: onnx.NodeProto, a: dict[str, Any]) -> None:
        e = _Expansion(ctx, node)
        e.op(op_type, [e.integers(0, 2), e.integers(1, 3, w_axis)], out=node.output[0], **a)
    return convert


def _scaled_product(e: _Expansion, a: str, b: str, scale_a: str, scale_b: str, bias: str, out: str) -> None:
    """onnxruntime's MatMulIntegerToFloat output: f32(acc * f32(sa * sb)) (+ bias)."""
    acc = e.op("MatMul", [a, b])
    y = e.op("Mul", [acc, e.op("Mul", [scale_a, scale_b])], out="" if bias else out)
    if bias:
        e.op("Add", [y, bias], out=out)


def _dynamic_quantize_matmul(ctx: Context, node: onnx.NodeProto, a: dict[str, Any]) -> None:
    """com.microsoft DynamicQuantizeMatMul(A, B, b_scale, b_zero_point?, bias?): A through DynamicQuantizeLinear,
    then MatMulIntegerToFloat."""
    e = _Expansion(ctx, node)
    qa, sa, za = e.dynamic_quantize(node.input[0])
    a_int = e.op("Sub", [qa, za])
    bias = node.input[4] if ctx.has(node, 4) else ""
    _scaled_product(e, a_int, e.integers(1, 3, -1), sa, node.input[2], bias, node.output[0])


def _matmul_integer_to_float(ctx: Context, node: onnx.NodeProto, a: dict[str, Any]) -> None:
    """com.microsoft MatMulIntegerToFloat(A, B, a_scale, b_scale, a_zero_point?, b_zero_point?, bias?):
    f32(sum (A - za)(B - zb) * f32(a_scale * b_scale)) + bias."""
    e = _Expansion(ctx, node)
    bias = node.input[6] if ctx.has(node, 6) else ""
    _scaled_product(e, e.integers(0, 4), e.integers(1, 5, -1), node.input[2], node.input[3], bias, node.output[0])


CONVERTERS["ConvInteger"] = _integer("Conv", 0)
CONVERTERS["MatMulInteger"] = _integer("MatMul", -1)
CONVERTERS["DynamicQuantizeLinear"] = _dynamic_quantize
MS_OPS["DynamicQuantizeMatMul"] = CONVERTERS["DynamicQuantizeMatMul"] = _dynamic_quantize_matmul
MS_OPS["MatMulIntegerToFloat"] = CONVERTERS["MatMulIntegerToFloat"] = _matmul_integer_to_float


# -- data movement on quantized integers: the parameters pass through ----------------------------------------------
PASS_THROUGH = ("MaxPool", "Reshape", "Transpose", "Flatten", "Squeeze", "Unsqueeze", "Concat", "Resize", "Upsample",
                "Slice", "Split", "Gather", "DepthToSpace", "SpaceToDepth", "Identity", "Expand", "Tile",
                "GlobalMaxPool", "ReduceMax", "Pad")


def on_integers(ctx: Context, node: onnx.NodeProto) -> OpConverter | None:
    """The converter of a default-domain data-movement node whose run-time input is a QOperator model's quantized
    integers (uint8 between QLinear ops): DEQUANTIZE -> the float op -> QUANTIZE with the input's parameters (the
    int8 op once wasmrt/compile/qdq.py has run). None for every other node (the importer's table converts it).
    Every data input must carry the same parameters; Resize only nearest; Pad's constant is an integer of the
    input."""
    op_type = node.op_type
    if op_type not in PASS_THROUGH or node.domain not in ("", "ai.onnx") or op_type not in ops.CONVERTERS:
        return None
    data = [k for k, n in enumerate(node.input[:len(node.input) if op_type == "Concat" else 1])
            if n and n in ctx.values and not ctx.is_const(n)]
    qs = {ctx.graph.tensors[ctx.value(node.input[k]).ir].quant for k in data}
    if qs == {None} or not qs:
        return None
    convert = ops.CONVERTERS[op_type]

    def run(ctx: Context, node: onnx.NodeProto, a: dict[str, Any]) -> None:
        if len(qs) > 1:
            raise ctx.unsupported(node, "inputs quantized with different parameters, or quantized and not")
        q = next(iter(qs))
        if op_type in ("Resize", "Upsample") and a.get("mode", "nearest") != "nearest":
            raise ctx.unsupported(node, f"{a['mode']} {op_type} of quantized integers")
        inputs = list(node.input)
        for k in data:
            x = node.input[k]
            inputs[k] = f"{node.output[0]}/x{k}"
            ctx.bind(inputs[k], ctx.emit("DEQUANTIZE", [ctx.value(x).ir], None, inputs[k]), _layout(ctx, x))
        if op_type == "Pad" and ctx.has(node, 2):  # the fill is an integer of the input: its real value
            fill = np.asarray(ctx.const(node, 2, "the constant value"), np.int64).reshape(-1)[:1]
            inputs[2] = f"{node.output[0]}/fill"
            ctx.set_const(inputs[2], dequantize(fill - (128 if ctx.value(node.input[2]).const.dtype == np.uint8
                                                        else 0), q).reshape(()))
        outs = [f"{o}/float" if o else "" for o in node.output]
        convert(ctx, helper.make_node(op_type, inputs, outs, name=node_name(node)), a)
        for o, f in zip(node.output, outs, strict=True):
            if o:
                cl = _layout(ctx, f)
                (y,) = ctx.graph.add_node("QUANTIZE", [ctx.ir(f, cl)], None, name=node_name(node),
                                          outputs=[ctx.graph.unique_name(o)], quant=[q])
                ctx.bind(o, y, cl)
    return run


# -- com.microsoft DynamicQuantizeLSTM: the recurrence unrolled over the (static) time steps ------------------------
def _dynamic_quantize_lstm(ctx: Context, node: onnx.NodeProto, a: dict[str, Any]) -> None:
    """onnxruntime's DynamicQuantizeLSTM(X, W, R, B?, seq_lens?, h0?, c0?, P?, W_scale, W_zp, R_scale, R_zp): an
    ONNX LSTM (gates i, o, f, c; W [D, I, 4H] and R [D, H, 4H] int8/uint8, per tensor or per column) whose two
    products quantize their float operand as DynamicQuantizeLinear does: the whole input X [T*B, I] once, and
    h_{t-1} [B, H] at every step. Each product is f32(sum (q - zq)(w - zw) * f32(s_q * s_w)); the input product,
    the recurrent one and the biases (W's + R's) add up to the gates. Unrolled into float ops step by step, so the
    graph grows with T."""
    e = _Expansion(ctx, node)
    x = node.input[0]
    if ctx.is_const(x):
        raise ctx.unsupported(node, "a constant input sequence")
    steps, batch, _ = ctx.shape(x)
    hidden = int(a["hidden_size"])
    dirs = {"forward": [False], "reverse": [True], "bidirectional": [False, True]}.get(a.get("direction", "forward"))
    if dirs is None:
        raise ctx.unsupported(node, f"direction {a['direction']!r}")
    nd = len(dirs)
    acts = [s.lower() if isinstance(s, str) else s.decode().lower() for s in a.get("activations", [])]
    if acts and acts != ["sigmoid", "tanh", "tanh"] * nd:
        raise ctx.unsupported(node, f"activations {acts} (the default Sigmoid, Tanh, Tanh only)")
    if ctx.has(node, 4) and not np.all(np.asarray(ctx.const(node, 4, "seq_lens")) == steps):
        raise ctx.unsupported(node, "sequence lengths shorter than the input")
    w, r = (np.asarray(ctx.const(node, i, "the weights"), np.int64) for i in (1, 2))

    def per_dir(i: int, default: float = 0.0) -> np.ndarray:
        v = ctx.const(node, i) if ctx.has(node, i) else np.full(1, default)
        return np.asarray(v, np.float64).reshape(nd if np.size(v) >= nd else 1, -1).repeat(
            1 if np.size(v) >= nd else nd, axis=0)

    ws, wz, rs, rz = per_dir(8, 1.0), per_dir(9), per_dir(10, 1.0), per_dir(11)
    bias = np.asarray(ctx.const(node, 3), F32).reshape(nd, 8 * hidden) if ctx.has(node, 3) else \
        np.zeros((nd, 8 * hidden), F32)
    peep = np.asarray(ctx.const(node, 7), F32).reshape(nd, 3 * hidden) if ctx.has(node, 7) else None
    clip = float(a["clip"]) if "clip" in a else None
    state0 = [node.input[i] if ctx.has(node, i) else e.const(np.zeros((nd, batch, hidden))) for i in (5, 6)]
    i64 = np.int64

    qx, sx, zx = e.dynamic_quantize(e.op("Reshape", [x, e.const([steps * batch, -1], i64)]))
    xi = e.op("Sub", [qx, zx])
    ys, hs, cs = [], [], []
    for d, reverse in enumerate(dirs):
        proj = e.op("MatMul", [xi, e.const(w[d] - wz[d].astype(i64))])
        proj = e.op("Mul", [proj, e.op("Mul", [sx, e.const(ws[d])])])
        proj = e.op("Reshape", [proj, e.const([steps, batch, 4 * hidden], i64)])
        rd, rsd = e.const(r[d] - rz[d].astype(i64)), e.const(rs[d])
        bd = e.const(np.add(bias[d, :4 * hidden], bias[d, 4 * hidden:], dtype=F32))
        h, c = (e.op("Gather", [s, e.const(d, i64)], axis=0) for s in state0)
        out: list[str] = [""] * steps
        for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
            qh, sh, zh = e.dynamic_quantize(h)
            rec = e.op("Mul", [e.op("MatMul", [e.op("Sub", [qh, zh]), rd]), e.op("Mul", [sh, rsd])])
            g = e.op("Add", [e.op("Add", [e.op("Gather", [proj, e.const(t, i64)], axis=0), rec]), bd])
            if clip is not None:
                g = e.op("Clip", [g, e.const(-clip), e.const(clip)])
            g = e.op("Reshape", [g, e.const([batch, 4, hidden], i64)])
            gi, go, gf, gc = (e.op("Gather", [g, e.const(k, i64)], axis=1) for k in range(4))
            if peep is not None:
                gi = e.op("Add", [gi, e.op("Mul", [c, e.const(peep[d, :hidden])])])
                gf = e.op("Add", [gf, e.op("Mul", [c, e.const(peep[d, 2 * hidden:])])])
            i_gate = e.op("Sigmoid", [gi])
            f_gate = e.op("Sub", [e.const(1.0), i_gate]) if a.get("input_forget", 0) else e.op("Sigmoid", [gf])
            c = e.op("Add", [e.op("Mul", [f_gate, c]), e.op("Mul", [i_gate, e.op("Tanh", [gc])])])
            if peep is not None:
                go = e.op("Add", [go, e.op("Mul", [c, e.const(peep[d, hidden:2 * hidden])])])
            h = e.op("Mul", [e.op("Sigmoid", [go]), e.op("Tanh", [c])])
            out[t] = e.op("Reshape", [h, e.const([1, 1, batch, hidden], i64)])
        ys.append(e.op("Concat", out, axis=0))
        hs.append(e.op("Reshape", [h, e.const([1, batch, hidden], i64)]))
        cs.append(e.op("Reshape", [c, e.const([1, batch, hidden], i64)]))
    for k, parts in enumerate((ys, hs, cs)):
        if len(node.output) > k and node.output[k]:
            e.op("Concat", parts, out=node.output[k], axis=1 if k == 0 else 0)


MS_OPS["DynamicQuantizeLSTM"] = CONVERTERS["DynamicQuantizeLSTM"] = _dynamic_quantize_lstm
