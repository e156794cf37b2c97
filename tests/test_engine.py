"""The C engine vs python_ref, op by op: small hand-built graphs run on every native kernel path (scalar, AVX2,
AVX-512) and every wasm variant (scalar, SIMD128, relaxed SIMD), plus the aarch64 build under qemu."""

from __future__ import annotations

import functools
import platform
import subprocess
from collections.abc import Callable
from pathlib import Path

import aarch64_steps  # tests/ is on sys.path under pytest
import numpy as np
import pytest
import qgraphs

from python_ref import Interpreter
from python_ref.wrt_file import read_wrt
from wasmrt.compile.converter import convert
from wasmrt.compile.ir import Graph
from wasmrt.dev import build
from wasmrt.engines import load
from wasmrt.errors import InputError, UnsupportedOpError, WasmrtError

ENGINES = [("native", "scalar"), ("native", "avx2"), ("native", "avx512"), ("wasm", "scalar"), ("wasm", "simd"),
           ("wasm", "relaxed")]
ENGINE_IDS = [f"{e}-{v}" for e, v in ENGINES]
RTOL, ATOL = 2e-5, 2e-6

Case = Callable[[np.random.Generator], tuple[Graph, dict[str, np.ndarray]]]
CASES: dict[str, Case] = {}


def case(name: str) -> Callable[[Case], Case]:
    def reg(fn: Case) -> Case:
        assert name not in CASES
        CASES[name] = fn
        return fn
    return reg


def f32(rng: np.random.Generator, *shape: int, lo: float = -1.0, hi: float = 1.0) -> np.ndarray:
    return rng.uniform(lo, hi, shape).astype(np.float32)


def single(op: str, shape: tuple[int, ...], attrs: dict | None = None, consts: tuple = (), lo: float = -2.0,
           hi: float = 2.0, const_first: bool = False) -> Case:
    """input -> op(input, *consts) -> output"""
    def build_graph(rng: np.random.Generator) -> tuple[Graph, dict[str, np.ndarray]]:
        g = Graph()
        x = g.add_input("x", shape)
        cs = [g.add_const(f"c{i}", c) for i, c in enumerate(consts)]
        ins = [*cs, x] if const_first else [x, *cs]
        (y,) = g.add_node(op, ins, attrs or {}, name=op.lower(), outputs=["y"])
        g.outputs.append(y)
        return g, {"x": f32(rng, *shape, lo=lo, hi=hi)}
    return build_graph


def two_inputs(op: str, sa: tuple[int, ...], sb: tuple[int, ...], attrs: dict | None = None, lo: float = -2.0,
               hi: float = 2.0, lo_b: float | None = None) -> Case:
    def build_graph(rng: np.random.Generator) -> tuple[Graph, dict[str, np.ndarray]]:
        g = Graph()
        a, b = g.add_input("a", sa), g.add_input("b", sb)
        (y,) = g.add_node(op, [a, b], attrs or {}, name=op.lower(), outputs=["y"])
        g.outputs.append(y)
        return g, {"a": f32(rng, *sa, lo=lo, hi=hi), "b": f32(rng, *sb, lo=lo if lo_b is None else lo_b, hi=hi)}
    return build_graph


R = np.random.default_rng(1234)  # constants of the case table (inputs come from each test's own generator)


def w(*shape: int, scale: float = 0.5) -> np.ndarray:
    return (R.standard_normal(shape) * scale).astype(np.float32)


# -- convolutions -------------------------------------------------------------------------------------------------
RELU6 = {"act_min": 0.0, "act_max": 6.0}
case("conv1x1_gemm")(single("CONV_2D", (1, 7, 6, 5), RELU6, (w(13, 1, 1, 5), w(13))))
case("conv1x1_batch2_wide")(single("CONV_2D", (2, 5, 4, 37), {}, (w(70, 1, 1, 37), w(70))))
case("conv1x1_stride2")(single("CONV_2D", (1, 9, 8, 6), {"strides": (2, 2)}, (w(11, 1, 1, 6), w(11))))
case("conv3x3_pad1")(single("CONV_2D", (1, 8, 7, 4), {"pads": (1, 1, 1, 1)}, (w(17, 3, 3, 4), w(17))))
case("conv3x3_s2_asym")(single("CONV_2D", (1, 11, 10, 3), {"strides": (2, 2), "pads": (0, 1, 1, 0),
                                                              "act_min": -0.5, "act_max": 0.5},
                               (w(16, 3, 3, 3), w(16))))
case("conv3x3_dilated_nobias")(single("CONV_2D", (1, 10, 9, 6), {"dilations": (2, 2), "pads": (2, 1, 2, 3)},
                                      (w(9, 3, 3, 6),)))
case("conv5x2_stride21")(single("CONV_2D", (2, 9, 8, 5), {"strides": (2, 1), "pads": (2, 0, 2, 1)},
                                (w(8, 5, 2, 5), w(8))))
case("dw3x3")(single("CONV_2D", (1, 9, 8, 20), {"groups": 20, "pads": (1, 1, 1, 1), **RELU6},
                     (w(20, 3, 3, 1), w(20))))
case("dw3x3_s2_odd")(single("CONV_2D", (2, 9, 11, 13), {"groups": 13, "strides": (2, 2), "pads": (0, 0, 1, 1)},
                            (w(13, 3, 3, 1), w(13))))
case("dw5x5_s2")(single("CONV_2D", (1, 12, 12, 24), {"groups": 24, "strides": (2, 2), "pads": (1, 1, 2, 2)},
                        (w(24, 5, 5, 1), w(24))))
