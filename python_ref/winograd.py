"""Winograd F(m x m, 3 x 3) convolution: the algorithm the engines may run a dense 3x3, stride-1 CONV_2D with.

The result is the CONV_2D of python_ref/ops.py (direct, float64) up to rounding: Winograd reorders the arithmetic,
so it is held to a written tolerance (`TOLERANCE`, python_ref/README.md "Winograd convolution"), not to bits.

One output tile of m x m pixels reads an input tile of n x n pixels (n = m + 2, tiles step by m):
    Y = A^T [ (G g G^T) . (B^T d B) ] A         (. element-wise, per input/output channel pair summed over Cin)
with the n x n transformed positions computed by one GEMM each ([tiles, Cin] x [Cin, Cout]).

The matrices come from Toom-Cook interpolation points (`POINTS`, plus the point at infinity), computed here exactly
with fractions; the kernel generators (kernels_wasm/gen/kernels/winograd.py) read them from this module. Points:
- F(2x2, 3x3): 0, 1, -1. Every coefficient of B^T and A^T is 0 or +-1.
- F(4x4, 3x3): 0, 1, -1, 1/2, -2. A reciprocal pair (1/2 and -2) balances the magnitudes the transforms multiply
  by (A^T's last row holds 1/8 and -8 rather than 8 and -8): measured by `error_of_points` (random 3x3
  convolutions, Cin 16 and 64, three seeds) the float32 error is 2.4x smaller than with the usual 0, +-1, +-2
  (and 2.9x than with 0, +-1, +-1/2). Every coefficient of A^T and B^T is a small
  integer or a power of two (B^T's rows are scaled to coprime integers, G's inversely), so exact in float32.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import cache
from typing import Any

import numpy as np

from python_ref import shapes
from python_ref.ops import conv2d_sums

R = 3  # filter taps per axis
POINTS: dict[int, tuple[Fraction, ...]] = {
    2: (Fraction(0), Fraction(1), Fraction(-1)),
    4: (Fraction(0), Fraction(1), Fraction(-1), Fraction(1, 2), Fraction(-2)),
}
ALGORITHMS = {"wino2": 2, "wino4": 4}  # the names engines and tests use for F(2x2, 3x3) and F(4x4, 3x3)

# Written tolerance against the direct convolution, per output tile size m: for every output element,
#   |y_winograd - y_direct| <= 2^-24 * S * (TOLERANCE[m] + 2 * sqrt(9 * Cin))
# S = max over the output of (|bias| + sum over taps of |x| * |w|): the direct convolution on absolute values. The
# transforms add an error that does not grow with Cin (their coefficients, and the final rounding): measured by
# `error_of_points` at most 3.7 (m = 2) and 38 (m = 4) units of 2^-24 * S, at Cin = 3 (Cin 1..256, four seeds),
# written with a margin of about 2x; the sqrt term is the float32 accumulation over Cin of the GEMMs (as the
# direct kernels' tolerance, tests/test_kernels.py).
TOLERANCE: dict[int, float] = {2: 8.0, 4: 80.0}


def _solve(a: list[list[Fraction]], b: list[Fraction]) -> list[Fraction]:
    """The exact solution of a consistent (possibly over-determined) linear system, by Gaussian elimination."""
    rows = [[*r, v] for r, v in zip(a, b, strict=True)]
    n = len(a[0])
    piv = []
    r = 0
    for c in range(n):
        p = next((i for i in range(r, len(rows)) if rows[i][c] != 0), None)
        if p is None:
            continue
        rows[r], rows[p] = rows[p], rows[r]
        rows[r] = [v / rows[r][c] for v in rows[r]]
        for i in range(len(rows)):
            if i != r and rows[i][c] != 0:
                f = rows[i][c]
                rows[i] = [x - f * y for x, y in zip(rows[i], rows[r], strict=True)]
        piv.append(c)
        r += 1
    if any(all(v == 0 for v in row[:-1]) and row[-1] != 0 for row in rows) or len(piv) != n:
        raise ValueError("Winograd points give no solution")
    x = [Fraction(0)] * n
    for i, c in enumerate(piv):
        x[c] = rows[i][-1]
    return x


Matrix = tuple[tuple[Fraction, ...], ...]


@cache
def matrices(m: int, points: tuple[Fraction, ...] | None = None) -> tuple[Matrix, Matrix, Matrix]:
    """(A^T [m][n], G [n][3], B^T [n][n]) of F(m, 3), exact. Finite point a_j: A^T[i][j] = a_j^i,
    G[j][k] = a_j^k / prod_{l != j} (a_j - a_l); the point at infinity: the last column of A^T and row of G pick the
    highest coefficient. B^T is then the one matrix making the product a correlation (solved exactly)."""
    pts = POINTS[m] if points is None else points
    n = m + R - 1
    if len(pts) != n - 1 or len(set(pts)) != len(pts):
        raise ValueError(f"F({m}, 3) needs {n - 1} distinct finite points")
    at = [[p ** i for p in pts] + [Fraction(int(i == m - 1))] for i in range(m)]
    g = []
    for j, p in enumerate(pts):
        den = Fraction(1)
        for q in pts[:j] + pts[j + 1:]:
            den *= p - q
        g.append([p ** k / den for k in range(R)])
    g.append([Fraction(int(k == R - 1)) for k in range(R)])
    # sum_j AT[i][j] G[j][k] BT[j][l] = [l == i + k] for every i < m, k < 3, l < n: one system per column l of BT
    eqs = [[at[i][j] * g[j][k] for j in range(n)] for i in range(m) for k in range(R)]
    cols = [_solve(eqs, [Fraction(int(l_ == i + k)) for i in range(m) for k in range(R)]) for l_ in range(n)]
    bt = [[cols[l_][j] for l_ in range(n)] for j in range(n)]
    # each row j of B^T scaled to coprime integers (exact in float32; that row of G scaled inversely)
    for j in range(n):
        den = math.lcm(*(v.denominator for v in bt[j]))
        num = math.gcd(*(int(v * den) for v in bt[j]))
        s = Fraction(den, num)
        bt[j] = [v * s for v in bt[j]]
        g[j] = [v / s for v in g[j]]
    return (tuple(map(tuple, at)), tuple(map(tuple, g)), tuple(map(tuple, bt)))


def float_matrices(m: int, points: tuple[Fraction, ...] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The same as float64 arrays: (A^T, G, B^T)."""
    return tuple(np.array([[float(v) for v in row] for row in mat]) for mat in matrices(m, points))  # type: ignore


