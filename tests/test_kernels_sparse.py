"""Block-sparse kernels (kernels_wasm/gen/kernels/sparse.py) on every target vs numpy, through the kernel test driver
(see test_kernels.py): spmm over tiles of 1..MR pixels (read in place where G = 1, packed by the target's sppack
where G > 1), spmv for one pixel, sppack itself; the unstructured spmmu over tiles of 1..UMR pixels packed by
sppacku, with weights 70% zero element by element (channels with no non-zero at all included; tiles of at most VL
pixels take the narrow path, whose channels of 0 to about 30 non-zeros leave every remainder of its 4 partial sums).
Block-sparse weights are random 1x4-block-sparse matrices, including empty block rows, a last block row with fewer
than 4 channels and outputs with a row stride wider than n (columns past n must stay untouched). Tolerance as for
GEMM: 1e-6 * sqrt(K) * (the same product on |inputs|)."""

from __future__ import annotations

import math

import numpy as np
from test_kernels import INF, Case, case, check_close  # noqa: F401  (case: the per-target fixture)

from kernels_wasm.gen.harness import Batch
from kernels_wasm.gen.kernels.sparse import TILES
from python_ref import sparse


def sparse_matrix(rng: np.random.Generator, n: int, k: int, density: float) -> np.ndarray:
    """[n, k] with whole 1x4 blocks zero at random (about 1 - density of them), one block row empty."""
    br = -(-n // 4)
    keep = rng.random((br, k)) < density
    if br > 1:
        keep[br // 2] = False
    w = rng.standard_normal((br * 4, k)).astype(np.float32) * np.repeat(keep, 4, axis=0)
    return np.ascontiguousarray(w[:n])


def pack_weights(w: np.ndarray, bias: np.ndarray, col_bytes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(nnz per block row, byte offset per block, weights: per block row 4 biases then 4 per block) as the ABI says."""
    enc = sparse.encode(w)
    n = w.shape[0]
    b4 = np.zeros(len(enc.row_starts) * 4, np.float32)
    b4[:n] = bias
    parts = []
    for r in range(len(enc.row_starts) - 1):
        parts += [b4[4 * r: 4 * r + 4], enc.values[enc.row_starts[r]: enc.row_starts[r + 1]].reshape(-1)]
    packed = np.concatenate(parts).astype(np.float32) if parts else np.zeros(0, np.float32)
    return (np.diff(enc.row_starts).astype(np.int32), (enc.columns * col_bytes).astype(np.int32),
            np.concatenate([packed, np.zeros(4, np.float32)]))


def _ref(a: np.ndarray, w: np.ndarray, bias: np.ndarray, clamp: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    a64, w64 = a.astype(np.float64), w.astype(np.float64)
    ref = np.clip((a64 @ w64.T + bias).astype(np.float32), *clamp).astype(np.float64)
    return ref, np.abs(a64) @ np.abs(w64).T + np.abs(bias)


def pack_tile(a: np.ndarray, mr_max: int) -> np.ndarray:
    """[K][MR]: pixel i of column k at k*MR + i; pixels past mr repeat the last (as sppack)."""
    m, k = a.shape
    out = np.empty((k, mr_max), np.float32)
    out[:, :m] = a.T
    out[:, m:] = a[-1][:, None]
    return out


def test_spmm(case: Case) -> None:  # noqa: F811
    t = TILES[case.name]
    g = max(1, t.lanes // 4)
    rng = np.random.default_rng(11)
    b = Batch()
    jobs = []
    mrs = sorted({1, 2, t.mr - 1, t.mr} - {0})
    shapes = [(1, 1), (3, 5), (13, 37)] if case.small else [(1, 1), (3, 5), (4, 16), (13, 37), (64, 100)]
    for mr in mrs:
        for n, k in shapes:
            w = sparse_matrix(rng, n, k, 0.4)
            bias = rng.standard_normal(n).astype(np.float32)
            a = rng.standard_normal((mr, k)).astype(np.float32)
            clamp = (-INF, INF) if (mr + n) % 3 else (-0.5, 0.75)
            if g == 1:
                pad = int(rng.integers(0, 3))
                rows = np.zeros((mr, k + pad), np.float32)
                rows[:, :k] = a
                xo, x_stride, col_bytes = b.put(rows), 4 * (k + pad), 4
            else:
                xo, x_stride, col_bytes = b.put(pack_tile(a, t.mr)), 4 * g, 4 * t.mr
            nnz, offs, wp = pack_weights(w, bias, col_bytes)
            pad_y = int(rng.integers(0, 3))
            yo = b.out(mr * (n + pad_y))
            b.cmd("spmm", case.t, mr, n, xo, x_stride, b.put(nnz), b.put(offs), b.put(wp), yo, 4 * (n + pad_y),
                  clamp=clamp)
            jobs.append((a, w, bias, clamp, yo, mr, n, pad_y))
    res = case.r.run(b)
    for a, w, bias, clamp, yo, mr, n, pad_y in jobs:
        y = res.f32(yo, mr * (n + pad_y)).reshape(mr, n + pad_y)
        assert np.isnan(y[:, n:]).all(), "spmm wrote columns past n"
        ref, mag = _ref(a, w, bias, clamp)
        check_close(y[:, :n], ref, 1e-6 * math.sqrt(a.shape[1]) * mag + 1e-30, f"spmm mr={mr} n={n} k={a.shape[1]}")


def test_spmv(case: Case) -> None:  # noqa: F811
    rng = np.random.default_rng(12)
    b = Batch()
    jobs = []
    for n, k, density in ((1, 1, 1.0), (5, 9, 0.5), (16, 33, 0.2), (30, 200, 0.1), (7, 3, 0.0)):
        w = sparse_matrix(rng, n, k, density)
        bias = rng.standard_normal(n).astype(np.float32)
        x = rng.standard_normal(k).astype(np.float32)
        clamp = (-INF, INF) if n % 2 else (-0.25, 1.0)
        nnz, offs, wp = pack_weights(w, bias, 4)
        yo = b.out(n + 3)
        b.cmd("spmv", case.t, n, b.put(x), b.put(nnz), b.put(offs), b.put(wp), yo, clamp=clamp)
        jobs.append((x, w, bias, clamp, yo, n))
    res = case.r.run(b)
    for x, w, bias, clamp, yo, n in jobs:
        y = res.f32(yo, n + 3)
        assert np.isnan(y[n:]).all(), "spmv wrote past n"
        ref, mag = _ref(x[None], w, bias, clamp)
        check_close(y[:n], ref[0], 1e-6 * math.sqrt(len(x)) * mag[0] + 1e-30, f"spmv n={n} k={len(x)}")


def test_sppack(case: Case) -> None:  # noqa: F811
    t = TILES[case.name]
    if t.lanes == 4 or case.isa.vl == 1:
        return  # G = 1: the input is read in place, there is no pack kernel
    rng = np.random.default_rng(13)
    b = Batch()
    jobs = []
    for mr, kc, ks in ((t.mr, 8, 1), (t.mr - 3, 7, 3), (1, 5, 2), (5, 1, 9)):
        src = rng.standard_normal((ks, mr, kc + 2)).astype(np.float32)
        offs = [b.put(src[tt, i]) for tt in range(ks) for i in range(mr)]  # tap-major: ind[t*mr + i]
        oo = b.out(ks * kc * t.mr)
        b.cmd("sppack", case.t, mr, kc, ks, b.ptrs(offs), oo)
        jobs.append((src, mr, kc, ks, oo))
    res = case.r.run(b)
    for src, _mr, kc, ks, oo in jobs:
        got = res.f32(oo, ks * kc * t.mr).reshape(ks, kc, t.mr)
        for tt in range(ks):
            np.testing.assert_array_equal(got[tt], pack_tile(src[tt, :, :kc], t.mr), err_msg=f"sppack tap {tt}")


def pack_channels(w: np.ndarray, bias: np.ndarray, col_bytes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(non-zeros per channel, byte offset of each one's column, weights: per channel its bias then its non-zeros)."""
    lists = sparse.channel_lists(w)
    parts = [np.concatenate([[bias[r]], vals]) for r, (_, vals) in enumerate(lists)]
    offs = np.concatenate([cols for cols, _ in lists] + [np.zeros(0, np.int64)]) * col_bytes
    return (np.array([len(c) for c, _ in lists], np.int32), np.concatenate([offs, [0]]).astype(np.int32),
            np.concatenate([*parts, np.zeros(4, np.float32)]).astype(np.float32))


def test_spmmu(case: Case) -> None:  # noqa: F811
    umr, vl = TILES[case.name].umr, TILES[case.name].lanes
    rng = np.random.default_rng(14)
    b = Batch()
    jobs = []
    shapes = [(1, 1), (3, 5), (13, 37)] if case.small else [(1, 1), (3, 5), (4, 16), (13, 37), (64, 100)]
    # up to VL pixels: the narrow path; up to UMR/2 (where that is 8 vectors or more): the half path
    for mr in sorted({1, 2, vl, vl + 1, umr // 2, umr // 2 + 1, umr - 1, umr} - {0}):
        for n, k in shapes:
            w = (rng.standard_normal((n, k)) * (rng.random((n, k)) < 0.3)).astype(np.float32)
            if n > 2:
                w[n // 2] = 0.0  # a channel of its bias alone
            bias = rng.standard_normal(n).astype(np.float32)
            a = rng.standard_normal((mr, k)).astype(np.float32)
            clamp = (-INF, INF) if (mr + n) % 3 else (-0.5, 0.75)
            nnz, offs, wp = pack_channels(w, bias, 4 * umr)
            pad_y = int(rng.integers(0, 3))
            yo = b.out(mr * (n + pad_y))
            b.cmd("spmmu", case.t, mr, n, b.put(pack_tile(a, umr)), b.put(nnz), b.put(offs), b.put(wp), yo,
                  4 * (n + pad_y), clamp=clamp)
            jobs.append((a, w, bias, clamp, yo, mr, n, pad_y))
    res = case.r.run(b)
    for a, w, bias, clamp, yo, mr, n, pad_y in jobs:
        y = res.f32(yo, mr * (n + pad_y)).reshape(mr, n + pad_y)
        assert np.isnan(y[:, n:]).all(), "spmmu wrote columns past n"
        ref, mag = _ref(a, w, bias, clamp)
        check_close(y[:, :n], ref, 1e-6 * math.sqrt(a.shape[1]) * mag + 1e-30, f"spmmu mr={mr} n={n} k={a.shape[1]}")


def test_sppacku(case: Case) -> None:  # noqa: F811
    umr = TILES[case.name].umr
    rng = np.random.default_rng(15)
    b = Batch()
    jobs = []
    for mr, kc, ks in ((umr, 8, 1), (umr - 3, 7, 3), (1, 5, 2), (5, 1, 9)):
        mr = max(1, min(mr, umr))
        src = rng.standard_normal((ks, mr, kc + 2)).astype(np.float32)
        offs = [b.put(src[tt, i]) for tt in range(ks) for i in range(mr)]
        oo = b.out(ks * kc * umr)
        b.cmd("sppacku", case.t, mr, kc, ks, b.ptrs(offs), oo)
        jobs.append((src, kc, ks, oo))
    res = case.r.run(b)
    for src, kc, ks, oo in jobs:
        got = res.f32(oo, ks * kc * umr).reshape(ks, kc, umr)
        for tt in range(ks):
            np.testing.assert_array_equal(got[tt], pack_tile(src[tt, :, :kc], umr), err_msg=f"sppacku tap {tt}")
