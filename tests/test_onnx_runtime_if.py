"""ONNX If with a run-time condition (wasmrt/compile/onnx/control.py): both branches are converted and each output
becomes a WHERE on the condition. Hand-built models (`ReduceSum(x) > 0` choosing between branches that read outer
values, a run-time If nested in a run-time branch reading the enclosing branch's value, integer and bool outputs)
and a TorchScript export whose forward picks one of two LSTMs on `x.sum() > 0` with a data-dependent if inside one
branch, run on python_ref, the native engine and the wasm engine with inputs that take every branch, against
onnxruntime; and the forms still refused, each naming the node and why."""

from __future__ import annotations

import functools
import io
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from python_ref import Interpreter
from tests.test_engine import engine_model
from tests.test_onnx_scoping import ENGINES, F, assert_matches, body, node
from wasmrt.compile.converter import convert
from wasmrt.compile.onnx import control
from wasmrt.compile.onnx.importer import import_onnx
from wasmrt.errors import UnsupportedOpError


def model(nodes: list[onnx.NodeProto], inputs: dict[str, tuple[int, list[int]]], outputs: list[str],
          inits: dict[str, np.ndarray] | None = None) -> onnx.ModelProto:
    ins = [helper.make_tensor_value_info(n, t, s) for n, (t, s) in inputs.items()]
    g = helper.make_graph(nodes, "runtime_if", ins, [helper.make_empty_tensor_value_info(o) for o in outputs],
                          [numpy_helper.from_array(a, n) for n, a in (inits or {}).items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def positive_sum(x: str, out: str) -> list[onnx.NodeProto]:
    """out = ReduceSum(x) > 0 (a run-time bool scalar)."""
    return [node("ReduceSum", [x], [out + "/sum"], keepdims=0), node("Greater", [out + "/sum", "zero"], [out])]


ZERO = {"zero": np.array(0.0, np.float32)}
W = np.array([0.5, -1.0, 2.0], np.float32)


def nested_model() -> onnx.ModelProto:
    """Two levels of run-time Ifs: the outer on sum(x) > 0, the inner (in the then branch) on sum(a) > 0 where a is
    a value of the outer then branch; the inner branches read a (the enclosing branch), x and w (the main graph),
    the outer else branch reads x, w and v. The If also selects int64 values (run-time in one branch, a constant in
    the other) and a bool scalar."""
    inner_t = body("inner_then", [node("Mul", ["a", "x"], ["it"]), node("Add", ["it", "w"], ["it2"])], ["it2"])
    inner_e = body("inner_else", [node("Sub", ["a", "w"], ["ie"])], ["ie"])
    outer_t = body("outer_then", [node("Tanh", ["x"], ["a"]), *positive_sum("a", "c2"),
                                  node("If", ["c2"], ["t_out"], then_branch=inner_t, else_branch=inner_e),
                                  node("Greater", ["x", "zero"], ["pos"]),
                                  node("Cast", ["pos"], ["t_int"], to=TensorProto.INT64),
                                  node("Identity", ["c2"], ["t_flag"])],
                   ["t_out", "t_int", "t_flag"])
    outer_e = body("outer_else", [node("Mul", ["x", "w"], ["e1"]), node("Sub", ["e1", "v"], ["e_out"]),
                                  node("Constant", [], ["e_int"], value=numpy_helper.from_array(
                                      np.array([[7, -3, 0], [1, 2, 3]], np.int64))),
                                  *positive_sum("e1", "e_flag")], ["e_out", "e_int", "e_flag"])
    return model([node("Neg", ["x"], ["v"]), *positive_sum("x", "c1"),
                  node("If", ["c1"], ["y", "y_int", "y_flag"], then_branch=outer_t, else_branch=outer_e)],
        {"x": (F, [2, 3])}, ["y", "y_int", "y_flag"], {**ZERO, "w": W})


def nested_feeds() -> dict[str, dict[str, np.ndarray]]:
    """Inputs that take each path: outer then with inner then, outer then with inner else, outer else."""
    return {"then_then": {"x": np.array([[0.5, 1.0, -0.25], [0.75, -0.5, 0.3]], np.float32)},
            "then_else": {"x": np.array([[3.0, -0.5, -0.5], [-0.5, -0.5, -0.4]], np.float32)},
            "else": {"x": np.array([[-0.5, 0.2, -0.25], [0.1, -0.4, 0.3]], np.float32)}}


class TwoLSTMs:
    """forward(x): lstm_a(x) when x.sum() > 0, else lstm_b(x), and inside the first branch a data-dependent if on
    the LSTM's output (a third LSTM over it, or a scaled copy)."""

    @staticmethod
    @functools.cache
    def onnx_model() -> onnx.ModelProto:
        import torch

        class Net(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.lstm_a = torch.nn.LSTM(4, 6, batch_first=True)
                self.lstm_b = torch.nn.LSTM(4, 6, batch_first=True)
                self.lstm_c = torch.nn.LSTM(6, 6, batch_first=True)

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                if x.sum() > 0:
                    out, _ = self.lstm_a(x)
                    if out.mean() > 0:
                        z, _ = self.lstm_c(out)
                        out = z + out
                    else:
                        out = out * 2.0
                else:
                    out, _ = self.lstm_b(x)
                return out

        torch.manual_seed(41)
        buf = io.BytesIO()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch.jit.script's deprecation notice
            net = torch.jit.script(Net().eval())
            torch.onnx.export(net, (torch.zeros(1, 5, 4),), buf, input_names=["x"], output_names=["y"],
                              opset_version=17, dynamo=False)
        return onnx.load_from_string(buf.getvalue())

    @staticmethod
    @functools.cache
    def feeds() -> dict[str, dict[str, np.ndarray]]:
        """Inputs found to take each path (checked: test_the_inputs_take_every_path)."""
        r = np.random.default_rng(41)
        out: dict[str, dict[str, np.ndarray]] = {}
        for _ in range(200):
            x = r.normal(0.0, 3.0, (1, 5, 4)).astype(np.float32)
            path = TwoLSTMs.path(x)
            out.setdefault(path, {"x": x})
            if len(out) == 3:
                break
        return out

    @staticmethod
    def path(x: np.ndarray) -> str:
        if x.sum() <= 0:
            return "else"
        return "then_then" if float(TwoLSTMs.probe().run(None, {"x": x})[0].mean()) > 0 else "then_else"

    @staticmethod
    @functools.cache
    def probe() -> ort.InferenceSession:
        """lstm_a's output alone (the outer then branch's value the inner condition reads), as ONNX LSTM's Y
        [T, 1, batch 1, H]: the export with its If's then branch's LSTM output made the graph output."""
        m = TwoLSTMs.onnx_model()
        then = next(helper.get_attribute_value(a) for n in m.graph.node if n.op_type == "If" for a in n.attribute
                    if a.name == "then_branch")
        lstm = next(n for n in then.node if n.op_type == "LSTM")
        nodes = [n for n in m.graph.node if n.op_type != "If"]
        g = helper.make_graph([*nodes, *then.node[:list(then.node).index(lstm) + 1]], "probe", m.graph.input,
                              [helper.make_empty_tensor_value_info(lstm.output[0])], m.graph.initializer)
        p = helper.make_model(g, opset_imports=m.opset_import)
        p.ir_version = m.ir_version
        opts = ort.SessionOptions()
        opts.log_severity_level = 3  # the export's initializers the probe does not use
        return ort.InferenceSession(p.SerializeToString(), opts, providers=["CPUExecutionProvider"])


CASES = {f"nested_{k}": (nested_model, k) for k in nested_feeds()} | \
        {f"torch_lstm_{k}": (TwoLSTMs.onnx_model, k) for k in ("then_then", "then_else", "else")}


def _feeds(name: str) -> dict[str, np.ndarray]:
    _, path = CASES[name]
    return (nested_feeds() if name.startswith("nested") else TwoLSTMs.feeds())[path]


@functools.cache
def converted(build: str) -> bytes:
    m = nested_model() if build == "nested" else TwoLSTMs.onnx_model()
    return convert(import_onnx(m)).data


@functools.cache
def prepared(name: str) -> tuple[bytes, dict[str, np.ndarray], list[str], list[np.ndarray]]:
    build, _ = CASES[name]
    m = build()
    feeds = _feeds(name)
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    return converted("nested" if name.startswith("nested") else "torch"), feeds, [o.name for o in m.graph.output], want


@pytest.mark.parametrize(("engine", "variant"), ENGINES, ids=[e for e, _ in ENGINES])
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_onnxruntime(name: str, engine: str, variant: str | None) -> None:
    data, feeds, outs, want = prepared(name)
    m = Interpreter(data) if engine == "ref" else engine_model(data, engine, variant)
    assert_matches(m.run(feeds), outs, want)


def test_the_inputs_take_every_path() -> None:
    """Each case's input takes its path in onnxruntime, and the other paths would give other values there (else
    the cases above could not tell a wrong selection from a right one)."""
    assert set(TwoLSTMs.feeds()) == {"then_then", "then_else", "else"}
    for path in nested_feeds():
        _, feeds, _, want = prepared(f"nested_{path}")
        x = feeds["x"]
        paths = {"then_then": np.tanh(x) * x + W, "then_else": np.tanh(x) - W, "else": x * W + x}
        for p, value in paths.items():
            assert np.allclose(want[0], value, rtol=1e-6) == (p == path), (path, p)
    for path in ("then_then", "then_else", "else"):  # the inner else branch doubles lstm_a's output
        _, feeds, _, want = prepared(f"torch_lstm_{path}")
        doubled = 2.0 * TwoLSTMs.probe().run(None, feeds)[0].reshape(want[0].shape)  # ONNX LSTM's [T, 1, 1, H]
        assert np.allclose(want[0], doubled, rtol=1e-6) == (path == "then_else"), path


def test_both_branches_become_where() -> None:
    """No If survives: the outer If's outputs are WHEREs, and both LSTMs of the outer branches are in the graph."""
    g = import_onnx(TwoLSTMs.onnx_model())
    ops = [n.op for n in g.nodes]
    assert "WHERE" in ops
    assert ops.count("LSTM") == 3


@pytest.mark.parametrize(("engine", "variant"), ENGINES, ids=[e for e, _ in ENGINES])
def test_a_condition_fed_as_a_graph_input(engine: str, variant: str | None) -> None:
    """The condition is a bool input of shape [1] (a scalar would do too); the branches read the main graph's x."""
    then = body("then", [node("Identity", ["x"], ["t"])], ["t"])
    other = body("else", [node("Neg", ["x"], ["e"])], ["e"])
    m = model([node("If", ["c"], ["y"], then_branch=then, else_branch=other)],
              {"x": (F, [2]), "c": (TensorProto.BOOL, [1])}, ["y"])
    data = convert(import_onnx(m)).data
    run = Interpreter(data).run if engine == "ref" else engine_model(data, engine, variant).run
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    x = np.array([1.5, -2.0], np.float32)
    for c in (True, False):
        feeds = {"x": x, "c": np.array([c])}
        got, want = np.asarray(run(feeds)["y"]), sess.run(None, feeds)[0]
        assert got.shape == want.shape == (2,)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(want, x if c else -x)


# -- forms still refused, each naming the node ------------------------------------------------------------------
def _refused(m: onnx.ModelProto, *words: str) -> None:
    with pytest.raises(UnsupportedOpError) as e:
        import_onnx(m)
    for w in ("'If'", "the_if", *words):
        assert w in str(e.value), str(e.value)


def test_branches_of_different_shapes_are_refused() -> None:
    then = body("then", [node("Neg", ["x"], ["t"])], ["t"])
    other = body("else", [node("Concat", ["x", "x"], ["e"], axis=0)], ["e"])
    m = model([*positive_sum("x", "c"), helper.make_node("If", ["c"], ["y"], name="the_if", then_branch=then,
                                                         else_branch=other)], {"x": (F, [2])}, ["y"], ZERO)
    _refused(m, "shape", "[2] (then) and [4] (else)")


def test_branches_of_different_types_are_refused() -> None:
    then = body("then", [node("Neg", ["x"], ["t"])], ["t"])
    other = body("else", [node("Cast", ["x"], ["e"], to=TensorProto.INT32)], ["e"])
    m = model([*positive_sum("x", "c"), helper.make_node("If", ["c"], ["y"], name="the_if", then_branch=then,
                                                         else_branch=other)], {"x": (F, [2])}, ["y"], ZERO)
    _refused(m, "element type", "float32 (then) and int32 (else)")


def test_a_branch_with_a_runtime_trip_count_is_refused() -> None:
    loop_body = helper.make_graph([node("Add", ["acc", "x"], ["n"]), node("Identity", ["go"], ["go_out"])], "lb",
                                  [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                                   helper.make_tensor_value_info("go", TensorProto.BOOL, []),
                                   helper.make_tensor_value_info("acc", F, [2])],
                                  [helper.make_empty_tensor_value_info(o) for o in ("go_out", "n")])
    then = body("then", [node("Loop", ["trips", "", "x"], ["t"], body=loop_body)], ["t"])
    other = body("else", [node("Neg", ["x"], ["e"])], ["e"])
    m = model([*positive_sum("x", "c"), helper.make_node("If", ["c"], ["y"], name="the_if", then_branch=then,
                                                         else_branch=other)],
              {"x": (F, [2]), "trips": (TensorProto.INT64, [])}, ["y"], ZERO)
    _refused(m, "then branch cannot be converted", "Loop", "trip count")


def test_nesting_deeper_than_the_bound_is_refused() -> None:
    inner = body("leaf_then", [node("Neg", ["x"], ["leaf"])], ["leaf"])
    inner_e = body("leaf_else", [node("Abs", ["x"], ["leaf_e"])], ["leaf_e"])
    for d in range(control.MAX_RUNTIME_IF_DEPTH):
        out = f"o{d}"
        name = "the_if" if d == control.MAX_RUNTIME_IF_DEPTH - 1 else f"if{d}"
        wrapped = body(f"then{d}", [helper.make_node("If", ["c"], [out], name=name, then_branch=inner,
                                                     else_branch=inner_e)], [out])
        inner, inner_e = wrapped, body(f"else{d}", [node("Neg", ["x"], [f"e{d}"])], [f"e{d}"])
    m = model([*positive_sum("x", "c"), helper.make_node("If", ["c"], ["y"], name="top", then_branch=inner,
                                                         else_branch=inner_e)], {"x": (F, [2])}, ["y"], ZERO)
    _refused(m, "nested 9 deep", f"at most {control.MAX_RUNTIME_IF_DEPTH}")
