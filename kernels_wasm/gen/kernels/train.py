"""Training kernels: the gradient GEMM, activation gradients and the optimizer updates (python_ref/train's rules).

- tgemm: C = (accumulate ? C : 0) + A B, A read through row and column strides (so dW = dY^T X and dX = dY W are
  the same kernel; db = sum dY is A = a single 1.0 with both strides 0), B and C row-major. Each element of C is one
  chain of multiply-adds over k in order: the bits do not depend on the tiling, so any split of rows or columns
  between threads gives the same result.
- Activation gradients (GRAD table, op codes in generated/wrt_train.h): dx = dy * f'(v), v the forward's output
  (clamp, sigmoid, tanh) or input (hard-swish).
- SGD with momentum and Adam, L2 weight decay added to the gradient, in float32 (python_ref computes in float64:
  the tests state the bound).
"""

from __future__ import annotations

from collections.abc import Callable

from kernels_wasm.gen.cwriter import Code
from kernels_wasm.gen.isa import Isa

HEADER = "wrt_train.h"
# rows of C per tgemm step, and vectors of columns (scalar: columns); wasm: a 2 x 1-vector tile (the modules' size
# budget, build.py SIMD_WASM_LIMIT)
TG_ROWS = {"wasm_simd128": 2, "wasm_relaxed": 2}
TG_VECS = {"scalar": 4, "wasm_simd128": 1, "wasm_relaxed": 1}
DEFAULT_ROWS, DEFAULT_VECS = 4, 2

Body = Callable[[Isa, list[str], str], list[str]]  # (isa, [v, dy] vector names, result name) -> lines

# gradient op -> (body, what v is); params: [lo, hi] for clamp
GRAD: dict[str, tuple[Body, str]] = {
    # passes where lo < y < hi (relu: [0, inf), relu6 [0, 6], a fused clamp): PyTorch's relu / hardtanh
    "clamp": (lambda i, v, y: [i.decl(y, i.sel_lt("k_lo", v[0], i.sel_lt(v[0], "k_hi", v[1], "k_zero"), "k_zero"),
                                      const=False)], "output"),
    # 0 below -3, x/3 + 1/2 on [-3, 3], 1 above
    "hard_swish": (lambda i, v, y: [i.decl(y, i.mul(v[1], i.sel_lt(v[0], "k_m3", "k_zero", i.sel_lt(
        "k_3", v[0], "k_one", i.fma(v[0], "k_third", "k_half")))), const=False)], "input"),
    "sigmoid": (lambda i, v, y: [i.decl(y, i.mul(i.mul(v[1], v[0]), i.sub("k_one", v[0])), const=False)], "output"),
    "tanh": (lambda i, v, y: [i.decl(y, i.mul(v[1], i.sub("k_one", i.mul(v[0], v[0]))), const=False)], "output"),
}
CONSTS = {"k_zero": "0.0f", "k_one": "1.0f", "k_half": "0.5f", "k_3": "3.0f", "k_m3": "-3.0f",
          "k_third": "(1.0f / 3.0f)"}


def grad_enum(op: str) -> str:
    return f"WRT_GRAD_{op.upper()}"


def header() -> str:
    """generated/wrt_train.h: the activation-gradient op codes, in GRAD's order."""
    return "\n".join([
        "/* GENERATED from kernels_wasm/gen/kernels/train.py by python -m kernels_wasm.gen: do not edit.",
        " * Activation-gradient op codes: the index of each kernel in wrt_target.grad. */",
        "#ifndef WRT_TRAIN_H", "#define WRT_TRAIN_H", "", "enum {",
        *(f"  {grad_enum(op)} = {k}, /* v: the forward's {GRAD[op][1]} */" for k, op in enumerate(GRAD)),
        f"  WRT_GRAD_COUNT = {len(GRAD)}", "};", "", "#endif", ""])


def names(isa: Isa) -> dict[str, str]:
    return {"tgemm": f"wrt_{isa.name}_tgemm", "sgd": f"wrt_{isa.name}_sgd", "adam": f"wrt_{isa.name}_adam",
            **{op: f"wrt_{isa.name}_grad_{op}" for op in GRAD}}


