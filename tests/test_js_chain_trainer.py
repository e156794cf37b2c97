"""The JS trainer of several layers (js_bindings/src/train/) in Node on every wasm variant and once in headless
Chromium: model.trainer({train: "all" | "last:N"}) trained on the same batches as wasmrt.train(..., shuffle=False)
on python_ref gives the same weights (within 2e-5 * (max |w| + 1): float32 chains, tests/test_train_engine.py's
bound over 6 steps), its exported .wrt and its own predict() give the python_ref-tuned model's outputs (within
1e-4 * (max |y| + 1)); a bad label is an InputError naming the sample, last:N beyond the model an InputError, an op
without an engine gradient in the trained part an UnsupportedOpError naming it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from test_js_trainer import CHROMIUM, NODE, SCRIPTS

import wasmrt
from python_ref.wrt_file import read_wrt
from wasmrt.train import Sequential, avg_pool, conv, depthwise, flatten, global_avg_pool, linear, max_pool, sigmoid

CASE = "chain_trainer_case.mjs"


def net() -> Sequential:
    """Every kind of layer the chain trainer takes: grouped, depthwise (multiplier 2, stride 2) and dense
    convolutions, average and max pooling, relu / relu6 / sigmoid, a flatten and fully connected layers."""
    return Sequential([conv(4, 3, groups=2, activation="relu"), depthwise(3, stride=2, multiplier=2,
                                                                           activation="relu6"),
                       avg_pool(2, 1), conv(6, 1), max_pool(2), flatten(), linear(12), sigmoid(), linear(3)],
                      input_shape=(8, 8, 2))


@pytest.mark.skipif(not NODE.exists(), reason="Node 22 is not installed (npm ci)")
@pytest.mark.parametrize(("host", "variant", "train", "optimizer"), [
    ("node", "relaxed", "all", "adam"), ("node", "simd", "last:3", "sgd"), ("node", "scalar", "all", "sgd"),
    ("chromium", "relaxed", "all", "adam")])
def test_js_chain_trainer_matches_python_ref(tmp_path: Path, host: str, variant: str, train: str,
                                             optimizer: str) -> None:
    if host == "chromium" and not CHROMIUM.exists():
        pytest.skip("no /usr/bin/chromium")
    rng = np.random.default_rng(9)
    x = rng.standard_normal((24, 8, 8, 2)).astype(np.float32)
    y = rng.integers(0, 3, 24)
    wrt = net().wrt(5)
    kw = {"optimizer": optimizer, "lr": 0.05, "weight_decay": 0.01, "epochs": 2, "batch_size": 8}
    ref = wasmrt.train(wrt, (x, y), train=train, shuffle=False, progress=False, **kw)
    gap = Sequential([conv(4, 3), global_avg_pool(), linear(3)], input_shape=(8, 8, 2)).wrt(0)
    (tmp_path / "model.wrt").write_bytes(wrt)
    (tmp_path / "x.bin").write_bytes(x.tobytes())
    (tmp_path / "case.json").write_text(json.dumps({
        "variant": variant, "labels": y.tolist(), "train": train, "optimizer": optimizer, "lr": 0.05,
        "weightDecay": 0.01, "epochs": 2, "batch": 8, "unsupported": list(gap)}))
    r = subprocess.run([str(NODE), str(SCRIPTS[host]), str(tmp_path), CASE], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["variant"] == variant
    m, m0 = read_wrt(ref.wrt), read_wrt(wrt)
    tuned = {t.name: np.asarray(t.data) for t in m.tensors if t.name in out["weights"]}
    layers = {"all": 5, "last:3": 3}[train]  # of the three convolutions and two fully connected layers
    assert len(out["weights"]) == 2 * layers == len(tuned)
    changed = 0
    for name, want in tuned.items():
        got = np.array(out["weights"][name]).reshape(want.shape)
        err = np.abs(got - want).max()
        assert err <= 2e-5 * (np.abs(want).max() + 1), f"{name}: max err {err}"
        changed += int(not np.array_equal(want, next(t.data for t in m0.tensors if t.name == name)))
    assert changed == len(tuned), "a trained tensor did not move: the comparison would prove less"
    assert len(out["losses"]) == 6
    assert np.allclose(out["epochLoss"], [h["loss"] for h in ref.history], rtol=1e-4)
    model = wasmrt.load(ref.wrt, "ref")
    want = np.concatenate([next(iter(model.run({model.inputs[0].name: x[i:i + 1]}).values())) for i in range(len(x))])
    for key in ("tunedOutputs", "predicted"):
        got = np.array(out[key])
        assert np.abs(got - want).max() <= 1e-4 * (np.abs(want).max() + 1), key
    errs = out["errors"]
    assert errs["badLabel"]["name"] == "InputError" and "label 99 of sample 0" in errs["badLabel"]["message"]
    assert errs["badLast"]["name"] == "InputError" and "last:99" in errs["badLast"]["message"]
    assert errs["unsupported"]["name"] == "UnsupportedOpError" and "MEAN" in errs["unsupported"]["message"]
