"""Element-wise kernels: binary (vector and scalar-broadcast b, fused clamp) and unary activations.

One loop shape for all: U vectors per step, then single vectors, then a partial vector (masked on AVX-512, through a
small stack buffer elsewhere) so tails use the same arithmetic as the body and nothing is read past n.
"""

from __future__ import annotations

from collections.abc import Callable

from kernels_wasm.gen.cwriter import Code
from kernels_wasm.gen.isa import Isa
from kernels_wasm.gen.kernels import approx

# The op codes (WRT_BIN_<NAME>, WRT_UN_<NAME>) are generated from these dicts, in this order, into
# kernels_wasm/generated/wrt_eltwise.h: the engine, the kernel tables and the test driver all index by them.
BINARY: dict[str, Callable[[Isa, str, str], str]] = {
    "add": lambda i, a, b: i.add(a, b),
    "sub": lambda i, a, b: i.sub(a, b),
    "rsub": lambda i, a, b: i.sub(b, a),
    "mul": lambda i, a, b: i.mul(a, b),
    "div": lambda i, a, b: i.div(a, b),
    "rdiv": lambda i, a, b: i.div(b, a),
    "max": lambda i, a, b: i.max(a, b),
    "min": lambda i, a, b: i.min(a, b),
    # x >= 0 ? x : x * slope; a float32 product is python_ref's double product rounded once
    "prelu": lambda i, a, b: i.sel_lt(a, "vzero", i.mul(a, b), a),
}

# unary op -> (constants it needs, params it reads, body(isa, x, y) -> lines declaring y)
Body = Callable[[Isa, str, str], list[str]]


def _one(expr: Callable[[Isa, str], str]) -> Body:
    return lambda i, x, y: [i.decl(y, expr(i, x), const=False)]


UNARY: dict[str, tuple[tuple[str, ...], int, Body]] = {
    "relu": (("zero",), 0, _one(lambda i, x: i.max(x, "k_zero"))),
    "clip": ((), 2, _one(lambda i, x: i.clamp(x, "k_p0", "k_p1"))),
    "leaky_relu": (("zero",), 1, _one(lambda i, x: i.sel_lt(x, "k_zero", i.mul(x, "k_p0"), x))),
    "hard_swish": (("zero", "three", "six", "sixth"), 0, _one(lambda i, x: i.mul(
        i.mul(x, "k_sixth"), i.min(i.max(i.add(x, "k_three"), "k_zero"), "k_six")))),
    "hard_sigmoid": (("zero", "one"), 2, _one(lambda i, x: i.clamp(i.fma(x, "k_p0", "k_p1"), "k_zero", "k_one"))),
    "sigmoid": (("log2e", "magic", "ln2_hi", "ln2_lo", "exp_lo", "zero", "one", "q1", "q2", "q3", "q4", "q5"), 0,
                approx.sigmoid),
    "tanh": (("log2e", "magic", "ln2_hi", "ln2_lo", "exp_lo", "zero", "one", "q1", "q2", "q3", "q4", "q5",
              "t1", "t2", "t3", "t4", "t5", "tanh_small", "tanh_clamp", "minus_two"), 0, approx.tanh),
    "exp": (("log2e", "magic", "ln2_hi", "ln2_lo", "exp_lo", "exp_hi", "n_max", "inf", "zero", "one",
             "q1", "q2", "q3", "q4", "q5"), 0, approx.exp),
    "sqrt": ((), 0, _one(lambda i, x: i.op("sqrt", x))),
    "abs": ((), 0, _one(lambda i, x: i.op("abs", x))),
    "neg": ((), 0, _one(lambda i, x: i.op("neg", x))),
}


HEADER = "wrt_eltwise.h"


def binary_enum(op: str) -> str:
    return f"WRT_BIN_{op.upper()}"


def unary_enum(op: str) -> str:
    return f"WRT_UN_{op.upper()}"


def header() -> str:
    """kernels_wasm/generated/wrt_eltwise.h: the element-wise op codes, in the order of BINARY and UNARY."""
    def enum(names: list[str], count: str) -> list[str]:
        return ["enum {", *(f"  {n} = {i}," for i, n in enumerate(names)), f"  {count} = {len(names)}", "};"]

    return "\n".join([
        "/* GENERATED from kernels_wasm/gen/kernels/eltwise.py by python -m kernels_wasm.gen: do not edit.",
        " * Element-wise op codes: the index of each op's kernel in wrt_target.vbinary / vbinary_scalar / vunary. */",
        "#ifndef WRT_ELTWISE_H", "#define WRT_ELTWISE_H", "",
        "/* binary: y = a OP b; RSUB, RDIV swap the operands; PRELU is a >= 0 ? a : a * b (b: the slope) */",
        *enum([binary_enum(op) for op in BINARY], "WRT_BIN_COUNT"), "",
        *enum([unary_enum(op) for op in UNARY], "WRT_UN_COUNT"), "", "#endif", ""])


