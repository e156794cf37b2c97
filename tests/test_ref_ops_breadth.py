"""python_ref's breadth ops against onnxruntime: transformer blocks, comparisons, logic and casts, ScatterND,
Split, and the recurrent layers with every direction, activation, clip and sequence-length option ONNX defines."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper

from python_ref import dispatch
from python_ref.opdefs import Activation, CastTo, Coupling, Direction, GeluMode, ScatterReduction
from tests.test_ref_ops import Const, assert_close, ort_run, rand, ref

RNG = np.random.default_rng(77)
ACT_NAMES = {Activation.SIGMOID: "Sigmoid", Activation.TANH: "Tanh", Activation.RELU: "Relu",
             Activation.AFFINE: "Affine", Activation.LEAKY_RELU: "LeakyRelu",
             Activation.THRESHOLDED_RELU: "ThresholdedRelu", Activation.SCALED_TANH: "ScaledTanh",
             Activation.HARD_SIGMOID: "HardSigmoid", Activation.ELU: "Elu", Activation.SOFTSIGN: "Softsign",
             Activation.SOFTPLUS: "Softplus"}


def ort_multi(op_type: str, inputs: list[Any], n_out: int, opset: int = 20, **attrs: Any) -> list[np.ndarray]:
    """One node with n_out outputs; inputs as ort_run's (arrays, Const, None)."""
    names, feeds, vinfos, inits = [], {}, [], []
    for k, v in enumerate(inputs):
        if v is None:
            names.append("")
            continue
        names.append(f"in{k}")
        if isinstance(v, Const):
            inits.append(numpy_helper.from_array(v.value, f"in{k}"))
        else:
            feeds[f"in{k}"] = v
            vinfos.append(helper.make_tensor_value_info(f"in{k}", helper.np_dtype_to_tensor_dtype(v.dtype), v.shape))
    outs = [f"y{k}" for k in range(n_out)]
    node = helper.make_node(op_type, names, outs, **attrs)
    graph = helper.make_graph([node], "g", vinfos, [helper.make_empty_tensor_value_info(o) for o in outs], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.intra_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"]).run(None, feeds)


# -- transformer blocks -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("shape", "axis", "affine"), [((2, 5, 16), -1, True), ((3, 4, 6), 1, True),
                                                        ((4, 9), -1, False)])
def test_layer_norm(shape: tuple[int, ...], axis: int, affine: bool) -> None:
    x = rand(*shape, lo=-3, hi=5)
    norm = shape[axis % len(shape):]
    s, b = rand(*norm), rand(*norm)
    want = ort_multi("LayerNormalization", [x, Const(s), Const(b) if affine else None], 1, axis=axis,
                     epsilon=1e-3)[0] if affine else ort_multi("LayerNormalization", [x, Const(np.ones(norm,
                                                                                                      np.float32))],
                                                               1, axis=axis, epsilon=1e-3)[0]
    got = ref("LAYER_NORM", [x, s, b] if affine else [x], axis=axis, epsilon=1e-3)
    assert_close(got, want, rtol=2e-6)


@pytest.mark.parametrize("mode", list(GeluMode))
def test_gelu(mode: GeluMode) -> None:
    x = rand(4, 100, lo=-8, hi=8)
    want = ort_run("Gelu", [x], opset=20, approximate="tanh" if mode == GeluMode.TANH else "none")
    assert_close(ref("GELU", [x], mode=mode), want, rtol=1e-6)


@pytest.mark.parametrize(("op", "onnx_op", "lo", "hi"), [("ERF", "Erf", -4, 4), ("LOG", "Log", 0.01, 40),
                                                          ("FLOOR", "Floor", -9, 9), ("CEIL", "Ceil", -9, 9)])
def test_unary(op: str, onnx_op: str, lo: float, hi: float) -> None:
    x = rand(3, 50, lo=lo, hi=hi)
    assert_close(ref(op, [x]), ort_run(onnx_op, [x]), rtol=1e-6)


def test_where() -> None:
    c = RNG.integers(0, 2, (3, 1, 5)).astype(bool)
    a, b = rand(1, 4, 5), rand(3, 4, 1)
    assert_close(ref("WHERE", [c, a, b]), ort_multi("Where", [c, a, b], 1)[0])


