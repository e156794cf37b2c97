/* wasmrt kernel ABI: the contract between the generated micro-kernels (kernels_wasm/gen -> kernels_wasm/generated)
 * and the engine core (kernels_wasm/engine). Every target (scalar, wasm SIMD128, wasm relaxed SIMD, x86-64 AVX2+FMA,
 * x86-64 AVX-512, aarch64 NEON) provides one `wrt_target` table; the engine picks one at load (native: run-time CPU
 * dispatch; wasm: the variant that was compiled) and packs weights for that table's tile sizes.
 *
 * Conventions
 * - f32 and int8 (QS8). Activations NHWC, channels contiguous. Strides are in BYTES unless named *_count.
 * - Every kernel applies the fused clamp: y = min(max(y, clamp->min), clamp->max) (min=-INF, max=+INF for none).
 * - Kernels never read or write outside the ranges stated below (no over-read past the last channel), so the engine
 *   needs no padding around tensors. Packed weights are padded by the engine as stated (zeros), so kernels MAY read
 *   whole tiles of packed weights.
 * - Kernels use no libc, no globals, no allocation. Headers: <stddef.h>, <stdint.h> and the target's intrinsics.
 * - Numerics: accumulate in f32 in the order the kernel chooses (tolerances vs python_ref are documented per op);
 *   with FMA targets results may differ from scalar in the last bits.
 */
#ifndef WRT_KERNELS_H
#define WRT_KERNELS_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
  float min, max;
} wrt_clamp;

/* GEMM on packed weights: for i < mr, j < nc
 *   c[i][j] = clamp(bias[j] + sum_{k < kc} a[i][k] * w[k][j])
 * a: row i starts at (const char*)a + i*a_stride, kc floats. c: row i at (char*)c + i*c_stride, nc floats written.
 * packed_w: one panel of NR columns: NR bias floats, then kc groups of NR floats (w[k][0..NR)), columns >= nc are 0.
 * 1 <= mr <= MR (gemm: any mr >= 1 where the target sets gemm_multi), 1 <= nc <= NR, kc >= 1. The engine loops panels
 * over N and row blocks over M.
 */
typedef void (*wrt_gemm_fn)(size_t mr, size_t nc, size_t kc, const float* a, size_t a_stride, const float* packed_w,
                            float* c, size_t c_stride, const wrt_clamp* clamp);

/* One row of A (kc floats at a) times gemm_row_panels whole panels of NR columns, panel p at packed_w + p * w_stride
 * (floats); c[p*NR + j] written. Each output is summed as the GEMM tile sums it, so its bytes are the same. */
typedef void (*wrt_gemm_row_fn)(size_t kc, const float* a, const float* packed_w, size_t w_stride, float* c,
                                const wrt_clamp* clamp);

/* Indirect GEMM for KxK convolution (NHWC, groups == 1, or per group with kc = Cin/groups):
 *   c[i][j] = clamp(bias[j] + sum_{t < ks} sum_{k < kc} ind[t*mr + i][k] * w[t][k][j])
 * ind: ks*mr pointers, tap-major; each points to kc contiguous input floats of output pixel i at tap t, or to
 * `zero` (a buffer of at least kc zeros) where the tap falls in padding.
 * packed_w: NR bias floats, then for each tap t: kc groups of NR floats. Same mr/nc/c rules as GEMM.
 */
typedef void (*wrt_igemm_fn)(size_t mr, size_t nc, size_t kc, size_t ks, const float* const* ind,
                             const float* packed_w, float* c, size_t c_stride, const wrt_clamp* clamp);

/* Depthwise convolution (groups == channels, multiplier 1) over one output row:
 * for each output pixel p < width, for each channel ch < channels:
 *   out_p[ch] = clamp(bias[ch] + sum_{t < ks} in[p*ks + t][ch] * w[t][ch])
 * in: width*ks pointers (pixel-major), each to `channels` contiguous floats (or to a zero buffer of >= channels).
 * out_p starts at (char*)out + p*out_stride.
 * packed_w: for each tile of CT channels: CT bias floats, then ks groups of CT weights (zero padded past channels).
 * ks is the kernel size the function was generated for (wrt_dwconv_entry.ks); a generic entry has ks = 0 and takes
 * the actual ks from its argument.
 */
