/* int8 CONV_2D, CONV_TRANSPOSE_2D, FULLY_CONNECTED and MATMUL (python_ref/qops.py): acc = b + sum (x - zx)(w - zw[o])
 * requantized per output channel with m[o] = f32(f32(sx * sw[o]) / sy).
 * Kernel paths (int8 input, weights with zero point 0): 1x1 GEMM, KxK indirect GEMM, depthwise tiles, per-group
 * igemm, FULLY_CONNECTED as a GEMM, and a KxK convolution of few input channels (an RGB image) as a GEMM over each
 * pixel's patch (its ks * c bytes gathered into one row). The zero point of the input is folded into the packed bias
 * (padding taps read a row of zx, so they add (zx - zx) * w = 0), with the target's activation offset (unsigned dot
 * products read x + 128).
 * Block-sparse int8 weights run on the sparse kernels (qsparse.c) where qsparse_chosen says so; else on these
 * paths, over the weights expanded for the prepare (model.c: op->expand_in).
 * FULLY_CONNECTED with float_output (a classifier's logits) dequantizes its accumulators instead, y = f32(acc) *
 * f32(sx * sw[o]) clamped in float, on the portable path: one small layer at the end of a network.
 * Everything else (weight zero points, uint8 inputs, CONV_TRANSPOSE_2D, MATMUL, weights computed at run time) takes
 * the generic path: the same sums in portable C. */
#include "engine.h"

enum { QC_GEMM = 1, QC_IGEMM, QC_DW, QC_GROUPED, QC_FC, QC_GENERIC, QC_TRANSPOSE, QC_MATMUL, QC_PATCH, QC_SPARSE,
       QC_FC_FLOAT };

/* QC_PATCH: a KxK convolution whose patch (ks taps x c channels) is at most PATCH_K bytes runs as a GEMM of depth
 * ks * c over patch rows gathered per MR pixels: a 3-channel 3x3 layer has 27-byte rows, where the igemm takes one
 * short k block (c = 3 < KR) per tap. Rows of PATCH_K bytes, zero after the patch; up to PATCH_MR rows. */
enum { PATCH_K = WRT_QPATCH_K, PATCH_MR = 8 }; /* (PATCH_K: kernels_wasm/gen/families.py, for the modules) */


static void geometry(wrt_model* m, wrt_op* op, wrt_qplan* p) {
  const wrt_tensor *x = &m->t[op->in[0]], *w = &m->t[op->in[1]], *y = &m->t[op->out];
  p->n = x->dims[0];
  p->h = x->dims[1];
  p->w = x->dims[2];
  p->c = x->dims[3];
  p->oh = y->dims[1];
  p->ow = y->dims[2];
  p->co = y->dims[3];
  p->kh = w->dims[1];
  p->kw = w->dims[2];
  p->groups = op->a.groups;
  p->ks = (int64_t)w->dims[1] * w->dims[2];
  p->pix = (int64_t)y->dims[0] * y->dims[1] * y->dims[2];
}

/* weight zero point of output channel o, as for int8 weights (uint8 weights run as int8: value and zero point - 128) */
static int32_t weight_zp(const wrt_tensor* w, size_t o) {
  int32_t z = w->q->zp[w->q->axis < 0 ? 0 : o];
  return w->dtype == WRT_U8 ? z - 128 : z;
}

static int weights_centered(const wrt_tensor* w, size_t n) {
  for (size_t o = 0; o < n; o++)
    if (weight_zp(w, o) != 0) return 0;
  return 1;
}

/* weight value (as int8) of element i of weights tensor w */
static inline int32_t wv(const wrt_tensor* w, size_t i) {
  return w->dtype == WRT_U8 ? (int32_t)w->file_data[i] - 128 : (int32_t)(int8_t)w->file_data[i];
}

/* no weight is -128: the depthwise kernels sum two taps' products in int16 (128 * 127 * 2 fits, 128 * 128 * 2 not) */
static int weights_above_min(const wrt_tensor* w) {
  for (uint64_t i = 0; i < (w->sparse ? 4 * (uint64_t)w->sp_blocks : w->count); i++) /* block-sparse: stored values */
    if (wv(w, (size_t)i) == -128) return 0;
  return 1;
}

/* packed depthwise weights: per tile of ct channels, biases and multipliers, then int16 taps (kr 1), int8 groups
 * of 4 taps (kr 4: see dw_by_column; a 3x3 filter is 3 groups either way) or, kr 2 (3x3 only), per filter column
 * two int16 pairs of taps */
static uint64_t dw_packed_bytes(const wrt_qdwconv_entry* e, uint64_t C, uint64_t ks) {
  uint64_t ct = e->ct, kr = e->kr;
  return (C + ct - 1) / ct * ct * (8 + (kr == 4 ? (ks + 3) / 4 * 4 : kr == 2 ? 24 : 2 * ks));
}

/* kr 4: the channel that slot j of a ct-channel tile holds (biases, multipliers and weight quads alike). AVX-512
 * VNNI's 64-channel tiles (4 vectors of 4 128-bit lanes) hold, in dword i of lane k of vector v, channel
 * 16k + 4v + i: the order its 4x4 byte transpose by unpacks leaves. Tiles of 16 (wasm relaxed dot) are in order. */
static size_t dw_slot(size_t j, size_t ct) {
#if defined(__x86_64__)
  if (ct == 64) return (j & 0x30) >> 2 | (j & 0x0C) << 2 | (j & 3);
#endif
  (void)ct;
  return j;
}

/* kr 4 packs four taps per 32-bit lane: the wasm relaxed dot 3x3 kernel (16-channel tiles) by filter column (its 3
 * taps and a zero), every other kr 4 kernel (wasm relaxed dot, any filter; AVX-512 VNNI, 64-channel tiles, 9 or 25
 * taps) by runs of 4 consecutive taps. kr 2 (AVX2, 3x3) packs by column too, its 3 taps and a zero as two pairs. */
static int dw_by_column(const wrt_qdwconv_entry* e) { return (e->kr == 4 && e->ct == 16 && e->ks == 9) || e->kr == 2; }

static const wrt_qdwconv_entry* pick_qdw(const wrt_target* tg, size_t ks, int64_t kh) {
  for (int i = 0; i < WRT_MAX_DWCONV; i++) {
    const wrt_qdwconv_entry* e = &tg->qdwconv[i];
    if (dw_by_column(e) && (ks != 9 || kh != 3)) continue; /* a filter column per group: 3x3 only */
    if (e->fn && e->ct && (e->ks == ks || e->ks == 0)) return e;
  }
  return 0;
}

