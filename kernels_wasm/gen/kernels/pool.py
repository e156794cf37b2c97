"""Max and average pooling over one output pixel: ks input pointers, channels in vectors, taps inner."""

from __future__ import annotations

from collections.abc import Callable

from kernels_wasm.gen.cwriter import Code
from kernels_wasm.gen.isa import Isa

Loader = Callable[[str, int, str, bool], list[str]]  # (pointer, vector index, name, const) -> lines


def pool_name(isa: Isa, kind: str) -> str:
    return f"wrt_{isa.name}_{kind}pool"


def pool(isa: Isa, kind: str) -> str:
    """kind "max": y = max over taps; "avg": y = sum over taps * scale (the engine passes 1/divisor)."""
    vl = isa.vl
    c = Code()
    sig = (f"void {pool_name(isa, kind)}(size_t channels, size_t ks, const float* const* in, float* y, float scale, "
           "const wrt_clamp* clamp)")

    def reduce(c: Code, load: Loader, n: int) -> None:
        """acc{u} over every tap for n vectors; load(ptr, u) gives the vector expression or declaration lines."""
        if kind == "max":
            for u in range(n):
                c(*load("in[0]", u, f"acc{u}", False))
            with c.block("for (size_t t = 1; t < ks; t++)"):
                c("const float* it = in[t];")
                for u in range(n):
                    c(*load("it", u, f"x{u}", True), f"acc{u} = {isa.max(f'acc{u}', f'x{u}')};")
        else:
            # Compensated (Kahan) sum: a float32 running sum over a 64x64 global pool drifts by ~ks/2 ulp on
            # near-constant data, which squeeze-excite branches amplify; the compensation keeps it at ~2 ulp.
            c(*(isa.decl(f"acc{u}", isa.zero(), const=False) for u in range(n)))
            c(*(isa.decl(f"err{u}", isa.zero(), const=False) for u in range(n)))
            with c.block("for (size_t t = 0; t < ks; t++)"):
                c("const float* it = in[t];")
                for u in range(n):
                    c(*load("it", u, f"x{u}", True),
                      isa.decl(f"y{u}", isa.sub(f"x{u}", f"err{u}")),
                      isa.decl(f"s{u}", isa.add(f"acc{u}", f"y{u}")),
                      f"err{u} = {isa.sub(isa.sub(f's{u}', f'acc{u}'), f'y{u}')};",
                      f"acc{u} = s{u};")
            c(*(f"acc{u} = {isa.mul(f'acc{u}', 'vscale')};" for u in range(n)))
        c(*(f"acc{u} = {isa.clamp(f'acc{u}', 'vmin', 'vmax')};" for u in range(n)))

    def full(p: str, u: int, dst: str, const: bool) -> list[str]:
        return [isa.decl(dst, isa.load(f"{p} + off + {u * vl}"), const)]

    def part(p: str, u: int, dst: str, const: bool) -> list[str]:
        if const:
            return isa.load_tail(dst, f"{p} + off", "ch")
        lines = isa.load_tail(f"{dst}_first", f"{p} + off", "ch")
        return [*lines, isa.decl(dst, f"{dst}_first", const=False)]

    step = vl * isa.unroll
    with c.block(isa.fn(sig)):
        if kind == "max":
            c("(void)scale;")
        else:
            c(isa.decl("vscale", isa.dup("scale")))
        c(isa.decl("vmin", isa.dup("clamp->min")), isa.decl("vmax", isa.dup("clamp->max")))
        c("size_t off = 0;", "size_t ch = channels;")
        with c.block(f"for (; ch >= {step}; ch -= {step})"):
            reduce(c, full, isa.unroll)
            c(*(isa.store(f"y + off + {u * vl}", f"acc{u}") for u in range(isa.unroll)), f"off += {step};")
        if step > vl:
            with c.block(f"for (; ch >= {vl}; ch -= {vl})"):
                reduce(c, full, 1)
                c(isa.store("y + off", "acc0"), f"off += {vl};")
        if vl > 1:
            with c.block("if (ch != 0)"):
                reduce(c, part, 1)
                c(*isa.store_tail("y + off", "acc0", "ch"))
    return c.text()