@pytest.mark.parametrize(("shape", "to"), [((3, 1), (2, 3, 4)), ((2, 1, 4), (3, 1)), ((1,), (0,))])
def test_expand(shape: tuple[int, ...], to: tuple[int, ...]) -> None:
    x = rand(*shape)
    assert_close(ref("EXPAND", [x], shape=to), ort_run("Expand", [x, Const(np.array(to, np.int64))]))


@pytest.mark.parametrize(("src", "to"), [(np.float32, CastTo.INT64), (np.float32, CastTo.INT32),
                                         (np.int64, CastTo.FLOAT32), (np.float32, CastTo.BOOL),
                                         (np.bool_, CastTo.FLOAT32), (np.int32, CastTo.INT8),
                                         (np.float32, CastTo.FLOAT16)])
def test_cast(src: type, to: CastTo) -> None:
    x = (RNG.uniform(-100, 100, (4, 7)) if src == np.float32 else RNG.integers(-100, 100, (4, 7))).astype(src)
    onnx_to = {CastTo.FLOAT32: 1, CastTo.FLOAT16: 10, CastTo.INT8: 3, CastTo.INT32: 6, CastTo.INT64: 7,
               CastTo.BOOL: 9}[to]
    assert_close(ref("CAST", [x], to=to), ort_multi("Cast", [x], 1, to=onnx_to)[0])


@pytest.mark.parametrize(("op", "onnx_op"), [("EQUAL", "Equal"), ("LESS", "Less"), ("GREATER", "Greater"),
                                             ("LESS_EQUAL", "LessOrEqual"), ("GREATER_EQUAL", "GreaterOrEqual")])
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_compare(op: str, onnx_op: str, dtype: type) -> None:
    a, b = RNG.integers(-3, 3, (3, 4)).astype(dtype), RNG.integers(-3, 3, (4,)).astype(dtype)
    assert_close(ref(op, [a, b]), ort_multi(onnx_op, [a, b], 1)[0])


@pytest.mark.parametrize(("op", "onnx_op"), [("AND", "And"), ("OR", "Or"), ("XOR", "Xor"), ("NOT", "Not")])
def test_logical(op: str, onnx_op: str) -> None:
    a, b = RNG.integers(0, 2, (3, 4)).astype(bool), RNG.integers(0, 2, (4,)).astype(bool)
    ins = [a] if op == "NOT" else [a, b]
    assert_close(ref(op, ins), ort_run(onnx_op, ins))


@pytest.mark.parametrize("reduction", list(ScatterReduction))
def test_scatter_nd(reduction: ScatterReduction) -> None:
    x = rand(4, 5, 3)
    ind = np.array([[1, 2], [3, 0], [0, 4]] if reduction == ScatterReduction.NONE else [[1, 2], [1, 2], [0, -1]],
                   np.int64)
    u = rand(3, 3)
    want = ort_run("ScatterND", [x, Const(ind), u], opset=18, reduction=reduction.name.lower())
    assert_close(ref("SCATTER_ND", [x, ind, u], reduction=reduction), want)


@pytest.mark.parametrize(("axis", "sizes"), [(1, (2, 4, 3)), (0, (1, 1)), (-1, (3, 0))])
def test_split(axis: int, sizes: tuple[int, ...]) -> None:
    shape = {1: (2, 9, 3), 0: (2, 3), -1: (2, 3)}[axis]
    x = rand(*shape)
    want = ort_multi("Split", [x, Const(np.array(sizes, np.int64))], len(sizes), opset=18, axis=axis)
    for got, w in zip(dispatch.run("SPLIT", [x], {"axis": axis, "sizes": sizes}), want, strict=True):
        assert_close(got, w)


# -- recurrent layers ---------------------------------------------------------------------------------------------
def rnn_inputs(op: str, t: int, b: int, i: int, h: int, d: int, seq: bool, states: bool, peep: bool
               ) -> tuple[list[Any], list[np.ndarray | None]]:
    g = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    x = rand(t, b, i)
    w, r, bias = rand(d, g * h, i), rand(d, g * h, h), rand(d, 2 * g * h)
    lens = RNG.integers(0, t + 1, b).astype(np.int32) if seq else None
    h0 = rand(d, b, h) if states else None
    onnx_in: list[Any] = [x, Const(w), Const(r), Const(bias), lens, h0]
    ours: list[np.ndarray | None] = [x, w, r, bias, lens, h0]
    if op == "LSTM":
        c0 = rand(d, b, h) if states else None
        p = rand(d, 3 * h) if peep else None
        onnx_in += [c0, None if p is None else Const(p)]
        ours += [c0, p]
    return onnx_in, ours


