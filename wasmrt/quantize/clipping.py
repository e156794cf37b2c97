"""Activation ranges chosen by the error they cause in the layers that read them (calibration method "mse").

min/max keeps every outlier and pays with a coarse step for all other values; a clipped range has a finer step
but moves the values outside it. For each activation this picks the [lo, hi] that minimises

    sum over channels c of  importance[c] * E[(fake_quant(x_c) - x_c)^2]

where importance[c] is how strongly the consumers' outputs depend on channel c: for a convolution or
fully-connected consumer the sum of the squared weights that read the channel (its output error from an
uncorrelated input error is exactly that weighted sum), for any other consumer 1; each consumer's importances are
normalised to mean 1 and summed. Values inside the range cost the rounding error step^2/12 (exact zeros cost
nothing: 0 is always representable); values outside cost their distance to the clip. The expectation comes from
one histogram per tensor, each value counted with its channel's importance, so any candidate range costs O(1)
with prefix sums, and every pair (lo, hi) on a grid of the min/max range is tried.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from wasmrt.compile.ir import Graph, Node

BINS = 2048
# candidate ends as fractions of the min/max end: 1.0 (min/max) down to 0.2
FRACTIONS = np.linspace(1.0, 0.2, 33)
LEVELS = 255  # int8 steps across the range


def importance(graph: Graph, name: str, readers: list[Node] | None = None) -> np.ndarray | None:
    """Per-channel (last axis) weight of the error of tensor `name` in its consumers' outputs; None: uniform.
    readers: graph.consumers()[name] when the caller has the map (a node reading the tensor twice counts once)."""
    t = graph.tensors[name]
    channels = int(t.shape[-1]) if t.shape else 1
    total = np.zeros(channels)
    readers = graph.consumers().get(name, []) if readers is None else readers
    consumers = list({id(n): n for n in readers}.values())
    for n in consumers:
        w = graph.tensors[n.inputs[1]] if len(n.inputs) > 1 and n.inputs[1] else None
        imp = np.ones(channels)
        if n.op in ("CONV_2D", "FULLY_CONNECTED") and n.inputs[0] == name and w is not None and w.is_const \
                and w.data is not None:
            sq = np.asarray(w.data, np.float64) ** 2
            if n.op == "FULLY_CONNECTED" and sq.shape[-1] == channels:
                imp = sq.reshape(-1, channels).sum(0)
            elif n.op == "CONV_2D":
                groups = int(n.attrs.get("groups", 1))
                cout, cg = sq.shape[0], sq.shape[-1]
                if cg * groups == channels:
                    # [G, Cout/G, KH*KW, Cg] -> per input channel g*Cg + j
                    imp = sq.reshape(groups, cout // groups, -1, cg).sum((1, 2)).reshape(-1)
        mean = imp.mean()
        total += imp / mean if mean > 0 else np.ones(channels)
    return total if consumers and np.any(total != total[0]) else None


@dataclass
class ErrorHistogram:
    """Importance-weighted histogram of one tensor's values over its min/max range [lo, hi]."""

    lo: float
    hi: float
    weights: np.ndarray | None  # per channel, or None for uniform
    counts: np.ndarray | None = None  # [BINS] weighted counts of the nonzero values (zeros cost nothing)

    def add(self, v: np.ndarray) -> None:
        if self.counts is None:
            self.counts = np.zeros(BINS)
        if self.hi <= self.lo:
            return
        v = np.asarray(v, np.float64)
        w = np.broadcast_to(self.weights, v.shape) if self.weights is not None and v.ndim else None
        flat = v.reshape(-1)
        wf = w.reshape(-1) if w is not None else None
        nz = flat != 0
        idx = np.clip(((flat[nz] - self.lo) * (BINS / (self.hi - self.lo))).astype(np.int64), 0, BINS - 1)
        self.counts += np.bincount(idx, weights=None if wf is None else wf[nz], minlength=BINS)

    def best_range(self) -> tuple[float, float]:
        if self.counts is None or self.hi <= self.lo or self.counts.sum() == 0:
            return self.lo, self.hi
        lo0, hi0 = min(self.lo, 0.0), max(self.hi, 0.0)
        centers = self.lo + (np.arange(BINS) + 0.5) * ((self.hi - self.lo) / BINS)
        n, nc, ncc = (np.concatenate([[0.0], np.cumsum(self.counts * centers ** p)]) for p in (0, 1, 2))
        los, his = lo0 * FRACTIONS, hi0 * FRACTIONS
        # bins below each lower clip / at or above each upper clip (by bin center)
        i_lo = np.searchsorted(centers, los, side="left")
        i_hi = np.searchsorted(centers, his, side="right")
        below = ncc[i_lo] - 2 * los * nc[i_lo] + los ** 2 * n[i_lo]  # sum n (c - l)^2 over c < l
        top = (ncc[-1] - ncc[i_hi]) - 2 * his * (nc[-1] - nc[i_hi]) + his ** 2 * (n[-1] - n[i_hi])
        inside = n[i_hi][None, :] - n[i_lo][:, None]
        step = (his[None, :] - los[:, None]) / LEVELS
        err = below[:, None] + top[None, :] + np.maximum(inside, 0.0) * step ** 2 / 12
        a, b = np.unravel_index(int(np.argmin(err)), err.shape)
        # a range never reaches past what was seen
        return max(self.lo, float(los[a])) if self.lo < 0 else self.lo, \
            min(self.hi, float(his[b])) if self.hi > 0 else self.hi
