"""Quantization-aware training: the fake-quantized forward (python_ref/train/fakequant.py) is the int8 model's bytes
on every engine, its straight-through gradients against a numerical check, a short distillation run on a small model
(wasmrt/quantize/qat.py) and `wasmrt quantize --qat` end to end with hostile options. The EfficientNet-Lite0 figure is
`python tools/qat_acceptance.py` (minutes)."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from python_ref import Interpreter, ops
from python_ref import quant as qm
from python_ref.errors import InputError
from python_ref.train.fakequant import MOVES, FakeQuant, batch_attrs, clamp_bounds
from python_ref.wrt_file import read_wrt
from wasmrt.compile import quantizer
from wasmrt.compile.converter import convert
from wasmrt.compile.ir import Graph
from wasmrt.engines import load
from wasmrt.errors import WasmrtError
from wasmrt.quantize import calibrate, qat

ROOT = Path(__file__).resolve().parents[1]
ENGINES = [("native", "scalar"), ("native", "avx2"), ("native", "avx512"), ("wasm", "scalar"), ("wasm", "simd"),
           ("wasm", "relaxed")]


def net(seed: int = 3) -> Graph:
    """conv3x3 + relu6 -> depthwise 3x3 + relu6 -> residual add -> 1x1 conv -> mean -> reshape -> fc (10 logits);
    the reshape's target holds the file's one-sample batch."""
    rng = np.random.default_rng(seed)
    g = Graph()

    def const(name: str, *shape: int, scale: float = 0.3) -> str:
        return g.add_const(name, (rng.standard_normal(shape) * scale).astype(np.float32))

    x = g.add_input("x", (1, 8, 8, 3))
    relu6 = {"act_min": 0.0, "act_max": 6.0}
    c1 = g.add_node("CONV_2D", [x, const("w1", 8, 3, 3, 3), const("b1", 8, scale=0.1)],
                    {"pads": (1, 1, 1, 1), **relu6}, name="conv1")[0]
    d = g.add_node("CONV_2D", [c1, const("w2", 8, 3, 3, 1), const("b2", 8, scale=0.1)],
                   {"pads": (1, 1, 1, 1), "groups": 8, **relu6}, name="dw")[0]
    a = g.add_node("ADD", [c1, d], name="add")[0]
    p = g.add_node("CONV_2D", [a, const("w3", 16, 1, 1, 8), const("b3", 16, scale=0.1)], relu6, name="pw")[0]
    m = g.add_node("MEAN", [p], {"axes": (1, 2), "keepdims": True}, name="mean")[0]
    f = g.add_node("RESHAPE", [m], {"shape": (1, 16)}, name="flatten")[0]
    g.add_node("FULLY_CONNECTED", [f, const("w4", 10, 16, scale=1.0), const("b4", 10)], name="fc",
               outputs=["logits"])
    g.outputs.append("logits")
    return g


def feeds(n: int, seed: int) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [{"x": rng.standard_normal((1, 8, 8, 3)).astype(np.float32)} for _ in range(n)]


def quantized(g: Graph) -> Graph:
    ranges = calibrate.collect(calibrate.Tracer(g, calibrate.activations(g), engine="ref"), feeds(16, 1), "minmax")
    qg, _ = quantizer.quantize_graph(g, ranges)
    return qg


def chain(qg: Graph, layers: int) -> tuple[FakeQuant, list[int]]:
    ops_, trained, _ = qat.tail(qg, layers)
    consts = {n: t.data for n, t in qg.tensors.items() if t.is_const and t.data is not None}
    return FakeQuant(ops_, consts, trained), trained


def tail_inputs(qg: Graph, fq: FakeQuant, samples: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    trace = calibrate.Tracer(qg, fq.inputs, engine="ref")
    got = [trace(s) for s in samples]
    return {n: np.concatenate([v[n] for v in got]) for n in fq.inputs}


def test_fake_quantized_forward_is_the_int8_model_on_every_engine() -> None:
    """After moving the trained parameters, the chain's output is the exported int8 model's, byte for byte, on
    python_ref and every engine the host runs."""
    qg = quantized(net())
    fq, trained = chain(qg, 10)  # every layer
    assert len(trained) == 4
    rng = np.random.default_rng(5)
    for name, p in fq.params.items():  # moves of up to a few steps, some past the int8 range
        p += rng.uniform(-2.5, 2.5, p.shape).astype(np.float32) * (1 if name.startswith("w") else 3)
    fq.params[f"w:{trained[-1]}"][0, :3] = [140.0, -131.0, 126.6]
    samples = feeds(6, 9)
    got = fq.forward(tail_inputs(qg, fq, samples))["logits"]
    qat._store(qg, fq, trained, fq.ops)
    stored = qg.tensors[next(n for n in qg.nodes if n.name == "fc").inputs[1]].data
    assert stored.dtype == np.int8 and list(stored[0, :3]) == [127, -127, 127]
    data = convert(copy.deepcopy(qg)).data
    it = Interpreter(data)
    want = np.concatenate([it.run(s)["logits"] for s in samples])
    np.testing.assert_array_equal(got, want)
    ran = 0
    for engine, variant in ENGINES:
        try:
            m = load(data, engine, variant)
        except WasmrtError as e:
            if "not available" in str(e) or "compiler not found" in str(e):
                continue
            raise
        np.testing.assert_array_equal(np.concatenate([m.run(s)["logits"] for s in samples]), want,
                                      err_msg=f"{engine} {variant}")
        ran += 1
    assert ran >= 2


def _float_chain(fq: FakeQuant, feeds_: dict[str, np.ndarray], k: int, u: np.ndarray,
                 values: dict[str, np.ndarray]) -> np.ndarray:
    """The float ops of the chain from trained op k on, its weights u (in scale units, unrounded), the other
    layers' stored weights, its input the int8 model's value (dequantized)."""
    cur: dict[str, np.ndarray] = {}
    for j, op in enumerate(fq.ops[k:], start=k):
        (qin, _) = op.quant
        xs = []
        for i, q in zip(op.inputs, qin, strict=True):
            if not i:
                xs.append(None)
            elif i in cur:
                xs.append(cur[i])
            elif i in values:
                xs.append(qm.dequantize(values[i], q))
            else:
                xs.append(qm.dequantize(fq.consts[i], q) if q is not None else fq.consts[i])
        if j in fq.trained:
            w, b = fq.stored(j)
            wr = u * qin[1].along(u.shape, qin[1].scale) if j == k else qm.dequantize(w, qin[1])
            xs = [xs[0], wr.astype(np.float32), qm.dequantize(b, qm.QuantParams.make(
                qm.mul_scale(qin[0].s, qin[1].scale), 0, 0))]
        a = batch_attrs(op, xs[0])
        a = {**a, "act_min": -np.inf, "act_max": np.inf} if "act_min" in a else a
        y = xs[0] if op.op in ("QUANTIZE", "DEQUANTIZE") else ops.compute(op.op, xs, a)
        o, q = op.outputs[0], op.quant[1][0]
        if q is not None and op.op not in MOVES:  # held at the int8 value where the int8 output is clamped
            lo, hi = clamp_bounds(op, values[o])
            y = np.where((values[o] > lo) & (values[o] < hi), y, qm.dequantize(values[o], q))
        cur[o] = y
    return cur["logits"].astype(np.float64)


def test_straight_through_gradients_match_a_numerical_check() -> None:
    """With a linear loss, the straight-through gradient of each trained layer's weights is the gradient (central
    differences) of the float ops run on the int8 model's values, each output held where the int8 one is clamped."""
    qg = quantized(net())
    fq, trained = chain(qg, 2)  # pw (1x1 conv, relu6) -> mean -> fc
    values = fq.forward(tail_inputs(qg, fq, feeds(4, 11)))
    c = np.random.default_rng(2).standard_normal(values["logits"].shape)
    grads = fq.gradients(values, {"logits": c.astype(np.float32)})
    for k in trained:
        u = fq.params[f"w:{k}"].astype(np.float64)
        g = grads[f"w:{k}"]
        flat = np.random.default_rng(k).choice(u.size, 12, replace=False)
        num = []
        for j in flat:
            e = np.zeros(u.size)
            e[j] = 0.05
            up = np.sum(c * _float_chain(fq, {}, k, u + e.reshape(u.shape), values))
            dn = np.sum(c * _float_chain(fq, {}, k, u - e.reshape(u.shape), values))
            num.append((up - dn) / 0.1)
        np.testing.assert_allclose(g.reshape(-1)[flat], num, rtol=1e-3, atol=1e-3 * np.abs(num).max())
    # past the int8 range the weight gets no gradient (the clipped straight-through estimator)
    k = trained[-1]
    fq.params[f"w:{k}"][:, 0] = 130.0
    g = fq.gradients(fq.forward(tail_inputs(qg, fq, feeds(4, 11))), {"logits": c.astype(np.float32)})
    assert np.all(g[f"w:{k}"][:, 0] == 0) and np.any(g[f"w:{k}"][:, 1] != 0)


