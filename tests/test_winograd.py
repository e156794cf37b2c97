"""Winograd F(2x2, 3x3) and F(4x4, 3x3): python_ref/winograd.py (the algorithm, its points and written tolerance),
the generated tile transforms on every target, and the engines' convolutions against the direct python_ref one."""

from __future__ import annotations

import ctypes
import functools
from fractions import Fraction

import numpy as np
import pytest
from test_kernels import Case, case  # noqa: F401 - the per-target kernel fixture

from kernels_wasm.gen.harness import Batch
from kernels_wasm.gen.kernels.winograd import RULES, TILES, WinoRule
from python_ref import Interpreter, winograd
from python_ref.ops import conv2d_sums
from wasmrt.compile.converter import convert
from wasmrt.compile.ir import Graph
from wasmrt.engines import load
from wasmrt.engines.native import library

ALGOS = tuple(winograd.ALGORITHMS)  # wino2, wino4


def attrs(pads: tuple[int, int, int, int]) -> dict:
    return {"strides": (1, 1), "dilations": (1, 1), "pads": pads, "groups": 1}


# -- python_ref ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("m", TILES)
def test_matrices_make_the_direct_convolution(m: int) -> None:
    """In float64 the algorithm is the direct convolution (to rounding of 1e-13), for pads that cut tiles oddly."""
    rng = np.random.default_rng(m)
    x, w, b = rng.standard_normal((2, 9, 11, 5)), rng.standard_normal((4, 3, 3, 5)), rng.standard_normal(4)
    for pads in ((1, 1, 1, 1), (0, 0, 0, 0), (2, 0, 1, 3)):
        a = attrs(pads)
        got = winograd.conv2d(x, w, b, a, m, dtype=np.float64)
        ref = (conv2d_sums(x, w, a) + b).astype(np.float32)
        assert np.abs(got - ref).max() <= 1e-6 * np.abs(ref).max()


def test_transform_coefficients_are_exact_in_float32() -> None:
    for m in TILES:
        at, _, bt = winograd.matrices(m)
        for v in (c for mat in (at, bt) for row in mat for c in row):
            assert Fraction(float(np.float32(float(v)))) == v


@pytest.mark.parametrize("m", TILES)
def test_points_error_is_within_the_written_tolerance(m: int) -> None:
    """The measured float32 error (units of 2^-24 S) stays below TOLERANCE[m], which keeps its ~2x margin."""
    worst = max(winograd.error_of_points(m, cin=c, seed=s) for s in range(2) for c in (1, 3, 16, 64))
    assert worst <= winograd.TOLERANCE[m] and worst >= winograd.TOLERANCE[m] / 4


def test_chosen_f4_points_beat_the_usual_ones() -> None:
    usual = tuple(Fraction(v) for v in (0, 1, -1, 2, -2))
    err = [max(winograd.error_of_points(4, pts, cin=c, seed=s) for s in range(2) for c in (16, 64))
           for pts in (None, usual)]
    assert err[0] * 1.5 < err[1]


def sandwich(mat: np.ndarray, d: np.ndarray) -> np.ndarray:
    """|mat| |d| |mat|^T: the transform on magnitudes, the scale of its float32 rounding"""
    a = np.abs(mat)
    return np.einsum("ij,jkc,lk->ilc", a, np.abs(d).astype(np.float64), a)


