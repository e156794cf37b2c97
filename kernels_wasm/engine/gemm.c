/* GEMM driver over the target's micro-kernel, weight packing, and the dense ops (FULLY_CONNECTED, MATMUL). */
#include "engine.h"

uint64_t gemm_packed_floats(const wrt_target* tg, uint64_t n, uint64_t kc_total) {
  uint64_t nr = tg->gemm_nr, panels = (n + nr - 1) / nr;
  return panels * nr * (1 + kc_total);
}

/* The panel width for nc columns: NR, or NR/2 for a narrow last panel when the target has that tile. Panel p
 * still starts at p * NR * (1 + k), so only the last panel's size changes. */
size_t gemm_panel_width(const wrt_target* tg, size_t nc) {
  return tg->gemm_half && tg->igemm_half && nc <= tg->gemm_nr_half ? tg->gemm_nr_half : tg->gemm_nr;
}

/* Panels of NR columns: NR bias floats, then k rows of NR weights; w(kk, j) = w[kk*w_k_stride + j*w_n_stride].
 * Built for size: at load, or once per run of a MATMUL whose weights are computed (O(N*K) against its O(M*N*K)). */
WRT_FOR_SIZE void pack_gemm(const wrt_target* tg, size_t n, size_t k, const float* w, size_t w_k_stride,
                            size_t w_n_stride, const float* bias, float* out) {
  for (size_t p = 0; p < n; p += tg->gemm_nr) {
    size_t nc = n - p < tg->gemm_nr ? n - p : tg->gemm_nr, nr = gemm_panel_width(tg, nc);
    for (size_t j = 0; j < nr; j++) *out++ = j < nc && bias ? bias[p + j] : 0.0f;
    for (size_t kk = 0; kk < k; kk++) {
      const float* row = w + kk * w_k_stride + p * w_n_stride;
      for (size_t j = 0; j < nc; j++) out[j] = row[j * w_n_stride];
      for (size_t j = nc; j < nr; j++) out[j] = 0.0f;
      out += nr;
    }
  }
}

/* Rows of A per block: the block's A stays in L2 while every panel of weights streams past it once (a panel is
 * reused from L1 by all the block's row tiles). Blocks are balanced, so a remainder of a few rows never costs a
 * whole extra pass over the weights (7x7x1152 -> 192: 49 rows in one block, not 28 + 21). */
#define GEMM_A_BLOCK_BYTES (384 * 1024)

size_t gemm_row_block(const wrt_target* tg, size_t m, size_t k) {
  size_t mr = tg->gemm_mr, cap = GEMM_A_BLOCK_BYTES / (k * sizeof(float) + 1);
  cap = cap < mr ? mr : cap;
  size_t blocks = (m + cap - 1) / cap, block = (m + blocks - 1) / (blocks ? blocks : 1);
  return (block + mr - 1) / mr * mr;
}

/* One GEMM as tasks: a block of rows times a chunk of panels. Where the target has gemm_row and the rows end in a
 * lone row (49 = 8 x 6 + 1 pixels of a 7x7 map), that row is computed by gemm_row, gemm_row_panels panels at a
 * time: alone, a row runs on few accumulator chains and waits on the multiply-add latency. A task does it after each
 * group of its panels, while they are still in cache (as tasks of their own, it read every weight again): the tasks
 * of one row block per chunk, a different block from chunk to chunk so threads share it. A GEMM of one row (a
 * fully-connected layer) is tasks of such groups. */
typedef struct {
  const wrt_target* tg;
  size_t m, n, k, a_stride, c_stride, block, blocks, chunks, per_chunk; /* m: the rows in tiles */
  size_t lone;                                                         /* 1: row m is a lone row */
  const float *a, *packed, *residual;
  float* c;
  const wrt_clamp* clamp;
} gemm_job;

/* the residual is added (then clamped) to a task's rows and columns while they are still in cache */
static void add_residual(const gemm_job* j, size_t r0, size_t r1, size_t p0, size_t p1) {
  size_t rs = j->c_stride / sizeof(float);
  float* c = j->c;
  if (rs == j->n && p0 == 0 && p1 == j->n) { /* contiguous rows: one call */
    j->tg->vbinary[WRT_BIN_ADD]((r1 - r0) * j->n, c + r0 * rs, j->residual + r0 * rs, c + r0 * rs, j->clamp);
  } else {
    for (size_t i = r0; i < r1; i++)
      j->tg->vbinary[WRT_BIN_ADD](p1 - p0, c + i * rs + p0, j->residual + i * rs + p0, c + i * rs + p0, j->clamp);
  }
}

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

