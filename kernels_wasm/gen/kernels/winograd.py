"""Winograd F(m x m, 3 x 3) tile transforms, channels in vectors (python_ref/winograd.py holds the algorithm and the
matrices; they are read from there, never written here).

- input: one tile of n x n input pixels (n = m + 2; n*n pointers, padding pointing at a zero buffer) -> B^T d B, the
  n*n transformed positions, position p at out + p * out_stride bytes.
- output: the n*n products of one tile (position p at in + p * in_stride bytes) -> A^T M A + bias, clamped, the
  rows x cols valid pixels of the m x m tile stored (pixel (r, s) at out + r * row_stride + s * px_stride bytes).
The batched GEMM between them (one per position, [tiles, Cin] x [Cin, Cout]) is the target's GEMM on weights
transformed and packed at load.

Each transform is two passes of the 1-D one (rows, then columns), fully unrolled with the coefficients as constants:
+-1 as additions and subtractions, the others as multiply-adds. Channels past the last whole vector take the same
unrolled code on scalars.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from kernels_wasm.gen.cwriter import Code, flt
from kernels_wasm.gen.isa import SCALAR, Isa
from python_ref.winograd import ALGORITHMS, R, matrices

TILES = tuple(sorted(ALGORITHMS.values()))  # output tile sizes m: 2, 4
HEADER = "wrt_winograd.h"


@dataclass(frozen=True)
class WinoRule:
    """Where the engine's rules (conv.c choose_conv) run a dense 3x3 stride-1 convolution as Winograd on a target,
    from per-layer timings (docs/dev/bench-journal.md "Winograd"): F(4x4, 3x3) when both channel counts reach
    min_channels, their product min_cc and the output map min_pixels; F(2x2, 3x3) instead where few F(4x4) tiles
    share each streamed transformed weight: Cin * Cout / (F(4x4) tiles) >= f2_weights_per_tile (small maps with many
    channels, e.g. 7x7x512, whose GEMMs of a few rows stream 36 weight panels per block); else the indirect GEMM."""

    min_channels: int
    min_cc: int
    min_pixels: int
    f2_weights_per_tile: int


# Measured one thread, best of 9-21, on the 2-core Zen 4 (AVX-512; wasm in Node 22): F(4x4) beats igemm from 16
# channels on large maps (56x56x16: wasm relaxed 0.56 vs 0.61 ms, native 0.12 vs 0.15; 120x160x96->24, PP-OCRv4
# det's: wasm relaxed 10.0 vs 17.6, SIMD128 14.7 vs 26.6, native 9.1 vs 24); natively 32x32 channels are even
# (0.70 vs 0.66 at 56x56), hence Cin*Cout >= 1024 there. F(2x2) beats F(4x4) natively on 7x7x512 (1.44 vs 1.70:
# Cin*Cout / tiles = 65536), not on 7x7x256 (0.33 vs 0.22: 16384), 14x14x512 (4.66 vs 3.81: 16384) or 14x14x256;
# in wasm on none (7x7x512: relaxed 4.25-4.82 vs 3.61-4.81, SIMD128 4.91-5.31 vs 3.98-4.85), hence a bound above
# every measured shape there.
_NATIVE = WinoRule(16, 1024, 49, 32768)
_WASM = WinoRule(16, 512, 49, 131072)
RULES: dict[str, WinoRule] = {
    "scalar": _WASM,  # not measured apart: the wasm rules (the transforms are scalar there too)
    "wasm_simd128": _WASM,
    "wasm_relaxed": _WASM,
    "avx2": _NATIVE,
    "avx512": _NATIVE,
    "neon": _WASM,  # not measured (qemu): as wasm relaxed, 128-bit vectors with FMA
}


def in_name(isa: Isa, m: int) -> str:
    return f"wrt_{isa.name}_wino{m}_in"


def out_name(isa: Isa, m: int) -> str:
    return f"wrt_{isa.name}_wino{m}_out"


def _const(v: Fraction) -> str:
    return "k" + flt(float(abs(v))).replace(".", "_").replace("-", "m").replace("+", "p")[:-1]


def _combo(isa: Isa, terms: list[tuple[Fraction, str]]) -> str:
    """sum of coef * var over the non-zero terms: +-1 as add/sub, others as (fused) multiply-adds."""
    terms = [(c, v) for c, v in terms if c != 0]
    terms.sort(key=lambda t: (t[0] < 0, abs(t[0]) != 1))  # a positive unit term first where there is one
    c0, v0 = terms[0]
    if c0 == 1:
        acc = v0
    elif c0 == -1:
        acc = isa.sub(isa.zero(), v0)
    else:
        acc = isa.mul(_const(c0) if c0 > 0 else _const(c0) + "n", v0)
    for c, v in terms[1:]:
        if c == 1:
            acc = isa.add(acc, v)
        elif c == -1:
            acc = isa.sub(acc, v)
        else:
            acc = isa.fma(_const(c) if c > 0 else _const(c) + "n", v, acc)
    return acc


def _consts(isa: Isa, mats: list[tuple[tuple[Fraction, ...], ...]]) -> list[str]:
    vals = sorted({c for mat in mats for row in mat for c in row if abs(c) != 1 and c != 0})
    return [isa.decl(_const(c) + ("n" if c < 0 else ""), isa.dup(flt(float(c)))) for c in vals]


def _sandwich(isa: Isa, c: Code, mat: tuple[tuple[Fraction, ...], ...], src: str, dst: str, k: int) -> None:
    """dst{i}_{l} = sum_{j, q} mat[i][j] src{j}_{q} mat[l][q]: rows of mat applied on both sides (k x k inputs)."""
    rows = len(mat)
    for i in range(rows):
        for q in range(k):
            c(isa.decl(f"t{i}_{q}", _combo(isa, [(mat[i][j], f"{src}{j}_{q}") for j in range(k)])))
    for i in range(rows):
        for l_ in range(rows):
            c(isa.decl(f"{dst}{i}_{l_}", _combo(isa, [(mat[l_][q], f"t{i}_{q}") for q in range(k)])))


def _loop(isa: Isa, c: Code, body: object) -> None:
    """The channel loop: whole vectors, then (on SIMD targets) the remaining channels as scalars."""
    vl = isa.vl
    c("size_t ch = 0;")
    with c.block(f"for (; ch + {vl} <= c; ch += {vl})"):
        body(isa)  # type: ignore[operator]
    if vl > 1:
        with c.block("for (; ch < c; ch++)"):
            body(SCALAR)  # type: ignore[operator]


def winograd_in(isa: Isa, m: int) -> str:
    _, _, bt = matrices(m)
    n = m + R - 1
    c = Code()
    sig = f"void {in_name(isa, m)}(size_t c, const float* const* in, float* out, size_t out_stride)"

    def body(t: Isa) -> None:
        c(*_consts(t, [bt]))
        for j in range(n):
            for q in range(n):
                c(t.decl(f"d{j}_{q}", t.load(f"in[{j * n + q}] + ch")))
        _sandwich(t, c, bt, "d", "v", n)
        for i in range(n):
            for l_ in range(n):
                c(t.store(f"(float*)((char*)out + {i * n + l_} * out_stride) + ch", f"v{i}_{l_}"))

    with c.block(isa.fn(sig)):
        _loop(isa, c, body)
    return c.text()


def winograd_out(isa: Isa, m: int) -> str:
    at, _, _ = matrices(m)
    n = m + R - 1
    c = Code()
    sig = (f"void {out_name(isa, m)}(size_t c, const float* in, size_t in_stride, const float* bias, float* out, "
           "size_t row_stride, size_t px_stride, size_t rows, size_t cols, const wrt_clamp* clamp)")

    def body(t: Isa) -> None:
        c(*_consts(t, [at]))
        c(t.decl("vmin", t.dup("clamp->min")), t.decl("vmax", t.dup("clamp->max")), t.decl("b", t.load("bias + ch")))
        for j in range(n):
            for q in range(n):
                c(t.decl(f"s{j}_{q}", t.load(f"(const float*)((const char*)in + {j * n + q} * in_stride) + ch")))
        _sandwich(t, c, at, "s", "y", n)
        for r in range(m):
            for s in range(m):
                val = t.clamp(t.add(f"y{r}_{s}", "b"), "vmin", "vmax")
                st = t.store(f"(float*)((char*)out + {r} * row_stride + {s} * px_stride) + ch", val)
                cond = " && ".join(x for x in (f"rows > {r}" if r else "", f"cols > {s}" if s else "") if x)
                c(f"if ({cond}) {st}" if cond else st)

    with c.block(isa.fn(sig)):
        _loop(isa, c, body)
    return c.text()


def kernel_bodies(isa: Isa) -> list[str]:
    return [k(isa, m) for m in TILES for k in (winograd_in, winograd_out)]


def table_fields(isa: Isa) -> list[str]:
    ins = ", ".join(in_name(isa, m) for m in TILES)
    outs = ", ".join(out_name(isa, m) for m in TILES)
    r = RULES[isa.name]
    return [f"  .wino_in = {{{ins}}}, .wino_out = {{{outs}}},",
            f"  .wino_min_channels = {r.min_channels}, .wino_min_cc = {r.min_cc}, .wino_min_pixels = {r.min_pixels},"
            f" .wino_f2_weights_per_tile = {r.f2_weights_per_tile},"]


def header() -> str:
    """wrt_winograd.h: the tile sizes and G of each, for the engine's weight transform at load (double)."""
    lines = ["/* GENERATED by kernels_wasm/gen from python_ref/winograd.py — do not edit. Regenerate: "
             "python -m kernels_wasm.gen */",
             "#ifndef WRT_WINOGRAD_H", "#define WRT_WINOGRAD_H", "",
             f"#define WRT_WINO_TILES {len(TILES)} /* F(m x m, 3 x 3) for m = {', '.join(map(str, TILES))} */"]
    for m in TILES:
        _, g, _ = matrices(m)
        n = m + R - 1
        vals = ", ".join("{" + ", ".join(f"{float(v)!r}" for v in row) + "}" for row in g)
        lines += [f"/* F({m}x{m}, 3x3): input tiles of {n}x{n}, G [{n}][{R}] (U = G g G^T) */",
                  f"static const double wrt_wino{m}_g[{n}][{R}] = {{{vals}}};"]
    return "\n".join([*lines, "", "#endif", ""])
