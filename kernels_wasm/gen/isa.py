"""Per-target vector-ops tables.

A kernel definition (kernels/*.py) is written once against `Isa`: it asks for C expressions such as
`isa.fma("x", "w", "acc")` and gets the target's intrinsic back. The scalar target is the same table with VL = 1 and
plain C operators, so the portable fallback is generated from the same definitions.

min/max follow the wasm pmin/pmax rule: pmax(a, b) = a < b ? b : a, pmin(a, b) = b < a ? b : a. On x86 that is exactly
one maxps/minps with swapped operands (wasm_f32x4_pmin/pmax lower to one instruction there, f32x4.min/max to ~8), so
every x86-hosted path agrees bit for bit. NEON uses vmaxq/vminq, which differ only when an input is NaN.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

Expr = str


@dataclass(frozen=True)
class Isa:
    name: str                 # wrt_target name and C suffix
    vl: int                   # f32 lanes per vector
    vtype: str                # C vector type
    ops: dict[str, str]       # expression templates, str.format with positional operands
    includes: tuple[str, ...] = ()
    attr: str = ""            # function attribute (per-function ISA on x86: one .so holds every path)
    prelude: str = ""         # target helpers emitted once per file
    gemm_tile: tuple[int, int] = (4, 4)    # MR, NR
    dw_ct: int = 4                          # depthwise channel tile (packed weights)
    dw_px: int = 4                          # depthwise output pixels per step (independent accumulator chains)
    dw_unroll: bool = True                  # unroll the taps of the 3x3/5x5 depthwise entries
    unroll: int = 2                         # vectors per main-loop step of element-wise/pool kernels
    gemm_prefetch: int = 0                  # GEMM: packed weights asked for this many floats ahead (0: none)
    tail: str = "halving"                   # partial store: "none" (VL 1), "mask" (AVX-512), "halving"
    notes: tuple[str, ...] = field(default_factory=tuple)

    def fn(self, sig: str) -> str:
        """Head of a kernel definition: file-local, with the target's ISA attribute."""
        return " ".join(x for x in ("static", self.attr, sig) if x)

    # -- expressions -------------------------------------------------------------------------------------------------
    def op(self, name: str, *args: Expr) -> Expr:
        return self.ops[name].format(*args)

    def zero(self) -> Expr:
        return self.ops["zero"]

    def dup(self, x: Expr) -> Expr:
        return self.op("dup", x)

    def load(self, p: Expr) -> Expr:
        return self.op("load", p)

    def loaddup(self, p: Expr) -> Expr:
        return self.op("loaddup", p)

    def fma(self, a: Expr, b: Expr, c: Expr) -> Expr:
        """a * b + c (fused where the target has FMA)."""
        return self.op("fma", a, b, c)

    def add(self, a: Expr, b: Expr) -> Expr:
        return self.op("add", a, b)

    def sub(self, a: Expr, b: Expr) -> Expr:
        return self.op("sub", a, b)

    def mul(self, a: Expr, b: Expr) -> Expr:
        return self.op("mul", a, b)

    def div(self, a: Expr, b: Expr) -> Expr:
        return self.op("div", a, b)

    def min(self, a: Expr, b: Expr) -> Expr:
        return self.op("min", a, b)

    def max(self, a: Expr, b: Expr) -> Expr:
        return self.op("max", a, b)

    def sel_lt(self, a: Expr, b: Expr, x: Expr, y: Expr) -> Expr:
        """Lane-wise a < b ? x : y."""
        return self.op("sel_lt", a, b, x, y)

    def shl23(self, v: Expr) -> Expr:
        """Reinterpret as int32, shift left by 23, reinterpret as f32 (builds 2^n from a magic-biased float)."""
        return self.op("shl23", v)

    def clamp(self, v: Expr, lo: Expr, hi: Expr) -> Expr:
        return self.min(self.max(v, lo), hi)

    # -- statements ----------------------------------------------------------------------------------------------------
    def store(self, p: Expr, v: Expr) -> str:
        return self.op("store", p, v) + ";"

    def decl(self, name: str, value: Expr, const: bool = True) -> str:
        return f"{'const ' if const else ''}{self.vtype} {name} = {value};"

    def load_tail(self, dst: str, p: Expr, n: Expr) -> list[str]:
        """Declare vector `dst` holding the first n (1..VL-1) floats at p, zeros after; never reads past p[n-1]."""
        if self.tail == "mask":
            return [f"const {self.vtype} {dst} = _mm512_maskz_loadu_ps(_cvtu32_mask16((1u << {n}) - 1u), {p});"]
        buf = f"{dst}_buf"
        return [f"float {buf}[{self.vl}];",
                f"for (size_t l = 0; l < {self.vl}; l++) {buf}[l] = l < {n} ? ({p})[l] : 0.0f;",
                f"const {self.vtype} {dst} = {self.load(buf)};"]

    def store_tail(self, p: Expr, v: Expr, n: Expr) -> list[str]:
        """Store the first n (0..VL-1) lanes of v at p, lane-wise (or masked), in its own block."""
        if self.tail == "none":
            return []
        if self.tail == "mask":
            return [f"_mm512_mask_storeu_ps({p}, _cvtu32_mask16((1u << {n}) - 1u), {v});"]
        return ["{", *["  " + s for s in _HALVING[self.name](p, v, n)], "}"]


