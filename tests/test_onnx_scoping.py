"""ONNX scoping in If, Loop and Scan bodies: a sub-graph reads any value of any enclosing graph, at any depth; a
name a body defines itself (an input, an initializer, a node output) hides an outer value of the same name; the
If branch not taken, and a body that runs no step, are checked in the scope of the one converted.

Hand-built models (an If in an If reading the outer branch's value, three levels deep, a Loop body reading an outer
value with an If inside it reading a Loop-body value, a Scan body reading outer values, shadowing) and a TorchScript
export of data-dependent branches around LSTMs, nested two levels, are imported with their conditions frozen
(wasmrt flattens control flow whose outcome is known at conversion, wasmrt/compile/onnx/control.py), converted
to .wrt and run on python_ref, the native engine and the wasm engine, against onnxruntime fed the same
conditions."""

from __future__ import annotations

import functools
import itertools
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from python_ref import Interpreter
from tests.test_engine import engine_model
from wasmrt.compile.converter import convert
from wasmrt.compile.onnx.importer import import_onnx
from wasmrt.errors import ModelFormatError

RTOL = 1e-5  # relative to max |onnxruntime|
ENGINES = [("ref", None), ("native", None), ("wasm", "simd")]
R = np.random.default_rng(41)
F = TensorProto.FLOAT


def arr(*shape: int) -> np.ndarray:
    return R.uniform(-1.0, 1.0, shape).astype(np.float32)


def node(op: str, inputs: list[str], outputs: list[str], **attrs: Any) -> onnx.NodeProto:
    return helper.make_node(op, inputs, outputs, name=f"{op}:{outputs[0]}", **attrs)


def body(name: str, nodes: list[onnx.NodeProto], outputs: list[str], inputs: list[onnx.ValueInfoProto] | None = None,
         inits: list[onnx.TensorProto] | None = None) -> onnx.GraphProto:
    return helper.make_graph(nodes, name, inputs or [], [helper.make_empty_tensor_value_info(o) for o in outputs],
                             inits or [])


