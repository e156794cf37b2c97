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
    with c.block("if (ch != 0)"):  # partial tile: weights advance by VL inside it
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
