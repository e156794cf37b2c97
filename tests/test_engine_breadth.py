"""The C engine vs python_ref on the ops of the breadth work: transformer blocks, comparisons and integer
arithmetic, multi-output ops (SPLIT, LSTM, GRU, RNN) and MediaPipe's attention mesh ops, on every native kernel path
and every wasm variant (test_engine.py's engines and comparison)."""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import pytest

from python_ref import Interpreter
from python_ref.opdefs import Activation, CastTo, Coupling, Direction, GeluMode, ScatterReduction
from tests.test_engine import ENGINE_IDS, ENGINES, close, engine_model, f32
from wasmrt.compile.converter import convert
from wasmrt.compile.ir import Graph
from wasmrt.errors import InputError

Case = Callable[[np.random.Generator], tuple[Graph, dict[str, np.ndarray]]]
CASES: dict[str, Case] = {}
R = np.random.default_rng(99)
# recurrent ops run T dependent steps in float32 GEMMs: their error grows with T (python_ref is float64)
RECURRENT_RTOL = 1e-4


def w(*shape: int, scale: float = 0.5) -> np.ndarray:
    return (R.standard_normal(shape) * scale).astype(np.float32)


def graph_case(name: str, op: str, inputs: dict[str, tuple[tuple[int, ...], str, float, float]],
               attrs: dict | None = None, consts: dict[str, np.ndarray] | None = None,
               order: list[str] | None = None) -> None:
    """One op; inputs: name -> (shape, dtype, lo, hi) runtime inputs; consts: name -> value; order: the op's input
    names ("" for an absent optional input), default inputs then consts."""
    def build(rng: np.random.Generator) -> tuple[Graph, dict[str, np.ndarray]]:
        g = Graph()
        feeds = {}
        for n, (shape, dt, lo, hi) in inputs.items():
            g.add_input(n, shape, dt)
            if dt == "bool":
                feeds[n] = rng.integers(0, 2, shape).astype(bool)
            elif np.dtype(dt).kind in "iu":
                feeds[n] = rng.integers(int(lo), int(hi), shape).astype(dt)
            else:
                feeds[n] = f32(rng, *shape, lo=lo, hi=hi)
        names = {n: n for n in inputs}
        for n, v in (consts or {}).items():
            names[n] = g.add_const(n, v)
        ins = [names[n] if n else "" for n in (order or [*inputs, *(consts or {})])]
        outs = g.add_node(op, ins, attrs or {}, name=op.lower())
        g.outputs.extend(outs)
        return g, feeds
    assert name not in CASES
    CASES[name] = build


F = "float32"


def x(*shape: int, lo: float = -2.0, hi: float = 2.0, dt: str = F) -> tuple[tuple[int, ...], str, float, float]:
    return (shape, dt, lo, hi)


# -- transformer blocks -------------------------------------------------------------------------------------------
graph_case("layer_norm_last", "LAYER_NORM", {"x": x(2, 5, 12)}, {"epsilon": 1e-5},
           {"scale": w(12), "bias": w(12)})
graph_case("layer_norm_axis1", "LAYER_NORM", {"x": x(3, 4, 6)}, {"axis": 1}, {"scale": w(1, 6)})
graph_case("layer_norm_no_affine", "LAYER_NORM", {"x": x(4, 33, lo=3, hi=5)}, {"epsilon": 1e-3})
graph_case("gelu_exact", "GELU", {"x": x(3, 70, lo=-7, hi=7)})
graph_case("gelu_tanh", "GELU", {"x": x(3, 70, lo=-7, hi=7)}, {"mode": GeluMode.TANH})
graph_case("erf", "ERF", {"x": x(5, 40, lo=-4, hi=4)})
graph_case("log", "LOG", {"x": x(5, 40, lo=0.01, hi=50)})
graph_case("floor", "FLOOR", {"x": x(5, 40, lo=-9, hi=9)})
graph_case("ceil", "CEIL", {"x": x(5, 40, lo=-9, hi=9)})
graph_case("where_broadcast", "WHERE", {"c": x(3, 1, 5, dt="bool"), "a": x(1, 4, 5), "b": x(3, 4, 1)})
graph_case("where_int64", "WHERE", {"c": x(6, dt="bool"), "a": x(6, lo=-50, hi=50, dt="int64"),
                                    "b": x(1, lo=0, hi=9, dt="int64")})
