"""Three planes to interleaved pixels, y[3i + c] = plane_c[i]: the NCHW -> NHWC transpose of an RGB graph input.

A scalar loop does three loads and three stores per pixel. Natively a vector step moves 8 (AVX2, also in the
AVX-512 build) or 4 (NEON: one `st3`) pixels. AVX2: lane l of output vector o (of 3) is pixel (8o + l) / 3 of plane
(8o + l) % 3, and as o goes 0, 1, 2 that plane takes each value once, so one lane permutation per plane puts every
output's value in its lane and each output vector is two blends of the same three registers. The wasm modules keep
the scalar loop (their size budget).
"""

from __future__ import annotations

from kernels_wasm.gen.cwriter import Code
from kernels_wasm.gen.isa import Isa

INTERLEAVE3 = ("avx2", "avx512", "neon")


def interleave3_name(isa: Isa) -> str:
    return f"wrt_{isa.name}_interleave3"


def _plane(o: int, lane: int) -> int:
    return (8 * o + lane) % 3


def _avx2_step(c: Code) -> None:
    for p in range(3):
        idx = [next((8 * o + lane) // 3 for o in range(3) if _plane(o, lane) == p) for lane in range(8)]
        c(f"const __m256 q{p} = _mm256_permutevar8x32_ps(_mm256_loadu_ps(p{p} + i), "
          f"_mm256_setr_epi32({', '.join(map(str, idx))}));")
    for o in range(3):
        m1, m2 = (sum(1 << lane for lane in range(8) if _plane(o, lane) == p) for p in (1, 2))
        c(f"_mm256_storeu_ps(y + 3 * i + {8 * o}, _mm256_blend_ps(_mm256_blend_ps(q0, q1, {m1:#04x}), q2, {m2:#04x}));")


def interleave3(isa: Isa) -> str:
    step = 4 if isa.name == "neon" else 8
    c = Code()
    sig = (f"void {interleave3_name(isa)}(size_t n, const float* p0, const float* p1, const float* p2, "
           "float* restrict y)")
    with c.block(isa.fn(sig)):
        c("size_t i = 0;")
        with c.block(f"for (; i + {step} <= n; i += {step})"):
            if isa.name == "neon":
                c("const float32x4x3_t v = {{vld1q_f32(p0 + i), vld1q_f32(p1 + i), vld1q_f32(p2 + i)}};",
                  "vst3q_f32(y + 3 * i, v);")
            else:
                _avx2_step(c)
        with c.block("for (; i < n; i++)"):
            c("y[3 * i] = p0[i];", "y[3 * i + 1] = p1[i];", "y[3 * i + 2] = p2[i];")
    return c.text()


def table_fields(isa: Isa) -> list[str]:
    return [f"  .interleave3 = {interleave3_name(isa)},"] if isa.name in INTERLEAVE3 else []


def kernel_bodies(isa: Isa) -> list[str]:
    return [interleave3(isa)] if isa.name in INTERLEAVE3 else []
