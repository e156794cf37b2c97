"""The op set of the .wrt format: the one place where an op is declared.

Every op lists its inputs, outputs and typed attributes here. From this table come the FlatBuffers option tables
(schema/wrt.fbs, via tools/gen_schema.py), the Python reader and writer of .wrt files, the reference
implementation's dispatch (python_ref/ops.py registers one function per op) and the op-level tests.

Layout convention (see python_ref/README.md): 4-D activations of spatial ops are NHWC. Convolution weights are
OHWI: [out_channels, kernel_h, kernel_w, in_channels / groups]; a depthwise convolution is a CONV_2D with
groups == in_channels. Padding is always explicit, as [top, left, bottom, right]; importers turn SAME/VALID and
ONNX auto_pad into explicit (possibly asymmetric) pads.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any


class PadMode(enum.IntEnum):
    CONSTANT = 0
    REFLECT = 1
    EDGE = 2


class ResizeMode(enum.IntEnum):
    NEAREST = 0
    BILINEAR = 1


class CoordMode(enum.IntEnum):
    """How an output pixel index maps to an input coordinate (ONNX coordinate_transformation_mode)."""

    HALF_PIXEL = 0  # x_in = (x_out + 0.5) / scale - 0.5
    ALIGN_CORNERS = 1  # x_in = x_out * (in - 1) / (out - 1)
    ASYMMETRIC = 2  # x_in = x_out / scale
    PYTORCH_HALF_PIXEL = 3  # like HALF_PIXEL, but 0 when out == 1
    TF_HALF_PIXEL_FOR_NN = 4  # x_in = (x_out + 0.5) / scale


class NearestMode(enum.IntEnum):
    ROUND_PREFER_FLOOR = 0
    ROUND_PREFER_CEIL = 1
    FLOOR = 2
    CEIL = 3


class QuantType(enum.IntEnum):
    """The integer type a QUANTIZE writes."""

    INT8 = 0
    UINT8 = 1


class DepthToSpaceMode(enum.IntEnum):
    DCR = 0  # depth-column-row: channel index = (i * block + j) * C_out + c  (TFLite, ONNX default)
    CRD = 1  # column-row-depth: channel index = c * block * block + i * block + j


class GeluMode(enum.IntEnum):
    EXACT = 0  # x * (1 + erf(x / sqrt(2))) / 2
    TANH = 1  # x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))) / 2


class CastTo(enum.IntEnum):
    """Target of CAST: the format's DType codes."""

    FLOAT32 = 0
    FLOAT16 = 1
    INT8 = 2
    UINT8 = 3
    INT32 = 4
    INT64 = 5
    BOOL = 6


class ScatterReduction(enum.IntEnum):
    NONE = 0
    ADD = 1
    MUL = 2
    MAX = 3
    MIN = 4


class Direction(enum.IntEnum):
    FORWARD = 0
    REVERSE = 1
    BIDIRECTIONAL = 2


class Coupling(enum.IntEnum):
    """LSTM gates computed from another gate instead of their weights."""

    NONE = 0
    FORGET_FROM_INPUT = 1  # f = 1 - i (ONNX input_forget)
    INPUT_FROM_FORGET = 2  # i = 1 - f (TFLite CIFG: no input-gate weights)


class Activation(enum.IntEnum):
    """Gate activations of the recurrent ops (ONNX's names; alpha/beta as ONNX defines them)."""

    SIGMOID = 0
    TANH = 1
    RELU = 2
    AFFINE = 3  # alpha * x + beta
    LEAKY_RELU = 4  # x if x >= 0 else alpha * x
    THRESHOLDED_RELU = 5  # x if x > alpha else 0
    SCALED_TANH = 6  # alpha * tanh(beta * x)
    HARD_SIGMOID = 7  # min(max(alpha * x + beta, 0), 1)
    ELU = 8  # x if x >= 0 else alpha * (exp(x) - 1)
    SOFTSIGN = 9  # x / (1 + |x|)
    SOFTPLUS = 10  # log(1 + exp(x))
    RELU6 = 11  # min(max(x, 0), 6) (TFLite's fused activation)
    IDENTITY = 12  # x (TFLite's NONE)


INF = float("inf")

