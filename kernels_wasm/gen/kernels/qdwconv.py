"""int8 (QS8) depthwise convolution over one output row (wrt_qdwconv_fn): per output pixel and tile of CT channels,
int32 accumulators start at the packed bias (zero point folded in), then per tap the input bytes and int16 weights,
both widened, multiply exactly into int32; the requantization is the GEMM's (kernels/qgemm.py).

A last, partial channel tile copies its < CT input bytes per tap into a zeroed buffer (inputs are never read past
`channels`) and stores its bytes from a buffer; packed weights are padded, so they are read whole.
"""

from __future__ import annotations

from kernels_wasm.gen.cwriter import Code
from kernels_wasm.gen.kernels.qgemm import _VNNI_ATTR, QTile, _bounds, _mults, _requant, _store_row

# taps unrolled for 3x3 and 5x5 filters, their row pointers read once per pixel (the generic loop reads them per
# channel tile and tap); the scalar build keeps the generic entry only, the wasm builds unroll 3x3 only (their
# 16-channel generic loop ran 5x5 layers as fast as the unrolled 8-channel kernel, in 1.3 KB less than a 16-channel one)
SPECIALIZED_KS = {**{n: (9, 25) for n in ("avx2", "avx512", "neon")}, "wasm_simd128": (9,), "wasm_relaxed": (9,)}


def specialized_ks(t: QTile) -> tuple[int, ...]:
    return SPECIALIZED_KS.get(t.name, ())


def qdwconv_name(t: QTile, ks: int = 0) -> str:
    return f"wrt_{t.name}_qdwconv_{ks or 'any'}_c{dw_tile(t).nr}"


def dw_tile(t: QTile) -> QTile:
    """The channel tile as a one-row QTile (nr = CT), so the GEMM's requantization steps apply."""
    ct = {"scalar": 1, "avx2": 16, "avx512": 32, "avx512vnni": 32, "neon": 8}.get(t.name, 16)
    return QTile(t.name, t.attr, 1, ct, 1, t.vli if ct > 1 else 1, t.ivt, t.fvt)


