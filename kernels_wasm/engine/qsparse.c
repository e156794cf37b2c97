/* int8 CONV_2D (groups 1, 1x1 and KxK) and FULLY_CONNECTED whose int8 weights are block-sparse (python_ref/sparse.py:
 * 1x4 blocks of 4 output channels x 1 column of [Cout, KH*KW*Cin]): the dense int8 op on the expanded weights, bit
 * for bit (the same int32 sums, the same requantization), on the target's qspmm (kernels_wasm/gen/kernels/qsparse.py).
 * qsparse_chosen alone decides whether a layer runs so: from the target's measured break-even (qspmm_min_sparsity +
 * qspmm_k_penalty / K, declared in the generator's table), or as wrt_set_sparse_policy forces it. Below it, the
 * dense int8 paths (qconv.c) run on the weights expanded for their prepare (model.c).
 *
 * Per tile of qspmm_mr output pixels the input is packed [K][MR] int16 into the scratch by qsppack: rows read in
 * place (FULLY_CONNECTED, 1x1 stride-1 unpadded convolution) or taps through the indirection buffer (padding reads
 * the zero point's row, which the folded bias cancels, as in the dense igemm). The shared scratch keeps it on one
 * thread: the bytes are the same for any thread count. */
#include "engine.h"

/* the layer's K columns (ks taps x c channels) and output pixels */
static void layer_dims(const wrt_model* m, const wrt_op* op, uint64_t* K, uint64_t* P) {
  const wrt_tensor *w = &m->t[op->in[1]], *y = &m->t[op->out];
  uint64_t n = (uint64_t)w->dims[0];
  *K = n ? w->count / n : 0;
  *P = n ? y->count / n : 0;
}

int qsparse_chosen(const wrt_model* m, wrt_op* op, int fast) {
  const wrt_tensor *w = &m->t[op->in[1]], *x = &m->t[op->in[0]];
  const wrt_target* tg = m->tg;
  int policy = sparse_policy();
  if (!fast || !w->sparse || w->dtype != WRT_I8 || x->dtype != WRT_I8 || !tg->qspmm || !tg->qsppack) return 0;
  if (op->type != OP_CONV_2D && op->type != OP_FULLY_CONNECTED) return 0;
  if (op->type == OP_CONV_2D && op->a.groups != 1) return 0;
  if (op->n_in > 2 && op->in[2] >= 0 && !m->t[op->in[2]].is_const) return 0;
  uint64_t K, P, n = (uint64_t)w->dims[0], br = (n + 3) / 4;
  layer_dims(m, op, &K, &P);
  if (!K || K * tg->qspmm_mr * 2 >= ((uint64_t)1 << 31)) return 0; /* column offsets are int32 bytes */
  choice_offer(op, WRT_CH_DENSE | WRT_CH_SPARSE);
  unsigned f = choice_forced(op); /* a per-op choice (choice.c) before the policy */
  if (f) return choice_note(op, f) == WRT_CH_SPARSE;
  if (policy == WRT_SPARSE_NEVER) return choice_note(op, WRT_CH_DENSE) == WRT_CH_SPARSE;
  double sparsity = 1.0 - (double)w->sp_blocks / ((double)br * (double)K);
  int sparse = policy == WRT_SPARSE_ALWAYS || sparsity >= tg->qspmm_min_sparsity + tg->qspmm_k_penalty / (double)K;
  return choice_note(op, sparse ? WRT_CH_SPARSE : WRT_CH_DENSE) == WRT_CH_SPARSE;
}

static int pointwise(const wrt_op* op, const wrt_tensor* w) {
  const wrt_attrs* a = &op->a;
  return op->type == OP_FULLY_CONNECTED ||
         (w->dims[1] == 1 && w->dims[2] == 1 && a->strides[0] == 1 && a->strides[1] == 1 && !a->pads[0] &&
          !a->pads[1] && !a->pads[2] && !a->pads[3]);
}

static uint32_t row_start(const wrt_tensor* w, uint64_t r) { return fb_rd32(w->sp_starts + 4 * r); }

/* pairs of stored blocks per block row, in all */
static uint64_t pairs(const wrt_tensor* w) {
  uint64_t n = (uint64_t)w->dims[0], total = 0;
  for (uint64_t r = 0; r < (n + 3) / 4; r++) total += (row_start(w, r + 1) - row_start(w, r) + 1) / 2;
  return total;
}