/* The rows qpack stages for a run of blocks, on the stack: int16 rows for qgemm_a16 (one 4-row block of K <= 2048
 * at least) or packed blocks (K <= 4096 for 4 rows of bytes, 1365 for AVX2's 6 rows of int16 pairs) */
enum { A16_ELEMS = 8192 };

/* Only the wasm modules' tables have qgemm_a16 (SIMD128, and relaxed where its dot product is not exact): elsewhere
 * gemm_wb is 1 at compile time and the int16 weight packing is left out */
#if defined(__wasm_simd128__)
#define HAS_QGEMM_A16 1
#else
#define HAS_QGEMM_A16 0
#endif

/* bytes of a weight in the panels of a 1x1 GEMM of M rows, K deep: 2 where it runs on the target's int16 form
 * (qgemm_a16, weights widened at load as its activations are at run time), else 1 (and in every other path). One
 * row (a fully-connected layer on one vector) reads each weight once: int8 panels, half the bytes, on qgemm_row. */
static uint64_t gemm_wb(const wrt_target* tg, uint64_t M, uint64_t K) {
  return HAS_QGEMM_A16 && tg->qgemm_a16 && M > 1 && ((K + 1) & ~(uint64_t)1) * tg->qgemm_mr <= A16_ELEMS ? 2 : 1;
}

/* whether the target's qgemm reads rows packed by qpack (a_stride 0): its qpack is not the int16 one of qgemm_a16 */
static int packs_rows(const wrt_target* tg) {
  return tg->qpack && !tg->qgemm_a16;
}

/* bytes of one packed panel of NR columns over ks taps of kc channels, wb bytes a weight */
static uint64_t panel_bytes(const wrt_target* tg, uint64_t ks, uint64_t kc, uint64_t wb) {
  uint64_t nr = tg->qgemm_nr, kr = tg->qgemm_kr;
  return nr * 8 + ks * ((kc + kr - 1) / kr) * nr * kr * wb;
}

static uint64_t packed_bytes(const wrt_target* tg, uint64_t n, uint64_t ks, uint64_t kc, uint64_t wb) {
  return (n + tg->qgemm_nr - 1) / tg->qgemm_nr * panel_bytes(tg, ks, kc, wb);
}

static int32_t bias_at(const int32_t* b, size_t o) {
  if (!b) return 0;
  int32_t v;
  __builtin_memcpy(&v, b + o, 4);
  return v;
}

static void put_i32(uint8_t* p, int32_t v) { __builtin_memcpy(p, &v, 4); }
static void put_f32(uint8_t* p, float v) { __builtin_memcpy(p, &v, 4); }

/* Panels for n output channels o0.. of w (each o: ks taps of kc channels at w[(o*ks + t)*kc + c], i.e. OHWI or
 * [N, K]), bias b[o] (NULL: 0) and multipliers mult[o]; xz = zx + the target's activation offset. */
static void pack_qgemm(const wrt_target* tg, const wrt_tensor* w, size_t o0, size_t n, size_t ks, size_t kc,
                       const int32_t* b, const float* mult, int32_t xz, size_t wb, uint8_t* out) {
  size_t nr = tg->qgemm_nr, kr = tg->qgemm_kr, nb = (kc + kr - 1) / kr;
  for (size_t p = 0; p < n; p += nr) {
    size_t nc = n - p < nr ? n - p : nr;
    for (size_t j = 0; j < nr; j++) {
      uint32_t acc = 0;
      if (j < nc) {
        size_t o = o0 + p + j;
        uint32_t sum = 0;
        for (size_t k = 0; k < ks * kc; k++) sum += (uint32_t)wv(w, o * ks * kc + k);
        acc = (uint32_t)bias_at(b, p + j) - (uint32_t)xz * sum; /* wraps as the int32 sums do */
      }
      put_i32(out + 4 * j, (int32_t)acc);
      put_f32(out + 4 * (nr + j), j < nc ? mult[p + j] : 0.0f);
    }
    out += 8 * nr;
    for (size_t t = 0; t < ks; t++)
      for (size_t bk = 0; bk < nb; bk++)
        for (size_t j = 0; j < nr; j++)
          for (size_t r = 0; r < kr; r++) {
            size_t k = bk * kr + r;
            int16_t v = (int16_t)(j < nc && k < kc ? wv(w, ((o0 + p + j) * ks + t) * kc + k) : 0);
            __builtin_memcpy(out, &v, wb); /* little-endian: the low byte alone is the int8 weight */
            out += wb;
          }
  }
}

/* ---- planning --------------------------------------------------------------------------------------------------- */
static int check_int32_bias(const wrt_model* m, const wrt_op* op) {
  return op->n_in > 2 && op->in[2] >= 0 && m->t[op->in[2]].is_const;
}

