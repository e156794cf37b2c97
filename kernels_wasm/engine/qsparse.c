/* int8 CONV_2D (groups 1, 1x1 and KxK) and FULLY_CONNECTED whose int8 weights are block-sparse (python_ref/sparse.py:
 * 1x4 blocks of 4 output channels x 1 column of [Cout, KH*KW*Cin]): the dense int8 op on the expanded weights, bit
 * for bit (the same int32 sums, the same requantization), on the target's qspmm (kernels_wasm/gen/kernels/qsparse.py).
 * qsparse_chosen alone decides whether a layer runs so: from the target's measured break-even (qspmm_min_sparsity +
 * qspmm_k_penalty / K, declared in the generator's table), or as wrt_set_sparse_policy forces it. Below it, the
 * dense int8 paths (qconv.c) run on the weights expanded for their prepare (model.c).
 *
 * Per tile of qspmm_mr output pixels the input is packed [K][MR] (int16, or bytes x + 128 for the VNNI quads) into
 * the scratch by qsppack: rows read in place (FULLY_CONNECTED, 1x1 stride-1 unpadded convolution) or taps through
 * the indirection buffer (padding reads the zero point's row, which the folded bias cancels, as in the dense igemm).
 * The tiles are cut into at most QS_TASKS tasks fixed by the shape, each with its own part of the scratch; a pixel's
 * bytes never depend on its tile, so they are the same for any thread count. */
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
  if (!fast || !w->sparse || w->dtype != WRT_I8 || x->dtype != WRT_I8 || !tg->qspmm || !tg->qsppack || !tg->qspmv)
    return 0;
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

#define QS_TASKS 8 /* at most, each packing its own tiles */

static uint32_t row_start(const wrt_tensor* w, uint64_t r) { return fb_rd32(w->sp_starts + 4 * r); }

/* bytes of one packed activation: int16 for pairs, x + 128 as a byte for quads */
static uint64_t x_bytes(const wrt_target* tg) { return tg->qspmm_kr == 4 ? 1 : 2; }

/* groups of kr stored blocks per block row, in all */
static uint64_t groups(const wrt_tensor* w, uint64_t kr) {
  uint64_t n = (uint64_t)w->dims[0], total = 0;
  for (uint64_t r = 0; r < (n + 3) / 4; r++) total += (row_start(w, r + 1) - row_start(w, r) + kr - 1) / kr;
  return total;
}

static uint64_t tasks(uint64_t P, uint64_t MR) {
  uint64_t tiles = (P + MR - 1) / MR;
  return tiles < QS_TASKS ? (tiles ? tiles : 1) : QS_TASKS;
}

void qsparse_plan(wrt_model* m, wrt_op* op, wrt_cost* c) {
  const wrt_tensor* w = &m->t[op->in[1]];
  const wrt_target* tg = m->tg;
  uint64_t K, P, n = (uint64_t)w->dims[0], br = (n + 3) / 4, kr = tg->qspmm_kr, ng = groups(w, kr);
  layer_dims(m, op, &K, &P);
  c->bytes += br * 4 + ng * 4 * kr + (br + ng) * 16 + 3;
  if (!pointwise(op, w)) c->bytes += ptr_bytes(P * (uint64_t)w->dims[1] * w->dims[2]) + 1; /* indirection */
  c->scratch = tasks(P, tg->qspmm_mr) * K * tg->qspmm_mr * x_bytes(tg);
  c->work += sat_mul(P, ng * 4 * kr * 4) / 2 + WORK_COPY * sat_mul(P, K);
}

static int32_t stored(const wrt_tensor* w, uint64_t b, int j) { return (int32_t)(int8_t)w->file_data[4 * b + (uint64_t)j]; }

