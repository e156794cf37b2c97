"""Models built in code against their frameworks' runtimes, on every engine: LSTM, GRU and bidirectional layers
exported from PyTorch (onnxruntime as the oracle), TFLite LSTMs (LiteRT), in one run and streamed step by step
with the state carried over; a ViT-style and a BERT-style encoder exported from PyTorch (onnxruntime)."""

from __future__ import annotations

import functools

import numpy as np
import onnxruntime as ort
import pytest
import torch_models as tm
from tflite_oracle import ModelBuilder, options

from python_ref import Interpreter
from tests.test_engine import ENGINE_IDS, ENGINES, engine_model
from wasmrt import Stream
from wasmrt.compile.converter import convert
from wasmrt.compile.tflite.importer import import_tflite

TOLERANCE = 1e-4  # relative to max |oracle|
ALL_ENGINES = [("ref", None), *ENGINES]
ALL_IDS = ["ref", *ENGINE_IDS]


def rel(got: np.ndarray, want: np.ndarray) -> float:
    got = np.asarray(got).reshape(np.shape(want))
    return float(np.abs(got.astype(np.float64) - want).max() / max(float(np.abs(want).max()), 1e-30))


def model_on(data: bytes, engine: str, variant: str | None):
    return Interpreter(data) if engine == "ref" else engine_model(data, engine, variant)


def session(path) -> ort.InferenceSession:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("torch_models"))


# -- recurrent layers from PyTorch ------------------------------------------------------------------------------
@functools.cache
def recurrent(kind: str, bi: bool, folder: str) -> tuple[bytes, ort.InferenceSession]:
    path = tm.recurrent_onnx(kind, bi, folder)
    ins, outs = tm.RECURRENT[(kind, bi)]
    data = convert(path, state=dict(zip(outs[1:], ins[1:], strict=True))).data
    return data, session(path)


@pytest.mark.parametrize(("engine", "variant"), ALL_ENGINES, ids=ALL_IDS)
@pytest.mark.parametrize(("kind", "bi"), list(tm.RECURRENT), ids=[f"{k}{'_bi' if b else ''}" for k, b in tm.RECURRENT])
def test_pytorch_recurrent_streamed(kind: str, bi: bool, engine: str, variant: str | None, folder: str) -> None:
    """Three chunks of a sequence, the state carried by wasmrt.Stream from chunk to chunk, against onnxruntime fed
    the same state by hand."""
    data, sess = recurrent(kind, bi, folder)
    ins, outs = tm.RECURRENT[(kind, bi)]
    m = model_on(data, engine, variant)
    stream = Stream(m) if engine != "ref" else None
    state = {n: np.zeros(tm.recurrent_state_shape(bi), np.float32) for n in ins[1:]}
    ours_state = dict(state)
    rng = np.random.default_rng(5)
    for step in range(3):
        x = rng.standard_normal((tm.BATCH, tm.STEPS, tm.FEATURES)).astype(np.float32)
        want = dict(zip(outs, sess.run(None, {"x": x, **state}), strict=True))
        if stream is not None:
            got = stream.step({"x": x})
        else:
            got = m.run({"x": x, **ours_state})
            ours_state = {i: got[o] for o, i in zip(outs[1:], ins[1:], strict=True)}
        errs = {k: rel(got[k], want[k]) for k in outs}
        print(f"{kind}{' bidirectional' if bi else ''} step {step} {engine}-{variant}: "
              + ", ".join(f"{k} {v:.2g}" for k, v in errs.items()))
        assert max(errs.values()) <= TOLERANCE
        state = {i: want[o] for o, i in zip(outs[1:], ins[1:], strict=True)}


# -- TFLite LSTMs built in code ---------------------------------------------------------------------------------
TFLITE_LSTMS = {
    "plain": {},
    "peephole_projection": {"peep": True, "proj": 4, "proj_clip": 0.6},
    "cifg_layernorm_cellclip": {"cifg": True, "peep": True, "ln": True, "cell_clip": 0.9},
    "time_major_relu": {"time_major": True, "act": 1},
}