WRT_FOR_SIZE int plan_qconv(wrt_model* m, wrt_op* op, wrt_cost* c) {
  wrt_qplan* p = &op->u.q;
  const wrt_tensor *x = &m->t[op->in[0]], *w = &m->t[op->in[1]], *y = &m->t[op->out];
  const wrt_target* tg = m->tg;
  float lo = op_has_clamp(op->type) ? op->a.act_min : -__builtin_inff();
  float hi = op_has_clamp(op->type) ? op->a.act_max : __builtin_inff();
  int float_out = WRT_KEEP(FULLY_CONNECTED, QS8) && op->type == OP_FULLY_CONNECTED && op->a.float_output;
  if (!float_out) q_out_params(m, op, lo, hi, &p->rq, &p->lo, &p->hi);
  p->za = x->q->z;
  int u8 = x->dtype == WRT_U8;
  if (WRT_KEEP(MATMUL, QS8) && op->type == OP_MATMUL) { /* (a module without it leaves its paths out) */
    op->path = QC_MATMUL;
    p->zb = w->q->z;
    p->ma = x->q->s * w->q->s;
    p->ma = p->ma / y->q->s;
    uint64_t K = (uint64_t)x->dims[x->rank - 1];
    c->work += 16 * sat_mul(y->count, K);
    op->packed_in = 0;
    return WRT_OK;
  }
  uint64_t N = (uint64_t)w->dims[0];
  op->packed_in = 0x6; /* weights, bias */
  c->bytes += (N + 3) / 4 * 16 + 1; /* multipliers */
  /* block-sparse weights: the sparse kernels, or a dense path on their expansion */
  int fast_in = !u8 && w->is_const && weights_centered(w, (size_t)N);
  if (WRT_KF_QSPARSE && !float_out && qsparse_chosen(m, op, fast_in)) {
    op->path = QC_SPARSE;
    if (op->type == OP_CONV_2D) {
      geometry(m, op, p);
      c->bytes += (uint64_t)p->c + 64; /* the padding row */
    }
    qsparse_plan(m, op, c);
    return WRT_OK;
  }
  if (w->sparse) {
    op->expand_in = 0x2;
    c->bytes += w->nbytes + 1;
  }
  if (WRT_KEEP(FULLY_CONNECTED, QS8) && op->type == OP_FULLY_CONNECTED) {
    uint64_t K = (uint64_t)w->dims[1], M = x->count / (K ? K : 1);
    if (K == 0) return op_fail(op, WRT_ERR_UNSUPPORTED, "an empty reduction dimension is not supported");
    int bias_ok = op->n_in <= 2 || op->in[2] < 0 || check_int32_bias(m, op);
    if (float_out) { /* centered int16 weights where they are constant, as the generic path's */
      op->path = QC_FC_FLOAT;
      op->packed_in = w->is_const && bias_ok ? 0x6 : 0;
      if (op->packed_in) c->bytes += N * K * 2 + N * 4 + 2;
      c->work += 16 * sat_mul(M * N, K);
    } else if (w->is_const && bias_ok && !u8 && weights_centered(w, (size_t)N) && tg->qgemm) {
      op->path = QC_FC;
      c->bytes += packed_bytes(tg, N, 1, K, gemm_wb(tg, M, K));
      c->work += sat_mul(M * N, K);
    } else { /* constant weights (and bias) are centered at load; weights computed at run time are read as they are */
      op->path = QC_GENERIC;
      op->packed_in = w->is_const && bias_ok ? 0x6 : 0;
      if (op->packed_in) c->bytes += N * K * 2 + N * 4 + 2;
      c->work += 16 * sat_mul(M * N, K);
    }
    p->n = (int64_t)M;
    p->c = (int64_t)K;
    p->co = (int64_t)N;
    return WRT_OK;
  }
  geometry(m, op, p);
  uint64_t P = (uint64_t)p->pix, C = (uint64_t)p->c, CO = (uint64_t)p->co, ks = (uint64_t)p->ks;
  uint64_t G = (uint64_t)p->groups, cg = C / G, og = CO / G;
  c->bytes += C + 64; /* the padding row */
  if (WRT_KEEP(CONV_TRANSPOSE_2D, QS8) && op->type == OP_CONV_TRANSPOSE_2D) {
    op->path = QC_TRANSPOSE;
    uint64_t opix = y->count / (CO ? CO : 1);
    c->bytes += CO * ks * cg * 2 + CO * 4 + 2;
    c->scratch = sat_mul(opix, CO * 4) + 1;
    c->work += 16 * sat_mul(G * P, ks * og * cg) + WORK_COPY * y->count;
    return WRT_OK;
  }
  int fast = !u8 && weights_centered(w, (size_t)CO) && tg->qgemm && tg->qigemm;
  p->dw = fast && G == C && og == 1 && weights_above_min(w) ? pick_qdw(tg, (size_t)ks, p->kh) : 0;
  if (p->dw) {
    op->path = QC_DW;
    c->bytes += dw_packed_bytes(p->dw, C, ks) + ptr_bytes(P * ks) + 1;
    c->work += WORK_DW * sat_mul(P * C, ks);
    return WRT_OK;
  }
  if (!fast) {
    op->path = QC_GENERIC;
    c->bytes += CO * ks * cg * 2 + CO * 4 + 2;
    c->work += 16 * sat_mul(P * CO, ks * cg);
    return WRT_OK;
  }
  c->work += sat_mul(P * CO, ks * cg);
  const wrt_attrs* a = &op->a;
  int pointwise = ks == 1 && a->strides[0] == 1 && a->strides[1] == 1 && !a->pads[0] && !a->pads[1] && !a->pads[2] &&
                  !a->pads[3];
  int patch = WRT_KF_QPATCH && G == 1 && !pointwise && ks * cg <= PATCH_K && tg->qgemm_mr <= PATCH_MR;
  c->bytes += patch ? packed_bytes(tg, og, 1, ks * cg, 1)
                    : packed_bytes(tg, og, ks, cg, G == 1 && pointwise ? gemm_wb(tg, P, cg) : 1) * G;
  if (G == 1 && pointwise) {
    op->path = QC_GEMM;
    return WRT_OK;
  }
  op->path = patch ? QC_PATCH : G == 1 ? QC_IGEMM : QC_GROUPED;
  c->bytes += ptr_bytes(P * ks) + 1;
  if (G > 1) {
    c->scratch = ptr_bytes(P * ks);
    c->work += WORK_COPY * sat_mul(G, P * ks);
  }
  return WRT_OK;
}

/* ---- preparing: multipliers, packing, indirection ------------------------------------------------------------- */
/* m[o] = f32(f32(sx * sw[o]) / sy) */
static float* multipliers(wrt_model* m, wrt_op* op, size_t n) {
  const wrt_tensor *x = &m->t[op->in[0]], *w = &m->t[op->in[1]], *y = &m->t[op->out];
  size_t n4 = (n + 3) / 4 * 4; /* zeros after n: the sparse kernels read a block row's 4 */
  float* mult = m_alloc(m, n4 * 4 + 1);
  if (!mult) {
    m_alloc_fail(m, op, "the multipliers", n4 * 4 + 1);
    return 0;
  }
  for (size_t o = n; o < n4; o++) mult[o] = 0.0f;
  for (size_t o = 0; o < n; o++) {
    float prod = x->q->s * w->q->scale[w->q->axis < 0 ? 0 : o];
    mult[o] = op->path == QC_FC_FLOAT ? prod : prod / y->q->s; /* float output: the accumulator's unit */
  }
  return mult;
}

static const int32_t* bias_data(const wrt_model* m, const wrt_op* op) {
  return op->n_in > 2 && op->in[2] >= 0 ? (const int32_t*)(const void*)m->t[op->in[2]].file_data : 0;
}