/* rows [r0, r1) in tiles of the panel's tile height, columns [p0, p1) (whole panels but the last) */
static void gemm_tiles(const gemm_job* j, size_t r0, size_t r1, size_t p0, size_t p1, const wrt_clamp* kc) {
  const wrt_target* tg = j->tg;
  size_t nr = tg->gemm_nr, panel_floats = nr * (1 + j->k);
  for (size_t p = p0; p < p1; p += nr) {
    size_t nc = j->n - p < nr ? j->n - p : nr, full = gemm_panel_width(tg, nc) == nr;
    size_t mr = full ? tg->gemm_mr : tg->gemm_mr_half;
    const float* panel = j->packed + (p / nr) * panel_floats;
    wrt_gemm_fn fn = full ? tg->gemm : tg->gemm_half;
    size_t step = tg->gemm_multi && full ? r1 - r0 : mr; /* rows per call */
    for (size_t i = r0; i < r1; i += step) {
      size_t rows = r1 - i < step ? r1 - i : step;
      fn(rows, nc, j->k, (const float*)((const char*)j->a + i * j->a_stride), j->a_stride, panel,
         (float*)((char*)j->c + i * j->c_stride) + p, j->c_stride, kc);
    }
  }
}

/* the lone row m, columns [p0, p1): gemm_row for a whole group of panels, else the tiles' one-row path */
static void gemm_lone_row(const gemm_job* j, size_t p0, size_t p1, const wrt_clamp* kc) {
  const wrt_target* tg = j->tg;
  size_t nr = tg->gemm_nr, panel_floats = nr * (1 + j->k);
  if (p1 - p0 != tg->gemm_row_panels * nr) {
    gemm_tiles(j, j->m, j->m + 1, p0, p1, kc);
    return;
  }
  tg->gemm_row(j->k, (const float*)((const char*)j->a + j->m * j->a_stride), j->packed + (p0 / nr) * panel_floats,
               panel_floats, (float*)((char*)j->c + j->m * j->c_stride) + p0, kc);
}

static void gemm_task(void* ctx, size_t t) {
  const gemm_job* j = ctx;
  size_t nr = j->tg->gemm_nr, group = j->tg->gemm_row_panels * nr;
  const wrt_clamp none = {-__builtin_inff(), __builtin_inff()}, *kc = j->residual ? &none : j->clamp;
  size_t r0 = 0, r1 = 0, p0 = t * group, p1 = min_size(j->n, p0 + group); /* with no tiled rows: a lone row's group */
  int lone = (int)j->lone;
  if (j->m) {
    size_t b = t / j->chunks, chunk = t % j->chunks;
    r0 = b * j->block, r1 = min_size(j->m, r0 + j->block);
    p0 = chunk * j->per_chunk * nr, p1 = min_size(j->n, p0 + j->per_chunk * nr);
    lone = lone && chunk % j->blocks == b;
  }
  if (lone) { /* each group of panels, then the lone row over it */
    for (size_t g = p0; g < p1; g += group) {
      gemm_tiles(j, r0, r1, g, min_size(p1, g + group), kc);
      gemm_lone_row(j, g, min_size(p1, g + group), kc);
    }
  } else {
    gemm_tiles(j, r0, r1, p0, p1, kc);
  }
  if (!j->residual) return;
  add_residual(j, r0, r1, p0, p1);
  if (lone) add_residual(j, j->m, j->m + 1, p0, p1);
}

/* Tasks per GEMM: enough that two to four threads end within a small fraction of the op of each other. */
#define GEMM_TASKS 32
/* Fewest row tiles in a block cut only to have more tasks: each block streams all the weights again. */
#define GEMM_MIN_BLOCK_TILES 4

/* rows per block for about `want` blocks of whole row tiles */
static size_t rows_for_blocks(size_t tiles, size_t want, size_t mr) { return (tiles + want - 1) / want * mr; }

/* The tiled tasks of j (j->m >= 1 rows): blocks of rows (at most the cache block, cut down to GEMM_MIN_BLOCK_TILES
 * row tiles to make about GEMM_TASKS of them), then chunks of panels when there are still few (7x7 maps, a
 * classifier's single row), then blocks of fewer row tiles. Neighbouring tasks are neighbouring rows, so a thread's
 * share of rows follows it from op to op (rt_threads.c). (Cutting columns before rows where the weights outweigh A
 * measured 1-5% slower on one thread.) */