def binary_name(isa: Isa, op: str, scalar_b: bool) -> str:
    return f"wrt_{isa.name}_v{op}{'c' if scalar_b else ''}"


def unary_name(isa: Isa, op: str) -> str:
    return f"wrt_{isa.name}_{op}"


def _map_loop(c: Code, isa: Isa, inputs: list[str], body: Callable[[list[str], str], list[str]],
              clamp: bool) -> None:
    """y[i] = body(inputs[i]) over n floats. inputs: names of float pointers (advanced here)."""
    vl, u = isa.vl, isa.unroll
    step = vl * u

    def emit(nvec: int, tail: bool) -> None:
        for k in range(nvec):
            for j, p in enumerate(inputs):
                if tail:
                    c(*isa.load_tail(f"v{j}_{k}", p, "n"))
                else:
                    c(isa.decl(f"v{j}_{k}", isa.load(f"{p} + {k * vl}")))
            c(*body([f"v{j}_{k}" for j in range(len(inputs))], f"y{k}"))
            if clamp:
                c(f"y{k} = {isa.clamp(f'y{k}', 'vmin', 'vmax')};")
        if tail:
            c(*isa.store_tail("y", "y0", "n"))
        else:
            c(*(isa.store(f"y + {k * vl}", f"y{k}") for k in range(nvec)))
            c(*(f"{p} += {nvec * vl};" for p in [*inputs, "y"]))

    with c.block(f"for (; n >= {step}; n -= {step})"):
        emit(u, False)
    if step > vl:
        with c.block(f"for (; n >= {vl}; n -= {vl})"):
            emit(1, False)
    if vl > 1:
        with c.block("if (n != 0)"):
            emit(1, True)


def binary(isa: Isa, op: str, scalar_b: bool) -> str:
    c = Code()
    sig = (f"void {binary_name(isa, op, scalar_b)}(size_t n, const float* a, const float* b, float* y, "
           "const wrt_clamp* clamp)")
    fn = BINARY[op]
    with c.block(isa.fn(sig)):
        c(isa.decl("vmin", isa.dup("clamp->min")), isa.decl("vmax", isa.dup("clamp->max")))
        if op == "prelu":
            c(isa.decl("vzero", isa.zero()))
        if scalar_b:
            c(isa.decl("vb", isa.dup("b[0]")))
            _map_loop(c, isa, ["a"], lambda v, y: [isa.decl(y, fn(isa, v[0], "vb"), const=False)], True)
        else:
            _map_loop(c, isa, ["a", "b"], lambda v, y: [isa.decl(y, fn(isa, v[0], v[1]), const=False)], True)
    return c.text()


def unary(isa: Isa, op: str) -> str:
    consts, nparams, body = UNARY[op]
    c = Code()
    sig = f"void {unary_name(isa, op)}(size_t n, const float* x, float* y, const float* params)"
    with c.block(isa.fn(sig)):
        if nparams == 0:
            c("(void)params;")
        c(*(isa.decl(f"k_p{j}", isa.dup(f"params[{j}]")) for j in range(nparams)))
        c(*(isa.decl(f"k_{k}", isa.dup(approx.CONSTS[k])) for k in consts))
        if long_body(isa, op):
            _one_body_loop(c, isa, lambda v, y: body(isa, v[0], y))
        else:
            _map_loop(c, isa, ["x"], lambda v, y: body(isa, v[0], y), False)
    return c.text()


# wasm: the polynomial ops have one copy of their body, one vector per step, the last partial vector loaded through
# a buffer (their bodies are long enough to fill the pipeline on their own; the unrolled and tail copies cost the
# modules about 3.5 KB)
LONG_BODY = ("sigmoid", "tanh", "exp")


def _one_body_loop(c: Code, isa: Isa, body: Callable[[list[str], str], list[str]]) -> None:
    vl = isa.vl
    c(f"float tb[{vl}];")
    with c.block("while (n != 0)"):
        c(f"const size_t m = n < {vl} ? n : {vl};", "const float* xs = x;")
        with c.block(f"if (m < {vl})"):
            c(f"for (size_t l = 0; l < {vl}; l++) tb[l] = l < m ? x[l] : 0.0f;", "xs = tb;")
        c(isa.decl("v0_0", isa.load("xs")), *body(["v0_0"], "y0"))
        with c.block(f"if (m == {vl})"):
            c(isa.store("y", "y0"))
        with c.block("else"):
            c(*isa.store_tail("y", "y0", "m"))
        c("x += m;", "y += m;", "n -= m;")


def long_body(isa: Isa, op: str) -> bool:
    return isa.name.startswith("wasm") and op in LONG_BODY