graph_case("expand", "EXPAND", {"x": x(3, 1, 4)}, {"shape": (2, 1, 5, 1)})
graph_case("expand_int32", "EXPAND", {"x": x(1, 3, lo=-9, hi=9, dt="int32")}, {"shape": (4, 3)})
for _src, _dst, _lo, _hi in (("float32", CastTo.INT32, -90, 90), ("float32", CastTo.INT64, -90, 90),
                             ("float32", CastTo.BOOL, -1, 1), ("int64", CastTo.FLOAT32, -1000, 1000),
                             ("int32", CastTo.INT64, -1000, 1000), ("bool", CastTo.FLOAT32, 0, 1),
                             ("int64", CastTo.INT32, -1000, 1000), ("int32", CastTo.UINT8, 0, 255),
                             ("float32", CastTo.INT8, -100, 100)):
    graph_case(f"cast_{_src}_{_dst.name.lower()}", "CAST", {"x": x(4, 9, lo=_lo, hi=_hi, dt=_src)}, {"to": _dst})
for _op in ("EQUAL", "LESS", "GREATER", "LESS_EQUAL", "GREATER_EQUAL"):
    graph_case(f"{_op.lower()}_int", _op, {"a": x(3, 4, lo=-3, hi=3, dt="int64"), "b": x(4, lo=-3, hi=3, dt="int64")})
    graph_case(f"{_op.lower()}_float", _op, {"a": x(2, 3, 4)}, consts={"b": np.float32(0.25)})
graph_case("not", "NOT", {"x": x(3, 7, dt="bool")})
for _op in ("AND", "OR", "XOR"):
    graph_case(_op.lower(), _op, {"a": x(3, 1, 4, dt="bool"), "b": x(5, 1, dt="bool")})
for _dt in ("int32", "int64"):
    for _op in ("ADD", "SUB", "MUL", "MAXIMUM", "MINIMUM"):
        graph_case(f"{_op.lower()}_{_dt}", _op, {"a": x(3, 4, lo=-1000, hi=1000, dt=_dt),
                                                 "b": x(1, 4, lo=-1000, hi=1000, dt=_dt)})
    graph_case(f"div_{_dt}", "DIV", {"a": x(3, 4, lo=-1000, hi=1000, dt=_dt), "b": x(1, 4, lo=1, hi=9, dt=_dt)})
graph_case("div_int_negative", "DIV", {"a": x(30, lo=-99, hi=99, dt="int32")}, consts={"b": np.int32(-7)})
graph_case("scatter_nd", "SCATTER_ND", {"x": x(5, 3, 4), "i": x(2, 1, lo=-5, hi=5, dt="int64"), "u": x(2, 3, 4)})
graph_case("scatter_nd_elements_add", "SCATTER_ND", {"x": x(4, 5), "i": x(6, 2, lo=0, hi=4, dt="int32"),
                                                     "u": x(6)}, {"reduction": ScatterReduction.ADD})
graph_case("scatter_nd_int_max", "SCATTER_ND", {"x": x(7, lo=-9, hi=9, dt="int64")},
           {"reduction": ScatterReduction.MAX},
           {"i": np.array([[1], [3], [1]], np.int64), "u": np.array([50, -50, 7], np.int64)})
# generalized attributes of models with run-time input sizes: copied dims, slices to the end, sizes from scales
graph_case("reshape_copy_dims", "RESHAPE", {"x": x(2, 3, 4, 5)}, {"shape": (0, 0, -1)})
graph_case("slice_past_the_end", "SLICE", {"x": x(4, 9, 7)}, {"starts": (1, 0, 9), "ends": (2147483647, 5, 0),
                                                             "steps": (1, 2, -2)})
