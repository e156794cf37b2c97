"""Losses: the value (float32) and the gradient of the model's output (float32), both computed in float64.

Both are means: over the batch for softmax cross-entropy, over every element for mean squared error (PyTorch's
reduction="mean"), so a step's size does not depend on the batch size.
"""

from __future__ import annotations

import numpy as np

from python_ref.errors import InputError

F64 = np.float64


def check_labels(labels: np.ndarray, batch: int, classes: int) -> np.ndarray:
    """Class indices as int64 [batch]; anything else (a float, a negative or too large class) is an InputError."""
    lab = np.asarray(labels)
    if lab.dtype.kind not in "iu":
        raise InputError(f"labels must be integer class indices, got dtype {lab.dtype}")
    if lab.shape != (batch,):
        raise InputError(f"labels: shape {list(lab.shape)}, expected [{batch}] (one class index per sample)")
    bad = (lab < 0) | (lab >= classes)
    if bad.any():
        k = int(np.argmax(bad))
        raise InputError(f"label {int(lab[k])} of sample {k} is not a class index 0..{classes - 1}")
    return lab.astype(np.int64)


def softmax_cross_entropy(logits: np.ndarray, labels: np.ndarray) -> tuple[np.float32, np.ndarray]:
    """mean over the batch of -log softmax(logits)[label]; logits [N, C], labels int [N].
    Gradient: (softmax(logits) - onehot(label)) / N."""
    if logits.ndim != 2:
        raise InputError(f"softmax cross-entropy needs logits [batch, classes], got {list(logits.shape)}")
    n, c = logits.shape
    lab = check_labels(labels, n, c)
    z = logits.astype(F64)
    z = z - z.max(axis=1, keepdims=True)
    lse = np.log(np.exp(z).sum(axis=1, keepdims=True))
    logp = z - lse
    loss = -logp[np.arange(n), lab].mean()
    grad = np.exp(logp)
    grad[np.arange(n), lab] -= 1.0
    return np.float32(loss), (grad / n).astype(np.float32)


def mean_squared_error(output: np.ndarray, target: np.ndarray) -> tuple[np.float32, np.ndarray]:
    """mean over every element of (output - target)^2. Gradient: 2 (output - target) / size."""
    t = np.asarray(target)
    if t.shape != output.shape:
        raise InputError(f"mean squared error: target shape {list(t.shape)}, output shape {list(output.shape)}")
    d = output.astype(F64) - t.astype(F64)
    with np.errstate(over="ignore"):  # a diverging run's overflow shows as inf, which the trainer reports
        return np.float32(np.mean(d * d)), (2.0 * d / d.size).astype(np.float32)


LOSSES = {"cross_entropy": softmax_cross_entropy, "mse": mean_squared_error}