static size_t tile_tasks(gemm_job* j, size_t panels) {
  size_t m = j->m, mr = j->tg->gemm_mr, block = gemm_row_block(j->tg, m, j->k);
  size_t blocks = (m + block - 1) / block, tiles = (m + mr - 1) / mr;
  if (blocks < GEMM_TASKS && tiles / GEMM_MIN_BLOCK_TILES > blocks) {
    size_t want = tiles / GEMM_MIN_BLOCK_TILES < GEMM_TASKS ? tiles / GEMM_MIN_BLOCK_TILES : GEMM_TASKS;
    block = rows_for_blocks(tiles, want, mr);
    blocks = (m + block - 1) / block;
  }
  size_t chunks = blocks >= GEMM_TASKS ? 1 : (GEMM_TASKS + blocks - 1) / blocks;
  if (chunks > panels) { /* still few tasks: blocks of fewer row tiles */
    chunks = panels;
    size_t want = (GEMM_TASKS + panels - 1) / panels;
    if (want > tiles) want = tiles;
    if (want > blocks) {
      block = rows_for_blocks(tiles, want, mr);
      blocks = (m + block - 1) / block;
    }
  }
  j->block = block;
  j->blocks = blocks;
  j->per_chunk = (panels + chunks - 1) / chunks;
  if (j->lone) /* whole groups for gemm_row */
    j->per_chunk = (j->per_chunk + j->tg->gemm_row_panels - 1) / j->tg->gemm_row_panels * j->tg->gemm_row_panels;
  j->chunks = (panels + j->per_chunk - 1) / j->per_chunk;
  return blocks * j->chunks;
}

/* c[M, N] = a[M, K] x packed (+ residual, rows of N floats at c's stride). With a residual, the kernels write the
 * plain sum and the residual is added (then clamped) per task. Tasks depend on the shape only. */
void run_gemm(const wrt_target* tg, size_t m, size_t n, size_t k, const float* a, size_t a_stride, const float* packed,
              float* c, size_t c_stride, const wrt_clamp* clamp, const float* residual, int threads) {
  size_t panels = (n + tg->gemm_nr - 1) / tg->gemm_nr, lone = tg->gemm_row && m % tg->gemm_mr == 1;
  gemm_job j = {tg, m - lone, n, k, a_stride, c_stride, 0, 0, 0, 0, lone, a, packed, residual, c, clamp};
  size_t tasks = j.m ? tile_tasks(&j, panels) : (panels + tg->gemm_row_panels - 1) / tg->gemm_row_panels;
  rt_parallel(threads, tasks, gemm_task, &j);
}

/* ---- FULLY_CONNECTED and MATMUL -------------------------------------------------------------------------------- */
enum { DENSE_PACKED = 1, DENSE_RUNTIME = 2 };

WRT_FOR_SIZE int plan_dense(wrt_model* m, wrt_op* op, wrt_cost* c) {
  const wrt_tensor *x = &m->t[op->in[0]], *w = &m->t[op->in[1]], *y = &m->t[op->out];
  wrt_dense_plan* p = &op->u.dense;
  int has_bias = op->n_in > 2 && op->in[2] >= 0;
  if (w->dims[w->rank - 1 - (op->type == OP_MATMUL && w->rank > 1)] == 0)
    return op_fail(op, WRT_ERR_UNSUPPORTED, "an empty reduction dimension is not supported");
  uint64_t batches = 1;
  int packed;
  if (op->type == OP_FULLY_CONNECTED) {
    p->n = w->dims[0];
    p->k = w->dims[1];
    p->m = (int64_t)(x->count / (uint64_t)p->k);
    packed = w->is_const && (!has_bias || m->t[op->in[2]].is_const);
    op->packed_in = packed ? 0x6 : 0;
  } else { /* MATMUL: numpy semantics; 1-D operands are promoted */
    int ra = x->rank, rb = w->rank;
    p->m = ra == 1 ? 1 : x->dims[ra - 2];
    p->k = x->dims[ra - 1];
    p->n = rb == 1 ? 1 : w->dims[rb - 1];
    /* batch dims of the output, and a's batch strides (in matrices) broadcast against them */
    p->rbatch = y->rank - (ra > 1) - (rb > 1);
    int64_t sa = 1;
    for (int i = p->rbatch - 1; i >= 0; i--) {
      int ia = i - (p->rbatch - (ra > 2 ? ra - 2 : 0));
      int64_t da = ia >= 0 ? x->dims[ia] : 1;
      p->bdims[i] = y->dims[i];
      p->astride[i] = da == 1 ? 0 : sa; /* b's strides are recomputed at run */
      sa *= da;
      batches *= (uint64_t)y->dims[i];
    }
    packed = w->is_const && rb <= 2;
    op->packed_in = packed ? 0x2 : 0;
  }
  uint64_t N = (uint64_t)p->n, K = (uint64_t)p->k, M = (uint64_t)p->m;
  uint64_t floats = gemm_packed_floats(m->tg, N, K);
  op->path = packed ? DENSE_PACKED : DENSE_RUNTIME;
  if (packed) c->bytes += floats * sizeof(float);
  else c->scratch = floats * sizeof(float);
  c->work += sat_mul(batches, sat_mul(M * N, K) + (packed ? 0 : WORK_COPY * N * K));
  return WRT_OK;
}

