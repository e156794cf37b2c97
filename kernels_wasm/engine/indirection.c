/* Indirection buffers: for each output pixel and kernel tap, a pointer to the input row it reads (or to a padding
 * row of zeros / -INF), so convolution and pooling kernels never compute coordinates. They point into the arena,
 * whose address is fixed for the model's lifetime. */
#include "engine.h"

/* the input pixel (n*H + ih)*W + iw that output pixel px (of N x OH x OW) reads at tap (kh, kw), or -1 in padding */
int64_t tap_input_pixel(const wrt_attrs* a, int64_t H, int64_t W, int64_t OH, int64_t OW, int64_t px, int64_t kh,
                        int64_t kw) {
  int64_t n = px / (OH * OW), r = px % (OH * OW), oh = r / OW, ow = r % OW;
  int64_t ih = oh * a->strides[0] - a->pads[0] + kh * a->dilations[0];
  int64_t iw = ow * a->strides[1] - a->pads[1] + kw * a->dilations[1];
  return ih >= 0 && ih < H && iw >= 0 && iw < W ? (n * H + ih) * W + iw : -1;
}

/* per tile of MR output pixels (of P = N x OH x OW), ks = kh*KW taps x MR pointers, tap-major; NULL (error set) when
 * out of memory. Every pointer is into the arena or the zero padding row. */
static const float** tile_indirection(wrt_model* m, wrt_op* op, size_t MR, size_t P, size_t ks, size_t OH, size_t OW,
                                      size_t H, size_t W, size_t C, size_t KW) {
  const wrt_attrs* a = &op->a;
  const float** ind = m_alloc_shaped(m, ptr_bytes((uint64_t)P * ks) + 1);
  if (!ind) {
    m_alloc_fail(m, op, "the indirection buffer", ptr_bytes((uint64_t)P * ks) + 1);
    return 0;
  }
  const float* x = t_f32(m, op->in[0]);
  for (size_t p0 = 0; p0 < P; p0 += MR) {
    size_t mr = P - p0 < MR ? P - p0 : MR;
    const float** base = ind + p0 * ks;
    for (size_t t = 0; t < ks; t++) {
      int64_t kh = (int64_t)(t / KW), kw = (int64_t)(t % KW);
      for (size_t i = 0; i < mr; i++) {
        int64_t src = tap_input_pixel(a, (int64_t)H, (int64_t)W, (int64_t)OH, (int64_t)OW, (int64_t)(p0 + i), kh, kw);
        base[t * mr + i] = src >= 0 ? x + (size_t)src * C : m->zeros;
      }
    }
  }
  return ind;
}

/* the sparse GEMM: tiles of mr pixels, over the NHWC input, OHWI weights and NHWC output of the op */
const float** build_tile_indirection(wrt_model* m, wrt_op* op, size_t MR) {
  const wrt_tensor *x = &m->t[op->in[0]], *w = &m->t[op->in[1]], *y = &m->t[op->out];
  size_t OH = (size_t)y->dims[1], OW = (size_t)y->dims[2], KW = (size_t)w->dims[2];
  return tile_indirection(m, op, MR, (size_t)y->dims[0] * OH * OW, (size_t)w->dims[1] * KW, OH, OW,
                          (size_t)x->dims[1], (size_t)x->dims[2], (size_t)x->dims[3], KW);
}

/* igemm: per block of MR output pixels of the target's GEMM tile, over the plan's geometry */
int build_igemm_indirection(wrt_model* m, wrt_op* op, wrt_conv_plan* p) {
  p->ind = tile_indirection(m, op, m->tg->gemm_mr, (size_t)p->pix, (size_t)p->ks, (size_t)p->oh, (size_t)p->ow,
                            (size_t)p->h, (size_t)p->w, (size_t)p->c, (size_t)p->kw);
  return p->ind ? WRT_OK : WRT_ERR_NOMEM;
}

/* depthwise and pooling: per output pixel, ks pointers (pixel-major); NULL (error set) when out of memory */
const float** build_pixel_indirection(wrt_model* m, wrt_op* op, const float* pad_src, int64_t kh_n, int64_t kw_n) {
  const wrt_attrs* a = &op->a;
  const wrt_tensor *x = &m->t[op->in[0]], *y = &m->t[op->out];
  size_t N = (size_t)y->dims[0], OH = (size_t)y->dims[1], OW = (size_t)y->dims[2];
  size_t H = (size_t)x->dims[1], W = (size_t)x->dims[2], C = (size_t)x->dims[3], ks = (size_t)(kh_n * kw_n);
  size_t P = N * OH * OW;
  const float** ind = m_alloc_shaped(m, ptr_bytes((uint64_t)P * ks) + 1);
  if (!ind) {
    m_alloc_fail(m, op, "the indirection buffer", ptr_bytes((uint64_t)P * ks) + 1);
    return 0;
  }
  const float* xd = t_f32(m, op->in[0]);
  const float** o = ind;
  for (size_t px = 0; px < P; px++)
    for (int64_t kh = 0; kh < kh_n; kh++)
      for (int64_t kw = 0; kw < kw_n; kw++) {
        int64_t src = tap_input_pixel(a, (int64_t)H, (int64_t)W, (int64_t)OH, (int64_t)OW, (int64_t)px, kh, kw);
        *o++ = src >= 0 ? xd + (size_t)src * C : pad_src;
      }
  return ind;
}