# -- kernels, every target ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("m", TILES)
def test_tile_transforms_match_python_ref(case: Case, m: int) -> None:  # noqa: F811
    kind, n = TILES.index(m), m + 2
    rng = np.random.default_rng(3)
    for c in (1, 3, case.isa.vl + 1, 2 * case.isa.vl + 3) if not case.small else (case.isa.vl + 1,):
        d = rng.standard_normal((n, n, c)).astype(np.float32)
        bt = Batch()
        zero = bt.put(np.zeros(c + 16, np.float32))
        taps = [bt.put(d[i, j]) for i in range(n) for j in range(n)]
        taps[n + 1] = zero  # a padding tap
        d[1, 1] = 0.0
        ind = bt.ptrs(taps)
        stride = (c + 5) * 4
        vout = bt.out(n * n * (c + 5))
        bt.cmd("wino_in", case.t, kind, c, ind, vout, stride)
        mm = rng.standard_normal((n, n, c)).astype(np.float32)
        mstride = (c + 3) * 4
        mbuf = np.zeros((n * n, c + 3), np.float32)
        mbuf[:, :c] = mm.reshape(n * n, c)
        min_ = bt.put(mbuf)
        bias = rng.standard_normal(c).astype(np.float32)
        boff = bt.put(bias)
        res = []
        for rows, cols in ((m, m), (1, m - 1), (m - 1, 1)):
            px = (c + 2) * 4
            rstride = px * (m + 1)
            yout = bt.out(m * (m + 1) * (c + 2))
            bt.cmd("wino_out", case.t, kind, c, min_, mstride, boff, yout, rstride, px, rows, cols, clamp=(-1.5, 2.0))
            res.append((rows, cols, yout))
        got = case.r.run(bt)
        v = got.f32(vout, n * n * (c + 5)).reshape(n * n, c + 5)[:, :c].reshape(n, n, c)
        ref = winograd.transform_input(d.astype(np.float64), m)
        mag = sandwich(winograd.float_matrices(m)[2], d) + 1e-30
        assert np.all(np.abs(v - ref) <= 4e-7 * 8 * mag)
        yref = np.clip(winograd.transform_output(mm.astype(np.float64), m) + bias, -1.5, 2.0)
        ymag = sandwich(winograd.float_matrices(m)[0], mm) + np.abs(bias)
        for rows, cols, yout in res:
            y = got.f32(yout, m * (m + 1) * (c + 2)).reshape(m, m + 1, c + 2)
            assert np.all(np.abs(y[:rows, :cols, :c] - yref[:rows, :cols]) <= 4e-7 * 8 * ymag[:rows, :cols])
            assert np.isnan(y[rows:, :, :c]).all() and np.isnan(y[:, cols:, :c]).all()  # nothing past rows, cols
            assert np.isnan(y[:, :, c:]).all()