case("dw3x3_dilated")(single("CONV_2D", (1, 10, 10, 8), {"groups": 8, "dilations": (2, 2), "pads": (2, 2, 2, 2)},
                             (w(8, 3, 3, 1),)))
case("dw2x2_generic")(single("CONV_2D", (1, 7, 7, 9), {"groups": 9}, (w(9, 2, 2, 1), w(9))))
case("dw_multiplier2")(single("CONV_2D", (1, 6, 6, 5), {"groups": 5, "pads": (1, 1, 1, 1)},
                              (w(10, 3, 3, 1), w(10))))
case("grouped_conv")(single("CONV_2D", (1, 7, 7, 8), {"groups": 2, "pads": (1, 1, 1, 1)}, (w(6, 3, 3, 4), w(6))))
case("grouped_pointwise")(single("CONV_2D", (1, 5, 5, 12), {"groups": 3}, (w(9, 1, 1, 4), w(9))))
case("deconv2x2_s2")(single("CONV_TRANSPOSE_2D", (1, 5, 4, 6), {"strides": (2, 2)}, (w(7, 2, 2, 6), w(7))))
case("deconv3x3_s2_outpad")(single("CONV_TRANSPOSE_2D", (2, 4, 5, 3), {"strides": (2, 2), "pads": (1, 1, 1, 1),
                                                                       "output_padding": (1, 1), **RELU6},
                                   (w(5, 3, 3, 3), w(5))))
# stride = kernel: each output pixel is one product (the GEMM adds the bias and clamps; conv.c CT_TILES)
case("deconv2x2_s2_grouped_batch2")(single("CONV_TRANSPOSE_2D", (2, 3, 5, 6), {"strides": (2, 2), "groups": 2,
                                                                              **RELU6}, (w(4, 2, 2, 3), w(4))))
case("deconv3x2_s32_one_channel")(single("CONV_TRANSPOSE_2D", (1, 4, 3, 5), {"strides": (3, 2)},
                                         (w(1, 3, 2, 5), w(1))))
case("deconv_grouped_dilated")(single("CONV_TRANSPOSE_2D", (1, 4, 4, 4), {"groups": 2, "dilations": (2, 2),
                                                                          "pads": (0, 1, 2, 0)},
                                      (w(6, 3, 3, 2),)))



def _residual(xshape: tuple[int, ...], wt: np.ndarray, attrs: dict, act: dict | None = None) -> Case:
    """CONV_2D, then ADD of a second input (and a clamp): the converter fuses the add into the convolution."""
    def build_graph(rng: np.random.Generator) -> tuple[Graph, dict[str, np.ndarray]]:
        g = Graph()
        x = g.add_input("x", xshape)
        (c,) = g.add_node("CONV_2D", [x, g.add_const("w", wt), g.add_const("b", w(wt.shape[0]))], attrs, name="conv")
        rshape = g.tensors[c].shape
        r = g.add_input("r", rshape)
        (y,) = g.add_node("ADD", [r, c], act or {}, name="add", outputs=["y"])
        g.outputs.append(y)
        return g, {"x": f32(rng, *xshape), "r": f32(rng, *rshape)}
    return build_graph


case("conv1x1_residual")(_residual((1, 9, 7, 12), w(20, 1, 1, 12), {}))
case("conv1x1_residual_relu6")(_residual((2, 5, 4, 37), w(70, 1, 1, 37), {}, RELU6))
case("conv3x3_residual")(_residual((1, 8, 7, 4), w(17, 3, 3, 4), {"pads": (1, 1, 1, 1)}, {"act_min": -0.5}))
case("dw3x3_residual")(_residual((1, 9, 8, 20), w(20, 3, 3, 1), {"groups": 20, "pads": (1, 1, 1, 1)}, RELU6))
case("grouped_residual")(_residual((1, 7, 7, 8), w(6, 3, 3, 4), {"groups": 2, "pads": (1, 1, 1, 1)}))

# -- dense --------------------------------------------------------------------------------------------------------
case("fc")(single("FULLY_CONNECTED", (3, 10), {}, (w(7, 10), w(7))))
# one row over many panels: groups of several whole panels, then whole and narrow ones one by one
case("fc_one_row_wide")(single("FULLY_CONNECTED", (1, 45), {"act_max": 1.0}, (w(150, 45), w(150))))
# a 7x7 map: 49 rows leave one lone row after whole tiles of 6 or 8
case("conv1x1_lone_row")(single("CONV_2D", (1, 7, 7, 37), {}, (w(200, 1, 1, 37), w(200))))
case("fc_rank3_clamp")(single("FULLY_CONNECTED", (2, 3, 33), {"act_min": -1.0, "act_max": 1.0}, (w(19, 33),)))
case("matmul_const_b")(single("MATMUL", (2, 3, 4), {}, (w(4, 9),)))
case("matmul_batched")(two_inputs("MATMUL", (2, 3, 4), (2, 4, 5)))
case("matmul_broadcast")(two_inputs("MATMUL", (2, 1, 3, 4), (3, 4, 2)))
case("matmul_vec_left")(two_inputs("MATMUL", (4,), (2, 4, 3)))
case("matmul_vec_right")(two_inputs("MATMUL", (2, 3, 4), (4,)))

