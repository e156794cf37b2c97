"""Depthwise convolution over one output row: channels in tiles of CT = U vectors, taps unrolled when ks is known.

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


def _taps(c: Code, ks: int, body: Callable[[str, str], None]) -> None:
    """Emit body(tap_ptr_expr, t_expr) for every tap: unrolled for a fixed ks, a loop for ks == 0."""
    if ks:
        for t in range(ks):
            body(f"i{t}", str(t))
    else:
        with c.block("for (size_t t = 0; t < ks; t++)"):
            c("const float* it = ip[t];")
            body("it", "t")


def dwconv(isa: Isa, ks: int) -> str:
    ct, vl = isa.dw_ct, isa.vl
    nu = ct // vl
    taps_w = f"{ct + ks * ct}" if ks else f"{ct} + ks * {ct}"
    c = Code()
    sig = (f"void {dwconv_name(isa, ks)}(size_t channels, size_t width, size_t ks, const float* const* in, "
           "const float* restrict w, float* out, size_t out_stride, const wrt_clamp* clamp)")
    with c.block(isa.fn(sig)):
        if ks:
            c("(void)ks;")
        c(isa.decl("vmin", isa.dup("clamp->min")), isa.decl("vmax", isa.dup("clamp->max")))
        with c.block("for (; width != 0; width--)"):
            if ks:
                c(*(f"const float* i{t} = in[{t}];" for t in range(ks)), f"in += {ks};")
            else:
                c("const float* const* ip = in;", "in += ks;")
            c("const float* wp = w;", "float* o = out;", "size_t off = 0;", "size_t ch = channels;")
            with c.block(f"for (; ch >= {ct}; ch -= {ct})"):
                c(*(isa.decl(f"acc{u}", isa.load(f"wp + {u * vl}"), const=False) for u in range(nu)))

                def full(p: str, t: str) -> None:
                    for u in range(nu):
                        x = isa.load(f"{p} + off + {u * vl}")
                        wv = isa.load(f"wp + {ct} + {t} * {ct} + {u * vl}")
                        c(f"acc{u} = {isa.fma(x, wv, f'acc{u}')};")
                _taps(c, ks, full)
                for u in range(nu):
                    c(f"acc{u} = {isa.clamp(f'acc{u}', 'vmin', 'vmax')};", isa.store(f"o + {u * vl}", f"acc{u}"))
                c(f"o += {ct};", f"off += {ct};", f"wp += {taps_w};")
            if ct > 1:
                with c.block("if (ch != 0)"):
                    # partial tile: whole vectors first, then the last < VL channels
                    with c.block(f"for (; ch >= {vl}; ch -= {vl})"):
                        c(isa.decl("acc", isa.load("wp"), const=False))
                        _taps(c, ks, lambda p, t: c(
                            f"acc = {isa.fma(isa.load(f'{p} + off'), isa.load(f'wp + {ct} + {t} * {ct}'), 'acc')};"))
                        c(f"acc = {isa.clamp('acc', 'vmin', 'vmax')};", isa.store("o", "acc"))
                        c(f"o += {vl};", f"off += {vl};", f"wp += {vl};")
                    if vl > 1:
                        with c.block("if (ch != 0)"):
                            c(isa.decl("acc", isa.load("wp"), const=False))

                            def part(p: str, t: str) -> None:
                                with c.block(""):
                                    c(*isa.load_tail("x", f"{p} + off", "ch"))
                                    c(f"acc = {isa.fma('x', isa.load(f'wp + {ct} + {t} * {ct}'), 'acc')};")
                            _taps(c, ks, part)
                            c(f"acc = {isa.clamp('acc', 'vmin', 'vmax')};", *isa.store_tail("o", "acc", "ch"))
            c("out = (float*)((char*)out + out_stride);")
    return c.text()