static int prepare_generic(wrt_model* m, wrt_op* op, size_t n, size_t k_per_o) {
  wrt_qplan* p = &op->u.q;
  const wrt_tensor* w = &m->t[op->in[1]];
  const int32_t* b = bias_data(m, op);
  int16_t* wc = m_alloc(m, (uint64_t)n * k_per_o * 2 + 1);
  int32_t* bias = m_alloc(m, (uint64_t)n * 4 + 1);
  if (!wc || !bias) return m_alloc_fail(m, op, "the weights", (uint64_t)n * k_per_o * 2 + (uint64_t)n * 4);
  for (size_t o = 0; o < n; o++) {
    int32_t z = weight_zp(w, o);
    for (size_t k = 0; k < k_per_o; k++) wc[o * k_per_o + k] = (int16_t)(wv(w, o * k_per_o + k) - z);
    bias[o] = bias_at(b, o);
  }
  p->packed = (uint8_t*)wc;
  p->bias = bias;
  m->weights_bytes += n * k_per_o * 2;
  return WRT_OK;
}

/* FULLY_CONNECTED with float_output: int8 rows and int8 weights of zero point 0 keep the weights as bytes (half the
 * memory traffic of int16) with the input zero point folded into the bias, b[o] - zx * sum w[o] (wrapping uint32
 * sums, equal to python_ref's); gpack = 1 marks that layout for run_fc_float. Else the generic int16 layout. */
static int prepare_fc_float(wrt_model* m, wrt_op* op, size_t n, size_t k) {
  wrt_qplan* p = &op->u.q;
  const wrt_tensor *x = &m->t[op->in[0]], *w = &m->t[op->in[1]];
  if (x->dtype != WRT_I8 || w->dtype != WRT_I8 || !weights_centered(w, n)) return prepare_generic(m, op, n, k);
  const int32_t* b = bias_data(m, op);
  int8_t* wc = m_alloc(m, (uint64_t)n * k + 1);
  int32_t* bias = m_alloc(m, (uint64_t)n * 4 + 1);
  if (!wc || !bias) return m_alloc_fail(m, op, "the weights", (uint64_t)n * k + (uint64_t)n * 4);
  for (size_t o = 0; o < n; o++) {
    uint32_t sum = 0;
    for (size_t j = 0; j < k; j++) {
      wc[o * k + j] = (int8_t)wv(w, o * k + j);
      sum += (uint32_t)wc[o * k + j];
    }
    bias[o] = (int32_t)((uint32_t)bias_at(b, o) - (uint32_t)p->za * sum);
  }
  p->packed = (uint8_t*)wc;
  p->bias = bias;
  p->gpack = 1;
  m->weights_bytes += n * k;
  return WRT_OK;
}

WRT_FOR_SIZE int prepare_qconv(wrt_model* m, wrt_op* op) {
  wrt_qplan* p = &op->u.q;
  const wrt_target* tg = m->tg;
  if (op->path == QC_MATMUL) return WRT_OK;
  const wrt_tensor* w = &m->t[op->in[1]];
  size_t N = (size_t)w->dims[0];
  if (!(p->mult = multipliers(m, op, N))) return WRT_ERR_NOMEM;
  const int32_t* b = bias_data(m, op);
  if (WRT_KF_QSPARSE && op->path == QC_SPARSE) {
    if (op->type == OP_CONV_2D) {
      int r = q_fill_pad(m, op, p->za, (size_t)p->c + 64);
      if (r) return r;
    }
    return qsparse_prepare(m, op, b);
  }
  if (WRT_KEEP(FULLY_CONNECTED, QS8) && op->type == OP_FULLY_CONNECTED) {
    size_t K = (size_t)p->c;
    if (op->path == QC_FC_FLOAT && op->packed_in) return prepare_fc_float(m, op, N, K);
    if (op->path == QC_GENERIC) return op->packed_in ? prepare_generic(m, op, N, K) : WRT_OK;
    size_t wb = (size_t)gemm_wb(tg, (uint64_t)p->n, K);
    uint64_t bytes = packed_bytes(tg, N, 1, K, wb);
    if (!(p->packed = m_alloc(m, bytes))) return m_alloc_fail(m, op, "packing the weights", bytes);
    m->weights_bytes += (size_t)bytes;
    pack_qgemm(tg, w, 0, N, 1, K, b, p->mult, p->za + tg->qgemm_xoff, wb, p->packed);
    return WRT_OK;
  }
  size_t C = (size_t)p->c, CO = (size_t)p->co, ks = (size_t)p->ks, G = (size_t)p->groups, cg = C / G, og = CO / G;
  int r = q_fill_pad(m, op, p->za, C + 64);
  if (r) return r;
  if (op->path == QC_GENERIC || op->path == QC_TRANSPOSE) return prepare_generic(m, op, CO, ks * cg);
  if (op->path == QC_DW) {
    size_t ct = p->dw->ct, kr = p->dw->kr;
    uint64_t bytes = dw_packed_bytes(p->dw, C, ks);
    uint8_t* pk = m_alloc(m, bytes);
    if (!pk) return m_alloc_fail(m, op, "packing the weights", bytes);
    m->weights_bytes += (size_t)bytes;
    /* kr 4 (relaxed dot): activations read as x + XOFF, as the dot GEMM's */
    uint32_t za = (uint32_t)p->za + (kr == 4 ? (uint32_t)tg->qgemm_xoff : 0);
    int cols = dw_by_column(p->dw);
    /* by column: 4 / kr groups a column (rows 0-2 and a zero), or runs of kr taps */
    size_t per_col = 4 / kr, groups = cols ? 3 * per_col : (ks + kr - 1) / kr;
    uint8_t* o = pk;
    for (size_t t0 = 0; t0 < C; t0 += ct) {
      for (size_t j = 0; j < ct; j++) {
        size_t ch = t0 + (kr == 4 ? dw_slot(j, ct) : j);
        uint32_t sum = 0;
        for (size_t t = 0; ch < C && t < ks; t++) sum += (uint32_t)wv(w, ch * ks + t);
        put_i32(o + 4 * j, ch < C ? (int32_t)((uint32_t)bias_at(b, ch) - za * sum) : 0);
        put_f32(o + 4 * (ct + j), ch < C ? p->mult[ch] : 0.0f);
      }
      o += 8 * ct;
      /* kr 1: tap-major int16; by column: per column kx, channel-major taps (0, kx), (1, kx), (2, kx), 0 (kr 4:
       * int8; kr 2: int16, two groups); kr 4 by runs: per run of 4 taps (the last padded with zeros), channel-major
       * int8 */
      for (size_t g = 0; g < groups; g++)
        for (size_t j = 0; j < ct; j++) {
          size_t ch = t0 + (kr == 4 ? dw_slot(j, ct) : j);
          for (size_t s = 0; s < kr; s++) {
            size_t row = g % per_col * kr + s, t = cols ? 3 * row + g / per_col : kr * g + s;
            int16_t v = (int16_t)(ch < C && (cols ? row < 3 : t < ks) ? wv(w, ch * ks + t) : 0);
            if (kr != 4) {
              __builtin_memcpy(o, &v, 2);
              o += 2;
            } else {
              *o++ = (uint8_t)v;
            }
          }
        }
    }
    p->packed = pk;
    return q_indirection(m, op, 0);
  }
  if (op->path == QC_PATCH) { /* one tap of ks * c channels: OHWI weights are [o][ks * c] */
    cg *= ks;
    ks = 1;
  }
  size_t wb = op->path == QC_GEMM ? (size_t)gemm_wb(tg, (uint64_t)p->pix, cg) : 1;
  uint64_t per_group = packed_bytes(tg, og, ks, cg, wb);
  uint8_t* pk = m_alloc(m, per_group * G);
  if (!pk) return m_alloc_fail(m, op, "packing the weights", per_group * G);
  m->weights_bytes += (size_t)(per_group * G);
  for (size_t g = 0; g < G; g++)
    pack_qgemm(tg, w, g * og, og, ks, cg, b ? b + g * og : 0, p->mult + g * og, p->za + tg->qgemm_xoff, wb,
               pk + g * per_group);
  p->packed = pk;
  p->gpack = (int64_t)per_group;
  return op->path == QC_GEMM ? WRT_OK : q_indirection(m, op, tg->qgemm_mr);
}

