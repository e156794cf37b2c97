"""int8 ADD/SUB (wrt_qadd_fn): XNNPACK's fixed-point add of python_ref/quant.py, in int32 with wrap-around,
    y[i] = zy + clamp((bias + ma * a[i] + mb * b[i]) >> shift, lo, hi)
W elements per step (bytes widened to int32 lanes, multiplied, arithmetically shifted, clamped, narrowed); the
n % W last ones run the same formula in scalar C. The *_scalar form reads b[0] once and folds mb * b[0] into the bias.
"""

from __future__ import annotations

from kernels_wasm.gen.cwriter import Code
from kernels_wasm.gen.kernels.qgemm import QTile


def qadd_name(t: QTile, scalar_b: bool) -> str:
    return f"wrt_{t.name}_qadd{'_scalar' if scalar_b else ''}"


_SCALAR_STEP = ("const uint32_t s = bias + (uint32_t)p->ma * (uint32_t)(int32_t)a[i]{b};",
                "int32_t v = (int32_t)s >> p->shift;",
                "v = v < p->lo ? p->lo : v > p->hi ? p->hi : v;",
                "y[i] = (int8_t)(v + p->zy);")


def _vector(t: QTile, scalar_b: bool) -> tuple[int, list[str], list[str]]:
    """(W, setup lines, body lines for elements i..i+W) of target t; body empty: scalar only."""
    n = t.name
    if n.startswith("wasm"):
        def half(h: str, v: str) -> str:
            s = f"wasm_i32x4_add(vbias, wasm_i32x4_mul(wasm_i32x4_extend_{h}_i16x8(a16), vma))"
            if not scalar_b:
                s = f"wasm_i32x4_add({s}, wasm_i32x4_mul(wasm_i32x4_extend_{h}_i16x8(b16), vmb))"
            return (f"const v128_t {v} = wasm_i32x4_add(wasm_i32x4_min(wasm_i32x4_max(wasm_i32x4_shr({s}, sh), vlo), "
                    "vhi), vzy);")
        setup = ["const v128_t vbias = wasm_i32x4_splat((int32_t)bias);",
                 "const v128_t vma = wasm_i32x4_splat(p->ma);",
                 "const v128_t vmb = wasm_i32x4_splat(p->mb);",
                 "const v128_t vlo = wasm_i32x4_splat(p->lo);",
                 "const v128_t vhi = wasm_i32x4_splat(p->hi);",
                 "const v128_t vzy = wasm_i32x4_splat(p->zy);",
                 "const uint32_t sh = (uint32_t)p->shift;"]
        body = ["const v128_t a16 = wasm_i16x8_load8x8(a + i);",
                *([] if scalar_b else ["const v128_t b16 = wasm_i16x8_load8x8(b + i);"]),
                half("low", "lo"), half("high", "hi"),
                "const v128_t h = wasm_i16x8_narrow_i32x4(lo, hi);",
                "wasm_v128_store64_lane(y + i, wasm_i8x16_narrow_i16x8(h, h), 0);"]
        return 8, setup, body
    if n == "avx2":
        def part(k: int) -> str:
            s = (f"_mm256_add_epi32(vbias, _mm256_mullo_epi32(_mm256_cvtepi8_epi32(_mm_loadl_epi64("
                 f"(const __m128i*)(a + i + {8 * k}))), vma))")
            if not scalar_b:
                s = (f"_mm256_add_epi32({s}, _mm256_mullo_epi32(_mm256_cvtepi8_epi32(_mm_loadl_epi64("
                     f"(const __m128i*)(b + i + {8 * k}))), vmb))")
            return (f"const __m256i q{k} = _mm256_add_epi32(_mm256_min_epi32(_mm256_max_epi32(_mm256_sra_epi32({s}, "
                    "sh), vlo), vhi), vzy);")
        setup = ["const __m256i vbias = _mm256_set1_epi32((int32_t)bias);",
                 "const __m256i vma = _mm256_set1_epi32(p->ma);",
                 "const __m256i vmb = _mm256_set1_epi32(p->mb);",
                 "const __m256i vlo = _mm256_set1_epi32(p->lo);",
                 "const __m256i vhi = _mm256_set1_epi32(p->hi);",
                 "const __m256i vzy = _mm256_set1_epi32(p->zy);",
                 "const __m128i sh = _mm_cvtsi32_si128(p->shift);"]
        body = [part(0), part(1), "const __m256i h = _mm256_permute4x64_epi64(_mm256_packs_epi32(q0, q1), 0xD8);",
                "_mm_storeu_si128((__m128i*)(y + i), _mm_packs_epi16(_mm256_castsi256_si128(h), "
                "_mm256_extracti128_si256(h, 1)));"]
        return 16, setup, body
    if n.startswith("avx512"):
        s = ("_mm512_add_epi32(vbias, _mm512_mullo_epi32(_mm512_cvtepi8_epi32("
             "_mm_loadu_si128((const __m128i*)(a + i))), vma))")
        if not scalar_b:
            s = (f"_mm512_add_epi32({s}, _mm512_mullo_epi32(_mm512_cvtepi8_epi32(_mm_loadu_si128("
                 "(const __m128i*)(b + i))), vmb))")
        setup = ["const __m512i vbias = _mm512_set1_epi32((int32_t)bias);",
                 "const __m512i vma = _mm512_set1_epi32(p->ma);",
                 "const __m512i vmb = _mm512_set1_epi32(p->mb);",
                 "const __m512i vlo = _mm512_set1_epi32(p->lo);",
                 "const __m512i vhi = _mm512_set1_epi32(p->hi);",
                 "const __m512i vzy = _mm512_set1_epi32(p->zy);",
                 "const __m128i sh = _mm_cvtsi32_si128(p->shift);"]
        body = [f"const __m512i q = _mm512_add_epi32(_mm512_min_epi32(_mm512_max_epi32(_mm512_sra_epi32({s}, sh), "
                "vlo), vhi), vzy);", "_mm_storeu_si128((__m128i*)(y + i), _mm512_cvtsepi32_epi8(q));"]
        return 16, setup, body
    if n == "neon":
        def half(h: str, v: str) -> str:
            get = "vget_low_s16" if h == "low" else "vget_high_s16"
            s = f"vmlaq_s32(vbias, vmovl_s16({get}(a16)), vma)"
            if not scalar_b:
                s = f"vmlaq_s32({s}, vmovl_s16({get}(b16)), vmb)"
            return f"const int32x4_t {v} = vaddq_s32(vminq_s32(vmaxq_s32(vshlq_s32({s}, vsh), vlo), vhi), vzy);"
        setup = ["const int32x4_t vbias = vdupq_n_s32((int32_t)bias);",
                 "const int32x4_t vma = vdupq_n_s32(p->ma);",
                 "const int32x4_t vmb = vdupq_n_s32(p->mb);",
                 "const int32x4_t vlo = vdupq_n_s32(p->lo);",
                 "const int32x4_t vhi = vdupq_n_s32(p->hi);",
                 "const int32x4_t vzy = vdupq_n_s32(p->zy);",
                 "const int32x4_t vsh = vdupq_n_s32(-p->shift);"]
        body = ["const int16x8_t a16 = vmovl_s8(vld1_s8(a + i));",
                *([] if scalar_b else ["const int16x8_t b16 = vmovl_s8(vld1_s8(b + i));"]),
                half("low", "lo"), half("high", "hi"),
                "vst1_s8(y + i, vqmovn_s16(vcombine_s16(vqmovn_s32(lo), vqmovn_s32(hi))));"]
        return 8, setup, body
    return 1, [], []


def qadd(t: QTile, scalar_b: bool) -> str:
    c = Code()
    sig = (f"void {qadd_name(t, scalar_b)}(size_t n, const int8_t* a, const int8_t* b, int8_t* y, "
           "const wrt_qadd_params* p)")
    w, setup, body = _vector(t, scalar_b)
    with c.block(t.fn(sig)):
        c("uint32_t bias = (uint32_t)p->bias;")
        if scalar_b:
            c("bias += (uint32_t)p->mb * (uint32_t)(int32_t)b[0];")
        c("size_t i = 0;")
        if body:
            c(*(line for line in setup if not (scalar_b and " vmb = " in line)))
            with c.block(f"for (; i + {w} <= n; i += {w})"):
                c(*body)
        with c.block("for (; i < n; i++)"):
            bterm = "" if scalar_b else " + (uint32_t)p->mb * (uint32_t)(int32_t)b[i]"
            c(*(s.format(b=bterm) for s in _SCALAR_STEP))
    return c.text()
