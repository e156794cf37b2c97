"""The layers' trainer (train: "all" / "last:N" / a layer's name) through the worker client: the digits LeNet
(wasmrt/train/digits.py) trained a few steps on the page's thread and, from the same initial weights and batches, in
a Node worker_threads Worker and an emulated WeChat mini-program Worker (tests/js/chain_worker_node.mjs), and in
Chromium on the page and in a Web Worker (tests/js/chain_worker_browser.mjs). Same engine variant: the losses,
trained tensors, exported bytes and logits are equal bit for bit; fit's progress and the feature runs (once per
sample) agree; bad labels, wrong shapes and hostile worker messages give the page's error classes and messages; a
diverging learning rate is a TrainingError and nothing that is not finite is exported; the exported model reloads in
Python and classifies the same."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from test_js_trainer import CHROMIUM, NODE, ROOT

import wasmrt
from python_ref.wrt_file import read_wrt
from wasmrt.train import digits

N = 24  # training samples: 3 batches of 8


def _case(tmp_path: Path, train: str) -> np.ndarray:
    xtr, ytr, _, _ = digits.split()
    x = np.ascontiguousarray(xtr[:N])
    (tmp_path / "model.wrt").write_bytes(digits.lenet().wrt(3))
    (tmp_path / "x.bin").write_bytes(x.tobytes())
    (tmp_path / "case.json").write_text(json.dumps({
        "labels": ytr[:N].tolist(), "train": train, "optimizer": "adam", "lr": 0.003, "weightDecay": 0.001,
        "epochs": 2, "batch": 8, "check": 4, "divergeTrain": "last:2",
        # weights that stay finite (exported), then weights that overflow (export refused)
        "diverge": [{"lr": 1e30}, {"lr": 3e38, "weightDecay": 1e38}]}))
    return x


def _run(script: str, tmp_path: Path) -> dict:
    r = subprocess.run([str(NODE), str(ROOT / "tests" / "js" / script), str(tmp_path)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def _check(out: dict, where: tuple[str, ...], x: np.ndarray) -> None:
    ref = out["thread"]
    assert ref["progress"] == 6 and len(ref["history"]) == 6 == ref["stepsAfterErrors"]
    assert ref["featureRuns"] == N, "the frozen layers run once per sample"
    assert ref["labels"] == digits.CLASSES and ref["classes"] == 10
    assert ref["history"][-1] < ref["history"][0]
    for got in (out[w] for w in where):
        assert got["variant"] == ref["variant"]
        for key in ("epochLoss", "progress", "history", "featureRuns", "labels", "weights", "exported", "predicted",
                    "tunedOutputs", "errors", "stepsAfterErrors", "diverge"):
            assert got[key] == ref[key], key
        raw = got["raw"]
        assert all(raw[k]["name"] == "InputError" for k in raw), raw
        assert "sample #1000001 was never sent" in raw["neverSent"]["message"]
        assert raw["shortBuffer"] == ref["errors"]["wrongShape"]
        assert "label 0.5 of sample 0" in raw["badLabel"]["message"]
    errs = ref["errors"]
    for key, cls, text in (("badLabel", "InputError", "label 99 of sample 0"),
                           ("badName", "InputError", 'label "cat" of sample 0'),
                           ("count", "InputError", "2 samples and 1 labels"),
                           ("wrongShape", "InputError", "Float32Array of 256 values"),
                           ("notSample", "InputError", "Float32Array of 256 values"),
                           ("badTrain", "InputError", '"nope"'), ("headOption", "UnsupportedOpError", "head")):
        assert errs[key] and errs[key]["name"] == cls and text in errs[key]["message"], (key, errs[key])
    finite, overflow = ref["diverge"]
    for d in (finite, overflow):
        assert d["error"]["name"] == "TrainingError" and "diverged" in d["error"]["message"] and d["steps"] >= 1, d
    assert finite["exportError"] is None
    tensors = read_wrt(bytes(finite["exported"])).tensors
    trained = [t for t in tensors if t.name.startswith("linear") and t.data is not None]
    assert len(trained) == 4 and all(np.isfinite(np.asarray(t.data)).all() for t in trained)
    assert overflow["exported"] is None and overflow["exportError"]["name"] == "TrainingError", overflow
    assert "is not finite after step 1" in overflow["exportError"]["message"]
    tuned = wasmrt.load(bytes(ref["exported"]), "ref")
    want = np.concatenate([next(iter(tuned.run({tuned.inputs[0].name: x[i:i + 1]}).values())) for i in range(4)])
    for key in ("tunedOutputs", "predicted"):
        got = np.array(ref[key])
        assert np.abs(got - want).max() <= 1e-4 * (np.abs(want).max() + 1), key
        assert (got.argmax(1) == want.argmax(1)).all(), key


@pytest.mark.skipif(not NODE.exists(), reason="Node 22 is not installed (npm ci)")
@pytest.mark.parametrize("train", ["all", "conv2"])
def test_js_chain_trainer_in_node_workers(tmp_path: Path, train: str) -> None:
    x = _case(tmp_path, train)
    out = _run("chain_worker_node.mjs", tmp_path)
    assert out["miniprogram"]["host"] == "wechat (worker)" and out["thread"]["variant"] == "simd"
    _check(out, ("worker", "miniprogram"), x)
    assert len(out["thread"]["weights"]) == {"all": 8, "conv2": 6}[train]


@pytest.mark.skipif(not NODE.exists() or not CHROMIUM.exists(), reason="no Node 22 or /usr/bin/chromium")
def test_js_chain_trainer_in_a_chromium_worker(tmp_path: Path) -> None:
    x = _case(tmp_path, "last:3")
    out = _run("chain_worker_browser.mjs", tmp_path)
    assert out["thread"]["variant"] == "relaxed"
    _check(out, ("worker",), x)
    assert len(out["thread"]["weights"]) == 6
