"""tools/transfer_acceptance.py in seconds: the photo classes' split (by photo), and the whole comparison on a small
network (one photo per class, a few crops, one pass): the head trained in headless Chromium and the one PyTorch
trains from the same initial weights on the same batches agree (the full run on EfficientNet-Lite0 is the tool's
command, its figures in docs/dev/training-journal.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from wasmrt.train import Sequential, conv, flatten, global_avg_pool, linear
from wasmrt.train import photo_classes as pc

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import transfer_acceptance as ta  # noqa: E402


def test_photo_classes_split_by_photo() -> None:
    for name in pc.CLASSES:
        train, test = pc.PHOTOS[name]
        assert len(train) >= 3 and len(test) >= 2 and not set(train) & set(test), name
    seen = [p for c in pc.CLASSES for p in pc.PHOTOS[c][0] + pc.PHOTOS[c][1]]
    assert len(seen) == len(set(seen)), "a photo in two classes or both splits"
    s = pc.split("test", 32, per_photo=2, photos_per_class=1)
    assert s.images.shape == (6, 32, 32, 3) and s.images.dtype == np.uint8 and s.labels.tolist() == [0, 0, 1, 1, 2, 2]
    assert set(s.photos) == {pc.PHOTOS[c][1][0] for c in pc.CLASSES}
    assert np.array_equal(s.images, pc.split("test", 32, per_photo=2, photos_per_class=1).images)  # seeded
    x = pc.to_input(s.images, "NCHW")
    assert x.shape == (6, 3, 32, 32) and x[0, 1, 2, 3] == (np.float32(s.images[0, 2, 3, 1]) - 127) / 128


@pytest.mark.skipif(not ta.NODE.exists() or not Path("/usr/bin/chromium").exists(), reason="needs Node 22 and Chromium")
def test_transfer_comparison_smoke(tmp_path: Path) -> None:
    net = Sequential([conv(8, 3, stride=2, activation="relu"), global_avg_pool(), flatten(), linear(5)],
                     input_shape=(24, 24, 3))
    model = tmp_path / "net.wrt"
    model.write_bytes(net.wrt(1))
    r = ta.run(model, tmp_path / "case", passes=1, epochs=3, lr=0.05, batch=4, photos_per_class=1, train_crops=4,
               test_crops=2)
    assert r["samples"] == {"train": 12, "test": 6} and r["chromium"]["variant"] == "relaxed"
    assert r["chromium"]["labels"] == list(pc.CLASSES) and r["chromium"]["featureRuns"] == 12
    assert r["config"]["torch_features"] == "native"
    assert r["maxWeightDifference"] <= 1e-4, r["maxWeightDifference"]
    assert np.allclose(r["chromium"]["epochLoss"], r["pytorch"]["epochLoss"], rtol=1e-4)
    assert r["samePredictions"] == 6 and r["accuracyPoints"] == 0
    assert all(k in r["chromium"]["ms"][0] for k in ("load", "firstEpoch", "test", "total"))