const char* qconv_kernel(const wrt_op* op) {
  switch (op->path) {
    case QC_GEMM: return "qs8 gemm 1x1";
    case QC_IGEMM: return "qs8 igemm";
    case QC_DW: return op->u.q.dw->ks == 9 ? "qs8 dwconv 3x3" : op->u.q.dw->ks == 25 ? "qs8 dwconv 5x5" : "qs8 dwconv";
    case QC_GROUPED: return "qs8 igemm per group";
    case QC_PATCH: return "qs8 gemm on patches";
    case QC_FC: return "qs8 gemm";
    case QC_SPARSE: return op->u.q.ind ? "qs8 sparse gemm (im2col)" : "qs8 sparse gemm";
    case QC_TRANSPOSE: return "qs8 conv transpose (portable)";
    case QC_MATMUL: return "qs8 matmul (portable)";
    case QC_FC_FLOAT: return "qs8 fully connected, float output (portable)";
    default: return "qs8 portable";
  }
}

/* ---- running ---------------------------------------------------------------------------------------------------- */
/* Tasks of an int8 convolution run (the fixed partitions of op_parallel_rows: every output byte is the same for
 * any thread count): GEMM and igemm, ranges of MR-row blocks; depthwise, ranges of output rows. */
typedef struct {
  const wrt_model* m;
  const wrt_op* op;
  const int8_t* a;      /* GEMM: the input rows */
  size_t M, N, K;       /* GEMM: rows, columns, depth */
  const int8_t** ind;   /* igemm: this group's taps */
  const uint8_t* pk;    /* igemm: this group's packed weights */
  size_t g;             /* igemm: the group */
} qconv_job;

/* the GEMM of a panel with nc valid columns: a last panel of at most half the columns on the half kernel */
static wrt_qgemm_fn qgemm_for(const wrt_target* tg, size_t nc) {
  return nc <= tg->qgemm_nr / 2 && tg->qgemm_half ? tg->qgemm_half : tg->qgemm;
}

/* y[M, N] = requant(a[M, K] x packed) for MR-row blocks [b0, b1), in runs that keep A in cache while the panels
 * stream past; where the target has qgemm_a16 or packs rows, each run's row blocks laid out by qpack first (int16
 * rows, or packed for a qgemm without a_stride: no qgemm_half), once for every panel */
static void qgemm_blocks(void* ctx, size_t b0, size_t b1) {
  const qconv_job* j = ctx;
  const wrt_target* tg = j->m->tg;
  const wrt_qplan* p = &j->op->u.q;
  size_t M = j->M, N = j->N, K = j->K, mr = tg->qgemm_mr, nr = tg->qgemm_nr, wb = (size_t)gemm_wb(tg, M, K);
  size_t pb = (size_t)panel_bytes(tg, 1, K, wb), run = (size_t)(64 * 1024) / ((K + 1) * mr);
  size_t k2 = (K + 1) & ~(size_t)1, kr = tg->qgemm_kr, kp = (K + kr - 1) / kr * kr;
  int16_t wide[A16_ELEMS]; /* or the packed blocks, as bytes */
  int8_t* pk = (int8_t*)(void*)wide;
  /* packed rows: 4 bytes a row and k block (kr bytes, or a pair of int16); one row is never packed (qgemm_row) */
  size_t packed = packs_rows(tg) && M > 1 && kp / kr * 4 * mr <= sizeof wide;
  /* the GEMM's operands: depth, row stride (elements), bytes per row block; fn 0: qgemm_for each panel */
  size_t kc = K, as = K, bs = mr * K;
  wrt_qgemm_fn fn = 0;
  if (wb == 2) kc = k2, as = 0, bs = mr * k2 * 2, fn = tg->qgemm_a16;
  if (packed) kc = kp, as = 0, bs = mr * (kp / kr * 4), fn = tg->qgemm;
  /* panels per call: the staged-row GEMMs take them all at once (their set-up once per row block) while the weights
   * (N columns of bs / mr bytes) stay in cache */
  size_t step = fn && N * (bs / mr) <= 8192 ? N : nr;
  if (fn && run > sizeof wide / bs) run = sizeof wide / bs;
  run = run ? run : 1;
  int8_t* y = (int8_t*)j->m->t[j->op->out].data;
  for (size_t s0 = b0; s0 < b1; s0 += run) {
    size_t s1 = b1 - s0 < run ? b1 : s0 + run;
    const int8_t* a = fn ? pk : j->a + s0 * bs;
    if (fn)
      for (size_t b = s0; b < s1; b++)
        tg->qpack(M - b * mr < mr ? M - b * mr : mr, K, j->a + b * mr * K, K, pk + (b - s0) * bs, p->rq.xmask);
    for (size_t n0 = 0; n0 < N; n0 += step) {
      size_t nc = N - n0 < step ? N - n0 : step;
      wrt_qgemm_fn f = fn ? fn : qgemm_for(tg, nc);
      for (size_t b = s0; b < s1; b++) {
        size_t i = b * mr, rows = M - i < mr ? M - i : mr;
        wrt_qgemm_fn g = rows == 1 && !fn && tg->qgemm_row ? tg->qgemm_row : f; /* a lone row: no copies of it */
        g(rows, nc, kc, a + (b - s0) * bs, as, p->packed + (n0 / nr) * pb, y + i * N + n0, N, &p->rq);
      }
    }
  }
}

