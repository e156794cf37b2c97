/* CONV_2D and FULLY_CONNECTED whose weights are block-sparse (python_ref/sparse.py: 1x4 blocks of 4 output channels
 * x 1 column of the weight matrix [Cout, KH*KW*Cin]). The plan runs a layer with the sparse kernels when its block
 * sparsity reaches the target's measured break-even (wrt_target: spmm_min_sparsity + spmm_k_penalty / K columns,
 * spmv_min_sparsity for one output pixel), and otherwise hands it to the
 * dense implementation over the expanded weights (model.c expands them for its prepare), so a sparse file is never
 * slower than a dense one.
 *
 * The sparse GEMM runs tiles of spmm_mr output pixels against all block rows; a tile's input is read:
 *   SP_ROWS    in place (G = 1; FULLY_CONNECTED, 1x1 stride-1 unpadded convolution): row i at x + i * row stride
 *   SP_IM2COL  gathered into scratch [mr][K] through the indirection buffer (G = 1; other convolutions)
 *   SP_PACKED  transposed into scratch [K][MR] by the target's sppack (G > 1: AVX2, AVX-512)
 *   SP_ONE     one output pixel (batch-1 FULLY_CONNECTED, 1x1 outputs): spmv on the row, gathered if need be
 *   SP_UNSTRUCT unstructured: weights whose 1x4 blocks stay below the break-even but whose elements are mostly zero
 *              (pruned per weight, as MediaPipe's sparse models) run per output channel over its own non-zeros
 *              (spmmu) on a tile of spmmu_mr pixels packed [K][UMR] by sppacku; from the target's element-sparsity
 *              break-even (spmmu_min_sparsity + spmmu_k_penalty / K). Dense-stored weights qualify too
 *              (sparse_candidate).
 *
 * Threads: SP_ROWS runs its tiles as parallel tasks (whole tiles of MR pixels, each computed as on one thread, so
 * the bytes are the same for any thread count); the other modes gather each tile into the one shared scratch and
 * stay on one thread.
 */
#include "engine.h"

enum { SP_ROWS = 1, SP_IM2COL, SP_PACKED, SP_ONE, SP_UNSTRUCT };

static int policy = WRT_SPARSE_AUTO;

int wrt_set_sparse_policy(int p) {
  int old = policy;
  if (p >= WRT_SPARSE_AUTO && p <= WRT_SPARSE_NEVER) policy = p;
  return old;
}

int sparse_policy(void) { return policy; }

static uint32_t rd_start(const wrt_tensor* t, uint64_t r) { return fb_rd32(t->sp_starts + 4 * r); }

void sparse_expand(const wrt_tensor* t, void* out) {
  uint64_t rows = (uint64_t)t->dims[0], cols = rows ? t->count / rows : 0, es = t->esize == 1 ? 1 : 4;
  uint8_t* o = out; /* float32 (float16 weights are widened at load) or int8: the element bytes */
  for (uint64_t i = 0; i < t->count * es; i++) o[i] = 0;
  for (uint64_t r = 0; r < (rows + 3) / 4; r++)
    for (uint32_t b = rd_start(t, r), e = rd_start(t, r + 1); b < e; b++) {
      uint64_t col = fb_rd32(t->sp_cols + 4 * (size_t)b);
      for (uint64_t j = 0; j < 4 && 4 * r + j < rows; j++)
        __builtin_memcpy(o + ((4 * r + j) * cols + col) * es, t->file_data + (4 * (size_t)b + j) * es, es);
    }
}

/* a 1x1 convolution with stride 1 and no padding reads its input rows in place */
static int pointwise_conv(const wrt_model* m, const wrt_op* op) {
  const wrt_tensor* w = &m->t[op->in[1]];
  const wrt_attrs* a = &op->a;
  return w->dims[1] == 1 && w->dims[2] == 1 && a->strides[0] == 1 && a->strides[1] == 1 && !a->pads[0] &&
         !a->pads[1] && !a->pads[2] && !a->pads[3];
}

static int has_bias(const wrt_op* op) { return op->n_in > 2 && op->in[2] >= 0; }

