"""Dense-sweep error of the approximated activations (sigmoid, tanh, exp) on one target, against float64.

Used by tests/test_kernels.py (bounds) and `python -m kernels_wasm.gen.probe --accuracy` (the README table).
"""

from __future__ import annotations

import numpy as np

from kernels_wasm.gen.harness import Batch, Runner
from kernels_wasm.gen.kernels.eltwise import UNARY

UNARY_INDEX = {op: i for i, op in enumerate(UNARY)}

# Stated bounds (relative to the exact value, over the sweep ranges below); measured values: kernels_wasm/README.md.
BOUNDS = {"sigmoid": 4e-7, "tanh": 4e-7, "exp": 4e-7}
RANGES = {"sigmoid": (-87.0, 30.0), "tanh": (-12.0, 12.0), "exp": (-87.3, 88.7)}


def exact(op: str, x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    if op == "sigmoid":
        e = np.exp(-np.abs(x))
        return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
    return np.tanh(x) if op == "tanh" else np.exp(x)


def sweep(op: str, count: int) -> np.ndarray:
    lo, hi = RANGES[op]
    x = np.linspace(lo, hi, count, dtype=np.float64)
    small = np.geomspace(1e-8, 1.0, count // 8)  # near 0, where tanh's polynomial branch lives
    return np.concatenate([x, small, -small]).astype(np.float32)


def measure(r: Runner, target: int, count: int = 200_000) -> dict[str, tuple[float, float]]:
    """op -> (max relative error, argmax x) over the sweep (one batch per op: the arena holds ~2.3M points)."""
    out = {}
    for op in BOUNDS:
        b = Batch()
        x = sweep(op, count)
        xo, yo = b.put(x), b.out(x.size)
        b.cmd("vunary", target, UNARY_INDEX[op], x.size, xo, yo, xo)
        y = r.run(b).f32(yo, x.size).astype(np.float64)
        assert not np.isnan(y).any(), f"{op}: NaN output on finite input"
        with np.errstate(invalid="ignore"):
            rel = np.abs(y - exact(op, x)) / np.abs(exact(op, x))
        i = int(np.nanargmax(rel))
        out[op] = (float(rel[i]), float(x[i]))
    return out