def model(nodes: list[onnx.NodeProto], feeds: dict[str, np.ndarray], outputs: list[str],
          inits: dict[str, np.ndarray] | None = None, opset: int = 17) -> onnx.ModelProto:
    ins = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
           for n, a in feeds.items()]
    g = helper.make_graph(nodes, "scoping", ins, [helper.make_empty_tensor_value_info(o) for o in outputs],
                          [numpy_helper.from_array(a, n) for n, a in (inits or {}).items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def flag(v: bool) -> np.ndarray:
    return np.array(v)


# -- the cases: (model, feeds, names of the feeds frozen at import) ---------------------------------------------------
Built = tuple[onnx.ModelProto, dict[str, np.ndarray], set[str]]
CASES: dict[str, Callable[[], Built]] = {}


def case(name: str) -> Callable[[Callable[[], Built]], Callable[[], Built]]:
    def register(fn: Callable[[], Built]) -> Callable[[], Built]:
        CASES[name] = fn
        return fn
    return register


def _if_in_if(c1: bool, c2: bool) -> Built:
    """Each branch of the outer If computes a value its inner If's branches read (taken and not taken alike)."""
    inner_t = body("inner_then", [node("Add", ["t1", "x"], ["it"])], ["it"])
    inner_e = body("inner_else", [node("Sub", ["t1", "w"], ["ie"])], ["ie"])
    outer_t = body("outer_then", [node("Mul", ["x", "x"], ["t1"]),
                                  node("If", ["c2"], ["t_out"], then_branch=inner_t, else_branch=inner_e)], ["t_out"])
    inner_t2 = body("inner_then2", [node("Mul", ["e1", "x"], ["jt"])], ["jt"])
    inner_e2 = body("inner_else2", [node("Add", ["e1", "e1"], ["je"])], ["je"])
    outer_e = body("outer_else", [node("Sigmoid", ["x"], ["e1"]),
                                  node("If", ["c2"], ["e_out"], then_branch=inner_t2, else_branch=inner_e2)], ["e_out"])
    feeds = {"x": arr(2, 3), "c1": flag(c1), "c2": flag(c2)}
    m = model([node("If", ["c1"], ["y"], then_branch=outer_t, else_branch=outer_e)], feeds, ["y"], {"w": arr(3)})
    return m, feeds, {"c1", "c2"}


for _c1, _c2 in itertools.product((True, False), repeat=2):
    case(f"if_in_if_reads_outer_branch_{int(_c1)}{int(_c2)}")(functools.partial(_if_in_if, _c1, _c2))


def _three_levels(c1: bool, c2: bool, c3: bool) -> Built:
    """The innermost branch reads a value of each enclosing graph: the main graph's, and both branches'."""
    l3_t = body("l3_then", [node("Add", ["b", "a"], ["s"]), node("Mul", ["s", "x"], ["l3t"])], ["l3t"])
    l3_e = body("l3_else", [node("Sub", ["b", "w"], ["l3e"])], ["l3e"])
    l2_t = body("l2_then", [node("Mul", ["a", "x"], ["b"]),
                            node("If", ["c3"], ["l2t"], then_branch=l3_t, else_branch=l3_e)], ["l2t"])
    l2_e = body("l2_else", [node("Neg", ["a"], ["l2e"])], ["l2e"])
    l1_t = body("l1_then", [node("Tanh", ["x"], ["a"]),
                            node("If", ["c2"], ["l1t"], then_branch=l2_t, else_branch=l2_e)], ["l1t"])
    l1_e = body("l1_else", [node("Abs", ["x"], ["l1e"])], ["l1e"])
    feeds = {"x": arr(3, 4), "c1": flag(c1), "c2": flag(c2), "c3": flag(c3)}
    m = model([node("If", ["c1"], ["y"], then_branch=l1_t, else_branch=l1_e)], feeds, ["y"], {"w": arr(4)})
    return m, feeds, {"c1", "c2", "c3"}


for _c2, _c3 in itertools.product((True, False), repeat=2):
    case(f"three_levels_{int(_c2)}{int(_c3)}")(functools.partial(_three_levels, True, _c2, _c3))


@case("loop_body_reads_outer_and_if_reads_loop_body")
def _loop() -> Built:
    """A Loop body reads the main graph's w and x; an If inside it (its condition from the iteration number) reads
    the body's own s and the main graph's x; a copy of x is a scan output too."""
    if_t = body("early", [node("Mul", ["s", "x"], ["p"])], ["p"])
    if_e = body("late", [node("Sub", ["s", "x"], ["q"])], ["q"])
    loop_body = body("loop_body", [
        node("Add", ["acc", "w"], ["s"]),
        node("Less", ["i", "one"], ["early"]),
        node("If", ["early"], ["r"], then_branch=if_t, else_branch=if_e),
        node("Identity", ["go"], ["go_out"]),
        node("Identity", ["x"], ["x_copy"]),
    ], ["go_out", "r", "s", "x_copy"], inputs=[helper.make_tensor_value_info("i", TensorProto.INT64, []),
                                         helper.make_tensor_value_info("go", TensorProto.BOOL, []),
                                         helper.make_tensor_value_info("acc", F, [2, 3])])
    feeds = {"x": arr(2, 3), "a0": arr(2, 3)}
    m = model([node("Loop", ["trips", "", "a0"], ["acc_final", "s_all", "x_all"], body=loop_body)], feeds,
              ["acc_final", "s_all", "x_all"],
              {"w": arr(3), "trips": np.array(3, np.int64), "one": np.array(1, np.int64)})
    return m, feeds, set()


def _scan(c: bool) -> Built:
    """A Scan body reads the main graph's w and c; an If inside it reads the body's state and step slice."""
    if_t = body("tanh", [node("Tanh", ["n"], ["o1"])], ["o1"])
    if_e = body("mix", [node("Sub", ["n", "xt"], ["o2"])], ["o2"])
    scan_body = body("scan_body", [
        node("Mul", ["xt", "w"], ["xw"]),
        node("Add", ["h", "xw"], ["n"]),
        node("If", ["c"], ["o"], then_branch=if_t, else_branch=if_e),
    ], ["n", "o"], inputs=[helper.make_tensor_value_info("h", F, [3]), helper.make_tensor_value_info("xt", F, [3])])
    feeds = {"h0": arr(3), "x": arr(4, 3), "c": flag(c)}
    m = model([node("Scan", ["h0", "x"], ["h_final", "outs"], body=scan_body, num_scan_inputs=1)], feeds,
              ["h_final", "outs"], {"w": arr(3)})
    return m, feeds, {"c"}


for _c in (True, False):
    case(f"scan_body_reads_outer_{int(_c)}")(functools.partial(_scan, _c))


@case("scan8_batched_body_reads_outer")
def _scan8() -> Built:
    """Scan-8 (a batch axis on every input and output, no sequence_lens): each batch item is scanned, backwards;
    the body reads the main graph's w."""
    scan_body = body("scan8_body", [node("Mul", ["xt", "w"], ["xw"]), node("Add", ["h", "xw"], ["n"]),
                                    node("Tanh", ["n"], ["o"])], ["n", "o"],
                     inputs=[helper.make_tensor_value_info("h", F, [3]), helper.make_tensor_value_info("xt", F, [3])])
    feeds = {"h0": arr(2, 3), "x": arr(2, 4, 3)}
    m = model([node("Scan", ["", "h0", "x"], ["h_final", "outs"], body=scan_body, num_scan_inputs=1,
                    directions=[1])], feeds, ["h_final", "outs"], {"w": arr(3)}, opset=8)
    m.ir_version = 4  # initializers need not be graph inputs
    return m, feeds, set()


def _shadowing(c: bool) -> Built:
    """The main graph computes k; the then branch's own initializer k hides it there. A Loop body's input x hides
    the main graph's x, and the body reads the outer k. (onnxruntime departs from lexical scoping when the outer
    k is also read by the other branch or by an If nested in the branch, or is a constant: it then feeds the outer
    k over the branch's initializer, and onnx's reference evaluator does too. wasmrt reads the nearest definition
    everywhere: test_a_node_output_hides_an_outer_value.)"""
    inner_t = body("inner_then", [node("Mul", ["t", "x"], ["u"])], ["u"])
    inner_e = body("inner_else", [node("Add", ["t", "x"], ["v"])], ["v"])
    then = body("then", [node("Exp", ["x"], ["e"]), node("Mul", ["e", "k"], ["t"]),
                         node("If", ["c"], ["then_out"], then_branch=inner_t, else_branch=inner_e)], ["then_out"],
                inits=[numpy_helper.from_array(np.full(3, 3.0, np.float32), "k")])
    other = body("else", [node("Mul", ["x", "x"], ["else_out"])], ["else_out"])
    loop_body = body("loop_body", [node("Add", ["x", "k"], ["x_next"]), node("Identity", ["go"], ["go_out"])],
                     ["go_out", "x_next"], inputs=[helper.make_tensor_value_info("i", TensorProto.INT64, []),
                                                   helper.make_tensor_value_info("go", TensorProto.BOOL, []),
                                                   helper.make_tensor_value_info("x", F, [2, 3])])
    feeds = {"x": arr(2, 3), "k_in": arr(3), "c": flag(c)}
    m = model([node("Neg", ["k_in"], ["k"]), node("Neg", ["x"], ["nx"]),
               node("If", ["c"], ["y"], then_branch=then, else_branch=other),
               node("Loop", ["trips", "", "nx"], ["z"], body=loop_body)], feeds, ["y", "z"],
              {"trips": np.array(2, np.int64)})
    return m, feeds, {"c"}


for _c in (True, False):
    case(f"shadowing_{int(_c)}")(functools.partial(_shadowing, _c))


@pytest.mark.parametrize("c2", [True, False])
def test_a_node_output_hides_an_outer_value(c2: bool) -> None:
    """A branch's node writes t, a name the main graph defines too: the branch and its inner If read the branch's t
    (the nearest enclosing definition). onnxruntime refuses such a model (its checker wants one definition per name
    across scopes), so the expected values are computed here."""
    inner_t = body("inner_then", [node("Mul", ["t", "x"], ["u"])], ["u"])
    inner_e = body("inner_else", [node("Add", ["t", "t"], ["v"])], ["v"])
    then = body("then", [node("Exp", ["x"], ["t"]),
                         node("If", ["c2"], ["then_out"], then_branch=inner_t, else_branch=inner_e)], ["then_out"])
    other = body("else", [node("Abs", ["t"], ["else_out"])], ["else_out"])
    x = arr(2, 3)
    m = model([node("Neg", ["x"], ["t"]), node("If", ["c1"], ["y"], then_branch=then, else_branch=other),
               node("Add", ["t", "y"], ["z"])], {"x": x, "c1": flag(True), "c2": flag(c2)}, ["y", "z"])
    data = convert(import_onnx(m, freeze_inputs={"c1": flag(True), "c2": flag(c2)})).data
    got = Interpreter(data).run({"x": x})
    want = np.exp(x) * x if c2 else np.exp(x) + np.exp(x)
    np.testing.assert_allclose(got["y"], want, rtol=1e-6)
    np.testing.assert_allclose(got["z"], want - x, rtol=1e-6, atol=1e-6)
    data = convert(import_onnx(m, freeze_inputs={"c1": flag(False), "c2": flag(c2)})).data
    np.testing.assert_allclose(Interpreter(data).run({"x": x})["y"], np.abs(x), rtol=1e-6)


class NestedLSTM:
    """forward(x, mode): LSTMs inside data-dependent branches nested two levels; the inner branches read the outer
    branch's LSTM output."""

    @staticmethod
    @functools.cache
    def onnx_model() -> onnx.ModelProto:
        import io

        import torch

        class Net(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.a = torch.nn.LSTM(4, 6, batch_first=True)
                self.b = torch.nn.LSTM(6, 6, batch_first=True)
                self.c = torch.nn.LSTM(4, 6, batch_first=True)

            def forward(self, x: torch.Tensor, mode: torch.Tensor) -> torch.Tensor:
                if mode.sum() > 0:
                    y, _ = self.a(x)
                    if mode.sum() > 1:
                        z, _ = self.b(y)
                        out = z + y
                    else:
                        out = y * 2.0
                else:
                    out, _ = self.c(x)
                return out

        torch.manual_seed(41)
        net = torch.jit.script(Net().eval())
        buf = io.BytesIO()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(net, (torch.zeros(1, 5, 4), torch.tensor([1])), buf, input_names=["x", "mode"],
                              output_names=["y"], opset_version=17, dynamo=False)
        return onnx.load_from_string(buf.getvalue())


def _lstm(mode: int) -> Built:
    feeds = {"x": arr(1, 5, 4), "mode": np.array([mode], np.int64)}
    return NestedLSTM.onnx_model(), feeds, {"mode"}


for _mode in (0, 1, 2):
    case(f"torch_nested_if_lstm_mode{_mode}")(functools.partial(_lstm, _mode))


# -- running them ------------------------------------------------------------------------------------------------
@functools.cache
def prepared(name: str) -> tuple[bytes, dict[str, np.ndarray], list[str], list[np.ndarray]]:
    m, feeds, frozen = CASES[name]()
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, feeds)
    graph = import_onnx(m, freeze_inputs={n: feeds[n] for n in frozen})
    runtime = {n: a for n, a in feeds.items() if n not in frozen}
    return convert(graph).data, runtime, [o.name for o in m.graph.output], want


@pytest.mark.parametrize(("engine", "variant"), ENGINES, ids=[e for e, _ in ENGINES])
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_onnxruntime(name: str, engine: str, variant: str | None) -> None:
    data, feeds, outs, want = prepared(name)
    m = Interpreter(data) if engine == "ref" else engine_model(data, engine, variant)
    assert_matches(m.run(feeds), outs, want)


def assert_matches(got: dict[str, np.ndarray], outs: list[str], want: list[np.ndarray]) -> None:
    """Each output as onnxruntime's: integer and bool outputs equal, float ones within RTOL of max |onnxruntime|."""
    for out, w in zip(outs, want, strict=True):
        g = np.asarray(got[out])
        assert g.shape == w.shape, (out, g.shape, w.shape)
        if w.dtype.kind in "biu":
            np.testing.assert_array_equal(g.astype(w.dtype), w, err_msg=out)
            continue
        err = float(np.abs(g.astype(np.float64) - w).max(initial=0.0))
        scale = max(float(np.abs(w).max(initial=0.0)), 1e-6)
        assert err <= RTOL * scale, f"{out}: max|ours - ort| = {err:.3g}, max|ort| = {scale:.3g}"


def test_the_branches_taken_differ() -> None:
    """The frozen conditions select different computations (else the cases above could not tell scopes apart)."""
    results = [prepared(f"if_in_if_reads_outer_branch_{a}{b}")[3][0] for a, b in itertools.product("10", repeat=2)]
    results += [prepared(f"torch_nested_if_lstm_mode{k}")[3][0] for k in range(3)]
    for a, b in itertools.combinations(results, 2):
        assert a.shape != b.shape or not np.allclose(a, b)


# -- scope errors: the branch not taken and a body that never runs are checked too --------------------------------
def _refused(m: onnx.ModelProto, frozen: dict[str, np.ndarray], *words: str) -> None:
    with pytest.raises(ModelFormatError) as e:
        import_onnx(m, freeze_inputs=frozen)
    for w in words:
        assert w in str(e.value), str(e.value)


def test_the_branch_not_taken_may_not_read_an_undefined_value() -> None:
    then = body("then", [node("Neg", ["x"], ["t"])], ["t"])
    other = body("else", [node("Add", ["x", "ghost"], ["e"])], ["e"])
    m = model([node("If", ["c"], ["y"], then_branch=then, else_branch=other)], {"x": arr(2), "c": flag(True)}, ["y"])
    _refused(m, {"c": flag(True)}, "'Add:e'", "'ghost'", "else branch")


def test_a_nested_branch_not_taken_may_not_read_a_sibling_branch_value() -> None:
    """The inner If sits in the outer else branch; its then branch (not taken) reads t, which only the outer then
    branch defines: out of scope, though an earlier conversion may have seen a value of that name."""
    outer_t = body("then", [node("Neg", ["x"], ["t"])], ["t"])
    inner_t = body("inner_then", [node("Add", ["t", "x"], ["u"])], ["u"])
    inner_e = body("inner_else", [node("Abs", ["x"], ["v"])], ["v"])
    outer_e = body("else", [node("If", ["c2"], ["e"], then_branch=inner_t, else_branch=inner_e)], ["e"])
    feeds = {"x": arr(2), "c1": flag(False), "c2": flag(False)}
    m = model([node("If", ["c1"], ["y"], then_branch=outer_t, else_branch=outer_e)], feeds, ["y"])
    _refused(m, {"c1": flag(False), "c2": flag(False)}, "'Add:u'", "'t'")


def test_a_body_may_not_read_a_value_defined_after_its_node() -> None:
    then = body("then", [node("Neg", ["x"], ["t"])], ["t"])
    other = body("else", [node("Add", ["x", "later"], ["e"])], ["e"])
    feeds = {"x": arr(2), "c": flag(True)}
    m = model([node("If", ["c"], ["y"], then_branch=then, else_branch=other), node("Abs", ["x"], ["later"])],
              feeds, ["y", "later"])
    _refused(m, {"c": flag(True)}, "'later'")


def test_a_loop_that_runs_no_iteration_still_checks_its_body() -> None:
    loop_body = body("loop_body", [node("Add", ["acc", "ghost"], ["n"]), node("Identity", ["go"], ["go_out"])],
                     ["go_out", "n"], inputs=[helper.make_tensor_value_info("i", TensorProto.INT64, []),
                                              helper.make_tensor_value_info("go", TensorProto.BOOL, []),
                                              helper.make_tensor_value_info("acc", F, [2])])
    m = model([node("Loop", ["trips", "", "x"], ["y"], body=loop_body)], {"x": arr(2)}, ["y"],
              {"trips": np.array(0, np.int64)})
    _refused(m, {}, "'ghost'", "body")