def tflite_lstm(b: int = 2, t: int = 5, i: int = 6, h: int = 8, proj: int = 0, cifg: bool = False,
                peep: bool = False, ln: bool = False, time_major: bool = False, cell_clip: float = 0.0,
                proj_clip: float = 0.0, act: int = 4) -> bytes:
    """UNIDIRECTIONAL_SEQUENCE_LSTM with variable state tensors (LiteRT keeps them from invoke to invoke)."""
    rng = np.random.default_rng(11)

    def w(*s: int) -> np.ndarray:
        return (rng.standard_normal(s) * 0.4).astype(np.float32)

    mb = ModelBuilder()
    p = proj or h
    x = mb.input("x", (t, b, i) if time_major else (b, t, i))
    ins = [x]
    ins += [-1 if cifg and g == "i" else mb.const(f"w{g}", w(h, i)) for g in "ifco"]
    ins += [-1 if cifg and g == "i" else mb.const(f"r{g}", w(h, p)) for g in "ifco"]
    ins += [mb.const(f"p{g}", w(h)) if peep and not (cifg and g == "i") else -1 for g in "ifo"]
    ins += [-1 if cifg and g == "i" else mb.const(f"b{g}", w(h)) for g in "ifco"]
    ins += [mb.const("pw", w(p, h)), mb.const("pb", w(p))] if proj else [-1, -1]
    for name, shape in (("h_state", (b, p)), ("c_state", (b, h))):
        k = mb.tensor(name, shape)
        mb.graph.tensors[k].isVariable = True
        ins.append(k)
    ins += [mb.const(f"ln{g}", 1 + w(h) * 0.3) if ln and not (cifg and g == "i") else -1 for g in "ifco"]
    y = mb.tensor("y", (t, b, p) if time_major else (b, t, p))
    mb.op("UNIDIRECTIONAL_SEQUENCE_LSTM", ins, [y], options(
        "UnidirectionalSequenceLSTMOptions", fusedActivationFunction=act, cellClip=cell_clip, projClip=proj_clip,
        timeMajor=time_major))
    mb.output(y)
    return mb.build()


@pytest.mark.parametrize(("engine", "variant"), ALL_ENGINES, ids=ALL_IDS)
@pytest.mark.parametrize("config", list(TFLITE_LSTMS))
def test_tflite_lstm_streamed_like_litert(config: str, engine: str, variant: str | None) -> None:
    """LiteRT keeps the LSTM's state between invokes; ours carries it through the state inputs and outputs the
    importer made: three invokes must agree."""
    from ai_edge_litert.interpreter import Interpreter as Lite

    tfl = tflite_lstm(**TFLITE_LSTMS[config])
    data = convert(import_tflite(tfl)).data
    lite = Lite(model_content=tfl, num_threads=1)
    lite.allocate_tensors()
    m = model_on(data, engine, variant)
    spec = Interpreter(data)
    assert [s.name for s in spec.inputs] == ["x", "h_state", "c_state"]
    assert [s.name for s in spec.outputs] == ["y", "h_state_next", "c_state_next"]
    state = {s.name: np.zeros(s.shape, np.float32) for s in spec.inputs[1:]}
    rng = np.random.default_rng(2)
    for step in range(3):
        x = rng.standard_normal(spec.inputs[0].shape).astype(np.float32)
        lite.set_tensor(lite.get_input_details()[0]["index"], x)
        lite.invoke()
        want = lite.get_tensor(lite.get_output_details()[0]["index"])
        got = m.run({"x": x, **state})
        err = rel(got["y"], want)
        print(f"TFLite LSTM {config} step {step} {engine}-{variant}: {err:.2g}")
        assert err <= TOLERANCE
        state = {"h_state": got["h_state_next"], "c_state": got["c_state_next"]}


