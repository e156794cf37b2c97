"""Block-sparse GEMM micro-kernels: weights in 1x4 blocks (4 output channels x 1 input column, python_ref/sparse.py),
activations NHWC.

spmm: a tile of MR pixels against every block row. A vector holds the 4 output channels of a block for G = VL/4
pixels (lane l = channel l / G of pixel l % G), so per stored block the kernel loads the block's 4 weights once
(spread to the G pixel groups), and per group of G pixels broadcasts their input value in that column and does one
multiply-add: NV = MR/G independent accumulator chains. At the end of a block row the lanes are permuted
pixel-major and each pixel's 4 channels stored with one 128-bit store.
- G = 1 (wasm SIMD128, relaxed, NEON; scalar keeps 4 scalars per pixel): the input is read where it lies, row i at
  x + i * x_stride (rows of the NHWC input, or an im2col copy for KxK), x(i, k) = one broadcast load.
- G > 1 (AVX2, AVX-512): the G pixels of a group must be contiguous per column, so the engine packs each tile
  transposed, [K][MR] (sppack below, 4x4 transposes), and x_stride = 4*G; one broadcast-G load per group.
spmv: one pixel (FULLY_CONNECTED with batch 1, 1x1 spatial outputs): 4 lanes = the block's 4 channels, U partial
sums over alternate blocks (independent chains), added at the end.

Per block row r of n/4: 4 bias floats, then 4 weights per stored block; nnz[r] blocks; offs[] holds each block's
byte offset of its column in the input tile (column * 4 for G = 1, column * 4 * MR when packed).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kernels_wasm.gen.cwriter import Code
from kernels_wasm.gen.isa import Isa

SSE_ATTR = {"avx2": '__attribute__((target("avx2,fma")))',
            "avx512": '__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma")))'}


@dataclass(frozen=True)
class SparseTile:
    """Tile sizes, and where the sparse kernels start to beat the dense ones on this target (measured with
    `wasmrt bench --sparsity-sweep layers`, kernels_wasm/README.md): a layer of K columns runs sparse from a block
    sparsity of min_sparsity + k_penalty / K on (the pack and the per-output stores weigh more when K is small),
    a one-pixel layer (spmv) from spmv_min_sparsity."""

    lanes: int  # f32 lanes of the vectors the spmm uses (4 = 128-bit: G = 1)
    mr: int  # pixels per tile
    spmv_u: int  # partial sums of the one-pixel kernel
    min_sparsity: float
    k_penalty: float
    spmv_min_sparsity: float = 0.2
    # the unstructured kernel (spmmu): pixels per tile, and the element sparsity (fraction of zero weights) from
    # which a layer of K columns whose 1x4 blocks stay below the break-even above runs it: u_min + u_k_penalty / K
    umr: int = 32
    u_min_sparsity: float = 0.5
    u_k_penalty: float = 8.0


TILES: dict[str, SparseTile] = {
    "scalar": SparseTile(1, 2, 2, 0.2, 0.0, umr=4, u_min_sparsity=0.3),
    # wasm: 32 pixels (8 vectors) per non-zero share its offset and weight loads: pose_detection's unstructured 1x1
    # layers ran ~10% faster in Chromium than with 16 (CPU clock, loaded machine)
    "wasm_simd128": SparseTile(4, 8, 4, 0.56, 2.0, umr=32),
    "wasm_relaxed": SparseTile(4, 8, 4, 0.57, 6.0, umr=32),
    "avx2": SparseTile(8, 16, 4, 0.35, 4.0, 0.3),
    "avx512": SparseTile(16, 32, 4, 0.52, 10.0, 0.45, umr=64),  # its dense GEMV is fast: spmv wins from ~42%
    # not measured (qemu): as wasm relaxed, the same kernel shape with FMA
    "neon": SparseTile(4, 16, 4, 0.38, 6.0, umr=16),
}


def groups(isa: Isa) -> int:
    """G: pixels per vector of the spmm."""
    return max(1, TILES[isa.name].lanes // 4)


def spmm_name(isa: Isa) -> str:
    return f"wrt_{isa.name}_spmm_{TILES[isa.name].mr}"


def spmv_name(isa: Isa) -> str:
    return f"wrt_{isa.name}_spmv"


def sppack_name(isa: Isa, mr: int = 0) -> str:
    return f"wrt_{isa.name}_sppack_{mr or TILES[isa.name].mr}"


def spmmu_name(isa: Isa) -> str:
    return f"wrt_{isa.name}_spmmu_{TILES[isa.name].umr}"



# -- 4-lane (128-bit) operations: the chunks every target stores, and the whole vector where G = 1 ------------------
_Q_OPS = {  # target -> (vtype, load, dup(scalar), loaddup, fma(a, b, c) = a*b+c, add, min, max, store)
    "wasm_simd128": ("v128_t", "wasm_v128_load({0})", "wasm_f32x4_splat({0})", "wasm_v128_load32_splat({0})",
                     "wasm_f32x4_add(wasm_f32x4_mul({0}, {1}), {2})", "wasm_f32x4_add({0}, {1})",
                     "wasm_f32x4_pmin({0}, {1})", "wasm_f32x4_pmax({0}, {1})", "wasm_v128_store({0}, {1})"),
    "neon": ("float32x4_t", "vld1q_f32({0})", "vdupq_n_f32({0})", "vld1q_dup_f32({0})", "vfmaq_f32({2}, {0}, {1})",
             "vaddq_f32({0}, {1})", "vminq_f32({0}, {1})", "vmaxq_f32({0}, {1})", "vst1q_f32({0}, {1})"),
    "sse": ("__m128", "_mm_loadu_ps({0})", "_mm_set1_ps({0})", "_mm_broadcast_ss({0})", "_mm_fmadd_ps({0}, {1}, {2})",
            "_mm_add_ps({0}, {1})", "_mm_min_ps({1}, {0})", "_mm_max_ps({1}, {0})", "_mm_storeu_ps({0}, {1})"),
}
_Q_OPS["wasm_relaxed"] = (*_Q_OPS["wasm_simd128"][:4], "wasm_f32x4_relaxed_madd({0}, {1}, {2})",
                          *_Q_OPS["wasm_simd128"][5:])


class Quad:
    """4-lane operations of a target (x86 targets use SSE with FMA inside their own ISA attribute)."""

    def __init__(self, isa: Isa) -> None:
        self.name = "sse" if isa.name in SSE_ATTR else isa.name
        (self.vtype, self._load, self._dup, self._loaddup, self._fma, self._add, self._min, self._max,
         self._store) = _Q_OPS[self.name]

    def load(self, p: str) -> str:
        return self._load.format(p)

    def dup(self, x: str) -> str:
        return self._dup.format(x)

    def loaddup(self, p: str) -> str:
        return self._loaddup.format(p)

    def fma(self, a: str, b: str, c: str) -> str:
        return self._fma.format(a, b, c)

    def add(self, a: str, b: str) -> str:
        return self._add.format(a, b)

    def clamp(self, v: str) -> str:
        return self._min.format(self._max.format(v, "qmin"), "qmax")

    def store(self, p: str, v: str) -> str:
        return self._store.format(p, v) + ";"

    def transpose(self, v: list[str]) -> list[str]:
        """Transpose the 4x4 matrix whose rows are the vectors v (in place)."""
        a, b, c, d = v
        if self.name == "sse":
            return [f"_MM_TRANSPOSE4_PS({a}, {b}, {c}, {d});"]
        if self.name == "neon":
            return [f"const float32x4x2_t tp = vtrnq_f32({a}, {b}), tq = vtrnq_f32({c}, {d});",
                    f"{a} = vcombine_f32(vget_low_f32(tp.val[0]), vget_low_f32(tq.val[0]));",
                    f"{b} = vcombine_f32(vget_low_f32(tp.val[1]), vget_low_f32(tq.val[1]));",
                    f"{c} = vcombine_f32(vget_high_f32(tp.val[0]), vget_high_f32(tq.val[0]));",
                    f"{d} = vcombine_f32(vget_high_f32(tp.val[1]), vget_high_f32(tq.val[1]));"]
        sh = "wasm_i32x4_shuffle"
        return [f"const v128_t t0 = {sh}({a}, {b}, 0, 4, 1, 5), t1 = {sh}({c}, {d}, 0, 4, 1, 5);",
                f"const v128_t t2 = {sh}({a}, {b}, 2, 6, 3, 7), t3 = {sh}({c}, {d}, 2, 6, 3, 7);",
                f"{a} = {sh}(t0, t1, 0, 1, 4, 5);", f"{b} = {sh}(t0, t1, 2, 3, 6, 7);",
                f"{c} = {sh}(t2, t3, 0, 1, 4, 5);", f"{d} = {sh}(t2, t3, 2, 3, 6, 7);"]

    def store_part(self, p: str, v: str, n: str) -> list[str]:
        """The first n (1..3) lanes of v at p, lane-wise."""
        if self.name == "sse":
            return [f"float* tp = {p};", f"__m128 tv = {v};",
                    f"if ({n} & 2) {{ _mm_storel_pi((__m64*)(void*)tp, tv); tv = _mm_movehl_ps(tv, tv); tp += 2; }}",
                    f"if ({n} & 1) _mm_store_ss(tp, tv);"]
        if self.name == "neon":
            return [f"float* tp = {p};", f"float32x2_t th = vget_low_f32({v});",
                    f"if ({n} & 2) {{ vst1_f32(tp, th); th = vget_high_f32({v}); tp += 2; }}",
                    f"if ({n} & 1) vst1_lane_f32(tp, th, 0);"]
        return [f"float* tp = {p};", f"v128_t tv = {v};",
                f"if ({n} & 2) {{ wasm_v128_store64_lane(tp, tv, 0); "
                f"tv = wasm_i64x2_shuffle(tv, tv, 1, 1); tp += 2; }}",
                f"if ({n} & 1) wasm_v128_store32_lane(tp, tv, 0);"]


def _attr(isa: Isa) -> str:
    return SSE_ATTR.get(isa.name, isa.attr)


def _fn(isa: Isa, sig: str) -> str:
    return " ".join(x for x in ("static", _attr(isa), sig) if x)


# -- wide vectors (G > 1): broadcast G pixels, spread 4 weights, permute pixel-major ---------------------------------
# lanes -> (vtype, bcast_g(p), spread4(idx, p), permute(idx, v), chunk(v, q), idx type, set idx, fma, min, max, dup)
_WIDE = {
    8: dict(vtype="__m256", bcast="_mm256_castpd_ps(_mm256_broadcast_sd((const double*)(const void*)({0})))",
            spread="_mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps({1})), {0})",
            permute="_mm256_permutevar8x32_ps({1}, {0})",
            chunk=lambda v, q: f"_mm256_castps256_ps128({v})" if q == 0 else f"_mm256_extractf128_ps({v}, 1)",
            itype="__m256i", iset="_mm256_setr_epi32({0})"),
    16: dict(vtype="__m512", bcast="_mm512_broadcast_f32x4(_mm_loadu_ps({0}))",
             spread="_mm512_permutexvar_ps({0}, _mm512_castps128_ps512(_mm_loadu_ps({1})))",
             permute="_mm512_permutexvar_ps({0}, {1})",
             chunk=lambda v, q: f"_mm512_castps512_ps128({v})" if q == 0 else f"_mm512_extractf32x4_ps({v}, {q})",
             itype="__m512i", iset="_mm512_setr_epi32({0})"),
}


def _store_pixel(c: Code, q: Quad, ptr: str, v: str, full: bool) -> None:
    """Store the 4 channels in v at ptr (full: known to exist), or the n - r < 4 that exist."""
    if full:
        c(q.store(ptr, v))
        return
    with c.block("if (nleft >= 4)"):
        c(q.store(ptr, v))
    with c.block("else"):
        c(*q.store_part(ptr, v, "nleft"))


def _epilogue(c: Code, mr: int, pixel: Callable[[int, bool], None]) -> None:
    """Store a block row's outputs, pixel by pixel (pixel(i, full) emits pixel i's stores at yo): unguarded for a
    whole tile of 4 channels, the common case; else only the mr pixels and nleft channels that exist."""
    c("const size_t nleft = n - r;")
    for full in (True, False):
        with c.block(f"if (mr == {mr} && nleft >= 4)" if full else "else"):
            c("char* yo = (char*)(y + r);")
            for i in range(mr):
                if full:
                    pixel(i, True)
                else:
                    with c.block(f"if (mr > {i})"):
                        pixel(i, False)
                if i + 1 < mr:
                    c("yo += y_stride;")


def _spmm_wide(isa: Isa, t: SparseTile, c: Code) -> None:
    g, lanes, nv = t.lanes // 4, t.lanes, t.mr // (t.lanes // 4)
    wd, q = _WIDE[lanes], Quad(isa)
    spread_idx = ", ".join(str(lane // g) for lane in range(lanes))
    perm_idx = ", ".join(str(g * (i % 4) + i // 4) for i in range(lanes))  # chunk q, lane j <- lane g*j + q
    c(f"const {wd['itype']} spread = {wd['iset'].format(spread_idx)};",
      f"const {wd['itype']} pixmajor = {wd['iset'].format(perm_idx)};")
    c(isa.decl("vmin", isa.dup("clamp->min")), isa.decl("vmax", isa.dup("clamp->max")))
    # the packed tile is MR pixels wide (pixels past mr repeat the last): group v is at a fixed offset, one base
    # register for all (x_stride is 4G by the ABI)
    c("const char* xb = (const char*)x;", "(void)x_stride;")
    with c.block("for (size_t r = 0; r < n; r += 4)"):
        c(f"const {wd['vtype']} bias = {wd['spread'].format('spread', 'w')};", "w += 4;")
        c(*(f"{wd['vtype']} acc{v} = bias;" for v in range(nv)))
        with c.block("for (int32_t k = *nnz++; k > 0; k--)"):
            c("const char* xo = xb + (size_t)*offs++;",
              f"const {wd['vtype']} wv = {wd['spread'].format('spread', 'w')};", "w += 4;")
            for v in range(nv):
                x = wd["bcast"].format(f"(const float*)(const void*)(xo + {4 * g * v})")
                c(f"acc{v} = {isa.fma(x, 'wv', f'acc{v}')};")
        for v in range(nv):
            c(f"acc{v} = {wd['permute'].format('pixmajor', isa.clamp(f'acc{v}', 'vmin', 'vmax'))};")
        _epilogue(c, t.mr, lambda i, full: _store_pixel(c, q, "(float*)(void*)yo", wd["chunk"](f"acc{i // g}", i % g),
                                                        full))


def _x_ptrs(c: Code, nv: int, g: int) -> None:
    """x0..x{nv-1}: input groups; a group past mr aliases the one before it (never read past the input)."""
    c("const char* x0 = (const char*)x;")
    for v in range(1, nv):
        c(f"const char* x{v} = mr > {v * g} ? x{v - 1} + x_stride : x{v - 1};")


def _spmm_quad(isa: Isa, t: SparseTile, c: Code) -> None:
    """G = 1 with 4-lane vectors (wasm, NEON)."""
    q, nv = Quad(isa), t.mr
    c(f"const {q.vtype} qmin = {q.dup('clamp->min')}, qmax = {q.dup('clamp->max')};")
    _x_ptrs(c, nv, 1)
    with c.block("for (size_t r = 0; r < n; r += 4)"):
        c(f"const {q.vtype} bias = {q.load('w')};", "w += 4;")
        c(*(f"{q.vtype} acc{v} = bias;" for v in range(nv)))
        with c.block("for (int32_t k = *nnz++; k > 0; k--)"):
            c("const size_t off = (size_t)*offs++;", f"const {q.vtype} wv = {q.load('w')};", "w += 4;")
            for v in range(nv):
                c(f"acc{v} = {q.fma(q.loaddup(f'(const float*)(const void*)(x{v} + off)'), 'wv', f'acc{v}')};")
        c(*(f"acc{v} = {q.clamp(f'acc{v}')};" for v in range(nv)))
        _epilogue(c, t.mr, lambda i, full: _store_pixel(c, q, "(float*)(void*)yo", f"acc{i}", full))


def _spmm_scalar(t: SparseTile, c: Code) -> None:
    nv = t.mr
    _x_ptrs(c, nv, 1)
    c("const float lo = clamp->min, hi = clamp->max;")
    with c.block("for (size_t r = 0; r < n; r += 4)"):
        for v in range(nv):
            c(*(f"float acc{v}_{j} = w[{j}];" for j in range(4)))
        c("w += 4;")
        with c.block("for (int32_t k = *nnz++; k > 0; k--)"):
            c("const size_t off = (size_t)*offs++;")
            c(*(f"const float w{j} = w[{j}];" for j in range(4)), "w += 4;")
            for v in range(nv):
                c(f"const float xv{v} = *(const float*)(const void*)(x{v} + off);")
                c(*(f"acc{v}_{j} += xv{v} * w{j};" for j in range(4)))
        for v in range(nv):
            for j in range(4):
                a = f"acc{v}_{j}"
                c(f"{a} = {a} < lo ? lo : {a};", f"{a} = {a} > hi ? hi : {a};")

        def pixel(i: int, full: bool) -> None:
            with c.block(""):
                c("float* o = (float*)(void*)yo;")
                c(*(f"o[{j}] = acc{i}_{j};" if full else f"if (nleft > {j}) o[{j}] = acc{i}_{j};" for j in range(4)))
        _epilogue(c, t.mr, pixel)


SPMM_SIG = ("void {name}(size_t mr, size_t n, const float* x, size_t x_stride, const int32_t* restrict nnz, "
            "const int32_t* restrict offs, const float* restrict w, float* y, size_t y_stride, const wrt_clamp* clamp)")


def spmm(isa: Isa) -> str:
    t = TILES[isa.name]
    c = Code()
    with c.block(_fn(isa, SPMM_SIG.format(name=spmm_name(isa)))):
        if isa.vl == 1:
            _spmm_scalar(t, c)
        elif t.lanes == 4:
            _spmm_quad(isa, t, c)
        else:
            _spmm_wide(isa, t, c)
    return c.text()


def spmv(isa: Isa) -> str:
    """One pixel: U partial sums per block row, over alternate blocks."""
    t = TILES[isa.name]
    u = t.spmv_u
    c = Code()
    sig = (f"void {spmv_name(isa)}(size_t n, const float* x, const int32_t* restrict nnz, "
           "const int32_t* restrict offs, "
           "const float* restrict w, float* y, const wrt_clamp* clamp)")
    with c.block(_fn(isa, sig)):
        c("const char* xb = (const char*)x;")
        if isa.vl == 1:
            c("const float lo = clamp->min, hi = clamp->max;")
            with c.block("for (size_t r = 0; r < n; r += 4)"):
                c(*(f"float s{p}_{j} = {f'w[{j}]' if p == 0 else '0.0f'};" for p in range(u) for j in range(4)))
                c("w += 4;", "int32_t k = *nnz++;")
                with c.block(f"for (; k >= {u}; k -= {u})"):
                    for p in range(u):
                        c(f"const float x{p} = *(const float*)(const void*)(xb + (size_t)offs[{p}]);")
                        c(*(f"s{p}_{j} += x{p} * w[{4 * p + j}];" for j in range(4)))
                    c(f"offs += {u};", f"w += {4 * u};")
                with c.block("for (; k > 0; k--)"):
                    c("const float x0 = *(const float*)(const void*)(xb + (size_t)*offs++);")
                    c(*(f"s0_{j} += x0 * w[{j}];" for j in range(4)), "w += 4;")
                for j in range(4):
                    total = " + ".join(f"s{p}_{j}" for p in range(u))
                    c(f"float o{j} = {total};", f"o{j} = o{j} < lo ? lo : o{j};", f"o{j} = o{j} > hi ? hi : o{j};")
                    c(f"if (n - r > {j}) y[r + {j}] = o{j};")
        else:
            q = Quad(isa)
            c(f"const {q.vtype} qmin = {q.dup('clamp->min')}, qmax = {q.dup('clamp->max')};")
            with c.block("for (size_t r = 0; r < n; r += 4)"):
                c(f"{q.vtype} s0 = {q.load('w')};", *(f"{q.vtype} s{p} = {q.dup('0.0f')};" for p in range(1, u)))
                c("w += 4;", "int32_t k = *nnz++;")
                with c.block(f"for (; k >= {u}; k -= {u})"):
                    for p in range(u):
                        x = q.loaddup(f"(const float*)(const void*)(xb + (size_t)offs[{p}])")
                        c(f"s{p} = {q.fma(x, q.load(f'w + {4 * p}'), f's{p}')};")
                    c(f"offs += {u};", f"w += {4 * u};")
                with c.block("for (; k > 0; k--)"):
                    xk = q.loaddup('(const float*)(const void*)(xb + (size_t)*offs++)')
                    c(f"s0 = {q.fma(xk, q.load('w'), 's0')};",
                      "w += 4;")
                total = "s0"
                for p in range(1, u):
                    total = q.add(total, f"s{p}")
                c(f"const {q.vtype} o = {q.clamp(total)};", "const size_t nleft = n - r;")
                _store_pixel(c, q, "y + r", "o", False)
    return c.text()


def sppack(isa: Isa, mr: int = 0) -> str:
    """[ks*kc][MR] from ks*mr tap pointers (ind[t*mr + i]): 4x4 transposes; pixels past mr repeat the last."""
    mr = mr or TILES[isa.name].mr
    c = Code()
    sig = (f"void {sppack_name(isa, mr)}(size_t mr, size_t kc, size_t ks, const float* const* ind, "
           "float* restrict out)")
    with c.block(_fn(isa, sig)), c.block("for (size_t t = 0; t < ks; t++, ind += mr)"):
        c(f"float* o = out + t * kc * {mr};")
        with c.block(f"for (size_t i0 = 0; i0 < {mr}; i0 += 4)"):
            c(*(f"const float* r{j} = ind[i0 + {j} < mr ? i0 + {j} : mr - 1];" for j in range(4)))
            c("size_t k = 0;")
            if isa.vl > 1 and not isa.name.startswith("wasm"):  # wasm: element copies (module size)
                q = Quad(isa)
                with c.block("for (; k + 4 <= kc; k += 4)"):
                    c(*(f"{q.vtype} v{j} = {q.load(f'r{j} + k')};" for j in range(4)))
                    c(*q.transpose([f"v{j}" for j in range(4)]))
                    c(*(q.store(f"o + (k + {j}) * {mr} + i0", f"v{j}") for j in range(4)))
            with c.block("for (; k < kc; k++)"):
                c(*(f"o[k * {mr} + i0 + {j}] = r{j}[k];" for j in range(4)))
    return c.text()


SPMMU_SIG = ("void {name}(size_t mr, size_t n, const float* x, const int32_t* restrict nnz, "
             "const int32_t* restrict offs, const float* restrict w, float* y, size_t y_stride, "
             "const wrt_clamp* clamp)")


def spmmu(isa: Isa) -> str:
    """Unstructured sparse x packed tile: one output channel at a time over the UMR pixels of a tile packed [K][UMR]
    (sppack), NV = UMR/VL independent accumulators; per non-zero one broadcast weight, one column offset and NV
    multiply-adds. The channel's mr values are then stored into the pixel rows (one float each).
    A last tile reads only the vectors it needs: at most UMR/2 pixels (where NV >= 8) NV/2 vectors per non-zero, at
    most VL pixels (pose_detection's 7x7 layers in wasm: 49 = 32 + 16 + 1) one vector, in 4 partial sums over
    successive non-zeros (independent chains, summed at the end); a whole tile would cost as much as a full one."""
    umr, vl = TILES[isa.name].umr, isa.vl
    nv = umr // vl
    # each accumulator waits on its own last update: in wasm the multiply stays off that chain and the add's latency
    # is shorter than the relaxed FMA's (V8 on x86: pose_detection's 1x1 layers ran 1.15x slower with relaxed_madd
    # than SIMD128's multiply and add)
    fused = isa.name != "wasm_relaxed"

    def madd(c: Code, s: int, vecs: int) -> None:
        """set s of accumulators += x(non-zero s) * w(non-zero s)."""
        c(f"const float* xo{s} = (const float*)(const void*)(xb + (size_t)offs[{s}]);",
          isa.decl(f"wv{s}", isa.dup(f"w[{s}]")))
        for v in range(vecs):
            x, a = isa.load(f"xo{s} + {v * vl}"), f"a{s}_{v}"
            c(f"{a} = {isa.fma(x, f'wv{s}', a) if fused else isa.add(a, isa.mul(x, f'wv{s}'))};")

    def channels(c: Code, vecs: int, sets: int) -> None:
        """The loop over the n channels, VECS vectors of pixels in SETS partial sums."""
        with c.block("for (size_t r = 0; r < n; r++, y++)"):
            c(isa.decl("bias", isa.dup("*w++")))
            c(*(f"{isa.vtype} a{s}_{v} = {'bias' if s == 0 else isa.zero()};" for s in range(sets)
                for v in range(vecs)))
            c("int32_t k = *nnz++;")
            with c.block(f"for (; k >= {sets}; k -= {sets}, offs += {sets}, w += {sets})"):
                for s in range(sets):
                    madd(c, s, vecs)
            if sets > 1:
                with c.block("for (; k > 0; k--, offs++, w++)"):
                    madd(c, 0, vecs)
            for v in range(vecs):
                total = f"a0_{v}"
                for s in range(1, sets):
                    total = isa.add(total, f"a{s}_{v}")
                if vl > 1:
                    c(isa.store(f"t + {v * vl}", isa.clamp(total, "vmin", "vmax")))
            c("char* yo = (char*)y;")
            if vl > 1:
                with c.block("for (size_t i = 0; i < mr; i++, yo += y_stride)"):
                    c("*(float*)(void*)yo = t[i];")
            else:
                for v in range(vecs):
                    with c.block(f"if (mr > {v})"):
                        c(f"*(float*)(void*)yo = {isa.clamp(f'a0_{v}', 'vmin', 'vmax')};", "yo += y_stride;")

    c = Code()
    with c.block(isa.fn(SPMMU_SIG.format(name=spmmu_name(isa)))):
        c(isa.decl("vmin", isa.dup("clamp->min")), isa.decl("vmax", isa.dup("clamp->max")))
        c("const char* xb = (const char*)x;")
        if vl > 1:
            c(f"float t[{umr}] __attribute__((aligned(64)));")
            for limit, vecs, sets in ((vl, 1, 4), *(((umr // 2, nv // 2, 1),) if nv >= 8 else ())):
                with c.block(f"if (mr <= {limit})"):
                    channels(c, vecs, sets)
                    c("return;")
        channels(c, nv, 1)
    return c.text()


def kernel_bodies(isa: Isa) -> list[str]:
    t = TILES[isa.name]
    parts = [spmm(isa), spmv(isa), spmmu(isa)]
    if groups(isa) > 1 and t.mr != t.umr:
        parts.append(sppack(isa))
    parts.append(sppack(isa, t.umr))
    return parts


def table_fields(isa: Isa) -> list[str]:
    t = TILES[isa.name]
    return [f"  .spmm_mr = {t.mr}, .spmm_g = {groups(isa)},",
            f"  .spmm_min_sparsity = {t.min_sparsity}f, .spmm_k_penalty = {t.k_penalty}f,"
            f" .spmv_min_sparsity = {t.spmv_min_sparsity}f,",
            f"  .spmm = {spmm_name(isa)}, .spmv = {spmv_name(isa)},",
            f"  .sppack = {sppack_name(isa) if groups(isa) > 1 else 'NULL'},",
            f"  .spmmu_mr = {t.umr}, .spmmu_min_sparsity = {t.u_min_sparsity}f, .spmmu_k_penalty = {t.u_k_penalty}f,",
            f"  .spmmu = {spmmu_name(isa)}, .sppacku = {sppack_name(isa, t.umr)},"]
