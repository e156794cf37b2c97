"""One conversion function per TFLite op: TflOp -> nodes of python_ref/opdefs.py, added through the Context."""

from __future__ import annotations

import math
import struct
from typing import Any

import numpy as np

from python_ref.opdefs import INF, CoordMode, DepthToSpaceMode, NearestMode, PadMode, ResizeMode
from python_ref.quant import QuantParams, dequantize
from wasmrt.compile.registry import registrar
from wasmrt.compile.tflite.context import Context, OpConverter
from wasmrt.compile.tflite.reader import TflOp
from wasmrt.errors import ModelFormatError

CONVERTERS: dict[str, OpConverter] = {}  # this module's converters; importer.py merges every module's table
converts = registrar(CONVERTERS)


# -- shared rules -------------------------------------------------------------------------------------------------
# ActivationFunctionType: NONE, RELU, RELU_N1_TO_1, RELU6, TANH, SIGN_BIT
_CLAMPS = {0: (-INF, INF), 1: (0.0, INF), 2: (-1.0, 1.0), 3: (0.0, 6.0)}
_SAME, _VALID = 0, 1  # tflite.Padding


def fused_act(ctx: Context, op: TflOp) -> dict[str, float]:
    code = op.options.get("FusedActivationFunction", 0)
    if code not in _CLAMPS:
        raise ctx.unsupported(op, f"fused activation {code} (TANH/SIGN_BIT) is not supported")
    lo, hi = _CLAMPS[code]
    return {"act_min": lo, "act_max": hi}


