"""Depthwise convolution over one output row: PX output pixels at a time, channels in tiles of CT = U vectors, taps
unrolled when ks is known.

Why PX pixels per step: one output pixel has only U accumulators, each a chain of ks dependent multiply-adds, so a
one-pixel kernel waits on multiply-add latency (V8 on x86 reached ~11 GFLOP/s that way). PX pixels give PX*U
independent chains, and each weight vector is loaded once per tap for all PX pixels. The last width % PX pixels
run one at a time.

Packed weights per CT tile: CT biases, then ks groups of CT weights (zero padded), so the last, partial tile still
reads whole weight vectors; inputs and outputs of that tile are read/written only up to `channels`.
"""

from __future__ import annotations

from collections.abc import Callable

from kernels_wasm.gen.cwriter import Code
from kernels_wasm.gen.isa import Isa

SPECIALIZED_KS = (9, 25)  # 3x3 and 5x5


def dwconv_name(isa: Isa, ks: int) -> str:
    return f"wrt_{isa.name}_dwconv_{ks if ks else 'any'}_c{isa.dw_ct}"


def _taps(c: Code, isa: Isa, ks: int, body: Callable[[str], None]) -> None:
    """Emit body(t_expr) for every tap: unrolled for a fixed ks where the ISA wants it, else a loop.
    wasm keeps the loop: clang hoists every load of an unrolled 3x3 ahead of the multiply-adds, and V8 then spills
    (unrolled: 14 GFLOP/s, loop: 23 GFLOP/s on a 56x56x144 3x3 layer in V8 12)."""
    if ks and isa.dw_unroll:
        for t in range(ks):
            with c.block(""):
                body(str(t))
        return
    if ks:
        c("#pragma clang loop unroll(disable)")
    with c.block(f"for (size_t t = 0; t < {ks or 'ks'}; t++)"):
        body("t")


def _tile(c: Code, isa: Isa, ks: int, px: int, nu: int, tail: bool) -> None:
    """Accumulate, clamp and store one tile of nu vectors for px pixels; tail: one partial vector of `ch` lanes.
    Pixel p's taps are in[p * ks + t] and its output is out + p * out_stride: constant offsets from two pointers,
    so no per-pixel pointer stays live (V8 on x86 spilled them, and the loads behind them, with 4 pixels)."""
    vl, ct = isa.vl, isa.dw_ct
    step = str(ks) if ks else "ks"
    for u in range(nu):
        c(isa.decl(f"b{u}", isa.load(f"wp + {u * vl}")))
        c(*(isa.decl(f"acc{p}_{u}", f"b{u}", const=False) for p in range(px)))

    def tap(t: str) -> None:
        for u in range(nu):
            c(isa.decl(f"w{u}", isa.load(f"wp + {ct} + {t} * {ct} + {u * vl}")))
        for p in range(px):
            ptr = f"in[{p} * {step} + {t}]" if p else f"in[{t}]"
            for u in range(nu):
                if tail:
                    with c.block(""):
                        c(*isa.load_tail("x", f"{ptr} + off", "ch"))
                        c(f"acc{p}_{u} = {isa.fma('x', f'w{u}', f'acc{p}_{u}')};")
                else:
                    c(f"acc{p}_{u} = {isa.fma(isa.load(f'{ptr} + off + {u * vl}'), f'w{u}', f'acc{p}_{u}')};")
    _taps(c, isa, ks, tap)
    for p in range(px):
        o = f"(float*)((char*)out + {p} * out_stride) + off" if p else "out + off"
        for u in range(nu):
            c(f"acc{p}_{u} = {isa.clamp(f'acc{p}_{u}', 'vmin', 'vmax')};")
            if tail:
                c(*isa.store_tail(o, f"acc{p}_{u}", "ch"))
            else:
                c(isa.store(f"{o} + {u * vl}", f"acc{p}_{u}"))


def _pixels(c: Code, isa: Isa, ks: int, px: int) -> None:
    """Every channel of px output pixels: whole CT tiles, then whole vectors, then the last < VL channels."""
    ct, vl = isa.dw_ct, isa.vl
    nu = ct // vl
    tile_floats = f"{ct + ks * ct}" if ks else f"{ct} + ks * {ct}"
    c("const float* wp = w;", "size_t off = 0;", "size_t ch = channels;")
    with c.block(f"for (; ch >= {ct}; ch -= {ct})"):
        _tile(c, isa, ks, px, nu, False)
        c(f"off += {ct};", f"wp += {tile_floats};")
    if ct == 1:
        return
    with c.block("if (ch != 0)"):
        _partial_tile(c, isa, ks, px)


def _partial_tile(c: Code, isa: Isa, ks: int, px: int) -> None:
    """The last ch < CT channels: whole vectors (weights advance by VL inside the tile), then < VL lanes."""
    vl, nu = isa.vl, isa.dw_ct // isa.vl
    if nu > 1:
        with c.block(f"for (; ch >= {vl}; ch -= {vl})"):
            _tile(c, isa, ks, px, 1, False)
            c(f"off += {vl};", f"wp += {vl};")
    if vl > 1:
        with c.block("if (ch != 0)"):
            _tile(c, isa, ks, px, 1, True)


def dwconv(isa: Isa, ks: int) -> str:
    px = isa.dw_px
    c = Code()
    sig = (f"void {dwconv_name(isa, ks)}(size_t channels, size_t width, size_t ks, const float* const* in, "
           "const float* restrict w, float* out, size_t out_stride, const wrt_clamp* clamp)")
    step = str(ks) if ks else "ks"
    with c.block(isa.fn(sig)):
        if ks:
            c("(void)ks;")
        c(isa.decl("vmin", isa.dup("clamp->min")), isa.decl("vmax", isa.dup("clamp->max")))
        if px > 1:
            with c.block(f"for (; width >= {px}; width -= {px})"):
                _pixels(c, isa, ks, px)
                c(f"in += {px} * {step};", f"out = (float*)((char*)out + {px} * out_stride);")
        with c.block("for (; width != 0; width--)"):
            _pixels(c, isa, ks, 1)
            c(f"in += {step};", "out = (float*)((char*)out + out_stride);")
    return c.text()