def _lanes(c: Code, isa: Isa, loads: list[str], stores: list[tuple[str, str]], body: Callable[[], list[str]],
           advance: list[str]) -> None:
    """Over n floats, one vector per step, then a partial vector: v_<p> = the vector at pointer p for each of
    loads, body() lines, then store each (pointer, vector) of stores."""
    vl = isa.vl

    def emit(tail: bool) -> None:
        for p in loads:
            if tail:
                c(*isa.load_tail(f"v_{p}", p, "n"))
            else:
                c(isa.decl(f"v_{p}", isa.load(p)))
        c(*body())
        for p, v in stores:
            c(*(isa.store_tail(p, v, "n") if tail else [isa.store(p, v)]))
        if not tail:
            c(*(f"{p} += {vl};" for p in advance))

    with c.block(f"for (; n >= {vl}; n -= {vl})"):
        emit(False)
    if vl > 1:
        with c.block("if (n != 0)"):
            emit(True)


def grad(isa: Isa, op: str) -> str:
    body, _ = GRAD[op]
    c = Code()
    sig = f"void {names(isa)[op]}(size_t n, const float* v, const float* dy, float* dx, const float* params)"
    with c.block(isa.fn(sig)):
        if op == "clamp":
            c(isa.decl("k_lo", isa.dup("params[0]")), isa.decl("k_hi", isa.dup("params[1]")))
        else:
            c("(void)params;")
        used = {"clamp": ("k_zero",), "hard_swish": ("k_zero", "k_one", "k_half", "k_3", "k_m3", "k_third"),
                "sigmoid": ("k_one",), "tanh": ("k_one",)}[op]
        c(*(isa.decl(k, isa.dup(CONSTS[k])) for k in used))
        _lanes(c, isa, ["v", "dy"], [("dx", "r")], lambda: body(isa, ["v_v", "v_dy"], "r"), ["v", "dy", "dx"])
    return c.text()


def sgd(isa: Isa) -> str:
    """params: lr, momentum, weight_decay. buf = momentum buf + g; p -= lr buf. buf starts at zeros, so the first
    step's buf is g exactly (python_ref's rule)."""
    c = Code()
    sig = f"void {names(isa)['sgd']}(size_t n, float* p, const float* g, float* buf, const float* params)"
    with c.block(isa.fn(sig)):
        c(isa.decl("k_lr", isa.dup("params[0]")), isa.decl("k_mom", isa.dup("params[1]")),
          isa.decl("k_wd", isa.dup("params[2]")))

        def body() -> list[str]:
            return [isa.decl("gd", isa.fma("k_wd", "v_p", "v_g")),
                    isa.decl("nb", isa.fma("k_mom", "v_buf", "gd")),
                    isa.decl("np", isa.sub("v_p", isa.mul("k_lr", "nb")))]
        _lanes(c, isa, ["p", "g", "buf"], [("buf", "nb"), ("p", "np")], body, ["p", "g", "buf"])
    return c.text()


def adam(isa: Isa) -> str:
    """params: lr, b1, b2, eps, weight_decay, 1 - b1^t, 1 - b2^t. m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
    p -= lr (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps)."""
    c = Code()
    sig = f"void {names(isa)['adam']}(size_t n, float* p, const float* g, float* m, float* v, const float* params)"
    with c.block(isa.fn(sig)):
        c(isa.decl("k_lr", isa.dup("params[0]")), isa.decl("k_b1", isa.dup("params[1]")),
          isa.decl("k_c1", isa.dup("1.0f - params[1]")), isa.decl("k_b2", isa.dup("params[2]")),
          isa.decl("k_c2", isa.dup("1.0f - params[2]")), isa.decl("k_eps", isa.dup("params[3]")),
          isa.decl("k_wd", isa.dup("params[4]")), isa.decl("k_bc1", isa.dup("params[5]")),
          isa.decl("k_bc2", isa.dup("params[6]")))

        def body() -> list[str]:
            return [isa.decl("gd", isa.fma("k_wd", "v_p", "v_g")),
                    isa.decl("nm", isa.fma("k_b1", "v_m", isa.mul("k_c1", "gd"))),
                    isa.decl("nv", isa.fma("k_b2", "v_v", isa.mul("k_c2", isa.mul("gd", "gd")))),
                    isa.decl("den", isa.add(isa.op("sqrt", isa.div("nv", "k_bc2")), "k_eps")),
                    isa.decl("np", isa.sub("v_p", isa.div(isa.mul("k_lr", isa.div("nm", "k_bc1")), "den")))]
        _lanes(c, isa, ["p", "g", "m", "v"], [("m", "nm"), ("v", "nv"), ("p", "np")], body, ["p", "g", "m", "v"])
    return c.text()


