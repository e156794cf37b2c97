"""python_ref ops against onnxruntime, op by op.

Each case builds a one-node ONNX model (NCHW, ONNX weight layouts), runs it in onnxruntime, runs our op on the
NHWC / OHWI transposed tensors, and compares. Tolerance: max|ref - ort| <= rtol * max|ort| + atol, per test.
onnxruntime accumulates in float32 while the reference accumulates in float64, so reductions over K terms get
rtol ~1e-5; element-wise ops get 1e-6.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper

from python_ref import dispatch, ops, shapes
from python_ref.opdefs import OPS, CoordMode, DepthToSpaceMode, NearestMode, PadMode, QuantType, ResizeMode
from python_ref.quant import QuantParams
from tests.breadth_samples import breadth_samples

RNG = np.random.default_rng(1234)
OPSET = 19


class Const:
    """An ONNX input given as an initializer (shape-like inputs such as Reshape's shape)."""

    def __init__(self, value: Any) -> None:
        self.value = np.asarray(value)


def ort_run(op_type: str, inputs: list[Any], opset: int = OPSET, **attrs: Any) -> np.ndarray:
    """Run a single ONNX node. inputs: arrays (graph inputs), Const (initializers) or None (absent)."""
    names, feeds, vinfos, inits = [], {}, [], []
    for k, v in enumerate(inputs):
        if v is None:
            names.append("")
            continue
        name = f"in{k}"
        names.append(name)
        if isinstance(v, Const):
            inits.append(numpy_helper.from_array(v.value, name))
        else:
            v = np.asarray(v)
            feeds[name] = v
            vinfos.append(helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape))
    node = helper.make_node(op_type, names, ["y"], **attrs)
    first = inputs[0].value if isinstance(inputs[0], Const) else np.asarray(inputs[0])
    out = helper.make_tensor_value_info("y", helper.np_dtype_to_tensor_dtype(first.dtype), None)
    graph = helper.make_graph([node], "g", vinfos, [out], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


def ref(op: str, inputs: list[np.ndarray | None], **attrs: Any) -> np.ndarray:
    return dispatch.run(op, inputs, attrs)[0]


def assert_close(got: np.ndarray, want: np.ndarray, rtol: float = 1e-6, atol: float = 1e-6) -> None:
    assert got.shape == want.shape, f"shape {got.shape} != {want.shape}"
    assert got.dtype == want.dtype, f"dtype {got.dtype} != {want.dtype}"
    if got.size == 0:
        return
    if got.dtype.kind != "f":
        np.testing.assert_array_equal(got, want)
        return
    err = float(np.max(np.abs(got.astype(np.float64) - want)))
    bound = rtol * float(np.max(np.abs(want))) + atol
    assert err <= bound, f"max|ref-ort| = {err:.3g} > {bound:.3g}"


def rand(*shape: int, lo: float = -1.0, hi: float = 1.0) -> np.ndarray:
    return RNG.uniform(lo, hi, shape).astype(np.float32)


def nchw(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2))


def nhwc(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1))


# -- convolution and dense -------------------------------------------------------------------------------------------
# (N, H, W, Cin, Cout, (KH, KW), strides, dilations, pads [t, l, b, r], groups, bias)
CONV_CASES = [
    (1, 7, 9, 5, 3, (3, 3), (2, 2), (1, 1), (1, 0, 2, 1), 1, True),  # odd sizes, stride 2, asymmetric pads
    (2, 1, 1, 6, 10, (1, 1), (1, 1), (1, 1), (0, 0, 0, 0), 1, True),  # 1x1 spatial, pointwise
    (1, 9, 11, 7, 7, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), 7, True),  # depthwise, odd channel count
    (1, 8, 8, 3, 6, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), 3, False),  # depthwise, channel multiplier 2
    (1, 6, 7, 6, 9, (3, 3), (1, 2), (1, 1), (0, 1, 1, 0), 3, True),  # grouped
    (1, 10, 10, 4, 5, (3, 3), (1, 1), (2, 2), (2, 2, 2, 2), 1, True),  # dilation
    (1, 12, 9, 8, 8, (5, 5), (2, 2), (2, 1), (3, 2, 2, 3), 8, True),  # depthwise 5x5, dilation, stride
    (1, 6, 10, 3, 4, (3, 5), (3, 2), (1, 1), (0, 0, 0, 0), 1, False),  # rectangular kernel, stride > 1
    (1, 2, 2, 13, 17, (3, 3), (1, 1), (1, 1), (2, 2, 2, 2), 1, True),  # pads larger than the input
]


