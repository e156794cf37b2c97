"""int8 (QS8) GEMM and indirect GEMM: an MR x NR tile of int32 accumulators over packed int8 weights, then the fp32
requantization of python_ref (wrt_kernels.h, "int8 (QS8) kernels"): y = zy + rne(clamp(f32(acc) * mult, lo, hi)).

Weights come in blocks of KR k-steps (a column's KR weights adjacent), the shape each target's dot product wants:
- scalar, NEON: KR = 1, a widening multiply-add of the weight row by one activation (NEON vmlal_n_s16);
- wasm SIMD128 / relaxed: KR = 2, i32x4.dot_i16x8_s on sign-extended bytes (the relaxed i8x16 x i7x16 dot product
  is defined everywhere only for a second operand in [0, 127], which int8 activations are not);
- wasm relaxed, "dot" tile (tables wasm_relaxed_usdot and wasm_relaxed_sdot, chosen at load by a probe of the host:
  engine/target.c): KR = 4, i32x4.relaxed_dot_i8x16_i7x16_add_s of signed weights by the activations XOR p->xmask,
  on hosts where the instruction is an exact dot product of 4-byte groups: unsigned x signed (x86 VNNI vpdpbusd:
  xmask 0x80808080, XOFF 128, as AVX-512 VNNI) or signed x signed (aarch64 sdot: xmask 0, XOFF 0). Hosts whose
  instruction saturates (pmaddubsw) or is unknown keep the KR = 2 table;
- AVX2, AVX-512: KR = 2, vpmaddwd on sign-extended bytes (pairs of int16 products summed exactly in int32);
- AVX-512 VNNI: KR = 4, vpdpbusd, unsigned x signed: activations read as x + 128 (XOFF), and the engine folds
  -(zx + 128) * sum_k w[k][j] into the bias.
Every integer sum is exact (no saturation anywhere), so every target computes python_ref's accumulator; the
requantization is one float32 multiply, clamp, and a round-half-to-even conversion on every target (wasm: adding
1.5 * 2^23, whose float32 sum is rne(f) + 1.5 * 2^23 for the clamped |f| <= 255, and reading the integer back from
its bits: two instructions where i32x4.trunc_sat_f32x4_s(f32x4.nearest) takes about eight on x86).
A last k block shorter than KR reads only its own activation bytes (weights past kc are packed as zeros).
Rows past mr alias the previous row; columns past nc are computed and dropped (bytes stored from a small buffer).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from kernels_wasm.gen.cwriter import Code
from kernels_wasm.gen.isa import Isa


@dataclass(frozen=True)
class QTile:
    """One target's int8 GEMM: tile, k block, vector types and the C of each step."""
    name: str           # C name part: wrt_<name>_qgemm_...
    attr: str
    mr: int
    nr: int
    kr: int
    vli: int            # int32 lanes per accumulator vector
    ivt: str            # accumulator (int32 vector) type
    fvt: str            # float32 vector type
    xoff: int = 0       # added to activations by the dot product
    owner: str = ""     # the tile whose depthwise and add kernels this one's tables use ("": its own)
    panel: int = 0      # columns of a packed panel when wider than the tile (0: nr): a kernel for the first nr only

    @property
    def pw(self) -> int:
        return self.panel or self.nr

    @property
    def nv(self) -> int:
        return self.nr // self.vli

    def fn(self, sig: str) -> str:
        return " ".join(x for x in ("static", self.attr, sig) if x)


# Prelude helpers: an activation pair or quad as one int32 to broadcast, and the scalar rne.
QPRELUDE = """\
/* int8 activations x[0], x[1] as the int16 pair (x[0] low) of one int32, for pairwise int16 dot products */
__attribute__((unused)) static inline int32_t wrt_q_pair(const int8_t* x) {
  return (int32_t)((uint32_t)(uint16_t)(int16_t)x[0] | ((uint32_t)(uint16_t)(int16_t)x[1] << 16));
}
/* 4 bytes of x as one int32 (an unaligned load) */
__attribute__((unused)) static inline int32_t wrt_q_load4(const int8_t* x) {
  int32_t v;
  __builtin_memcpy(&v, x, 4);
  return v;
}
/* the first n < 4 bytes of x (zeros after) as one int32, for a short last block of a 4-byte dot product */
__attribute__((unused)) static inline int32_t wrt_q_part(const int8_t* x, size_t n) {
  uint32_t v = 0;  /* n = 1..3: a 2-byte and a 1-byte load (no loop: a 3-channel image takes this on every tap) */
  if (n & 2) {
    uint16_t h;
    __builtin_memcpy(&h, x, 2);
    v = h;
  }
  if (n & 1) v |= (uint32_t)(uint8_t)x[n & 2] << (8 * (n & 2));
  return (int32_t)v;
}
"""


def qgemm_name(t: QTile, indirect: bool = False) -> str:
    return f"wrt_{t.name}_{'qigemm' if indirect else 'qgemm'}_{t.mr}x{t.nr}" + (f"p{t.panel}" if t.panel else "")


# -- per-target steps -------------------------------------------------------------------------------------------------
def _weights(t: QTile, blk: int = 0) -> list[str]:
    """Declare the weight operands wq0.. (wq0_1.. for blk 1) of k block blk at w (NR * KR bytes each)."""
    lines = _weights0(t)
    if not blk:
        return lines
    off = t.pw * t.kr * blk
    lines = [ln.replace("(w + ", f"(w + {off} + ").replace(" w + ", f" w + {off} + ") for ln in lines]
    for name in sorted({tok for ln in lines for tok in ln.replace("(", " ").replace(")", " ").replace(",", " ").split()
                        if tok[:2] in ("wq", "wb") and tok[2:].isdigit()}, key=len, reverse=True):
        lines = [_rename(ln, name, f"{name}_{blk}") for ln in lines]
    return lines