# -- element-wise -------------------------------------------------------------------------------------------------
for _op in ("ADD", "SUB", "MUL", "DIV", "MAXIMUM", "MINIMUM"):
    lo = 0.5 if _op == "DIV" else -2.0
    case(f"{_op.lower()}_same")(two_inputs(_op, (2, 3, 4, 5), (2, 3, 4, 5), lo_b=lo if _op == "DIV" else None))
    case(f"{_op.lower()}_scalar")(single(_op, (2, 5, 3), {}, (np.float32(1.75),)))
    case(f"{_op.lower()}_scalar_left")(single(_op, (2, 5, 3), {}, (np.float32(-0.75),), lo=0.5, const_first=True))
    case(f"{_op.lower()}_channel")(single(_op, (1, 4, 3, 6), {"act_min": -1.5, "act_max": 2.0},
                                          (R.uniform(0.5, 2, 6).astype(np.float32),)))
    case(f"{_op.lower()}_channel_left")(single(_op, (1, 4, 3, 6), {}, (R.uniform(0.5, 2, 6).astype(np.float32),),
                                               lo=0.5, const_first=True))
    case(f"{_op.lower()}_general")(two_inputs(_op, (2, 1, 4, 1), (1, 3, 1, 5), lo_b=lo if _op == "DIV" else None))
case("add_rank_mismatch")(two_inputs("ADD", (3, 1, 2), (4, 1)))
case("pow_square")(single("POW", (3, 7), {}, (np.float32(2.0),)))
case("pow_sqrt")(single("POW", (3, 7), {}, (np.float32(0.5),), lo=0.0, hi=3.0))
case("pow_general")(two_inputs("POW", (4, 5), (4, 5), lo=0.1, hi=2.0, lo_b=-2.0))
case("prelu_channel")(single("PRELU", (1, 5, 4, 7), {}, (R.uniform(0, 0.5, 7).astype(np.float32),)))
case("prelu_full")(single("PRELU", (1, 3, 3, 2), {}, (R.uniform(0, 0.5, (1, 3, 3, 2)).astype(np.float32),)))
case("prelu_scalar")(single("PRELU", (2, 9), {}, (np.array([0.25], np.float32),)))
case("prelu_channel_wide")(single("PRELU", (1, 6, 5, 67), {}, (R.uniform(-0.5, 0.5, (1, 1, 67)).astype(np.float32),)))
case("prelu_slope_over_w")(single("PRELU", (1, 4, 5, 3), {}, (R.uniform(0, 1, (4, 1, 3)).astype(np.float32),)))
for _op, _attrs, _lo, _hi in (
        ("RELU", {}, -2, 2), ("CLIP", {"min": -0.5, "max": 1.25}, -2, 2), ("LEAKY_RELU", {"alpha": 0.2}, -2, 2),
        ("HARD_SWISH", {}, -5, 5), ("HARD_SIGMOID", {"alpha": 0.3, "beta": 0.4}, -4, 4), ("SIGMOID", {}, -12, 12),
        ("TANH", {}, -6, 6), ("EXP", {}, -10, 10), ("SQRT", {}, 0, 9), ("ABS", {}, -3, 3), ("NEG", {}, -3, 3)):
    case(_op.lower())(single(_op, (3, 5, 67), _attrs, lo=_lo, hi=_hi))

# -- pooling and reductions ---------------------------------------------------------------------------------------
POOLS: list[tuple[str, dict]] = [
    ("s2p1", {"kernel": (3, 3), "strides": (2, 2), "pads": (1, 1, 1, 1)}),
    ("ceil", {"kernel": (3, 3), "strides": (2, 2), "ceil_mode": True}),
    ("ceil_pads", {"kernel": (3, 3), "strides": (2, 2), "pads": (1, 1, 1, 1), "ceil_mode": True}),
    ("incl_pad", {"kernel": (3, 3), "pads": (1, 1, 1, 1), "count_include_pad": True}),
    ("incl_pad_ceil", {"kernel": (2, 3), "strides": (2, 2), "pads": (0, 1, 1, 1), "count_include_pad": True,
                       "ceil_mode": True}),
    ("dilated", {"kernel": (2, 2), "dilations": (2, 2), "pads": (1, 0, 1, 1), "act_min": -0.5, "act_max": 0.5}),
    ("global", {"kernel": (7, 8)}),
]
for _k, _a in POOLS:
    case(f"maxpool_{_k}")(single("MAX_POOL_2D", (2, 7, 8, 11), _a))
    case(f"avgpool_{_k}")(single("AVERAGE_POOL_2D", (2, 7, 8, 11), _a))
case("mean_hw")(single("MEAN", (2, 5, 6, 7), {"axes": (1, 2)}))
case("mean_all")(single("MEAN", (2, 5, 6), {"axes": (), "keepdims": False}))
case("reduce_max_last")(single("REDUCE_MAX", (2, 5, 6), {"axes": (-1,), "keepdims": False}))
case("reduce_sum_0_2")(single("REDUCE_SUM", (3, 4, 5, 2), {"axes": (0, 2)}))
case("softmax_last")(single("SOFTMAX", (3, 1000), {}, lo=-8, hi=8))
case("softmax_axis1")(single("SOFTMAX", (2, 5, 3, 4), {"axis": 1}, lo=-8, hi=8))

# -- data movement ------------------------------------------------------------------------------------------------


def _reshape_chain(rng: np.random.Generator) -> tuple[Graph, dict[str, np.ndarray]]:
    g = Graph()
    x = g.add_input("x", (2, 3, 4, 5))
    (y,) = g.add_node("RELU", [x], name="r1")
    (y,) = g.add_node("RESHAPE", [y], {"shape": (6, -1)}, name="reshape")
    (y,) = g.add_node("TANH", [y], name="t", outputs=["y"])
    g.outputs.append(y)
    return g, {"x": f32(rng, 2, 3, 4, 5)}


