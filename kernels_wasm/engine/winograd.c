/* Winograd F(m x m, 3 x 3) for dense 3x3 stride-1 CONV_2D (python_ref/winograd.py): 2.25x (m = 2) or 4x (m = 4)
 * fewer multiplies than the direct convolution. Weights are transformed (U = G g G^T, in double) and packed at load
 * as one GEMM panel set per transformed position. A run goes through blocks of output tiles, each in three phases:
 * the input tiles' transforms (B^T d B) into scratch, one GEMM per position ([tiles, Cin] x [Cin, Cout]), the
 * output transforms (A^T M A + bias, clamped) into the output. A block's transformed tiles and products are sized to
 * stay in cache; its tasks are fixed by the shapes, so the bytes do not depend on the thread count. */
#include "engine.h"

#include "../generated/wrt_winograd.h"

#define WINO_BLOCK_BYTES (1536 * 1024) /* a block's transformed inputs and products, about */
#define WINO_MIN_TILES 16              /* tiles per block at least (each block streams all the packed weights) */
#define WINO_TASKS 16                  /* transform tasks per block phase */

static size_t kind_of(size_t tile) { return tile == 2 ? 0 : 1; }

/* tiles per block: a multiple of the GEMM's MR */
static size_t block_tiles(const wrt_target* tg, size_t n2, size_t C, size_t CO, size_t tiles) {
  size_t per = n2 * (C + CO) * sizeof(float), nb = WINO_BLOCK_BYTES / (per ? per : 1), mr = tg->gemm_mr;
  if (nb < WINO_MIN_TILES) nb = WINO_MIN_TILES;
  if (nb > tiles) nb = tiles;
  return (nb + mr - 1) / mr * mr;
}

WRT_FOR_SIZE int plan_winograd(wrt_model* m, wrt_op* op, wrt_cost* c, int tile) {
  wrt_conv_plan* p = &op->u.conv;
  uint64_t n = (uint64_t)tile + 2, n2 = n * n, C = (uint64_t)p->c, CO = (uint64_t)p->co;
  uint64_t th = ((uint64_t)p->oh + tile - 1) / tile, tw = ((uint64_t)p->ow + tile - 1) / tile;
  uint64_t tiles = (uint64_t)p->n * th * tw;
  p->tile = tile;
  p->chunk = (int64_t)block_tiles(m->tg, (size_t)n2, (size_t)C, (size_t)CO, (size_t)tiles);
  if (CO + 16 > m->pad_floats) m->pad_floats = (size_t)CO + 16;
  c->bytes += gemm_packed_floats(m->tg, CO, C) * n2 * sizeof(float) + (CO + C * CO) * sizeof(float);
  c->scratch = (uint64_t)p->chunk * n2 * (C + CO) * sizeof(float);
  c->work += sat_mul(tiles * n2, C * CO) + WORK_VEC * sat_mul(tiles * n2, 2 * (C + CO));
  return WRT_OK;
}

WRT_FOR_SIZE int prepare_winograd(wrt_model* m, wrt_op* op) {
  wrt_conv_plan* p = &op->u.conv;
  if (p->packed) return WRT_OK; /* a resize: nothing follows the shapes */
  size_t C = (size_t)p->c, CO = (size_t)p->co, n = (size_t)p->tile + 2;
  const double* G = p->tile == 2 ? &wrt_wino2_g[0][0] : &wrt_wino4_g[0][0];
  const float* W = (const float*)m->t[op->in[1]].file_data;
  const float* bias = op->n_in > 2 && op->in[2] >= 0 ? (const float*)m->t[op->in[2]].file_data : 0;
  size_t per = (size_t)gemm_packed_floats(m->tg, CO, C);
  uint64_t bytes = (uint64_t)per * n * n * sizeof(float) + CO * sizeof(float);
  float* pk = m_alloc(m, bytes);
  float* tmp = m_scratch(m, (uint64_t)C * CO * sizeof(float)); /* one position's U [C][CO] */
  if (!pk || !tmp) return m_alloc_fail(m, op, "transforming the weights", bytes);
  m->weights_bytes += (size_t)bytes;
  for (size_t a = 0; a < n; a++)
    for (size_t b = 0; b < n; b++) {
      for (size_t o = 0; o < CO; o++)
        for (size_t i = 0; i < C; i++) {
          const float* w = W + o * 9 * C + i; /* OHWI: w[(kh*3 + kw)*C] */
          double s = 0.0;
          for (size_t k = 0; k < 3; k++)
            for (size_t l = 0; l < 3; l++) s += G[a * 3 + k] * (double)w[(k * 3 + l) * C] * G[b * 3 + l];
          tmp[i * CO + o] = (float)s;
        }
      pack_gemm(m->tg, CO, C, tmp, CO, 1, 0, pk + (a * n + b) * per);
    }
  m_scratch_free(m, tmp, (uint64_t)C * CO * sizeof(float));
  float* bo = pk + per * n * n; /* the bias, added by the output transform (zeros without one) */
  for (size_t o = 0; o < CO; o++) bo[o] = bias ? bias[o] : 0.0f;
  p->packed = pk;
  p->gpack = (int64_t)per;
  return WRT_OK;
}

