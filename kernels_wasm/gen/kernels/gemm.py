"""GEMM and indirect GEMM (KxK convolution) micro-kernels: an MR x NR register tile, NR = NV vectors.

Per k step: NV vector loads of packed weights, MR broadcasts of A, MR*NV multiply-adds. Rows past mr alias the
previous row (same inputs, same outputs), so the tile loop has no branches; columns past nc are computed from the
zero-padded panel and dropped by the partial store.
"""

from __future__ import annotations

from kernels_wasm.gen.cwriter import Code
from kernels_wasm.gen.isa import Isa


def gemm_name(isa: Isa, mr: int, nr: int, indirect: bool = False) -> str:
    return f"wrt_{isa.name}_{'igemm' if indirect else 'gemm'}_{mr}x{nr}"


def _row_ptrs(c: Code, mr: int) -> None:
    """c0..c{MR-1}: output rows; a row past mr aliases the one before it."""
    c("float* c0 = c;")
    for i in range(1, mr):
        c(f"float* c{i} = (float*)((char*)c{i - 1} + c_stride);")
        c(f"if (mr <= {i}) c{i} = c{i - 1};")


def _init_acc(c: Code, isa: Isa, mr: int, nv: int) -> None:
    for v in range(nv):
        c(isa.decl(f"acc0_{v}", isa.load(f"w + {v * isa.vl}"), const=False))
    for i in range(1, mr):
        c(*(isa.decl(f"acc{i}_{v}", f"acc0_{v}", const=False) for v in range(nv)))
    c(f"w += {nv * isa.vl};")


def _k_step(c: Code, isa: Isa, mr: int, nv: int, k: int | None = None, prefetch: bool = False) -> None:
    """One k step; k: at offset k of the row pointers, which then stay where they are (an unrolled loop).
    prefetch: ask for the cache line of each weight vector isa.gemm_prefetch floats ahead (see _gemm_rows)."""
    c(*(isa.decl(f"w{v}", isa.load(f"w + {v * isa.vl}")) for v in range(nv)))
    if prefetch and isa.gemm_prefetch:
        c(*(f"__builtin_prefetch(w + {isa.gemm_prefetch + v * isa.vl}, 0, 3);" for v in range(nv)))
    c(f"w += {nv * isa.vl};")
    for i in range(mr):
        if k is None:
            c(isa.decl(f"x{i}", isa.loaddup(f"a{i}")), f"a{i} += 1;")
        else:
            c(isa.decl(f"x{i}", isa.loaddup(f"a{i} + {k}")))
        c(*(f"acc{i}_{v} = {isa.fma(f'x{i}', f'w{v}', f'acc{i}_{v}')};" for v in range(nv)))


def _store_tile(c: Code, isa: Isa, mr: int, nv: int) -> None:
    """Clamp, then full-tile stores or the nc < NR path (whole vectors, then a partial one)."""
    c(isa.decl("vmin", isa.dup("clamp->min")), isa.decl("vmax", isa.dup("clamp->max")))
    for i in range(mr):
        c(*(f"acc{i}_{v} = {isa.clamp(f'acc{i}_{v}', 'vmin', 'vmax')};" for v in range(nv)))
    with c.block(f"if (nc >= {nv * isa.vl})"):
        for i in reversed(range(mr)):  # the last (valid) row is written last when rows alias
            c(*(isa.store(f"c{i} + {v * isa.vl}", f"acc{i}_{v}") for v in range(nv)))
    if nv * isa.vl == 1:
        return
    with c.block("else"):
        for i in reversed(range(mr)):
            with c.block(""):
                c(f"float* p = c{i};", "size_t n = nc;", isa.decl("t", f"acc{i}_0", const=False))
                for v in range(1, nv):
                    c(f"if (n >= {isa.vl}) {{ {isa.store('p', 't')} p += {isa.vl}; n -= {isa.vl}; t = acc{i}_{v}; }}")
                c(*isa.store_tail("p", "t", "n"))