def _mac(d: QTile, x: list[str], w: list[str], masked: bool = False) -> list[str]:
    """acc0_v += sum over one or two taps of x[ch] * w[ch]: x int8 bytes, w int16 weights (pointers per tap).
    Two taps' products are summed in int16 before widening: |x * w| <= 128 * 127, so the pair fits in int16 (the
    engine sends weights of -128 to the portable path). masked (AVX-512): x is read with the mask `rmask`, the
    lanes past the channels as zeros (a masked load reads nothing there)."""
    n = d.name
    if n == "scalar":
        terms = [f"(int32_t)({a})[0] * (int32_t)({b})[0]" for a, b in zip(x, w, strict=True)]
        return [f"acc0_0 += {' + '.join(terms)};"]
    if n.startswith("wasm"):  # 8 channels per int16 vector
        out = []
        for h in range(d.nv // 2):
            prods = [f"wasm_i16x8_mul(wasm_i16x8_load8x8({a} + {8 * h}), wasm_v128_load({b} + {8 * h}))"
                     for a, b in zip(x, w, strict=True)]
            s = prods[0] if len(prods) == 1 else f"wasm_i16x8_add({prods[0]}, {prods[1]})"
            out += [f"{{ const v128_t pr = {s};",
                    f"  acc0_{2 * h} = wasm_i32x4_add(acc0_{2 * h}, wasm_i32x4_extend_low_i16x8(pr));",
                    f"  acc0_{2 * h + 1} = wasm_i32x4_add(acc0_{2 * h + 1}, wasm_i32x4_extend_high_i16x8(pr)); }}"]
        return out
    if n == "avx2":
        prods = [f"_mm256_mullo_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i*)({a}))), "
                 f"_mm256_loadu_si256((const __m256i*)({b})))" for a, b in zip(x, w, strict=True)]
        s = prods[0] if len(prods) == 1 else f"_mm256_add_epi16({prods[0]}, {prods[1]})"
        return [f"{{ const __m256i pr = {s};",
                "  acc0_0 = _mm256_add_epi32(acc0_0, _mm256_cvtepi16_epi32(_mm256_castsi256_si128(pr)));",
                "  acc0_1 = _mm256_add_epi32(acc0_1, _mm256_cvtepi16_epi32(_mm256_extracti128_si256(pr, 1))); }"]
    if n.startswith("avx512"):
        load = "_mm256_maskz_loadu_epi8(rmask, {})" if masked else "_mm256_loadu_si256((const __m256i*)({}))"
        prods = [f"_mm512_mullo_epi16(_mm512_cvtepi8_epi16({load.format(a)}), "
                 f"_mm512_loadu_si512({b}))" for a, b in zip(x, w, strict=True)]
        s = prods[0] if len(prods) == 1 else f"_mm512_add_epi16({prods[0]}, {prods[1]})"
        return [f"{{ const __m512i pr = {s};",
                "  acc0_0 = _mm512_add_epi32(acc0_0, _mm512_cvtepi16_epi32(_mm512_castsi512_si256(pr)));",
                "  acc0_1 = _mm512_add_epi32(acc0_1, _mm512_cvtepi16_epi32(_mm512_extracti64x4_epi64(pr, 1))); }"]
    if n == "neon":
        s = f"vmulq_s16(vmovl_s8(vld1_s8({x[0]})), vld1q_s16({w[0]}))"
        if len(x) == 2:
            s = f"vmlaq_s16({s}, vmovl_s8(vld1_s8({x[1]})), vld1q_s16({w[1]}))"
        return [f"{{ const int16x8_t pr = {s};", "  acc0_0 = vaddw_s16(acc0_0, vget_low_s16(pr));",
                "  acc0_1 = vaddw_high_s16(acc0_1, pr); }"]
    raise KeyError(n)


def _store_rem(d: QTile, dst_j: str) -> list[str]:
    """A partial channel tile's rem bytes, stored through a buffer (dst_j: the output byte j)."""
    return [f"int8_t ob[{d.nr}];", *_store_row(d, 0, "ob"), f"for (size_t j = 0; j < rem; j++) {dst_j} = ob[j];"]


def _taps(c: Code, d: QTile, partial: bool) -> None:
    """The ks taps, two at a time, then the odd one; a partial tile reads its inputs through zeroed buffers, or on
    AVX-512 with masked loads (channel counts such as 40, 112 or 144 leave a partial tile on every pixel)."""
    ct = d.nr
    masked = partial and d.name.startswith("avx512")
    if masked:
        c(f"const __mmask{ct} rmask = (__mmask{ct})((1ull << rem) - 1);")

    def src(k: int) -> str:
        if not partial or masked:
            c(f"const int8_t* x{k} = in[t + {k}] + c0;")
        else:
            c(f"int8_t x{k}[{ct}];", f"for (size_t j = 0; j < {ct}; j++) x{k}[j] = j < rem ? in[t + {k}][c0 + j] : 0;")
        return f"x{k}"
    with c.block(f"for (; t + 2 <= ks; t += 2, wt += {2 * ct})"):
        c(*_mac(d, [src(0), src(1)], ["wt", f"wt + {ct}"], masked))
    with c.block("if (t < ks)"):
        c(*_mac(d, [src(0)], ["wt"], masked))


def _acc_init(d: QTile) -> list[str]:
    p = "wb + {}"
    ld = {"scalar": "wb[{}]", "avx2": "_mm256_loadu_si256((const __m256i*)(wb + {}))",
          "avx512": "_mm512_loadu_si512(wb + {})", "neon": "vld1q_s32(wb + {})"}
    n = "avx512" if d.name.startswith("avx512") else d.name
    tmpl = ld.get(n, "wasm_v128_load(" + p + ")")
    return [f"{d.ivt} acc0_{v} = {tmpl.format(v * d.vli)};" for v in range(d.nv)]


def qdwconv(t: QTile, ks: int = 0) -> str:
    """The kernel for any ks, or (ks > 0) for that ks only, its taps unrolled on whole channel tiles."""
    d = dw_tile(t)
    c = Code()
    sig = (f"void {qdwconv_name(t, ks)}(size_t channels, size_t width, size_t ks, const int8_t* const* in, "
           "const void* packed_w, int8_t* out, size_t out_stride, const wrt_qparams* p)")
    with c.block(d.fn(sig)):
        c(*_bounds(d))
        _pixels(c, d, ks)
    return c.text()


def _unrolled(c: Code, d: QTile, ks: int) -> None:
    """A whole channel tile's ks taps, two at a time, from the row pointers i0.. of this pixel."""
    ct = d.nr
    for t0 in range(0, ks, 2):
        taps = list(range(t0, min(t0 + 2, ks)))
        c(*_mac(d, [f"i{k} + c0" for k in taps], [f"wt + {k * ct}" for k in taps]))


def _pixels(c: Code, d: QTile, ks: int = 0) -> None:
    ct = d.nr
    with c.block("for (size_t px = 0; px < width; px++, in += ks, out += out_stride)"):
        c("const char* pw = (const char*)packed_w;")
        if ks:
            c(*(f"const int8_t* i{k} = in[{k}];" for k in range(ks)))
        with c.block(f"for (size_t c0 = 0; c0 < channels; c0 += {ct}, pw += {ct} * (8 + 2 * ks))"):
            c(f"const size_t rem = channels - c0 < {ct} ? channels - c0 : {ct};")
            c("const int32_t* wb = (const int32_t*)(const void*)pw;")
            c(*_acc_init(d))
            c(f"const int16_t* wt = (const int16_t*)(const void*)(pw + {8 * ct});")
            c("size_t t = 0;")
            with c.block(f"if (rem == {ct})"):
                if ks:
                    _unrolled(c, d, ks)
                else:
                    _taps(c, d, False)
            with c.block("else"):
                _taps(c, d, True)
            c(*_mults(d, "pw"))
            for v in range(d.nv):
                c(*_requant(d, 0, v))
            with c.block(f"if (rem == {ct})"):
                c(*_store_row(d, 0, "(out + c0)"))
            with c.block("else"):
                c(*_store_rem(d, "out[c0 + j]"))


# -- wasm relaxed dot tables: four taps per i32x4.relaxed_dot_i8x16_i7x16_add -----------------------------------------
# The input is NHWC, so a channel's taps lie in different rows: 16 channels of 4 taps are loaded as four vectors and
# transposed by two rounds of interleaves (byte pairs, then 16-bit pairs) into four vectors of 4 channels x 4 taps,
# each one dot product with the packed weights. A 3x3 filter's groups are its columns (ky = 0, 1, 2 and a zero tap),
# so on a stride-1 row a pixel's first two columns are the last two of the pixel before: that kernel runs each tile of
# 16 channels along the row and transposes one column per pixel instead of three. Any other filter (5x5: 7 groups
# for 25 taps) takes runs of 4 consecutive taps, the last padded with zero taps. Packing (engine/qconv.c, entries
# with kr = 4 and ct = 16): per tile of 16 channels, 16 int32 biases (zero point and XOFF folded in), 16 float
# multipliers, then per group 64 bytes, channel j's 4 taps at 4 * j. Activations are XORed with p->xmask as in the
# dot GEMM.
DOT_KS = {"wasm_relaxed": (9, 0)}  # 3x3 by columns, any other by runs


def dot_tile() -> QTile:
    return QTile("wasm_relaxed_dot", "", 1, 16, 4, 4, "v128_t", "v128_t")


def dot_ks(t: QTile) -> tuple[int, ...]:
    return DOT_KS.get(t.name, ())


def qdwconv_dot_name(ks: int) -> str:
    return f"wrt_wasm_relaxed_dot_qdwconv_{ks or 'any'}_c16"


def _transpose(c: Code, x: list[str], u: str) -> None:
    """{u}0..3 = the 4 taps at x (None: a zero tap, its weights zero) of 16 channels as 4 vectors of 4 channels x 4
    taps, by byte then 16-bit interleaves."""
    lo = ", ".join(f"{j}, {j + 16}" for j in range(8))
    hi = ", ".join(f"{j}, {j + 16}" for j in range(8, 16))
    with c.block(""):
        for j, a in enumerate(x):
            c(f"const v128_t q{j} = " + ("xm;" if a is None else f"wasm_v128_xor(wasm_v128_load({a}), xm);"))
        c(f"const v128_t l01 = wasm_i8x16_shuffle(q0, q1, {lo}), h01 = wasm_i8x16_shuffle(q0, q1, {hi});",
          f"const v128_t l23 = wasm_i8x16_shuffle(q2, q3, {lo}), h23 = wasm_i8x16_shuffle(q2, q3, {hi});")
        for v, (s, half) in enumerate((("l", 0), ("l", 1), ("h", 0), ("h", 1))):
            idx = ", ".join(f"{j}, {j + 8}" for j in range(4 * half, 4 * half + 4))
            c(f"{u}{v} = wasm_i16x8_shuffle({s}01, {s}23, {idx});")


def _dots(c: Code, u: str, wt: str) -> None:
    c(*(f"acc0_{v} = wasm_i32x4_relaxed_dot_i8x16_i7x16_add(wasm_v128_load({wt} + {16 * v}), {u}{v}, acc0_{v});"
        for v in range(4)))


def _stride1_shift(c: Code) -> None:
    """int shift: whether a 3x3 row is stride 1 (its pixels' columns 0 and 1 the columns 1 and 2 of the one before)."""
    c("/* stride 1: every pixel's columns 0 and 1 are the row pointers of the pixel before's columns 1 and 2 */",
      "int shift = 1;")
    with c.block("for (size_t px = 1; px < width; px++)"):
        c("const int8_t* const* a = in + (px - 1) * 9;")
        c("shift &= (a[9] == a[1]) & (a[10] == a[2]) & (a[12] == a[4]) & (a[13] == a[5]) & (a[15] == a[7]) & "
          "(a[16] == a[8]);")


def _dot_epilogue(c: Code, d: QTile, dst: str, whole: bool) -> None:
    c(*_mults(d, "pw"))
    for v in range(d.nv):
        c(*_requant(d, 0, v))
    if whole:
        c(*_store_row(d, 0, dst))
    else:
        c(*_store_rem(d, f"{dst}[j]"))


def qdwconv_dot(ks: int) -> str:
    """The relaxed dot depthwise kernel for 3x3 filters (ks = 9) or, ks = 0, any filter; channel tile 16."""
    if not ks:
        return _qdwconv_dot_runs()
    assert ks == 9
    d = dot_tile()
    tile = 16 * 8 + 64 * 3
    c = Code()
    sig = (f"void {qdwconv_dot_name(ks)}(size_t channels, size_t width, size_t ks, const int8_t* const* in, "
           "const void* packed_w, int8_t* out, size_t out_stride, const wrt_qparams* p)")
    with c.block(d.fn(sig)):
        c(*_bounds(d), "const v128_t xm = wasm_i32x4_splat((int32_t)p->xmask);")
        _stride1_shift(c)
        c("const size_t full = channels & ~(size_t)15;", "const char* pw = (const char*)packed_w;")
        with c.block(f"for (size_t c0 = 0; c0 < full; c0 += 16, pw += {tile})"):
            c("const int32_t* wb = (const int32_t*)(const void*)pw;", "const int8_t* wt = (const int8_t*)(pw + 128);",
              "v128_t u0 = xm, u1 = xm, u2 = xm, u3 = xm, v0 = xm, v1 = xm, v2 = xm, v3 = xm, s0, s1, s2, s3;",
              "const int8_t* const* ip = in;", "int8_t* op = out + c0;")
            with c.block("for (size_t px = 0; px < width; px++, ip += 9, op += out_stride)"):
                with c.block("if (px == 0 || !shift)"):
                    _transpose(c, ["ip[0] + c0", "ip[3] + c0", "ip[6] + c0", None], "u")
                    _transpose(c, ["ip[1] + c0", "ip[4] + c0", "ip[7] + c0", None], "v")
                _transpose(c, ["ip[2] + c0", "ip[5] + c0", "ip[8] + c0", None], "s")
                c(*_acc_init(d))
                _dots(c, "u", "wt")
                _dots(c, "v", "wt + 64")
                _dots(c, "s", "wt + 128")
                _dot_epilogue(c, d, "op", True)
                c(*(f"u{v} = v{v};" for v in range(4)), *(f"v{v} = s{v};" for v in range(4)))
        # the partial tile: each column's rows through a zeroed buffer
        with c.block("if (full < channels)"):
            c("const size_t rem = channels - full;")
            with c.block("for (size_t px = 0; px < width; px++, in += ks, out += out_stride)"):
                c("const int32_t* wb = (const int32_t*)(const void*)pw;", *_acc_init(d))
                with c.block("for (size_t g = 0; g < 3; g++)"):
                    c("int8_t xb[3][16];", "v128_t s0, s1, s2, s3;")
                    with c.block("for (size_t j = 0; j < 3; j++)"):
                        c("for (size_t k = 0; k < 16; k++) xb[j][k] = k < rem ? in[3 * j + g][full + k] : 0;")
                    _transpose(c, ["xb[0]", "xb[1]", "xb[2]", None], "s")
                    _dots(c, "s", "(const int8_t*)(pw + 128) + 64 * g")
                _dot_epilogue(c, d, "(out + full)", False)
    return c.text()


def _qdwconv_dot_runs() -> str:
    """Any filter by runs of 4 taps: taps past ks read a zero row (their weights are zero too); a partial channel
    tile reads its rem bytes per tap through a zeroed buffer."""
    d = dot_tile()
    c = Code()
    sig = (f"void {qdwconv_dot_name(0)}(size_t channels, size_t width, size_t ks, const int8_t* const* in, "
           "const void* packed_w, int8_t* out, size_t out_stride, const wrt_qparams* p)")
    with c.block(d.fn(sig)):
        c(*_bounds(d), "const v128_t xm = wasm_i32x4_splat((int32_t)p->xmask);",
          "static const int8_t zrow[16];", "const size_t tile = 128 + 64 * ((ks + 3) / 4);")
        with c.block("for (size_t c0 = 0; c0 < channels; c0 += 16)"):
            c("const char* pw = (const char*)packed_w + c0 / 16 * tile;",
              "const size_t rem = channels - c0 < 16 ? channels - c0 : 16;",
              "const int8_t* const* ip = in;", "int8_t* op = out + c0;")
            with c.block("for (size_t px = 0; px < width; px++, ip += ks, op += out_stride)"):
                c("const int32_t* wb = (const int32_t*)(const void*)pw;", *_acc_init(d),
                  "const int8_t* wt = (const int8_t*)(pw + 128);")
                with c.block("for (size_t t = 0; t < ks; t += 4, wt += 64)"):
                    c("const int8_t* r[4];", "int8_t xb[4][16];", "v128_t s0, s1, s2, s3;",
                      "for (size_t j = 0; j < 4; j++) r[j] = t + j < ks ? ip[t + j] + c0 : zrow;")
                    with c.block("if (rem < 16)"), c.block("for (size_t j = 0; j < 4; j++)"):
                        c("for (size_t k = 0; k < 16; k++) xb[j][k] = k < rem ? r[j][k] : 0;", "r[j] = xb[j];")
                    _transpose(c, ["r[0]", "r[1]", "r[2]", "r[3]"], "s")
                    _dots(c, "s", "wt")
                c(*_mults(d, "pw"))
                for v in range(d.nv):
                    c(*_requant(d, 0, v))
                with c.block("if (rem == 16)"):
                    c(*_store_row(d, 0, "op"))
                with c.block("else"):
                    c(*_store_rem(d, "op[j]"))
    return c.text()


# -- AVX-512 VNNI: four taps per vpdpbusd ------------------------------------------------------------------------------
# As the relaxed dot kernel, on 64 channels: four rows of 64 bytes (one per tap, XORed with 0x80: the unsigned operand)
# are transposed by two rounds of unpacks within each 128-bit lane, into four vectors whose dword i of lane k holds
# the 4 taps of channel 16k + 4v + i (v: the vector). The packed biases, multipliers and weights follow that order
# (engine/qconv.c, dw_slot), and the packs that narrow the int32 results (packssdw, then packsswb, both within
# lanes) give the 64 bytes back in channel order. A partial tile reads and writes with byte masks.
VNNI_KS = {"avx512vnni": (9, 25)}


def vnni_ks(t: QTile) -> tuple[int, ...]:
    return VNNI_KS.get(t.name, ())


def qdwconv_vnni_name(ks: int) -> str:
    return f"wrt_avx512vnni_dot_qdwconv_{ks}_c64"


_LD256 = "_mm256_loadu_si256((const __m256i*)({}))"


def _vnni_ops(bits: int) -> dict[str, str]:
    """Intrinsic prefix, vector types and mask type of the 512- or 256-bit form (the 256-bit one reads lanes 0 and 1
    of each packed vector: the tile's first 32 channels, in the same order)."""
    if bits == 512:
        return {"p": "_mm512", "i": "__m512i", "f": "__m512", "m": "__mmask64", "ld": "_mm512_loadu_si512({})",
                "si": "si512"}
    return {"p": "_mm256", "i": "__m256i", "f": "__m256", "m": "__mmask32", "ld": _LD256, "si": "si256"}


def _vnni_group(c: Code, o: dict[str, str], rows: list[str | None], wt: str) -> None:
    """acc0..3 += the taps whose rows (vectors, not yet flipped) are given (None: past ks, its weights zero), weights at
    wt."""
    P, V = o["p"], o["i"]
    with c.block(""):
        half = rows[2] is None and rows[3] is None  # two taps or one: the second pair of rows is zero
        for j, a in enumerate(rows[:2] if half else rows):
            c(f"const {V} r{j} = " + ("z;" if a is None else f"{P}_xor_{o['si']}({a}, xm);"))
        c(f"const {V} t0 = {P}_unpacklo_epi8(r0, r1), t1 = {P}_unpackhi_epi8(r0, r1);")
        if half:
            c(f"const {V} t2 = z, t3 = z;")
        else:
            c(f"const {V} t2 = {P}_unpacklo_epi8(r2, r3), t3 = {P}_unpackhi_epi8(r2, r3);")
        for v, (op, a, b) in enumerate((("lo", 0, 2), ("hi", 0, 2), ("lo", 1, 3), ("hi", 1, 3))):
            w = o["w"].format(f"{wt} + {64 * v}")
            c(f"acc{v} = {P}_dpbusd_epi32(acc{v}, {P}_unpack{op}_epi16(t{a}, t{b}), {w});")


def _vnni_tile(c: Code, bits: int, ks: int, masked: bool, pair: bool = False) -> None:
    """One tile at c0 (pw its packed weights): accumulate, requantize, narrow by packs, store (masked: rem bytes).
    pair: two pixels of at most 32 channels (rows i*, j*) in the two halves of 512-bit vectors, the packed 256-bit
    weights broadcast to both."""
    o = _vnni_ops(bits)
    P, V, F = o["p"], o["i"], o["f"]
    ld = f"{P}_maskz_loadu_epi8(m, {{}})" if masked else o["ld"]
    o["w"] = o["ld"]
    if pair:
        o["w"] = f"_mm512_broadcast_i64x4({_LD256})"
        half = "_mm256_maskz_loadu_epi8(m, {})" if masked else _LD256
        ld = f"_mm512_inserti64x4(_mm512_castsi256_si512({half}), {half}, 1)"
    c(f"const {V} xm = {P}_set1_epi8((char)0x80), z = {P}_setzero_{o['si']}();",
      f"const {V} qzy = {P}_set1_epi16((int16_t)p->zy);",
      f"const {F} qlo = {P}_set1_ps(p->lo), qhi = {P}_set1_ps(p->hi);",
      "const int32_t* wb = (const int32_t*)(const void*)pw;",
      *(f"{V} acc{v} = {o['w'].format(f'wb + {16 * v}')};" for v in range(4)),
      "const int8_t* wt = (const int8_t*)(pw + 512);")
    if masked:
        mt = "__mmask32" if pair else o["m"]
        c(f"const {mt} m = ({mt})(((uint64_t)1 << rem) - 1);")

    def row(k: int) -> str | None:
        if k >= ks:
            return None
        return ld.format(f"i{k} + c0", f"j{k} + c0") if pair else ld.format(f"i{k} + c0")
    for g in range((ks + 3) // 4):
        _vnni_group(c, o, [row(k) for k in range(4 * g, 4 * g + 4)], f"wt + {256 * g}")
    c("const float* mp = (const float*)(const void*)(pw + 256);")
    for v in range(4):
        mq = f"_mm512_castsi512_ps({o['w'].format(f'mp + {16 * v}')})" if pair else f"{P}_loadu_ps(mp + {16 * v})"
        f = f"{P}_mul_ps({P}_cvtepi32_ps(acc{v}), {mq})"
        c(f"const {V} q{v} = {P}_cvtps_epi32({P}_min_ps({P}_max_ps({f}, qlo), qhi));")
    # |q| <= 255 and q + zy in [-128, 127]: both packs are exact
    c(f"const {V} h01 = {P}_add_epi16({P}_packs_epi32(q0, q1), qzy);",
      f"const {V} h23 = {P}_add_epi16({P}_packs_epi32(q2, q3), qzy);",
      f"const {V} b = {P}_packs_epi16(h01, h23);")
    if pair:
        for dst, h in (("out", "_mm512_castsi512_si256(b)"), ("out + out_stride", "_mm512_extracti64x4_epi64(b, 1)")):
            c(f"_mm256_mask_storeu_epi8({dst}, m, {h});" if masked else
              f"_mm256_storeu_si256((__m256i*)(void*)({dst}), {h});")
    elif masked:
        c(f"{P}_mask_storeu_epi8(out + c0, m, b);")
    else:
        c(f"{P}_storeu_{o['si']}(({V}*)(void*)(out + c0), b);")


def qdwconv_vnni(ks: int) -> str:
    """The AVX-512 VNNI depthwise kernel for ks taps (unrolled), channel tile 64; a last tile of at most 32 channels
    with 256-bit vectors (MobileNetV2's 96 channels, EfficientNet-Lite0's 96, 480 and 672), or two pixels per
    512-bit vector where the layer has no more (both models' first depthwise layer, 32 channels)."""
    c = Code()
    sig = (f"static {_VNNI_ATTR} void {qdwconv_vnni_name(ks)}(size_t channels, size_t width, size_t ks, "
           "const int8_t* const* in, const void* packed_w, int8_t* out, size_t out_stride, const wrt_qparams* p)")
    with c.block(sig):
        c("size_t px = 0;")
        # at most 32 channels (the first depthwise layer of both models): two pixels per 512-bit vector
        with c.block("if (channels <= 32)"), \
                c.block("for (; px + 2 <= width; px += 2, in += 2 * ks, out += 2 * out_stride)"):
            c("const char* pw = (const char*)packed_w;", "const size_t c0 = 0, rem = channels;")
            c(*(f"const int8_t* i{k} = in[{k}];" for k in range(ks)))
            c(*(f"const int8_t* j{k} = in[ks + {k}];" for k in range(ks)))
            with c.block("if (rem == 32)"):
                _vnni_tile(c, 512, ks, False, pair=True)
            with c.block("else"):
                _vnni_tile(c, 512, ks, True, pair=True)
        _vnni_pixels(c, ks)
    return c.text()


def _vnni_pixels(c: Code, ks: int) -> None:
    """The pixels left, one at a time."""
    with c.block("for (; px < width; px++, in += ks, out += out_stride)"):
        c("const char* pw = (const char*)packed_w;", "size_t c0 = 0;")
        c(*(f"const int8_t* i{k} = in[{k}];" for k in range(ks)))
        with c.block(f"for (; c0 + 64 <= channels; c0 += 64, pw += {64 * 8 + 256 * ((ks + 3) // 4)})"):
            _vnni_tile(c, 512, ks, False)
        c("const size_t rem = channels - c0;")
        with c.block("if (rem > 32)"):
            _vnni_tile(c, 512, ks, True)
        with c.block("else if (rem == 32)"):
            _vnni_tile(c, 256, ks, False)
        with c.block("else if (rem)"):
            _vnni_tile(c, 256, ks, True)


# -- AVX2 3x3 by filter column: int16 pairs of rows, vpmaddwd ----------------------------------------------------------
# A filter column's taps lie in three input rows at the same pixel. Rows 0 and 1 of 16 channels are interleaved by
# bytes and widened into two vectors of 8 channels x 2 taps, each one vpmaddwd with the packed weight pairs; row 2 is
# widened to int32 (its high half then multiplies a zero weight) for one more vpmaddwd per 8 channels. On a stride-1
# row a pixel's first two columns are the last two of the pixel before, so the kernel runs each 16-channel tile along
# the row and interleaves one new column per pixel (rows 0 and 1) instead of three. Packing (engine/qconv.c, entry kr
# 2): per tile of 16 channels, 16 int32 biases, 16 float multipliers, then per column 64 int16 (channel j's taps
# (0, kx), (1, kx) at 2j, its tap (2, kx) and a zero at 32 + 2j).
COLS_KS = {"avx2": (9,)}


def cols_ks(t: QTile) -> tuple[int, ...]:
    return COLS_KS.get(t.name, ())


def qdwconv_cols_name(t: QTile) -> str:
    return f"wrt_{t.name}_qdwconv_cols_9_c16"


def qdwconv_cols(t: QTile) -> str:
    """The AVX2 3x3 kernel by filter column; channel tile 16 (a partial last tile through zeroed buffers)."""
    d = dw_tile(t)
    assert d.nr == 16 and t.name == "avx2"
    c = Code()
    sig = (f"void {qdwconv_cols_name(t)}(size_t channels, size_t width, size_t ks, const int8_t* const* in, "
           "const void* packed_w, int8_t* out, size_t out_stride, const wrt_qparams* p)")

    def pair(col: str, r0: str, r1: str) -> None:
        c(f"{{ const __m128i x0 = _mm_loadu_si128((const __m128i*)(const void*)({r0}));",
          f"  const __m128i x1 = _mm_loadu_si128((const __m128i*)(const void*)({r1}));",
          f"  {col}a = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(x0, x1));",
          f"  {col}b = _mm256_cvtepi8_epi16(_mm_unpackhi_epi8(x0, x1)); }}")

    def taps(cols: list[str], row2: list[str]) -> None:
        """acc0_0/acc0_1 += the three columns' products (pairs in cols, row 2 read at row2)."""
        for kx, (col, r2) in enumerate(zip(cols, row2, strict=True)):
            w = f"wt + {64 * kx}"
            c(f"acc0_0 = _mm256_add_epi32(acc0_0, _mm256_madd_epi16({col}a, "
              f"_mm256_loadu_si256((const __m256i*)(const void*)({w}))));",
              f"acc0_1 = _mm256_add_epi32(acc0_1, _mm256_madd_epi16({col}b, "
              f"_mm256_loadu_si256((const __m256i*)(const void*)({w} + 16))));",
              f"acc0_0 = _mm256_add_epi32(acc0_0, _mm256_madd_epi16(_mm256_cvtepi8_epi32(_mm_loadl_epi64("
              f"(const __m128i*)(const void*)({r2}))), _mm256_loadu_si256((const __m256i*)(const void*)({w} + 32))));",
              f"acc0_1 = _mm256_add_epi32(acc0_1, _mm256_madd_epi16(_mm256_cvtepi8_epi32(_mm_loadl_epi64("
              f"(const __m128i*)(const void*)({r2} + 8))), "
              f"_mm256_loadu_si256((const __m256i*)(const void*)({w} + 48))));")

    with c.block(d.fn(sig)):
        c("(void)ks;", *_bounds(d))
        _stride1_shift(c)
        c("const size_t full = channels & ~(size_t)15;", "const char* pw = (const char*)packed_w;")
        with c.block("for (size_t c0 = 0; c0 < full; c0 += 16, pw += 512)"):
            c("const int32_t* wb = (const int32_t*)(const void*)pw;",
              "const int16_t* wt = (const int16_t*)(const void*)(pw + 128);",
              "__m256i u0a = _mm256_setzero_si256(), u0b = u0a, u1a = u0a, u1b = u0a, u2a, u2b;",
              "const int8_t* const* ip = in;", "int8_t* op = out + c0;")
            with c.block("for (size_t px = 0; px < width; px++, ip += 9, op += out_stride)"):
                with c.block("if (px == 0 || !shift)"):
                    pair("u0", "ip[0] + c0", "ip[3] + c0")
                    pair("u1", "ip[1] + c0", "ip[4] + c0")
                pair("u2", "ip[2] + c0", "ip[5] + c0")
                c(*_acc_init(d))
                taps(["u0", "u1", "u2"], [f"ip[{6 + kx}] + c0" for kx in range(3)])
                _dot_epilogue(c, d, "op", True)
                c("u0a = u1a, u0b = u1b, u1a = u2a, u1b = u2b;")
        with c.block("if (full < channels)"):  # the partial tile: each pixel's 9 rows through a zeroed buffer
            c("const size_t rem = channels - full;")
            with c.block("for (size_t px = 0; px < width; px++, in += 9, out += out_stride)"):
                c("const int32_t* wb = (const int32_t*)(const void*)pw;",
                  "const int16_t* wt = (const int16_t*)(const void*)(pw + 128);", "int8_t xb[9][16];",
                  "for (size_t t = 0; t < 9; t++)",
                  "  for (size_t k = 0; k < 16; k++) xb[t][k] = k < rem ? in[t][full + k] : 0;",
                  "__m256i u0a, u0b, u1a, u1b, u2a, u2b;")
                for kx in range(3):
                    pair(f"u{kx}", f"xb[{kx}]", f"xb[{3 + kx}]")
                c(*_acc_init(d))
                taps(["u0", "u1", "u2"], [f"xb[{6 + kx}]" for kx in range(3)])
                _dot_epilogue(c, d, "(out + full)", False)
    return c.text()