int qsparse_prepare(wrt_model* m, wrt_op* op, const int32_t* bias) {
  wrt_qplan* p = &op->u.q;
  const wrt_tensor* w = &m->t[op->in[1]];
  const wrt_target* tg = m->tg;
  uint64_t n = (uint64_t)w->dims[0], br = (n + 3) / 4, kr = tg->qspmm_kr, ng = groups(w, kr), MR = tg->qspmm_mr;
  uint64_t bits = 32 / kr, col = MR * x_bytes(tg);
  p->sp_nnz = m_alloc(m, br * 4 + 1);
  p->sp_offs = m_alloc(m, ng * 4 * kr + 1);
  int32_t* wp = m_alloc(m, (br + ng) * 16 + 1);
  if (!p->sp_nnz || !p->sp_offs || !wp)
    return m_alloc_fail(m, op, "packing the sparse weights", br * 4 + ng * 4 * kr + (br + ng) * 16 + 3);
  m->weights_bytes += (size_t)(br * 4 + ng * 4 * kr + (br + ng) * 16);
  p->packed = (uint8_t*)wp;
  int32_t* off = p->sp_offs;
  uint32_t xz = (uint32_t)p->za + tg->qspmm_xoff;
  for (uint64_t r = 0; r < br; r++) {
    uint32_t b0 = row_start(w, r), b1 = row_start(w, r + 1);
    for (int j = 0; j < 4; j++) { /* bias - (zx + XOFF) * sum of the channel's weights (wrapping, as the sums do) */
      uint64_t o = 4 * r + (uint64_t)j;
      uint32_t sum = 0;
      for (uint32_t b = b0; b < b1; b++) sum += (uint32_t)stored(w, b, j);
      int32_t bo = 0;
      if (bias && o < n) __builtin_memcpy(&bo, bias + o, 4);
      wp[j] = o < n ? (int32_t)((uint32_t)bo - xz * sum) : 0;
    }
    wp += 4;
    for (uint32_t b = b0; b < b1; b += (uint32_t)kr) { /* a short last group: zero weights in its first column */
      for (uint64_t e = 0; e < kr; e++)
        off[e] = (int32_t)(fb_rd32(w->sp_cols + 4 * (size_t)(b + e < b1 ? b + e : b)) * col);
      off += kr;
      for (int j = 0; j < 4; j++) {
        uint32_t v = 0;
        for (uint64_t e = 0; e < kr && b + e < b1; e++)
          v |= ((uint32_t)stored(w, b + e, j) & ((1u << bits) - 1)) << (e * bits);
        wp[j] = (int32_t)v;
      }
      wp += 4;
    }
    p->sp_nnz[r] = (int32_t)((b1 - b0 + kr - 1) / kr);
  }
  if (pointwise(op, w)) return WRT_OK;
  return q_indirection(m, op, MR);
}

typedef struct {
  const wrt_model* m;
  const wrt_op* op;
  size_t P, N, K, ks, kc, MR, tiles, per;
  const int8_t* x;
  int8_t* y;
} qs_job;

static void qs_task(void* ctx, size_t task) {
  const qs_job* j = ctx;
  const wrt_target* tg = j->m->tg;
  const wrt_qplan* p = &j->op->u.q;
  void* tile = (char*)j->m->scratch + task * j->K * j->MR * (size_t)x_bytes(tg);
  const int8_t* rows[64]; /* MR <= 64 */
  size_t t1 = (task + 1) * j->per < j->tiles ? (task + 1) * j->per : j->tiles;
  for (size_t t = task * j->per; t < t1; t++) {
    size_t p0 = t * j->MR, mr = j->P - p0 < j->MR ? j->P - p0 : j->MR;
    const int8_t* const* ind = p->ind ? p->ind + p0 * j->ks : rows;
    if (!p->ind)
      for (size_t i = 0; i < mr; i++) rows[i] = j->x + (p0 + i) * j->K;
    tg->qsppack(mr, j->kc, j->ks, ind, tile);
    tg->qspmm(mr, j->N, tile, p->sp_nnz, p->sp_offs, (const int32_t*)(const void*)p->packed, p->mult,
              j->y + p0 * j->N, j->N, &p->rq);
  }
}

void qsparse_run(wrt_model* m, wrt_op* op) {
  const wrt_tensor* w = &m->t[op->in[1]];
  uint64_t K64, P64;
  layer_dims(m, op, &K64, &P64);
  qs_job j = {m, op, (size_t)P64, (size_t)w->dims[0], (size_t)K64, 1, 0, m->tg->qspmm_mr, 0, 0,
              (const int8_t*)m->t[op->in[0]].data, (int8_t*)m->t[op->out].data};
  if (j.P == 1 && !op->u.q.ind) { /* one pixel read in place: no tile */
    const wrt_qplan* p = &op->u.q;
    m->tg->qspmv(j.N, j.x, p->sp_nnz, p->sp_offs, (const int32_t*)(const void*)p->packed, p->mult, j.y, &p->rq);
    return;
  }
  j.ks = op->type == OP_CONV_2D ? (size_t)(w->dims[1] * w->dims[2]) : 1;
  j.kc = j.K / j.ks;
  j.tiles = (j.P + j.MR - 1) / j.MR;
  size_t n = (size_t)tasks(P64, j.MR);
  j.per = (j.tiles + n - 1) / n;
  op_parallel(m, op, (j.tiles + j.per - 1) / j.per, qs_task, &j);
}