static void qigemm_blocks(void* ctx, size_t b0, size_t b1) {
  const qconv_job* j = ctx;
  const wrt_target* tg = j->m->tg;
  const wrt_qplan* p = &j->op->u.q;
  size_t P = (size_t)p->pix, CO = (size_t)p->co, ks = (size_t)p->ks, G = (size_t)p->groups;
  size_t cg = (size_t)p->c / G, og = CO / G, MR = tg->qgemm_mr, NR = tg->qgemm_nr;
  size_t pb = (size_t)panel_bytes(tg, ks, cg, 1);
  int8_t* y = (int8_t*)j->m->t[j->op->out].data;
  for (size_t b = b0; b < b1; b++) {
    size_t p0 = b * MR, mr = P - p0 < MR ? P - p0 : MR;
    for (size_t n0 = 0; n0 < og; n0 += NR)
      tg->qigemm(mr, og - n0 < NR ? og - n0 : NR, cg, ks, j->ind + p0 * ks, j->pk + (n0 / NR) * pb,
                 y + p0 * CO + j->g * og + n0, CO, &p->rq);
  }
}

static void qdw_rows(void* ctx, size_t r0, size_t r1) {
  const qconv_job* j = ctx;
  const wrt_qplan* p = &j->op->u.q;
  size_t C = (size_t)p->c, CO = (size_t)p->co, ks = (size_t)p->ks, OW = (size_t)p->ow;
  int8_t* y = (int8_t*)j->m->t[j->op->out].data;
  for (size_t r = r0; r < r1; r++) p->dw->fn(C, OW, ks, p->ind + r * OW * ks, p->packed, y + r * OW * CO, CO, &p->rq);
}

/* QC_PATCH: per block of MR pixels, their patches gathered (tap-major indirection) into rows of PATCH_K bytes, then
 * the GEMM over every panel (the rows packed by qpack where the target has it). The depth passed is the patch
 * rounded up to KR: the same k blocks as packed (the weights past the patch are zeros), read from the row's zero
 * bytes instead of a short last block. */
static void qpatch_blocks(void* ctx, size_t b0, size_t b1) {
  const qconv_job* j = ctx;
  const wrt_target* tg = j->m->tg;
  const wrt_qplan* p = &j->op->u.q;
  size_t P = (size_t)p->pix, CO = (size_t)p->co, ks = (size_t)p->ks, C = (size_t)p->c, MR = tg->qgemm_mr;
  size_t nr = tg->qgemm_nr, kr = tg->qgemm_kr, K = ks * C, pb = (size_t)panel_bytes(tg, 1, K, 1);
  size_t kc = (K + kr - 1) / kr * kr;
  int8_t* y = (int8_t*)j->m->t[j->op->out].data;
  /* pk: the rows as qpack lays them out, where it does (4 bytes a row and k block: twice the bytes at kr 2) */
  int8_t a[PATCH_MR * PATCH_K], pk[PATCH_MR * PATCH_K * 2];
  __builtin_memset(a, 0, sizeof a);
  for (size_t b = b0; b < b1; b++) {
    size_t p0 = b * MR, mr = P - p0 < MR ? P - p0 : MR;
    const int8_t* const* ind = p->ind + p0 * ks;
    for (size_t t = 0; t < ks; t++)
      for (size_t i = 0; i < mr; i++) {
        const int8_t* src = ind[t * mr + i];
        int8_t* dst = a + i * PATCH_K + t * C;
        if (C == 3) { /* an RGB pixel: a 2-byte and a 1-byte copy */
          __builtin_memcpy(dst, src, 2);
          dst[2] = src[2];
        } else {
          for (size_t c = 0; c < C; c++) dst[c] = src[c];
        }
      }
    const int8_t* rows = a;
    size_t rs = PATCH_K;
    if (packs_rows(tg)) tg->qpack(mr, PATCH_K, a, PATCH_K, pk, p->rq.xmask), rows = pk, rs = 0; /* no tail */
    for (size_t n0 = 0; n0 < CO; n0 += nr) {
      size_t nc = CO - n0 < nr ? CO - n0 : nr;
      wrt_qgemm_fn fn = rs ? qgemm_for(tg, nc) : tg->qgemm;
      fn(mr, nc, kc, rows, rs, p->packed + (n0 / nr) * pb, y + p0 * CO + n0, CO, &p->rq);
    }
  }
}

static void run_qgemm(wrt_model* m, wrt_op* op, size_t M, size_t N, size_t K) {
  qconv_job j = {m, op, (const int8_t*)m->t[op->in[0]].data, M, N, K, 0, 0, 0};
  op_parallel_rows(m, op, (M + m->tg->qgemm_mr - 1) / m->tg->qgemm_mr, qgemm_blocks, &j);
}

static void run_generic_conv(wrt_model* m, wrt_op* op) {
  const wrt_qplan* p = &op->u.q;
  const uint8_t* x = t_bytes(m, op->in[0]);
  uint8_t* y = t_bytes(m, op->out);
  int u8 = m->t[op->in[0]].dtype == WRT_U8;
  size_t C = (size_t)p->c, CO = (size_t)p->co, ks = (size_t)p->ks, KW = (size_t)p->kw;
  size_t G = (size_t)p->groups, cg = C / G, og = CO / G;
  const int16_t* wc = (const int16_t*)(const void*)p->packed;
  for (size_t px = 0; px < (size_t)p->pix; px++)
    for (size_t o = 0; o < CO; o++) {
      uint32_t acc = (uint32_t)p->bias[o];
      size_t g = o / og;
      for (size_t t = 0; t < ks; t++) {
        int64_t src = tap_input_pixel(&op->a, p->h, p->w, p->oh, p->ow, (int64_t)px, (int64_t)(t / KW),
                                      (int64_t)(t % KW));
        if (src < 0) continue;
        const int16_t* wr = wc + (o * ks + t) * cg;
        for (size_t c = 0; c < cg; c++)
          acc += (uint32_t)((q_at(x, (size_t)src * C + g * cg + c, u8) - p->za) * wr[c]);
      }
      y[px * CO + o] = (uint8_t)q_requant((int32_t)acc, p->mult[o], &p->rq);
    }
}