def _lstm_weights(mb: ModelBuilder, w, tag: str, h: int, i: int, p: int, peep: bool, cifg: bool = False) -> list[int]:
    """TFLite's 17 per-direction LSTM inputs: input and recurrent weights, peepholes, biases (gates i, f, c, o),
    projection weights and bias (absent)."""
    ins = [-1 if cifg and g == "i" else mb.const(f"{tag}w{g}", w(h, i)) for g in "ifco"]
    ins += [-1 if cifg and g == "i" else mb.const(f"{tag}r{g}", w(h, p)) for g in "ifco"]
    ins += [mb.const(f"{tag}p{g}", w(h)) if peep and not (cifg and g == "i") else -1 for g in "ifo"]
    ins += [-1 if cifg and g == "i" else mb.const(f"{tag}b{g}", w(h)) for g in "ifco"]
    return [*ins, -1, -1]


def _state(mb: ModelBuilder, name: str, shape: tuple[int, ...]) -> int:
    k = mb.tensor(name, shape)
    mb.graph.tensors[k].isVariable = True
    return k


# Merged outputs of a batch-major op with a batch > 1 are left out: LiteRT's kernel (lstm_eval.cc, EvalFloat) steps
# each batch's state by the output's last dimension (2 * H when merged) instead of H there, so batch 1 reads and
# writes past its state: its outputs are not the LSTM's (ours are; separate outputs and time-major runs agree).
TFLITE_BIDIRECTIONAL = {"merged_batch1": {"merge": True, "b": 1}, "separate": {"merge": False},
                        "separate_time_major": {"merge": False, "time_major": True},
                        "cifg_peephole_clip_time_major": {"merge": True, "time_major": True, "cifg": True,
                                                          "peep": True, "cell_clip": 0.8}}


def tflite_bidirectional_lstm(b: int = 2, t: int = 4, i: int = 5, h: int = 6, merge: bool = True,
                              time_major: bool = False, cifg: bool = False, peep: bool = False,
                              cell_clip: float = 0.0) -> tuple[bytes, int]:
    """BIDIRECTIONAL_SEQUENCE_LSTM: a forward and a backward LSTM over the sequence (their outputs merged into one
    tensor or two), four variable state tensors. Returns the model and its output count."""
    rng = np.random.default_rng(12)

    def w(*s: int) -> np.ndarray:
        return (rng.standard_normal(s) * 0.4).astype(np.float32)

    mb = ModelBuilder()
    x = mb.input("x", (t, b, i) if time_major else (b, t, i))
    ins = [x, *_lstm_weights(mb, w, "fw_", h, i, h, peep, cifg), *_lstm_weights(mb, w, "bw_", h, i, h, peep, cifg)]
    ins += [_state(mb, n, (b, h)) for n in ("fw_h", "fw_c", "bw_h", "bw_c")]
    ins += [-1] * 9  # the auxiliary input and its weights
    seq = (t, b) if time_major else (b, t)
    outs = [mb.tensor("y", (*seq, 2 * h))] if merge else [mb.tensor("y_fw", (*seq, h)), mb.tensor("y_bw", (*seq, h))]
    mb.op("BIDIRECTIONAL_SEQUENCE_LSTM", ins, outs, options(
        "BidirectionalSequenceLSTMOptions", fusedActivationFunction=4, cellClip=cell_clip, mergeOutputs=merge,
        timeMajor=time_major))
    for o in outs:
        mb.output(o)
    return mb.build(), len(outs)


def tflite_lstm_step(b: int = 3, i: int = 5, h: int = 7, peep: bool = True) -> bytes:
    """The one-step LSTM op (full kernel): x [B, I] -> h [B, H], the state kept between invokes."""
    rng = np.random.default_rng(13)

    def w(*s: int) -> np.ndarray:
        return (rng.standard_normal(s) * 0.4).astype(np.float32)

    mb = ModelBuilder()
    x = mb.input("x", (b, i))
    ins = [x, *_lstm_weights(mb, w, "", h, i, h, peep), _state(mb, "h_state", (b, h)), _state(mb, "c_state", (b, h))]
    y = mb.tensor("y", (b, h))
    mb.op("LSTM", ins, [y], options("LSTMOptions", fusedActivationFunction=4, cellClip=0.0, projClip=0.0))
    mb.output(y)
    return mb.build()