# 3x3 entries for one horizontal stride (dilation 1), on targets that unroll the taps (wasm keeps its tap loop, see
# _taps). Stride 2 measured no faster this way (112x112x96 and 56x56x144 layers on AVX-512), so only stride 1.
STRIDED = (1,)


def strided_name(isa: Isa, sw: int) -> str:
    return f"wrt_{isa.name}_dwconv_9s{sw}_c{isa.dw_ct}"


def has_strided(isa: Isa) -> bool:
    return isa.vl > 1 and isa.dw_unroll


def _tile_strided(c: Code, isa: Isa, sw: int, px: int, nu: int) -> None:
    """_tile for a 3x3 kernel at horizontal stride sw, weights k{kh}{kw}_{u} already in registers: pixel p's tap
    (kh, kw) reads input column sw*p + kw of the step, so a column shared by several (pixel, tap) pairs is loaded
    once and feeds each of them. The pointer of column j is that of one such pair: the indirection buffer gives
    every pair the same pixel (or all of them the padding row)."""
    vl = isa.vl
    for u in range(nu):
        c(isa.decl(f"b{u}", isa.load(f"wp + {u * vl}")))
        c(*(isa.decl(f"acc{p}_{u}", f"b{u}", const=False) for p in range(px)))
    for kh in range(3):
        for j in range(sw * (px - 1) + 3):
            users = [(p, j - sw * p) for p in range(px) if 0 <= j - sw * p < 3]
            p0, kw0 = users[0]
            for u in range(nu):
                with c.block(""):
                    c(isa.decl("x", isa.load(f"in[{p0 * 9 + kh * 3 + kw0}] + off + {u * vl}")))
                    c(*(f"acc{p}_{u} = {isa.fma('x', f'k{kh}{kw}_{u}', f'acc{p}_{u}')};" for p, kw in users))
    for p in range(px):
        o = f"(float*)((char*)out + {p} * out_stride) + off" if p else "out + off"
        for u in range(nu):
            c(f"acc{p}_{u} = {isa.clamp(f'acc{p}_{u}', 'vmin', 'vmax')};", isa.store(f"{o} + {u * vl}", f"acc{p}_{u}"))


def entries(isa: Isa) -> list[tuple[int, int, str]]:
    """(ks, sw, function) of the target's depthwise table, in the engine's order of preference: the stride-specific
    3x3 entries, the 3x3 and 5x5 ones, the generic one (ks 0) last."""
    strided = [(9, sw, strided_name(isa, sw)) for sw in STRIDED] if has_strided(isa) else []
    return [*strided, *((ks, 0, dwconv_name(isa, ks)) for ks in (*SPECIALIZED_KS, 0))]


def dwconv_strided(isa: Isa, sw: int) -> str:
    """The 3x3 entry for horizontal stride sw (the engine picks it only then, with dilation 1); same ABI and packing
    as dwconv(isa, 9). Channel tiles outside, pixels inside: a tile's 9 weight vectors stay in registers for the
    whole row and its slice of the three input rows stays in L1 (pixel-major, a 14x14x576 layer reloaded weights
    and rows from L2 at every step: 74 -> 104 GFLOP/s on AVX-512, 56x56x144 88 -> 124); steps of dw_px_strided
    pixels share input columns, the last pixels go one at a time, the last < CT channels pixel by pixel as
    dwconv(isa, 9) does them."""
    px = isa.dw_px_strided or isa.dw_px
    ct = isa.dw_ct
    nu = ct // isa.vl
    c = Code()
    sig = (f"void {strided_name(isa, sw)}(size_t channels, size_t width, size_t ks, const float* const* in, "
           "const float* restrict w, float* out, size_t out_stride, const wrt_clamp* clamp)")
    with c.block(isa.fn(sig)):
        c("(void)ks;", isa.decl("vmin", isa.dup("clamp->min")), isa.decl("vmax", isa.dup("clamp->max")))
        c("const float* wp = w;", "size_t off = 0;", "size_t ch = channels;")
        with c.block(f"for (; ch >= {ct}; ch -= {ct})"):
            c(*(isa.decl(f"k{t // 3}{t % 3}_{u}", isa.load(f"wp + {ct} + {t * ct} + {u * isa.vl}"))
                for t in range(9) for u in range(nu)))
            c("const float* const* ip = in;", "float* op = out;", "size_t n = width;")
            for step in (px, 1):
                with c.block(f"for (; n >= {step}; n -= {step})"):
                    c("const float* const* in = ip;", "float* out = op;")
                    _tile_strided(c, isa, sw if step > 1 else 0, step, nu)
                    c(f"ip += {step} * 9;", f"op = (float*)((char*)op + {step} * out_stride);")
            c(f"off += {ct};", f"wp += {ct * 10};")
        with c.block("if (ch != 0)"):
            c("const float* const* ip = in;", "float* op = out;")
            with c.block("for (size_t n = width; n != 0; n--)"):
                c("const float* const* in = ip;", "float* out = op;", "const float* wp = w + (channels / "
                  f"{ct}) * {ct * 10};", "size_t off = channels / " + str(ct) + " * " + str(ct) + ";",
                  "size_t ch = channels % " + str(ct) + ";")
                _partial_tile(c, isa, 9, 1)
                c("ip += 9;", "op = (float*)((char*)op + out_stride);")
    return c.text()