def _halving_wasm(p: Expr, v: Expr, n: Expr) -> list[str]:
    return [f"float* tp = {p};", f"v128_t tv = {v};",
            f"if ({n} & 2) {{ wasm_v128_store64_lane(tp, tv, 0); tv = wasm_i64x2_shuffle(tv, tv, 1, 1); tp += 2; }}",
            f"if ({n} & 1) wasm_v128_store32_lane(tp, tv, 0);"]


def _halving_avx2(p: Expr, v: Expr, n: Expr) -> list[str]:
    return [f"float* tp = {p};", f"__m128 th = _mm256_castps256_ps128({v});",
            f"if ({n} & 4) {{ _mm_storeu_ps(tp, th); th = _mm256_extractf128_ps({v}, 1); tp += 4; }}",
            f"if ({n} & 2) {{ _mm_storel_pi((__m64*)tp, th); th = _mm_movehl_ps(th, th); tp += 2; }}",
            f"if ({n} & 1) _mm_store_ss(tp, th);"]


def _halving_neon(p: Expr, v: Expr, n: Expr) -> list[str]:
    return [f"float* tp = {p};", f"float32x2_t th = vget_low_f32({v});",
            f"if ({n} & 2) {{ vst1_f32(tp, th); th = vget_high_f32({v}); tp += 2; }}",
            f"if ({n} & 1) vst1_lane_f32(tp, th, 0);"]


_HALVING: dict[str, Callable[[Expr, Expr, Expr], list[str]]] = {
    "wasm_simd128": _halving_wasm, "wasm_relaxed": _halving_wasm, "avx2": _halving_avx2, "neon": _halving_neon,
}

# -- the tables --------------------------------------------------------------------------------------------------------
_SCALAR_PRELUDE = """\
/* 2^n from a magic-biased float: the low mantissa bits hold n + 127 (type pun through a union, valid C11). */
__attribute__((unused)) static inline float wrt_shl23(float x) {
  union { float f; uint32_t u; } v = { x };
  v.u <<= 23;
  return v.f;
}

/* sqrt without the errno path gcc adds to __builtin_sqrtf (it would call libm's sqrtf for x < 0). */
__attribute__((unused)) static inline float wrt_sqrtf(float x) {
#if defined(__clang__) && __has_builtin(__builtin_elementwise_sqrt)
  return __builtin_elementwise_sqrt(x);
#elif defined(__GNUC__) && defined(__x86_64__)
  float y;
  __asm__("sqrtss %1, %0" : "=x"(y) : "x"(x));
  return y;
#elif defined(__GNUC__) && defined(__aarch64__)
  float y;
  __asm__("fsqrt %s0, %s1" : "=w"(y) : "w"(x));
  return y;
#else
  return __builtin_sqrtf(x);
#endif
}
"""