# Families: what an op is, declared once here, so every table that groups ops follows from this file (python_ref's
# shape and quantization rules, the quantizer, the C engine's generated tables, the fuzzers, the docs).
#
# OpDef.family, the op's structure:
UNARY = "unary"  # element-wise function of one input: y has x's shape and dtype (shape rule, C dispatch to the
#                  op's vector kernel of kernels_wasm/gen/kernels/eltwise.py UNARY, named like the op, lower case)
FAMILIES = ("", UNARY)
#
# OpDef.quant, the op's int8 form (python_ref/qrules.py checks it, wasmrt/compile/quantizer.py makes it):
Q_WEIGHTED = "weighted"  # int8 input and weights (per tensor or per output channel), int32 bias, own output params
Q_MOVES = "moves"  # moves integers unchanged: the output's parameters must equal the input's (a reader rule)
Q_SELECTS = "selects"  # picks among input values: the quantizer gives the output the input's parameters
Q_ARITHMETIC = "arithmetic"  # computes in the integer domain; the output has parameters of its own
Q_TABLE = "table"  # a function of one value: quantized as a LOOKUP of its 256-entry table (made by converters)
Q_INTEGER = "integer"  # quantized by definition: QUANTIZE, DEQUANTIZE, LOOKUP
QUANT_FORMS = ("", Q_WEIGHTED, Q_MOVES, Q_SELECTS, Q_ARITHMETIC, Q_TABLE, Q_INTEGER)
# int8 forms computed by an op of the same name on integers (the others are no op of the format, or a LOOKUP)
Q_NATIVE = (Q_WEIGHTED, Q_MOVES, Q_SELECTS, Q_ARITHMETIC, Q_INTEGER)


@dataclass(frozen=True)
class Attr:
    """A typed op attribute. kind: int, float, bool, ints, floats or the name of an enum class above."""

    name: str
    kind: str
    default: Any = None


@dataclass(frozen=True)
class OpDef:
    name: str
    code: int  # stable wire number of the op in the .wrt format; never reuse one
    inputs: tuple[str, ...]  # a trailing '?' marks an optional input
    outputs: tuple[str, ...] = ("y",)
    attrs: tuple[Attr, ...] = ()
    options: str | None = None  # FlatBuffers options table; ops with identical attrs share one
    doc: str = ""
    const_inputs: tuple[str, ...] = ()  # inputs that must be constants (engines pack them at load)
    family: str = ""  # FAMILIES
    quant: str = ""  # QUANT_FORMS: its int8 form ("" none)
    qout: tuple[float, int] | None = None  # int8 form: the output's fixed (scale, zero point), TFLite's
    float_only: bool = False  # x must be floating point (int8/uint8 also when quantized, for a native int8 form)

    @property
    def min_inputs(self) -> int:
        return sum(1 for i in self.inputs if not i.endswith(("?", "...")))

    @property
    def variadic(self) -> bool:
        return self.inputs[-1].endswith("...")

    @property
    def variadic_outputs(self) -> bool:
        return self.outputs[-1].endswith("...")

    @property
    def has_clamp(self) -> bool:
        """The op has a fused output clamp (act_min, act_max): Relu/Relu6/Clip after it fold into it."""
        return any(a.name == "act_min" for a in self.attrs)

    @property
    def const_mask(self) -> int:
        """Bit i set: input i must be a constant tensor (a format rule every reader enforces)."""
        names = [i.rstrip("?.") for i in self.inputs]
        return sum(1 << names.index(n) for n in self.const_inputs)

    @property
    def needs_quant(self) -> bool:
        """int8/uint8 inputs only as quantized tensors: a float-only op with an int8 form of its own."""
        return self.float_only and self.quant in Q_NATIVE

    def attr(self, name: str) -> Attr:
        for a in self.attrs:
            if a.name == name:
                return a
        raise KeyError(f"{self.name} has no attribute {name!r}")

    def defaults(self) -> dict[str, Any]:
        return {a.name: a.default for a in self.attrs}


# Fused output clamp: Relu, Relu6 and Clip that follow a producer are folded into it as [act_min, act_max].
ACT = (Attr("act_min", "float", -INF), Attr("act_max", "float", INF))
SPATIAL = (
    Attr("strides", "ints", (1, 1)),
    Attr("dilations", "ints", (1, 1)),
    Attr("pads", "ints", (0, 0, 0, 0)),
)

_DEFS: list[OpDef] = []