WRT_FOR_SIZE int prepare_dense(wrt_model* m, wrt_op* op) {
  wrt_dense_plan* p = &op->u.dense;
  if (op->path != DENSE_PACKED || p->packed) return WRT_OK;
  const wrt_tensor* w = &m->t[op->in[1]];
  size_t N = (size_t)p->n, K = (size_t)p->k;
  uint64_t bytes = gemm_packed_floats(m->tg, N, K) * sizeof(float);
  p->packed = m_alloc(m, bytes);
  if (!p->packed) return m_alloc_fail(m, op, "packing the weights", bytes);
  m->weights_bytes += (size_t)bytes;
  if (op->type == OP_FULLY_CONNECTED) {
    int has_bias = op->n_in > 2 && op->in[2] >= 0;
    pack_gemm(m->tg, N, K, (const float*)w->file_data, 1, K, has_bias ? (const float*)m->t[op->in[2]].file_data : 0,
              p->packed);
  } else {
    pack_gemm(m->tg, N, K, (const float*)w->file_data, N, 1, 0, p->packed);
  }
  return WRT_OK;
}

const char* dense_kernel(const wrt_op* op) { return op->path == DENSE_PACKED ? "gemm" : "pack + gemm"; }

WRT_FOR_SIZE int run_dense(wrt_model* m, wrt_op* op) {
  const wrt_dense_plan* p = &op->u.dense;
  const wrt_tensor* w = &m->t[op->in[1]];
  size_t N = (size_t)p->n, K = (size_t)p->k, M = (size_t)p->m;
  const float* x = t_f32(m, op->in[0]);
  float* y = t_f32(m, op->out);
  if (op->type == OP_FULLY_CONNECTED) {
    const float* packed = p->packed;
    if (op->path == DENSE_RUNTIME) {
      int has_bias = op->n_in > 2 && op->in[2] >= 0;
      pack_gemm(m->tg, N, K, t_f32(m, op->in[1]), 1, K, has_bias ? t_f32(m, op->in[2]) : 0, m->scratch);
      packed = m->scratch;
    }
    if (M && N) run_gemm(m->tg, M, N, K, x, K * sizeof(float), packed, y, N * sizeof(float), &op->clamp, 0,
                         op_threads(m, op));
    return WRT_OK;
  }
  int rbatch = p->rbatch, rb = w->rank;
  size_t nbatch = 1;
  for (int i = 0; i < rbatch; i++) nbatch *= (size_t)p->bdims[i];
  if (!M || !N || !nbatch) return WRT_OK;
  /* b's batch strides against the output batch dims */
  size_t bstride[WRT_MAX_RANK] = {0}, s = 1;
  for (int i = rbatch - 1; i >= 0; i--) {
    int ib = i - (rbatch - (rb > 2 ? rb - 2 : 0));
    size_t db = ib >= 0 ? (size_t)w->dims[ib] : 1;
    bstride[i] = db == 1 ? 0 : s;
    s *= db;
  }
  const float* wb = t_f32(m, op->in[1]);
  size_t idx[WRT_MAX_RANK] = {0};
  for (size_t b = 0; b < nbatch; b++) {
    size_t ao = 0, bo = 0;
    for (int i = 0; i < rbatch; i++) {
      ao += idx[i] * (size_t)p->astride[i];
      bo += idx[i] * bstride[i];
    }
    const float* packed = p->packed;
    if (op->path == DENSE_RUNTIME) {
      pack_gemm(m->tg, N, K, wb + bo * K * N, N, 1, 0, m->scratch);
      packed = m->scratch;
    }
    run_gemm(m->tg, M, N, K, x + ao * M * K, K * sizeof(float), packed, y + b * M * N, N * sizeof(float), &op->clamp,
             0, op_threads(m, op));
    for (int i = rbatch - 1; i >= 0; i--) {
      if (++idx[i] < (size_t)p->bdims[i]) break;
      idx[i] = 0;
    }
  }
  return WRT_OK;
}
