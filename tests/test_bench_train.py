"""`wasmrt bench --train` (wasmrt/bench/train.py; the measurement itself is a command, not part of the suite): the
PyTorch network gets the .wrt's initial weights (its outputs equal python_ref's on the same inputs), and a smoke
run of a few steps of every part (PyTorch, native, our wasm engine and TF.js in one Chromium page) gives the
result file's fields."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest

from wasmrt.bench import peers
from wasmrt.bench.train import summarize, torch_net
from wasmrt.train.digits import lenet, split
from wasmrt.train.trainer import predict


def test_torch_lenet_has_the_wrt_weights() -> None:
    torch = pytest.importorskip("torch")
    wrt = lenet(16).wrt(3)
    x = split(16)[2][:5]
    want = predict(wrt, x)
    with torch.no_grad():
        got = torch_net(wrt)(torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2)))).numpy()
    assert np.abs(got - want).max() <= 1e-5 * (np.abs(want).max() + 1)


@pytest.mark.skipif(not Path("/usr/bin/chromium").exists(), reason="no /usr/bin/chromium")
def test_train_bench_smoke(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    if not (peers.PEERS_DIR / "node_modules" / "@tensorflow" / "tfjs" / "dist" / "tf.min.js").is_file():
        pytest.skip("TF.js is not in the bench's peers (wasmrt bench --train installs it)")
    from wasmrt.bench.train import run_train

    out = tmp_path / "train.json"
    args = argparse.Namespace(models=[], train_epochs=2, train_tf_epochs=2, train_tf_backends="cpu",
                              train_samples=64, output=str(out))
    assert run_train(args, passes=1) == 0
    doc = json.loads(out.read_text())
    res = doc["results"]
    ours = res["chromium"]["passes"][0]["ours"]
    assert ours["variant"] == "relaxed" and len(ours["epoch_ms"]) == 2 and len(ours["test_accuracy"]) == 2
    assert all(0.0 <= a <= 1.0 for a in ours["test_accuracy"])
    assert len(res["chromium"]["passes"][0]["tfjs"]["cpu"]["epoch_ms"]) == 2
    assert len(res["torch"][0]["epoch_ms"]) == len(res["native"][0]["epoch_ms"]) == 2
    assert summarize(res)["fastest_tfjs"] == "cpu"
    assert "chromium_over_torch" in capsys.readouterr().out