typedef struct {
  const wrt_model* m;
  const wrt_op* op;
  const wrt_clamp* kc;
  size_t tile, n, th, tw, t0, nb; /* this block: tiles [t0, t0 + nb) */
  float *v, *prod;               /* the block's transformed tiles [n*n][nb][C] and products [n*n][nb][CO] */
} wino_job;

static void wino_in(void* ctx, size_t task) {
  const wino_job* j = ctx;
  const wrt_conv_plan* p = &j->op->u.conv;
  const wrt_attrs* a = &j->op->a;
  size_t C = (size_t)p->c, H = (size_t)p->h, W = (size_t)p->w, n = j->n, per = (j->nb + WINO_TASKS - 1) / WINO_TASKS;
  const float* x = t_f32(j->m, j->op->in[0]);
  wrt_wino_in_fn fn = j->m->tg->wino_in[kind_of(j->tile)];
  const float* ptr[36];
  for (size_t t = task * per; t < j->nb && t < (task + 1) * per; t++) {
    size_t g = j->t0 + t, b = g / (j->th * j->tw), ty = g / j->tw % j->th, tx = g % j->tw;
    for (size_t r = 0; r < n; r++) {
      int64_t ih = (int64_t)(ty * j->tile + r) - a->pads[0];
      for (size_t s = 0; s < n; s++) {
        int64_t iw = (int64_t)(tx * j->tile + s) - a->pads[1];
        ptr[r * n + s] = ih >= 0 && ih < (int64_t)H && iw >= 0 && iw < (int64_t)W
                             ? x + ((b * H + (size_t)ih) * W + (size_t)iw) * C
                             : j->m->zeros;
      }
    }
    fn(C, ptr, j->v + t * C, j->nb * C * sizeof(float));
  }
}

static void wino_gemm(void* ctx, size_t pos) {
  const wino_job* j = ctx;
  const wrt_conv_plan* p = &j->op->u.conv;
  size_t C = (size_t)p->c, CO = (size_t)p->co;
  const wrt_clamp none = {-__builtin_inff(), __builtin_inff()};
  run_gemm(j->m->tg, j->nb, CO, C, j->v + pos * j->nb * C, C * sizeof(float), p->packed + pos * (size_t)p->gpack,
           j->prod + pos * j->nb * CO, CO * sizeof(float), &none, 0, 1);
}

static void wino_out(void* ctx, size_t task) {
  const wino_job* j = ctx;
  const wrt_conv_plan* p = &j->op->u.conv;
  size_t CO = (size_t)p->co, OH = (size_t)p->oh, OW = (size_t)p->ow, m = j->tile;
  size_t per = (j->nb + WINO_TASKS - 1) / WINO_TASKS;
  float* y = t_f32(j->m, j->op->out);
  const float* bias = p->packed + (size_t)p->gpack * j->n * j->n;
  wrt_wino_out_fn fn = j->m->tg->wino_out[kind_of(m)];
  for (size_t t = task * per; t < j->nb && t < (task + 1) * per; t++) {
    size_t g = j->t0 + t, b = g / (j->th * j->tw), ty = g / j->tw % j->th, tx = g % j->tw;
    size_t rows = OH - ty * m < m ? OH - ty * m : m, cols = OW - tx * m < m ? OW - tx * m : m;
    fn(CO, j->prod + t * CO, j->nb * CO * sizeof(float), bias, y + ((b * OH + ty * m) * OW + tx * m) * CO,
       OW * CO * sizeof(float), CO * sizeof(float), rows, cols, j->kc);
  }
}

int run_winograd(wrt_model* m, wrt_op* op, const float* res) {
  const wrt_conv_plan* p = &op->u.conv;
  size_t tile = (size_t)p->tile, n = tile + 2, C = (size_t)p->c, CO = (size_t)p->co, NB = (size_t)p->chunk;
  size_t th = ((size_t)p->oh + tile - 1) / tile, tw = ((size_t)p->ow + tile - 1) / tile;
  size_t tiles = (size_t)p->n * th * tw;
  const wrt_clamp none = {-__builtin_inff(), __builtin_inff()};
  wino_job j = {m, op, res ? &none : &op->clamp, tile, n, th, tw, 0, 0, m->scratch, 0};
  j.prod = j.v + n * n * NB * C;
  for (size_t t0 = 0; t0 < tiles; t0 += NB) {
    j.t0 = t0;
    j.nb = tiles - t0 < NB ? tiles - t0 : NB;
    op_parallel(m, op, WINO_TASKS, wino_in, &j);
    op_parallel(m, op, n * n, wino_gemm, &j);
    op_parallel(m, op, WINO_TASKS, wino_out, &j);
  }
  if (res) m->tg->vbinary[WRT_BIN_ADD]((size_t)p->pix * CO, t_f32(m, op->out), res, t_f32(m, op->out), &op->clamp);
  return WRT_OK;
}