def _op(name: str, code: int, inputs: tuple[str, ...], attrs: tuple[Attr, ...] = (), options: str | None = None,
        doc: str = "", outputs: tuple[str, ...] = ("y",), const: tuple[str, ...] = (), family: str = "",
        quant: str = "", qout: tuple[float, int] | None = None, float_only: bool = False) -> None:
    if attrs and options is None:
        options = "".join(p.capitalize() for p in name.split("_")) + "Options"
    assert family in FAMILIES and quant in QUANT_FORMS, name
    _DEFS.append(OpDef(name, code, inputs, outputs, attrs, options, doc, const, family, quant, qout, float_only))


# --- convolution and dense -------------------------------------------------------------------------------------
_op("CONV_2D", 1, ("x", "w", "b?", "r?"), (*SPATIAL, Attr("groups", "int", 1), *ACT), "Conv2DOptions",
    "y[n,oh,ow,o] = b[o] + sum_{kh,kw,i} x[n, oh*sh - pt + kh*dh, ow*sw - pl + kw*dw, g*Cg + i] * w[o,kh,kw,i]; "
    "out-of-range input positions read 0. OH = floor((H + pt + pb - dh*(KH-1) - 1) / sh) + 1. "
    "r (optional, the output's shape): a residual added to the float32 result before the clamp, as a following "
    "ADD would (passes.fuse_residual_adds).", const=("w", "b"), quant=Q_WEIGHTED, float_only=True)
_op("CONV_TRANSPOSE_2D", 2, ("x", "w", "b?"),
    (*SPATIAL, Attr("groups", "int", 1), Attr("output_padding", "ints", (0, 0)), *ACT), "ConvTranspose2DOptions",
    "Gradient of CONV_2D; w is [Cout, KH, KW, Cin/groups]. OH = (H-1)*sh - pt - pb + dh*(KH-1) + 1 + oph.",
    const=("w", "b"), quant=Q_WEIGHTED, float_only=True)
_op("FULLY_CONNECTED", 3, ("x", "w", "b?"), (*ACT, Attr("float_output", "bool", False)), "FullyConnectedOptions",
    "x [..., K] times w [N, K] transposed plus b [N] -> [..., N]. float_output (int8 x and w only): the int32 "
    "accumulator dequantized to float32, y = f32(acc) * f32(sx * sw[n]), then the fused clamp, instead of an int8 "
    "output (a classifier's logits finer than one int8 step).", quant=Q_WEIGHTED, float_only=True)
_op("MATMUL", 4, ("a", "b"), doc="numpy.matmul semantics, batch dimensions broadcast.", quant=Q_ARITHMETIC)

# --- element-wise binary, numpy broadcasting ------------------------------------------------------------------
for _name, _code in (("ADD", 10), ("SUB", 11), ("MUL", 12), ("DIV", 13), ("MAXIMUM", 14), ("MINIMUM", 15)):
    _op(_name, _code, ("a", "b"), ACT, "BinaryOptions", quant="" if _name == "DIV" else Q_ARITHMETIC)
_op("POW", 16, ("a", "b"), float_only=True)
_op("PRELU", 17, ("x", "slope"), doc="y = x if x >= 0 else slope * x; slope broadcasts against x.",
    quant=Q_ARITHMETIC, float_only=True)

# --- element-wise unary --------------------------------------------------------------------------------------------
# (float attributes, in declaration order, are the params of the op's vector kernel)
_op("RELU", 20, ("x",), family=UNARY, quant=Q_ARITHMETIC)
_op("CLIP", 21, ("x",), (Attr("min", "float", -INF), Attr("max", "float", INF)), doc="min(max(x, min), max)",
    family=UNARY, quant=Q_ARITHMETIC)
_op("LEAKY_RELU", 22, ("x",), (Attr("alpha", "float", 0.01),), family=UNARY, quant=Q_TABLE, float_only=True)
_op("HARD_SWISH", 23, ("x",), doc="x * min(max(x + 3, 0), 6) / 6", family=UNARY, quant=Q_TABLE, float_only=True)
_op("HARD_SIGMOID", 24, ("x",), (Attr("alpha", "float", 0.2), Attr("beta", "float", 0.5)),
    doc="min(max(alpha * x + beta, 0), 1)", family=UNARY, quant=Q_TABLE, qout=(1 / 256, -128), float_only=True)
_op("SIGMOID", 25, ("x",), family=UNARY, quant=Q_TABLE, qout=(1 / 256, -128), float_only=True)
_op("TANH", 26, ("x",), family=UNARY, quant=Q_TABLE, qout=(1 / 128, 0), float_only=True)
_op("EXP", 27, ("x",), family=UNARY, quant=Q_TABLE, float_only=True)
_op("SQRT", 28, ("x",), family=UNARY, quant=Q_TABLE, float_only=True)
_op("ABS", 29, ("x",), family=UNARY, quant=Q_TABLE)
_op("NEG", 30, ("x",), family=UNARY, quant=Q_TABLE)