/* CONV_2D's residual r (passes.fuse_residual_adds): the kernels write the plain sum, each tile then adds r and
 * clamps while its rows are in cache, as the dense GEMM does */
static const float* residual_of(const wrt_model* m, const wrt_op* op) {
  return op->type == OP_CONV_2D && op->n_in > 3 && op->in[3] >= 0 ? t_f32(m, op->in[3]) : 0;
}

/* the sparse kernels can run it (else the dense path does) */
static int sparse_possible(const wrt_model* m, const wrt_op* op, uint64_t k) {
  const wrt_tensor* w = &m->t[op->in[1]];
  if (op->type == OP_CONV_2D && op->a.groups != 1) return 0; /* grouped and depthwise: dense */
  if (has_bias(op) && !m->t[op->in[2]].is_const) return 0;    /* the bias is packed with the weights */
  if (w->rank < 2 || !m->tg->spmm || !m->tg->spmv || (m->tg->spmm_g > 1 && !m->tg->sppack)) return 0;
  return k * m->tg->spmm_mr * sizeof(float) < ((uint64_t)1 << 31); /* block offsets are int32 bytes */
}

/* the weights' non-zero elements: a dense constant's (float32 at load), or a block-sparse one's stored values */
static uint64_t nonzeros(const wrt_tensor* w) {
  const float* v = (const float*)(const void*)w->file_data;
  uint64_t n = w->sparse ? 4 * (uint64_t)w->sp_blocks : w->count, nz = 0;
  for (uint64_t i = 0; i < n; i++) nz += v[i] != 0.0f;
  return nz;
}

/* SP_UNSTRUCT runs it: more pixels than one and an element sparsity from the target's break-even */
static int unstructured_ok(const wrt_model* m, const wrt_op* op, uint64_t k, uint64_t pix) {
  const wrt_target* tg = m->tg;
  const wrt_tensor* w = &m->t[op->in[1]];
  if (policy == WRT_SPARSE_NEVER || pix < 2 || !tg->spmmu || !tg->sppacku || !sparse_possible(m, op, k) ||
      k * tg->spmmu_mr * sizeof(float) >= ((uint64_t)1 << 31))
    return 0;
  return policy == WRT_SPARSE_ALWAYS || 1.0 - (double)nonzeros(w) / (double)w->count >=
                                            tg->spmmu_min_sparsity + tg->spmmu_k_penalty / (double)(k ? k : 1);
}

/* the layer's candidates (choice.c): the sparse kernels, or the dense implementation's */
static void offer_sparse(const wrt_model* m, wrt_op* op) {
  choice_offer(op, WRT_CH_DENSE | WRT_CH_SPARSE | (choice_winograd(m, op) ? WRT_CH_WINO2 | WRT_CH_WINO4 : 0u));
}

/* dtype_class: dense float32 weights of a CONV_2D (groups 1) or FULLY_CONNECTED that the unstructured kernel would
 * run (decided once, at load: the file is gone at a resize, which keeps the choice) */
int sparse_candidate(const wrt_model* m, wrt_op* op) {
  if (op->sparse_path) return op->sparse_path == 1;
  if ((op->type != OP_CONV_2D && op->type != OP_FULLY_CONNECTED) || op->n_in < 2 || op->in[1] < 0) return 0;
  const wrt_tensor *w = &m->t[op->in[1]], *y = &m->t[op->out];
  if (!w->is_const || w->dtype != WRT_F32 || !w->file_data || w->rank < 2 || !w->dims[0]) return 0;
  uint64_t n = (uint64_t)w->dims[0];
  if (!unstructured_ok(m, op, w->count / n, y->count / n)) return 0;
  offer_sparse(m, op);
  unsigned f = choice_forced(op); /* a per-op choice (choice.c): the dense implementation unless sparse */
  if (!f || f == WRT_CH_SPARSE) return 1;
  choice_note(op, WRT_CH_DENSE); /* a convolution's plan notes its own algorithm */
  return 0;
}

/* Packed weights per row block (4 output channels, or 1 for SP_UNSTRUCT): its biases, then the weights of each
 * stored block (a 1x4 block, or one non-zero), with one column offset per stored block. */