def transform_weights(w: np.ndarray, m: int, points: tuple[Fraction, ...] | None = None) -> np.ndarray:
    """OHWI [Cout, 3, 3, Cin] weights -> U [n*n, Cin, Cout] (float64): G g G^T per channel pair, position-major."""
    _, g, _ = float_matrices(m, points)
    u = np.einsum("ak,okli,bl->abio", g, w.astype(np.float64), g)
    n = g.shape[0]
    return u.reshape(n * n, w.shape[3], w.shape[0])


def input_tiles(xp: np.ndarray, m: int, th: int, tw: int) -> np.ndarray:
    """Padded NHWC input (at least (th*m + 2) x (tw*m + 2) pixels) -> tiles [N, th, tw, n, n, C]."""
    n = m + R - 1
    idx_h = np.arange(th)[:, None] * m + np.arange(n)[None, :]
    idx_w = np.arange(tw)[:, None] * m + np.arange(n)[None, :]
    t = xp[:, idx_h]                 # [N, th, n, W, C]
    t = t[:, :, :, idx_w]            # [N, th, n, tw, n, C]
    return t.transpose(0, 1, 3, 2, 4, 5)


def transform_input(d: np.ndarray, m: int, points: tuple[Fraction, ...] | None = None) -> np.ndarray:
    """Tiles [..., n, n, C] -> B^T d B [..., n, n, C], in the dtype of d (float32: one rounding per product sum)."""
    _, _, bt = float_matrices(m, points)
    b = bt.astype(d.dtype)
    return np.einsum("ij,...jkc,lk->...ilc", b, d, b)