static void run_transpose(wrt_model* m, wrt_op* op) {
  const wrt_qplan* p = &op->u.q;
  const wrt_attrs* a = &op->a;
  const uint8_t* x = t_bytes(m, op->in[0]);
  uint8_t* y = t_bytes(m, op->out);
  int u8 = m->t[op->in[0]].dtype == WRT_U8;
  size_t C = (size_t)p->c, CO = (size_t)p->co, ks = (size_t)p->ks, KW = (size_t)p->kw;
  size_t G = (size_t)p->groups, cg = C / G, og = CO / G, H = (size_t)p->h, W = (size_t)p->w;
  size_t OH = (size_t)p->oh, OW = (size_t)p->ow, opix = (size_t)p->n * OH * OW;
  const int16_t* wc = (const int16_t*)(const void*)p->packed;
  uint32_t* acc = m->scratch;
  for (size_t q = 0; q < opix; q++)
    for (size_t o = 0; o < CO; o++) acc[q * CO + o] = (uint32_t)p->bias[o];
  for (size_t px = 0; px < (size_t)(p->n * H * W); px++) {
    size_t n = px / (H * W), ih = (px / W) % H, iw = px % W;
    for (size_t t = 0; t < ks; t++) {
      int64_t oh = (int64_t)ih * a->strides[0] + (int64_t)(t / KW) * a->dilations[0] - a->pads[0];
      int64_t ow = (int64_t)iw * a->strides[1] + (int64_t)(t % KW) * a->dilations[1] - a->pads[1];
      if (oh < 0 || oh >= (int64_t)OH || ow < 0 || ow >= (int64_t)OW) continue;
      uint32_t* dst = acc + ((n * OH + (size_t)oh) * OW + (size_t)ow) * CO;
      for (size_t o = 0; o < CO; o++) {
        const int16_t* wr = wc + (o * ks + t) * cg;
        size_t g = o / og;
        uint32_t s = 0;
        for (size_t c = 0; c < cg; c++) s += (uint32_t)((q_at(x, px * C + g * cg + c, u8) - p->za) * wr[c]);
        dst[o] += s;
      }
    }
  }
  for (size_t q = 0; q < opix; q++)
    for (size_t o = 0; o < CO; o++) y[q * CO + o] = (uint8_t)q_requant((int32_t)acc[q * CO + o], p->mult[o], &p->rq);
}

static void run_generic_fc(wrt_model* m, wrt_op* op) {
  const wrt_qplan* p = &op->u.q;
  const wrt_tensor* w = &m->t[op->in[1]];
  const uint8_t* x = t_bytes(m, op->in[0]);
  uint8_t* y = t_bytes(m, op->out);
  float* yf = (float*)(void*)y; /* float_output */
  int float_out = op->path == QC_FC_FLOAT;
  float lo = op->a.act_min, hi = op->a.act_max;
  int u8 = m->t[op->in[0]].dtype == WRT_U8, wu8 = w->dtype == WRT_U8;
  size_t M = (size_t)p->n, K = (size_t)p->c, N = (size_t)p->co;
  const int16_t* wc = (const int16_t*)(const void*)p->packed; /* constant weights, centered; else read at run */
  const int32_t* rb = op->n_in > 2 && op->in[2] >= 0 ? (const int32_t*)m->t[op->in[2]].data : 0;
  const uint8_t* wr = t_bytes(m, op->in[1]);
  for (size_t i = 0; i < M; i++)
    for (size_t o = 0; o < N; o++) {
      uint32_t acc = wc ? (uint32_t)p->bias[o] : rb ? (uint32_t)rb[o] : 0u;
      int32_t zw = w->q->zp[w->q->axis < 0 ? 0 : o];
      for (size_t k = 0; k < K; k++) {
        int32_t wk = wc ? wc[o * K + k] : q_at(wr, o * K + k, wu8) - zw;
        acc += (uint32_t)((q_at(x, i * K + k, u8) - p->za) * wk);
      }
      if (float_out) { /* python_ref: minimum(maximum(f32(acc) * unit, act_min), act_max) */
        float v = (float)(int32_t)acc * p->mult[o];
        if (v < lo) v = lo;
        if (v > hi) v = hi;
        yf[i * N + o] = v;
      } else {
        y[i * N + o] = (uint8_t)q_requant((int32_t)acc, p->mult[o], &p->rq);
      }
    }
}

/* FULLY_CONNECTED with float_output on int8 rows and constant weights: loops the compilers vectorize (no
 * per-element dtype test); wrapping uint32 sums, as python_ref's. The engine core runs on CPUs without the dot
 * product extension (the aarch64 test driver is built with it, for its kernels): no sdot in this vectorized loop. */
#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD) && !defined(__clang__)
#define FC_FLOAT_TARGET __attribute__((noinline, target("+nodotprod")))
#else
#define FC_FLOAT_TARGET
#endif
static FC_FLOAT_TARGET void run_fc_float(wrt_model* m, wrt_op* op) {
  const wrt_qplan* p = &op->u.q;
  if (!p->packed || m->t[op->in[0]].dtype != WRT_I8) {
    run_generic_fc(m, op);
    return;
  }
  const int8_t* x = (const int8_t*)(const void*)t_bytes(m, op->in[0]);
  float* y = (float*)(void*)t_bytes(m, op->out);
  size_t M = (size_t)p->n, K = (size_t)p->c, N = (size_t)p->co;
  int32_t za = p->za;
  float lo = op->a.act_min, hi = op->a.act_max;
  for (size_t i = 0; i < M; i++) {
    const int8_t* xr = x + i * K;
    for (size_t o = 0; o < N; o++) {
      uint32_t acc = (uint32_t)p->bias[o];
      if (p->gpack == 1) { /* int8 weights, zx folded into the bias */
        const int8_t* wr = (const int8_t*)(const void*)p->packed + o * K;
        int32_t s = 0; /* |x * w| <= 128 * 127: K < 2^17 keeps s in int32; longer rows in blocks */
        for (size_t k0 = 0; k0 < K; k0 += 65536) {
          size_t k1 = K - k0 < 65536 ? K : k0 + 65536;
          s = 0;
          for (size_t k = k0; k < k1; k++) s += (int32_t)xr[k] * (int32_t)wr[k];
          acc += (uint32_t)s;
        }
      } else {
        const int16_t* wr = (const int16_t*)(const void*)p->packed + o * K;
        for (size_t k = 0; k < K; k++) acc += (uint32_t)(((int32_t)xr[k] - za) * (int32_t)wr[k]);
      }
      float v = (float)(int32_t)acc * p->mult[o];
      if (v < lo) v = lo;
      if (v > hi) v = hi;
      y[i * N + o] = v;
    }
  }
}

