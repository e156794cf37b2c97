"""Weight rounding fitted to the calibration data: each int8 weight of a convolution or fully-connected layer is
rounded down or up (rather than to nearest) so that the layer's output on calibration samples is closest to the
float model's (the idea of AdaRound, Nagel et al. 2020, solved here as a small integer least-squares problem).

Only the stored int8 weights change; scales, zero points and the arithmetic stay python_ref's, so every engine stays
bit-exact. For an output channel with scale s, float weights w and integer weights q:

    minimize || Xq (s q) - Xf w ||^2   over  q[j] in {floor(w[j]/s), floor(w[j]/s) + 1}  (within [-127, 127])

where Xq are the input patches the int8 model feeds the layer (dequantized) and Xf those of the float model, both
centered (the bias correction that follows fixes the mean). The int8 input is used, so the rounding also makes up
for part of the error of the layers before. With H = Xq'Xq and t = Xq'Xf w / s this is q'Hq - 2q't: a coordinate
descent from the nearest rounding that moves one weight at a time to its best value given the others; each move
lowers the error, and it stops when no weight moves. H gets a small ridge towards w/s, so that layers fed with few
positions (the classifier's fully-connected layer) are not fitted to noise.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from python_ref import shapes

OPS = ("CONV_2D", "FULLY_CONNECTED")
ROWS_PER_SAMPLE = 2048  # positions sampled from each calibration sample's output
RIDGE = 0.01  # of the mean diagonal of H
MAX_SWEEPS = 24


def patches(x: np.ndarray, op: str, w_shape: tuple[int, ...], a: dict, rows: np.ndarray | None) -> np.ndarray:
    """The input of a CONV_2D (im2col) or FULLY_CONNECTED at the given flat output positions (all if None), per
    group and transposed: [G, KH*KW*Cg, M] float64, K ordered as the weights [Cout, KH, KW, Cg] are. Positions are
    the last axis so that each group's K x M matrix is contiguous for the products of Statistics.add (a [G, M, K]
    layout needs a transposing copy per sample, which cost more than the products on depthwise layers)."""
    x = np.asarray(x, np.float64)
    if op == "FULLY_CONNECTED":
        p = x.reshape(-1, w_shape[-1])
        return (p if rows is None else p[rows]).T[None]
    (sh, sw), (dh, dw), (pt, pl, pb, pr) = a["strides"], a["dilations"], a["pads"]
    g = int(a["groups"])
    _, kh, kw, cg = w_shape
    n, h, wd, c = x.shape
    oh, ow = shapes.conv_out(h, kh, sh, dh, pt, pb), shapes.conv_out(wd, kw, sw, dw, pl, pr)
    hp, wp = h + pt + pb, wd + pl + pr
    xp = np.zeros((c, n, hp, wp))  # channels first: the gather below then yields [C, KH, KW, M], contiguous
    xp[:, :, pt:pt + h, pl:pl + wd] = x.transpose(3, 0, 1, 2)
    flat = np.arange(n * oh * ow) if rows is None else rows
    b, r = np.divmod(flat, oh * ow)
    oy, ox = np.divmod(r, ow)
    iy = oy[None, None, :] * sh + np.arange(kh)[:, None, None] * dh
    ix = ox[None, None, :] * sw + np.arange(kw)[None, :, None] * dw
    p = np.take(xp.reshape(c, -1), (b * hp + iy) * wp + ix, axis=1)  # [C, KH, KW, M]
    m = len(flat)
    p = p.reshape(g, cg, kh * kw, m)
    return p.reshape(g, cg * kh * kw, m) if cg == 1 else p.transpose(0, 2, 1, 3).reshape(g, kh * kw * cg, m)


def output_positions(x_shape: tuple[int, ...], op: str, w_shape: tuple[int, ...], a: dict) -> int:
    if op == "FULLY_CONNECTED":
        return int(np.prod(x_shape)) // w_shape[-1]
    (sh, sw), (dh, dw), (pt, pl, pb, pr) = a["strides"], a["dilations"], a["pads"]
    _, kh, kw, _ = w_shape
    return x_shape[0] * shapes.conv_out(x_shape[1], kh, sh, dh, pt, pb) * shapes.conv_out(x_shape[2], kw, sw, dw,
                                                                                           pl, pr)


@dataclass
class Statistics:
    """Sums over calibration positions of the int8 model's patches (dequantized) and the float model's."""

    op: str
    w_shape: tuple[int, ...]
    attrs: dict
    seed: int = 0
    count: int = 0
    sq: np.ndarray | None = None  # [G, K]
    sf: np.ndarray | None = None
    gram: np.ndarray | None = None  # [G, K, K]: sum xq xq'
    cross: np.ndarray | None = None  # [G, K, K]: sum xq xf'
    rng: np.random.Generator = field(init=False)

    def __post_init__(self) -> None:
        self.rng = np.random.default_rng(self.seed)

    def add(self, xq: np.ndarray, xf: np.ndarray) -> None:
        total = output_positions(xq.shape, self.op, self.w_shape, self.attrs)
        rows = None if total <= ROWS_PER_SAMPLE else np.sort(self.rng.choice(total, ROWS_PER_SAMPLE, replace=False))
        pq, pf = (patches(v, self.op, self.w_shape, self.attrs, rows) for v in (xq, xf))  # [G, K, M]
        tq, tf = pq.transpose(0, 2, 1), pf.transpose(0, 2, 1)  # views: BLAS reads them as column-major
        if pq.shape[0] == 1:
            gram, cross = (pq[0] @ tq[0])[None], (pq[0] @ tf[0])[None]
        else:
            gram, cross = pq @ tq, pq @ tf
        sums = (pq.sum(2), pf.sum(2), gram, cross)
        if self.sq is None:
            self.sq, self.sf, self.gram, self.cross = sums
        else:
            self.sq, self.sf, self.gram, self.cross = (a + b for a, b in zip(
                (self.sq, self.sf, self.gram, self.cross), sums, strict=True))
        self.count += pq.shape[2]

    def centered(self) -> tuple[np.ndarray, np.ndarray]:
        n = max(self.count, 1)
        assert self.sq is not None and self.sf is not None and self.gram is not None and self.cross is not None
        h = self.gram - self.sq[:, :, None] * self.sq[:, None, :] / n
        c = self.cross - self.sq[:, :, None] * self.sf[:, None, :] / n
        return h / n, c / n


def fit(w: np.ndarray, scale: np.ndarray, stats: Statistics, bits_max: int = 127) -> np.ndarray:
    """int8 weights [Cout, ...] (per-channel symmetric, the given scales) whose output on the calibration patches
    is closest to the float layer's: each weight rounded down or up, starting from nearest."""
    cout = w.shape[0]
    h, c = stats.centered()
    groups, k = h.shape[0], h.shape[1]
    og = cout // groups
    s = np.asarray(scale, np.float64).reshape(cout)
    real = np.asarray(w, np.float64).reshape(groups, og, k) / s.reshape(groups, og, 1)
    lo = np.clip(np.floor(real), -bits_max, bits_max)
    hi = np.clip(lo + 1, -bits_max, bits_max)
    zero = real == 0  # pruned weights stay 0: the zero blocks of a sparse model are what its file stores
    lo[zero] = hi[zero] = 0
    q = np.clip(np.rint(real), -bits_max, bits_max)
    ridge = RIDGE * np.mean(np.diagonal(h, axis1=1, axis2=2), axis=1).reshape(groups, 1, 1) + 1e-30
    hr = h + ridge * np.eye(k)
    # t = C w / s + ridge w / s: the float layer's output projected on the int8 input, in units of s
    t = np.einsum("gkl,gol->gok", c, np.asarray(w, np.float64).reshape(groups, og, k)) / s.reshape(groups, og, 1)
    t += ridge * real
    r = np.einsum("gok,gkl->gol", q, hr) - t  # gradient / 2: H q - t
    diag = np.diagonal(hr, axis1=1, axis2=2)  # [G, K]
    for _ in range(MAX_SWEEPS):
        moved = 0
        for j in range(k):
            hj = diag[:, j][:, None]
            best = np.clip(np.rint(q[:, :, j] - r[:, :, j] / np.where(hj > 0, hj, 1.0)), lo[:, :, j], hi[:, :, j])
            delta = np.where(hj > 0, best - q[:, :, j], 0.0)
            gi, oi = np.nonzero(delta)
            if gi.size:
                moved += gi.size
                q[gi, oi, j] += delta[gi, oi]
                r[gi, oi] += delta[gi, oi, None] * hr[gi, j]
        if moved == 0:
            break
    return q.reshape(w.shape).astype(np.int8)


def error(w: np.ndarray, q: np.ndarray, scale: np.ndarray, stats: Statistics) -> float:
    """Mean squared output error of integer weights q against the float layer on the calibration patches."""
    h, c = stats.centered()
    groups, k = h.shape[0], h.shape[1]
    og = w.shape[0] // groups
    wq = (q.reshape(groups, og, k) * np.asarray(scale, np.float64).reshape(groups, og, 1))
    wf = np.asarray(w, np.float64).reshape(groups, og, k)
    # E|xq wq - xf wf|^2 without the xf'xf term (the same for every q)
    return float(np.einsum("gok,gkl,gol->", wq, h, wq) - 2 * np.einsum("gok,gkl,gol->", wq, c, wf))