typedef void (*wrt_dwconv_fn)(size_t channels, size_t width, size_t ks, const float* const* in, const float* packed_w,
                              float* out, size_t out_stride, const wrt_clamp* clamp);

/* Element-wise binary on n floats: y[i] = clamp(a[i] OP b[i]); the *_scalar form uses b[0] for every i.
 * y may alias a or b. */
typedef void (*wrt_vbinary_fn)(size_t n, const float* a, const float* b, float* y, const wrt_clamp* clamp);

/* Element-wise unary on n floats, y may alias x. params: op-specific (leaky: p[0]=alpha; hard_sigmoid: alpha, beta;
 * clip: min, max). */
typedef void (*wrt_vunary_fn)(size_t n, const float* x, float* y, const float* params);

/* Three planes of n floats to n interleaved pixels: y[3i + c] = p_c[i] (an RGB input's NCHW -> NHWC). */
typedef void (*wrt_interleave3_fn)(size_t n, const float* p0, const float* p1, const float* p2, float* y);

/* Per-channel pooling over one output pixel: for ch < channels, y[ch] = clamp(reduce_{t < ks} in[t][ch])
 * (max, or sum times `scale` for average; the engine computes 1/divisor per pixel). in: ks pointers, padding
 * taps point to a buffer of -INF (max) or 0 (average). */
typedef void (*wrt_pool_fn)(size_t channels, size_t ks, const float* const* in, float* y, float scale,
                            const wrt_clamp* clamp);

/* ---- int8 (QS8) kernels: the rules of python_ref/README.md "Quantized int8", bit for bit on every target ---------
 * Requantization of an int32 accumulator acc with a float32 multiplier m: y = zy + rne(clamp(f32(f32(acc) * m),
 * lo, hi)), lo/hi the output bounds minus zy as float32 (integers: clamping before rounding changes nothing), rne
 * round half to even. No fused multiply-add: every float operation is one IEEE-754 binary32 operation. */
typedef struct {
  float lo, hi;
  int32_t zy;
  uint32_t xmask; /* XOFF 128: 0x80808080 (bytes XORed into activations where a dot product reads them unsigned) */
} wrt_qparams;

/* QS8 GEMM: for i < mr, j < nc
 *   c[i][j] = requant(bias[j] + sum_{k < kc} (a[i][k] + XOFF) * w[k][j], mult[j])      (int32 sums wrap)
 * a: row i at a + i*a_stride, kc bytes read per row (a_stride 0, targets with qpack: the rows as qpack lays them
 * out, kc a multiple of KR; and nc may pass NR, the panels one after another). c: row i at c + i*c_stride, nc bytes
 * written.
 * packed_w, one panel of NR columns: NR int32 biases, NR float32 multipliers, then ceil(kc/KR) blocks of NR*KR int8
 * weights, block b holding w[b*KR + r][j] at j*KR + r, zero past kc and nc. XOFF (qgemm_xoff: 0, or 128 for unsigned
 * dot products) is the target's activation offset; the engine folds -(zx + XOFF) * sum_k w[k][j] into the bias. */
typedef void (*wrt_qgemm_fn)(size_t mr, size_t nc, size_t kc, const int8_t* a, size_t a_stride, const void* packed_w,
                             int8_t* c, size_t c_stride, const wrt_qparams* p);

/* Rows of a 1x1 QS8 GEMM laid out ahead of its panels (wrt_target.qpack) */
typedef void (*wrt_qpack_fn)(size_t mr, size_t kc, const int8_t* a, size_t a_stride, int8_t* out, uint32_t xmask);

/* QS8 indirect GEMM (KxK convolution): as the GEMM with ks taps; ind: ks*mr row pointers, tap-major, each to kc
 * bytes (padding taps point to a row of the input zero point). packed_w: NR biases, NR multipliers, then for each tap
 * ceil(kc/KR) blocks. */
typedef void (*wrt_qigemm_fn)(size_t mr, size_t nc, size_t kc, size_t ks, const int8_t* const* ind,
                              const void* packed_w, int8_t* c, size_t c_stride, const wrt_qparams* p);