# --- pooling and reductions --------------------------------------------------------------------------------------
_POOL = (Attr("kernel", "ints", (1, 1)), *SPATIAL, Attr("ceil_mode", "bool", False),
         Attr("count_include_pad", "bool", False), *ACT)
_op("MAX_POOL_2D", 40, ("x",), _POOL, "Pool2DOptions",
    "NHWC window max; padded positions are ignored. ceil_mode rounds the output size up; a window that starts "
    "inside the input or the top/left padding is kept.", quant=Q_SELECTS, float_only=True)
_op("AVERAGE_POOL_2D", 41, ("x",), _POOL, "Pool2DOptions",
    "NHWC window mean. Divisor: valid input positions, plus the explicit pads when count_include_pad; positions "
    "beyond the explicit pads (ceil_mode) never count.", quant=Q_ARITHMETIC, float_only=True)
_op("MEAN", 42, ("x",), (Attr("axes", "ints", ()), Attr("keepdims", "bool", True)), "ReduceOptions",
    quant=Q_ARITHMETIC, float_only=True)
_op("REDUCE_MAX", 43, ("x",), (Attr("axes", "ints", ()), Attr("keepdims", "bool", True)), "ReduceOptions",
    quant=Q_SELECTS)
_op("REDUCE_SUM", 44, ("x",), (Attr("axes", "ints", ()), Attr("keepdims", "bool", True)), "ReduceOptions")
_op("SOFTMAX", 45, ("x", "table?"), (Attr("axis", "int", -1),),
    doc="exp(x - max) / sum, along axis. Quantized x: table is the int32 exponential table [256] (README).",
    const=("table",), quant=Q_ARITHMETIC, qout=(1 / 256, -128), float_only=True)

# --- data movement -------------------------------------------------------------------------------------------------
_op("RESHAPE", 50, ("x",), (Attr("shape", "ints", ()),), doc="row-major reinterpretation; never copies in engines",
    quant=Q_MOVES)
_op("TRANSPOSE", 51, ("x",), (Attr("perm", "ints", ()),), quant=Q_MOVES)
_op("CONCATENATION", 52, ("xs...",), (Attr("axis", "int", 0), *ACT),
    doc="variadic inputs; axis is non-negative", quant=Q_ARITHMETIC)
_op("SLICE", 53, ("x",), (Attr("starts", "ints", ()), Attr("ends", "ints", ()), Attr("steps", "ints", ())),
    doc="per-axis start/end/step over every axis, already clamped; with a negative step end may be -1, "
        "meaning 'through index 0'.", quant=Q_MOVES)
_op("PAD", 54, ("x",), (Attr("pads", "ints", ()), Attr("mode", "PadMode", PadMode.CONSTANT),
                        Attr("value", "float", 0.0)),
    doc="pads = [begin_0..begin_{r-1}, end_0..end_{r-1}], all >= 0", quant=Q_MOVES)
_op("RESIZE", 55, ("x",), (Attr("size", "ints", (0, 0)), Attr("scales", "floats", (0.0, 0.0)),
                           Attr("mode", "ResizeMode", ResizeMode.BILINEAR),
                           Attr("coord", "CoordMode", CoordMode.HALF_PIXEL),
                           Attr("nearest", "NearestMode", NearestMode.ROUND_PREFER_FLOOR)),
    doc="NHWC, resizes H and W to size; scales (h, w) define the coordinate map, 0 means size/in.",
    quant=Q_MOVES, float_only=True)
_op("DEPTH_TO_SPACE", 56, ("x",), (Attr("block", "int", 2), Attr("mode", "DepthToSpaceMode", DepthToSpaceMode.DCR)),
    doc="NHWC", quant=Q_MOVES)
_op("GATHER", 57, ("x", "indices"), (Attr("axis", "int", 0),), doc="numpy.take with int32/int64 indices",
    quant=Q_MOVES)

# --- quantization (codes 100-139; declared here so their options keep their union type ids) ------------------
_op("QUANTIZE", 100, ("x",), (Attr("dtype", "QuantType", QuantType.INT8),),
    doc="float32 -> integer: zy + clamp(rne(f32(x / sy))), NaN -> zy; integer -> integer: requantization to y's "
        "parameters. y is int8 or uint8 (dtype).", quant=Q_INTEGER)
