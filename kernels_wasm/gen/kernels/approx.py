"""Vector approximations of exp, sigmoid and tanh, written once against the Isa table.

exp(x) = 2^n * p(r): n = round(x / ln2) with the magic-bias trick (adds only, and the biased float's low mantissa bits
already hold n + 127, so 2^n is one shift), r = x - n*ln2 in two steps (Cody-Waite; ln2_hi has 15 significant bits so
n*ln2_hi is exact even without FMA), p(r) = 1 + r*q(r), q of degree 4 fitted for minimum relative error on
[-ln2/2, ln2/2] (rel. error of the polynomial 9.1e-8 in exact arithmetic; measured in float32: README table).
sigmoid(x) = e/(1+e) with e = exp(-|x|), mirrored as 1 - that for x >= 0; no overflow, underflow flushed at
-87.33655 (2^-126). tanh(x) = odd polynomial of degree 11 fitted on [0, 0.625] (rel. 4.4e-9 exact arithmetic), else
(1 - e)/(1 + e) with e = exp(-2|x|) (|x| clamped to 9, where tanh is 1.0f), sign restored by a select.
Coefficients: iteratively reweighted least squares (near-minimax) in float64, rounded to float32.
"""

from __future__ import annotations

from kernels_wasm.gen.cwriter import flt
from kernels_wasm.gen.isa import Isa

_h = float.fromhex

# exp: q(r) = q1 + q2 r + ... + q5 r^4
EXP_Q = tuple(map(_h, ("0x1.fffff6p-1", "0x1.fffdc6p-2", "0x1.555a6ap-3", "0x1.573a56p-5", "0x1.0fa828p-7")))
# tanh(a) = a + a^3 P(a^2) on [0, TANH_SMALL]
TANH_P = tuple(map(_h, ("-0x1.555532p-2", "0x1.110726p-3", "-0x1.b83c5ap-5", "0x1.52269ep-6", "-0x1.75e1d4p-8")))
TANH_SMALL = 0.625

CONSTS: dict[str, str] = {
    "log2e": flt(_h("0x1.715476p+0")),
    "magic": flt(_h("0x1.8000FEp23")),     # 1.5 * 2^23 + 127
    "ln2_hi": flt(_h("0x1.62E4p-1")),
    "ln2_lo": flt(_h("0x1.7F7D1Cp-20")),
    "exp_lo": flt(_h("-0x1.5d58a0p+6")),   # ln(2^-126): below this exp() is flushed to 0
    "exp_hi": flt(_h("0x1.62e430p+6")),    # above this exp() is +inf
    "n_max": "127.0f",
    "inf": "__builtin_inff()",
    "zero": "0.0f", "one": "1.0f", "three": "3.0f", "six": "6.0f", "sixth": flt(_h("0x1.555556p-3")),
    "tanh_small": flt(TANH_SMALL), "tanh_clamp": "9.0f", "minus_two": "-2.0f",
    **{f"q{i + 1}": flt(c) for i, c in enumerate(EXP_Q)},
    **{f"t{i + 1}": flt(c) for i, c in enumerate(TANH_P)},
}


def _poly(isa: Isa, x: str, coefs: list[str]) -> str:
    """Horner in x, highest coefficient first (nested expression: compilers keep it in registers)."""
    acc = f"k_{coefs[0]}"
    for c in coefs[1:]:
        acc = isa.fma(acc, x, f"k_{c}")
    return acc


def exp_core(isa: Isa, z: str, y: str, p: str, full_range: bool) -> list[str]:
    """Lines computing y = exp(z). full_range=False needs z <= 0 (n in [-126, 0] after the flush); True handles
    every input (2^128 split as 2^127 * 2, +inf above exp_hi, 0 below exp_lo)."""
    d = isa.decl
    out = [
        d(f"{p}nb", isa.fma(z, "k_log2e", "k_magic")),
        d(f"{p}n", isa.sub(f"{p}nb", "k_magic")),
        d(f"{p}r", isa.fma(isa.op("neg", f"{p}n"), "k_ln2_lo", isa.fma(isa.op("neg", f"{p}n"), "k_ln2_hi", z))),
    ]
    if full_range:
        out += [d(f"{p}nc", isa.min(f"{p}n", "k_n_max")),
                d(f"{p}s", isa.shl23(isa.add(f"{p}nc", "k_magic")))]
    else:
        out.append(d(f"{p}s", isa.shl23(f"{p}nb")))
    q = _poly(isa, f"{p}r", ["q5", "q4", "q3", "q2", "q1"])
    out += [d(f"{p}q", q), d(f"{p}t", isa.mul(f"{p}r", f"{p}s")), d(f"{p}e", isa.fma(f"{p}t", f"{p}q", f"{p}s"))]
    e = f"{p}e"
    if full_range:
        e = isa.mul(e, isa.add("k_one", isa.sub(f"{p}n", f"{p}nc")))
        e = isa.sel_lt("k_exp_hi", z, "k_inf", e)
    out.append(d(y, isa.sel_lt(z, "k_exp_lo", "k_zero", e)))
    return out


def sigmoid(isa: Isa, x: str, y: str) -> list[str]:
    p = f"{y}_"
    out = [isa.decl(f"{p}z", isa.op("neg", isa.op("abs", x)))]
    out += exp_core(isa, f"{p}z", f"{p}ez", p, full_range=False)
    out.append(isa.decl(f"{p}f", isa.div(f"{p}ez", isa.add("k_one", f"{p}ez"))))
    out.append(isa.decl(y, isa.sel_lt(x, "k_zero", f"{p}f", isa.sub("k_one", f"{p}f")), const=False))
    return out


def tanh(isa: Isa, x: str, y: str) -> list[str]:
    p = f"{y}_"
    d = isa.decl
    out = [d(f"{p}a", isa.op("abs", x)), d(f"{p}a2", isa.mul(f"{p}a", f"{p}a"))]
    poly = _poly(isa, f"{p}a2", ["t5", "t4", "t3", "t2", "t1"])
    out.append(d(f"{p}small", isa.fma(isa.mul(f"{p}a2", f"{p}a"), poly, f"{p}a")))
    out.append(d(f"{p}z", isa.mul("k_minus_two", isa.min(f"{p}a", "k_tanh_clamp"))))
    out += exp_core(isa, f"{p}z", f"{p}ez", p, full_range=False)
    out.append(d(f"{p}large", isa.div(isa.sub("k_one", f"{p}ez"), isa.add("k_one", f"{p}ez"))))
    out.append(d(f"{p}th", isa.sel_lt(f"{p}a", "k_tanh_small", f"{p}small", f"{p}large")))
    out.append(d(y, isa.sel_lt(x, "k_zero", isa.op("neg", f"{p}th"), f"{p}th"), const=False))
    return out


def exp(isa: Isa, x: str, y: str) -> list[str]:
    lines = exp_core(isa, x, y, f"{y}_", full_range=True)
    lines[-1] = lines[-1].replace("const ", "", 1)
    return lines