def _litert_steps(tfl: bytes, n_out: int, steps: int, seed: int) -> list[tuple[np.ndarray, list[np.ndarray]]]:
    """LiteRT invoked `steps` times on random inputs, its variable tensors carrying the state: (x, outputs)."""
    from ai_edge_litert.interpreter import Interpreter as Lite

    lite = Lite(model_content=tfl, num_threads=1)
    lite.allocate_tensors()
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(steps):
        x = rng.standard_normal(lite.get_input_details()[0]["shape"]).astype(np.float32)
        lite.set_tensor(lite.get_input_details()[0]["index"], x)
        lite.invoke()
        out.append((x, [lite.get_tensor(d["index"]) for d in lite.get_output_details()[:n_out]]))
    return out


@pytest.mark.parametrize(("engine", "variant"), ALL_ENGINES, ids=ALL_IDS)
@pytest.mark.parametrize("config", [*TFLITE_BIDIRECTIONAL, "lstm_step"])
def test_tflite_bidirectional_and_step_lstm_like_litert(config: str, engine: str, variant: str | None) -> None:
    """BIDIRECTIONAL_SEQUENCE_LSTM (merged or separate outputs, batch- or time-major, CIFG with peepholes and a cell
    clip) and the one-step LSTM op, three invokes each, the state carried by wasmrt.Stream (the pairs the importer
    stored) against LiteRT's variable tensors."""
    tfl, n_out = (tflite_lstm_step(), 1) if config == "lstm_step" else tflite_bidirectional_lstm(
        **TFLITE_BIDIRECTIONAL[config])
    data = convert(import_tflite(tfl)).data
    m = model_on(data, engine, variant)
    spec = Interpreter(data)
    names = [s.name for s in spec.outputs[:n_out]]
    state = {s.name: np.zeros(s.shape, np.float32) for s in spec.inputs[1:]}
    pairs = {f"{k}_next": k for k in state}
    assert {s.name for s in spec.outputs[n_out:]} == set(pairs)
    for step, (x, want) in enumerate(_litert_steps(tfl, n_out, 3, seed=3)):
        got = m.run({spec.inputs[0].name: x, **state})
        errs = [rel(got[n], w) for n, w in zip(names, want, strict=True)]
        print(f"TFLite {config} step {step} {engine}-{variant}: {', '.join(f'{e:.2g}' for e in errs)}")
        assert max(errs) <= TOLERANCE
        state = {i: got[o] for o, i in pairs.items()}


# -- transformer encoders from PyTorch --------------------------------------------------------------------------
@functools.cache
def encoder(name: str, folder: str) -> tuple[bytes, ort.InferenceSession, dict[str, np.ndarray]]:
    if name == "vit":
        path = tm.vit_onnx(folder)
        feeds = {"pixels": np.random.default_rng(4).standard_normal(tm.VIT_INPUT).astype(np.float32)}
    else:
        path = tm.bert_onnx(folder)
        feeds = tm.bert_feeds(seed=9)
    return convert(path).data, session(path), feeds


@pytest.mark.parametrize(("engine", "variant"), ALL_ENGINES, ids=ALL_IDS)
@pytest.mark.parametrize("name", ["vit", "bert"])
def test_transformer_encoder_matches_onnxruntime(name: str, engine: str, variant: str | None, folder: str) -> None:
    data, sess, feeds = encoder(name, folder)
    want = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds), strict=True))
    got = model_on(data, engine, variant).run(feeds)
    for k, w in want.items():
        err = rel(got[k], w)
        print(f"{name} {k} {engine}-{variant}: {err:.2g}")
        assert err <= TOLERANCE