graph_case("resize_size_from_scales", "RESIZE", {"x": x(1, 5, 7, 3)}, {"size": (0, 0), "scales": (1.5, 2.0),
                                                                       "mode": 1})
graph_case("split3", "SPLIT", {"x": x(2, 9, 3)}, {"axis": 1, "sizes": (2, 4, 3)})
graph_case("split_last_empty", "SPLIT", {"x": x(4, 6, lo=-9, hi=9, dt="int64")}, {"axis": -1, "sizes": (6, 0)})


# -- recurrent layers ---------------------------------------------------------------------------------------------
def rnn_case(name: str, op: str, t: int = 5, b: int = 3, i: int = 4, h: int = 6, d: int = 1, seq: bool = False,
             states: bool = False, peep: bool = False, proj: int = 0, ln: bool = False, **attrs: object) -> None:
    g = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    p = proj or h
    consts = {"w": w(d, g * h, i), "r": w(d, g * h, p), "b": w(d, 2 * g * h)}
    inputs = {"x": x(t, b, i)}
    order = ["x", "w", "r", "b", "", ""]
    if seq:
        inputs["seq"] = x(b, lo=0, hi=t + 1, dt="int32")
        order[4] = "seq"
    if states:
        inputs["h0"] = x(d, b, p)
        order[5] = "h0"
    if op == "LSTM":
        order += ["", "", "", "", ""]
        if states:
            inputs["c0"] = x(d, b, h)
            order[6] = "c0"
        if peep:
            consts["p"] = w(d, 3 * h)
            order[7] = "p"
        if proj:
            consts["pw"], consts["pb"] = w(d, proj, h), w(d, proj)
            order[8:10] = ["pw", "pb"]
        if ln:
            consts["ln"] = (1 + w(d, 4, h, scale=0.2)).astype(np.float32)
            order[10] = "ln"
    attrs.setdefault("direction", Direction.BIDIRECTIONAL if d == 2 else Direction.FORWARD)
    graph_case(name, op, inputs, attrs, consts, order)


rnn_case("lstm_forward", "LSTM")
rnn_case("lstm_reverse_states", "LSTM", states=True, direction=Direction.REVERSE)
rnn_case("lstm_bidir_seq_peep", "LSTM", d=2, seq=True, states=True, peep=True, t=7)
rnn_case("lstm_clip_couple", "LSTM", clip=0.8, coupling=Coupling.FORGET_FROM_INPUT, peep=True)
rnn_case("lstm_cifg_proj_ln", "LSTM", coupling=Coupling.INPUT_FROM_FORGET, proj=4, ln=True, peep=True,
         cell_clip=1.5, proj_clip=0.7, states=True)
rnn_case("lstm_activations", "LSTM", d=2, activations=(Activation.HARD_SIGMOID, Activation.SOFTSIGN,
                                                       Activation.ELU, Activation.SIGMOID, Activation.RELU6,
                                                       Activation.SCALED_TANH),
         activation_alpha=(0.3, 0, 0.8, 0, 0, 1.5), activation_beta=(0.4, 0, 0, 0, 0, 0.7))
rnn_case("lstm_wide", "LSTM", t=3, b=1, i=40, h=37)
rnn_case("gru_forward", "GRU", states=True)
rnn_case("gru_bidir_seq_lbr", "GRU", d=2, seq=True, linear_before_reset=True, t=6)
rnn_case("gru_reverse_clip", "GRU", direction=Direction.REVERSE, clip=0.5, seq=True)
rnn_case("gru_activations", "GRU", activations=(Activation.AFFINE, Activation.SOFTPLUS),
         activation_alpha=(0.5, 0), activation_beta=(0.2, 0))
rnn_case("rnn_tanh", "RNN", states=True)
rnn_case("rnn_bidir_relu_seq", "RNN", d=2, seq=True, activations=(Activation.RELU, Activation.LEAKY_RELU),
         activation_alpha=(0, 0.1))
rnn_case("rnn_thresholded", "RNN", activations=(Activation.THRESHOLDED_RELU,), activation_alpha=(0.2,))