SCALAR = Isa(
    name="scalar", vl=1, vtype="float", tail="none", gemm_tile=(2, 4), dw_ct=1, dw_px=2, unroll=4,
    ops={
        "zero": "0.0f", "dup": "{0}", "load": "*({0})", "loaddup": "*({0})", "store": "*({0}) = {1}",
        "fma": "({0} * {1} + {2})", "add": "({0} + {1})", "sub": "({0} - {1})", "mul": "({0} * {1})",
        "div": "({0} / {1})",
        "min": "({1} < {0} ? {1} : {0})", "max": "({0} < {1} ? {1} : {0})", "sel_lt": "({0} < {1} ? {2} : {3})",
        "abs": "__builtin_fabsf({0})", "neg": "(-({0}))", "sqrt": "wrt_sqrtf({0})", "shl23": "wrt_shl23({0})",
    },
    prelude=_SCALAR_PRELUDE,
    notes=("plain C, no libc (wasm scalar build and the portable native fallback)",),
)

_WASM_OPS = {
    "zero": "wasm_f32x4_const_splat(0.0f)", "dup": "wasm_f32x4_splat({0})", "load": "wasm_v128_load({0})",
    "loaddup": "wasm_v128_load32_splat({0})", "store": "wasm_v128_store({0}, {1})",
    "fma": "wasm_f32x4_add(wasm_f32x4_mul({0}, {1}), {2})", "add": "wasm_f32x4_add({0}, {1})",
    "sub": "wasm_f32x4_sub({0}, {1})", "mul": "wasm_f32x4_mul({0}, {1})", "div": "wasm_f32x4_div({0}, {1})",
    "min": "wasm_f32x4_pmin({0}, {1})", "max": "wasm_f32x4_pmax({0}, {1})",
    "sel_lt": "wasm_v128_bitselect({2}, {3}, wasm_f32x4_lt({0}, {1}))",
    "abs": "wasm_f32x4_abs({0})", "neg": "wasm_f32x4_neg({0})", "sqrt": "wasm_f32x4_sqrt({0})",
    "shl23": "wasm_i32x4_shl({0}, 23)",
}

WASM_SIMD128 = Isa(
    name="wasm_simd128", vl=4, vtype="v128_t", includes=("wasm_simd128.h",), gemm_tile=(4, 8), dw_ct=8,
    dw_px=3, dw_unroll=False,
    ops=_WASM_OPS,
    notes=("f32x4.pmin/pmax for clamps (one minps/maxps on x86 hosts)", "multiply-add = f32x4.mul + f32x4.add"),
)

WASM_RELAXED = Isa(
    name="wasm_relaxed", vl=4, vtype="v128_t", includes=("wasm_simd128.h",), gemm_tile=(4, 8), dw_ct=8,
    dw_px=3, dw_unroll=False,
    ops={**_WASM_OPS,
         "fma": "wasm_f32x4_relaxed_madd({0}, {1}, {2})",
         # the mask is all-ones/all-zeros per lane, where laneselect is defined (blendvps on x86)
         "sel_lt": "wasm_i32x4_relaxed_laneselect({2}, {3}, wasm_f32x4_lt({0}, {1}))"},
    notes=("f32x4.relaxed_madd: fused on FMA hosts, mul+add elsewhere",),
)

