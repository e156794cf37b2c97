"""int8 (QS8) block-sparse GEMM: weights in 1x4 blocks (4 output channels x 1 input column, python_ref/sparse.py),
int32 accumulators and the requantization of the dense int8 GEMM (qgemm.py: y = zy + rne(clamp(f32(acc) * m, lo,
hi))), so a layer gives the bytes of the dense int8 op on the expanded weights on every target.

The engine packs a tile of MR pixels transposed and widened, [K][MR] int16 (qsppack; pixel i of a column at slot
POS[i]), and the stored blocks of a block row two by two: a pair (columns c0, c1) is one int32 per output channel,
w(c0) in its low int16 and w(c1) in its high one (an odd last block pairs with a zero block in its own column).
Per pair the kernel loads the two columns' MR values, interleaves them into int16 pairs (x(c0), x(c1)) per pixel,
and per channel adds one pairwise int16 dot product by the channel's broadcast weight pair (wasm i32x4.dot_i16x8_s,
x86 vpmaddwd: exact int32 sums; NEON: two widening multiply-adds by lane). Accumulators are channel-major: 4 channels
x 2 vectors of VL pixels (MR = 2 VL). The x86 interleave works within 128-bit lanes, so the pack puts pixel 4k + i
(and VL + 4k + i) where the interleave reads them: slot 8k + i (8k + 4 + i), i < 4; elsewhere POS is the identity.
At the end of a block row the 4 x MR requantized values go through a small buffer to the output bytes.
One pixel (FULLY_CONNECTED on one vector) runs the same kernel with mr = 1.

Per block row r of n/4: 4 int32 biases (the input zero point folded in), then 4 int32 weight pairs per pair;
nnz[r] pairs; offs: 2 int32 per pair, the byte offsets of its columns in the tile (column * 2 * MR).
"""

from __future__ import annotations

from dataclasses import dataclass

from kernels_wasm.gen.cwriter import Code
from kernels_wasm.gen.isa import Isa

_SSE_ATTR = {"avx2": '__attribute__((target("avx2,fma")))',
             "avx512": '__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma")))'}


@dataclass(frozen=True)
class QSparseTile:
    """Pixels per tile, and where the int8 sparse kernels start to beat the dense int8 ones on this target: a layer
    of K columns runs sparse from a block sparsity of min_sparsity + k_penalty / K on. First estimates from whole
    MobileNetV1 runs at 90% (docs/dev/kernels-journal.md), not yet a per-layer sweep: AVX-512 with VNNI runs its
    dense int8 GEMM four bytes per lane, so its sparse kernels only just win at 90%."""

    vl: int  # int32 lanes of a vector (MR = 2 VL)
    min_sparsity: float
    k_penalty: float

    @property
    def mr(self) -> int:
        return 2 * self.vl


TILES: dict[str, QSparseTile] = {
    "scalar": QSparseTile(2, 0.3, 0.0),
    "wasm_simd128": QSparseTile(4, 0.5, 8.0),
    "wasm_relaxed": QSparseTile(4, 0.55, 8.0),
    "avx2": QSparseTile(8, 0.6, 8.0),
    "avx512": QSparseTile(16, 0.7, 8.0),
    "neon": QSparseTile(4, 0.5, 8.0),  # not measured (qemu): as wasm
}


def qspmm_name(isa: Isa) -> str:
    return f"wrt_{isa.name}_qspmm_{TILES[isa.name].mr}"


def qsppack_name(isa: Isa) -> str:
    return f"wrt_{isa.name}_qsppack_{TILES[isa.name].mr}"