def test_distillation_brings_a_small_int8_model_closer_to_float() -> None:
    """The first two layers' int8 weights moved by up to 6 steps (a drift the last layers must undo, as they undo
    the int8 error of a deep network's body): 40 steps on the last two layers cut the output error on unseen inputs
    (about 3x: 0.0049 -> 0.0016), the same file from two runs."""
    g = net()
    qg = quantized(g)
    rng = np.random.default_rng(0)
    for n in qg.nodes[1:3]:
        w = qg.tensors[n.inputs[1]]
        w.data = np.clip(w.data.astype(int) + rng.integers(-6, 7, w.data.shape), -127, 127).astype(np.int8)
    train, held = feeds(64, 21), feeds(64, 22)
    trace = calibrate.Tracer(g, g.outputs, engine="ref")
    want = np.concatenate([trace(s)["logits"] for s in held])

    def error(q: Graph) -> float:
        it = Interpreter(convert(copy.deepcopy(q)).data)
        got = np.concatenate([it.run(s)["logits"] for s in held]).astype(np.float64)
        return float(np.mean((got - want) ** 2))

    runs = []
    for _ in range(2):
        q = copy.deepcopy(qg)
        r = qat.distill(q, g, train, qat.Options(40, layers=2, loss="mse", batch=16, lr=0.05))
        runs.append((r, q, convert(copy.deepcopy(q)).data))
    (r, q, data), (_, _, data2) = runs
    assert data == data2  # seeded: the same file twice
    assert r.layers == ["pw", "fc"]
    assert np.mean(r.loss[-5:]) < 0.6 * np.mean(r.loss[:5])
    assert r.agreement_after >= r.agreement_before
    assert error(q) < 0.5 * error(qg), (error(qg), error(q))