def same_pads(size: tuple[int, ...], kernel: tuple[int, ...], strides: tuple[int, ...],
              dilations: tuple[int, ...] = (1, 1)) -> list[int]:
    """TensorFlow SAME padding as explicit [top, left, bottom, right]; the odd pixel goes to the bottom/right."""
    begins, ends = [], []
    for n, k, s, d in zip(size, kernel, strides, dilations, strict=True):
        total = max((math.ceil(n / s) - 1) * s + (k - 1) * d + 1 - n, 0)
        begins.append(total // 2)
        ends.append(total - total // 2)
    return begins + ends


def window_attrs(ctx: Context, op: TflOp, x: str, kernel: tuple[int, int], dilated: bool = True) -> dict[str, Any]:
    o = op.options
    strides = (o["StrideH"], o["StrideW"])
    dilations = (o.get("DilationHFactor", 1), o.get("DilationWFactor", 1)) if dilated else (1, 1)
    if o["Padding"] == _SAME:
        pads = same_pads(ctx.shape(x)[1:3], kernel, strides, dilations)
    elif o["Padding"] == _VALID:
        pads = [0, 0, 0, 0]
    else:
        raise ModelFormatError(f"{ctx.source}: {op.name} node {ctx.node_name(op)!r}: unknown padding {o['Padding']}")
    attrs: dict[str, Any] = {"strides": strides, "pads": pads}
    if dilated:
        attrs["dilations"] = dilations
    return attrs


def axis_of(ctx: Context, op: TflOp, axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise ModelFormatError(f"{ctx.source}: {op.name} node {ctx.node_name(op)!r}: axis {axis} out of range "
                               f"for rank {rank}")
    return axis % rank


def ints(values: Any) -> list[int]:
    return [int(v) for v in np.asarray(values).reshape(-1)]


def resolve_shape(ctx: Context, op: TflOp, count: int, target: list[int]) -> list[int]:
    """Fill a single -1 of a reshape target from the element count."""
    if target.count(-1) > 1:
        raise ModelFormatError(f"{ctx.source}: RESHAPE node {ctx.node_name(op)!r}: target {target} has several -1")
    known = int(np.prod([d for d in target if d != -1], dtype=np.int64))
    if -1 in target:
        if known == 0 or count % known:
            raise ModelFormatError(f"{ctx.source}: node {ctx.node_name(op)!r}: cannot reshape {count} elements "
                                   f"to {target}")
        target = [count // known if d == -1 else d for d in target]
    return target


def reshape(ctx: Context, op: TflOp, x: str, target: list[int], final: bool = True) -> str:
    count = int(np.prod(ctx.shape(x), dtype=np.int64))
    return ctx.emit(op, "RESHAPE", [x], {"shape": tuple(resolve_shape(ctx, op, count, target))}, final=final)


# -- convolution and dense ----------------------------------------------------------------------------------------
@converts("CONV_2D")
def conv_2d(ctx: Context, op: TflOp) -> None:
    x, w, b = ctx.input(op, 0), ctx.input(op, 1), ctx.input(op, 2, optional=True)
    cin, (_, kh, kw, cg) = ctx.shape(x)[3], ctx.shape(w)
    if cg <= 0 or cin % cg:
        raise ModelFormatError(f"{ctx.source}: CONV_2D node {ctx.node_name(op)!r}: {cin} input channels, "
                               f"weights expect {cg} per group")
    attrs = window_attrs(ctx, op, x, (kh, kw)) | {"groups": cin // cg} | fused_act(ctx, op)
    ctx.emit(op, "CONV_2D", [x, w, b], attrs, final=True)


@converts("DEPTHWISE_CONV_2D")
def depthwise_conv_2d(ctx: Context, op: TflOp) -> None:
    # Weights [1, KH, KW, Cin * multiplier] -> OHWI [Cout, KH, KW, 1]; output channel c reads input c // multiplier
    # in both layouts, so a transpose is all it takes.
    x, w, b = ctx.input(op, 0), ctx.input(op, 1), ctx.input(op, 2, optional=True)
    cin, (_, kh, kw, cout) = ctx.shape(x)[3], ctx.shape(w)
    if cout % cin:
        raise ModelFormatError(f"{ctx.source}: DEPTHWISE_CONV_2D node {ctx.node_name(op)!r}: {cout} output channels "
                               f"is not a multiple of {cin} input channels")
    w_ohwi = ctx.emit(op, "TRANSPOSE", [w], {"perm": (3, 1, 2, 0)})
    qw = ctx.graph.tensors[w].quant
    if qw is not None:  # per-channel scales follow the channels from axis 3 to axis 0
        ctx.graph.tensors[w_ohwi].quant = qw if qw.per_tensor else QuantParams(qw.scale, qw.zero_point, 0)
    attrs = window_attrs(ctx, op, x, (kh, kw)) | {"groups": cin} | fused_act(ctx, op)
    ctx.emit(op, "CONV_2D", [x, w_ohwi, b], attrs, final=True)


def transpose_conv(ctx: Context, op: TflOp, x: str, w: str, b: str, out_hw: tuple[int, int], same: bool,
                   strides: tuple[int, int], act: dict[str, float]) -> None:
    """TFLite transposed convolution (weights [Cout, KH, KW, Cin], no kernel flip) with an exact output size.

    TFLite pads as the forward convolution from out_hw would, then drops whatever falls outside out_hw; leftover
    rows at the bottom/right become output_padding, extra rows to drop become more bottom padding.
    """
    in_hw, k_hw = ctx.shape(x)[1:3], ctx.shape(w)[1:3]
    begins, ends, extra = [], [], []
    for n_in, n_out, k, s in zip(in_hw, out_hw, k_hw, strides, strict=True):
        fwd = math.ceil(n_out / s) if same else (n_out - k + s) // s
        total = max((fwd - 1) * s + k - n_out, 0)
        begin, end = total // 2, total - total // 2
        spare = n_out - ((n_in - 1) * s + k - total)
        begins.append(begin)
        ends.append(end if spare >= 0 else end - spare)
        extra.append(max(spare, 0))
    attrs = {"strides": strides, "pads": begins + ends, "output_padding": tuple(extra)} | act
    ctx.emit(op, "CONV_TRANSPOSE_2D", [x, w, b], attrs, final=True)


@converts("TRANSPOSE_CONV")
def transpose_conv_builtin(ctx: Context, op: TflOp) -> None:
    out_shape = ints(ctx.const(op, 0, "output_shape"))
    w, x, b = ctx.input(op, 1), ctx.input(op, 2), ctx.input(op, 3, optional=True)
    o = op.options
    if o["Padding"] not in (_SAME, _VALID):
        raise ModelFormatError(f"{ctx.source}: TRANSPOSE_CONV node {ctx.node_name(op)!r}: unknown padding")
    if len(out_shape) != 4 or out_shape[3] != ctx.shape(w)[0]:
        raise ModelFormatError(f"{ctx.source}: TRANSPOSE_CONV node {ctx.node_name(op)!r}: output_shape {out_shape} "
                               f"does not match weights {ctx.shape(w)}")
    transpose_conv(ctx, op, x, w, b, (out_shape[1], out_shape[2]), o["Padding"] == _SAME,
                   (o["StrideH"], o["StrideW"]), fused_act(ctx, op))


@converts("Convolution2DTransposeBias")
def mediapipe_transpose_conv_bias(ctx: Context, op: TflOp) -> None:
    # MediaPipe's custom op stores a raw TfLiteTransposeConvParams: int32 padding (C enum TfLitePadding:
    # 1 = SAME, 2 = VALID), stride_width, stride_height. selfie_segmentation.tflite holds 01 00 00 00 02 ... 02 ...
    if len(op.custom_options) < 12:
        raise ModelFormatError(f"{ctx.source}: Convolution2DTransposeBias node {ctx.node_name(op)!r}: "
                               f"custom options of {len(op.custom_options)} bytes, expected 12")
    padding, stride_w, stride_h = struct.unpack_from("<iii", op.custom_options)
    if padding not in (1, 2) or stride_w < 1 or stride_h < 1:
        raise ModelFormatError(f"{ctx.source}: Convolution2DTransposeBias node {ctx.node_name(op)!r}: invalid "
                               f"options padding={padding} strides=({stride_h}, {stride_w})")
    x, w, b = ctx.input(op, 0), ctx.input(op, 1), ctx.input(op, 2, optional=True)
    same = padding == 1
    (h, wd), (kh, kw) = ctx.shape(x)[1:3], ctx.shape(w)[1:3]
    out_hw = (h * stride_h, wd * stride_w) if same else ((h - 1) * stride_h + kh, (wd - 1) * stride_w + kw)
    transpose_conv(ctx, op, x, w, b, out_hw, same, (stride_h, stride_w), {})


@converts("FULLY_CONNECTED")
def fully_connected(ctx: Context, op: TflOp) -> None:
    x, w, b = ctx.input(op, 0), ctx.input(op, 1), ctx.input(op, 2, optional=True)
    if op.options.get("WeightsFormat", 0) != 0:
        raise ctx.unsupported(op, "shuffled weights format")
    k = ctx.shape(w)[1]
    if not op.options.get("KeepNumDims", False) and len(ctx.shape(x)) != 2:
        x = reshape(ctx, op, x, [-1, k], final=False)  # TFLite flattens everything but the last dimension
    ctx.emit(op, "FULLY_CONNECTED", [x, w, b], fused_act(ctx, op), final=True)


@converts("BATCH_MATMUL")
def batch_matmul(ctx: Context, op: TflOp) -> None:
    a, b = ctx.input(op, 0), ctx.input(op, 1)
    for key, name in (("AdjX", "a"), ("AdjY", "b")):
        if op.options.get(key, False):
            t = a if name == "a" else b
            rank = len(ctx.shape(t))
            perm = (*range(rank - 2), rank - 1, rank - 2)
            t = ctx.emit(op, "TRANSPOSE", [t], {"perm": perm})
            a, b = (t, b) if name == "a" else (a, t)
    ctx.emit(op, "MATMUL", [a, b], final=True)


# -- element-wise -------------------------------------------------------------------------------------------------
@converts("ADD", "SUB", "MUL", "DIV")
def binary_with_act(ctx: Context, op: TflOp) -> None:
    ctx.emit(op, op.name, [ctx.input(op, 0), ctx.input(op, 1)], fused_act(ctx, op), final=True)


@converts("MAXIMUM", "MINIMUM", "POW")
def binary(ctx: Context, op: TflOp) -> None:
    ctx.emit(op, op.name, [ctx.input(op, 0), ctx.input(op, 1)], final=True)


@converts("SQUARED_DIFFERENCE")
def squared_difference(ctx: Context, op: TflOp) -> None:
    if ctx.is_quantized(ctx.input(op, 0)):
        raise ctx.unsupported(op, "quantized SQUARED_DIFFERENCE")
    d = ctx.emit(op, "SUB", [ctx.input(op, 0), ctx.input(op, 1)])
    ctx.emit(op, "MUL", [d, d], final=True)


_UNARY = {"RELU": "RELU", "LOGISTIC": "SIGMOID", "TANH": "TANH", "HARD_SWISH": "HARD_SWISH", "EXP": "EXP",
          "SQRT": "SQRT", "ABS": "ABS", "NEG": "NEG"}
_CLIPS = {"RELU6": (0.0, 6.0), "RELU_N1_TO_1": (-1.0, 1.0), "RELU_0_TO_1": (0.0, 1.0)}


@converts(*_UNARY)
def unary(ctx: Context, op: TflOp) -> None:
    x = ctx.input(op, 0)
    if ctx.is_quantized(x) and op.name != "RELU":
        lookup(ctx, op, x, _UNARY[op.name], {})
        return
    ctx.emit(op, _UNARY[op.name], [x], final=True)


def lookup(ctx: Context, op: TflOp, x: str, kind: str, attrs: dict[str, Any]) -> None:
    """A quantized element-wise function: LOOKUP in the table of the float op over every int8 input value."""
    from wasmrt.compile.quantizer import lookup_table

    qy = ctx.quant_of(ctx.model.tensors[op.outputs[0]])
    if qy is None or not qy.per_tensor:
        raise ctx.unsupported(op, "quantized input but the output is not quantized per tensor")
    table = ctx.graph.add_const(f"{ctx.node_name(op)}/table", lookup_table(kind, attrs, ctx.graph.tensors[x].quant, qy))
    ctx.emit(op, "LOOKUP", [x, table], final=True)


@converts(*_CLIPS)
def clip(ctx: Context, op: TflOp) -> None:
    lo, hi = _CLIPS[op.name]
    ctx.emit(op, "CLIP", [ctx.input(op, 0)], {"min": lo, "max": hi}, final=True)


@converts("RSQRT")
def rsqrt(ctx: Context, op: TflOp) -> None:
    if ctx.is_quantized(ctx.input(op, 0)):
        raise ctx.unsupported(op, "quantized RSQRT")
    s = ctx.emit(op, "SQRT", [ctx.input(op, 0)])
    one = ctx.graph.add_const(f"{ctx.node_name(op)}/one", np.float32(1.0))
    ctx.emit(op, "DIV", [one, s], final=True)


@converts("PRELU")
def prelu(ctx: Context, op: TflOp) -> None:
    ctx.emit(op, "PRELU", [ctx.input(op, 0), ctx.input(op, 1)], final=True)


@converts("LEAKY_RELU")
def leaky_relu(ctx: Context, op: TflOp) -> None:
    x, attrs = ctx.input(op, 0), {"alpha": float(op.options.get("Alpha", 0.0))}
    if ctx.is_quantized(x):
        lookup(ctx, op, x, "LEAKY_RELU", attrs)
        return
    ctx.emit(op, "LEAKY_RELU", [x], attrs, final=True)


# -- pooling and reductions ---------------------------------------------------------------------------------------
@converts("MAX_POOL_2D", "AVERAGE_POOL_2D")
def pool(ctx: Context, op: TflOp) -> None:
    x = ctx.input(op, 0)
    kernel = (op.options["FilterHeight"], op.options["FilterWidth"])
    # TFLite's average divides by the number of valid (unpadded) positions: count_include_pad stays False.
    attrs = {"kernel": kernel} | window_attrs(ctx, op, x, kernel, dilated=False) | fused_act(ctx, op)
    ctx.emit(op, op.name, [x], attrs, final=True)


_REDUCTIONS = {"MEAN": "MEAN", "SUM": "REDUCE_SUM", "REDUCE_MAX": "REDUCE_MAX"}


@converts(*_REDUCTIONS)
def reduction(ctx: Context, op: TflOp) -> None:
    x = ctx.input(op, 0)
    rank = len(ctx.shape(x))
    axes = sorted({axis_of(ctx, op, a, rank) for a in ints(ctx.const(op, 1, "axes"))})
    attrs = {"axes": tuple(axes), "keepdims": bool(op.options.get("KeepDims", False))}
    ctx.emit(op, _REDUCTIONS[op.name], [x], attrs, final=True)


@converts("SOFTMAX")
def softmax(ctx: Context, op: TflOp) -> None:
    x = ctx.input(op, 0)
    beta = float(op.options.get("Beta", 1.0))
    if ctx.is_quantized(x):  # exp(-beta * sx * d) tabulated for d = max - x in 0..255
        from wasmrt.compile.quantizer import softmax_table

        n = ctx.shape(x)[-1]
        table = ctx.graph.add_const(f"{ctx.node_name(op)}/exp_table",
                                   softmax_table(beta * float(ctx.graph.tensors[x].quant.s), n))
        ctx.emit(op, "SOFTMAX", [x, table], {"axis": len(ctx.shape(x)) - 1}, final=True)
        return
    if beta != 1.0:  # softmax(beta * x)
        x = ctx.emit(op, "MUL", [x, ctx.graph.add_const(f"{ctx.node_name(op)}/beta", np.float32(beta))])
    ctx.emit(op, "SOFTMAX", [x], {"axis": len(ctx.shape(x)) - 1}, final=True)


# -- data movement ------------------------------------------------------------------------------------------------
@converts("RESHAPE")
def reshape_op(ctx: Context, op: TflOp) -> None:
    x = ctx.input(op, 0)
    shape_input = ctx.tensor(op, 1)
    if shape_input is not None and ctx.graph.const(ctx.input(op, 1)) is not None:
        target = ints(ctx.graph.const(ctx.input(op, 1)))
    elif op.options.get("NewShape"):
        target = list(op.options["NewShape"])
    else:  # the shape comes from a computation we could not fold: trust the recorded output shape
        target = list(ctx.model.tensors[op.outputs[0]].shape)
    reshape(ctx, op, x, target)


@converts("SQUEEZE")
def squeeze(ctx: Context, op: TflOp) -> None:
    x = ctx.input(op, 0)
    shape = ctx.shape(x)
    dims = {axis_of(ctx, op, d, len(shape)) for d in op.options.get("SqueezeDims", [])}
    keep = [n for k, n in enumerate(shape) if not (n == 1 and (not dims or k in dims))]
    reshape(ctx, op, x, keep)


@converts("EXPAND_DIMS")
def expand_dims(ctx: Context, op: TflOp) -> None:
    x = ctx.input(op, 0)
    shape = list(ctx.shape(x))
    (axis,) = ints(ctx.const(op, 1, "axis"))
    shape.insert(axis_of(ctx, op, axis, len(shape) + 1), 1)
    reshape(ctx, op, x, shape)


@converts("SHAPE")
def shape_op(ctx: Context, op: TflOp) -> None:
    # Shapes are static in our graph, so SHAPE is a constant and whatever computes on it folds away.
    out_type = ctx.model.tensors[op.outputs[0]].dtype or np.dtype(np.int32)
    ctx.bind(op, np.array(ctx.shape(ctx.input(op, 0)), dtype=out_type))


@converts("TRANSPOSE")
def transpose(ctx: Context, op: TflOp) -> None:
    x = ctx.input(op, 0)
    rank = len(ctx.shape(x))
    perm = tuple(axis_of(ctx, op, p, rank) for p in ints(ctx.const(op, 1, "perm")))
    ctx.emit(op, "TRANSPOSE", [x], {"perm": perm}, final=True)


@converts("CONCATENATION")
def concatenation(ctx: Context, op: TflOp) -> None:
    xs = [ctx.input(op, k) for k in range(len(op.inputs))]
    axis = axis_of(ctx, op, op.options.get("Axis", 0), len(ctx.shape(xs[0])))
    ctx.emit(op, "CONCATENATION", xs, {"axis": axis} | fused_act(ctx, op), final=True)


def slice_to(ctx: Context, op: TflOp, x: str, bounds: list[slice], drop: set[int]) -> None:
    """SLICE with Python slices (clamped by slice.indices), then drop the `drop` axes with a reshape."""
    shape = ctx.shape(x)
    starts, ends, steps = zip(*(s.indices(n) for s, n in zip(bounds, shape, strict=True)), strict=True)
    y = ctx.emit(op, "SLICE", [x], {"starts": starts, "ends": ends, "steps": steps}, final=not drop)
    if drop:
        out = [len(range(*s.indices(n))) for s, n in zip(bounds, shape, strict=True)]
        reshape(ctx, op, y, [n for k, n in enumerate(out) if k not in drop])


@converts("STRIDED_SLICE")
def strided_slice(ctx: Context, op: TflOp) -> None:
    x = ctx.input(op, 0)
    rank = len(ctx.shape(x))
    begin, end = ints(ctx.const(op, 1, "begin")), ints(ctx.const(op, 2, "end"))
    steps = ints(ctx.const(op, 3, "strides")) if ctx.tensor(op, 3) else [1] * len(begin)
    o = op.options
    if o.get("EllipsisMask", 0) or o.get("NewAxisMask", 0):
        raise ctx.unsupported(op, "ellipsis_mask and new_axis_mask are not supported")
    if 0 in steps:
        raise ModelFormatError(f"{ctx.source}: STRIDED_SLICE node {ctx.node_name(op)!r}: zero stride")
    bounds, drop = [slice(None)] * rank, set()
    for k in range(len(begin)):
        bit = 1 << k
        if o.get("ShrinkAxisMask", 0) & bit:
            start = begin[k] % ctx.shape(x)[k] if -ctx.shape(x)[k] <= begin[k] < ctx.shape(x)[k] else None
            if start is None:
                raise ModelFormatError(f"{ctx.source}: STRIDED_SLICE node {ctx.node_name(op)!r}: index "
                                       f"{begin[k]} out of range on axis {k}")
            bounds[k], drop = slice(start, start + 1, 1), drop | {k}
            continue
        b = None if o.get("BeginMask", 0) & bit else begin[k]
        e = None if o.get("EndMask", 0) & bit else (begin[k] + end[k] if o.get("Offset", False) else end[k])
        bounds[k] = slice(b, e, steps[k])
    slice_to(ctx, op, x, bounds, drop)


@converts("SLICE")
def slice_op(ctx: Context, op: TflOp) -> None:
    x = ctx.input(op, 0)
    begin, size = ints(ctx.const(op, 1, "begin")), ints(ctx.const(op, 2, "size"))
    bounds = [slice(b, None if s == -1 else b + s, 1) for b, s in zip(begin, size, strict=True)]
    slice_to(ctx, op, x, bounds, set())


@converts("PAD", "PADV2", "MIRROR_PAD")
def pad(ctx: Context, op: TflOp) -> None:
    x = ctx.input(op, 0)
    pads = np.asarray(ctx.const(op, 1, "paddings")).reshape(-1, 2)
    attrs: dict[str, Any] = {"pads": tuple(ints(pads[:, 0]) + ints(pads[:, 1]))}
    if (pads < 0).any():
        raise ModelFormatError(f"{ctx.source}: {op.name} node {ctx.node_name(op)!r}: negative paddings")
    if op.name == "PADV2" and ctx.tensor(op, 2) is not None:
        value = np.asarray(ctx.const(op, 2, "constant_values")).reshape(-1)[:1]
        q = ctx.graph.tensors[ctx.input(op, 2)].quant
        attrs["value"] = float((dequantize(value, q) if q is not None else value)[0])  # the real value
    if op.name == "MIRROR_PAD":
        if op.options.get("Mode", 0) != 0:
            raise ctx.unsupported(op, "SYMMETRIC mirror padding (only REFLECT is supported)")
        attrs["mode"] = PadMode.REFLECT
    ctx.emit(op, "PAD", [x], attrs, final=True)


def resize_size(ctx: Context, op: TflOp) -> tuple[int, int]:
    size = ints(ctx.const(op, 1, "size"))
    if len(size) != 2 or min(size) < 1:
        raise ModelFormatError(f"{ctx.source}: {op.name} node {ctx.node_name(op)!r}: invalid size {size}")
    return size[0], size[1]


@converts("RESIZE_BILINEAR")
def resize_bilinear(ctx: Context, op: TflOp) -> None:
    align, half = op.options.get("AlignCorners", False), op.options.get("HalfPixelCenters", False)
    coord = CoordMode.ALIGN_CORNERS if align else CoordMode.HALF_PIXEL if half else CoordMode.ASYMMETRIC
    attrs = {"size": resize_size(ctx, op), "mode": ResizeMode.BILINEAR, "coord": coord}
    ctx.emit(op, "RESIZE", [ctx.input(op, 0)], attrs, final=True)


@converts("RESIZE_NEAREST_NEIGHBOR")
def resize_nearest(ctx: Context, op: TflOp) -> None:
    align, half = op.options.get("AlignCorners", False), op.options.get("HalfPixelCenters", False)
    if align and half:
        raise ctx.unsupported(op, "align_corners together with half_pixel_centers")
    if align:  # round(x * (in-1)/(out-1)), halves away from zero
        coord, nearest = CoordMode.ALIGN_CORNERS, NearestMode.ROUND_PREFER_CEIL
    elif half:  # floor((x + 0.5) * in/out)
        coord, nearest = CoordMode.TF_HALF_PIXEL_FOR_NN, NearestMode.FLOOR
    else:  # floor(x * in/out)
        coord, nearest = CoordMode.ASYMMETRIC, NearestMode.FLOOR
    attrs = {"size": resize_size(ctx, op), "mode": ResizeMode.NEAREST, "coord": coord, "nearest": nearest}
    ctx.emit(op, "RESIZE", [ctx.input(op, 0)], attrs, final=True)


@converts("DEPTH_TO_SPACE")
def depth_to_space(ctx: Context, op: TflOp) -> None:
    attrs = {"block": int(op.options["BlockSize"]), "mode": DepthToSpaceMode.DCR}
    ctx.emit(op, "DEPTH_TO_SPACE", [ctx.input(op, 0)], attrs, final=True)


@converts("GATHER")
def gather(ctx: Context, op: TflOp) -> None:
    x = ctx.input(op, 0)
    if op.options.get("BatchDims", 0):
        raise ctx.unsupported(op, "batch_dims != 0")
    rank = len(ctx.shape(x))
    axis = axis_of(ctx, op, op.options.get("Axis", 0), rank)
    indices = np.asarray(ctx.const(op, 1, "indices")).astype(np.int64)
    n = ctx.shape(x)[axis]
    if ((indices < 0) | (indices >= n)).any():  # TFLite rejects negative indices too
        raise ModelFormatError(f"{ctx.source}: GATHER node {ctx.node_name(op)!r}: indices out of range [0, {n})")
    idx = ctx.graph.add_const(f"{ctx.node_name(op)}/indices", indices.astype(np.int32))
    ctx.emit(op, "GATHER", [x, idx], {"axis": axis}, final=True)


@converts("DENSIFY")
def densify(ctx: Context, op: TflOp) -> None:
    # The reader already expanded the sparse constant (tflite_sparse.densify): DENSIFY is the identity on it.
    t = ctx.tensor(op, 0)
    if t is None or t.data is None or not t.is_sparse:
        raise ctx.unsupported(op, "DENSIFY of a tensor that is not a sparse constant")
    ctx.bind(op, t.data)


@converts("DEQUANTIZE")
def dequantize_op(ctx: Context, op: TflOp) -> None:
    # fp16 or int8 weights become float32 constants; a quantized activation becomes float at run time
    x = ctx.input(op, 0)
    t = ctx.graph.tensors[x]
    if t.is_const:
        ctx.bind(op, dequantize(t.data, t.quant) if t.quant is not None else t.data.astype(np.float32))
    elif t.quant is None:
        raise ctx.unsupported(op, f"DEQUANTIZE of a {t.dtype} tensor without quantization parameters")
    else:
        ctx.emit(op, "DEQUANTIZE", [x], final=True)


@converts("QUANTIZE")
def quantize_op(ctx: Context, op: TflOp) -> None:
    # float -> int8, or int8 -> int8 with other parameters (uint8 is int8 inside, so -> uint8 is the same op)
    ctx.emit(op, "QUANTIZE", [ctx.input(op, 0)], final=True, quantize=True)


# -- MediaPipe's attention face mesh custom ops ----------------------------------------------------------------------
def _flex_options(ctx: Context, op: TflOp) -> dict[str, Any]:
    from flatbuffers import flexbuffers

    if not op.custom_options:
        return {}
    try:
        opts = flexbuffers.Loads(op.custom_options)
    except Exception as e:  # a corrupt flexbuffer can fail in many ways
        raise ModelFormatError(f"{ctx.source}: {ctx.op_label(op)} node {ctx.node_name(op)!r}: unreadable custom "
                               f"options ({type(e).__name__}: {e})") from None
    if not isinstance(opts, dict):
        raise ModelFormatError(f"{ctx.source}: {ctx.op_label(op)} node {ctx.node_name(op)!r}: custom options are not "
                               "a map")
    return opts


@converts("Landmarks2TransformMatrix")
def landmarks_to_transform_matrix(ctx: Context, op: TflOp) -> None:
    o = _flex_options(ctx, op)
    if "subset_idxs" not in o:
        raise ctx.unsupported(op, "version 1 of Landmarks2TransformMatrix (options without subset_idxs)")
    try:
        attrs = {"rotation_idx": (int(o["left_rotation_idx"]), int(o["right_rotation_idx"])),
                 "target_rotation": float(o.get("target_rotation_radians", 0.0)),
                 "size": (int(o["output_height"]), int(o["output_width"])),
                 "scales": (float(o["scale_x"]), float(o["scale_y"])),
                 "subset": tuple(int(v) for v in o["subset_idxs"])}
    except (KeyError, TypeError, ValueError) as e:
        raise ModelFormatError(f"{ctx.source}: Landmarks2TransformMatrix node {ctx.node_name(op)!r}: options "
                               f"{sorted(o)}: {e}") from None
    ctx.emit(op, "LANDMARKS_TO_TRANSFORM_MATRIX", [ctx.input(op, 0)], attrs, final=True)


# MediaPipe's two names of the op: (the .wrt op, align_corners); version 1 (TransformTensor) has no half-pixel shift
_TRANSFORM_TENSOR = {"TransformTensorBilinear": ("TRANSFORM_TENSOR_BILINEAR", False),
                     "TransformTensor": ("TRANSFORM_TENSOR_BILINEAR", True)}


@converts(*_TRANSFORM_TENSOR)
def transform_tensor_bilinear(ctx: Context, op: TflOp) -> None:
    shape = ctx.model.tensors[op.outputs[0]].shape
    if len(shape) != 4:
        raise ModelFormatError(f"{ctx.source}: {op.custom_code} node {ctx.node_name(op)!r}: output shape {shape}")
    wrt_op, align_corners = _TRANSFORM_TENSOR[op.custom_code]
    attrs = {"size": (shape[1], shape[2]), "align_corners": align_corners}
    ctx.emit(op, wrt_op, [ctx.input(op, 0), ctx.input(op, 1)], attrs, final=True)


@converts("TransformLandmarks")
def transform_landmarks(ctx: Context, op: TflOp) -> None:
    x = ctx.input(op, 0)
    o = _flex_options(ctx, op)
    v1 = len(ctx.shape(x)) == 4  # v1: [1, H, W, C] with a scale of the translation; v2: [1, N, dims]
    dims = int(o.get("dimensions", ctx.shape(x)[-1] if not v1 else 2))
    attrs = {"dimensions": dims, "scale": float(o.get("scale", 1.0)) if v1 else 1.0}
    ctx.emit(op, "TRANSFORM_LANDMARKS", [x, ctx.input(op, 1)], attrs, final=True)
