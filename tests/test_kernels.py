"""Generated kernels on every target vs numpy / python_ref.

Each platform builds one driver (kernels_wasm/gen/testdriver/driver.c): x86-64 (scalar, AVX2, AVX-512 tables in one
.so, each path forced in turn), wasm (scalar, SIMD128, relaxed SIMD; run by wasmtime), aarch64 NEON (static binary
under qemu, small shapes). A test builds one batch of calls, runs it once, and compares. Every output buffer has
canaries around it: a write outside the stated range fails the test.

Tolerances (max |y - ref| with ref in float64, as in python_ref):
- GEMM / igemm / depthwise: 1e-6 * sqrt(K) * mag + 1e-30, mag = the same product on |inputs| (float32 rounding
  walks like sqrt(K) ulps; FMA and non-FMA orders both fit).
- element-wise add/sub/mul/div/min/max, relu, clip, abs, neg, sqrt, max pool: exact; leaky relu 1.2e-7 |y|
  (alpha is passed as float32).
- average pool: 1.2e-7 * (ks + 2) * mean|x| (float32 sum of ks taps, times a rounded 1/count); compensated sums
  keep a 64x64 global pool of near-constant data within 4 ulp of the mean.
- hard-swish: 4e-7 |y| + 1.2e-7 |x| (x+3 rounds in float32); hard-sigmoid: 1.2e-7 absolute.
- sigmoid, tanh, exp: kernels_wasm/gen/accuracy.py BOUNDS (relative), special values exact.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from kernels_wasm.gen import accuracy, harness
from kernels_wasm.gen.__main__ import GENERATED, check
from kernels_wasm.gen.emit import half_mr, half_nr
from kernels_wasm.gen.harness import Batch, Runner
from kernels_wasm.gen.isa import TARGETS
from kernels_wasm.gen.kernels import sparse as sparse_kernels
from kernels_wasm.gen.kernels.eltwise import BINARY, UNARY
from kernels_wasm.gen.kernels.gemm import MANY_ROWS
from kernels_wasm.gen.kernels.interleave import INTERLEAVE3
from python_ref import dispatch, opdefs

CASES = [("x86", "scalar"), ("x86", "avx2"), ("x86", "avx512"), ("wasm_scalar", "scalar"),
         ("wasm_simd128", "wasm_simd128"), ("wasm_relaxed", "wasm_relaxed"), ("neon", "neon")]
INF = math.inf
_runners: dict[str, Runner] = {}


class Case:
    def __init__(self, r: Runner, target: str) -> None:
        self.r, self.name = r, target
        self.t = r.plat.targets.index(target)
        self.isa = TARGETS[target]
        self.small = r.plat.kind == "qemu"  # emulation is ~300x slower: fewer, smaller cases


@pytest.fixture(params=CASES, ids=[f"{p}-{t}" for p, t in CASES])
def case(request: pytest.FixtureRequest) -> Case:
    plat_name, target = request.param
    plat = harness.PLATFORMS[plat_name]
    why = harness.missing_tools(plat) or (harness.target_unsupported(target) if plat.kind == "native" else None)
    if why:
        pytest.skip(f"{plat_name}/{target}: {why}")
    if plat_name not in _runners:
        _runners[plat_name] = harness.runner(plat_name)
    return Case(_runners[plat_name], target)


def test_generated_files_are_up_to_date() -> None:
    assert check(GENERATED) == [], "run: python -m kernels_wasm.gen (generated files must never be edited by hand)"


def test_table_matches_generator(case: Case) -> None:
    b = Batch()
    o = b.out(44, 0.0)  # 22 int64
    b.cmd("info", case.t, o)
    info = case.r.run(b).i64(o, 22)
    assert tuple(info[:2]) == case.isa.gemm_tile
    assert [tuple(info[2 + 3 * i: 5 + 3 * i]) for i in range(4)] == [
        (9, case.isa.dw_ct, 1), (25, case.isa.dw_ct, 1), (0, case.isa.dw_ct, 1), (0, 0, 0)]
    assert info[14] == (1 << (4 + len(BINARY) + len(UNARY))) - 1, "a kernel pointer is NULL"
    assert info[15] == half_nr(case.isa)
    tile = sparse_kernels.TILES[case.isa.name]
    assert (info[16], info[17]) == (tile.mr, sparse_kernels.groups(case.isa))
    assert info[18] == (0b11111 if info[17] > 1 else 0b11011), \
        "sparse kernels: spmm, spmv, sppack where G > 1, spmmu and its pack"
    assert info[19] == tile.umr
    assert info[20] == (half_mr(case.isa) if half_nr(case.isa) else 0)
    assert info[21] == (case.isa.name in INTERLEAVE3)


# -- GEMM --------------------------------------------------------------------------------------------------------------
def pack_panel(w: np.ndarray, b: np.ndarray, nr: int) -> np.ndarray:
    """One panel per the ABI: nr biases, then w[k][0..nr) per k (w: [taps*K, nc]), zero padded to nr columns."""
    k, nc = w.shape
    p = np.zeros((k + 1, nr), np.float32)
    p[0, :nc] = b
    p[1:, :nc] = w
    return p.ravel()


def check_close(y: np.ndarray, ref: np.ndarray, tol: np.ndarray | float, what: str) -> None:
    err = np.abs(y.astype(np.float64) - ref)
    bad = ~(err <= tol)
    assert not bad.any(), f"{what}: {bad.sum()} of {y.size} off, worst {err.max():.3g} (tol {np.max(tol):.3g}) " \
                          f"at {np.unravel_index(np.argmax(err), y.shape)}"


def test_gemm(case: Case) -> None:
    rng = np.random.default_rng(1)
    mr_max, nr_full = case.isa.gemm_tile
    kcs = (1, 3, 16) if case.small else (1, 2, 5, 16, 67)
    b = Batch()
    jobs = []
    rows = sorted({1, 2, mr_max - 1, mr_max} - {0})
    multi = {mr_max + 1, 2 * mr_max, 2 * mr_max + 1, 3 * mr_max - 1} if case.isa.name in MANY_ROWS else set()
    tiles = [(0, nr_full, sorted({*rows, *multi}))]  # several whole tiles per call, then the last one
    if half_nr(case.isa):  # the narrow last-panel tile; where it is taller, also past its short path of mr_max rows
        tall = half_mr(case.isa)
        tiles.append((1, half_nr(case.isa), sorted({*rows, *({mr_max + 1, tall - 1, tall} if tall > mr_max else ())})))
    for half, nr, mr in ((h, n, m) for h, n, mrs in tiles for m in mrs):
        for nc in sorted({1, nr // 2 + 1, nr - 1, nr} - {0}):
            for kc in kcs:
                pad_a, pad_c = int(rng.integers(0, 3)), int(rng.integers(0, 3))
                a = rng.standard_normal((mr, kc + pad_a)).astype(np.float32)
                w = rng.standard_normal((kc, nc)).astype(np.float32)
                bias = rng.standard_normal(nc).astype(np.float32)
                clamp = (-INF, INF) if (mr + nc + kc) % 3 else (-0.5, 0.75)
                ao, wo = b.put(a), b.put(pack_panel(w, bias, nr))
                co = b.out(mr * (nc + pad_c))
                b.cmd("gemm", case.t, mr, nc, kc, ao, 4 * (kc + pad_a), wo, co, 4 * (nc + pad_c), half, clamp=clamp)
                jobs.append((a[:, :kc], w, bias, clamp, co, mr, nc, pad_c))
    res = case.r.run(b)
    for a, w, bias, clamp, co, mr, nc, pad_c in jobs:
        y = res.f32(co, mr * (nc + pad_c)).reshape(mr, nc + pad_c)
        assert np.isnan(y[:, nc:]).all(), "GEMM wrote columns past nc"
        a64, w64 = a.astype(np.float64), w.astype(np.float64)
        ref = np.clip((a64 @ w64 + bias).astype(np.float32), *clamp).astype(np.float64)
        mag = np.abs(a64) @ np.abs(w64) + np.abs(bias)
        check_close(y[:, :nc], ref, 1e-6 * math.sqrt(a.shape[1]) * mag + 1e-30, f"gemm mr={mr} nc={nc} kc={a.shape[1]}")


def test_interleave3(case: Case) -> None:
    """Three planes to pixels, exactly: whole vector steps, their tail, and unaligned planes."""
    if case.isa.name not in INTERLEAVE3:
        pytest.skip(f"{case.isa.name}: no RGB interleave kernel (the engine's portable loop)")
    rng = np.random.default_rng(3)
    b = Batch()
    jobs = []
    for n in (1, 3, 4, 7, 8, 9, 17, 100, 1001):
        planes = rng.standard_normal((3, n + 1)).astype(np.float32)
        offs = [b.put(p) + 4 * (n % 2) for p in planes]  # odd n: each plane one float past an aligned start
        yo = b.out(3 * n + 2)
        b.cmd("interleave3", case.t, n, *offs, yo)
        jobs.append((planes[:, n % 2:][:, :n], yo, n))
    res = case.r.run(b)
    for planes, yo, n in jobs:
        y = res.f32(yo, 3 * n + 2)
        np.testing.assert_array_equal(y[:3 * n], planes.T.ravel(), err_msg=f"interleave3 n={n}")
        assert np.isnan(y[3 * n:]).all(), f"interleave3 n={n} wrote past 3n floats"


# -- convolution through igemm, as the engine drives it ----------------------------------------------------------------
CONV = [  # H, W, Cin, Cout, KH, KW, stride, dilation, pads (t, l, b, r), groups
    (5, 5, 3, 8, 3, 3, 1, 1, (1, 1, 1, 1), 1),
    (7, 6, 5, 19, 3, 3, 2, 1, (0, 1, 1, 0), 1),      # odd sizes, stride 2, asymmetric pads
    (1, 1, 16, 33, 1, 1, 1, 1, (0, 0, 0, 0), 1),     # 1x1 spatial
    (9, 8, 4, 6, 5, 5, 2, 1, (2, 2, 2, 2), 1),
    (6, 5, 8, 12, 3, 3, 1, 1, (1, 0, 2, 1), 2),      # grouped
    (6, 7, 7, 3, 2, 2, 1, 2, (1, 1, 0, 1), 1),       # dilation
    (3, 3, 2, 37, 3, 3, 1, 1, (1, 1, 1, 1), 1),      # Cout past several panels
    (4, 4, 3, 42, 3, 3, 1, 1, (1, 1, 1, 1), 1),      # a last panel of 10 or 2 columns (narrow on some targets)
    (9, 9, 3, 32, 3, 3, 2, 1, (1, 1, 1, 1), 1),      # an RGB image's first layer (3 channels unrolled natively)
]


def conv_geometry(h: int, w: int, kh: int, kw: int, s: int, d: int, pads: tuple[int, ...]) -> tuple[int, int]:
    return (h + pads[0] + pads[2] - d * (kh - 1) - 1) // s + 1, (w + pads[1] + pads[3] - d * (kw - 1) - 1) // s + 1


def tap_offsets(x_off: int, h: int, w: int, c: int, kh: int, kw: int, s: int, d: int, pads: tuple[int, ...],
                zero: int, ch0: int = 0) -> np.ndarray:
    """[OH*OW, KH*KW] arena offsets of each output pixel's taps (channel ch0), padding taps -> zero."""
    oh, ow = conv_geometry(h, w, kh, kw, s, d, pads)
    out = np.empty((oh * ow, kh * kw), np.int64)
    for p in range(oh * ow):
        y0, x0 = (p // ow) * s - pads[0], (p % ow) * s - pads[1]
        for i in range(kh):
            for j in range(kw):
                iy, ix = y0 + i * d, x0 + j * d
                inside = 0 <= iy < h and 0 <= ix < w
                out[p, i * kw + j] = x_off + 4 * ((iy * w + ix) * c + ch0) if inside else zero
    return out


def conv_ref(x: np.ndarray, wt: np.ndarray, bias: np.ndarray, s: int, d: int, pads: tuple[int, ...], g: int,
             clamp: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    """python_ref output and the magnitude (same conv on absolute values) for the tolerance."""
    attrs = {"strides": (s, s), "dilations": (d, d), "pads": pads, "groups": g}
    y = dispatch.run("CONV_2D", [x, wt, bias], {**attrs, "act_min": clamp[0], "act_max": clamp[1]})[0]
    mag = dispatch.run("CONV_2D", [np.abs(x).astype(np.float64), np.abs(wt).astype(np.float64),
                              np.abs(bias).astype(np.float64)], attrs)[0]
    return y.astype(np.float64), mag


def test_conv_igemm(case: Case) -> None:
    rng = np.random.default_rng(2)
    mr, nr = case.isa.gemm_tile
    b = Batch()
    jobs = []
    for n, (h, w, cin, cout, kh, kw, s, d, pads, g) in enumerate(CONV):
        x = rng.standard_normal((1, h, w, cin)).astype(np.float32)
        wt = rng.standard_normal((cout, kh, kw, cin // g)).astype(np.float32)
        bias = rng.standard_normal(cout).astype(np.float32)
        clamp = (-1.0, 2.0) if n % 2 else (-INF, INF)
        oh, ow = conv_geometry(h, w, kh, kw, s, d, pads)
        cg, og, ks = cin // g, cout // g, kh * kw
        xo, zero = b.put(x), b.put(np.zeros(cg, np.float32))
        yo = b.out(oh * ow * cout)
        for gi in range(g):
            taps = tap_offsets(xo, h, w, cin, kh, kw, s, d, pads, zero, gi * cg)
            for j in range(0, og, nr):
                nc = min(nr, og - j)
                half = int(0 < nc <= half_nr(case.isa))  # a narrow last panel, as the engine packs it
                wg = wt[gi * og + j: gi * og + j + nc].reshape(nc, ks * cg).T  # [taps*Cg, nc], tap-major
                wo = b.put(pack_panel(wg, bias[gi * og + j: gi * og + j + nc], half_nr(case.isa) if half else nr))
                for p0 in range(0, oh * ow, mr):
                    m = min(mr, oh * ow - p0)
                    ind = b.ptrs(taps[p0:p0 + m].T.ravel())  # tap-major: ind[t*mr + i]
                    b.cmd("igemm", case.t, m, nc, cg, ks, ind, wo, yo + 4 * (p0 * cout + gi * og + j), 4 * cout,
                          half, clamp=clamp)
        jobs.append((x, wt, bias, s, d, pads, g, clamp, yo, (1, oh, ow, cout)))
    res = case.r.run(b)
    for x, wt, bias, s, d, pads, g, clamp, yo, shape in jobs:
        ref, mag = conv_ref(x, wt, bias, s, d, pads, g, clamp)
        y = res.f32(yo, ref.size).reshape(shape)
        k = wt.shape[1] * wt.shape[2] * wt.shape[3]
        check_close(y, ref, 1e-6 * math.sqrt(k) * mag + 1e-30, f"conv x{x.shape} w{wt.shape} s{s} d{d} p{pads} g{g}")


# -- depthwise ---------------------------------------------------------------------------------------------------------
DW = [  # H, W, C, K, stride, dilation, pads
    (6, 6, 5, 3, 1, 1, (1, 1, 1, 1)),
    (7, 9, 37, 3, 2, 1, (0, 1, 1, 0)),       # odd, stride 2, asymmetric, channels past tiles
    (1, 1, 16, 3, 1, 1, (1, 1, 1, 1)),        # 1x1 spatial: mostly zero taps
    (8, 7, 33, 5, 1, 1, (2, 2, 2, 2)),
    (9, 9, 17, 5, 2, 1, (1, 2, 2, 1)),
    (5, 6, 1, 3, 1, 2, (2, 2, 2, 2)),         # one channel, dilation 2
    (6, 5, 24, 2, 1, 1, (0, 0, 1, 1)),        # ks = 4: generic entry only
    (7, 7, 7, 7, 1, 1, (3, 3, 3, 3)),         # ks = 49
]


def pack_dw(wt: np.ndarray, bias: np.ndarray, ct: int) -> np.ndarray:
    """Per tile of ct channels: ct biases, then ks groups of ct weights (wt: [C, ks]), zero padded."""
    c, ks = wt.shape
    tiles = -(-c // ct)
    p = np.zeros((tiles, ks + 1, ct), np.float32)
    for i in range(tiles):
        n = min(ct, c - i * ct)
        p[i, 0, :n] = bias[i * ct: i * ct + n]
        p[i, 1:, :n] = wt[i * ct: i * ct + n].T
    return p.ravel()


def test_dwconv(case: Case) -> None:
    rng = np.random.default_rng(3)
    ct = case.isa.dw_ct
    b = Batch()
    jobs = []
    for n, (h, w, c, k, s, d, pads) in enumerate(DW):
        ks = k * k
        slots = [i for i, sk in enumerate((9, 25, 0)) if sk in (ks, 0)]  # the specialized entry and the generic one
        x = rng.standard_normal((1, h, w, c)).astype(np.float32)
        wt = rng.standard_normal((c, k, k, 1)).astype(np.float32)
        bias = rng.standard_normal(c).astype(np.float32)
        clamp = (-0.25, 1.5) if n % 2 else (-INF, INF)
        oh, ow = conv_geometry(h, w, k, k, s, d, pads)
        xo, zero, wo = b.put(x), b.put(np.zeros(c, np.float32)), b.put(pack_dw(wt.reshape(c, ks), bias, ct))
        taps = tap_offsets(xo, h, w, c, k, k, s, d, pads, zero).reshape(oh, ow * ks)  # pixel-major per row
        for slot in slots:
            yo = b.out(oh * ow * c)
            for row in range(oh):
                b.cmd("dwconv", case.t, slot, c, ow, ks, b.ptrs(taps[row]), wo, yo + 4 * row * ow * c, 4 * c,
                      clamp=clamp)
            jobs.append((x, wt, bias, s, d, pads, clamp, yo, slot, (1, oh, ow, c)))
    res = case.r.run(b)
    for x, wt, bias, s, d, pads, clamp, yo, slot, shape in jobs:
        ref, mag = conv_ref(x, wt, bias, s, d, pads, x.shape[3], clamp)
        y = res.f32(yo, ref.size).reshape(shape)
        check_close(y, ref, 1e-6 * math.sqrt(wt[0].size) * mag + 1e-30,
                    f"dwconv slot {slot} x{x.shape} k{wt.shape[1]} s{s} d{d} p{pads}")


# -- pooling -----------------------------------------------------------------------------------------------------------
POOL = [  # H, W, C, K, stride, pads
    (6, 6, 5, 3, 2, (1, 1, 1, 1)),
    (7, 5, 37, 3, 1, (0, 1, 2, 1)),
    (4, 4, 16, 2, 2, (0, 0, 0, 0)),
    (5, 5, 3, 5, 1, (2, 2, 2, 2)),
    (1, 1, 33, 1, 1, (0, 0, 0, 0)),
]


def test_pool(case: Case) -> None:
    rng = np.random.default_rng(4)
    b = Batch()
    jobs = []
    for n, (h, w, c, k, s, pads) in enumerate(POOL):
        x = rng.standard_normal((1, h, w, c)).astype(np.float32)
        clamp = (-0.5, 0.8) if n % 2 else (-INF, INF)
        oh, ow = conv_geometry(h, w, k, k, s, 1, pads)
        xo = b.put(x)
        for avg in (0, 1):
            pad = b.put(np.full(c, 0.0 if avg else -np.inf, np.float32))
            taps = tap_offsets(xo, h, w, c, k, k, s, 1, pads, pad)
            yo = b.out(oh * ow * c)
            for p in range(oh * ow):
                scale = 1.0 / max(1, int((taps[p] != pad).sum()))
                b.cmd("pool", case.t, avg, c, k * k, b.ptrs(taps[p]), yo + 4 * p * c, harness.f32_bits(scale),
                      clamp=clamp)
            jobs.append((x, k, s, pads, avg, clamp, yo, (1, oh, ow, c)))
    res = case.r.run(b)
    for x, k, s, pads, avg, clamp, yo, shape in jobs:
        attrs = {"kernel": (k, k), "strides": (s, s), "pads": pads, "act_min": clamp[0], "act_max": clamp[1]}
        ref = dispatch.run("AVERAGE_POOL_2D" if avg else "MAX_POOL_2D", [x], attrs)[0].astype(np.float64)
        y = res.f32(yo, ref.size).reshape(shape)
        tol = 0.0
        if avg:  # float32 sum of k*k taps, then a rounded 1/count: bounded by the mean of |x|
            mag = dispatch.run("AVERAGE_POOL_2D", [np.abs(x)], {**attrs, "act_min": -INF, "act_max": INF})[0]
            tol = 1.2e-7 * (k * k + 2) * mag.astype(np.float64) + 1e-30
        check_close(y, ref, tol, f"{'avg' if avg else 'max'}pool x{x.shape} k{k} s{s} p{pads}")


def test_avgpool_long_window_near_constant(case: Case) -> None:
    """A 64x64 global pool of a flat frame: a plain float32 running sum drifts by ~1e-5 of the mean here."""
    rng = np.random.default_rng(5)
    hw, c = (16, 5) if case.small else (64, 19)
    x = (0.6 + 1e-3 * rng.standard_normal((1, hw, hw, c))).astype(np.float32)
    b = Batch()
    xo = b.put(x)
    pad = b.put(np.zeros(c, np.float32))
    taps = tap_offsets(xo, hw, hw, c, hw, hw, 1, 1, (0, 0, 0, 0), pad)
    yo = b.out(c)
    b.cmd("pool", case.t, 1, c, hw * hw, b.ptrs(taps[0]), yo, harness.f32_bits(1.0 / (hw * hw)), clamp=(-INF, INF))
    y = case.r.run(b).f32(yo, c)
    ref = x.astype(np.float64).mean(axis=(0, 1, 2))
    check_close(y, ref, 4 * 1.2e-7 * np.abs(ref), f"global avgpool {hw}x{hw}x{c}")


# -- element-wise ------------------------------------------------------------------------------------------------------
def sizes(case: Case) -> list[int]:
    vl = case.isa.vl
    base = {1, 2, 3, vl - 1, vl, vl + 1, 2 * vl - 1, 2 * vl, 2 * vl + 3, 4 * vl + 1, 37}
    return sorted(n for n in base if n >= 1) + ([] if case.small else [1000])


def test_vbinary(case: Case) -> None:
    rng = np.random.default_rng(5)
    fns = {"add": np.add, "sub": np.subtract, "rsub": lambda a, b: b - a, "mul": np.multiply, "div": np.divide,
           "rdiv": lambda a, b: b / a, "max": np.maximum, "min": np.minimum,
           "prelu": lambda a, b: np.where(a >= 0, a, a * b)}
    b = Batch()
    jobs = []
    for op_i, op in enumerate(BINARY):
        for scalar_b in (0, 1):
            for n in sizes(case):
                x = (rng.uniform(0.5, 2.0, n) * rng.choice([-1, 1], n)).astype(np.float32)
                y = (rng.uniform(0.5, 2.0, n if not scalar_b else 1) * rng.choice([-1, 1])).astype(np.float32)
                clamp = (-1.0, 1.5) if n % 3 == 0 else (-INF, INF)
                xo, yo = b.put(x), b.put(y)
                alias = n % 4 == 1  # y aliases a (in place)
                oo = b.out(n) if not alias else xo
                b.cmd("vbinary", case.t, op_i, scalar_b, n, xo, yo, oo, clamp=clamp)
                jobs.append((op, x, y, clamp, oo))
    res = case.r.run(b)
    for op, x, y, clamp, oo in jobs:
        with np.errstate(all="ignore"):
            ref = np.clip(fns[op](x, y).astype(np.float32), *clamp)
        got = res.f32(oo, x.size)
        np.testing.assert_array_equal(got, ref, err_msg=f"{op} n={x.size} scalar_b={y.size == 1 and x.size > 1}")


UNARY_REF = {  # op -> (python_ref op, attrs, params passed to the kernel)
    "relu": ("RELU", {}, []),
    "clip": ("CLIP", {"min": -0.5, "max": 2.0}, [-0.5, 2.0]),
    "leaky_relu": ("LEAKY_RELU", {"alpha": 0.1}, [0.1]),
    "hard_swish": ("HARD_SWISH", {}, []),
    "hard_sigmoid": ("HARD_SIGMOID", {"alpha": 0.2, "beta": 0.5}, [0.2, 0.5]),
    "sigmoid": ("SIGMOID", {}, []),
    "tanh": ("TANH", {}, []),
    "exp": ("EXP", {}, []),
    "sqrt": ("SQRT", {}, []),
    "abs": ("ABS", {}, []),
    "neg": ("NEG", {}, []),
}


def unary_ref(op: str) -> tuple[str, dict, list[float]]:
    """UNARY_REF's entry; a kernel not listed there: the op of its name with its default attributes (the float
    attributes are the kernel's params, tools/gen_c_tables.py unary_params)."""
    d = opdefs.OPS[op.upper()]
    return UNARY_REF.get(op, (d.name, {}, [float(a.default) for a in d.attrs if a.kind == "float"]))


def unary_tol(op: str, x: np.ndarray, ref: np.ndarray) -> np.ndarray | float:
    if op in accuracy.BOUNDS:
        return accuracy.BOUNDS[op] * np.abs(ref)
    if op == "hard_swish":
        return 4e-7 * np.abs(ref) + 1.2e-7 * np.abs(x.astype(np.float64))
    if op == "leaky_relu":  # the kernel multiplies by alpha rounded to float32, python_ref by the double
        return 1.2e-7 * np.abs(ref)
    return 1.2e-7 if op == "hard_sigmoid" else 0.0


def test_vunary(case: Case) -> None:
    rng = np.random.default_rng(6)
    b = Batch()
    jobs = []
    for op_i, op in enumerate(UNARY):
        for n in sizes(case):
            x = (rng.standard_normal(n) * 4).astype(np.float32)
            if op == "sqrt":
                x = np.abs(x)
            xo = b.put(x)
            po = b.put(np.asarray(unary_ref(op)[2] or [0.0], np.float32))
            oo = b.out(n) if n % 4 != 1 else xo  # odd sizes run in place
            b.cmd("vunary", case.t, op_i, n, xo, oo, po)
            jobs.append((op, x, oo))
    res = case.r.run(b)
    for op, x, oo in jobs:
        name, attrs, _ = unary_ref(op)
        ref = dispatch.run(name, [x], attrs)[0].astype(np.float64)
        check_close(res.f32(oo, x.size), ref, unary_tol(op, x, ref), f"{op} n={x.size}")


def test_activation_accuracy(case: Case) -> None:
    """Dense sweep: relative error of sigmoid/tanh/exp within the stated bounds."""
    got = accuracy.measure(case.r, case.t, 20_000 if case.small else 200_000)
    for op, (rel, at) in got.items():
        assert rel <= accuracy.BOUNDS[op], f"{op}: rel. error {rel:.3g} at x={at!r} > {accuracy.BOUNDS[op]}"


def test_activation_special_values(case: Case) -> None:
    x = np.array([0.0, -0.0, INF, -INF, np.nan, 100.0, -100.0, 88.7, -87.3, 89.0, -88.0, 1e-30, -1e-30, 20.0],
                 np.float32)
    b = Batch()
    outs = {}
    for op in ("sigmoid", "tanh", "exp"):
        xo, oo = b.put(x), b.out(x.size)
        b.cmd("vunary", case.t, list(UNARY).index(op), x.size, xo, oo, xo)
        outs[op] = oo
    res = case.r.run(b)
    with np.errstate(all="ignore"):
        for op, oo in outs.items():
            y = res.f32(oo, x.size).astype(np.float64)
            ref = accuracy.exact(op, x).astype(np.float32).astype(np.float64)
            # exp and sigmoid flush results below 2^-126 (x < -87.33655) to 0: absolute error < 1.2e-38
            tol = accuracy.BOUNDS[op] * np.abs(ref) + 1.2e-38
            same = (y == ref) | (np.isnan(y) & np.isnan(ref)) | (np.abs(y - ref) <= tol)
            assert same.all(), f"{op}: x={x[~same]} got {y[~same]} want {ref[~same]}"