RNN_CASES = [
    ("LSTM", "forward", {}, {}), ("LSTM", "reverse", {}, {}), ("LSTM", "bidirectional", {}, {}),
    ("LSTM", "bidirectional", {"clip": 0.6}, {"clip": 0.6}),
    ("LSTM", "forward", {"input_forget": 1}, {"coupling": Coupling.FORGET_FROM_INPUT}),
    ("GRU", "forward", {}, {}), ("GRU", "bidirectional", {"linear_before_reset": 1}, {"linear_before_reset": True}),
    ("GRU", "reverse", {"clip": 0.5}, {"clip": 0.5}),
    ("RNN", "forward", {}, {}), ("RNN", "bidirectional", {}, {}),
]


@pytest.mark.parametrize(("op", "direction", "onnx_attrs", "attrs"), RNN_CASES)
@pytest.mark.parametrize("seq", [False, True])
def test_recurrent(op: str, direction: str, onnx_attrs: dict, attrs: dict, seq: bool) -> None:
    d = 2 if direction == "bidirectional" else 1
    onnx_in, ours = rnn_inputs(op, 6, 3, 5, 7, d, seq, True, True)
    n_out = 3 if op == "LSTM" else 2
    want = ort_multi(op, onnx_in, n_out, opset=14, direction=direction, hidden_size=7, **onnx_attrs)
    got = dispatch.run(op, ours, {"direction": Direction[direction.upper()], **attrs})
    for g, w in zip(got, want, strict=True):
        assert_close(g, w, rtol=2e-6)


ACTIVATION_SETS: list[tuple[str, tuple[Activation, ...], tuple[float, ...], tuple[float, ...]]] = [
    ("LSTM", (Activation.HARD_SIGMOID, Activation.SOFTSIGN, Activation.ELU), (0.3, 0.0, 0.8), (0.4, 0.0, 0.0)),
    ("LSTM", (Activation.SIGMOID, Activation.SCALED_TANH, Activation.SOFTPLUS), (0.0, 1.5, 0.0), (0.0, 0.7, 0.0)),
    ("GRU", (Activation.AFFINE, Activation.LEAKY_RELU), (0.5, 0.2), (0.1, 0.0)),
    ("GRU", (Activation.SIGMOID, Activation.RELU), (0.0, 0.0), (0.0, 0.0)),
    ("RNN", (Activation.THRESHOLDED_RELU,), (0.2,), (0.0,)),
    ("RNN", (Activation.SOFTPLUS,), (0.0,), (0.0,)),
]


@pytest.mark.parametrize(("op", "acts", "alpha", "beta"), ACTIVATION_SETS)
def test_recurrent_activations(op: str, acts: tuple[Activation, ...], alpha: tuple[float, ...],
                               beta: tuple[float, ...]) -> None:
    """ONNX takes alpha/beta values in order for the activations that have them; ours are per activation."""
    onnx_in, ours = rnn_inputs(op, 4, 2, 3, 5, 1, False, True, False)
    uses_alpha = {Activation.AFFINE, Activation.LEAKY_RELU, Activation.THRESHOLDED_RELU, Activation.SCALED_TANH,
                  Activation.HARD_SIGMOID, Activation.ELU}
    uses_beta = {Activation.AFFINE, Activation.SCALED_TANH, Activation.HARD_SIGMOID}
    onnx_attrs: dict[str, Any] = {"activations": [ACT_NAMES[a] for a in acts]}
    al = [v for a, v in zip(acts, alpha, strict=True) if a in uses_alpha]
    be = [v for a, v in zip(acts, beta, strict=True) if a in uses_beta]
    if al:
        onnx_attrs["activation_alpha"] = al
    if be:
        onnx_attrs["activation_beta"] = be
    want = ort_multi(op, onnx_in, 3 if op == "LSTM" else 2, opset=14, hidden_size=5, **onnx_attrs)
    got = dispatch.run(op, ours, {"activations": tuple(int(a) for a in acts), "activation_alpha": alpha,
                             "activation_beta": beta})
    for g, w in zip(got, want, strict=True):
        assert_close(g, w, rtol=2e-6)