int plan_sparse(wrt_model* m, wrt_op* op, wrt_cost* c) {
  const wrt_tensor *x = &m->t[op->in[0]], *w = &m->t[op->in[1]], *y = &m->t[op->out];
  wrt_sparse_plan* p = &op->u.sparse;
  uint64_t n = (uint64_t)w->dims[0], k = n ? w->count / n : 0, br = (n + 3) / 4, nb = w->sp_blocks;
  uint64_t pix = y->count / (n ? n : 1);
  double sparsity = br && k ? 1.0 - (double)nb / ((double)br * (double)k) : 0.0;
  double break_even = pix == 1 ? m->tg->spmv_min_sparsity
                               : m->tg->spmm_min_sparsity + m->tg->spmm_k_penalty / (double)(k ? k : 1);
  /* a resize keeps the choice made at load: the weights were packed (or expanded) for it */
  int resize = op->sparse_path != 0, possible = sparse_possible(m, op, k);
  if (!resize && w->sparse && possible) offer_sparse(m, op);
  unsigned f = resize ? 0 : choice_forced(op); /* a per-op choice (choice.c) before the policy */
  int sparse = resize ? op->sparse_path == 1
               : f    ? f == WRT_CH_SPARSE && possible
                      : policy != WRT_SPARSE_NEVER && possible && (policy == WRT_SPARSE_ALWAYS || sparsity >= break_even);
  /* dense-stored weights: dtype_class chose them for the unstructured kernel */
  int u = resize ? sparse && p->mode == SP_UNSTRUCT : !w->sparse || (!sparse && !f && unstructured_ok(m, op, k, pix));
  sparse |= u;
  op->sparse_path = sparse ? 1 : 2;
  if (!resize) choice_note(op, sparse ? WRT_CH_SPARSE : WRT_CH_DENSE);
  if (!sparse) { /* the dense implementation (ops.c), over the weights expanded for its prepare */
    if (!w->sparse) return WRT_PLAN_DENSE;
    op->expand_in = 0x2;
    c->bytes += w->count * sizeof(float) + 1;
    return WRT_PLAN_DENSE;
  }
  if (u) {
    p->nz = resize ? p->nz : (int64_t)nonzeros(w);
    if (w->sparse && !resize) { /* prepare reads the dense expansion */
      op->expand_in = 0x2;
      c->bytes += w->count * sizeof(float) + 1;
    }
  }
  uint64_t MR = u ? m->tg->spmmu_mr : m->tg->spmm_mr, h = u ? 1 : 4, heads = u ? n : br;
  uint64_t blocks = u ? (uint64_t)p->nz : nb;
  p->n = (int64_t)n;
  p->k = (int64_t)k;
  p->pix = (int64_t)pix;
  p->ks = op->type == OP_CONV_2D ? (int64_t)w->dims[1] * w->dims[2] : 1;
  p->kc = (int64_t)k / p->ks;
  int rows = op->type == OP_FULLY_CONNECTED || pointwise_conv(m, op);
  p->mode = u ? SP_UNSTRUCT : pix == 1 ? SP_ONE : m->tg->spmm_g > 1 ? SP_PACKED : rows ? SP_ROWS : SP_IM2COL;
  op->packed_in = 0x6; /* weights and bias, packed together */
  if (op->type == OP_CONV_2D && (uint64_t)x->dims[3] + 16 > m->pad_floats) m->pad_floats = (size_t)x->dims[3] + 16;
  c->bytes += heads * 4 + blocks * 4 + (heads + blocks) * h * sizeof(float) + 3;
  if (op->type == OP_CONV_2D && !rows) c->bytes += ptr_bytes(pix * (uint64_t)p->ks) + 1; /* indirection */
  c->scratch = p->mode == SP_ONE ? (rows ? 0 : k * sizeof(float)) : p->mode == SP_ROWS ? 0 : MR * k * sizeof(float);
  c->work += sat_mul(pix, blocks * h) + (p->mode == SP_ROWS ? 0 : WORK_COPY * sat_mul(pix, k + (u ? n : 0)));
  if (residual_of(m, op)) c->work += WORK_VEC * pix * n;
  return WRT_OK;
}

