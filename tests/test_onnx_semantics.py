"""The breadth ops' full ONNX semantics, end to end: one-node ONNX models exercising each attribute and input form the
operator spec defines (LSTM/GRU/RNN layouts, couplings, clips, peepholes, sequence lengths, activations; layer
normalization over any axis with its stash outputs; both Gelu forms; broadcasting both ways; Split by sizes and by
num_outputs; Gather with negative indices on any axis; ScatterND reductions; Cast between every supported dtype;
batched MatMul of two activations), imported, converted to .wrt and run by python_ref and the C engine (native and
wasm) against onnxruntime. Forms that are not supported must fail at import with an error naming the node and the
attribute (docs/ops.md lists them)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper

from python_ref import Interpreter
from tests.test_engine import engine_model
from wasmrt.compile.converter import convert
from wasmrt.compile.onnx.importer import import_onnx
from wasmrt.errors import UnsupportedOpError

RTOL = 1e-4  # relative to max |onnxruntime|; recurrent cases run many dependent float32 steps
ENGINES = [("ref", None), ("native", None), ("wasm", "simd")]
R = np.random.default_rng(2024)


def arr(*shape: int, lo: float = -1.0, hi: float = 1.0) -> np.ndarray:
    return R.uniform(lo, hi, shape).astype(np.float32)


def single_node_model(op: str, inputs: list[tuple[str, np.ndarray | None, bool]], outputs: list[str],
                      opsets: dict[str, int], domain: str = "", **attrs: Any) -> onnx.ModelProto:
    """A model of one node: inputs are (name, value, constant); an absent optional input has value None, a constant
    one becomes an initializer, the others graph inputs; an empty output name is an absent optional output."""
    names, vinfos, inits = [], [], []
    for name, value, const in inputs:
        names.append(name if value is not None else "")
        if value is None:
            continue
        if const:
            inits.append(numpy_helper.from_array(value, name))
        else:
            vinfos.append(helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(value.dtype),
                                                        value.shape))
    node = helper.make_node(op, names, outputs, name=f"the_{op.lower()}", domain=domain, **attrs)
    graph = helper.make_graph([node], "g", vinfos, [helper.make_empty_tensor_value_info(o) for o in outputs if o],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets.items()])
    model.ir_version = 9
    return model


class Case:
    """One ONNX node: runtime inputs (feeds), constant inputs (initializers), attributes, output count."""

    def __init__(self, op: str, inputs: list[tuple[str, np.ndarray | None, bool]], n_out: int = 1, opset: int = 20,
                 **attrs: Any) -> None:
        self.op, self.inputs, self.n_out, self.opset, self.attrs = op, inputs, n_out, opset, attrs

    @functools.cached_property
    def model(self) -> onnx.ModelProto:
        return single_node_model(self.op, self.inputs, [f"y{k}" for k in range(self.n_out)], {"": self.opset},
                                 **self.attrs)

    def oracle(self) -> list[np.ndarray]:
        """onnxruntime's outputs; recurrent layout=1 (batch-major), which onnxruntime refuses, through the same node
        with layout=0 and the spec's transposes around it: X, initial states [B, T|D, .] -> [T|D, B, .]; Y
        [T, D, B, H] -> [B, T, D, H]; Y_h, Y_c [D, B, H] -> [B, D, H]."""
        c, feeds = self, self.feeds
        if self.attrs.get("layout"):
            c = Case(self.op, [(n, None if v is None or c_ else v.transpose(1, 0, 2), c_) if n in ("x", "h0", "c0")
                               else (n, v, c_) for n, v, c_ in self.inputs], self.n_out, self.opset,
                     **{**self.attrs, "layout": 0})
            feeds = c.feeds
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        outs = ort.InferenceSession(c.model.SerializeToString(), opts, providers=["CPUExecutionProvider"]).run(
            None, feeds)
        if self.attrs.get("layout"):
            outs = [o.transpose(2, 0, 1, 3) if k == 0 else o.transpose(1, 0, 2) for k, o in enumerate(outs)]
        return outs

    @property
    def feeds(self) -> dict[str, np.ndarray]:
        return {n: v for n, v, c in self.inputs if v is not None and not c}


CASES: dict[str, Callable[[], Case]] = {}


def case(name: str) -> Callable[[Callable[[], Case]], Callable[[], Case]]:
    def reg(fn: Callable[[], Case]) -> Callable[[], Case]:
        assert name not in CASES
        CASES[name] = fn
        return fn
    return reg


# -- recurrent layers ---------------------------------------------------------------------------------------------
def recurrent(op: str, *, layout: int = 0, d: int = 1, t: int = 5, b: int = 3, i: int = 4, h: int = 6,
              seq: bool = False, states: bool = True, peep: bool = False, outs: int | None = None,
              lens: tuple[int, ...] | None = None, **attrs: Any) -> Case:
    g = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    x = arr(b, t, i) if layout else arr(t, b, i)
    lens = np.array(lens or [t, max(t - 2, 1), 1][:b], np.int32) if seq else None
    state = (lambda: arr(b, d, h) if layout else arr(d, b, h)) if states else (lambda: None)
    ins = [("x", x, False), ("w", arr(d, g * h, i), True), ("r", arr(d, g * h, h), True),
           ("b", arr(d, 2 * g * h), True), ("seq", lens, False), ("h0", state(), False)]
    if op == "LSTM":
        ins += [("c0", state(), False), ("p", arr(d, 3 * h) if peep else None, True)]
    if d == 2:
        attrs["direction"] = "bidirectional"
    n = outs if outs is not None else (3 if op == "LSTM" else 2)
    return Case(op, ins, n, opset=14, hidden_size=h, layout=layout, **attrs)


for _op in ("LSTM", "GRU", "RNN"):
    for _layout in (0, 1):
        for _d in (1, 2):
            CASES[f"{_op.lower()}_layout{_layout}_d{_d}_seq"] = functools.partial(
                recurrent, _op, layout=_layout, d=_d, seq=True)
case("lstm_input_forget")(lambda: recurrent("LSTM", input_forget=1, peep=True))
case("lstm_clip_peepholes_bidir")(lambda: recurrent("LSTM", d=2, clip=0.4, peep=True, seq=True))
case("lstm_reverse_no_states")(lambda: recurrent("LSTM", direction="reverse", states=False, peep=True))
case("lstm_only_y")(lambda: recurrent("LSTM", outs=1, d=2, layout=1))
case("lstm_activations_alpha_beta")(lambda: recurrent(
    "LSTM", d=2, activations=["HardSigmoid", "ScaledTanh", "Affine", "Sigmoid", "Elu", "LeakyRelu"],
    activation_alpha=[0.3, 1.2, 0.7, 0.9, 0.05], activation_beta=[0.45, 0.8, -0.1]))
case("lstm_activations_defaults")(lambda: recurrent("LSTM", activations=["HardSigmoid", "Tanh", "Softsign"]))
case("lstm_zero_length_sequence")(lambda: recurrent("LSTM", d=2, seq=True, lens=(0, 5, 2), peep=True))
case("gru_zero_length_sequence")(lambda: recurrent("GRU", seq=True, lens=(3, 0, 5), layout=1))
case("gru_linear_before_reset_0")(lambda: recurrent("GRU", linear_before_reset=0, seq=True))
case("gru_linear_before_reset_1")(lambda: recurrent("GRU", linear_before_reset=1, d=2, seq=True))
case("gru_clip_reverse")(lambda: recurrent("GRU", direction="reverse", clip=0.3))
case("gru_activations")(lambda: recurrent("GRU", activations=["Sigmoid", "Relu"], linear_before_reset=1))
case("rnn_activations_bidir")(lambda: recurrent("RNN", d=2, activations=["Relu", "ThresholdedRelu"],
                                                activation_alpha=[0.1]))
case("rnn_leaky_clip")(lambda: recurrent("RNN", activations=["LeakyRelu"], activation_alpha=[0.3], clip=0.7))


# -- transformer blocks -------------------------------------------------------------------------------------------
@case("layer_norm_axis1_stash")
def _ln_axis1() -> Case:
    return Case("LayerNormalization", [("x", arr(2, 3, 4, 5), False), ("s", arr(3, 4, 5), True),
                                       ("b", arr(3, 4, 5), True)], 3, opset=17, axis=1, epsilon=1e-3)


@case("layer_norm_negative_axis_stash_no_bias")
def _ln_neg() -> Case:
    return Case("LayerNormalization", [("x", arr(2, 6, 8, lo=2, hi=5), False), ("s", arr(6, 8), True)], 3,
                opset=17, axis=-2)


@case("layer_norm_runtime_scale")
def _ln_rt() -> Case:
    return Case("LayerNormalization", [("x", arr(3, 10), False), ("s", arr(10), False), ("b", arr(10), False)], 1,
                opset=17)


@case("layer_norm_axis0")
def _ln_axis0() -> Case:
    return Case("LayerNormalization", [("x", arr(4, 5), False), ("s", arr(4, 5), True)], 3, opset=17, axis=0)


for _approx in ("none", "tanh"):
    CASES[f"gelu_{_approx}"] = functools.partial(lambda a: Case("Gelu", [("x", arr(4, 50, lo=-6, hi=6), False)],
                                                               approximate=a), _approx)


@case("where_cond_broadcasts")
def _where1() -> Case:
    return Case("Where", [("c", R.integers(0, 2, (2, 1, 5)).astype(bool), False), ("a", arr(3, 5), False),
                          ("b", arr(1, 1, 1), False)])


@case("where_values_broadcast_cond")
def _where2() -> Case:
    return Case("Where", [("c", R.integers(0, 2, (5,)).astype(bool), False), ("a", arr(4, 1), False),
                          ("b", arr(2, 4, 5), True)])


@case("where_int64")
def _where3() -> Case:
    return Case("Where", [("c", R.integers(0, 2, (3, 4)).astype(bool), False),
                          ("a", R.integers(-9, 9, (3, 4)).astype(np.int64), False),
                          ("b", np.array(7, np.int64), True)])


@case("expand_shape_smaller_rank")
def _expand1() -> Case:
    return Case("Expand", [("x", arr(2, 1, 3), False), ("s", np.array([4, 1], np.int64), True)])


@case("expand_both_ways")
def _expand2() -> Case:
    return Case("Expand", [("x", arr(3, 1), False), ("s", np.array([2, 1, 6], np.int64), True)])


@case("expand_bool")
def _expand3() -> Case:
    return Case("Expand", [("x", R.integers(0, 2, (1, 3)).astype(bool), False),
                           ("s", np.array([2, 3], np.int64), True)])


@case("split_num_outputs_uneven")
def _split1() -> Case:
    return Case("Split", [("x", arr(2, 7), False)], 3, opset=18, axis=1, num_outputs=3)


@case("split_input_sizes")
def _split2() -> Case:
    return Case("Split", [("x", arr(6, 4), False), ("s", np.array([1, 3, 2], np.int64), True)], 3, opset=13)


@case("split_attribute_opset11")
def _split3() -> Case:
    return Case("Split", [("x", arr(3, 5, 2), False)], 2, opset=11, axis=-2, split=[4, 1])


@case("split_equal_default")
def _split4() -> Case:
    return Case("Split", [("x", arr(6, 4), False)], 2, opset=13, axis=0)


@case("gather_runtime_negative_indices_axis1")
def _gather1() -> Case:
    return Case("Gather", [("x", arr(3, 5, 2), False), ("i", np.array([[-1, 0], [4, -5]], np.int64), False)], axis=1)


@case("gather_const_negative_axis")
def _gather2() -> Case:
    return Case("Gather", [("x", arr(3, 5, 4), False), ("i", np.array([-1, 2, -4], np.int64), True)], axis=-1)


@case("gather_scalar_index")
def _gather3() -> Case:
    return Case("Gather", [("x", arr(4, 6), False), ("i", np.array(-2, np.int64), True)], axis=0)


@case("gather_runtime_scalar_axis2")
def _gather4() -> Case:
    return Case("Gather", [("x", arr(2, 3, 5), False), ("i", np.array(-3, np.int32), False)], axis=2)


for _red in ("none", "add", "mul", "max", "min"):
    CASES[f"scatter_nd_{_red}"] = functools.partial(lambda red: Case(
        "ScatterND", [("x", arr(4, 5, 3), False),
                      ("i", np.array([[1, 2], [3, -1]] if red == "none" else [[1, 2], [1, 2], [0, -5]], np.int64),
                       False),
                      ("u", arr(2 if red == "none" else 3, 3), False)], opset=18, reduction=red), _red)

_CAST_SOURCES = {
    "float32": lambda: np.concatenate([arr(20, lo=-300, hi=300), np.array([0.5, -0.5, 1.5, -2.7, 0], np.float32)]),
    "int64": lambda: R.integers(-300, 300, 24).astype(np.int64),
    "int32": lambda: R.integers(-300, 300, 24).astype(np.int32),
    "bool": lambda: R.integers(0, 2, 24).astype(bool),
    "int8": lambda: R.integers(-128, 128, 24).astype(np.int8),
    "uint8": lambda: R.integers(0, 256, 24).astype(np.uint8),
}
_CAST_TO = {"float32": 1, "uint8": 2, "int8": 3, "int32": 6, "int64": 7, "bool": 9, "float16": 10}
for _src in _CAST_SOURCES:
    for _dst, _code in _CAST_TO.items():
        if _src != _dst:
            CASES[f"cast_{_src}_to_{_dst}"] = functools.partial(
                lambda s, c: Case("Cast", [("x", _CAST_SOURCES[s](), False)], opset=19, to=c), _src, _code)


@case("matmul_batched_broadcast")
def _matmul1() -> Case:
    return Case("MatMul", [("a", arr(2, 1, 3, 4), False), ("b", arr(5, 4, 6), False)])


@case("matmul_vector_times_batch")
def _matmul2() -> Case:
    return Case("MatMul", [("a", arr(4), False), ("b", arr(3, 4, 2), False)])


@case("erf_log_floor")
def _erf() -> Case:
    return Case("Erf", [("x", arr(3, 9, lo=-3, hi=3), False)])


@case("compare_broadcast_int64")
def _cmp() -> Case:
    return Case("GreaterOrEqual", [("a", R.integers(-3, 3, (3, 1)).astype(np.int64), False),
                                   ("b", R.integers(-3, 3, (4,)).astype(np.int64), False)])


# -- running them ------------------------------------------------------------------------------------------------
@functools.cache
def prepared(name: str) -> tuple[Case, bytes, list[np.ndarray]]:
    c = CASES[name]()
    return c, convert(import_onnx(c.model)).data, c.oracle()


@pytest.mark.parametrize(("engine", "variant"), ENGINES, ids=[e for e, _ in ENGINES])
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_onnxruntime(name: str, engine: str, variant: str | None) -> None:
    c, data, want = prepared(name)
    m = Interpreter(data) if engine == "ref" else engine_model(data, engine, variant)
    got = m.run(c.feeds)
    for k, w in enumerate(want):
        g = np.asarray(got[f"y{k}"])
        assert g.shape == w.shape, (k, g.shape, w.shape)
        if w.dtype.kind in "biu":
            assert g.dtype == w.dtype or w.dtype == np.int64, (k, g.dtype, w.dtype)
            np.testing.assert_array_equal(g.astype(w.dtype), w, err_msg=f"output {k}")
            continue
        err = float(np.abs(g.astype(np.float64) - w).max(initial=0.0))
        scale = max(float(np.abs(w).max(initial=0.0)), 1e-6)
        assert err <= RTOL * scale, f"output {k}: max|ours - ort| = {err:.3g}, max|ort| = {scale:.3g}"


# -- clear errors for what is not supported ----------------------------------------------------------------------
def _unsupported(c: Case, *words: str) -> None:
    with pytest.raises(UnsupportedOpError) as e:
        import_onnx(c.model)
    msg = str(e.value)
    for w in (c.op, f"the_{c.op.lower()}", *words):
        assert w in msg, msg


def test_if_with_a_runtime_condition_and_branches_of_different_shapes_names_the_node() -> None:
    """A run-time condition selects between the branches' outputs (tests/test_onnx_runtime_if.py), which must then
    have the same shapes: here they differ, so the If is refused, by name."""
    then = helper.make_graph([helper.make_node("Identity", ["x"], ["t"])], "then", [],
                             [helper.make_tensor_value_info("t", onnx.TensorProto.FLOAT, [2])])
    other = helper.make_graph([helper.make_node("Concat", ["x", "x"], ["e"], axis=0)], "else", [],
                              [helper.make_tensor_value_info("e", onnx.TensorProto.FLOAT, [4])])
    c = Case("If", [("cond", np.array(True), False)], 1, opset=13, then_branch=then, else_branch=other)
    c.model.graph.input.append(helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2]))
    _unsupported(c, "condition depends on the input data", "shape")


def test_einsum_is_refused_by_name() -> None:
    _unsupported(Case("Einsum", [("a", arr(2, 3), False), ("b", arr(3, 4), False)], opset=12, equation="ij,jk->ik"))