/* QS8 depthwise convolution over one output row: for p < width, ch < channels
 *   out_p[ch] = requant(bias[ch] + sum_{t < ks} in[p*ks + t][ch] * w[t][ch], mult[ch])
 * packed_w per tile of CT channels: CT int32 biases, CT float32 multipliers, then (kr 1) ks groups of CT int16
 * weights or (kr 4: the relaxed dot kernels, 3x3 filters) 3 groups of CT x 4 int8 weights, one per filter column kx,
 * channel j's taps (0, kx), (1, kx), (2, kx) and a zero at 4 * j, the biases with -(zx + XOFF) * sum w (zero padded).
 * Same ks rule as wrt_dwconv_fn. */
typedef void (*wrt_qdwconv_fn)(size_t channels, size_t width, size_t ks, const int8_t* const* in,
                               const void* packed_w, int8_t* out, size_t out_stride, const wrt_qparams* p);

typedef struct {
  uint8_t ks, ct, kr;
  wrt_qdwconv_fn fn;
} wrt_qdwconv_entry;

/* QS8 ADD/SUB (XNNPACK's fixed-point add, python_ref/quant.py add_params), int32 with wrap-around:
 *   y[i] = zy + clamp((bias + ma * a[i] + mb * b[i]) >> shift, lo, hi)    (arithmetic shift; lo, hi minus zy)
 * the *_scalar form reads b[0] for every i. y may alias a or b. */
typedef struct {
  int32_t bias, ma, mb, shift, zy, lo, hi;
} wrt_qadd_params;
typedef void (*wrt_qadd_fn)(size_t n, const int8_t* a, const int8_t* b, int8_t* y, const wrt_qadd_params* p);
/* Block-sparse GEMM (weights in 1x4 blocks: 4 output channels x 1 input column, python_ref/sparse.py), for pixel
 * i < mr and output channel j < n:
 *   y_i[j] = clamp(bias[j] + sum over the stored blocks b of block row j/4: w_b[j % 4] * x(i, b))
 * x(i, b) = *(const float*)((const char*)x + (i / G) * x_stride + (i % G) * 4 + offs[b]), G = wrt_target.spmm_g:
 * G = 1: rows of the input (or of an im2col copy), offs = column * 4; G > 1: a tile packed by sppack, x_stride = 4G,
 * offs = column * 4 * MR. Weights per block row: 4 bias floats, then 4 per stored block (rows past n are 0); nnz[r]:
 * the stored blocks of block row r; offs: one int32 per block, all block rows in order. y_i at (char*)y + i*y_stride,
 * n floats written (never more). 1 <= mr <= spmm_mr.
 */
typedef void (*wrt_spmm_fn)(size_t mr, size_t n, const float* x, size_t x_stride, const int32_t* nnz,
                            const int32_t* offs, const float* w, float* y, size_t y_stride, const wrt_clamp* clamp);
/* The same for one pixel (mr = 1, offs = column * 4 from x): y[j] for j < n. */
typedef void (*wrt_spmv_fn)(size_t n, const float* x, const int32_t* nnz, const int32_t* offs, const float* w,
                            float* y, const wrt_clamp* clamp);
/* Pack a tile for spmm with G > 1: out[(t*kc + k)*MR + i] = ind[t*mr + min(i, mr-1)][k] for t < ks, k < kc, i < MR. */
typedef void (*wrt_sppack_fn)(size_t mr, size_t kc, size_t ks, const float* const* ind, float* out);
/* Unstructured sparse GEMM over a tile packed [K][UMR] by sppacku (UMR = wrt_target.spmmu_mr), for channel j < n
 * and pixel i < mr (1 <= mr <= UMR), y_i at (char*)y + i*y_stride:
 *   y_i[j] = clamp(bias_j + sum over the non-zeros e of channel j: w_e * x[offs_e / 4 + i])
 * weights per channel: its bias, then its nnz[j] non-zero weights; offs: one int32 per non-zero (column * 4 * UMR). */
typedef void (*wrt_spmmu_fn)(size_t mr, size_t n, const float* x, const int32_t* nnz, const int32_t* offs,
                             const float* w, float* y, size_t y_stride, const wrt_clamp* clamp);

