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

from collections.abc import Callable
from dataclasses import dataclass

from kernels_wasm.gen.cwriter import Code
from kernels_wasm.gen.isa import Isa
from kernels_wasm.gen.kernels import qgemm

_SSE_ATTR = {"avx2": '__attribute__((target("avx2,fma")))',
             "avx512": '__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma")))',
             "avx512vnni": qgemm._VNNI_ATTR}


@dataclass(frozen=True)
class QSparseTile:
    """Pixels per tile, and where the int8 sparse kernels start to beat the dense int8 ones on this target: a layer
    of K columns runs sparse from a block sparsity of min_sparsity + k_penalty / K on. x86: from the per-layer sweep
    on MobileNetV1's layer shapes (`wasmrt bench --sparsity-sweep --int8 layers`, docs/dev/kernels-journal.md): AVX2
    and AVX-512 win from the lowest sparsity the converter stores block-sparse (about 0.55) at every K; AVX-512 VNNI,
    whose dense int8 GEMM runs 4 multiply-adds per byte lane, from 0.6-0.7 at K = 128 and not at K = 32. wasm (the
    same sweep in Chromium, whose wall clock spreads widely): both win from 0.6 at K >= 128; at K = 32 SIMD128 about
    breaks even and relaxed loses (its dense int8 GEMM has the relaxed dot product). NEON: not measured (qemu), as
    wasm SIMD128."""

    vl: int  # int32 lanes of a vector
    min_sparsity: float
    k_penalty: float
    kr: int = 2  # blocks per group: 2 (int16 pairs, pairwise dot products), 4 (byte quads, VNNI vpdpbusd)

    @property
    def mr(self) -> int:
        """Pixels per tile: the kr columns of a group interleave into kr vectors of accumulators per channel."""
        return self.kr * self.vl

    @property
    def xoff(self) -> int:
        """Added to the activations by the kernel: vpdpbusd reads them as unsigned bytes (x + 128)."""
        return 128 if self.kr == 4 else 0

    @property
    def xbytes(self) -> int:
        """Bytes per packed activation: int16 for pairs, the byte x + 128 for quads."""
        return 2 if self.kr == 2 else 1


TILES: dict[str, QSparseTile] = {
    "scalar": QSparseTile(2, 0.3, 0.0),
    "wasm_simd128": QSparseTile(4, 0.5, 8.0),
    "wasm_relaxed": QSparseTile(4, 0.55, 12.0),
    "avx2": QSparseTile(8, 0.5, 2.0),
    "avx512": QSparseTile(16, 0.5, 2.0),
    "avx512vnni": QSparseTile(16, 0.5, 16.0, kr=4),
    "neon": QSparseTile(4, 0.5, 8.0),  # not measured (qemu): as wasm
}


def _key(isa: Isa, table: str | None = None) -> str:
    """The TILES entry of a kernel table: its own (AVX-512 VNNI) or its target's."""
    return table if table in TILES else isa.name


def keys(isa: Isa) -> list[str]:
    """The sparse int8 kernels of a target's file: its own, and its other tables' (AVX-512: VNNI)."""
    return [isa.name, *(n for n, _ in qgemm.tables(isa) if n in TILES and n != isa.name)]


def qspmm_name(key: str) -> str:
    return f"wrt_{key}_qspmm_{TILES[key].mr}"


def qsppack_name(key: str) -> str:
    return f"wrt_{key}_qsppack_{TILES[key].mr}"