def slot(isa: Isa, i: int) -> int:
    """Where the pack puts pixel i of a column (x86: where the 128-bit-lane interleave reads it)."""
    vl = TILES[isa.name].vl
    if isa.name not in _SSE_ATTR:
        return i
    half, j = divmod(i, vl)
    return 8 * (j // 4) + 4 * half + j % 4


def _fn(isa: Isa, sig: str) -> str:
    return " ".join(x for x in ("static", _SSE_ATTR.get(isa.name, isa.attr), sig) if x)


# family -> vector type, int16 load, interleave low/high, int32 broadcast load, acc + dot(x, w), int32 store, and the
# requantization: float of int32, float mul, max, min, float broadcast, rne to int32 (with zy: see _requant)
_OPS = {
    "wasm": dict(vt="v128_t", load="wasm_v128_load({0})",
                 lo="wasm_i16x8_shuffle({0}, {1}, 0, 8, 1, 9, 2, 10, 3, 11)",
                 hi="wasm_i16x8_shuffle({0}, {1}, 4, 12, 5, 13, 6, 14, 7, 15)",
                 bcast="wasm_v128_load32_splat({0})", dot="wasm_i32x4_add({0}, wasm_i32x4_dot_i16x8({1}, {2}))",
                 store="wasm_v128_store({0}, {1});"),
    "avx2": dict(vt="__m256i", load="_mm256_loadu_si256((const __m256i*)(const void*)({0}))",
                 lo="_mm256_unpacklo_epi16({0}, {1})", hi="_mm256_unpackhi_epi16({0}, {1})",
                 bcast="_mm256_set1_epi32(*({0}))", dot="_mm256_add_epi32({0}, _mm256_madd_epi16({1}, {2}))",
                 store="_mm256_storeu_si256((__m256i*)(void*)({0}), {1});"),
    "avx512": dict(vt="__m512i", load="_mm512_loadu_si512({0})",
                   lo="_mm512_unpacklo_epi16({0}, {1})", hi="_mm512_unpackhi_epi16({0}, {1})",
                   bcast="_mm512_set1_epi32(*({0}))", dot="_mm512_add_epi32({0}, _mm512_madd_epi16({1}, {2}))",
                   store="_mm512_storeu_si512((void*)({0}), {1});"),
    "neon": dict(vt="int32x4_t", bcast="vld1q_dup_s32({0})", store="vst1q_s32({0}, {1});"),
}


def _family(isa: Isa) -> str:
    return "wasm" if isa.name.startswith("wasm") else isa.name


def _requant(isa: Isa, acc: str) -> str:
    """acc (int32 vector) -> zy + rne(clamp(f32(acc) * mq, lo, hi)) as int32, by qgemm's float steps."""
    f = _family(isa)
    if f == "wasm":  # rne by the magic 1.5 * 2^23 (|f| <= 255 after the clamp), as qgemm
        v = f"wasm_f32x4_pmin(wasm_f32x4_pmax(wasm_f32x4_mul(wasm_f32x4_convert_i32x4({acc}), mq), qlo), qhi)"
        return f"wasm_i32x4_sub(wasm_f32x4_add({v}, qmagic), qmz)"
    if f == "avx2":
        v = f"_mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(_mm256_cvtepi32_ps({acc}), mq), qlo), qhi)"
        return f"_mm256_add_epi32(_mm256_cvtps_epi32({v}), qzy)"
    if f == "avx512":
        v = f"_mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(_mm512_cvtepi32_ps({acc}), mq), qlo), qhi)"
        return f"_mm512_add_epi32(_mm512_cvtps_epi32({v}), qzy)"
    v = f"vminq_f32(vmaxq_f32(vmulq_f32(vcvtq_f32_s32({acc}), mq), qlo), qhi)"
    return f"vaddq_s32(vcvtnq_s32_f32({v}), qzy)"


def _bounds(isa: Isa) -> list[str]:
    f = _family(isa)
    if f == "wasm":
        return ["const v128_t qlo = wasm_f32x4_splat(p->lo), qhi = wasm_f32x4_splat(p->hi);",
                "const v128_t qmagic = wasm_f32x4_const_splat(12582912.0f);",
                "const v128_t qmz = wasm_i32x4_splat(0x4B400000 - p->zy);"]
    ft, it, dup, idup = {"avx2": ("__m256", "__m256i", "_mm256_set1_ps", "_mm256_set1_epi32"),
                         "avx512": ("__m512", "__m512i", "_mm512_set1_ps", "_mm512_set1_epi32"),
                         "neon": ("float32x4_t", "int32x4_t", "vdupq_n_f32", "vdupq_n_s32")}[f]
    return [f"const {ft} qlo = {dup}(p->lo), qhi = {dup}(p->hi);", f"const {it} qzy = {idup}(p->zy);"]


def _mult(isa: Isa, j: int) -> str:
    f = _family(isa)
    return {"wasm": f"const v128_t mq = wasm_v128_load32_splat(mult + r + {j});",
            "avx2": f"const __m256 mq = _mm256_set1_ps(mult[r + {j}]);",
            "avx512": f"const __m512 mq = _mm512_set1_ps(mult[r + {j}]);",
            "neon": f"const float32x4_t mq = vld1q_dup_f32(mult + r + {j});"}[f]


def _store_bytes(c: Code, mr: int) -> None:
    """The block row's 4 x MR int32 outputs (t[j * MR + i]) to the n - r (< 4: fewer) channels of the mr pixels."""
    c("const size_t nleft = n - r < 4 ? n - r : 4;", "int8_t* yo = y + r;")
    with c.block("if (nleft == 4)"), c.block("for (size_t i = 0; i < mr; i++, yo += y_stride)"):
        c(*(f"yo[{j}] = (int8_t)t[{j * mr} + i];" for j in range(4)))
    with c.block("else"), c.block("for (size_t i = 0; i < mr; i++, yo += y_stride)"):
        c(f"for (size_t j = 0; j < nleft; j++) yo[j] = (int8_t)t[j * {mr} + i];")


SIG = ("void {name}(size_t mr, size_t n, const int16_t* x, const int32_t* restrict nnz, const int32_t* restrict offs, "
       "const int32_t* restrict w, const float* restrict mult, int8_t* y, size_t y_stride, const wrt_qparams* p)")


def _scalar(c: Code, mr: int) -> None:
    c("const float qlo = p->lo, qhi = p->hi;", "const char* xb = (const char*)x;")
    with c.block("for (size_t r = 0; r < n; r += 4)"):
        c(f"int32_t t[{4 * mr}];")
        c(*(f"for (size_t i = 0; i < {mr}; i++) t[{j * mr} + i] = w[{j}];" for j in range(4)), "w += 4;")
        with c.block("for (int32_t k = *nnz++; k > 0; k--, offs += 2, w += 4)"):
            c("const int16_t* x0 = (const int16_t*)(const void*)(xb + (size_t)offs[0]);",
              "const int16_t* x1 = (const int16_t*)(const void*)(xb + (size_t)offs[1]);")
            for j in range(4):
                c(f"const int32_t a{j} = (int16_t)(uint16_t)(uint32_t)w[{j}], "
                  f"b{j} = (int16_t)(uint16_t)((uint32_t)w[{j}] >> 16);")
            with c.block(f"for (size_t i = 0; i < {mr}; i++)"):
                c("const int32_t u = x0[i], v = x1[i];")
                c(*(f"t[{j * mr} + i] += u * a{j} + v * b{j};" for j in range(4)))
        with c.block(f"for (size_t e = 0; e < {4 * mr}; e++)"):
            c(f"float f = (float)t[e] * mult[r + e / {mr}];", "f = f < qlo ? qlo : f;", "f = f > qhi ? qhi : f;",
              "const float rn = f + 12582912.0f;", "t[e] = (int32_t)(rn - 12582912.0f) + p->zy;")
        _store_bytes(c, mr)


def _vector(isa: Isa, c: Code, mr: int) -> None:
    f = _family(isa)
    o = _OPS[f]
    vt = o["vt"]
    c(*_bounds(isa), "const char* xb = (const char*)x;")
    with c.block("for (size_t r = 0; r < n; r += 4)"):
        c(f"int32_t t[{4 * mr}] __attribute__((aligned(64)));")
        c(*(f"{vt} acc{j}_{h} = {o['bcast'].format(f'w + {j}')};" for j in range(4) for h in range(2)), "w += 4;")
        with c.block("for (int32_t k = *nnz++; k > 0; k--, offs += 2, w += 4)"):
            x0, x1 = "(const void*)(xb + (size_t)offs[0])", "(const void*)(xb + (size_t)offs[1])"
            if f == "neon":
                c(f"const int16x8_t x0 = vld1q_s16((const int16_t*){x0});",
                  f"const int16x8_t x1 = vld1q_s16((const int16_t*){x1});",
                  "const int16x8_t wv = vreinterpretq_s16_s32(vld1q_s32(w));")
                for j in range(4):
                    c(f"acc{j}_0 = vmlal_laneq_s16(acc{j}_0, vget_low_s16(x0), wv, {2 * j});",
                      f"acc{j}_0 = vmlal_laneq_s16(acc{j}_0, vget_low_s16(x1), wv, {2 * j + 1});",
                      f"acc{j}_1 = vmlal_high_laneq_s16(acc{j}_1, x0, wv, {2 * j});",
                      f"acc{j}_1 = vmlal_high_laneq_s16(acc{j}_1, x1, wv, {2 * j + 1});")
            else:
                c(f"const {vt} x0 = {o['load'].format(x0)};", f"const {vt} x1 = {o['load'].format(x1)};",
                  f"const {vt} xl = {o['lo'].format('x0', 'x1')};", f"const {vt} xh = {o['hi'].format('x0', 'x1')};")
                for j in range(4):
                    c(f"const {vt} w{j} = {o['bcast'].format(f'w + {j}')};",
                      f"acc{j}_0 = {o['dot'].format(f'acc{j}_0', 'xl', f'w{j}')};",
                      f"acc{j}_1 = {o['dot'].format(f'acc{j}_1', 'xh', f'w{j}')};")
        for j in range(4):
            with c.block(""):
                c(_mult(isa, j))
                c(*(o["store"].format(f"t + {j * mr + h * mr // 2}", _requant(isa, f"acc{j}_{h}")) for h in range(2)))
        _store_bytes(c, mr)


def qspmm(isa: Isa) -> str:
    mr = TILES[isa.name].mr
    c = Code()
    with c.block(_fn(isa, SIG.format(name=qspmm_name(isa)))):
        if isa.vl == 1:
            _scalar(c, mr)
        else:
            _vector(isa, c, mr)
    return c.text()


def qsppack(isa: Isa) -> str:
    """[ks*kc][MR] int16 from ks*mr tap pointers (ind[t*mr + i]); pixel i at slot POS[i], pixels past mr repeat the
    last."""
    mr = TILES[isa.name].mr
    c = Code()
    sig = (f"void {qsppack_name(isa)}(size_t mr, size_t kc, size_t ks, const int8_t* const* ind, "
           "int16_t* restrict out)")
    with c.block(_fn(isa, sig)):
        pos = ", ".join(str(slot(isa, i)) for i in range(mr))
        c(f"static const uint8_t pos[{mr}] = {{{pos}}};")
        with c.block("for (size_t t = 0; t < ks; t++, ind += mr)"), c.block(f"for (size_t i = 0; i < {mr}; i++)"):
            c("const int8_t* src = ind[i < mr ? i : mr - 1];", f"int16_t* o = out + t * kc * {mr} + pos[i];")
            c(f"for (size_t k = 0; k < kc; k++) o[k * {mr}] = src[k];")
    return c.text()


def kernel_bodies(isa: Isa) -> list[str]:
    return [qspmm(isa), qsppack(isa)]


def table_fields(isa: Isa) -> list[str]:
    t = TILES[isa.name]
    return [f"  .qspmm_mr = {t.mr}, .qspmm_min_sparsity = {t.min_sparsity}f, .qspmm_k_penalty = {t.k_penalty}f,",
            f"  .qspmm = {qspmm_name(isa)}, .qsppack = {qsppack_name(isa)},"]
