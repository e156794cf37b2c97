"""The LeNet-style CNN on scikit-learn's digits (wasmrt/train/digits.py): the fixed split, a smoke run of seconds
whose tuned model predicts the same on every engine, and (slow) the full run reaching >= 97% test accuracy."""

from __future__ import annotations

import numpy as np
import pytest

from wasmrt.train import digits


def test_split_is_fixed_and_covers_every_class() -> None:
    xtr, ytr, xte, yte = digits.split()
    assert xtr.shape == (1437, 16, 16, 1) and xte.shape == (360, 16, 16, 1) and xtr.dtype == np.float32
    assert set(ytr) == set(yte) == set(range(10))
    assert xtr.min() == 0.0 and xtr.max() == 1.0
    images, labels = digits.load_digits()
    assert np.array_equal(yte, labels[::5]) and np.array_equal(xte[:, ::2, ::2, 0] * 16, images[::5])


def test_smoke_run_learns_and_runs_on_every_engine() -> None:
    tuned, acc, _ = digits.run(epochs=2, progress=False)
    assert acc >= 0.8, acc
    assert tuned.classes == digits.CLASSES
    _, _, xte, _ = digits.split()
    ref = tuned.load("ref")
    for engine in ("native", "wasm"):
        m = tuned.load(engine)
        for k in range(0, 360, 72):
            want = ref.run({"input": xte[k:k + 1]})["logits"]
            got = m.run({"input": xte[k:k + 1]})["logits"]
            assert np.max(np.abs(got - want)) <= 1e-5 * max(1.0, float(np.max(np.abs(want)))), engine


@pytest.mark.slow
def test_full_run_reaches_97_percent() -> None:
    _, acc, _ = digits.run(progress=False)
    assert acc >= 0.97, acc