def _concat(act: dict) -> Case:
    def build_graph(rng: np.random.Generator) -> tuple[Graph, dict[str, np.ndarray]]:
        g = Graph()
        a, b = g.add_input("a", (1, 4, 3, 5)), g.add_input("b", (1, 4, 3, 2))
        c = g.add_const("c", w(1, 4, 3, 3))
        (y,) = g.add_node("CONCATENATION", [a, c, b], {"axis": 3, **act}, name="cat", outputs=["y"])
        g.outputs.append(y)
        return g, {"a": f32(rng, 1, 4, 3, 5), "b": f32(rng, 1, 4, 3, 2)}
    return build_graph


def _gather_runtime(rng: np.random.Generator) -> tuple[Graph, dict[str, np.ndarray]]:
    g = Graph()
    x, i = g.add_input("x", (5, 4, 3)), g.add_input("i", (2, 3), np.int32)
    (y,) = g.add_node("GATHER", [x, i], {"axis": 1}, name="gather", outputs=["y"])
    g.outputs.append(y)
    return g, {"x": f32(rng, 5, 4, 3), "i": rng.integers(-4, 4, (2, 3)).astype(np.int32)}


case("reshape_aliased")(_reshape_chain)
case("transpose_nchw")(single("TRANSPOSE", (2, 5, 4, 3), {"perm": (0, 3, 1, 2)}))
case("transpose_reverse")(single("TRANSPOSE", (2, 5, 4), {"perm": ()}))
case("transpose_to_nhwc")(single("TRANSPOSE", (1, 3, 40, 37), {"perm": (0, 2, 3, 1)}))  # the graph-input transpose
case("transpose_to_nhwc_batch")(single("TRANSPOSE", (2, 19, 5, 7), {"perm": (0, 2, 3, 1)}))
# RGB images in a batch, 63 pixels each: the native vector interleave's steps, its tail, and a tile split at a matrix
case("transpose_to_nhwc_rgb_batch")(single("TRANSPOSE", (2, 3, 9, 7), {"perm": (0, 2, 3, 1)}))
case("transpose_mixed")(single("TRANSPOSE", (2, 3, 1, 4, 5), {"perm": (3, 0, 2, 4, 1)}))
case("concat_channels")(_concat({}))
case("concat_clamped")(_concat({"act_min": -0.25, "act_max": 0.5}))
case("concat_axis1")(two_inputs("CONCATENATION", (2, 3, 4), (2, 5, 4), {"axis": 1}))
case("slice_steps")(single("SLICE", (4, 9, 7), {"starts": (1, 0, 2), "ends": (4, 9, 7), "steps": (1, 2, 3)}))
case("slice_negative")(single("SLICE", (4, 9, 7), {"starts": (3, 8, 5), "ends": (-1, 1, 0), "steps": (-1, -3, -2)}))
case("pad_constant")(single("PAD", (1, 4, 5, 3), {"pads": (0, 1, 2, 0, 0, 2, 1, 1), "value": 1.5}))
case("pad_reflect")(single("PAD", (1, 4, 5, 3), {"pads": (0, 3, 2, 0, 0, 2, 4, 0), "mode": 1}))
case("pad_edge")(single("PAD", (3, 5), {"pads": (2, 1, 3, 4), "mode": 2}))
case("pad_channels")(single("PAD", (1, 6, 5, 16), {"pads": (0, 0, 0, 0, 0, 0, 0, 16)}))
case("pad_channels_and_rows")(single("PAD", (1, 3, 4, 5), {"pads": (0, 1, 0, 2, 0, 2, 0, 3), "value": -2.0}))
for _coord in range(5):
    case(f"resize_bilinear_up_c{_coord}")(single("RESIZE", (1, 5, 4, 3), {"size": (11, 9), "mode": 1,
                                                                           "coord": _coord}))
    case(f"resize_bilinear_down_c{_coord}")(single("RESIZE", (2, 9, 8, 2), {"size": (4, 3), "mode": 1,
                                                                             "coord": _coord}))
    for _nm in range(4):
        case(f"resize_nearest_c{_coord}_n{_nm}")(single("RESIZE", (1, 4, 6, 2), {"size": (9, 3), "mode": 0,
                                                                                  "coord": _coord, "nearest": _nm}))
case("resize_nearest_scales")(single("RESIZE", (1, 3, 5, 2), {"size": (6, 10), "scales": (2.0, 2.0), "mode": 0,
                                                                "coord": 2, "nearest": 2}))
case("resize_bilinear_scales")(single("RESIZE", (1, 3, 5, 2), {"size": (7, 12), "scales": (2.5, 2.5), "mode": 1}))
# pose_detection's 2x upsampling (half-pixel centres) over enough channels that the blend runs in vectors and tails
case("resize_bilinear_2x_c37")(single("RESIZE", (1, 4, 3, 37), {"size": (8, 6), "mode": 1, "coord": 0}))
case("depth_to_space_dcr")(single("DEPTH_TO_SPACE", (2, 3, 4, 12), {"block": 2, "mode": 0}))
case("depth_to_space_crd")(single("DEPTH_TO_SPACE", (1, 2, 3, 18), {"block": 3, "mode": 1}))
case("gather_const")(single("GATHER", (6, 4, 3), {"axis": 0}, (np.array([5, 0, -1, 2], np.int32),)))
case("gather_int64_axis2")(single("GATHER", (2, 4, 7), {"axis": 2}, (np.array([[6, -7], [3, 3]], np.int64),)))
case("gather_runtime")(_gather_runtime)