def test_hostile_options_are_clear_errors(tmp_path: Path) -> None:
    g = net()
    qg = quantized(g)
    with pytest.raises(InputError, match="--steps must be 1 or more, got 0"):
        qat.distill(qg, g, feeds(4, 1), qat.Options(0))
    with pytest.raises(InputError, match="needs calibration samples"):
        qat.distill(qg, g, [], qat.Options(5))
    with pytest.raises(InputError, match="--qat-layers must be 1 or more"):
        qat.distill(qg, g, feeds(4, 1), qat.Options(5, layers=0))
    src = tmp_path / "net.wrt"
    src.write_bytes(convert(net()).data)
    calib = tmp_path / "calib"
    calib.mkdir()
    for k, s in enumerate(feeds(8, 4)):
        np.save(calib / f"{k}.npy", s["x"])
    (tmp_path / "empty").mkdir()
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "wasmrt.cli.main", "quantize", str(src), "-o",
                               str(tmp_path / "q.wrt"), *args], capture_output=True, text=True, cwd=ROOT, env=env)

    r = cli("--calib", str(calib), "--qat", "--steps", "0")
    assert r.returncode == 2 and "--steps must be 1 or more, got 0" in r.stderr and "Traceback" not in r.stderr
    r = cli("--calib", str(tmp_path / "empty"), "--qat")
    assert r.returncode == 2 and "no images" in r.stderr and "Traceback" not in r.stderr
    r = cli("--calib", str(calib), "--qat", "--sparsity", "0.5")
    assert r.returncode == 2 and "--qat with --sparsity" in r.stderr
    r = cli("--calib", str(calib), "--qat", "--qat-layers", "0")
    assert r.returncode == 2 and "--qat-layers must be 1 or more, got 0" in r.stderr
    r = cli("--calib", str(calib), "--steps", "5")
    assert r.returncode == 2 and "--steps needs --qat" in r.stderr
    r = cli("--calib", str(calib), "--qat", "--steps", "6", "--qat-layers", "2")
    assert r.returncode == 0, r.stderr
    assert "qat: fine-tuning" in r.stderr and "qat: distillation" in r.stderr
    m = read_wrt((tmp_path / "q.wrt").read_bytes())
    assert [t.dtype for t in m.tensors if t.name == "w4:int8"] == [np.int8]


def test_int8_floors_rounding_models_the_int8_graph() -> None:
    """tools/int8_floors.py splits the int8 error into its parts by running the float graph with part of the int8
    model's rounding. Without any it is the float model exactly; with the input and activations on the int8 grids and
    the int8 weights it is the int8 model (python_ref), within 1% of the int8 model's own error; each part alone is
    nearer the float model than both; finer grids bring the activations part towards float."""
    sys.path.insert(0, str(ROOT / "tools"))
    import int8_floors

    g = net()
    qg = quantized(g)
    samples = feeds(8, 1)  # calibration samples: inside the ranges, so finer grids are not hidden by clipping
    x = np.concatenate([s["x"] for s in samples])
    trace = calibrate.Tracer(g, g.outputs, engine="ref")
    want = np.concatenate([trace(s)["logits"] for s in samples])
    it = Interpreter(convert(copy.deepcopy(qg)).data)
    int8 = np.concatenate([it.run(s)["logits"] for s in samples]).astype(np.float64)
    np.testing.assert_array_equal(int8_floors.run(g, qg, x, None, False), want)

    def err(a: np.ndarray, b: np.ndarray) -> float:
        return float(np.sqrt(np.mean((np.asarray(a, np.float64) - b) ** 2)))

    both = int8_floors.run(g, qg, x, 0, True)
    assert err(both, int8) < 0.01 * err(int8, want), (err(both, int8), err(int8, want))
    acts, weights = int8_floors.run(g, qg, x, 0, False), int8_floors.run(g, qg, x, None, True)
    assert max(err(acts, want), err(weights, want)) < err(both, want)
    assert err(int8_floors.run(g, qg, x, 4, False), want) < 0.2 * err(acts, want)