def slot(key: str, i: int) -> int:
    """Where the pack puts pixel i of a column: where the x86 interleave (within 128-bit lanes) reads it. Pairs:
    pixel 4k + i (VL + 4k + i) at slot 8k + i (8k + 4 + i); quads: pixel 16v + 4l + e at slot 16l + 4v + e."""
    t = TILES[key]
    if key not in _SSE_ATTR:
        return i
    if t.kr == 4:
        v, r = divmod(i, 16)
        return 16 * (r // 4) + 4 * v + r % 4
    half, j = divmod(i, t.vl)
    return 8 * (j // 4) + 4 * half + j % 4


def _fn(key: str, isa: Isa, sig: str) -> str:
    return " ".join(x for x in ("static", _SSE_ATTR.get(key, isa.attr), sig) if x)


# family -> vector type, int16 load, interleave low/high, int32 broadcast load, acc + dot(x, w), int32 store, and the
# bytes of 4 int32 vectors (values in [-128, 127]) as one int32 per lane: and, shift left, logical shift right, or
_OPS = {
    "wasm": dict(vt="v128_t", load="wasm_v128_load({0})",
                 lo="wasm_i16x8_shuffle({0}, {1}, 0, 8, 1, 9, 2, 10, 3, 11)",
                 hi="wasm_i16x8_shuffle({0}, {1}, 4, 12, 5, 13, 6, 14, 7, 15)",
                 bcast="wasm_v128_load32_splat({0})", dot="wasm_i32x4_add({0}, wasm_i32x4_dot_i16x8({1}, {2}))",
                 store="wasm_v128_store({0}, {1});", band="wasm_v128_and({0}, wasm_i32x4_splat(255))",
                 shl="wasm_i32x4_shl({0}, {1})", shr="wasm_u32x4_shr({0}, {1})", bor="wasm_v128_or({0}, {1})"),
    "avx2": dict(vt="__m256i", load="_mm256_loadu_si256((const __m256i*)(const void*)({0}))",
                 lo="_mm256_unpacklo_epi16({0}, {1})", hi="_mm256_unpackhi_epi16({0}, {1})",
                 bcast="_mm256_set1_epi32(*({0}))", dot="_mm256_add_epi32({0}, _mm256_madd_epi16({1}, {2}))",
                 store="_mm256_storeu_si256((__m256i*)(void*)({0}), {1});",
                 band="_mm256_and_si256({0}, _mm256_set1_epi32(255))", shl="_mm256_slli_epi32({0}, {1})",
                 shr="_mm256_srli_epi32({0}, {1})", bor="_mm256_or_si256({0}, {1})"),
    "avx512": dict(vt="__m512i", load="_mm512_loadu_si512({0})",
                   lo="_mm512_unpacklo_epi16({0}, {1})", hi="_mm512_unpackhi_epi16({0}, {1})",
                   bcast="_mm512_set1_epi32(*({0}))", dot="_mm512_add_epi32({0}, _mm512_madd_epi16({1}, {2}))",
                   store="_mm512_storeu_si512((void*)({0}), {1});",
                   band="_mm512_and_si512({0}, _mm512_set1_epi32(255))", shl="_mm512_slli_epi32({0}, {1})",
                   shr="_mm512_srli_epi32({0}, {1})", bor="_mm512_or_si512({0}, {1})"),
    "neon": dict(vt="int32x4_t", bcast="vld1q_dup_s32({0})", store="vst1q_s32({0}, {1});",
                 band="vandq_s32({0}, vdupq_n_s32(255))", shl="vshlq_n_s32({0}, {1})",
                 shr="vreinterpretq_s32_u32(vshrq_n_u32(vreinterpretq_u32_s32({0}), {1}))", bor="vorrq_s32({0}, {1})"),
}


def _family(key: str) -> str:
    return "wasm" if key.startswith("wasm") else "avx512" if key.startswith("avx512") else key


def _requant(key: str, acc: str) -> str:
    """acc (int32 vector) -> zy + rne(clamp(f32(acc) * mq, lo, hi)) as int32, by qgemm's float steps."""
    f = _family(key)
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


def _bounds(key: str) -> list[str]:
    f = _family(key)
    if f == "wasm":
        return ["const v128_t qlo = wasm_f32x4_splat(p->lo), qhi = wasm_f32x4_splat(p->hi);",
                "const v128_t qmagic = wasm_f32x4_const_splat(12582912.0f);",
                "const v128_t qmz = wasm_i32x4_splat(0x4B400000 - p->zy);"]
    ft, it, dup, idup = {"avx2": ("__m256", "__m256i", "_mm256_set1_ps", "_mm256_set1_epi32"),
                         "avx512": ("__m512", "__m512i", "_mm512_set1_ps", "_mm512_set1_epi32"),
                         "neon": ("float32x4_t", "int32x4_t", "vdupq_n_f32", "vdupq_n_s32")}[f]
    return [f"const {ft} qlo = {dup}(p->lo), qhi = {dup}(p->hi);", f"const {it} qzy = {idup}(p->zy);"]


def _mults(key: str) -> list[str]:
    f = _family(key)
    return [{"wasm": f"const v128_t mq{j} = wasm_v128_load32_splat(mult + r + {j});",
             "avx2": f"const __m256 mq{j} = _mm256_set1_ps(mult[r + {j}]);",
             "avx512": f"const __m512 mq{j} = _mm512_set1_ps(mult[r + {j}]);",
             "neon": f"const float32x4_t mq{j} = vld1q_dup_f32(mult + r + {j});"}[f] for j in range(4)]


def _store_words(c: Code, key: str, accs: list[list[str]], guard: str | None = None) -> None:
    """Requantize the block row's accumulators (accs[h][j]: channel j, pixels h * VL..) into t: pixel i's 4 output
    bytes (channel j in byte j) as the int32 t[i]."""
    o = _OPS[_family(key)]
    vl = TILES[key].vl
    for h, acc in enumerate(accs):
        with c.block(f"if ({guard.format(h)})" if guard and h else ""):
            c(*(f"const {o['vt']} v{j} = {_requant(key, acc[j]).replace('mq', f'mq{j}')};" for j in range(4)))
            b1 = o["shr"].format(o["shl"].format("v1", 24), 16)
            b2 = o["shr"].format(o["shl"].format("v2", 24), 8)
            b3 = o["shl"].format("v3", 24)
            word = o["bor"].format(o["bor"].format(o["band"].format("v0"), b1), o["bor"].format(b2, b3))
            c(o["store"].format(f"t + {h * vl}", word))


def _store_bytes(c: Code, mr: int | None = None, words: bool = False) -> None:
    """The block row's outputs to the n - r (< 4: fewer) channels of the mr pixels: from t[j * MR + i] (scalar), or
    from pixel i's 4 bytes in t[i] (vector targets: one 4-byte store per pixel)."""
    c("const size_t nleft = n - r < 4 ? n - r : 4;", "int8_t* yo = y + r;")
    if words:
        with c.block("if (nleft == 4)"), c.block("for (size_t i = 0; i < mr; i++, yo += y_stride)"):
            c("__builtin_memcpy(yo, t + i, 4);")
        with c.block("else"), c.block("for (size_t i = 0; i < mr; i++, yo += y_stride)"):
            c("for (size_t j = 0; j < nleft; j++) yo[j] = (int8_t)(t[i] >> (8 * j));")
        return
    with c.block("if (nleft == 4)"), c.block("for (size_t i = 0; i < mr; i++, yo += y_stride)"):
        c(*(f"yo[{j}] = (int8_t)t[{j * mr} + i];" for j in range(4)))
    with c.block("else"), c.block("for (size_t i = 0; i < mr; i++, yo += y_stride)"):
        c(f"for (size_t j = 0; j < nleft; j++) yo[j] = (int8_t)t[j * {mr} + i];")


SIG = ("void {name}(size_t mr, size_t n, const void* x, const int32_t* restrict nnz, const int32_t* restrict offs, "
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


def _vector(key: str, c: Code, mr: int) -> None:
    f = _family(key)
    o = _OPS[f]
    vt = o["vt"]
    c(*_bounds(key), "const char* xb = (const char*)x;")
    with c.block("for (size_t r = 0; r < n; r += 4)"):
        c(f"int32_t t[{mr}] __attribute__((aligned(64)));")
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
        c(*_mults(key))
        _store_words(c, key, [[f"acc{j}_{h}" for j in range(4)] for h in range(2)])
        _store_bytes(c, words=True)


def _vnni(key: str, c: Code) -> None:
    """Quads: the 4 columns' 64 bytes (x + 128) interleave into 4 vectors of 16 pixels x 4 bytes (two unpack steps
    within 128-bit lanes), each multiplied into the 4 channels' broadcast weight quads by vpdpbusd. Tiles of at most
    32 (16) pixels interleave and multiply only the vectors they use."""
    c(*_bounds(key), "const char* xb = (const char*)x;", "const size_t nv = (mr + 15) / 16;")
    with c.block("for (size_t r = 0; r < n; r += 4)"):
        c("int32_t t[64] __attribute__((aligned(64)));")
        c(*(f"__m512i acc{j}_{u} = _mm512_set1_epi32(w[{j}]);" for j in range(4) for u in range(4)), "w += 4;")
        for head, nq in (("if (nv > 2)", 4), ("else if (nv == 2)", 2), ("else", 1)):
            with c.block(head), c.block("for (int32_t k = *nnz; k > 0; k--, offs += 4, w += 4)"):
                c(*(f"const __m512i c{b} = _mm512_loadu_si512((const void*)(xb + (size_t)offs[{b}]));"
                    for b in range(4)))
                c("const __m512i a01l = _mm512_unpacklo_epi8(c0, c1), a23l = _mm512_unpacklo_epi8(c2, c3);")
                if nq == 4:
                    c("const __m512i a01h = _mm512_unpackhi_epi8(c0, c1), a23h = _mm512_unpackhi_epi8(c2, c3);")
                qs = ["_mm512_unpacklo_epi16(a01l, a23l)", "_mm512_unpackhi_epi16(a01l, a23l)",
                      "_mm512_unpacklo_epi16(a01h, a23h)", "_mm512_unpackhi_epi16(a01h, a23h)"][:nq]
                c(*(f"const __m512i q{u} = {q};" for u, q in enumerate(qs)))
                for j in range(4):
                    c(f"const __m512i w{j} = _mm512_set1_epi32(w[{j}]);",
                          *(f"acc{j}_{u} = _mm512_dpbusd_epi32(acc{j}_{u}, q{u}, w{j});" for u in range(nq)))
        c("nnz++;")
        c(*_mults(key))
        _store_words(c, key, [[f"acc{j}_{u}" for j in range(4)] for u in range(4)], guard="nv > {0}")
        _store_bytes(c, words=True)


def qspmm(isa: Isa, key: str) -> str:
    mr = TILES[key].mr
    c = Code()
    with c.block(_fn(key, isa, SIG.format(name=qspmm_name(key)))):
        if isa.vl == 1:
            _scalar(c, mr)
        elif TILES[key].kr == 4:
            _vnni(key, c)
        else:
            _vector(key, c, mr)
    return c.text()


def _x86_unpack(width: int, part: str, a: str, b: str) -> str:
    return f"_mm_unpack{part}_epi{width}({a}, {b})"


def _wasm_unpack(width: int, part: str, a: str, b: str) -> str:
    n = 128 // width
    idx = [k // 2 + (n if k % 2 else 0) + (n // 2 if part == "hi" else 0) for k in range(n)]
    return f"wasm_i{width}x{n}_shuffle({a}, {b}, {', '.join(map(str, idx))})"


def _neon_unpack(width: int, part: str, a: str, b: str) -> str:
    z = "vzip1q" if part == "lo" else "vzip2q"
    if width == 8:
        return f"{z}_s8({a}, {b})"
    return f"vreinterpretq_s8_s{width}({z}_s{width}(vreinterpretq_s{width}_s8({a}), vreinterpretq_s{width}_s8({b})))"


def _transpose(c: Code, rows: int, vt: str, unpack: Callable[[int, str, str, str], str]) -> list[tuple[str, tuple]]:
    """rows vectors r0.. of 16 bytes (row i: 16 columns) -> vectors of whole columns across the rows: (vector name,
    its columns; 16 // rows of them, rows bytes each). Rounds of interleaves (low or high halves, as x86 unpack,
    wasm shuffles, NEON zip), each pairing the vectors that hold the same columns of adjacent row groups."""
    vecs = [(f"r{i}", i, 1, tuple(range(16))) for i in range(rows)]
    for s, width in enumerate((8, 16, 32, 64)[:rows.bit_length() - 1]):
        out = []
        for name, r0, nr, cols in vecs:
            if r0 % (2 * nr):
                continue
            other = next(v for v in vecs if v[1] == r0 + nr and v[3] == cols)
            half = len(cols) // 2
            for part, cs in (("lo", cols[:half]), ("hi", cols[half:])):
                nm = f"s{s}_{len(out)}"
                c(f"const {vt} {nm} = {unpack(width, part, name, other[0])};")
                out.append((nm, r0, 2 * nr, cs))
        vecs = out
    return [(v[0], v[3]) for v in vecs]


def _pack_x86(key: str, c: Code) -> None:
    """16 slots at a time: their pixels' rows, 16 columns at a time, transposed by unpacks; columns past the last
    16 byte by byte. Quads store x + 128 (a sign flip), pairs widen to int16."""
    t = TILES[key]
    mr = t.mr
    pix = [0] * mr
    for i in range(mr):
        pix[slot(key, i)] = i
    et = "uint8_t" if t.xbytes == 1 else "int16_t"
    c(f"static const uint8_t pix[{mr}] = {{{', '.join(map(str, pix))}}};", f"{et}* o = ({et}*)out;")
    if t.xbytes == 1:
        c("const __m128i flip = _mm_set1_epi8((char)0x80);")
    with c.block("for (size_t t = 0; t < ks; t++, ind += mr)"), c.block(f"for (size_t g = 0; g < {mr}; g += 16)"):
        c("const int8_t* s[16];", "for (size_t j = 0; j < 16; j++) s[j] = ind[pix[g + j] < mr ? pix[g + j] : mr - 1];")
        c(f"{et}* d = o + t * kc * {mr} + g;", "size_t k = 0;")
        with c.block("for (; k + 16 <= kc; k += 16)"):
            c(*(f"const __m128i r{i} = _mm_loadu_si128((const __m128i*)(const void*)(s[{i}] + k));"
                for i in range(16)))
            for name, (col,) in _transpose(c, 16, "__m128i", _x86_unpack):
                dst = f"d + (k + {col}) * {mr}"
                if t.xbytes == 1:
                    c(f"_mm_storeu_si128((__m128i*)(void*)({dst}), _mm_xor_si128({name}, flip));")
                else:
                    c(f"_mm256_storeu_si256((__m256i*)(void*)({dst}), _mm256_cvtepi8_epi16({name}));")
        flip = "(uint8_t)(s[j][k] ^ 0x80)" if t.xbytes == 1 else "s[j][k]"
        c(f"for (; k < kc; k++) for (size_t j = 0; j < 16; j++) d[k * {mr} + j] = {flip};")


def qsppack(isa: Isa, key: str) -> str:
    """[ks*kc][MR] (int16, or bytes x + 128) from ks*mr tap pointers (ind[t*mr + i]); pixel i at slot POS[i],
    pixels past mr repeat the last."""
    mr = TILES[key].mr
    c = Code()
    sig = f"void {qsppack_name(key)}(size_t mr, size_t kc, size_t ks, const int8_t* const* ind, void* restrict out)"
    with c.block(_fn(key, isa, sig)):
        if key in _SSE_ATTR:
            _pack_x86(key, c)
        else:
            _pack(key, c, mr)
    return c.text()


def _pack(key: str, c: Code, mr: int) -> None:
    """wasm, NEON: the MR = 8 pixels' rows 16 channels at a time, transposed by interleaves into vectors of 2
    columns x 8 bytes, each widened to int16 by halves; the channels past the last 16 one by one."""
    vec = {"wasm": ("v128_t", "wasm_v128_load({0})", _wasm_unpack, "wasm_v128_store({0}, {1});",
                    ("wasm_i16x8_extend_low_i8x16({0})", "wasm_i16x8_extend_high_i8x16({0})")),
           "neon": ("int8x16_t", "vld1q_s8({0})", _neon_unpack, "vst1q_s16({0}, {1});",
                    ("vmovl_s8(vget_low_s8({0}))", "vmovl_high_s8({0})"))}.get(_family(key))
    c("int16_t* ob = (int16_t*)out;")
    if vec is None or mr != 8:
        with c.block("for (size_t t = 0; t < ks; t++, ind += mr)"), c.block(f"for (size_t i = 0; i < {mr}; i++)"):
            c("const int8_t* src = ind[i < mr ? i : mr - 1];", f"int16_t* o = ob + t * kc * {mr} + i;")
            c(f"for (size_t k = 0; k < kc; k++) o[k * {mr}] = src[k];")
        return
    vt, load, unpack, store, widen = vec
    with c.block("for (size_t t = 0; t < ks; t++, ind += mr)"):
        c("const int8_t* s[8];", "for (size_t j = 0; j < 8; j++) s[j] = ind[j < mr ? j : mr - 1];")
        c("int16_t* d = ob + t * kc * 8;", "size_t k = 0;")
        with c.block("for (; k + 16 <= kc; k += 16)"):
            c(*(f"const {vt} r{i} = {load.format(f's[{i}] + k')};" for i in range(8)))
            for name, cols in _transpose(c, 8, vt, unpack):
                for col, w in zip(cols, widen, strict=True):
                    c(store.format(f"d + (k + {col}) * 8", w.format(name)))
        c("for (; k < kc; k++) for (size_t j = 0; j < 8; j++) d[k * 8 + j] = s[j][k];")


def qspmv_name(key: str) -> str:
    return f"wrt_{key}_qspmv"


# family -> one group's int32 of activations (xv) into the 4 channels' accumulator vector (acc) by the weights at w
_SPMV = {
    "wasm": ("v128_t", "wasm_v128_load(w)", "wasm_i32x4_add(acc, wasm_i32x4_dot_i16x8(wasm_i32x4_splat(xv), "
             "wasm_v128_load(w)))", "wasm_v128_store(t, acc);"),
    "x86": ("__m128i", "_mm_loadu_si128((const __m128i*)(const void*)w)",
            "_mm_add_epi32(acc, _mm_madd_epi16(_mm_set1_epi32(xv), _mm_loadu_si128((const __m128i*)(const void*)w)))",
            "_mm_storeu_si128((__m128i*)(void*)t, acc);"),
    "vnni": ("__m128i", "_mm_loadu_si128((const __m128i*)(const void*)w)",
             "_mm_dpbusd_epi32(acc, _mm_set1_epi32(xv), _mm_loadu_si128((const __m128i*)(const void*)w))",
             "_mm_storeu_si128((__m128i*)(void*)t, acc);"),
    "neon": ("int32x4_t", "vld1q_s32(w)", "vaddq_s32(acc, vpaddq_s32(vmull_s16(vget_low_s16(xs), vget_low_s16(wv)), "
             "vmull_high_s16(xs, wv)))", "vst1q_s32(t, acc);"),
}


def qspmv(isa: Isa, key: str) -> str:
    """One pixel read in place: per group, its kr activations (x + XOFF) as one int32 (the column from the tile
    offset: offs / (MR * bytes)), multiplied into the 4 channels' weights at once; qgemm's requantization in scalar
    float (the same steps as the vector one)."""
    t = TILES[key]
    shift = (t.mr * t.xbytes).bit_length() - 1
    assert 1 << shift == t.mr * t.xbytes
    c = Code()
    sig = (f"void {qspmv_name(key)}(size_t n, const int8_t* x, const int32_t* restrict nnz, const int32_t* restrict "
           "offs, const int32_t* restrict w, const float* restrict mult, int8_t* y, const wrt_qparams* p)")
    fam = "scalar" if isa.vl == 1 else "vnni" if t.kr == 4 else "x86" if key in _SSE_ATTR else _family(key)
    with c.block(_fn(key, isa, sig)):
        c("const float qlo = p->lo, qhi = p->hi;")
        with c.block("for (size_t r = 0; r < n; r += 4)"):
            c("int32_t t[4] __attribute__((aligned(16)));")
            if fam != "scalar":
                c(f"{_SPMV[fam][0]} acc = {_SPMV[fam][1]};")
            else:
                c("for (int j = 0; j < 4; j++) t[j] = w[j];")
            c("w += 4;")
            with c.block(f"for (int32_t k = *nnz++; k > 0; k--, offs += {t.kr}, w += 4)"):
                cols = [f"x[offs[{e}] >> {shift}]" for e in range(t.kr)]
                if fam == "scalar":
                    c(f"const int32_t u = {cols[0]}, v = {cols[1]};")
                    c(*(f"t[{j}] += u * (int16_t)(uint16_t)(uint32_t)w[{j}] + "
                        f"v * (int16_t)(uint16_t)((uint32_t)w[{j}] >> 16);" for j in range(4)))
                elif t.kr == 4:
                    c("const int32_t xv = (int32_t)(" + " | ".join(
                        f"(uint32_t)(uint8_t)({v} ^ 0x80) << {8 * e}" for e, v in enumerate(cols)) + ");")
                else:
                    c(f"const int32_t xv = (int32_t)((uint32_t)(uint16_t)(int16_t){cols[0]} | "
                      f"(uint32_t)(uint16_t)(int16_t){cols[1]} << 16);")
                if fam != "scalar":
                    if fam == "neon":
                        c("const int16x8_t xs = vreinterpretq_s16_s32(vdupq_n_s32(xv)), "
                          "wv = vreinterpretq_s16_s32(vld1q_s32(w));")
                    c(f"acc = {_SPMV[fam][2]};")
            if fam != "scalar":
                c(_SPMV[fam][3])
            c("const size_t nleft = n - r < 4 ? n - r : 4;")
            with c.block("for (size_t j = 0; j < nleft; j++)"):
                c("float f = (float)t[j] * mult[r + j];", "f = f < qlo ? qlo : f;", "f = f > qhi ? qhi : f;",
                  "const float rn = f + 12582912.0f;", "y[r + j] = (int8_t)((int32_t)(rn - 12582912.0f) + p->zy);")
    return c.text()


def kernel_bodies(isa: Isa) -> list[str]:
    return [f(isa, k) for k in keys(isa) for f in (qspmm, qsppack, qspmv)]


def table_fields(isa: Isa, table: str) -> list[str]:
    k = _key(isa, table)
    t = TILES[k]
    return [f"  .qspmm_mr = {t.mr}, .qspmm_kr = {t.kr}, .qspmm_xoff = {t.xoff}, .qspmm_min_sparsity = "
            f"{t.min_sparsity}f, .qspmm_k_penalty = {t.k_penalty}f,",
            f"  .qspmm = {qspmm_name(k)}, .qsppack = {qsppack_name(k)}, .qspmv = {qspmv_name(k)},"]