# -- running ------------------------------------------------------------------------------------------------------


@functools.cache
def converted(name: str) -> tuple[bytes, dict[str, np.ndarray], dict[str, np.ndarray]]:
    graph, feeds = CASES[name](np.random.default_rng(7))
    data = convert(graph).data
    return data, feeds, Interpreter(data).run(feeds)


def close(got: np.ndarray, ref: np.ndarray, rtol: float = RTOL, atol: float = ATOL) -> float:
    """Max abs error, asserted within rtol * max|ref| + atol (python_ref/README.md's comparison)."""
    assert got.shape == ref.shape and got.dtype == ref.dtype
    if ref.size == 0:
        return 0.0
    err = float(np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64))))
    bound = rtol * float(np.max(np.abs(ref))) + atol
    assert err <= bound, f"max error {err:.3g} > {bound:.3g}"
    return err


def engine_model(data: bytes, engine: str, variant: str | None):
    """The model on that engine; a skip (not a failure) when the host cannot build or run that target."""
    try:
        return load(data, engine, variant)
    except WasmrtError as e:
        if "not available" in str(e) or "compiler not found" in str(e):
            pytest.skip(str(e))
        raise


@pytest.mark.parametrize(("engine", "variant"), ENGINES, ids=ENGINE_IDS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_op_matches_reference(name: str, engine: str, variant: str) -> None:
    data, feeds, ref = converted(name)
    m = engine_model(data, engine, variant)
    got = m.run(feeds)
    for k in ref:
        close(got[k], ref[k])
    got2 = m.run(feeds)  # a second run gives the same answer (no state left in the arena)
    for k in ref:
        np.testing.assert_array_equal(got2[k], got[k])


@pytest.mark.parametrize("residual", [False, True], ids=["plain", "residual"])
@pytest.mark.parametrize(("engine", "variant"), ENGINES, ids=ENGINE_IDS)
def test_a_lone_last_row_gets_the_bytes_of_a_whole_tile(engine: str, variant: str, residual: bool) -> None:
    """A 7x7 map is 49 GEMM rows: row 48 runs alone after whole tiles of 6 or 8 (over several panels where the target
    has that kernel, a group of panels at a time, and a last, partial group on the tile's one-row path; with a fused
    residual add). Of 24 x 7 = 168 rows (whole tiles of 6 and of 8) it runs inside a tile. The same sums in the same
    order give the same bytes."""
    wt, b = w(200, 1, 1, 37), w(200)
    rng = np.random.default_rng(3)
    x, r = f32(rng, 1, 24, 7, 37), f32(rng, 1, 24, 7, 200)
    outs = []
    for rows in (7, 24):
        g = Graph()
        xi = g.add_input("x", (1, rows, 7, 37))
        (y,) = g.add_node("CONV_2D", [xi, g.add_const("w", wt), g.add_const("b", b)], {})
        if residual:
            (y,) = g.add_node("ADD", [y, g.add_input("r", (1, rows, 7, 200))], {"act_min": 0.0, "act_max": 6.0})
        g.outputs.append(y)
        m = convert(g)
        assert [op.op for op in m.graph.nodes] == ["CONV_2D"], "the add is fused into the convolution"
        feeds = {"x": x[:, :rows], **({"r": r[:, :rows]} if residual else {})}
        outs.append(engine_model(m.data, engine, variant).run(feeds)[g.tensors[y].name])
    np.testing.assert_array_equal(outs[0], outs[1][:, :7])


QUANTIZED = sorted(qgraphs.CASES) + sorted(qgraphs.KERNEL_CASES)


@functools.cache
def quantized(name: str) -> tuple[bytes, dict[str, np.ndarray], dict[str, np.ndarray]]:
    graph, feeds = qgraphs.quantized_op_graph(name, seed=7)
    data = convert(graph).data
    return data, feeds, Interpreter(data).run(feeds)


# AVX-512 VNNI differs from AVX-512 only in its int8 kernels
QENGINES = [*ENGINES, ("native", "avx512vnni")]


@pytest.mark.parametrize(("engine", "variant"), QENGINES, ids=[f"{e}-{v}" for e, v in QENGINES])
@pytest.mark.parametrize("name", QUANTIZED)
def test_quantized_op_is_bit_exact(name: str, engine: str, variant: str) -> None:
    """int8 has one right answer (python_ref's integer arithmetic and fp32 requantization): every path gives it."""
    data, feeds, ref = quantized(name)
    m = engine_model(data, engine, variant)
    for _ in range(2):  # the second run finds the arena as the first left it
        got = m.run(feeds)
        for k in ref:
            assert got[k].dtype == ref[k].dtype
            np.testing.assert_array_equal(got[k], ref[k], err_msg=f"{name} on {engine}-{variant}")


# The relaxed module's probe (kernels_wasm/engine/target.c) on the same bytes, here in wasmtime's own terms: which
# int8 kernel table the host should get. Its second operand has bytes past 127 and pair sums past int16.
RDOT_A = [127, 127, 127, 127, -128, -128, -128, -128, 127, -128, 5, -7, 100, -100, 1, 0]
RDOT_B = [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x80, 0xFF, 0x80, 0x80, 0x7F, 0x90, 0x01, 0xC8, 0xC8, 0x00, 0xFF]
RDOT_C = [1, -2, 3, -4]
RDOT_TABLES = {"usdot": "wasm_relaxed_usdot", "sdot": "wasm_relaxed_sdot", "other": "wasm_relaxed"}


def relaxed_dot_kind(lanes: list[int]) -> str:
    """usdot, sdot or other: what i32x4.relaxed_dot_i8x16_i7x16_add_s(RDOT_A, RDOT_B, RDOT_C) computed."""
    def dot(signed_b: bool) -> list[int]:
        b = [x - 256 if signed_b and x > 127 else x for x in RDOT_B]
        return [RDOT_C[lane] + sum(RDOT_A[j] * b[j] for j in range(4 * lane, 4 * lane + 4)) for lane in range(4)]
    return "usdot" if lanes == dot(False) else "sdot" if lanes == dot(True) else "other"


def emulate_relaxed_dot(how: str) -> list[int]:
    """The instruction as each kind of host lowers it: x86 VNNI vpdpbusd (b unsigned), aarch64 sdot (b signed), x86
    pmaddubsw + pmaddwd (b unsigned, each pair of products saturated to int16)."""
    a = np.array(RDOT_A, np.int64).reshape(4, 2, 2)
    b = np.array(RDOT_B, np.int64).reshape(4, 2, 2)
    if how == "sdot":
        b = np.where(b > 127, b - 256, b)
    pairs = (a * b).sum(axis=2)
    if how == "pmaddubsw":
        pairs = np.clip(pairs, -32768, 32767)
    return (pairs.sum(axis=1) + np.array(RDOT_C)).tolist()


def test_relaxed_dot_kind_classifies_each_host_behaviour() -> None:
    assert emulate_relaxed_dot("vpdpbusd")[0] == 1 + 4 * 127 * 255
    assert emulate_relaxed_dot("pmaddubsw")[0] == 1 + 2 * 32767
    assert [relaxed_dot_kind(emulate_relaxed_dot(h)) for h in ("vpdpbusd", "sdot", "pmaddubsw")] == \
        ["usdot", "sdot", "other"]


def wasmtime_relaxed_dot(deterministic: bool) -> list[int]:
    import wasmtime

    cfg = wasmtime.Config()
    cfg.wasm_simd = cfg.wasm_relaxed_simd = True
    cfg.wasm_relaxed_simd_deterministic = deterministic
    engine = wasmtime.Engine(cfg)
    store = wasmtime.Store(engine)
    wat = """(module (memory (export "m") 1) (func (export "f")
      (v128.store (i32.const 48) (i32x4.relaxed_dot_i8x16_i7x16_add_s
        (v128.load (i32.const 0)) (v128.load (i32.const 16)) (v128.load (i32.const 32))))))"""
    ex = wasmtime.Instance(store, wasmtime.Module(engine, wat), []).exports(store)
    mem = ex["m"]
    mem.write(store, np.array(RDOT_A, np.int8).tobytes() + np.array(RDOT_B, np.uint8).tobytes()
              + np.array(RDOT_C, "<i4").tobytes(), 0)
    ex["f"](store)
    return np.frombuffer(bytes(mem.read(store, 48, 64)), "<i4").tolist()


@pytest.mark.parametrize("deterministic", [False, True], ids=["wasmtime", "wasmtime-deterministic"])
def test_relaxed_module_picks_the_int8_table_of_its_host(deterministic: bool) -> None:
    """wasmtime on x86 runs the relaxed int8 dot product as pmaddubsw (saturating: the SIMD128-style table) and, in
    its deterministic mode, as signed x signed (the sdot table); Chromium on a VNNI CPU gives the usdot table
    (tests/test_int8_browser.py). Each table's int8 graphs equal python_ref bit for bit."""
    from wasmrt.engines.wasm import WasmInstance, WasmModel

    lanes = wasmtime_relaxed_dot(deterministic)
    if platform.machine() in ("x86_64", "AMD64"):  # what wasmtime's x86 backend is known to emit
        assert lanes == emulate_relaxed_dot("sdot" if deterministic else "pmaddubsw")
    want = RDOT_TABLES[relaxed_dot_kind(lanes)]
    inst = WasmInstance("relaxed", deterministic=deterministic)
    for name in QUANTIZED:
        data, feeds, ref = quantized(name)
        m = WasmModel(data, instance=inst)
        assert m.variant == want
        got = m.run(feeds)
        for k in ref:
            np.testing.assert_array_equal(got[k], ref[k], err_msg=f"{name} on {want}")


def test_forced_native_paths_are_distinct() -> None:
    data, _, _ = converted("conv3x3_pad1")
    seen = set()
    for v in ("scalar", "avx2", "avx512"):
        try:
            seen.add(load(data, "native", v).variant)
        except WasmrtError:
            continue
    assert "scalar" in seen and len(seen) >= 2


def test_wasm_variants_report_their_kernels() -> None:
    data, _, _ = converted("conv3x3_pad1")
    assert [load(data, "wasm", v).variant for v in ("scalar", "simd", "relaxed")] == \
        ["scalar", "wasm_simd128", "wasm_relaxed"]


@pytest.mark.parametrize("variant", ["scalar", "simd", "relaxed"])
def test_wasm_module_is_freestanding(variant: str) -> None:
    """No imports (no libc, no JS glue), the C API exported, and the scalar module valid without SIMD support."""
    import wasmtime

    art = build.build_wasm(variant)
    print(f"wasmrt-{variant}.wasm: {art.size:,} bytes")
    cfg = wasmtime.Config()
    cfg.wasm_simd = variant != "scalar"
    cfg.wasm_relaxed_simd = variant == "relaxed"
    module = wasmtime.Module(wasmtime.Engine(cfg), art.path.read_bytes())
    assert module.imports == []
    # only functions and the memory: WeChat on iOS cannot instantiate a module that exports a Global
    assert all(isinstance(e.type, wasmtime.FuncType | wasmtime.MemoryType) for e in module.exports)
    assert set(build.EXPORTS) | {"memory"} <= {e.name for e in module.exports}
    assert art.path.read_bytes() == (build.PACKAGE_DIST / art.path.name).read_bytes()  # shipped in the package
    assert art.size <= build.SIMD_WASM_LIMIT


@pytest.mark.parametrize("engine", ["native", "wasm"])
def test_specs_and_input_errors(engine: str) -> None:
    data, feeds, _ = converted("conv3x3_pad1")
    m = load(data, engine)
    assert [(s.name, s.shape, s.dtype) for s in m.inputs] == [("x", (1, 8, 7, 4), np.dtype(np.float32))]
    assert [(s.name, s.shape) for s in m.outputs] == [("y", (1, 8, 7, 17))]
    with pytest.raises(InputError, match="shape"):
        m.run({"x": np.zeros((1, 8, 7, 5), np.float32)})
    with pytest.raises(InputError, match="unknown input"):
        m.run({**feeds, "z": feeds["x"]})
    m.release()
    with pytest.raises(WasmrtError, match="released"):
        m.run(feeds)


@pytest.mark.parametrize("engine", ["native", "wasm"])
def test_runtime_gather_index_error_is_an_input_error(engine: str) -> None:
    data, feeds, _ = converted("gather_runtime")
    m = load(data, engine)
    with pytest.raises(InputError, match=r"GATHER 'gather'.*index 9 out of range"):
        m.run({**feeds, "i": np.full((2, 3), 9, np.int32)})


def test_unsupported_dtype_is_named() -> None:
    g = Graph()
    x = g.add_input("x", (4,), np.int32)
    (y,) = g.add_node("ABS", [x], name="abs_int", outputs=["y"])
    g.outputs.append(y)
    data = convert(g).data
    for engine in ("native", "wasm"):
        with pytest.raises(UnsupportedOpError, match=r"operator 0 \(ABS 'abs_int'\): int32 inputs are not supported"):
            load(data, engine)


# -- long reductions on near-constant data -------------------------------------------------------------------------
# A float32 running sum over 4096 taps drifts by ~2e-4 relative on flat camera-like frames (selfie_segmentation's
# squeeze-excite global pool); python_ref sums in float64. The engine must stay within 1e-5 of it.
FLAT_REDUCTIONS: dict[str, tuple[str, tuple[int, ...], dict]] = {
    "avgpool_global_64": ("AVERAGE_POOL_2D", (1, 64, 64, 19), {"kernel": (64, 64)}),
    "avgpool_global_96x80": ("AVERAGE_POOL_2D", (1, 96, 80, 3), {"kernel": (96, 80)}),
    "avgpool_strided_large": ("AVERAGE_POOL_2D", (1, 40, 40, 5), {"kernel": (20, 20), "strides": (20, 20)}),
    "mean_hw_64": ("MEAN", (1, 64, 64, 19), {"axes": (1, 2)}),
    "reduce_sum_all": ("REDUCE_SUM", (1, 64, 64, 3), {"axes": ()}),
    "softmax_4096": ("SOFTMAX", (2, 4096), {}),
}


@pytest.mark.parametrize(("engine", "variant"), ENGINES, ids=ENGINE_IDS)
@pytest.mark.parametrize("name", sorted(FLAT_REDUCTIONS))
def test_long_reduction_on_near_constant_data(name: str, engine: str, variant: str) -> None:
    op, shape, attrs = FLAT_REDUCTIONS[name]
    g, _ = single(op, shape, attrs)(np.random.default_rng(0))
    data = convert(g).data
    rng = np.random.default_rng(3)
    x = np.broadcast_to(rng.uniform(0.2, 0.9, shape[-1]), shape).astype(np.float32)  # a flat frame: constant
    x[..., :2, :] += rng.uniform(-0.1, 0.1, x[..., :2, :].shape).astype(np.float32)  # per channel, a busy edge
    ref = Interpreter(data).run({"x": x})["y"]
    got = engine_model(data, engine, variant).run({"x": x})["y"]
    close(got, ref, rtol=1e-5, atol=0.0)


@pytest.mark.parametrize(("engine", "variant"), ENGINES, ids=ENGINE_IDS)
def test_mean_over_rows_sums_in_order(engine: str, variant: str) -> None:
    """MEAN over every axis but the channels: per channel one float64 sum over the pixels in order, divided once; the
    bytes of that on every engine (the SIMD wasm builds add two channels at a time on f64x2, reduce.c add_row; a
    float32 accumulation changes 28 of these 38 outputs). 19 channels: the vector pairs and an odd last one."""
    shape = (2, 9, 11, 19)
    g, _ = single("MEAN", shape, {"axes": (1, 2)})(np.random.default_rng(0))
    x = np.random.default_rng(4).uniform(-3, 5, shape).astype(np.float32)
    rows = x.astype(np.float64).reshape(2, -1, 19)
    want = (np.cumsum(rows, axis=1)[:, -1] / rows.shape[1]).astype(np.float32).reshape(2, 1, 1, 19)
    got = engine_model(convert(g).data, engine, variant).run({"x": x})["y"]
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


# -- aarch64 under qemu -------------------------------------------------------------------------------------------
AARCH64_CASES = ["conv1x1_gemm", "conv1x1_lone_row", "fc_one_row_wide", "conv3x3_s2_asym", "dw3x3", "dw5x5_s2",
                 "grouped_conv", "deconv3x3_s2_outpad",
                 "fc", "matmul_batched", "add_channel", "div_general", "sigmoid", "hard_swish", "maxpool_ceil_pads",
                 "avgpool_incl_pad_ceil", "mean_hw", "softmax_last", "resize_bilinear_up_c0", "pad_reflect",
                 "concat_channels", "depth_to_space_dcr", "transpose_nchw"]
AARCH64_QUANTIZED = ["conv", "conv_depthwise", "fully_connected", "add", "average_pool", "softmax", "resize_bilinear",
                     "k_conv1x1", "k_conv3x3", "k_dw3x3", "k_dw5x5_c144", "k_fc", "k_fc_float", "k_fc_float_big",
                     "k_add", "k_sub_scalar", "k_transpose_tiles"]


@pytest.fixture(scope="module")
def aarch64_driver() -> Path:
    return aarch64_steps.driver()


@pytest.mark.parametrize("cpu", ["max", "cortex-a53"])
def test_aarch64_under_qemu(aarch64_driver: Path, tmp_path: Path, cpu: str) -> None:
    """NEON kernels on an emulated armv8.2 CPU (max); cortex-a53 has no dotprod/fp16 but runs the f32 NEON path.
    The int8 cases must be bit-exact."""
    for name in [*AARCH64_CASES, *AARCH64_QUANTIZED]:
        data, feeds, ref = quantized(name) if name in AARCH64_QUANTIZED else converted(name)
        d = tmp_path / name
        d.mkdir()
        (d / "m.wrt").write_bytes(data)
        spec = Interpreter(data)
        ins = []
        for k, s in enumerate(spec.inputs):
            p = d / f"in{k}.bin"
            p.write_bytes(np.ascontiguousarray(feeds[s.name]).tobytes())
            ins.append(str(p))
        r = subprocess.run(["qemu-aarch64", "-cpu", cpu, str(aarch64_driver), "run", str(d / "m.wrt"), str(d), *ins],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, f"{name}: {r.stderr}"
        assert r.stdout.strip() == "neon", r.stdout
        for k, s in enumerate(spec.outputs):
            got = np.fromfile(d / f"out{k}.bin", s.dtype).reshape(s.shape)
            if name in AARCH64_QUANTIZED:
                np.testing.assert_array_equal(got, ref[s.name], err_msg=name)
            else:
                close(got, ref[s.name])


@pytest.mark.parametrize(("engine", "variant"), [("native", None), ("wasm", "scalar"), ("wasm", "relaxed")])
def test_cli_run_on_c_engines(tmp_path: Path, capsys: pytest.CaptureFixture[str], engine: str,
                              variant: str | None) -> None:
    from wasmrt.cli.main import main

    data, feeds, ref = converted("conv3x3_pad1")
    model, x = tmp_path / "m.wrt", tmp_path / "x.npy"
    model.write_bytes(data)
    np.save(x, feeds["x"])
    args = ["run", str(model), "--engine", engine, "--input", f"x={x}", "-o", str(tmp_path / "out")]
    assert main([*args, *(["--variant", variant] if variant else [])]) == 0
    assert f"on the {engine} engine" in capsys.readouterr().out
    close(np.load(tmp_path / "out" / "y.npy"), ref["y"])


def test_cli_build_is_incremental(capsys: pytest.CaptureFixture[str]) -> None:
    from wasmrt.cli.main import main

    build.build_wasm("simd")
    assert main(["build", "--only", "wasm"]) == 0
    out = capsys.readouterr().out
    assert out.count("up to date") == len(build.WASM_VARIANTS) and "wasmrt-simd.wasm" in out


@pytest.mark.parametrize(("engine", "variant"), ENGINES, ids=ENGINE_IDS)
def test_fp16_stored_weights_widen_exactly(engine: str, variant: str) -> None:
    """Weights stored as FLOAT16 (lossless 'auto' storage) widen to the same float32 values the reference uses,
    including fp16 subnormals, signed zeros and the largest finite value."""
    special = np.array([0.0, -0.0, 2.0**-24, -(2.0**-24), 2.0**-15, 6.1e-5, 65504.0, -65504.0, 1.0, -2.5], np.float16)
    wts = np.resize(special, (4, 3, 3, 5)).astype(np.float32) * np.float32(1e-4)
    wts[..., 0] = np.resize(special, (4, 3, 3)).astype(np.float32)  # exact fp16 values, unscaled
    wts = wts.astype(np.float16).astype(np.float32)
    g = Graph()
    x = g.add_input("x", (1, 5, 5, 5))
    (y,) = g.add_node("CONV_2D", [x, g.add_const("w", wts)], {"pads": (1, 1, 1, 1)}, outputs=["y"])
    g.outputs.append(y)
    data = convert(g).data
    assert next(t for t in read_wrt(data).tensors if t.name == "w").stored_dtype == np.float16
    feeds = {"x": np.random.default_rng(5).uniform(-1, 1, (1, 5, 5, 5)).astype(np.float32)}
    ref = Interpreter(data).run(feeds)["y"]
    close(engine_model(data, engine, variant).run(feeds)["y"], ref)