void qsparse_plan(wrt_model* m, wrt_op* op, wrt_cost* c) {
  const wrt_tensor* w = &m->t[op->in[1]];
  uint64_t K, P, n = (uint64_t)w->dims[0], br = (n + 3) / 4, np = pairs(w);
  layer_dims(m, op, &K, &P);
  c->bytes += br * 4 + np * 8 + (br + np) * 16 + 3;
  if (!pointwise(op, w)) c->bytes += ptr_bytes(P * (uint64_t)w->dims[1] * w->dims[2]) + 1; /* indirection */
  c->scratch = K * m->tg->qspmm_mr * 2;
  c->work += sat_mul(P, np * 8 * 4) / 2 + WORK_COPY * sat_mul(P, K);
}

static int32_t stored(const wrt_tensor* w, uint64_t b, int j) { return (int32_t)(int8_t)w->file_data[4 * b + (uint64_t)j]; }

int qsparse_prepare(wrt_model* m, wrt_op* op, const int32_t* bias) {
  wrt_qplan* p = &op->u.q;
  const wrt_tensor* w = &m->t[op->in[1]];
  uint64_t n = (uint64_t)w->dims[0], br = (n + 3) / 4, np = pairs(w), MR = m->tg->qspmm_mr;
  p->sp_nnz = m_alloc(m, br * 4 + 1);
  p->sp_offs = m_alloc(m, np * 8 + 1);
  int32_t* wp = m_alloc(m, (br + np) * 16 + 1);
  if (!p->sp_nnz || !p->sp_offs || !wp)
    return m_alloc_fail(m, op, "packing the sparse weights", br * 4 + np * 8 + (br + np) * 16 + 3);
  m->weights_bytes += (size_t)(br * 4 + np * 8 + (br + np) * 16);
  p->packed = (uint8_t*)wp;
  int32_t* off = p->sp_offs;
  uint32_t xz = (uint32_t)p->za;
  for (uint64_t r = 0; r < br; r++) {
    uint32_t b0 = row_start(w, r), b1 = row_start(w, r + 1);
    for (int j = 0; j < 4; j++) { /* bias - zx * sum of the channel's weights (wrapping, as the int32 sums do) */
      uint64_t o = 4 * r + (uint64_t)j;
      uint32_t sum = 0;
      for (uint32_t b = b0; b < b1; b++) sum += (uint32_t)stored(w, b, j);
      int32_t bo = 0;
      if (bias && o < n) __builtin_memcpy(&bo, bias + o, 4);
      wp[j] = o < n ? (int32_t)((uint32_t)bo - xz * sum) : 0;
    }
    wp += 4;
    for (uint32_t b = b0; b < b1; b += 2) { /* an odd last block pairs with zeros in its own column */
      uint32_t b2 = b + 1 < b1 ? b + 1 : b;
      off[0] = (int32_t)(fb_rd32(w->sp_cols + 4 * (size_t)b) * MR * 2);
      off[1] = (int32_t)(fb_rd32(w->sp_cols + 4 * (size_t)b2) * MR * 2);
      off += 2;
      for (int j = 0; j < 4; j++) {
        uint32_t lo = (uint16_t)(int16_t)stored(w, b, j), hi = b2 != b ? (uint16_t)(int16_t)stored(w, b2, j) : 0;
        wp[j] = (int32_t)(lo | hi << 16);
      }
      wp += 4;
    }
    p->sp_nnz[r] = (int32_t)((b1 - b0 + 1) / 2);
  }
  if (pointwise(op, w)) return WRT_OK;
  return q_indirection(m, op, MR);
}

void qsparse_run(wrt_model* m, wrt_op* op) {
  const wrt_qplan* p = &op->u.q;
  const wrt_target* tg = m->tg;
  const wrt_tensor* w = &m->t[op->in[1]];
  uint64_t K64, P64;
  layer_dims(m, op, &K64, &P64);
  size_t K = (size_t)K64, P = (size_t)P64, N = (size_t)w->dims[0], MR = tg->qspmm_mr;
  size_t ks = op->type == OP_CONV_2D ? (size_t)(w->dims[1] * w->dims[2]) : 1, kc = K / ks;
  const int8_t* x = (const int8_t*)m->t[op->in[0]].data;
  int8_t* y = (int8_t*)m->t[op->out].data;
  int16_t* tile = m->scratch;
  const int8_t* rows[64];
  for (size_t p0 = 0; p0 < P; p0 += MR) {
    size_t mr = P - p0 < MR ? P - p0 : MR;
    const int8_t* const* ind = p->ind ? p->ind + p0 * ks : rows;
    if (!p->ind)
      for (size_t i = 0; i < mr; i++) rows[i] = x + (p0 + i) * K;
    tg->qsppack(mr, kc, ks, ind, tile);
    tg->qspmm(mr, N, tile, p->sp_nnz, p->sp_offs, (const int32_t*)(const void*)p->packed, p->mult, y + p0 * N, N,
              &p->rq);
  }
}
