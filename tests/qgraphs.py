"""One-op quantized (int8) graphs: one case per quantized variant of every op that has one, for the tests of the
reference (tests/test_ref_quant.py), of the C engine's reporting (tests/test_generated.py) and, once int8 kernels
exist, of their bit-exactness on every ISA."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from python_ref import qops
from python_ref.opdefs import PadMode, QuantType, ResizeMode
from python_ref.quant import QuantParams
from wasmrt.compile.ir import Graph
from wasmrt.compile.quantizer import softmax_table

QP = QuantParams.make


def _i8(rng: np.random.Generator, *shape: int, lo: int = -128, hi: int = 127) -> np.ndarray:
    return rng.integers(lo, hi + 1, shape).astype(np.int8)


def _input(g: Graph, name: str, shape: tuple[int, ...], q: QuantParams | None, dtype: type = np.int8) -> str:
    return g.add_input(name, shape, dtype, q)


def _weights(g: Graph, rng: np.random.Generator, shape: tuple[int, ...], per_channel: bool = True,
             lo: int = -127) -> str:
    scale = rng.uniform(0.002, 0.02, shape[0]) if per_channel else 0.01
    q = QP(scale, 0, 0 if per_channel else -1)
    return g.add_const("w", _i8(rng, *shape, lo=lo), quant=q)


def _bias(g: Graph, rng: np.random.Generator, n: int) -> str:
    return g.add_const("b", rng.integers(-3000, 3000, n).astype(np.int32))


Builder = Callable[[Graph, np.random.Generator], tuple[str, list[str], dict, QuantParams | None]]
QX, QY, QB = QP(0.031, -5), QP(0.047, 7), QP(0.019, 12)


def _conv(g: Graph, rng: np.random.Generator) -> tuple:
    x = _input(g, "x", (1, 6, 5, 3), QX)
    return "CONV_2D", [x, _weights(g, rng, (4, 3, 3, 3)), _bias(g, rng, 4)], \
        {"strides": (2, 1), "pads": (1, 1, 1, 0), "act_min": 0.0, "act_max": 6.0}, QY


def _depthwise(g: Graph, rng: np.random.Generator) -> tuple:
    x = _input(g, "x", (1, 6, 6, 4), QX)
    return "CONV_2D", [x, _weights(g, rng, (8, 3, 3, 1)), _bias(g, rng, 8)], \
        {"pads": (1, 1, 1, 1), "groups": 4, "dilations": (2, 1)}, QY


def _grouped(g: Graph, rng: np.random.Generator) -> tuple:
    x = _input(g, "x", (1, 4, 4, 6), QX)
    return "CONV_2D", [x, _weights(g, rng, (4, 1, 1, 3), per_channel=False), ""], {"groups": 2}, QY


def _conv_transpose(g: Graph, rng: np.random.Generator) -> tuple:
    x = _input(g, "x", (1, 3, 3, 4), QX)
    return "CONV_TRANSPOSE_2D", [x, _weights(g, rng, (2, 3, 3, 4)), _bias(g, rng, 2)], \
        {"strides": (2, 2), "output_padding": (1, 1)}, QY


def _fc(g: Graph, rng: np.random.Generator) -> tuple:
    x = _input(g, "x", (2, 40), QX)
    return "FULLY_CONNECTED", [x, _weights(g, rng, (3, 40)), _bias(g, rng, 3)], {"act_max": 0.5}, QP(0.004, -60)


def _fc_float(g: Graph, rng: np.random.Generator) -> tuple:
    """float_output: the accumulators dequantized, clamped in float (uint8 input, per-tensor weights: the other
    forms of each input)"""
    x = _input(g, "x", (2, 40), QP(0.031, 131), np.uint8)
    return "FULLY_CONNECTED", [x, _weights(g, rng, (5, 40), per_channel=False), _bias(g, rng, 5)], \
        {"act_min": -0.4, "act_max": 0.5, "float_output": True}, None


def _sized_fc_float(x: tuple[int, ...], n: int, bias: int = 0) -> Builder:
    """float_output on int8 rows; bias: an offset of every bias (2^24 and more: accumulators that float32 rounds)"""
    def build(g: Graph, rng: np.random.Generator) -> tuple:
        xin = _input(g, "x", x, QX)
        b = g.add_const("b", (rng.integers(-3000, 3000, n) + bias).astype(np.int32))
        return "FULLY_CONNECTED", [xin, _weights(g, rng, (n, x[-1])), b], {"float_output": True}, None
    return build


def _matmul(g: Graph, rng: np.random.Generator) -> tuple:
    return "MATMUL", [_input(g, "a", (2, 3, 8), QX), _input(g, "b", (8, 5), QB)], {}, QP(0.06, 1)


def _binary(op: str) -> Builder:
    def build(g: Graph, rng: np.random.Generator) -> tuple:
        attrs = {"act_min": -1.0, "act_max": 2.5} if op in ("ADD", "SUB", "MUL") else {}
        return op, [_input(g, "a", (1, 3, 4, 4), QX), _input(g, "b", (1, 1, 1, 4), QB)], attrs, QY
    return build


def _prelu(g: Graph, rng: np.random.Generator) -> tuple:
    slope = g.add_const("slope", _i8(rng, 4), quant=QP(rng.uniform(0.001, 0.01, 4), rng.integers(-5, 5, 4), 0))
    return "PRELU", [_input(g, "x", (1, 3, 3, 4), QX), slope], {}, QY


def _unary(op: str, attrs: dict, q: QuantParams = QY) -> Builder:
    return lambda g, rng: (op, [_input(g, "x", (1, 4, 5, 3), QX)], attrs, q)


def _softmax(g: Graph, rng: np.random.Generator) -> tuple:
    table = g.add_const("table", softmax_table(QX.s, 10))
    return "SOFTMAX", [_input(g, "x", (2, 10), QX), table], {"axis": 1}, QP(1 / 256, -128)


def _concat(g: Graph, rng: np.random.Generator) -> tuple:
    xs = [_input(g, "a", (1, 2, 2, 3), QX), _input(g, "b", (1, 2, 2, 5), QB), _input(g, "c", (1, 2, 2, 1), QY)]
    return "CONCATENATION", xs, {"axis": 3, "act_min": 0.0}, QY


def _lookup(g: Graph, rng: np.random.Generator) -> tuple:
    table = g.add_const("table", _i8(rng, 256))
    return "LOOKUP", [_input(g, "x", (1, 4, 4, 3), QX), table], {}, QY


def _quantize_float(g: Graph, rng: np.random.Generator) -> tuple:
    return "QUANTIZE", [g.add_input("x", (2, 7, 3))], {}, QY


def _dequantize(g: Graph, rng: np.random.Generator) -> tuple:
    return "DEQUANTIZE", [_input(g, "x", (2, 7, 3), QX)], {}, None


def _same(op: str, attrs: dict, shape: tuple[int, ...] = (1, 4, 4, 4)) -> Builder:
    return lambda g, rng: (op, [_input(g, "x", shape, QX)], attrs, QX)


def _gather(g: Graph, rng: np.random.Generator) -> tuple:
    idx = g.add_const("idx", np.array([3, 0, -1], np.int32))
    return "GATHER", [_input(g, "x", (1, 4, 4, 4), QX), idx], {"axis": 2}, QX


CASES: dict[str, Builder] = {
    "conv": _conv, "conv_depthwise": _depthwise, "conv_grouped": _grouped, "conv_transpose": _conv_transpose,
    "fully_connected": _fc, "fully_connected_float": _fc_float, "matmul": _matmul,
    **{op.lower(): _binary(op) for op in ("ADD", "SUB", "MUL", "MAXIMUM", "MINIMUM")},
    "prelu": _prelu,
    "relu": _unary("RELU", {}),
    "clip": _unary("CLIP", {"min": -0.5, "max": 1.0}),
    "max_pool": _unary("MAX_POOL_2D", {"kernel": (2, 3), "strides": (2, 1), "pads": (1, 1, 0, 1), "act_min": 0.0}),
    "average_pool": _unary("AVERAGE_POOL_2D", {"kernel": (3, 3), "pads": (1, 1, 1, 1)}),
    "average_pool_include_pad": _unary("AVERAGE_POOL_2D", {"kernel": (2, 2), "pads": (1, 1, 1, 1),
                                                           "count_include_pad": True, "ceil_mode": True}),
    "mean": _unary("MEAN", {"axes": (1, 2), "keepdims": True}),
    "mean_middle": _unary("MEAN", {"axes": (2,), "keepdims": False}),  # kept axes on both sides of the run
    "mean_last_axis": _unary("MEAN", {"axes": (3,), "keepdims": False}),
    "mean_split_axes": _unary("MEAN", {"axes": (1, 3), "keepdims": False}),  # not one run of axes
    "reduce_max": _unary("REDUCE_MAX", {"axes": (3,), "keepdims": False}),
    "softmax": _softmax,
    "concatenation": _concat,
    "reshape": _same("RESHAPE", {"shape": (4, -1)}),
    "transpose": _same("TRANSPOSE", {"perm": (0, 3, 1, 2)}),
    "slice": _same("SLICE", {"starts": (0, 1, 0, 3), "ends": (1, 4, 4, -1), "steps": (1, 2, 1, -2)}),
    "pad": _same("PAD", {"pads": (0, 1, 2, 0, 0, 1, 0, 0), "value": 0.25}),
    "pad_reflect": _same("PAD", {"pads": (0, 1, 1, 0, 0, 1, 1, 0), "mode": PadMode.REFLECT}),
    "depth_to_space": _same("DEPTH_TO_SPACE", {"block": 2}),
    "gather": _gather,
    "resize_nearest": _same("RESIZE", {"size": (7, 8), "mode": ResizeMode.NEAREST}),
    "resize_bilinear": _same("RESIZE", {"size": (7, 9), "mode": ResizeMode.BILINEAR}),
    "lookup": _lookup,
    "quantize": _quantize_float,
    "requantize": _unary("QUANTIZE", {}),
    "quantize_uint8": _unary("QUANTIZE", {"dtype": QuantType.UINT8}, QP(0.02, 128)),
    "dequantize": _dequantize,
}


def _sized_conv(x: tuple[int, ...], w: tuple[int, ...], attrs: dict, per_channel: bool = True,
                bias: bool = True, wmin: int = -127) -> Builder:
    def build(g: Graph, rng: np.random.Generator) -> tuple:
        xin = _input(g, "x", x, QX)
        wts = _weights(g, rng, w, per_channel, wmin)
        return "CONV_2D", [xin, wts, _bias(g, rng, w[0]) if bias else ""], attrs, QY
    return build


def _sized_fc(x: tuple[int, ...], n: int) -> Builder:
    def build(g: Graph, rng: np.random.Generator) -> tuple:
        xin = _input(g, "x", x, QX)
        return "FULLY_CONNECTED", [xin, _weights(g, rng, (n, x[-1])), _bias(g, rng, n)], {}, QP(0.2, 3)
    return build


def _sized_binary(op: str, sa: tuple[int, ...], sb: tuple[int, ...]) -> Builder:
    return lambda g, rng: (op, [_input(g, "a", sa, QX), _input(g, "b", sb, QB)], {"act_min": -1.0, "act_max": 2.5}, QY)


# Shapes the int8 kernels tile (1x1 GEMM, KxK IGEMM, depthwise, dense): channel counts off every vector width,
# several row blocks, edges and strides; the C engine must match python_ref bit for bit on each.
KERNEL_CASES: dict[str, Builder] = {
    "k_conv1x1": _sized_conv((1, 9, 7, 37), (70, 1, 1, 37), {"act_min": 0.0, "act_max": 6.0}),
    "k_conv1x1_c16": _sized_conv((2, 8, 8, 16), (24, 1, 1, 16), {}, per_channel=False),
    # 16 output channels: on AVX-512 the half-panel GEMM alone, its whole-row store (k_conv1x1 and k_fc: a last
    # panel of 6 and 13 columns)
    "k_conv1x1_n16": _sized_conv((1, 7, 9, 42), (16, 1, 1, 42), {"act_min": 0.0, "act_max": 6.0}),
    "k_conv1x1_s2": _sized_conv((1, 9, 9, 67), (33, 1, 1, 67), {"strides": (2, 2)}, bias=False),
    "k_conv3x3": _sized_conv((1, 11, 10, 19), (45, 3, 3, 19), {"pads": (1, 1, 1, 1), "act_min": 0.0}),
    "k_conv3x3_s2_rgb": _sized_conv((1, 17, 16, 3), (32, 3, 3, 3), {"strides": (2, 2), "pads": (0, 0, 1, 1)}),
    # patches of at most 32 bytes run as a GEMM over gathered rows: padding on every edge, a partial last panel and
    # row block, a 1-channel 5x5 (25 bytes) and a patch of exactly 32 bytes
    "k_conv3x3_rgb_c21": _sized_conv((1, 9, 7, 3), (21, 3, 3, 3), {"pads": (1, 1, 1, 1), "act_min": 0.0,
                                                                  "act_max": 6.0}),
    "k_conv5x5_s2_gray": _sized_conv((1, 11, 10, 1), (12, 5, 5, 1), {"strides": (2, 2), "pads": (2, 2, 2, 2)}),
    "k_conv2x2_c8": _sized_conv((1, 7, 6, 8), (19, 2, 2, 8), {"pads": (0, 1, 0, 1)}, bias=False),
    "k_dw3x3": _sized_conv((1, 12, 11, 72), (72, 3, 3, 1), {"pads": (1, 1, 1, 1), "groups": 72,
                                                            "act_min": 0.0, "act_max": 6.0}),
    "k_dw5x5_s2": _sized_conv((1, 13, 14, 40), (40, 5, 5, 1), {"strides": (2, 2), "pads": (2, 2, 2, 2),
                                                               "groups": 40}),
    "k_dw3x3_c7": _sized_conv((1, 6, 5, 7), (7, 3, 3, 1), {"pads": (1, 1, 1, 1), "groups": 7}),
    # AVX-512 VNNI's 64-channel tiles: a whole tile and 32 channels, whole tiles only, whole tiles and a partial one
    # (stride 2, padding on two edges only), 5x5 over two whole tiles and 16 channels
    "k_dw3x3_c96": _sized_conv((1, 4, 5, 96), (96, 3, 3, 1), {"pads": (1, 1, 1, 1), "groups": 96}),
    "k_dw3x3_c128": _sized_conv((1, 4, 3, 128), (128, 3, 3, 1), {"pads": (1, 1, 1, 1), "groups": 128}),
    "k_dw3x3_s2_c200": _sized_conv((1, 9, 10, 200), (200, 3, 3, 1), {"strides": (2, 2), "pads": (0, 0, 1, 1),
                                                                      "groups": 200, "act_min": 0.0, "act_max": 6.0}),
    "k_dw5x5_c144": _sized_conv((1, 7, 6, 144), (144, 5, 5, 1), {"pads": (2, 2, 2, 2), "groups": 144}),
    # at most 32 channels: two pixels per vector, an odd pixel left at the end of each row
    "k_dw3x3_c32": _sized_conv((1, 5, 7, 32), (32, 3, 3, 1), {"pads": (1, 1, 1, 1), "groups": 32}),
    "k_dw5x5_s2_c24": _sized_conv((1, 11, 9, 24), (24, 5, 5, 1), {"strides": (2, 2), "pads": (2, 1, 2, 1),
                                                                   "groups": 24, "act_min": 0.0}),
    # stride 2 (no column of a pixel is the pixel before's: the relaxed dot kernel transposes all three), a 1x9
    # filter (9 taps that are no 3x3: the relaxed dot runs of 4 taps, not the column groups) and a 1x7 one (a last run
    # of 3 taps) over a partial tile of 4 channels
    "k_dw3x3_s2": _sized_conv((1, 11, 12, 40), (40, 3, 3, 1), {"strides": (2, 2), "pads": (0, 0, 1, 1),
                                                               "groups": 40}),
    "k_dw1x9": _sized_conv((1, 4, 12, 16), (16, 1, 9, 1), {"pads": (1, 1, 1, 1), "groups": 16}),
    "k_dw1x7_c20": _sized_conv((1, 5, 11, 20), (20, 1, 7, 1), {"pads": (0, 3, 0, 3), "groups": 20}),
    # weights of -128: two taps' products no longer fit int16, the engine takes its portable path
    "k_dw3x3_w128": _sized_conv((1, 5, 5, 16), (16, 3, 3, 1), {"pads": (1, 1, 1, 1), "groups": 16}, wmin=-128),
    "k_fc": _sized_fc((3, 300), 77),
    # rows staged ahead of the panels (int16 on SIMD128, packed on the relaxed dot tables) in runs of 2 row blocks
    # (K 1501: a last 4-byte group of 1 byte) with a partial last block; past the stack buffer (K 4103, and on AVX2,
    # whose 6 rows of int16 pairs stage K <= 1365, K 1501), read in place
    "k_fc_runs": _sized_fc((23, 1501), 19),
    "k_fc_deep": _sized_fc((5, 4103), 11),
    # one row (wasm: the one-row GEMM on int8 panels): a last panel of 5 columns and a k tail of 2, a 1x1 convolution
    # of one pixel with a k tail of 1
    "k_fc_row": _sized_fc((1, 302), 21),
    "k_conv1x1_1px": _sized_conv((1, 1, 1, 37), (19, 1, 1, 37), {"act_min": 0.0}),
    # a classifier's float output (EfficientNet-Lite0: 1280 -> 1000), and accumulators past 2^24, rounded to float32
    "k_fc_float": _sized_fc_float((1, 1280), 1000),
    "k_fc_float_big": _sized_fc_float((3, 301), 17, bias=(1 << 24) + 12345),
    "k_add": _sized_binary("ADD", (1, 5, 7, 19), (1, 5, 7, 19)),
    "k_sub_scalar": _sized_binary("SUB", (1, 5, 7, 19), (1, 1, 1, 1)),
    "k_add_scalar_first": _sized_binary("ADD", (1, 1, 1, 1), (1, 5, 7, 19)),
    "k_transpose_rgb": _same("TRANSPOSE", {"perm": (0, 2, 3, 1)}, (2, 3, 9, 8)),
    "k_transpose_tiles": _same("TRANSPOSE", {"perm": (0, 3, 1, 2)}, (1, 20, 17, 35)),
}


# Large enough for the engine to split them into tasks over threads (tests/test_threads.py)
THREAD_CASES: dict[str, Builder] = {
    "t_conv1x1": _sized_conv((1, 28, 28, 64), (96, 1, 1, 64), {"act_min": 0.0}),
    "t_conv3x3": _sized_conv((1, 20, 20, 32), (48, 3, 3, 32), {"pads": (1, 1, 1, 1)}),
    "t_dw3x3": _sized_conv((1, 40, 40, 96), (96, 3, 3, 1), {"pads": (1, 1, 1, 1), "groups": 96}),
    "t_fc_float": _sized_fc_float((48, 512), 200),
}


def quantized_op_graph(case: str, seed: int = 0) -> tuple[Graph, dict[str, np.ndarray]]:
    """A one-op graph of CASES[case] (or KERNEL_CASES, THREAD_CASES) with output "y", and random feeds over the inputs'
    whole integer range."""
    rng = np.random.default_rng(seed)
    g = Graph()
    op, inputs, attrs, qy = {**CASES, **KERNEL_CASES, **THREAD_CASES}[case](g, rng)
    g.add_node(op, inputs, attrs, name=case, outputs=["y"], quant=[qy])
    g.outputs.append("y")
    feeds = {}
    for n in g.inputs:
        t = g.tensors[n]
        feeds[n] = (rng.standard_normal(t.shape).astype(np.float32) * 3 if t.dtype.kind == "f"
                    else _i8(rng, *t.shape).view(t.dtype))
    return g, feeds


assert {n for n in qops.KERNELS} <= {b(Graph(), np.random.default_rng(0))[0] for b in CASES.values()}