@pytest.mark.parametrize("case", CONV_CASES)
def test_conv2d(case: tuple) -> None:
    n, h, w, cin, cout, (kh, kw), s, d, p, g, bias = case
    x, wt = rand(n, h, w, cin), rand(cout, kh, kw, cin // g)
    b = rand(cout) if bias else None
    want = ort_run("Conv", [nchw(x), wt.transpose(0, 3, 1, 2), b], strides=s, dilations=d,
                   pads=[p[0], p[1], p[2], p[3]], group=g, kernel_shape=[kh, kw])
    got = ref("CONV_2D", [x, wt, b], strides=s, dilations=d, pads=p, groups=g)
    assert_close(got, nhwc(want), rtol=1e-5)
    clamped = ref("CONV_2D", [x, wt, b], strides=s, dilations=d, pads=p, groups=g, act_min=0.0, act_max=0.5)
    assert_close(clamped, np.clip(nhwc(want), 0.0, 0.5), rtol=1e-5)


def test_conv2d_in_row_bands(monkeypatch: pytest.MonkeyPatch) -> None:
    """Large outputs are computed in bands of rows: force tiny bands and compare with one-shot."""
    x, wt, b = rand(2, 9, 7, 6), rand(4, 3, 3, 3), rand(4)
    attrs = {"strides": (2, 1), "dilations": (1, 2), "pads": (1, 2, 1, 1), "groups": 2}
    whole = ref("CONV_2D", [x, wt, b], **attrs)
    monkeypatch.setattr(ops, "_IM2COL_BYTES", 1)
    np.testing.assert_array_equal(ref("CONV_2D", [x, wt, b], **attrs), whole)


def _onnx_convtranspose_weights(w: np.ndarray, g: int) -> np.ndarray:
    """Our [Cout, KH, KW, Cin/g] -> ONNX [Cin, Cout/g, KH, KW]."""
    cout, kh, kw, cg = w.shape
    return np.ascontiguousarray(w.reshape(g, cout // g, kh, kw, cg).transpose(0, 4, 1, 2, 3)
                                .reshape(g * cg, cout // g, kh, kw))


# (N, H, W, Cin, Cout, (KH, KW), strides, dilations, pads, output_padding, groups)
CONVT_CASES = [
    (1, 3, 4, 5, 3, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    (1, 5, 5, 4, 6, (4, 4), (2, 2), (1, 1), (1, 0, 2, 1), (0, 1), 2),  # groups, asymmetric pads
    (2, 1, 1, 3, 2, (2, 2), (1, 1), (1, 1), (0, 0, 0, 0), (0, 0), 1),  # 1x1 input
    (1, 4, 3, 6, 6, (3, 3), (3, 2), (2, 1), (0, 2, 1, 0), (2, 1), 6),  # depthwise, dilation, output_padding
    (1, 4, 4, 2, 3, (3, 2), (1, 1), (1, 1), (1, 0, 0, 1), (0, 0), 1),
]


@pytest.mark.parametrize("case", CONVT_CASES)
def test_conv_transpose2d(case: tuple) -> None:
    n, h, w, cin, cout, (kh, kw), s, d, p, op, g = case
    x, wt, b = rand(n, h, w, cin), rand(cout, kh, kw, cin // g), rand(cout)
    want = ort_run("ConvTranspose", [nchw(x), _onnx_convtranspose_weights(wt, g), b], strides=s, dilations=d,
                   pads=list(p), group=g, kernel_shape=[kh, kw], output_padding=list(op))
    got = ref("CONV_TRANSPOSE_2D", [x, wt, b], strides=s, dilations=d, pads=p, groups=g, output_padding=op)
    assert_close(got, nhwc(want), rtol=1e-5)


@pytest.mark.parametrize("xshape", [(3, 7), (2, 3, 7), (1, 7)])
@pytest.mark.parametrize("bias", [True, False])
def test_fully_connected(xshape: tuple[int, ...], bias: bool) -> None:
    x, w = rand(*xshape), rand(5, 7)
    b = rand(5) if bias else None
    want = ort_run("Gemm", [x.reshape(-1, 7), w, b], transB=1).reshape(*xshape[:-1], 5)
    assert_close(ref("FULLY_CONNECTED", [x, w, b]), want, rtol=1e-5)
    assert_close(ref("FULLY_CONNECTED", [x, w, b], act_max=0.25), np.minimum(want, 0.25), rtol=1e-5)


@pytest.mark.parametrize(("sa", "sb"), [((3, 4), (4, 5)), ((2, 1, 3, 4), (5, 4, 6)), ((4,), (3, 4, 2)),
                                        ((2, 3, 4), (4,)), ((4,), (4,)), ((1, 6), (6, 1))])
def test_matmul(sa: tuple[int, ...], sb: tuple[int, ...]) -> None:
    a, b = rand(*sa), rand(*sb)
    assert_close(ref("MATMUL", [a, b]), ort_run("MatMul", [a, b]), rtol=1e-5)


def test_matmul_int32() -> None:
    a, b = RNG.integers(-50, 50, (2, 3, 4), dtype=np.int32), RNG.integers(-50, 50, (4, 2), dtype=np.int32)
    assert_close(ref("MATMUL", [a, b]), ort_run("MatMul", [a, b]))


# -- element-wise ----------------------------------------------------------------------------------------------------
BINARY = {"ADD": "Add", "SUB": "Sub", "MUL": "Mul", "DIV": "Div", "MAXIMUM": "Max", "MINIMUM": "Min", "POW": "Pow"}
BCAST = [((2, 3, 5), (2, 3, 5)), ((3, 1, 5), (4, 1)), ((1,), (2, 3)), ((), (4,)), ((2, 1, 1, 7), (1, 3, 5, 1))]


@pytest.mark.parametrize("op", sorted(BINARY))
@pytest.mark.parametrize(("sa", "sb"), BCAST)
def test_binary_float(op: str, sa: tuple[int, ...], sb: tuple[int, ...]) -> None:
    a, b = rand(*sa), rand(*sb)
    if op == "POW":
        a = np.abs(a) + 0.1
    if op == "DIV":
        b = np.where(np.abs(b) < 0.1, 0.5, b).astype(np.float32)
    want = ort_run(BINARY[op], [a, b])
    assert_close(ref(op, [a, b]), want, rtol=2e-6)
    if op != "POW":
        assert_close(ref(op, [a, b], act_min=-0.5, act_max=0.5), np.clip(want, -0.5, 0.5), rtol=2e-6)


@pytest.mark.parametrize("op", ["ADD", "SUB", "MUL", "DIV", "MAXIMUM", "MINIMUM"])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_binary_int(op: str, dtype: type) -> None:
    a = RNG.integers(-20, 20, (3, 4), dtype=dtype)
    b = RNG.integers(1, 7, (4,), dtype=dtype) * np.array([1, -1, 1, -1], dtype=dtype)
    assert_close(ref(op, [a, b]), ort_run(BINARY[op], [a, b]))


def test_div_int_truncates_toward_zero() -> None:
    a, b = np.array([-7, 7, -7, 7, 6, -6], np.int32), np.array([2, -2, -2, 2, -3, 4], np.int32)
    np.testing.assert_array_equal(ref("DIV", [a, b]), [-3, -3, 3, 3, -2, -1])
    np.testing.assert_array_equal(ref("DIV", [a, b]), ort_run("Div", [a, b]))


@pytest.mark.parametrize("sslope", [(5,), (1,), (3, 1), (2, 3, 5)])
def test_prelu(sslope: tuple[int, ...]) -> None:
    x, s = rand(2, 3, 5), rand(*sslope)
    assert_close(ref("PRELU", [x, s]), ort_run("PRelu", [x, s]))


UNARY: list[tuple[str, str, dict[str, Any], dict[str, Any]]] = [  # (ours, onnx, our attrs, onnx attrs)
    ("RELU", "Relu", {}, {}),
    ("LEAKY_RELU", "LeakyRelu", {}, {}),
    ("LEAKY_RELU", "LeakyRelu", {"alpha": 0.3}, {"alpha": 0.3}),
    ("HARD_SWISH", "HardSwish", {}, {}),
    ("HARD_SIGMOID", "HardSigmoid", {}, {}),
    ("HARD_SIGMOID", "HardSigmoid", {"alpha": 1 / 6, "beta": 0.5}, {"alpha": 1 / 6, "beta": 0.5}),
    ("SIGMOID", "Sigmoid", {}, {}),
    ("TANH", "Tanh", {}, {}),
    ("EXP", "Exp", {}, {}),
    ("SQRT", "Sqrt", {}, {}),
    ("ABS", "Abs", {}, {}),
    ("NEG", "Neg", {}, {}),
]


@pytest.mark.parametrize(("op", "onnx_op", "attrs", "onnx_attrs"), UNARY, ids=[u[0] + str(u[2]) for u in UNARY])
def test_unary(op: str, onnx_op: str, attrs: dict[str, Any], onnx_attrs: dict[str, Any]) -> None:
    x = rand(2, 3, 37, lo=-8.0, hi=8.0)
    x[0, 0, :5] = [-3.0, 3.0, 0.0, -0.0, 2.5]  # kinks of the hard functions
    if op == "SQRT":
        x = np.abs(x)
    # onnxruntime's vectorized exp/tanh/sigmoid are a few float32 ulps off; the reference is correctly rounded
    assert_close(ref(op, [x], **attrs), ort_run(onnx_op, [x], **onnx_attrs), rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize(("lo", "hi"), [(0.0, 6.0), (-0.5, math.inf), (-math.inf, 0.25), (0.1, 0.1)])
def test_clip(lo: float, hi: float) -> None:
    x = rand(4, 9, lo=-8, hi=8)
    want = ort_run("Clip", [x, Const(np.float32(lo)), Const(np.float32(hi))])
    assert_close(ref("CLIP", [x], min=lo, max=hi), want)


@pytest.mark.parametrize("op", ["RELU", "ABS", "NEG", "CLIP"])
def test_unary_int(op: str) -> None:
    x = RNG.integers(-9, 9, (3, 5)).astype(np.int32)
    attrs = {"min": -2.5, "max": 4.0} if op == "CLIP" else {}
    got = ref(op, [x], **attrs)
    want = np.clip(x, -2, 4) if op == "CLIP" else {"RELU": np.maximum(x, 0), "ABS": np.abs(x), "NEG": -x}[op]
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want)


# -- pooling and reductions ------------------------------------------------------------------------------------------
# ((N, H, W, C), kernel, strides, dilations, pads, ceil_mode, count_include_pad)
POOL_CASES = [
    ((1, 7, 7, 3), (3, 3), (2, 2), (1, 1), (0, 0, 0, 0), False, False),
    ((1, 7, 8, 5), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), False, False),
    ((1, 7, 8, 5), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), False, True),
    ((1, 6, 6, 2), (3, 3), (2, 2), (1, 1), (0, 0, 0, 0), True, False),  # ceil_mode adds a partial window
    ((1, 6, 6, 2), (3, 3), (2, 2), (1, 1), (1, 0, 0, 1), True, True),  # ceil, asymmetric pads, include pad
    ((1, 5, 5, 3), (2, 2), (2, 2), (1, 1), (1, 1, 1, 1), True, True),  # ceil window starting in the bottom pad
    ((1, 5, 5, 3), (2, 2), (2, 2), (1, 1), (1, 1, 1, 1), True, False),
    ((1, 6, 6, 2), (3, 3), (2, 2), (1, 1), (0, 0, 0, 0), True, True),  # ceil overhang is not in the divisor
    ((1, 8, 6, 2), (3, 3), (2, 2), (1, 1), (1, 0, 1, 0), True, True),  # window over explicit pad and overhang
    ((2, 9, 10, 4), (3, 2), (1, 3), (1, 1), (2, 0, 1, 1), False, True),
    ((1, 11, 11, 3), (3, 3), (2, 2), (2, 2), (2, 1, 1, 2), True, False),  # dilation
    ((1, 11, 11, 3), (3, 3), (3, 3), (2, 1), (1, 0, 2, 1), True, True),  # dilation, ceil, include pad
    ((1, 1, 1, 9), (1, 1), (1, 1), (1, 1), (0, 0, 0, 0), False, False),  # 1x1 spatial
    ((1, 4, 4, 3), (4, 4), (1, 1), (1, 1), (0, 0, 0, 0), False, False),  # global
    ((1, 8, 8, 3), (2, 2), (3, 3), (1, 1), (0, 0, 0, 0), True, False),  # stride > kernel
]


@pytest.mark.parametrize("case", POOL_CASES)
@pytest.mark.parametrize("op", ["MAX_POOL_2D", "AVERAGE_POOL_2D"])
def test_pool(op: str, case: tuple) -> None:
    shape, k, s, d, p, ceil, cip = case
    x = rand(*shape)
    onnx_attrs: dict[str, Any] = {"kernel_shape": list(k), "strides": list(s), "dilations": list(d),
                                  "pads": list(p), "ceil_mode": int(ceil)}
    if op == "AVERAGE_POOL_2D":
        onnx_attrs["count_include_pad"] = int(cip)
    want = nhwc(ort_run("MaxPool" if op == "MAX_POOL_2D" else "AveragePool", [nchw(x)], **onnx_attrs))
    got = ref(op, [x], kernel=k, strides=s, dilations=d, pads=p, ceil_mode=ceil, count_include_pad=cip)
    assert_close(got, want, rtol=1e-6)
    clamped = ref(op, [x], kernel=k, strides=s, dilations=d, pads=p, ceil_mode=ceil, count_include_pad=cip,
                  act_min=0.0, act_max=0.3)
    assert_close(clamped, np.clip(want, 0.0, 0.3), rtol=1e-6)


REDUCE = {"MEAN": "ReduceMean", "REDUCE_MAX": "ReduceMax", "REDUCE_SUM": "ReduceSum"}


@pytest.mark.parametrize("op", sorted(REDUCE))
@pytest.mark.parametrize("axes", [(), (1, 2), (-1,), (0, 3), (2,)])
@pytest.mark.parametrize("keepdims", [True, False])
def test_reduce(op: str, axes: tuple[int, ...], keepdims: bool) -> None:
    x = rand(2, 5, 7, 3)
    axes_in = Const(np.array(axes, np.int64)) if axes else None
    want = ort_run(REDUCE[op], [x, axes_in], keepdims=int(keepdims))
    assert_close(ref(op, [x], axes=axes, keepdims=keepdims), want, rtol=1e-5)


def test_reduce_sum_int() -> None:
    x = RNG.integers(-9, 9, (3, 4, 5)).astype(np.int64)
    want = ort_run("ReduceSum", [x, Const(np.array([1], np.int64))], keepdims=0)
    assert_close(ref("REDUCE_SUM", [x], axes=(1,), keepdims=False), want)


@pytest.mark.parametrize(("shape", "axis"), [((2, 10), -1), ((2, 3, 4), 1), ((3, 5), 0), ((1, 1001), 1)])
def test_softmax(shape: tuple[int, ...], axis: int) -> None:
    x = rand(*shape, lo=-30.0, hi=30.0)
    assert_close(ref("SOFTMAX", [x], axis=axis), ort_run("Softmax", [x], axis=axis), rtol=1e-5, atol=1e-7)


def test_softmax_is_stable() -> None:
    y = ref("SOFTMAX", [np.array([[1000.0, 1000.0, -1000.0]], np.float32)])
    np.testing.assert_allclose(y, [[0.5, 0.5, 0.0]])


# -- data movement ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("shape", "target"), [((2, 3, 4), (6, 4)), ((2, 3, 4), (-1,)), ((1, 8), (2, -1, 2)),
                                               ((1,), ())])
def test_reshape(shape: tuple[int, ...], target: tuple[int, ...]) -> None:
    x = rand(*shape)
    assert_close(ref("RESHAPE", [x], shape=target), ort_run("Reshape", [x, Const(np.array(target, np.int64))]))


@pytest.mark.parametrize("perm", [(0, 2, 3, 1), (3, 1, 0, 2), ()])
def test_transpose(perm: tuple[int, ...]) -> None:
    x = RNG.integers(-100, 100, (2, 3, 4, 5)).astype(np.int8)
    want = ort_run("Transpose", [x], **({"perm": list(perm)} if perm else {}))
    assert_close(ref("TRANSPOSE", [x], perm=perm), want)


@pytest.mark.parametrize(("axis", "dtype"), [(0, np.float32), (1, np.float32), (3, np.int64), (2, np.uint8)])
def test_concatenation(axis: int, dtype: type) -> None:
    shapes_ = [[2, 3, 4, 5] for _ in range(3)]
    for k, sh in enumerate(shapes_):
        sh[axis] = k + 1
    xs = [(rand(*sh) * 100).astype(dtype) for sh in shapes_]
    assert_close(ref("CONCATENATION", xs, axis=axis), ort_run("Concat", xs, axis=axis))


def test_concatenation_act() -> None:
    xs = [rand(2, 3), rand(2, 5)]
    want = np.clip(ort_run("Concat", xs, axis=1), -0.2, 0.4)
    assert_close(ref("CONCATENATION", xs, axis=1, act_min=-0.2, act_max=0.4), want)


def _clamped_slice(dim: int, start: int, end: int, step: int) -> tuple[int, int]:
    """ONNX Slice clamping (what importers do): the already-clamped start/end of our SLICE."""
    start, end = start + dim if start < 0 else start, end + dim if end < 0 else end
    if step > 0:
        return min(max(start, 0), dim), min(max(end, 0), dim)
    return min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)


@pytest.mark.parametrize(("starts", "ends", "steps"), [
    ((0, 1, 0), (2, 3, 5), (1, 1, 2)),
    ((1, -1, 4), (2, -10**9, 0), (1, -1, -2)),  # negative steps through index 0
    ((0, 2, -1), (3, 0, -7), (1, -1, -3)),  # negative step stopping before index 0
    ((0, 0, 3), (3, 4, 3), (2, 3, 1)),  # empty along the last axis
    ((-2, 10, 0), (10**9, -10**9, 10**9), (1, -2, 4)),
])
def test_slice(starts: tuple[int, ...], ends: tuple[int, ...], steps: tuple[int, ...]) -> None:
    x = rand(3, 4, 6)
    want = ort_run("Slice", [x, Const(np.array(starts, np.int64)), Const(np.array(ends, np.int64)),
                             Const(np.arange(3, dtype=np.int64)), Const(np.array(steps, np.int64))])
    cl = [_clamped_slice(d, b, e, s) for d, b, e, s in zip(x.shape, starts, ends, steps, strict=True)]
    got = ref("SLICE", [x], starts=[c[0] for c in cl], ends=[c[1] for c in cl], steps=steps)
    assert_close(got, want)


@pytest.mark.parametrize("mode", list(PadMode))
@pytest.mark.parametrize("pads", [(0, 1, 2, 0, 1, 2, 0, 1), (1, 0, 0, 1, 0, 3, 1, 0), (0, 0, 0, 0, 0, 0, 0, 0)])
def test_pad(mode: PadMode, pads: tuple[int, ...]) -> None:
    x = rand(2, 4, 5, 3)
    want = ort_run("Pad", [x, Const(np.array(pads, np.int64)), Const(np.float32(0.75))], mode=mode.name.lower())
    assert_close(ref("PAD", [x], pads=pads, mode=mode, value=0.75), want)


def test_pad_int() -> None:
    x = RNG.integers(0, 9, (3, 4)).astype(np.int64)
    want = ort_run("Pad", [x, Const(np.array([1, 2, 0, 1], np.int64)), Const(np.int64(-1))])
    assert_close(ref("PAD", [x], pads=(1, 2, 0, 1), value=-1), want)


_COORD_NAMES = {c: c.name.lower() for c in CoordMode}
_NEAREST_NAMES = {m: m.name.lower() for m in NearestMode}
RESIZE_GEOMS = [  # (H, W) -> size, scales given to ONNX (None: sizes input)
    ((5, 7), (10, 14), (2.0, 2.0)),
    ((5, 7), (8, 9), None),  # non-integer ratios, up
    ((9, 8), (4, 3), None),  # down
    ((6, 6), (10, 4), (1.7, 0.7)),  # scales whose product is not the size ratio
    ((4, 5), (1, 1), None),  # single output pixel
    ((1, 1), (3, 2), None),  # single input pixel
]


def _run_resize(x: np.ndarray, geom: tuple, mode: ResizeMode, coord: CoordMode, nearest: NearestMode) -> None:
    _, size, scales = geom
    onnx_attrs = {"mode": "nearest" if mode == ResizeMode.NEAREST else "linear",
                  "coordinate_transformation_mode": _COORD_NAMES[coord], "nearest_mode": _NEAREST_NAMES[nearest]}
    if scales is None:
        inputs = [nchw(x), None, None, Const(np.array([x.shape[0], x.shape[3], *size], np.int64))]
    else:
        inputs = [nchw(x), None, Const(np.array([1.0, 1.0, *scales], np.float32))]
    want = nhwc(ort_run("Resize", inputs, **onnx_attrs))
    assert want.shape[1:3] == size
    got = ref("RESIZE", [x], size=size, scales=scales or (0.0, 0.0), mode=mode, coord=coord, nearest=nearest)
    assert_close(got, want, rtol=1e-6)


@pytest.mark.parametrize("geom", RESIZE_GEOMS)
@pytest.mark.parametrize("coord", list(CoordMode))
@pytest.mark.parametrize("nearest", list(NearestMode))
def test_resize_nearest(geom: tuple, coord: CoordMode, nearest: NearestMode) -> None:
    x = rand(1, *geom[0], 3)
    _run_resize(x, geom, ResizeMode.NEAREST, coord, nearest)


@pytest.mark.parametrize("geom", RESIZE_GEOMS)
@pytest.mark.parametrize("coord", [c for c in CoordMode if c != CoordMode.TF_HALF_PIXEL_FOR_NN])
def test_resize_bilinear(geom: tuple, coord: CoordMode) -> None:
    x = rand(2, *geom[0], 5)
    _run_resize(x, geom, ResizeMode.BILINEAR, coord, NearestMode.ROUND_PREFER_FLOOR)


@pytest.mark.parametrize("mode", list(DepthToSpaceMode))
@pytest.mark.parametrize(("c", "block"), [(8, 2), (18, 3), (4, 1)])
def test_depth_to_space(mode: DepthToSpaceMode, c: int, block: int) -> None:
    x = rand(2, 3, 4, c)
    want = nhwc(ort_run("DepthToSpace", [nchw(x)], blocksize=block, mode=mode.name))
    assert_close(ref("DEPTH_TO_SPACE", [x], block=block, mode=mode), want)


@pytest.mark.parametrize(("axis", "ind"), [(0, [2, 0, -1]), (1, [[0, 3], [-4, 1]]), (-1, 2), (2, [[4]])])
def test_gather(axis: int, ind: Any) -> None:
    x = RNG.integers(-50, 50, (3, 4, 5)).astype(np.int64)
    idx = np.array(ind, np.int32)
    assert_close(ref("GATHER", [x, idx], axis=axis), ort_run("Gather", [x, Const(idx)], axis=axis))


# -- shape inference agrees with the kernels, for every op -----------------------------------------------------------
def _f(*shape: int) -> np.ndarray:
    return rand(*shape)


SAMPLES: dict[str, list[tuple[list[np.ndarray | None], dict[str, Any]]]] = {
    "CONV_2D": [([_f(1, 7, 9, 6), _f(4, 3, 3, 3), _f(4)], {"strides": (2, 2), "pads": (1, 0, 2, 1), "groups": 2})],
    "CONV_TRANSPOSE_2D": [([_f(1, 3, 4, 4), _f(6, 3, 3, 2), None],
                           {"strides": (2, 2), "groups": 2, "output_padding": (1, 0), "pads": (1, 1, 0, 0)})],
    "FULLY_CONNECTED": [([_f(2, 3, 5), _f(4, 5), None], {})],
    "MATMUL": [([_f(5), _f(2, 5, 3)], {}), ([_f(2, 1, 4, 5), _f(3, 5, 2)], {})],
    **{op: [([_f(3, 1, 5), _f(4, 1)], {}), ([_f(), _f(2)], {})]
       for op in ("ADD", "SUB", "MUL", "DIV", "MAXIMUM", "MINIMUM")},
    "POW": [([np.abs(_f(2, 3)), _f(3)], {})],
    "PRELU": [([_f(2, 3, 4), _f(4)], {})],
    **{op: [([_f(2, 3)], {})] for op in ("RELU", "CLIP", "LEAKY_RELU", "HARD_SWISH", "HARD_SIGMOID", "SIGMOID",
                                          "TANH", "EXP", "ABS", "NEG")},
    "SQRT": [([np.abs(_f(2, 3))], {})],
    "MAX_POOL_2D": [([_f(1, 6, 5, 3)], {"kernel": (3, 3), "strides": (2, 2), "ceil_mode": True})],
    "AVERAGE_POOL_2D": [([_f(1, 6, 5, 3)], {"kernel": (2, 3), "pads": (1, 1, 0, 1), "ceil_mode": True})],
    **{op: [([_f(2, 3, 4)], {"axes": (1,), "keepdims": False}), ([_f(2, 3, 4)], {})]
       for op in ("MEAN", "REDUCE_MAX", "REDUCE_SUM")},
    "SOFTMAX": [([_f(2, 3)], {"axis": 0})],
    "RESHAPE": [([_f(2, 3, 4)], {"shape": (4, -1)})],
    "TRANSPOSE": [([_f(2, 3, 4)], {"perm": (1, 2, 0)}), ([_f(2, 3, 4)], {})],
    "CONCATENATION": [([_f(2, 3), _f(2, 1), _f(2, 4)], {"axis": 1})],
    "SLICE": [([_f(4, 5)], {"starts": (3, 1), "ends": (-1, 5), "steps": (-2, 3)})],
    "PAD": [([_f(3, 4)], {"pads": (1, 2, 0, 3), "mode": PadMode.REFLECT})],
    "RESIZE": [([_f(1, 3, 5, 2)], {"size": (7, 2)})],
    "DEPTH_TO_SPACE": [([_f(1, 2, 3, 12)], {"block": 2, "mode": DepthToSpaceMode.CRD})],
    "GATHER": [([_f(3, 4), np.array([[0, 2], [1, -1]], np.int32)], {"axis": 1})],
    **breadth_samples(_f),
}
# quantized-only ops: (inputs, attrs, (input quantization, output quantization)); tests/test_ref_quant.py checks values
_Q = QuantParams.make(0.05, 3)
_I8 = np.arange(-6, 6, dtype=np.int8).reshape(3, 4)
QSAMPLES: dict[str, list[tuple[list[np.ndarray], dict[str, Any], tuple[list, list]]]] = {
    "QUANTIZE": [([_f(3, 4)], {}, ([None], [_Q])), ([_I8], {"dtype": QuantType.UINT8}, ([_Q], [_Q]))],
    "DEQUANTIZE": [([_I8], {}, ([_Q], [None]))],
    "LOOKUP": [([_I8, np.arange(256).astype(np.uint8)], {}, ([_Q, None], [_Q]))],
}


@pytest.mark.parametrize("op", sorted(OPS))
def test_shape_inference_matches_kernels(op: str) -> None:
    assert op in SAMPLES or op in QSAMPLES, f"add a sample case for {op} to SAMPLES (and an onnxruntime test above)"
    cases = [(*c, None) for c in SAMPLES.get(op, [])] + QSAMPLES.get(op, [])
    for inputs, attrs, quant in cases:
        specs = shapes.infer(op, [None if x is None else (x.shape, x.dtype) for x in inputs], attrs)
        outs = dispatch.run(op, inputs, attrs, quant)
        assert [(o.shape, o.dtype) for o in outs] == [(tuple(s), np.dtype(d)) for s, d in specs]


@pytest.mark.parametrize(("op", "inputs", "attrs", "message"), [
    ("CONV_2D", [(1, 4, 4, 5), (3, 3, 3, 4)], {}, "input has 5 channels but weights expect 4 (groups=1)"),
    ("CONV_2D", [(1, 4, 4, 6), (3, 3, 3, 3)], {"groups": 2}, "not divisible by groups=2"),
    ("CONV_2D", [(1, 2, 2, 3), (3, 3, 3, 3)], {}, "output would be empty"),
    ("CONV_2D", [(1, 4, 4, 3), (3, 3, 3, 3), (4,)], {}, "bias has shape [4], expected [3]"),
    ("ADD", [(2, 3), (4,)], {}, "do not broadcast"),
    ("MATMUL", [(2, 3), (4, 5)], {}, "inner dimensions differ"),
    ("RESHAPE", [(2, 3)], {"shape": (4, -1)}, "cannot reshape"),
    ("SLICE", [(4,)], {"starts": (-1,), "ends": (9,), "steps": (1,)}, "must be >= 0"),
    ("RESHAPE", [(2, 3)], {"shape": (0, 0, 0)}, "copies (0) a dimension the input [2, 3] does not have"),
    ("RESIZE", [(1, 2, 2, 1)], {"size": (0, 3)}, "size 0 is 0 (from the scale) but scales[0] is 0"),
    ("PAD", [(2, 3)], {"pads": (0, 3, 0, 0), "mode": PadMode.REFLECT}, "must be < its size"),
    ("DEPTH_TO_SPACE", [(1, 2, 2, 6)], {"block": 2}, "not divisible by block*block"),
    ("CONCATENATION", [(2, 3), (3, 3)], {"axis": 1}, "incompatible"),
    ("MAX_POOL_2D", [(1, 4, 4, 1)], {"kernel": (2, 2), "pads": (2, 0, 0, 0)}, "smaller than the kernel"),
    ("CONV_2D", [(1, 4, 4, 3)], {}, "takes 2..4 inputs, got 1"),
    ("RESIZE", [(1, 2, 2, 1)], {"size": (3, 3), "coord": 9}, "coord = 9 is not one of"),
    ("SOFTMAX", [(2, 3)], {"axis": 2}, "axis 2 is out of range for rank 2"),
    ("CONV_TRANSPOSE_2D", [(1, 2, 2, 3), (3, 2, 2, 3)], {"strides": (2, 2), "output_padding": (2, 0)},
     "output_padding [2, 0] must be smaller"),
    ("HARD_SWISH", [(2,)], {"bogus": 1}, "unknown attributes ['bogus']"),
])
def test_infer_rejects(op: str, inputs: list[tuple[int, ...]], attrs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=f"^{op}: .*") as exc:
        shapes.infer(op, [(s, np.float32) for s in inputs], attrs)
    assert message in str(exc.value)


def test_infer_rejects_integer_input_to_float_op() -> None:
    with pytest.raises(ValueError, match="SIGMOID: input dtype int32 is not a floating-point type"):
        shapes.infer("SIGMOID", [((3,), np.int32)], {})


def test_infer_rejects_mixed_dtypes() -> None:
    with pytest.raises(ValueError, match="different dtypes"):
        shapes.infer("ADD", [((2,), np.float32), ((2,), np.int32)], {})


def test_onnx_opset_is_available() -> None:
    assert onnx.defs.onnx_opset_version() >= OPSET