def _rename(line: str, old: str, new: str) -> str:
    return re.sub(rf"\b{old}\b", new, line)


def _weights0(t: QTile) -> list[str]:
    n = t.name
    if n == "scalar":
        return [f"const int32_t wq{j} = w[{j}];" for j in range(t.nr)]
    if n.startswith("wasm") and t.kr == 4:
        return [f"const v128_t wq{v} = wasm_v128_load(w + {16 * v});" for v in range(t.nv)]
    if n.startswith("wasm"):
        out = []
        for g in range(t.nv // 2):
            out += [f"const v128_t wb{g} = wasm_v128_load(w + {16 * g});",
                    f"const v128_t wq{2 * g} = wasm_i16x8_extend_low_i8x16(wb{g});",
                    f"const v128_t wq{2 * g + 1} = wasm_i16x8_extend_high_i8x16(wb{g});"]
        return out
    if n == "avx2":
        return [f"const __m256i wq{v} = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i*)(w + {16 * v})));"
                for v in range(t.nv)]
    if n == "avx512":
        return [f"const __m512i wq{v} = _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i*)(w + {32 * v})));"
                for v in range(t.nv)]
    if n == "avx512vnni":
        return [f"const __m512i wq{v} = _mm512_loadu_si512(w + {64 * v});" for v in range(t.nv)]
    if n == "neon":
        return [f"const int16x8_t wq{g} = vmovl_s8(vld1_s8(w + {8 * g}));" for g in range(t.nv // 2)]
    raise KeyError(n)


def _act(t: QTile, i: int, tail: bool) -> str:
    """Declare xa{i}: row i's activations of one k block at a{i} (tail: the kc % KR left)."""
    n, a = t.name, f"a{i}"
    if t.kr == 1:
        return f"const int32_t xa{i} = *{a};" if n == "scalar" else f"const int16_t xa{i} = *{a};"
    if n.startswith("wasm") and t.kr == 4:  # a 4-byte group, its sign bits flipped where the host's dot is usdot
        word = f"wasm_i32x4_splat(wrt_q_part({a}, k))" if tail else f"wasm_v128_load32_splat({a})"
        return f"const v128_t xa{i} = wasm_v128_xor({word}, xm);"
    word = f"(int32_t)(uint32_t)(uint16_t)(int16_t)*{a}" if tail else f"wrt_q_pair({a})"
    if n.startswith("wasm"):
        return f"const v128_t xa{i} = wasm_i32x4_splat({word});"
    if n == "avx2":
        return f"const __m256i xa{i} = _mm256_set1_epi32({word});"
    if n == "avx512":
        return f"const __m512i xa{i} = _mm512_set1_epi32({word});"
    if n == "avx512vnni":  # x + 128 as unsigned bytes: flip each sign bit (a broadcast load and a vector xor)
        word = f"_mm512_broadcastd_epi32(_mm_maskz_loadu_epi8(km, {a}))" if tail else \
            f"_mm512_broadcastd_epi32(_mm_loadu_si32({a}))"
        return f"const __m512i xa{i} = _mm512_xor_si512({word}, xm);"
    raise KeyError(n)


def _act_quad(t: QTile, i: int) -> list[str]:
    """xa{i} and xa{i}_1: row i's two activation pairs of 4 bytes at a{i}, from one 4-byte load (KR = 2 targets)."""
    n, a = t.name, f"a{i}"
    if n.startswith("wasm"):
        return [f"const v128_t xq{i} = wasm_i16x8_extend_low_i8x16(wasm_v128_load32_splat({a}));",
                f"const v128_t xa{i} = wasm_i32x4_shuffle(xq{i}, xq{i}, 0, 0, 0, 0);",
                f"const v128_t xa{i}_1 = wasm_i32x4_shuffle(xq{i}, xq{i}, 1, 1, 1, 1);"]
    bc = {"avx2": ("__m256i", "_mm256_broadcastd_epi32"), "avx512": ("__m512i", "_mm512_broadcastd_epi32")}[n]
    return [f"const __m128i xq{i} = _mm_cvtepi8_epi16(_mm_cvtsi32_si128(wrt_q_load4({a})));",
            f"const {bc[0]} xa{i} = {bc[1]}(xq{i});",
            f"const {bc[0]} xa{i}_1 = {bc[1]}(_mm_srli_epi64(xq{i}, 32));"]


def _dot(t: QTile, i: int, v: int, blk: int = 0) -> str:
    """acc{i}_{v} += row i's activations . column block v's weights (of k block blk: xa{i}_1, wq{v}_1)."""
    line = _dot0(t, i, v)
    if blk:
        line = _rename(_rename(line, f"xa{i}", f"xa{i}_{blk}"), f"wq{v // 2 if t.name == 'neon' else v}",
                       f"wq{v // 2 if t.name == 'neon' else v}_{blk}")
    return line


def _dot0(t: QTile, i: int, v: int) -> str:
    acc = f"acc{i}_{v}"
    n = t.name
    if n == "scalar":
        return f"{acc} += xa{i} * wq{v};"
    if n.startswith("wasm") and t.kr == 4:  # first operand signed (weights), second the activations
        return f"{acc} = wasm_i32x4_relaxed_dot_i8x16_i7x16_add(wq{v}, xa{i}, {acc});"
    if n.startswith("wasm"):
        return f"{acc} = wasm_i32x4_add({acc}, wasm_i32x4_dot_i16x8(wq{v}, xa{i}));"
    if n == "avx2":
        return f"{acc} = _mm256_add_epi32({acc}, _mm256_madd_epi16(wq{v}, xa{i}));"
    if n == "avx512":
        return f"{acc} = _mm512_add_epi32({acc}, _mm512_madd_epi16(wq{v}, xa{i}));"
    if n == "avx512vnni":
        return f"{acc} = _mm512_dpbusd_epi32({acc}, xa{i}, wq{v});"
    if n == "neon":
        return (f"{acc} = vmlal_n_s16({acc}, vget_low_s16(wq{v // 2}), xa{i});" if v % 2 == 0 else
                f"{acc} = vmlal_high_n_s16({acc}, wq{v // 2}, xa{i});")
    raise KeyError(n)


def _load_acc(t: QTile, v: int) -> str:
    p = f"wb + {v * t.vli}"
    load = {"scalar": f"wb[{v}]", "avx2": f"_mm256_loadu_si256((const __m256i*)({p}))",
            "avx512": f"_mm512_loadu_si512({p})", "avx512vnni": f"_mm512_loadu_si512({p})", "neon": f"vld1q_s32({p})"}
    return load.get(t.name, f"wasm_v128_load({p})")


def _requant(t: QTile, i: int, v: int) -> list[str]:
    """acc{i}_{v} -> q{i}_{v}: int32 (zy added), by the float32 steps of python_ref."""
    acc, q = f"acc{i}_{v}", f"q{i}_{v}"
    n = t.name
    if n == "scalar":
        return [f"float f{i}_{v} = (float){acc} * mq{v};", f"f{i}_{v} = f{i}_{v} < qlo ? qlo : f{i}_{v};",
                f"f{i}_{v} = f{i}_{v} > qhi ? qhi : f{i}_{v};",
                f"const float r{i}_{v} = f{i}_{v} + 12582912.0f;",  # rne: exact for |f| < 2^22
                f"const int32_t {q} = (int32_t)(r{i}_{v} - 12582912.0f) + p->zy;"]
    if n.startswith("wasm"):  # the lower bound by pmax (no NaN here), rne by the magic 1.5 * 2^23; the upper bound
        # on the narrowed bytes (_store_row): rne and the clamp to the integer hi commute, and past 2^22 the bits of
        # f + magic still grow with f, so they narrow (saturating) to 127 and clamp to hi as f would
        f = f"wasm_f32x4_pmax(wasm_f32x4_mul(wasm_f32x4_convert_i32x4({acc}), mq{v}), qlo)"
        return [f"const v128_t {q} = wasm_i32x4_sub(wasm_f32x4_add({f}, qmagic), qmz);"]
    if n == "avx2":
        f = f"_mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(_mm256_cvtepi32_ps({acc}), mq{v}), qlo), qhi)"
        return [f"const __m256i {q} = _mm256_add_epi32(_mm256_cvtps_epi32({f}), qzy);"]
    if _narrow_by_packs(t):  # zy and the lower bound come after the packs (_store_row)
        f = f"_mm512_min_ps(_mm512_mul_ps(_mm512_cvtepi32_ps({acc}), mq{v}), qhi)"
        return [f"const __m512i {q} = _mm512_cvtps_epi32({f});"]
    if n.startswith("avx512"):
        f = f"_mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(_mm512_cvtepi32_ps({acc}), mq{v}), qlo), qhi)"
        return [f"const __m512i {q} = _mm512_add_epi32(_mm512_cvtps_epi32({f}), qzy);"]
    if n == "neon":
        f = f"vminq_f32(vmaxq_f32(vmulq_f32(vcvtq_f32_s32({acc}), mq{v}), qlo), qhi)"
        return [f"const int32x4_t {q} = vaddq_s32(vcvtnq_s32_f32({f}), qzy);"]
    raise KeyError(n)


def _narrow_by_packs(t: QTile) -> bool:
    """AVX-512 rows of 32 columns: r = rne(min(f, hi)) is narrowed by saturating packs (int32 -> int16, + zy with
    saturation, -> int8), one permute puts the 32 bytes in order, then max with the lower bound. Equal to the clamp
    on both sides: r <= hi gives r + zy <= 127 exactly; below lo (an integer) r <= lo, and every saturating step keeps
    it at or below the lower bound (cvtps gives INT32_MIN past the int32 range, negative too)."""
    return t.name.startswith("avx512") and t.nv == 2


def _store_row(t: QTile, i: int, dst: str, mask: str = "") -> list[str]:
    """Row i's NR bytes (q{i}_*) to dst (AVX-512 with a mask: the bytes it selects)."""
    n, qs = t.name, [f"q{i}_{v}" for v in range(t.nv)]
    if _narrow_by_packs(t):
        r = "_mm256_max_epi8(r, qmin)"
        return [f"{{ const __m512i h = _mm512_adds_epi16(_mm512_packs_epi32({qs[0]}, {qs[1]}), qzw);",
                "  const __m256i r = _mm512_castsi512_si256(_mm512_permutexvar_epi32(qperm, "
                "_mm512_packs_epi16(h, h)));",
                f"  _mm256_mask_storeu_epi8({dst}, {mask}, {r}); }}" if mask else
                f"  _mm256_storeu_si256((__m256i*)(void*)({dst}), {r}); }}"]
    if mask and n.startswith("avx512") and t.nv == 1:
        return [f"_mm_mask_storeu_epi8({dst}, {mask}, _mm512_cvtsepi32_epi8({qs[0]}));"]
    if n == "scalar":
        return [f"{dst}[{v}] = (int8_t){q};" for v, q in enumerate(qs)]
    if n.startswith("wasm"):
        out = []
        for g in range(0, t.nv // 2, 2):  # 16 bytes per narrowing, then the upper bound
            h = [f"wasm_i16x8_narrow_i32x4({qs[2 * u]}, {qs[2 * u + 1]})" for u in (g, min(g + 1, t.nv // 2 - 1))]
            b = f"wasm_i8x16_min(wasm_i8x16_narrow_i16x8({h[0]}, {h[1]}), qmax8)"
            if 2 * g + 2 < t.nv:
                out.append(f"wasm_v128_store({dst} + {8 * g}, {b});")
            else:
                out.append(f"wasm_v128_store64_lane({dst} + {8 * g}, {b}, 0);")
        return out
    if n == "avx2":
        out = []
        for g in range(t.nv // 2):
            h = f"_mm256_permute4x64_epi64(_mm256_packs_epi32({qs[2 * g]}, {qs[2 * g + 1]}), 0xD8)"
            out += [f"{{ const __m256i h = {h};",
                    f"  _mm_storeu_si128((__m128i*)({dst} + {16 * g}), "
                    "_mm_packs_epi16(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1))); }"]
        return out
    if n.startswith("avx512"):
        return [f"_mm_storeu_si128((__m128i*)({dst} + {16 * v}), _mm512_cvtsepi32_epi8({q}));"
                for v, q in enumerate(qs)]
    if n == "neon":
        return [f"vst1_s8({dst} + {8 * g}, vqmovn_s16(vcombine_s16(vqmovn_s32({qs[2 * g]}), "
                f"vqmovn_s32({qs[2 * g + 1]}))));" for g in range(t.nv // 2)]
    raise KeyError(n)


def _params(t: QTile, base: str = "packed_w") -> list[str]:
    return _bounds(t) + _mults(t, base)


def _bounds(t: QTile) -> list[str]:
    """The output bounds and zero point as the requantization's operands."""
    if t.name == "scalar":
        return ["const float qlo = p->lo, qhi = p->hi;"]
    _, dupf, dupi = _qops(t)
    if _narrow_by_packs(t):  # dword g of the packed row: columns 4g.. from lane g (g < 4), lane g - 4 (dword 1)
        return [f"const {t.fvt} qhi = {dupf.format('p->hi')};",
                "const __m512i qzw = _mm512_set1_epi16((int16_t)p->zy);",
                "const __m256i qmin = _mm256_set1_epi8((char)((int32_t)p->lo + p->zy));",
                "const __m512i qperm = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 0, 0, 0, 0, 0, 0, 0, 0);"]
    bounds = [f"const {t.fvt} qlo = {dupf.format('p->lo')};", f"const {t.fvt} qhi = {dupf.format('p->hi')};"]
    if t.name.startswith("wasm"):  # f + 1.5 * 2^23 holds rne(f) in its low bits (|f| < 2^22): take off its bits - zy
        return [bounds[0], "const v128_t qmagic = wasm_f32x4_const_splat(12582912.0f);",
                "const v128_t qmz = wasm_i32x4_splat(0x4B400000 - p->zy);",
                "const v128_t qmax8 = wasm_i8x16_splat((int8_t)((int32_t)p->hi + p->zy));"]
    return [*bounds, f"const {t.ivt} qzy = {dupi.format('p->zy')};"]


def _mults(t: QTile, base: str) -> list[str]:
    """The multipliers of the tile's columns, after its NR biases at base."""
    mp = f"(const float*)(const void*)((const char*)({base}) + {4 * t.pw})"
    if t.name == "scalar":
        return [f"const float* mp = {mp};", *(f"const float mq{v} = mp[{v}];" for v in range(t.nv))]
    ld = _qops(t)[0]
    return [f"const float* mp = {mp};", *(f"const {t.fvt} mq{v} = {ld.format(f'mp + {v * t.vli}')};"
                                          for v in range(t.nv))]


def _qops(t: QTile) -> tuple[str, str, str]:
    """load of floats, broadcast of a float, broadcast of an int32"""
    n = t.name
    return {
        "wasm": ("wasm_v128_load({})", "wasm_f32x4_splat({})", "wasm_i32x4_splat({})"),
        "avx2": ("_mm256_loadu_ps({})", "_mm256_set1_ps({})", "_mm256_set1_epi32({})"),
        "avx512": ("_mm512_loadu_ps({})", "_mm512_set1_ps({})", "_mm512_set1_epi32({})"),
        "neon": ("vld1q_f32({})", "vdupq_n_f32({})", "vdupq_n_s32({})"),
    }["wasm" if n.startswith("wasm") else "avx512" if n.startswith("avx512") else n]


# -- the kernels ------------------------------------------------------------------------------------------------------
def _head(c: Code, t: QTile) -> None:
    _accs(c, t, "(const int32_t*)packed_w")
    c(f"const int8_t* w = (const int8_t*)packed_w + {8 * t.pw};")
    if t.name.startswith("wasm") and t.kr == 4:
        c(_WASM_XM)
    if t.name == "avx512vnni":
        # opaque to the compiler: else it narrows each xor to 128 bits and broadcasts after it (a shuffle per row)
        c("__m512i xm = _mm512_set1_epi32((int32_t)0x80808080u);", '__asm__("" : "+v"(xm));')


_WASM_XM = "const v128_t xm = wasm_i32x4_splat((int32_t)p->xmask);"


def _accs(c: Code, t: QTile, biases: str) -> None:
    """Every row's accumulators set to the panel's biases (the int32 pointer expression biases, as wb)."""
    c(f"const int32_t* wb = {biases};")
    c(*(f"{t.ivt} acc0_{v} = {_load_acc(t, v)};" for v in range(t.nv)))
    for i in range(1, t.mr):
        c(*(f"{t.ivt} acc{i}_{v} = acc0_{v};" for v in range(t.nv)))


def _k_loop(c: Code, t: QTile) -> None:
    regs = 32 if t.name.startswith("avx512") else 16
    if t.kr == 2 and (t.mr + 2) * t.nv + 2 <= regs:  # two k blocks per step: each row's 4 activation bytes in one
        # load, where the accumulators, both blocks' weights and a row's two pairs fit the vector registers
        with c.block("for (; k >= 4; k -= 4)"):
            c(*_weights(t), *_weights(t, 1), f"w += {2 * t.pw * t.kr};")
            for i in range(t.mr):
                c(*_act_quad(t, i), f"a{i} += 4;", *(_dot(t, i, v) for v in range(t.nv)),
                  *(_dot(t, i, v, 1) for v in range(t.nv)))
    with c.block(f"for (; k >= {t.kr}; k -= {t.kr})"):
        c(*_weights(t), f"w += {t.pw * t.kr};")
        for i in range(t.mr):
            c(_act(t, i, False), f"a{i} += {t.kr};", *(_dot(t, i, v) for v in range(t.nv)))
    if t.kr > 1:
        with c.block("if (k != 0)"):
            c(*_weights(t), f"w += {t.pw * t.kr};")
            if t.name == "avx512vnni":  # the k < 4 bytes left by a masked load (a 3-channel image: every tap)
                c("const __mmask16 km = (__mmask16)((1u << k) - 1);")
            for i in range(t.mr):
                c(_act(t, i, True), *(_dot(t, i, v) for v in range(t.nv)))


def _finish(c: Code, t: QTile) -> None:
    c(*_params(t))
    if t.name.startswith("wasm") and t.nv == 2 and t.mr % 2 == 0:
        _finish_pairs(c, t)
        return
    _store_rows(c, t, f"nc == {t.nr}")


def _store_rows(c: Code, t: QTile, full: str) -> None:
    """Each row's requantized bytes, a partial row (nc < NR, where full is false) through a buffer or a mask."""
    masked = t.name.startswith("avx512") and t.nv <= 2  # a partial row by a byte-masked store
    if masked:
        c(f"const __mmask{t.nr} cm = (__mmask{t.nr})(((uint64_t)1 << nc) - 1);")
    for i in reversed(range(t.mr)):  # the last (valid) row is written last when rows alias
        with c.block(""):
            for v in range(t.nv):
                c(*_requant(t, i, v))
            with c.block(f"if ({full})"):
                c(*_store_row(t, i, f"c{i}"))
            with c.block("else"):
                if masked:
                    c(*_store_row(t, i, f"c{i}", "cm"))
                else:
                    c(f"int8_t ob[{t.nr}];", *_store_row(t, i, "ob"),
                      f"for (size_t j = 0; j < nc; j++) c{i}[j] = ob[j];")


def _finish_pairs(c: Code, t: QTile, full: str = "") -> None:
    """wasm, 8 columns: rows i + 1 and i narrowed into one vector of 16 bytes, one upper bound for both; row i + 1
    stored first (rows past mr alias the row before); a one-row tile narrows its row twice. full: the test for a
    whole row (nc == NR)."""
    for i in reversed(range(0, t.mr, 2)):
        rows = (i + 1, i) if i + 1 < t.mr else (i,)
        with c.block(""):
            for r in rows:
                c(*_requant(t, r, 0), *_requant(t, r, 1))
            h = [f"wasm_i16x8_narrow_i32x4(q{r}_0, q{r}_1)" for r in rows]
            c(f"const v128_t b = wasm_i8x16_min(wasm_i8x16_narrow_i16x8({h[0]}, {h[-1]}), qmax8);")
            with c.block(f"if ({full or f'nc == {t.nr}'})"):
                c(*(f"wasm_v128_store64_lane(c{r}, b, {lane});" for lane, r in enumerate(rows)))
            with c.block("else"):
                c("int8_t ob[16];", "wasm_v128_store(ob, b);",
                  *(f"for (size_t j = 0; j < nc; j++) c{r}[j] = ob[{'8 + ' if lane else ''}j];"
                    for lane, r in enumerate(rows)))


def _rows(c: Code, t: QTile) -> None:
    c("int8_t* c0 = c;")
    for i in range(1, t.mr):
        c(f"int8_t* c{i} = c{i - 1} + c_stride;", f"if (mr <= {i}) c{i} = c{i - 1};")


def qgemm(t: QTile) -> str:
    c = Code()
    sig = (f"void {qgemm_name(t)}(size_t mr, size_t nc, size_t kc, const int8_t* a, size_t a_stride, "
           "const void* packed_w, int8_t* c, size_t c_stride, const wrt_qparams* p)")
    with c.block(t.fn(sig)):
        if t.mr == 1:
            c("(void)mr, (void)a_stride, (void)c_stride;")
        if not packs(t):
            _row_loop(c, t, head=True)
            _finish(c, t)
        else:
            _panels(c, t, lambda: _packed_or_rows(c, t))
    return c.text()


def _packed_or_rows(c: Code, t: QTile) -> None:
    """The k loop of tiles that pack rows: on rows packed by qpack (a_stride 0: one broadcast load per row and k
    block) or on rows in place."""
    with c.block("if (a_stride == 0)"):
        c("const int8_t* ap = a;")
        with c.block(f"for (size_t k = 0; k < kc; k += {t.kr})"):
            c(*_weights(t), f"w += {t.pw * t.kr};")
            for i in range(t.mr):
                word = f"ap + {4 * i}"
                xa = (f"_mm256_set1_epi32(wrt_q_load4({word}))" if t.name == "avx2" else
                      f"wasm_v128_load32_splat({word})")
                c(f"const {t.ivt} xa{i} = {xa};", *(_dot(t, i, v) for v in range(t.nv)))
            c(f"ap += {4 * t.mr};")
    with c.block("else"):
        _row_loop(c, t, head=False)


def _panels(c: Code, t: QTile, k_loop: Callable[[], None]) -> None:
    """GEMMs on staged rows, which take every panel of nc > NR columns in one call (the engine's choice where the
    weights stay in cache: the set-up once per row block), k_loop the k steps over one panel's weights at w."""
    _rows(c, t)
    c(*([_WASM_XM] if t.kr == 4 else []), *_bounds(t), "const int8_t* w = (const int8_t*)packed_w;")
    with c.block("for (;;)"):
        c("const int8_t* pw = w;")
        _accs(c, t, "(const int32_t*)(const void*)pw")
        c(f"w += {8 * t.pw};")
        k_loop()
        c(*_mults(t, "pw"))
        if t.name.startswith("wasm"):
            _finish_pairs(c, t, f"nc >= {t.nr}")
        else:
            _store_rows(c, t, f"nc >= {t.nr}")
        c(f"if (nc <= {t.nr}) break;", f"nc -= {t.nr};", *(f"c{i} += {t.nr};" for i in range(t.mr)))


def _row_loop(c: Code, t: QTile, head: bool) -> None:
    """The k loop over rows at a + i * a_stride (head: the output rows and accumulators declared after the rows)."""
    c("const int8_t* a0 = a;")
    for i in range(1, t.mr):
        c(f"const int8_t* a{i} = a{i - 1} + a_stride;", f"if (mr <= {i}) a{i} = a{i - 1};")
    if head:
        _rows(c, t)
        _head(c, t)
    c("size_t k = kc;")
    _k_loop(c, t)


def packs(t: QTile) -> bool:
    """Tiles whose 1x1 GEMM also reads activations packed ahead by qpack (qgemm's a_stride 0), each row's k block as
    4 bytes at a fixed offset from one pointer in place of a load, a conversion and a pointer step per row and
    panel: the wasm relaxed dot tile (4 bytes, sign bits already flipped by xmask) and AVX2 (a pair widened to int16,
    one broadcast load a row; 6 rows, as the widening of each weight is shared by more rows). The engine packs a run
    of row blocks once for every panel; one row (mr 1) is never packed."""
    return t.name in ("wasm_relaxed_dot", "avx2") and t.mr > 1


def has_row(t: QTile) -> bool:
    """Tables with qgemm_row, the GEMM of one row on int8 panels: a16 targets, and AVX2 (else its 6-row tile
    would compute six copies of the row)."""
    return a16(t) or t.name == "avx2"


def _qpack_sig(t: QTile) -> str:
    """The wrt_qpack_fn of tile t (qwiden and qpack: one per target)."""
    return t.fn(f"void {qpack_name(t)}(size_t mr, size_t kc, const int8_t* a, size_t a_stride, int8_t* out, "
                "uint32_t xmask)")


def qpack_name(t: QTile) -> str:
    return f"wrt_{t.name}_qpack_{t.mr}"


def _staged_rows(n: int) -> list[str]:
    """r[0..n-1]: the qpack's row pointers, rows past mr copies of the last."""
    return [f"const int8_t* r[{n}] = {{{', '.join(['a'] * n)}}};",
            f"for (size_t i = 1; i < {n}; i++) r[i] = i < mr ? r[i - 1] + a_stride : r[i - 1];"]


def _transpose4(v: list[str]) -> tuple[list[str], list[str]]:
    """A 4 x 4 transpose of the int32 lanes of wasm vectors v: the lines declaring t0..t3, and the 4 output vectors
    (output g holds lane g of each of v, in order)."""
    lines = [f"const v128_t t0 = wasm_i32x4_shuffle({v[0]}, {v[1]}, 0, 4, 1, 5);",
             f"const v128_t t1 = wasm_i32x4_shuffle({v[2]}, {v[3]}, 0, 4, 1, 5);",
             f"const v128_t t2 = wasm_i32x4_shuffle({v[0]}, {v[1]}, 2, 6, 3, 7);",
             f"const v128_t t3 = wasm_i32x4_shuffle({v[2]}, {v[3]}, 2, 6, 3, 7);"]
    outs = [f"wasm_i32x4_shuffle({a}, {b}, {lanes})" for a, b in (("t0", "t1"), ("t2", "t3"))
            for lanes in ("0, 1, 4, 5", "2, 3, 6, 7")]
    return lines, outs


def qwiden(t: QTile) -> str:
    """The qpack of a16 targets: MR rows of kc bytes (rows past mr copy the last) widened to int16 and interleaved
    by k pairs: group g (4 * MR int16) holds row i's elements 2g, 2g + 1 at 2i, a zero after an odd kc; xmask unused.
    The GEMM's k step then broadcasts each row's pair from one pointer at a fixed offset. 16 bytes of each row at a
    time: two 4 x 4 transposes of int32 lanes."""
    assert t.mr == 4
    c = Code()
    with c.block(_qpack_sig(t)):
        c("(void)xmask;", *_staged_rows(4), "int16_t* o = (int16_t*)(void*)out;", "size_t k = 0;")
        with c.block("for (; k + 16 <= kc; k += 16, o += 64)"):
            for i in range(4):
                c(f"const v128_t v{i} = wasm_v128_load(r[{i}] + k);",
                  f"const v128_t l{i} = wasm_i16x8_extend_low_i8x16(v{i});",
                  f"const v128_t h{i} = wasm_i16x8_extend_high_i8x16(v{i});")
            for half, v in ((0, "l"), (32, "h")):
                lines, outs = _transpose4([f"{v}{i}" for i in range(4)])
                body = [*lines, *(f"wasm_v128_store(o + {half + 8 * g}, {x});" for g, x in enumerate(outs))]
                c("{ " + body[0], *("  " + ln for ln in body[1:-1]), "  " + body[-1] + " }")
        with c.block("for (; k < kc; k += 2, o += 8)"):  # pairs left, by elements (never read past a row)
            c("for (size_t i = 0; i < 4; i++) o[2 * i] = r[i][k], o[2 * i + 1] = k + 1 < kc ? r[i][k + 1] : 0;")
    return c.text()


def qpack(t: QTile) -> str:
    """The qpack of tiles that pack rows (packs)."""
    return qpack_avx2(t) if t.name == "avx2" else qpack_dot(t)


def qpack_avx2(t: QTile) -> str:
    """6 rows of kc bytes (rows past mr copy the last) widened to int16 pairs: group g of 24 bytes holds row i's
    elements 2g, 2g + 1 at 4i, a zero after an odd kc; xmask unused. 8 bytes of each row at a time: rows 0-3 by a
    4 x 4 transpose of int32 lanes, rows 4-5 by one interleave."""
    assert t.mr == 6
    c = Code()
    with c.block(_qpack_sig(t)):
        c("(void)xmask;", *_staged_rows(6), "int32_t* o = (int32_t*)(void*)out;", "size_t k = 0;")
        with c.block("for (; k + 8 <= kc; k += 8, o += 24)"):
            c(*(f"const __m128i v{i} = _mm_cvtepi8_epi16(_mm_loadl_epi64((const __m128i*)(const void*)(r[{i}] + k)));"
                for i in range(6)),
              "const __m128i t0 = _mm_unpacklo_epi32(v0, v1), t1 = _mm_unpacklo_epi32(v2, v3);",
              "const __m128i t2 = _mm_unpackhi_epi32(v0, v1), t3 = _mm_unpackhi_epi32(v2, v3);",
              "const __m128i u0 = _mm_unpacklo_epi32(v4, v5), u1 = _mm_unpackhi_epi32(v4, v5);")
            for g, (lo, hi, u, half) in enumerate((("t0", "t1", "u0", 0), ("t0", "t1", "u0", 1),
                                                  ("t2", "t3", "u1", 0), ("t2", "t3", "u1", 1))):
                quad = f"_mm_unpack{'hi' if half else 'lo'}_epi64({lo}, {hi})"
                pair = f"_mm_unpackhi_epi64({u}, {u})" if half else u
                c(f"_mm_storeu_si128((__m128i*)(void*)(o + {6 * g}), {quad});",
                  f"_mm_storel_epi64((__m128i*)(void*)(o + {6 * g + 4}), {pair});")
        with c.block("for (; k < kc; k += 2, o += 6)"):  # pairs left, by elements (never read past a row)
            c("for (size_t i = 0; i < 6; i++)",
              "  o[i] = (int32_t)((uint32_t)(uint16_t)(int16_t)r[i][k] | "
              "((uint32_t)(uint16_t)(int16_t)(k + 1 < kc ? r[i][k + 1] : 0) << 16));")
    return c.text()


def qpack_dot(t: QTile) -> str:
    """MR rows of kc bytes (row i at a + i * a_stride; rows past mr copy the last) as ceil(kc / 4) groups of
    4 * MR bytes, group g holding row i's bytes 4g..4g+3 at 4i, each XOR xmask; bytes past kc are xmask (weights
    there are zero). 16 bytes of each row at a time: a 4 x 4 transpose of int32 lanes."""
    assert t.mr == 4
    c = Code()
    with c.block(_qpack_sig(t)):
        c(*_staged_rows(4), "const v128_t xm = wasm_i32x4_splat((int32_t)xmask);", "size_t k = 0;")
        with c.block("for (; k + 16 <= kc; k += 16, out += 64)"):
            lines, outs = _transpose4([f"v{i}" for i in range(4)])
            c(*(f"const v128_t v{i} = wasm_v128_load(r[{i}] + k);" for i in range(4)), *lines,
              *(f"wasm_v128_store(out{f' + {16 * g}' if g else ''}, wasm_v128_xor({x}, xm));"
                for g, x in enumerate(outs)))
        with c.block("for (; k + 4 <= kc; k += 4, out += 16)"):  # whole groups left: a word of each row
            c("v128_t g = wasm_v128_load32_zero(r[0] + k);", "g = wasm_v128_load32_lane(r[1] + k, g, 1);",
              "g = wasm_v128_load32_lane(r[2] + k, g, 2);", "g = wasm_v128_load32_lane(r[3] + k, g, 3);",
              "wasm_v128_store(out, wasm_v128_xor(g, xm));")
        with c.block("if (k < kc)"):  # a last part group by bytes (never read past a row)
            c("for (size_t i = 0; i < 16; i++) out[i] = (int8_t)((k + i % 4 < kc ? r[i / 4][k + i % 4] : 0) ^ "
              "(int8_t)xmask);")
    return c.text()


def qigemm(t: QTile) -> str:
    c = Code()
    sig = (f"void {qgemm_name(t, True)}(size_t mr, size_t nc, size_t kc, size_t ks, const int8_t* const* ind, "
           "const void* packed_w, int8_t* c, size_t c_stride, const wrt_qparams* p)")
    with c.block(t.fn(sig)):
        _rows(c, t)
        _head(c, t)
        with c.block("for (size_t tap = ks; tap != 0; tap--)"):
            c("const int8_t* a0 = ind[0];")
            for i in range(1, t.mr):
                c(f"const int8_t* a{i} = mr > {i} ? ind[{i}] : a{i - 1};")
            c("ind += mr;", "size_t k = kc;")
            _k_loop(c, t)
        _finish(c, t)
    return c.text()


def a16(t: QTile) -> bool:
    """Targets whose 1x1 GEMM also has a form on activations widened to int16 ahead (qgemm16): wasm SIMD128, where
    each row's pair of int16 activations is then one 4-byte broadcast load, in place of a widening and a shuffle (the
    engine widens the rows once per run of row blocks, not once per panel); wasm relaxed too, in the table for hosts
    whose relaxed dot product is not exact (x86 without VNNI)."""
    return t.name in ("wasm_simd128", "wasm_relaxed")


def row_tile(t: QTile) -> QTile:
    """The one-row tile of qgemm_row (has_row): a GEMM of one row (a fully-connected layer on one vector) reads
    each weight once, so a16 targets pack its weights as int8 (half the bytes of int16 panels), and the full tile
    would compute copies of the row."""
    return replace(t, mr=1)


def qgemm16(t: QTile) -> str:
    """The GEMM of a16 targets on int16 activations and weights: a the MR rows as qwiden lays them out (a_stride
    unused), kc even (the weights past kc are zeros), the panel's weights packed as int16 (the int8 GEMM's layout, two
    bytes each), one k block per step; nc may pass NR (the panels one after another). Each row's pair is a broadcast
    at a fixed offset from one pointer, which also ends the loop (no counter, no pointer step per row). One block,
    not four: V8 schedules a step's loads first, and four blocks' (8 weight vectors, 16 broadcasts) beside
    the 8 accumulators spilled to the stack on x64 (0.95x the time of MobileNetV2 int8 in Chromium)."""
    c = Code()
    sig = (f"void {qgemm_name(t)}_a16(size_t mr, size_t nc, size_t kc, const int8_t* a, size_t a_stride, "
           "const void* packed_w, int8_t* c, size_t c_stride, const wrt_qparams* p)")

    def k_loop() -> None:
        c("const int8_t* xa = a;", f"const int8_t* const xe = a + kc * {2 * t.mr};")
        with c.block("for (; xa != xe; xa += 16)"):
            c(*(f"const v128_t wq{v} = wasm_v128_load(w + {16 * v});" for v in range(t.nv)))
            for i in range(t.mr):
                c(f"const v128_t xa{i} = wasm_v128_load32_splat(xa + {4 * i});", *(_dot0(t, i, v) for v in range(t.nv)))
            c(f"w += {4 * t.pw};")

    with c.block(t.fn(sig)):
        c("(void)a_stride;")
        _panels(c, t, k_loop)
    return c.text()


_AVX512_ATTR = '__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma")))'
_VNNI_ATTR = '__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma")))'


def tiles(isa: Isa) -> list[QTile]:
    """The int8 GEMM tiles of a target's file (AVX-512's file holds the VNNI one too, picked at run time)."""
    n = isa.name
    if n == "scalar":
        return [QTile("scalar", "", 2, 4, 1, 1, "int32_t", "float")]
    if n == "wasm_relaxed":
        return [QTile(n, "", 4, 8, 2, 4, "v128_t", "v128_t"),
                QTile("wasm_relaxed_dot", "", 4, 8, 4, 4, "v128_t", "v128_t", xoff=128, owner=n)]
    if n.startswith("wasm"):
        return [QTile(n, "", 4, 8, 2, 4, "v128_t", "v128_t")]
    if n == "avx2":
        return [QTile("avx2", isa.attr, 6, 16, 2, 8, "__m256i", "__m256")]
    if n == "avx512":
        return [QTile("avx512", _AVX512_ATTR, 6, 32, 2, 16, "__m512i", "__m512"),
                QTile("avx512vnni", _VNNI_ATTR, 6, 32, 4, 16, "__m512i", "__m512", xoff=128)]
    if n == "neon":
        return [QTile("neon", "", 4, 8, 1, 4, "int32x4_t", "float32x4_t")]
    raise KeyError(n)


def half_tile(t: QTile) -> QTile | None:
    """AVX-512's GEMM over the first half of a panel, for a last panel of at most NR / 2 columns (MobileNetV2's 16
    and EfficientNet-Lite0's 40, 80 and 112 output channels): the same packed weights, half the dot products."""
    if not t.name.startswith("avx512"):
        return None
    return QTile(t.name, t.attr, t.mr, t.nr // 2, t.kr, t.vli, t.ivt, t.fvt, t.xoff, t.owner, panel=t.nr)


def tables(isa: Isa) -> list[tuple[str, QTile]]:
    """(table name, int8 GEMM tile) of each kernel table of a target's file: one per tile; the wasm relaxed dot
    tile's is for unsigned x signed hosts (XOFF 128). Its signed x signed twin (XOFF 0, wasm_relaxed_sdot) is built
    from it at load (engine/target.c), not stored (224 bytes of the module)."""
    return [("wasm_relaxed_usdot" if t.name == "wasm_relaxed_dot" else t.name, t) for t in tiles(isa)]


def table_fields(t: QTile) -> list[str]:
    half = half_tile(t)
    return [f"  .qgemm_mr = {t.mr}, .qgemm_nr = {t.nr}, .qgemm_kr = {t.kr}, .qgemm_xoff = {t.xoff},",
            f"  .qgemm = {qgemm_name(t)},", f"  .qigemm = {qgemm_name(t, True)},",
            *([f"  .qgemm_half = {qgemm_name(half)},"] if half else []),
            *([f"  .qgemm_a16 = {qgemm_name(t)}_a16,"] if a16(t) else []),
            *([f"  .qgemm_row = {qgemm_name(row_tile(t))},"] if has_row(t) else []),
            *([f"  .qpack = {qpack_name(t)},"] if packs(t) or a16(t) else [])]