/* MATMUL with numpy broadcasting: acc = sum (a - za)(b - zb), m = f32(f32(sa * sb) / sy), no clamp */
static void run_matmul(wrt_model* m, wrt_op* op) {
  const wrt_qplan* p = &op->u.q;
  const wrt_tensor *ta = &m->t[op->in[0]], *tb = &m->t[op->in[1]], *ty = &m->t[op->out];
  int ra = ta->rank, rb = tb->rank, ua = ta->dtype == WRT_U8, ub = tb->dtype == WRT_U8;
  size_t M = ra == 1 ? 1 : (size_t)ta->dims[ra - 2], K = (size_t)ta->dims[ra - 1];
  size_t N = rb == 1 ? 1 : (size_t)tb->dims[rb - 1];
  int nb = ty->rank - (ra > 1) - (rb > 1); /* output batch axes */
  size_t sa[WRT_MAX_RANK] = {0}, sb[WRT_MAX_RANK] = {0}, dims[WRT_MAX_RANK], nbatch = 1, acc_a = 1, acc_b = 1;
  for (int i = nb - 1; i >= 0; i--) {
    int ia = i - (nb - (ra > 2 ? ra - 2 : 0)), ib = i - (nb - (rb > 2 ? rb - 2 : 0));
    size_t da = ia >= 0 ? (size_t)ta->dims[ia] : 1, db = ib >= 0 ? (size_t)tb->dims[ib] : 1;
    dims[i] = (size_t)ty->dims[i];
    sa[i] = da == 1 ? 0 : acc_a;
    sb[i] = db == 1 ? 0 : acc_b;
    acc_a *= da;
    acc_b *= db;
    nbatch *= dims[i];
  }
  float mult = p->ma;
  const uint8_t *a = t_bytes(m, op->in[0]), *b = t_bytes(m, op->in[1]);
  uint8_t* y = t_bytes(m, op->out);
  size_t idx[WRT_MAX_RANK] = {0};
  for (size_t bt = 0; bt < nbatch; bt++) {
    size_t ao = 0, bo = 0;
    for (int i = 0; i < nb; i++) {
      ao += idx[i] * sa[i];
      bo += idx[i] * sb[i];
    }
    for (size_t i = 0; i < M; i++)
      for (size_t j = 0; j < N; j++) {
        uint32_t acc = 0;
        for (size_t k = 0; k < K; k++)
          acc += (uint32_t)((q_at(a, ao * M * K + i * K + k, ua) - p->za) * (q_at(b, bo * K * N + k * N + j, ub) - p->zb));
        y[bt * M * N + i * N + j] = (uint8_t)q_requant((int32_t)acc, mult, &p->rq);
      }
    for (int i = nb - 1; i >= 0; i--) {
      if (++idx[i] < dims[i]) break;
      idx[i] = 0;
    }
  }
}

int run_qconv(wrt_model* m, wrt_op* op) {
  const wrt_qplan* p = &op->u.q;
  const wrt_target* tg = m->tg;
  size_t P = (size_t)p->pix, C = (size_t)p->c, CO = (size_t)p->co, ks = (size_t)p->ks;
  size_t G = (size_t)p->groups, cg = G ? C / G : 0;
  switch (op->path) {
    case QC_SPARSE:
      if (WRT_KF_QSPARSE) qsparse_run(m, op); /* never planned without it */
      return WRT_OK;
    case QC_FC:
      if (p->n) run_qgemm(m, op, (size_t)p->n, CO, C);
      return WRT_OK;
    case QC_GEMM:
      run_qgemm(m, op, P, CO, C);
      return WRT_OK;
    case QC_DW: {
      qconv_job j = {m, op, 0, 0, 0, 0, 0, 0, 0};
      op_parallel_rows(m, op, (size_t)(p->n * p->oh), qdw_rows, &j);
      return WRT_OK;
    }
    case QC_PATCH: {
      qconv_job j = {m, op, 0, 0, 0, 0, 0, 0, 0};
      op_parallel_rows(m, op, (P + tg->qgemm_mr - 1) / tg->qgemm_mr, qpatch_blocks, &j);
      return WRT_OK;
    }
    case QC_IGEMM:
    case QC_GROUPED: {
      qconv_job j = {m, op, 0, 0, 0, 0, 0, 0, 0};
      for (size_t g = 0; g < G; g++) {
        j.g = g;
        j.ind = p->ind;
        if (g > 0) { /* the same taps, shifted to this group's channels; padding still reads the zero point */
          const int8_t** s = (const int8_t**)(void*)m->scratch;
          for (size_t i = 0; i < P * ks; i++) s[i] = p->ind[i] == p->pad ? p->pad : p->ind[i] + g * cg;
          j.ind = s;
        }
        j.pk = p->packed + g * (size_t)p->gpack;
        op_parallel_rows(m, op, (P + tg->qgemm_mr - 1) / tg->qgemm_mr, qigemm_blocks, &j);
      }
      return WRT_OK;
    }
    case QC_TRANSPOSE:
      if (WRT_KEEP(CONV_TRANSPOSE_2D, QS8)) run_transpose(m, op);
      return WRT_OK;
    case QC_MATMUL:
      if (WRT_KEEP(MATMUL, QS8)) run_matmul(m, op);
      return WRT_OK;
    case QC_FC_FLOAT:
      if (WRT_KEEP(FULLY_CONNECTED, QS8)) run_fc_float(m, op);
      return WRT_OK;
    default:
      if (WRT_KEEP(FULLY_CONNECTED, QS8) && op->type == OP_FULLY_CONNECTED) run_generic_fc(m, op);
      else run_generic_conv(m, op);
      return WRT_OK;
  }
}