/* convolutions that gather rows: the tap pointers, which follow the shapes */
static int sparse_indirection(wrt_model* m, wrt_op* op) {
  if (op->type != OP_CONV_2D || pointwise_conv(m, op)) return WRT_OK;
  op->u.sparse.ind =
      build_tile_indirection(m, op, op->u.sparse.mode == SP_UNSTRUCT ? m->tg->spmmu_mr : m->tg->spmm_mr);
  return op->u.sparse.ind ? WRT_OK : WRT_ERR_NOMEM;
}

int prepare_sparse(wrt_model* m, wrt_op* op) {
  wrt_sparse_plan* p = &op->u.sparse;
  const wrt_tensor* w = &m->t[op->in[1]];
  int u = p->mode == SP_UNSTRUCT;
  uint64_t n = (uint64_t)p->n, k = (uint64_t)p->k, h = u ? 1 : 4, br = u ? n : (n + 3) / 4;
  uint64_t nb = u ? (uint64_t)p->nz : w->sp_blocks;
  uint64_t col_bytes = (u ? m->tg->spmmu_mr : p->mode == SP_PACKED ? m->tg->spmm_mr : 1) * sizeof(float);
  if (p->w) { /* a resize: the weights stay packed (the file is gone), the column offsets follow the new mode */
    for (uint64_t b = 0; b < nb; b++) p->offs[b] = (int32_t)(p->offs[b] / p->col_bytes * (int64_t)col_bytes);
    p->col_bytes = (int64_t)col_bytes;
    return sparse_indirection(m, op);
  }
  p->col_bytes = (int64_t)col_bytes;
  p->nnz = m_alloc(m, br * 4 + 1);
  p->offs = m_alloc(m, nb * 4 + 1);
  p->w = m_alloc(m, (br + nb) * h * sizeof(float) + 1);
  if (!p->nnz || !p->offs || !p->w)
    return m_alloc_fail(m, op, "packing the sparse weights", (br + nb) * (h + 1) * 4 + 3);
  m->weights_bytes += (size_t)((br + nb) * h * sizeof(float) + br * 4 + nb * 4);
  const float* v = (const float*)(const void*)w->file_data; /* SP_UNSTRUCT: dense [n][k] (expanded if need be) */
  const float* bias = has_bias(op) ? (const float*)(const void*)m->t[op->in[2]].file_data : 0;
  float* o = p->w;
  int32_t* off = p->offs;
  for (uint64_t r = 0; r < br; r++) {
    for (uint64_t j = 0; j < h; j++) *o++ = bias && h * r + j < n ? bias[h * r + j] : 0.0f;
    int32_t cnt = 0;
    if (u) {
      for (uint64_t j = 0; j < k; j++)
        if (v[r * k + j] != 0.0f) {
          *o++ = v[r * k + j];
          *off++ = (int32_t)(j * col_bytes);
          cnt++;
        }
    } else {
      for (uint32_t b = rd_start(w, r), e = rd_start(w, r + 1); b < e; b++, cnt++) {
        *off++ = (int32_t)(fb_rd32(w->sp_cols + 4 * (size_t)b) * col_bytes);
        for (int j = 0; j < 4; j++) *o++ = v[4 * (size_t)b + j];
      }
    }
    p->nnz[r] = cnt;
  }
  return sparse_indirection(m, op);
}

const char* sparse_kernel(const wrt_op* op) {
  switch (op->u.sparse.mode) {
    case SP_ROWS: return "sparse gemm";
    case SP_IM2COL: return "sparse gemm (im2col)";
    case SP_PACKED: return "sparse gemm (packed)";
    case SP_ONE: return "sparse gemv";
    case SP_UNSTRUCT: return "sparse gemm (unstructured)";
  }
  return "?";
}

/* scratch[i][t*kc + c] = tap t of pixel i (ind: ks*mr pointers, tap-major) */
static void im2col(const float* const* ind, size_t mr, size_t ks, size_t kc, float* out) {
  for (size_t i = 0; i < mr; i++)
    for (size_t t = 0; t < ks; t++) rt_copy(out + (i * ks + t) * kc, ind[t * mr + i], kc * sizeof(float));
}

