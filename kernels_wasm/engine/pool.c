/* MAX_POOL_2D and AVERAGE_POOL_2D through the pool kernels, one output pixel per call, with the divisor rules of
 * python_ref: valid taps (or taps inside input + explicit pads with count_include_pad); the ceil_mode overhang
 * beyond the explicit pads never counts, and never wins a max. */
#include "engine.h"

WRT_FOR_SIZE int plan_pool(wrt_model* m, wrt_op* op, wrt_cost* c) {
  if (!(op->type == OP_MAX_POOL_2D ? m->tg->maxpool : m->tg->avgpool))
    return op_fail(op, WRT_ERR_UNSUPPORTED, "no pool kernel");
  const wrt_tensor *x = &m->t[op->in[0]], *y = &m->t[op->out];
  uint64_t P = y->count / (uint64_t)y->dims[3], ks = (uint64_t)op->a.kernel[0] * (uint64_t)op->a.kernel[1];
  if ((uint64_t)x->dims[3] + 16 > m->pad_floats) m->pad_floats = (size_t)x->dims[3] + 16;
  c->shape_bytes += ptr_bytes(P * ks) + 1;
  c->work += WORK_DW * sat_mul(y->count, ks) + WORK_SCALAR * P * ((uint64_t)op->a.kernel[0] + (uint64_t)op->a.kernel[1]);
  return WRT_OK;
}

int prepare_pool(wrt_model* m, wrt_op* op) {
  const float* pad_src = op->type == OP_MAX_POOL_2D ? m->neg_inf : m->zeros;
  op->u.pool.ind = build_pixel_indirection(m, op, pad_src, op->a.kernel[0], op->a.kernel[1]);
  return op->u.pool.ind ? WRT_OK : WRT_ERR_NOMEM;
}

/* taps of one window along one axis that land in [lo, hi) */
static int64_t taps_inside(int64_t start, int64_t k, int64_t d, int64_t lo, int64_t hi) {
  int64_t n = 0;
  for (int64_t i = 0; i < k; i++) n += start + i * d >= lo && start + i * d < hi;
  return n;
}

/* the average pool's divisor at output position (oh, ow) of an H x W input: taps inside the input (and on the
 * explicit pads with count_include_pad), never the ceil_mode overhang */
int64_t pool_divisor(const wrt_attrs* a, int64_t H, int64_t W, int64_t oh, int64_t ow) {
  int64_t lo_h = a->count_include_pad ? -a->pads[0] : 0, hi_h = a->count_include_pad ? H + a->pads[2] : H;
  int64_t lo_w = a->count_include_pad ? -a->pads[1] : 0, hi_w = a->count_include_pad ? W + a->pads[3] : W;
  return taps_inside(oh * a->strides[0] - a->pads[0], a->kernel[0], a->dilations[0], lo_h, hi_h) *
         taps_inside(ow * a->strides[1] - a->pads[1], a->kernel[1], a->dilations[1], lo_w, hi_w);
}

typedef struct {
  const wrt_model* m;
  const wrt_op* op;
} pool_job;

/* output rows [r0, r1) of n * OH + oh */
static void pool_rows(void* ctx, size_t r0, size_t r1) {
  const wrt_model* m = ((const pool_job*)ctx)->m;
  const wrt_op* op = ((const pool_job*)ctx)->op;
  const wrt_attrs* a = &op->a;
  const wrt_tensor *x = &m->t[op->in[0]], *yt = &m->t[op->out];
  size_t OH = (size_t)yt->dims[1], OW = (size_t)yt->dims[2], C = (size_t)yt->dims[3];
  int64_t H = x->dims[1], W = x->dims[2];
  size_t ks = (size_t)a->kernel[0] * (size_t)a->kernel[1];
  float* y = t_f32(m, op->out);
  const float** ind = op->u.pool.ind;
  int is_max = !WRT_KEEP(AVERAGE_POOL_2D, F32) || op->type == OP_MAX_POOL_2D; /* (a module may hold max only) */
  int64_t lo_h = a->count_include_pad ? -a->pads[0] : 0, hi_h = a->count_include_pad ? H + a->pads[2] : H;
  int64_t lo_w = a->count_include_pad ? -a->pads[1] : 0, hi_w = a->count_include_pad ? W + a->pads[3] : W;
  for (size_t row = r0; row < r1; row++) {
    size_t n = row / OH, oh = row % OH;
    {
      int64_t ch = is_max ? 1
                          : taps_inside((int64_t)oh * a->strides[0] - a->pads[0], a->kernel[0], a->dilations[0], lo_h, hi_h);
      for (size_t ow = 0; ow < OW; ow++) {
        size_t p = (n * OH + oh) * OW + ow;
        if (is_max) {
          m->tg->maxpool(C, ks, ind + p * ks, y + p * C, 1.0f, &op->clamp);
        } else {
          int64_t cw = taps_inside((int64_t)ow * a->strides[1] - a->pads[1], a->kernel[1], a->dilations[1], lo_w, hi_w);
          int64_t cnt = ch * cw;
          /* python_ref divides by 0 only if a window misses the input entirely, which the shape checks exclude */
          float scale = cnt > 0 ? (float)(1.0 / (double)cnt) : __builtin_nanf("");
          m->tg->avgpool(C, ks, ind + p * ks, y + p * C, scale, &op->clamp);
        }
      }
    }
  }
}

int run_pool(wrt_model* m, wrt_op* op) {
  pool_job j = {m, op};
  op_parallel_rows(m, op, (size_t)(m->t[op->out].dims[0] * m->t[op->out].dims[1]), pool_rows, &j);
  return WRT_OK;
}