_op("DEQUANTIZE", 101, ("x",), doc="integer -> float32: f32(f32(x - zx) * sx), per tensor or per channel",
    quant=Q_INTEGER)
_op("LOOKUP", 102, ("x", "table"),
    doc="y = table[x - qmin]: a quantized element-wise function tabulated by the converter (256 entries)",
    const=("table",), quant=Q_INTEGER)

# --- transformer blocks, comparisons, integer and shape arithmetic (60-79) ------------------------------------------
_op("LAYER_NORM", 60, ("x", "scale?", "bias?"), (Attr("axis", "int", -1), Attr("epsilon", "float", 1e-5)),
    doc="(x - mean) / sqrt(var + epsilon) * scale + bias, mean and (biased) variance over the axes [axis, rank); "
        "scale and bias broadcast against x's trailing axes.", float_only=True)
_op("GELU", 61, ("x",), (Attr("mode", "GeluMode", GeluMode.EXACT),),
    doc="EXACT: x * (1 + erf(x / sqrt 2)) / 2; TANH: x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))) / 2",
    family=UNARY, float_only=True)
_op("ERF", 62, ("x",), family=UNARY, float_only=True)
_op("WHERE", 63, ("cond", "a", "b"), doc="cond ? a : b with numpy broadcasting of all three; cond is bool")
_op("EXPAND", 64, ("x",), (Attr("shape", "ints", ()),),
    doc="numpy.broadcast_to(x, broadcast_shapes(x.shape, shape)) (ONNX Expand: a 1 in shape keeps x's dim)")
_op("CAST", 65, ("x",), (Attr("to", "CastTo", CastTo.FLOAT32),),
    doc="element type conversion as numpy's astype; float to integer truncates toward zero (out-of-range values "
        "and NaN are undefined, as in C and ONNX); to BOOL is x != 0")
for _name, _code in (("EQUAL", 66), ("LESS", 67), ("GREATER", 68), ("LESS_EQUAL", 69), ("GREATER_EQUAL", 70)):
    _op(_name, _code, ("a", "b"), doc="element-wise comparison with numpy broadcasting; the output is bool")
_op("NOT", 71, ("x",), doc="logical not of a bool tensor")
for _name, _code in (("AND", 72), ("OR", 73), ("XOR", 74)):
    _op(_name, _code, ("a", "b"), doc="logical op on bool tensors with numpy broadcasting")
_op("SCATTER_ND", 75, ("x", "indices", "updates"), (Attr("reduction", "ScatterReduction", ScatterReduction.NONE),),
    doc="ONNX ScatterND: a copy of x where y[indices[i]] = updates[i] (or combined by reduction), in index order; "
        "indices [..., k] int32/int64 address the first k axes, negative values count from the end")
_op("SPLIT", 76, ("x",), (Attr("axis", "int", 0), Attr("sizes", "ints", ())), outputs=("ys...",),
    doc="consecutive slices of x along axis, one output per entry of sizes (which sum to the axis length)")
_op("LOG", 77, ("x",), family=UNARY, float_only=True)
_op("FLOOR", 78, ("x",), family=UNARY, float_only=True)
_op("CEIL", 79, ("x",), family=UNARY, float_only=True)

# --- recurrent layers (80-84): ONNX semantics (layout 0: time-major); TFLite's LSTM maps onto LSTM ----------------
_RNN = (Attr("direction", "Direction", Direction.FORWARD), Attr("activations", "ints", ()),
        Attr("activation_alpha", "floats", ()), Attr("activation_beta", "floats", ()),
        Attr("clip", "float", INF))
_op("LSTM", 80, ("x", "w", "r", "b?", "seq_lens?", "h0?", "c0?", "p?", "proj_w?", "proj_b?", "ln?"),
    (*_RNN, Attr("coupling", "Coupling", Coupling.NONE), Attr("cell_clip", "float", INF),
     Attr("proj_clip", "float", INF)),
    outputs=("y", "y_h", "y_c"),
    doc="ONNX LSTM (gates i, o, f, c; x [T, B, I], w [D, 4H, I], r [D, 4H, P], b [D, 8H], p [D, 3H] peepholes "
        "i, o, f; y [T, D, B, P], y_h [D, B, P], y_c [D, B, H]), plus TFLite's extensions: cell_clip (clip of the "
        "cell state), a projection h = proj_w [D, P, H] x (o * h(c)) + proj_b [D, P] clipped to proj_clip, and "
        "layer normalization ln [D, 4, H] (gate order i, o, f, c; mean and variance over H, epsilon 1e-8) of each "
        "gate before its bias. activations: 3 per direction (f, g, h), empty = sigmoid, tanh, tanh; clip bounds "
        "every gate's input after its bias (ONNX clip). coupling: ONNX input_forget (f = 1 - i) or TFLite CIFG "
        "(i = 1 - f).",
    const=("w", "r", "b", "p", "proj_w", "proj_b", "ln"), float_only=True)
