"""A LeNet-style CNN trained from scratch on scikit-learn's `digits` (1797 8x8 handwritten digits, 10 classes), read
from the scikit-learn wheel (sklearn/datasets/data/digits.csv.gz; no need to install it).

The split is fixed: sample i is a test sample when i % 5 == 0 (360 test, 1437 training samples, every class in both).
Images are upsampled by pixel repetition to `size` x `size` (16 by default) and scaled from 0..16 to 0..1.

    python -m wasmrt.train.digits                   # the full run: 20 epochs, Adam (lr 0.003); prints the test accuracy
    python -m wasmrt.train.digits --epochs 1 -o digits.wrt
"""

from __future__ import annotations

import argparse
import gzip
import io
import time

import numpy as np

from wasmrt.train.layers import Sequential, conv, flatten, linear, max_pool
from wasmrt.train.trainer import Trained, accuracy, train

CLASSES = [str(d) for d in range(10)]
TEST_EVERY = 5  # sample i is a test sample when i % TEST_EVERY == 0


def load_digits() -> tuple[np.ndarray, np.ndarray]:
    """(images [1797, 8, 8] float32 in 0..16, labels [1797] int64), in the data set's order."""
    from wasmrt.zoo import models, photos

    raw = models._extract_member(models.fetch_package(photos.SKLEARN), "sklearn/datasets/data/digits.csv.gz")
    table = np.loadtxt(io.BytesIO(gzip.decompress(raw)), delimiter=",", dtype=np.float32)
    return table[:, :64].reshape(-1, 8, 8), table[:, 64].astype(np.int64)


def split(size: int = 16) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(train inputs, train labels, test inputs, test labels); inputs NHWC [N, size, size, 1] float32 in 0..1."""
    if size % 8 or size < 8:
        raise ValueError(f"size must be a multiple of 8, got {size}")
    images, labels = load_digits()
    k = size // 8
    x = np.repeat(np.repeat(images, k, axis=1), k, axis=2)[..., None] / np.float32(16.0)
    test = np.arange(len(x)) % TEST_EVERY == 0
    return x[~test], labels[~test], x[test], labels[test]


def lenet(size: int = 16) -> Sequential:
    """conv 3x3 (8) + relu, max pool 2, conv 3x3 (16) + relu, max pool 2, linear 64 + relu, linear 10."""
    return Sequential([conv(8, 3, activation="relu"), max_pool(2), conv(16, 3, activation="relu"), max_pool(2),
                       flatten(), linear(64, activation="relu"), linear(10)], input_shape=(size, size, 1),
                      labels=CLASSES)


EPOCHS, LR = 20, {"adam": 0.003, "sgd": 0.05}  # the full run's settings (docs/training.md quotes its results)


def run(epochs: int = EPOCHS, optimizer: str = "adam", lr: float | None = None, batch_size: int = 32, size: int = 16,
        seed: int = 0, progress: bool = True) -> tuple[Trained, float, float]:
    """Train lenet() on the training split: (the tuned model, its test accuracy, seconds per epoch)."""
    xtr, ytr, xte, yte = split(size)
    t0 = time.perf_counter()
    tuned = train(lenet(size), (xtr, ytr), optimizer=optimizer, lr=LR[optimizer] if lr is None else lr, epochs=epochs,
                  batch_size=batch_size, seed=seed, progress=progress)
    per_epoch = (time.perf_counter() - t0) / epochs
    return tuned, accuracy(tuned.wrt, xte, yte), per_epoch


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--epochs", type=int, default=EPOCHS)
    ap.add_argument("--optimizer", choices=("sgd", "adam"), default="adam")
    ap.add_argument("--lr", type=float, default=None, help=f"default: {LR['adam']} (adam), {LR['sgd']} (sgd)")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--size", type=int, default=16, help="image side after upsampling (multiple of 8)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("-o", "--output", help="write the tuned model here (.wrt)")
    args = ap.parse_args(argv)
    tuned, acc, per_epoch = run(args.epochs, args.optimizer, args.lr, args.batch_size, args.size, args.seed)
    print(f"test accuracy {acc:.4f} (360 samples), {per_epoch:.2f} s per epoch (python_ref numerics)")
    if args.output:
        tuned.save(args.output)
        print(f"wrote {args.output} ({len(tuned.wrt):,} bytes)")


if __name__ == "__main__":
    main()