/* int8 block-sparse GEMM (kernels_wasm/gen/kernels/qsparse.py) over a tile packed [K][MR] by qsppack, for pixel
 * i < mr (1 <= mr <= MR = wrt_target.qspmm_mr) and output channel j < n, in groups of KR = wrt_target.qspmm_kr
 * blocks of one block row (KR 2: int16 activations; KR 4: bytes x + XOFF, XOFF = wrt_target.qspmm_xoff):
 *   y_i[j] = requant(bias[j] + sum over the stored groups q of block row j/4, its blocks b < KR:
 *                    w_q[j%4].b * (x + XOFF)[column of offs_qb, pixel POS(i)], mult[j])
 * Weights per block row: 4 int32 biases (-(zx + XOFF) * sum w folded in), then per group 4 int32, channel j%4's KR
 * weights (KR 2: two int16, the block at offs_q0 low; KR 4: four int8, offs_q0's in the low byte; absent blocks of
 * a short last group: zeros); nnz[r]: the groups of block row r; offs: KR int32 per group (column * MR * the bytes
 * of a packed activation); mult: per channel, readable up to n rounded up to 4. y_i at y + i*y_stride, n bytes
 * written (never more). */
typedef void (*wrt_qspmm_fn)(size_t mr, size_t n, const void* x, const int32_t* nnz, const int32_t* offs,
                             const int32_t* w, const float* mult, int8_t* y, size_t y_stride, const wrt_qparams* p);
/* The same for one pixel read in place (x: its K int8 values; offs as qspmm's, column * MR * bytes): y[j], j < n. */
typedef void (*wrt_qspmv_fn)(size_t n, const int8_t* x, const int32_t* nnz, const int32_t* offs, const int32_t* w,
                             const float* mult, int8_t* y, const wrt_qparams* p);
/* Pack a tile for qspmm: out[(t*kc + k)*MR + POS(i)] = ind[t*mr + min(i, mr-1)][k] (+ XOFF) for t < ks, k < kc,
 * i < MR, as int16 (KR 2) or bytes (KR 4). */
typedef void (*wrt_qsppack_fn)(size_t mr, size_t kc, size_t ks, const int8_t* const* ind, void* out);
/* Winograd F(m x m, 3 x 3) transforms (python_ref/winograd.py), n = m + 2, channels c >= 1, strides in bytes:
 * input: n*n pointers (tile row-major, each to c floats, or to a zero buffer of >= c floats) -> position p of
 * B^T d B at (char*)out + p*out_stride, c floats each. output: position p of the products at (char*)in +
 * p*in_stride -> pixel (r, s) of A^T M A + bias, clamped, at (char*)out + r*row_stride + s*px_stride (c floats),
 * stored for r < rows, s < cols only (1 <= rows, cols <= m). Entry i of the tables: m = 2, 4. */
typedef void (*wrt_wino_in_fn)(size_t c, const float* const* in, float* out, size_t out_stride);
typedef void (*wrt_wino_out_fn)(size_t c, const float* in, size_t in_stride, const float* bias, float* out,
                                size_t row_stride, size_t px_stride, size_t rows, size_t cols, const wrt_clamp* clamp);
#define WRT_WINO_KINDS 2

/* WRT_BIN_* and WRT_UN_*: generated from the kernel definitions (kernels_wasm/gen/kernels/eltwise.py) */
#include "../generated/wrt_eltwise.h"
#include "../generated/wrt_families.h" /* WRT_KF_*: the kernel families a module holds */
#include "../generated/wrt_train.h"    /* WRT_GRAD_*: activation-gradient op codes */

/* Training (kernels_wasm/gen/kernels/train.py). tgemm: C = (accumulate ? C : 0) + A B over m x n, k terms, A's
 * element (i, t) at a[i * a_rs + t * a_cs], B's (t, j) at b[t * ldb + j], C's (i, j) at c[i * ldc + j]; one
 * multiply-add chain per element in k order (same bits for any split of rows or columns). */
typedef void (*wrt_tgemm_fn)(size_t m, size_t n, size_t k, const float* a, size_t a_rs, size_t a_cs, const float* b,
                             size_t ldb, float* c, size_t ldc, int accumulate);