def tail_rows(mr: int) -> list[int]:
    """Row counts of the GEMM's short paths for a last row tile: 49 = 6 x 8 + 1 output pixels (a 7x7 map) would
    otherwise run a whole 8-row tile for one row, and a fully-connected layer (one row) always would."""
    return sorted({1, *([mr // 2] if mr >= 6 else [])} - {mr})


def _gemm_rows(c: Code, isa: Isa, mr: int, nv: int, full: bool = False) -> None:
    """mr rows (full: exactly mr, no aliasing) from a and c."""
    c("const float* a0 = a;")
    for i in range(1, mr):
        c(f"const float* a{i} = (const float*)((const char*)a{i - 1} + a_stride);")
        if not full:
            c(f"if (mr <= {i}) a{i} = a{i - 1};")
    if full:
        c("float* c0 = c;", *(f"float* c{i} = (float*)((char*)c{i - 1} + c_stride);" for i in range(1, mr)))
    else:
        _row_ptrs(c, mr)
    _init_acc(c, isa, mr, nv)
    # A model's weights do not stay in cache from run to run, and the panel of a late layer (7x7 map, 49 rows) is
    # reused by few row tiles, so the first tile would wait on memory at every k step: the x86 kernels ask 4 KB
    # ahead (MobileNetV2 natively on Zen 5: AVX-512's 7x7 layers 186-205 -> 222-237 GFLOP/s, the model 2-3% faster,
    # AVX2 4%; 8 KB ahead the same, 2 KB slower; in the one-row kernel, where the classifier's weights stream, no
    # gain).
    with c.block("for (size_t k = kc; k != 0; k--)"):
        _k_step(c, isa, mr, nv, prefetch=True)
    _store_tile(c, isa, mr, nv)


def gemm(isa: Isa, mr: int, nr: int) -> str:
    nv = nr // isa.vl
    assert nv * isa.vl == nr
    c = Code()
    sig = (f"void {gemm_name(isa, mr, nr)}(size_t mr, size_t nc, size_t kc, const float* a, size_t a_stride, "
           "const float* restrict w, float* c, size_t c_stride, const wrt_clamp* clamp)")
    next_tile = ("w = panel;", f"a = (const float*)((const char*)a + {mr} * a_stride);",
                 f"c = (float*)((char*)c + {mr} * c_stride);")
    many = nr == isa.gemm_tile[1]  # the full-width tile; the narrow one runs one tile per call
    with c.block(isa.fn(sig)):
        if many and isa.name in MULTI_TILE:  # whole tiles first, each exactly MR rows, then the last one
            with c.block(f"for (; mr > {mr}; mr -= {mr})"):
                c("const float* panel = w;")
                with c.block(""):
                    _gemm_rows(c, isa, mr, nv, full=True)
                c(*next_tile)
            _gemm_tiles(c, isa, mr, nv)
        elif many and isa.name in LOOP_TILE:  # the tile's code once, looped: rows past MR alias nothing
            with c.block(f"for (;; mr -= {mr})"):
                c("const float* panel = w;")
                _gemm_tiles(c, isa, mr, nv)
                c(f"if (mr <= {mr}) return;", *next_tile)
        else:
            _gemm_tiles(c, isa, mr, nv)
    return c.text()


def _gemm_tiles(c: Code, isa: Isa, mr: int, nv: int) -> None:
    """One tile: a short path for a last tile of few rows, else MR rows (those past mr aliasing the one before)."""
    for t in tail_rows(mr):  # a short last tile runs a tile of t rows
        with c.block(f"if (mr <= {t})"):
            _gemm_rows(c, isa, t, nv)
            c("return;")
    _gemm_rows(c, isa, mr, nv)


# The narrow last panel (NR/2 columns: Cout = 24, 40 ... on AVX2) has half the accumulators of a full tile. AVX2's
# 6 chains cannot cover two FMA pipes of 4-5 cycles latency (60% of the FMA rate on Zen 2), so its GEMM tile there is
# 2 x MR rows tall: the same sums in the same order. AVX-512 and NEON keep 8 chains; the wasm modules keep their size.
# Only the GEMM: the igemm's indirection is laid out per MR-row tile.
TALL_HALF = ("avx2",)

# Natively a GEMM call runs any number of rows, whole MR-row tiles in a loop and then the last tile: a call per tile
# cost a short reduction (an expansion layer's k = 16 .. 64) its pointer set-up and branches each time.
MULTI_TILE = ("avx2", "avx512", "neon")
# In WebAssembly the same, with the tile's code in the loop once (the modules' size): whole tiles run its aliasing
# checks, all false.
LOOP_TILE = ("wasm_simd128", "wasm_relaxed")
MANY_ROWS = (*MULTI_TILE, *LOOP_TILE)  # the targets whose gemm takes any number of rows (table field gemm_multi)


# One row over ROW_PANELS panels at once: a lone last row (a 7x7 map's 49th pixel, a fully-connected layer's only
# row) otherwise runs per panel on 2 accumulator chains, bound by the multiply-add latency.
ROW_PANELS = 4


def gemm_row_name(isa: Isa, nr: int) -> str:
    return f"wrt_{isa.name}_gemm_row_{ROW_PANELS}x{nr}"


def gemm_row(isa: Isa, nr: int) -> str:
    """c[p * NR + j] for ROW_PANELS whole panels p of one row; panel p's weights at w + p * w_stride. Each output's
    sum is the MR x NR tile's (bias, then k in order), so a row gets the same bytes from either kernel."""
    nv, panels = nr // isa.vl, range(ROW_PANELS)
    c = Code()
    sig = (f"void {gemm_row_name(isa, nr)}(size_t kc, const float* a, const float* restrict w, size_t w_stride, "
           "float* c, const wrt_clamp* clamp)")
    with c.block(isa.fn(sig)):
        c("const float* w0 = w;", *(f"const float* w{p} = w{p - 1} + w_stride;" for p in panels[1:]))
        for p in panels:
            c(*(isa.decl(f"acc{p}_{v}", isa.load(f"w{p} + {v * isa.vl}"), const=False) for v in range(nv)))
        with c.block("for (size_t k = kc; k != 0; k--)"):
            c(*(f"w{p} += {nr};" for p in panels), isa.decl("x", isa.loaddup("a")), "a += 1;")
            for p in panels:
                c(*(f"acc{p}_{v} = {isa.fma('x', isa.load(f'w{p} + {v * isa.vl}'), f'acc{p}_{v}')};"
                    for v in range(nv)))
        c(isa.decl("vmin", isa.dup("clamp->min")), isa.decl("vmax", isa.dup("clamp->max")))
        for p in panels:
            c(*(isa.store(f"c + {p * nr + v * isa.vl}", isa.clamp(f"acc{p}_{v}", "vmin", "vmax")) for v in range(nv)))
    return c.text()


# The first convolution of nearly every vision model reads an RGB image: three channels per tap, so the k loop's
# pointer increments and exit cost as much as its multiply-adds. Natively such a tap runs three steps unrolled on
# fixed offsets (the same sums in the same order); the wasm modules keep their size.
UNROLLED_KC = {n: 3 for n in ("avx2", "avx512", "neon")}


def _igemm_taps(c: Code, isa: Isa, mr: int, nv: int, kc: int | None) -> None:
    """The loop over the ks taps, each kc (None: any number of) channels long."""
    with c.block("for (size_t t = ks; t != 0; t--)"):
        c("const float* a0 = ind[0];")
        for i in range(1, mr):
            c(f"const float* a{i} = mr > {i} ? ind[{i}] : a{i - 1};")
        c("ind += mr;")
        if kc is None:
            with c.block("for (size_t k = kc; k != 0; k--)"):
                _k_step(c, isa, mr, nv)
        else:
            for k in range(kc):
                with c.block(""):
                    _k_step(c, isa, mr, nv, k)


def igemm(isa: Isa, mr: int, nr: int) -> str:
    nv = nr // isa.vl
    c = Code()
    sig = (f"void {gemm_name(isa, mr, nr, True)}(size_t mr, size_t nc, size_t kc, size_t ks, "
           "const float* const* ind, const float* restrict w, float* c, size_t c_stride, const wrt_clamp* clamp)")
    with c.block(isa.fn(sig)):
        _row_ptrs(c, mr)
        _init_acc(c, isa, mr, nv)
        unrolled = UNROLLED_KC.get(isa.name)
        if unrolled is None:
            _igemm_taps(c, isa, mr, nv, None)
        else:
            with c.block(f"if (kc == {unrolled})"):
                _igemm_taps(c, isa, mr, nv, unrolled)
            with c.block("else"):
                _igemm_taps(c, isa, mr, nv, None)
        _store_tile(c, isa, mr, nv)
    return c.text()