_op("GRU", 81, ("x", "w", "r", "b?", "seq_lens?", "h0?"), (*_RNN, Attr("linear_before_reset", "bool", False)),
    outputs=("y", "y_h"),
    doc="ONNX GRU (gates z, r, h; w [D, 3H, I], r [D, 3H, H], b [D, 6H]); activations: 2 per direction (f, g)",
    const=("w", "r", "b"), float_only=True)
_op("RNN", 82, ("x", "w", "r", "b?", "seq_lens?", "h0?"), _RNN, outputs=("y", "y_h"),
    doc="ONNX RNN (w [D, H, I], r [D, H, H], b [D, 2H]); activations: 1 per direction", const=("w", "r", "b"),
    float_only=True)

# --- MediaPipe's attention face mesh ops (85-89) --------------------------------------------------------------------
_op("LANDMARKS_TO_TRANSFORM_MATRIX", 85, ("landmarks",),
    (Attr("rotation_idx", "ints", (0, 0)), Attr("target_rotation", "float", 0.0), Attr("size", "ints", (1, 1)),
     Attr("scales", "floats", (1.0, 1.0)), Attr("subset", "ints", ())),
    doc="MediaPipe Landmarks2TransformMatrix v2: landmarks [1, N, 3] -> the [1, 4, 4] matrix taking a size[0] x "
        "size[1] (h, w) crop's pixel coordinates to landmark coordinates: rotation from landmarks rotation_idx "
        "(left, right), box of the subset landmarks in the rotated frame, scaled by scales (x, y)", float_only=True)
_op("TRANSFORM_TENSOR_BILINEAR", 86, ("x", "matrix"),
    (Attr("size", "ints", (1, 1)), Attr("align_corners", "bool", False)),
    doc="MediaPipe TransformTensorBilinear: y [1, size[0], size[1], C] samples x [1, H, W, C] bilinearly at "
        "(m[0] . (ox, oy, 0, 1), m[1] . (...)) (v2: with the half-pixel correction; align_corners: v1, without); "
        "a sample outside [0, W-1] x [0, H-1] is 0", float_only=True)
_op("TRANSFORM_LANDMARKS", 87, ("landmarks", "matrix"), (Attr("dimensions", "int", 2), Attr("scale", "float", 1.0)),
    doc="MediaPipe TransformLandmarks: each landmark (x, y[, z]) of the last axis (groups of `dimensions`) becomes "
        "(m[0] . (x, y, 0, scale), m[1] . (x, y, 0, scale)[, z])", float_only=True)

OPS: dict[str, OpDef] = {d.name: d for d in _DEFS}
BY_CODE: dict[int, OpDef] = {d.code: d for d in _DEFS}
ENUMS: dict[str, type[enum.IntEnum]] = {
    e.__name__: e for e in (PadMode, ResizeMode, CoordMode, NearestMode, DepthToSpaceMode, QuantType, GeluMode,
                            CastTo, ScatterReduction, Direction, Coupling, Activation)
}

assert len(BY_CODE) == len(OPS), "duplicate op code"


def options_tables() -> dict[str, tuple[Attr, ...]]:
    """Options table name -> attributes; ops sharing a table must declare identical attributes."""
    tables: dict[str, tuple[Attr, ...]] = {}
    for d in _DEFS:
        if d.options is None:
            continue
        if d.options in tables and tables[d.options] != d.attrs:
            raise AssertionError(f"{d.name}: options table {d.options} differs from its other users")
        tables[d.options] = d.attrs
    return tables


def family(name: str) -> set[str]:
    """The ops of a family (FAMILIES)."""
    return {d.name for d in _DEFS if d.family == name}


def quant_form(*forms: str) -> set[str]:
    """The ops whose int8 form is one of `forms` (QUANT_FORMS)."""
    return {d.name for d in _DEFS if d.quant in forms}