/* dx = dy * f'(v) over n floats (v: the forward's output, or input for hard-swish); params: [lo, hi] of a clamp */
typedef void (*wrt_grad_fn)(size_t n, const float* v, const float* dy, float* dx, const float* params);
/* params: lr, momentum, weight_decay; buf starts at zeros */
typedef void (*wrt_sgd_fn)(size_t n, float* p, const float* g, float* buf, const float* params);
/* params: lr, b1, b2, eps, weight_decay, 1 - b1^t, 1 - b2^t; m and v start at zeros */
typedef void (*wrt_adam_fn)(size_t n, float* p, const float* g, float* m, float* v, const float* params);

typedef struct {
  uint8_t ks;  /* kernel taps this entry is specialized for; 0 = any */
  uint8_t ct;  /* channel tile of its packed weights */
  wrt_dwconv_fn fn;
} wrt_dwconv_entry;

#define WRT_MAX_DWCONV 4

/* One target's kernels and tile sizes. */
typedef struct {
  const char* name;        /* "scalar", "wasm_simd128", "wasm_relaxed", "avx2", "avx512", "avx512vnni", "neon" */
  uint8_t gemm_mr, gemm_nr;
  uint8_t gemm_multi;      /* 1: gemm takes any mr >= 1 (whole tiles in a loop, then the last one) */
  wrt_gemm_fn gemm;
  wrt_igemm_fn igemm;      /* same MR/NR and packing rule (bias, then taps) as gemm */
  /* Optional: one row of A times gemm_row_panels whole panels (a lone last row of a tile loop). NULL: none. */
  uint8_t gemm_row_panels;
  wrt_gemm_row_fn gemm_row;
  /* Optional MR x NR/2 tiles for a last panel of at most NR/2 columns, which the engine then packs NR/2 wide (same
   * rules otherwise): Cout = 16, 24, 40, 80 ... waste up to half of an AVX-512 32-wide tile. NULL: none. The GEMM's
   * half tile is gemm_mr_half rows tall (MR, or 2 x MR where MR rows are too few accumulator chains). */
  uint8_t gemm_mr_half, gemm_nr_half;
  wrt_gemm_fn gemm_half;
  wrt_igemm_fn igemm_half;
  wrt_dwconv_entry dwconv[WRT_MAX_DWCONV]; /* first match by ks wins; a ks == 0 entry last (a module built for given
                                            * models may lack it: a layer without its kernel runs per group) */
  wrt_vbinary_fn vbinary[WRT_BIN_COUNT];
  wrt_vbinary_fn vbinary_scalar[WRT_BIN_COUNT];
  wrt_vunary_fn vunary[WRT_UN_COUNT];
  wrt_pool_fn maxpool, avgpool;
  /* int8 (QS8) */
  uint8_t qgemm_mr, qgemm_nr, qgemm_kr; /* tile and k block of the packed weights */
  uint8_t qgemm_xoff;                   /* added to activations by the dot product (0 or 128) */
  wrt_qgemm_fn qgemm;
  wrt_qigemm_fn qigemm;
  wrt_qgemm_fn qgemm_half; /* or NULL: the GEMM of a panel's first qgemm_nr / 2 columns (a last, narrow panel) */
  /* or NULL: the 1x1 GEMM on int16 activations and weights (a: row i at (const int16_t*)a + i*a_stride, kc even,
   * an odd row padded with a zero; the panels as above with each weight as an int16; nc may pass NR) */
  wrt_qgemm_fn qgemm_a16;
  wrt_qgemm_fn qgemm_row; /* or NULL: qgemm for one row (mr 1), on int8 panels */
  /* or NULL: lays out mr <= qgemm_mr rows of kc bytes for the 1x1 GEMM on staged rows: for qgemm_a16 where the
   * target has it (kc rounded up to even int16 elements a row, interleaved by pairs: group g of 4 * qgemm_mr bytes
   * holds row i's elements 2g, 2g+1 at 4i, rows past mr copies of the last, a zero after an odd kc), else for
   * qgemm with a_stride 0, kc rounded up to qgemm_kr, rows past mr copies of the last: group g of 4 * qgemm_mr
   * bytes holds row i's k block g as 4 bytes at 4i (the wasm relaxed dot tables, kr 4: its bytes XOR xmask; AVX2,
   * kr 2: its pair as int16, a zero after an odd kc) */
  wrt_qpack_fn qpack;
  wrt_qdwconv_entry qdwconv[WRT_MAX_DWCONV]; /* first match by ks wins; a ks == 0 entry last (or none, as above) */
  wrt_qadd_fn qadd, qadd_scalar;
  /* block-sparse weights: pixels per spmm tile, pixels per vector (G); the block sparsity from which the sparse
   * kernels beat the dense ones here (measured, kernels_wasm/README.md): min + k_penalty / K for a layer of K columns,
   * spmv_min for one pixel; sppack only where G > 1 */
  uint8_t spmm_mr, spmm_g;
  float spmm_min_sparsity, spmm_k_penalty, spmv_min_sparsity;
  wrt_spmm_fn spmm;
  wrt_spmv_fn spmv;
  wrt_sppack_fn sppack;
  /* unstructured sparse weights (a channel's own non-zeros): pixels per tile, the element sparsity from which they
   * run so (min + k_penalty / K, measured), the kernel and its pack (UMR pixels) */
  uint8_t spmmu_mr;
  float spmmu_min_sparsity, spmmu_k_penalty;
  wrt_spmmu_fn spmmu;
  wrt_sppack_fn sppacku;
  /* int8 block-sparse weights: pixels per qspmm tile; the block sparsity from which they beat the dense int8 GEMM
   * here (measured, kernels_wasm/gen/kernels/qsparse.py): min + k_penalty / K for a layer of K columns */
  uint8_t qspmm_mr, qspmm_kr, qspmm_xoff; /* pixels per tile, blocks per group, activation offset (see above) */
  float qspmm_min_sparsity, qspmm_k_penalty;
  wrt_qspmm_fn qspmm;
  wrt_qsppack_fn qsppack;
  wrt_qspmv_fn qspmv; /* one pixel */
  wrt_wino_in_fn wino_in[WRT_WINO_KINDS];   /* Winograd F(2x2, 3x3), F(4x4, 3x3) tile transforms */
  wrt_wino_out_fn wino_out[WRT_WINO_KINDS];
  /* where the rules run Winograd here (measured, kernels_wasm/gen/kernels/winograd.py RULES): F(4x4) from
   * min(Cin, Cout) >= wino_min_channels, Cin * Cout >= wino_min_cc and wino_min_pixels output pixels; F(2x2)
   * instead where Cin * Cout / (F(4x4) tiles) >= wino_f2_weights_per_tile */
  uint32_t wino_min_channels, wino_min_cc, wino_min_pixels, wino_f2_weights_per_tile;
  wrt_tgemm_fn tgemm; /* training kernels (NULL in a module built without them) */
  wrt_grad_fn grad[WRT_GRAD_COUNT];
  wrt_sgd_fn sgd;
  wrt_adam_fn adam;
#if !defined(__wasm__) /* native only: the wasm modules keep their size (and their tables, data) */
  wrt_interleave3_fn interleave3; /* or NULL (scalar): the engine's portable loop */
#endif
} wrt_target;

/* Provided by the generated sources, one per compiled target (absent ones are not linked). */
extern const wrt_target wrt_target_scalar;
extern const wrt_target wrt_target_wasm_simd128;
extern const wrt_target wrt_target_wasm_relaxed;
/* wasm relaxed's kernels with the int8 GEMMs on i32x4.relaxed_dot_i8x16_i7x16_add_s, for hosts where it is an exact
 * unsigned x signed dot product (usdot); target.c probes which at load, and makes the signed x signed table (sdot)
 * from this one */
extern const wrt_target wrt_target_wasm_relaxed_usdot;
extern const wrt_target wrt_target_avx2;
extern const wrt_target wrt_target_avx512;
extern const wrt_target wrt_target_avx512vnni; /* AVX-512's kernels with the int8 ones on VNNI dot products */
extern const wrt_target wrt_target_neon;

#endif