# -- engines ----------------------------------------------------------------------------------------------------------
def conv_model(h: int, w: int, c: int, co: int, pads: tuple[int, int, int, int], seed: int = 0,
               clamp: tuple[float, float] | None = None) -> tuple[bytes, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    wt = rng.standard_normal((co, 3, 3, c)).astype(np.float32)
    b = rng.standard_normal(co).astype(np.float32)
    g = Graph()
    x = g.add_input("x", (1, h, w, c))
    a: dict = {"pads": pads}
    if clamp:
        a.update(act_min=clamp[0], act_max=clamp[1])
    (y,) = g.add_node("CONV_2D", [x, g.add_const("w", wt), g.add_const("b", b)], a, name="conv", outputs=["y"])
    g.outputs.append(y)
    return convert(g).data, wt, b, rng.standard_normal((1, h, w, c)).astype(np.float32)


ENGINES = [("native", None), ("native", "scalar"), ("wasm", "scalar"), ("wasm", "simd"), ("wasm", "relaxed")]
SHAPES = [(7, 9, 5, 6, (1, 1, 1, 1)), (12, 13, 17, 33, (0, 0, 0, 0)), (5, 6, 3, 8, (2, 0, 1, 3)),
          (10, 10, 32, 40, (1, 1, 1, 1)), (1, 1, 4, 4, (1, 1, 1, 1))]


@functools.cache
def reference(shape: tuple) -> tuple[bytes, np.ndarray, np.ndarray]:
    data, _, _, x = conv_model(*shape)
    return data, x, Interpreter(data).run({"x": x})["y"]


@pytest.mark.parametrize(("engine", "variant"), ENGINES, ids=[f"{e}-{v}" for e, v in ENGINES])
@pytest.mark.parametrize("algo", ALGOS)
def test_engine_convolution_within_tolerance(engine: str, variant: str | None, algo: str) -> None:
    m = winograd.ALGORITHMS[algo]
    for shape in SHAPES:
        data, x, ref = reference(shape)
        _, wt, b, _ = conv_model(*shape)
        model = load(data, engine, variant, conv=algo)
        got = model.run({"x": x})["y"]
        tol = winograd.tolerance(x, wt, b, attrs(shape[4]), m)
        err = float(np.abs(got - ref).max())
        assert err <= tol, f"{shape}: {err:.3g} > {tol:.3g}"
        assert err > 0 or shape[0] == 1  # a different summation order than the direct kernels: not the same bytes


def kernels_of(data: bytes, conv: str, engine: str = "native", variant: str | None = None) -> tuple[str, list[str]]:
    """(the kernel target, the kernel each op ran) of the model loaded on that engine."""
    model = load(data, engine, variant, conv=conv)
    if engine == "wasm":
        w = model.wasm
        n = w.call("wrt_num_ops", model._ptr)
        return model.variant, [w.cstr(w.call("wrt_op_kernel", model._ptr, i)) for i in range(n)]
    lib = library()
    lib.wrt_op_kernel.restype = ctypes.c_char_p
    lib.wrt_op_kernel.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.wrt_num_ops.argtypes = [ctypes.c_void_p]
    return model.variant, [lib.wrt_op_kernel(model._ptr, i).decode() for i in range(lib.wrt_num_ops(model._ptr))]


def test_choice_is_reported_and_forced() -> None:
    big = conv_model(16, 16, 32, 32, (1, 1, 1, 1))[0]
    small = conv_model(16, 16, 8, 8, (1, 1, 1, 1))[0]
    assert kernels_of(big, "auto")[1] == ["winograd F(4x4,3x3)"]
    assert kernels_of(small, "auto")[1] == ["igemm"]
    assert kernels_of(small, "wino2")[1] == ["winograd F(2x2,3x3)"]
    assert kernels_of(big, "igemm")[1] == ["igemm"]
    with pytest.raises(ValueError, match="conv must be one of"):
        load(big, "native", conv="fft")


def rule_target(variant: str) -> str:
    """The kernel table (RULES key) of an engine's reported target."""
    for key, isa in (("avx512", "avx512"), ("avx2", "avx2"), ("relaxed", "wasm_relaxed"), ("simd", "wasm_simd128"),
                     ("neon", "neon"), ("scalar", "scalar")):
        if key in variant:
            return isa
    raise AssertionError(f"no rule table for target {variant!r}")


def expected_kernel(rule: WinoRule, h: int, w: int, c: int, co: int) -> str:
    if min(c, co) < rule.min_channels or c * co < rule.min_cc or h * w < rule.min_pixels:
        return "igemm"
    tiles4 = -(-h // 4) * -(-w // 4)
    return "winograd F(2x2,3x3)" if c * co >= tiles4 * rule.f2_weights_per_tile else "winograd F(4x4,3x3)"


# around every bound of the tables: channels 16 / 8, Cin*Cout 512 / 1024, 7x7 maps, many channels on small maps
RULE_SHAPES = [(16, 16, 32, 32), (16, 16, 8, 8), (16, 16, 96, 24), (14, 14, 24, 24), (10, 10, 16, 16),
               (7, 7, 16, 16), (6, 6, 64, 64), (7, 7, 256, 256), (7, 7, 512, 512), (14, 14, 256, 256), (9, 8, 48, 12),
               (7, 7, 768, 768)]


@pytest.mark.parametrize(("engine", "variant"), ENGINES, ids=[f"{e}-{v}" for e, v in ENGINES])
def test_rules_follow_the_target_table(engine: str, variant: str | None) -> None:
    """auto picks per the measured table of the target the engine runs (kernels_wasm/gen/kernels/winograd.py)."""
    for h, w, c, co in RULE_SHAPES:
        target, kernels = kernels_of(conv_model(h, w, c, co, (1, 1, 1, 1))[0], "auto", engine, variant)
        want = expected_kernel(RULES[rule_target(target)], h, w, c, co)
        assert kernels == [want], f"{target} {h}x{w}x{c}->{co}: {kernels[0]}, the table says {want}"


def test_tables_differ_where_measured() -> None:
    """The rules are per target: PP-OCRv4 det's 96 -> 24 layers run F(4x4) on all, 24 x 24 channels only in wasm,
    7x7x512 F(2x2) only natively; 7x7x256 and 14x14x512 F(4x4) on all."""
    native, wasm = RULES["avx512"], RULES["wasm_relaxed"]
    f4, f2 = "winograd F(4x4,3x3)", "winograd F(2x2,3x3)"
    for shape in ((120, 160, 96, 24), (7, 7, 256, 256), (14, 14, 512, 512)):
        assert expected_kernel(native, *shape) == expected_kernel(wasm, *shape) == f4, shape
    assert (expected_kernel(native, 56, 56, 24, 24), expected_kernel(wasm, 56, 56, 24, 24)) == ("igemm", f4)
    assert (expected_kernel(native, 7, 7, 512, 512), expected_kernel(wasm, 7, 7, 512, 512)) == (f2, f4)


@pytest.mark.parametrize("algo", ALGOS)
def test_results_do_not_depend_on_threads(algo: str) -> None:
    data, _, _, x = conv_model(23, 29, 24, 40, (1, 1, 1, 1), clamp=(-2.0, 3.0))
    outs = [load(data, "native", conv=algo, threads=t).run({"x": x})["y"] for t in (1, 2, 3)]
    assert outs[0].tobytes() == outs[1].tobytes() == outs[2].tobytes()