typedef struct {
  const wrt_model* m;
  const wrt_op* op;
  const float* x;
  const float* res;
  const wrt_clamp* clamp;
  float* y;
} rows_job;

/* SP_ROWS tiles [t0, t1): input rows read in place */
static void sparse_rows(void* ctx, size_t t0, size_t t1) {
  const rows_job* j = ctx;
  const wrt_sparse_plan* p = &j->op->u.sparse;
  const wrt_target* tg = j->m->tg;
  size_t n = (size_t)p->n, K = (size_t)p->k, P = (size_t)p->pix, MR = tg->spmm_mr;
  for (size_t t = t0; t < t1; t++) {
    size_t p0 = t * MR, mr = P - p0 < MR ? P - p0 : MR;
    float* out = j->y + p0 * n;
    tg->spmm(mr, n, j->x + p0 * K, K * sizeof(float), p->nnz, p->offs, p->w, out, n * sizeof(float), j->clamp);
    if (j->res) tg->vbinary[WRT_BIN_ADD](mr * n, out, j->res + p0 * n, out, &j->op->clamp);
  }
}

int run_sparse(wrt_model* m, wrt_op* op) {
  const wrt_sparse_plan* p = &op->u.sparse;
  const wrt_target* tg = m->tg;
  const float* x = t_f32(m, op->in[0]);
  float* y = t_f32(m, op->out);
  size_t n = (size_t)p->n, K = (size_t)p->k, P = (size_t)p->pix, ks = (size_t)p->ks, kc = (size_t)p->kc;
  size_t MR = tg->spmm_mr, G = tg->spmm_g;
  float* scratch = m->scratch;
  const float* res = residual_of(m, op);
  const wrt_clamp none = {-__builtin_inff(), __builtin_inff()}, *clamp = res ? &none : &op->clamp;
  if (p->mode == SP_ONE) {
    const float* row = x;
    if (p->ind) {
      im2col(p->ind, 1, ks, kc, scratch);
      row = scratch;
    }
    tg->spmv(n, row, p->nnz, p->offs, p->w, y, clamp);
    if (res) tg->vbinary[WRT_BIN_ADD](n, y, res, y, &op->clamp);
    return WRT_OK;
  }
  if (p->mode == SP_ROWS) {
    rows_job j = {m, op, x, res, clamp, y};
    op_parallel_rows(m, op, (P + MR - 1) / MR, sparse_rows, &j);
    return WRT_OK;
  }
  const float* rows[256]; /* SP_PACKED without indirection: this tile's input rows */
  int u = p->mode == SP_UNSTRUCT;
  if (u) MR = tg->spmmu_mr;
  for (size_t p0 = 0; p0 < P; p0 += MR) {
    size_t mr = P - p0 < MR ? P - p0 : MR;
    const float* const* ind = p->ind ? p->ind + p0 * ks : 0;
    float* out = y + p0 * n;
    switch (p->mode) {
      case SP_IM2COL:
        im2col(ind, mr, ks, kc, scratch);
        tg->spmm(mr, n, scratch, K * sizeof(float), p->nnz, p->offs, p->w, out, n * sizeof(float), clamp);
        break;
      default: /* SP_PACKED, SP_UNSTRUCT */
        if (!ind) {
          for (size_t i = 0; i < mr; i++) rows[i] = x + (p0 + i) * K;
          ind = rows;
        }
        (u ? tg->sppacku : tg->sppack)(mr, kc, ks, ind, scratch);
        if (u)
          tg->spmmu(mr, n, scratch, p->nnz, p->offs, p->w, out, n * sizeof(float), clamp);
        else
          tg->spmm(mr, n, scratch, G * sizeof(float), p->nnz, p->offs, p->w, out, n * sizeof(float), clamp);
        break;
    }
    if (res) tg->vbinary[WRT_BIN_ADD](mr * n, out, res + p0 * n, out, &op->clamp);
  }
  return WRT_OK;
}
