"""int8 (QS8) depthwise convolution over one output row (wrt_qdwconv_fn): per output pixel and tile of CT channels,
int32 accumulators start at the packed bias (zero point folded in), then per tap the input bytes and int16 weights,
both widened, multiply exactly into int32; the requantization is the GEMM's (kernels/qgemm.py).

A last, partial channel tile copies its < CT input bytes per tap into a zeroed buffer (inputs are never read past
`channels`) and stores its bytes from a buffer; packed weights are padded, so they are read whole.
"""

from __future__ import annotations

from kernels_wasm.gen.cwriter import Code
from kernels_wasm.gen.kernels.qgemm import QTile, _bounds, _mults, _requant, _store_row


def qdwconv_name(t: QTile) -> str:
    return f"wrt_{t.name}_qdwconv_any_c{dw_tile(t).nr}"


def dw_tile(t: QTile) -> QTile:
    """The channel tile as a one-row QTile (nr = CT), so the GEMM's requantization steps apply."""
    ct = {"scalar": 1, "avx2": 16, "avx512": 32, "avx512vnni": 32, "neon": 8}.get(t.name, 8)
    return QTile(t.name, t.attr, 1, ct, 1, t.vli if ct > 1 else 1, t.ivt, t.fvt)


def _mac(d: QTile, x: str, w: str) -> list[str]:
    """acc0_v += x[ch] * w[ch] over the tile: x int8 bytes, w int16 weights (pointers)."""
    n = d.name
    if n == "scalar":
        return [f"acc0_0 += (int32_t){x}[0] * (int32_t){w}[0];"]
    if n.startswith("wasm"):
        out = []
        for g in range(d.nv // 2):
            out += [f"{{ const v128_t xv = wasm_i16x8_load8x8({x} + {8 * g});",
                    f"  const v128_t wv = wasm_v128_load({w} + {8 * g});",
                    f"  acc0_{2 * g} = wasm_i32x4_add(acc0_{2 * g}, wasm_i32x4_extmul_low_i16x8(xv, wv));",
                    f"  acc0_{2 * g + 1} = wasm_i32x4_add(acc0_{2 * g + 1}, wasm_i32x4_extmul_high_i16x8(xv, wv)); }}"]
        return out
    if n == "avx2":
        return [f"acc0_{v} = _mm256_add_epi32(acc0_{v}, _mm256_mullo_epi32("
                f"_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i*)({x} + {8 * v}))), "
                f"_mm256_cvtepi16_epi32(_mm_loadu_si128((const __m128i*)({w} + {8 * v})))));" for v in range(d.nv)]
    if n.startswith("avx512"):
        return [f"acc0_{v} = _mm512_add_epi32(acc0_{v}, _mm512_mullo_epi32("
                f"_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i*)({x} + {16 * v}))), "
                f"_mm512_cvtepi16_epi32(_mm256_loadu_si256((const __m256i*)({w} + {16 * v})))));"
                for v in range(d.nv)]
    if n == "neon":
        out = []
        for g in range(d.nv // 2):
            out += [f"{{ const int16x8_t xv = vmovl_s8(vld1_s8({x} + {8 * g}));",
                    f"  const int16x8_t wv = vld1q_s16({w} + {8 * g});",
                    f"  acc0_{2 * g} = vmlal_s16(acc0_{2 * g}, vget_low_s16(xv), vget_low_s16(wv));",
                    f"  acc0_{2 * g + 1} = vmlal_high_s16(acc0_{2 * g + 1}, xv, wv); }}"]
        return out
    raise KeyError(n)


def _acc_init(d: QTile) -> list[str]:
    p = "wb + {}"
    ld = {"scalar": "wb[{}]", "avx2": "_mm256_loadu_si256((const __m256i*)(wb + {}))",
          "avx512": "_mm512_loadu_si512(wb + {})", "neon": "vld1q_s32(wb + {})"}
    n = "avx512" if d.name.startswith("avx512") else d.name
    tmpl = ld.get(n, "wasm_v128_load(" + p + ")")
    return [f"{d.ivt} acc0_{v} = {tmpl.format(v * d.vli)};" for v in range(d.nv)]


def qdwconv(t: QTile) -> str:
    d = dw_tile(t)
    c = Code()
    sig = (f"void {qdwconv_name(t)}(size_t channels, size_t width, size_t ks, const int8_t* const* in, "
           "const void* packed_w, int8_t* out, size_t out_stride, const wrt_qparams* p)")
    with c.block(d.fn(sig)):
        c(*_bounds(d))
        _pixels(c, d)
    return c.text()


def _pixels(c: Code, d: QTile) -> None:
    ct = d.nr
    with c.block("for (size_t px = 0; px < width; px++, in += ks, out += out_stride)"):
        c("const char* pw = (const char*)packed_w;")
        with c.block(f"for (size_t c0 = 0; c0 < channels; c0 += {ct}, pw += {ct} * (8 + 2 * ks))"):
            c(f"const size_t rem = channels - c0 < {ct} ? channels - c0 : {ct};")
            c("const int32_t* wb = (const int32_t*)(const void*)pw;")
            c(*_acc_init(d))
            c(f"const int16_t* wt = (const int16_t*)(const void*)(pw + {8 * ct});")
            with c.block(f"if (rem == {ct})"), c.block(f"for (size_t t = 0; t < ks; t++, wt += {ct})"):
                c("const int8_t* x = in[t] + c0;", *_mac(d, "x", "wt"))
            with c.block("else"), c.block(f"for (size_t t = 0; t < ks; t++, wt += {ct})"):
                c(f"int8_t xb[{ct}];", f"for (size_t j = 0; j < {ct}; j++) xb[j] = j < rem ? in[t][c0 + j] : 0;",
                  *_mac(d, "xb", "wt"))
            c(*_mults(d, "pw"))
            for v in range(d.nv):
                c(*_requant(d, 0, v))
            with c.block(f"if (rem == {ct})"):
                c(*_store_row(d, 0, "(out + c0)"))
            with c.block("else"):
                c(f"int8_t ob[{ct}];", *_store_row(d, 0, "ob"), "for (size_t j = 0; j < rem; j++) out[c0 + j] = ob[j];")