# -- MediaPipe's attention mesh ops -------------------------------------------------------------------------------
def _landmarks(rng: np.random.Generator, n: int) -> np.ndarray:
    """A face-like point cloud in pixel units: spread over [40, 150] with depth."""
    pts = rng.uniform(40, 150, (1, n, 3)).astype(np.float32)
    pts[..., 2] = rng.uniform(-10, 10, (1, n))
    return pts


def _mediapipe_chain(align: bool) -> Case:
    def build(rng: np.random.Generator) -> tuple[Graph, dict[str, np.ndarray]]:
        g = Graph()
        lm = g.add_input("landmarks", (1, 30, 3))
        fm = g.add_input("features", (1, 48, 48, 5))
        lm_scaled = g.add_node("MUL", [lm, g.add_const("quarter", np.float32(0.25))], name="scale")[0]
        (mat,) = g.add_node("LANDMARKS_TO_TRANSFORM_MATRIX", [lm_scaled],
                            {"rotation_idx": (3, 17), "size": (16, 12), "scales": (1.5, 1.7),
                             "subset": tuple(range(2, 29, 2)), "target_rotation": 0.1}, name="l2tm")
        (crop,) = g.add_node("TRANSFORM_TENSOR_BILINEAR", [fm, mat], {"size": (16, 12), "align_corners": align},
                             name="ttb")
        (pts,) = g.add_node("TRANSFORM_LANDMARKS", [g.add_input("local", (1, 7, 2)), mat], {"dimensions": 2},
                            name="tl")
        (pts3,) = g.add_node("TRANSFORM_LANDMARKS", [g.add_input("local3", (1, 1, 1, 12)), mat],
                             {"dimensions": 3, "scale": 2.0}, name="tl3")
        g.outputs.extend([mat, crop, pts, pts3])
        feeds = {"landmarks": _landmarks(rng, 30), "features": f32(rng, 1, 48, 48, 5),
                 "local": f32(rng, 1, 7, 2, lo=0, hi=16), "local3": f32(rng, 1, 1, 1, 12, lo=0, hi=12)}
        return g, feeds
    return build


CASES["mediapipe_chain_v2"] = _mediapipe_chain(False)
CASES["mediapipe_chain_v1"] = _mediapipe_chain(True)


@functools.cache
def converted(name: str) -> tuple[bytes, dict[str, np.ndarray], dict[str, np.ndarray]]:
    graph, feeds = CASES[name](np.random.default_rng(7))
    data = convert(graph).data
    return data, feeds, Interpreter(data).run(feeds)


@pytest.mark.parametrize(("engine", "variant"), ENGINES, ids=ENGINE_IDS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_op_matches_reference(name: str, engine: str, variant: str) -> None:
    data, feeds, ref = converted(name)
    m = engine_model(data, engine, variant)
    got = m.run(feeds)
    rtol = RECURRENT_RTOL if name.split("_")[0] in ("lstm", "gru", "rnn") else 2e-5
    for k in ref:
        close(got[k], ref[k], rtol=rtol)
    got2 = m.run(feeds)
    for k in ref:
        np.testing.assert_array_equal(got2[k], got[k])


@pytest.mark.parametrize("engine", ["native", "wasm"])
def test_runtime_errors_name_the_op(engine: str) -> None:
    data, feeds, _ = converted("scatter_nd")
    with pytest.raises(InputError, match=r"SCATTER_ND 'scatter_nd'.*index 5 out of range"):
        engine_model(data, engine, None).run({**feeds, "i": np.array([[1], [5]], np.int64)})
    data, feeds, _ = converted("div_int32")
    with pytest.raises(InputError, match=r"DIV 'div'.*integer division by zero"):
        engine_model(data, engine, None).run({**feeds, "b": np.zeros((1, 4), np.int32)})
    data, feeds, _ = converted("lstm_bidir_seq_peep")
    with pytest.raises(InputError, match=r"LSTM 'lstm'.*seq_lens\[1\] = 9 is outside \[0, 7\]"):
        engine_model(data, engine, None).run({**feeds, "seq": np.array([1, 9, 2], np.int32)})