def tgemm(isa: Isa) -> str:
    """C[i, j] = (accumulate ? C[i, j] : 0) + sum_k a[i a_rs + k a_cs] b[k ldb + j], for i < m, j < n."""
    vl = isa.vl
    nv = TG_VECS.get(isa.name, DEFAULT_VECS)
    mr = TG_ROWS.get(isa.name, DEFAULT_ROWS)
    c = Code()
    sig = (f"void {names(isa)['tgemm']}(size_t m, size_t n, size_t k, const float* a, size_t a_rs, size_t a_cs, "
           "const float* b, size_t ldb, float* c, size_t ldc, int accumulate)")

    def tile(rows: int, vecs: int, tail: bool) -> None:
        """rows x vecs vectors of C at (i, j); tail: one partial vector of the last n - j columns."""
        cols = "rem"
        if tail:
            c("const size_t rem = n - j;")
        for r in range(rows):
            for u in range(vecs):
                dst = f"acc{r}_{u}"
                cp = f"c + (i + {r}) * ldc + j + {u * vl}"
                if tail:
                    c(*isa.load_tail(f"{dst}_c", cp, cols), f"{isa.vtype} {dst} = accumulate ? {dst}_c : {isa.zero()};")
                else:
                    c(f"{isa.vtype} {dst} = accumulate ? {isa.load(cp)} : {isa.zero()};")
        with c.block("for (size_t t = 0; t < k; t++)"):
            c("const float* bt = b + t * ldb + j;")
            for u in range(vecs):
                if tail:
                    c(*isa.load_tail(f"b{u}", "bt", cols))
                else:
                    c(isa.decl(f"b{u}", isa.load(f"bt + {u * vl}")))
            for r in range(rows):
                c(isa.decl(f"a{r}", isa.dup(f"a[(i + {r}) * a_rs + t * a_cs]")))
                c(*(f"acc{r}_{u} = {isa.fma(f'a{r}', f'b{u}', f'acc{r}_{u}')};" for u in range(vecs)))
        for r in range(rows):
            for u in range(vecs):
                cp = f"c + (i + {r}) * ldc + j + {u * vl}"
                c(*(isa.store_tail(cp, f"acc{r}_{u}", cols) if tail else [isa.store(cp, f"acc{r}_{u}")]))

    def columns(rows: int) -> None:
        c("size_t j = 0;")
        with c.block(f"for (; j + {nv * vl} <= n; j += {nv * vl})"):
            tile(rows, nv, False)
        if nv > 1:
            with c.block(f"for (; j + {vl} <= n; j += {vl})"):
                tile(rows, 1, False)
        if vl > 1:
            with c.block("if (j < n)"):
                tile(rows, 1, True)

    with c.block(isa.fn(sig)):
        c("size_t i = 0;")
        with c.block(f"for (; i + {mr} <= m; i += {mr})"):
            columns(mr)
        with c.block("for (; i < m; i++)"):
            columns(1)
    return c.text()


def kernel_bodies(isa: Isa) -> list[str]:
    return [tgemm(isa), *(grad(isa, op) for op in GRAD), sgd(isa), adam(isa)]


def table_fields(isa: Isa) -> list[str]:
    nm = names(isa)
    return [f"  .tgemm = {nm['tgemm']}, .sgd = {nm['sgd']}, .adam = {nm['adam']},",
            "  .grad = {" + ", ".join(f"[{grad_enum(op)}] = {nm[op]}" for op in GRAD) + "},"]