AVX2 = Isa(
    name="avx2", vl=8, vtype="__m256", includes=("immintrin.h",), attr='__attribute__((target("avx2,fma")))',
    gemm_tile=(6, 16), dw_ct=16, gemm_prefetch=1024,
    ops={
        "zero": "_mm256_setzero_ps()", "dup": "_mm256_set1_ps({0})", "load": "_mm256_loadu_ps({0})",
        "loaddup": "_mm256_broadcast_ss({0})", "store": "_mm256_storeu_ps({0}, {1})",
        "fma": "_mm256_fmadd_ps({0}, {1}, {2})", "add": "_mm256_add_ps({0}, {1})", "sub": "_mm256_sub_ps({0}, {1})",
        "mul": "_mm256_mul_ps({0}, {1})", "div": "_mm256_div_ps({0}, {1})",
        "min": "_mm256_min_ps({1}, {0})", "max": "_mm256_max_ps({1}, {0})",
        "sel_lt": "_mm256_blendv_ps({3}, {2}, _mm256_cmp_ps({0}, {1}, _CMP_LT_OQ))",
        "abs": "_mm256_andnot_ps(_mm256_set1_ps(-0.0f), {0})", "neg": "_mm256_xor_ps({0}, _mm256_set1_ps(-0.0f))",
        "sqrt": "_mm256_sqrt_ps({0})",
        "shl23": "_mm256_castsi256_ps(_mm256_slli_epi32(_mm256_castps_si256({0}), 23))",
    },
)

AVX512 = Isa(
    name="avx512", vl=16, vtype="__m512", includes=("immintrin.h",), tail="mask",
    attr='__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma")))', gemm_tile=(8, 32), dw_ct=32,
    gemm_prefetch=1024,
    ops={
        "zero": "_mm512_setzero_ps()", "dup": "_mm512_set1_ps({0})", "load": "_mm512_loadu_ps({0})",
        "loaddup": "_mm512_set1_ps(*({0}))", "store": "_mm512_storeu_ps({0}, {1})",
        "fma": "_mm512_fmadd_ps({0}, {1}, {2})", "add": "_mm512_add_ps({0}, {1})", "sub": "_mm512_sub_ps({0}, {1})",
        "mul": "_mm512_mul_ps({0}, {1})", "div": "_mm512_div_ps({0}, {1})",
        "min": "_mm512_min_ps({1}, {0})", "max": "_mm512_max_ps({1}, {0})",
        "sel_lt": "_mm512_mask_blend_ps(_mm512_cmp_ps_mask({0}, {1}, _CMP_LT_OQ), {3}, {2})",
        "abs": "_mm512_abs_ps({0})",
        "neg": "_mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512({0}), _mm512_set1_epi32(INT32_MIN)))",
        "sqrt": "_mm512_sqrt_ps({0})",
        "shl23": "_mm512_castsi512_ps(_mm512_slli_epi32(_mm512_castps_si512({0}), 23))",
    },
    notes=("partial tiles with masked loads/stores",),
)

NEON = Isa(
    name="neon", vl=4, vtype="float32x4_t", includes=("arm_neon.h",), gemm_tile=(8, 8), dw_ct=8,
    ops={
        "zero": "vdupq_n_f32(0.0f)", "dup": "vdupq_n_f32({0})", "load": "vld1q_f32({0})",
        "loaddup": "vld1q_dup_f32({0})", "store": "vst1q_f32({0}, {1})",
        "fma": "vfmaq_f32({2}, {0}, {1})", "add": "vaddq_f32({0}, {1})", "sub": "vsubq_f32({0}, {1})",
        "mul": "vmulq_f32({0}, {1})", "div": "vdivq_f32({0}, {1})",
        "min": "vminq_f32({0}, {1})", "max": "vmaxq_f32({0}, {1})",
        "sel_lt": "vbslq_f32(vcltq_f32({0}, {1}), {2}, {3})",
        "abs": "vabsq_f32({0})", "neg": "vnegq_f32({0})", "sqrt": "vsqrtq_f32({0})",
        "shl23": "vreinterpretq_f32_s32(vshlq_n_s32(vreinterpretq_s32_f32({0}), 23))",
    },
    notes=("aarch64 only (vdivq/vsqrtq)", "vminq/vmaxq propagate NaN unlike pmin/pmax"),
)

TARGETS: dict[str, Isa] = {t.name: t for t in (SCALAR, WASM_SIMD128, WASM_RELAXED, AVX2, AVX512, NEON)}