def transform_output(mm: np.ndarray, m: int, points: tuple[Fraction, ...] | None = None) -> np.ndarray:
    """Products [..., n, n, C] -> A^T M A [..., m, m, C], in the dtype of mm."""
    at, _, _ = float_matrices(m, points)
    a = at.astype(mm.dtype)
    return np.einsum("ij,...jkc,lk->...ilc", a, mm, a)


def applies(w_shape: tuple[int, ...], a: dict[str, Any]) -> bool:
    """Whether a CONV_2D can run as Winograd F(m x m, 3 x 3): dense 3x3 filters, stride 1, dilation 1, one group."""
    return (tuple(w_shape[1:3]) == (R, R) and tuple(a["strides"]) == (1, 1) and tuple(a["dilations"]) == (1, 1)
            and int(a["groups"]) == 1)


def conv2d(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, a: dict[str, Any], m: int,
           dtype: type = np.float32, points: tuple[Fraction, ...] | None = None) -> np.ndarray:
    """CONV_2D (no residual, no clamp) as Winograd F(m x m, 3 x 3), every step rounded to `dtype` as the kernels
    round (transformed weights rounded once; float64 gives the exact algorithm). x NHWC, w OHWI."""
    if not applies(w.shape, a):
        raise ValueError("Winograd needs a dense 3x3 convolution of stride 1 and dilation 1")
    pt, pl, pb, pr = (int(v) for v in a["pads"])
    nb, h, wd, _ = x.shape
    oh, ow = shapes.conv_out(h, R, 1, 1, pt, pb), shapes.conv_out(wd, R, 1, 1, pl, pr)
    th, tw = -(-oh // m), -(-ow // m)
    n = m + R - 1
    xp = np.zeros((nb, th * m + R - 1, tw * m + R - 1, x.shape[3]), dtype)
    src = x[:, max(0, -pt):, max(0, -pl):]
    hh, ww = min(src.shape[1], xp.shape[1] - pt), min(src.shape[2], xp.shape[2] - pl)
    xp[:, pt:pt + hh, pl:pl + ww] = src[:, :hh, :ww]
    v = transform_input(input_tiles(xp, m, th, tw), m, points)          # [N, th, tw, n, n, C]
    u = transform_weights(w, m, points).astype(dtype)                    # [n*n, C, Co]
    v = v.reshape(nb * th * tw, n * n, -1).transpose(1, 0, 2)            # [n*n, T, C]
    mm = np.matmul(v, u).transpose(1, 0, 2).reshape(nb, th, tw, n, n, -1)
    y = transform_output(mm, m, points)                                  # [N, th, tw, m, m, Co]
    if b is not None:
        y = y + b.astype(dtype)
    y = y.transpose(0, 1, 3, 2, 4, 5).reshape(nb, th * m, tw * m, -1)
    return np.ascontiguousarray(y[:, :oh, :ow]).astype(np.float32)


def tolerance(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, a: dict[str, Any], m: int) -> float:
    """The written bound on |Winograd - direct| for this convolution (see TOLERANCE)."""
    s = conv2d_sums(np.abs(x), np.abs(w), a)
    if b is not None:
        s = s + np.abs(b.astype(np.float64))
    return 2.0 ** -24 * float(s.max(initial=0.0)) * (TOLERANCE[m] + 2 * float(np.sqrt(9 * x.shape[3])))


def error_of_points(m: int, points: tuple[Fraction, ...] | None = None, cin: int = 64, seed: int = 0) -> float:
    """The float32 error of F(m, 3) with these points on a random 3x3 convolution, in units of the written scale
    (2^-24 S): the figure the choice of POINTS and TOLERANCE rests on."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((1, 13, 17, cin)).astype(np.float32)
    w = rng.standard_normal((8, 3, 3, cin)).astype(np.float32)
    a = {"strides": (1, 1), "dilations": (1, 1), "pads": (1, 1, 1, 1), "groups": 1}
    ref = conv2d_sums(x, w, a)
    got = conv2d(x, w, None, a, m, points=points)
    scale = 2.0 ** -24 * conv2d_sums(np.abs(x), np.abs(w), a).max()
    return float(np.abs(got - ref).max() / scale)
