/* CONV_2D (GEMM for 1x1, indirect GEMM for KxK, depthwise tiles, per-group igemm) and CONV_TRANSPOSE_2D
 * (GEMM into columns, then a col2im scatter). Weights are packed for the target's tiles at load; the indirection
 * buffers point into the arena, whose address is fixed for the model's lifetime. */
#include "engine.h"

enum { CONV_GEMM = 1, CONV_IGEMM, CONV_DW, CONV_GROUPED };

/* p[] layout for convolutions */
enum { P_N, P_H, P_W, P_C, P_OH, P_OW, P_CO, P_KH, P_KW, P_G, P_PIX, P_KS, P_GPACK, T_CHUNK };

static int64_t conv_geometry(wrt_model* m, wrt_op* op) {
  const wrt_tensor *x = &m->t[op->in[0]], *w = &m->t[op->in[1]], *y = &m->t[op->out];
  op->p[P_N] = x->dims[0];
  op->p[P_H] = x->dims[1];
  op->p[P_W] = x->dims[2];
  op->p[P_C] = x->dims[3];
  op->p[P_OH] = y->dims[1];
  op->p[P_OW] = y->dims[2];
  op->p[P_CO] = y->dims[3];
  op->p[P_KH] = w->dims[1];
  op->p[P_KW] = w->dims[2];
  op->p[P_G] = op->a.groups;
  op->p[P_KS] = (int64_t)w->dims[1] * w->dims[2];
  return op->p[P_PIX] = (int64_t)y->dims[0] * y->dims[1] * y->dims[2];
}

static const float* bias_of(wrt_model* m, const wrt_op* op) {
  return op->n_in > 2 && op->in[2] >= 0 ? (const float*)m->t[op->in[2]].file_data : 0;
}

/* indirection for igemm: per block of MR output pixels, ks*mr pointers, tap-major */
static int build_igemm_indirection(wrt_model* m, wrt_op* op) {
  const wrt_attrs* a = &op->a;
  size_t P = (size_t)op->p[P_PIX], ks = (size_t)op->p[P_KS], MR = m->tg->gemm_mr;
  size_t OH = (size_t)op->p[P_OH], OW = (size_t)op->p[P_OW], H = (size_t)op->p[P_H], W = (size_t)op->p[P_W];
  size_t C = (size_t)op->p[P_C], KW = (size_t)op->p[P_KW];
  const float** ind = m_alloc(m, ptr_bytes((uint64_t)P * ks) + 1);
  if (!ind) return m_alloc_fail(m, op, "the indirection buffer", ptr_bytes((uint64_t)P * ks) + 1);
  const float* x = tf(m, op->in[0]);
  for (size_t p0 = 0; p0 < P; p0 += MR) {
    size_t mr = P - p0 < MR ? P - p0 : MR;
    const float** base = ind + p0 * ks;
    for (size_t t = 0; t < ks; t++) {
      int64_t kh = (int64_t)(t / KW), kw = (int64_t)(t % KW);
      for (size_t i = 0; i < mr; i++) {
        size_t p = p0 + i, n = p / (OH * OW), r = p % (OH * OW), oh = r / OW, ow = r % OW;
        int64_t ih = (int64_t)oh * a->strides[0] - a->pads[0] + kh * a->dilations[0];
        int64_t iw = (int64_t)ow * a->strides[1] - a->pads[1] + kw * a->dilations[1];
        base[t * mr + i] = ih >= 0 && ih < (int64_t)H && iw >= 0 && iw < (int64_t)W
                               ? x + ((n * H + (size_t)ih) * W + (size_t)iw) * C
                               : m->zeros;
      }
    }
  }
  op->ind = ind;
  return WRT_OK;
}

/* indirection for depthwise and pooling: per output pixel, ks pointers (pixel-major) */
int build_pixel_indirection(wrt_model* m, wrt_op* op, const float* pad_src, int64_t kh_n, int64_t kw_n);
int build_pixel_indirection(wrt_model* m, wrt_op* op, const float* pad_src, int64_t kh_n, int64_t kw_n) {
  const wrt_attrs* a = &op->a;
  const wrt_tensor *x = &m->t[op->in[0]], *y = &m->t[op->out];
  size_t N = (size_t)y->dims[0], OH = (size_t)y->dims[1], OW = (size_t)y->dims[2];
  size_t H = (size_t)x->dims[1], W = (size_t)x->dims[2], C = (size_t)x->dims[3], ks = (size_t)(kh_n * kw_n);
  size_t P = N * OH * OW;
  const float** ind = m_alloc(m, ptr_bytes((uint64_t)P * ks) + 1);
  if (!ind) return m_alloc_fail(m, op, "the indirection buffer", ptr_bytes((uint64_t)P * ks) + 1);
  const float* xd = tf(m, op->in[0]);
  const float** o = ind;
  for (size_t n = 0; n < N; n++)
    for (size_t oh = 0; oh < OH; oh++)
      for (size_t ow = 0; ow < OW; ow++)
        for (int64_t kh = 0; kh < kh_n; kh++)
          for (int64_t kw = 0; kw < kw_n; kw++) {
            int64_t ih = (int64_t)oh * a->strides[0] - a->pads[0] + kh * a->dilations[0];
            int64_t iw = (int64_t)ow * a->strides[1] - a->pads[1] + kw * a->dilations[1];
            *o++ = ih >= 0 && ih < (int64_t)H && iw >= 0 && iw < (int64_t)W
                       ? xd + ((n * H + (size_t)ih) * W + (size_t)iw) * C
                       : pad_src;
          }
  op->ind = ind;
  return WRT_OK;
}

static const wrt_dwconv_entry* pick_dwconv(const wrt_target* tg, size_t ks) {
  for (int i = 0; i < WRT_MAX_DWCONV; i++) {
    const wrt_dwconv_entry* e = &tg->dwconv[i];
    if (e->fn && e->ct && (e->ks == ks || e->ks == 0)) return e;
  }
  return 0;
}

static int pointwise(const wrt_op* op) {
  const wrt_attrs* a = &op->a;
  return op->p[P_KS] == 1 && a->strides[0] == 1 && a->strides[1] == 1 && a->pads[0] == 0 && a->pads[1] == 0 &&
         a->pads[2] == 0 && a->pads[3] == 0;
}

int plan_conv(wrt_model* m, wrt_op* op, wrt_cost* c) {
  conv_geometry(m, op);
  uint64_t P = (uint64_t)op->p[P_PIX], C = (uint64_t)op->p[P_C], CO = (uint64_t)op->p[P_CO];
  uint64_t ks = (uint64_t)op->p[P_KS], G = (uint64_t)op->p[P_G], cg = C / G, og = CO / G;
  op->packed_in = 0x6; /* weights, bias */
  if (C + 16 > m->pad_floats) m->pad_floats = (size_t)C + 16;
  op->dw = G == C && og == 1 ? pick_dwconv(m->tg, (size_t)ks) : 0;
  if (op->dw) {
    uint64_t ct = op->dw->ct;
    op->path = CONV_DW;
    c->bytes += ((C + ct - 1) / ct) * ct * (1 + ks) * sizeof(float) + ptr_bytes(P * ks) + 1;
    c->work += WORK_DW * sat_mul(P * C, ks);
    return WRT_OK;
  }
  c->bytes += gemm_packed_floats(m->tg, og, ks * cg) * G * sizeof(float);
  c->work += sat_mul(P * CO, ks * cg);
  if (G == 1 && pointwise(op)) {
    op->path = CONV_GEMM;
    return WRT_OK;
  }
  op->path = G == 1 ? CONV_IGEMM : CONV_GROUPED;
  c->bytes += ptr_bytes(P * ks) + 1;
  if (G > 1) { /* each group's taps are shifted into scratch at run time */
    c->scratch = ptr_bytes(P * ks);
    c->work += WORK_COPY * sat_mul(G, P * ks);
  }
  return WRT_OK;
}

int prepare_conv(wrt_model* m, wrt_op* op) {
  const float* W = (const float*)m->t[op->in[1]].file_data;
  const float* bias = bias_of(m, op);
  size_t C = (size_t)op->p[P_C], CO = (size_t)op->p[P_CO], ks = (size_t)op->p[P_KS], G = (size_t)op->p[P_G];
  size_t cg = C / G, og = CO / G;
  if (op->path == CONV_DW) {
    uint64_t ct = op->dw->ct, tiles = (C + ct - 1) / ct, floats = tiles * ct * (1 + ks);
    float* pk = m_alloc(m, floats * sizeof(float));
    if (!pk) return m_alloc_fail(m, op, "packing the weights", floats * sizeof(float));
    m->weights_bytes += (size_t)floats * sizeof(float);
    float* o = pk;
    for (size_t t0 = 0; t0 < C; t0 += (size_t)ct) {
      for (size_t j = 0; j < ct; j++) *o++ = t0 + j < C && bias ? bias[t0 + j] : 0.0f;
      for (size_t t = 0; t < ks; t++)
        for (size_t j = 0; j < ct; j++) *o++ = t0 + j < C ? W[(t0 + j) * ks + t] : 0.0f;
    }
    op->packed = pk;
    return build_pixel_indirection(m, op, m->zeros, op->p[P_KH], op->p[P_KW]);
  }
  /* GEMM-shaped: per group, k = ks*cg rows (tap-major, then channel), og columns; OHWI is already that order */
  size_t k = ks * cg, per_group = (size_t)gemm_packed_floats(m->tg, og, k);
  uint64_t bytes = (uint64_t)per_group * G * sizeof(float);
  float* pk = m_alloc(m, bytes);
  if (!pk) return m_alloc_fail(m, op, "packing the weights", bytes);
  m->weights_bytes += (size_t)bytes;
  for (size_t g = 0; g < G; g++)
    pack_gemm(m->tg, og, k, W + g * og * k, 1, k, bias ? bias + g * og : 0, pk + g * per_group);
  op->packed = pk;
  op->p[P_GPACK] = (int64_t)per_group;
  return op->path == CONV_GEMM ? WRT_OK : build_igemm_indirection(m, op);
}

const char* conv_kernel_name(const wrt_op* op) {
  switch (op->path) {
    case CONV_GEMM: return "gemm 1x1";
    case CONV_IGEMM: return "igemm";
    case CONV_DW: return op->dw && op->dw->ks ? (op->dw->ks == 9 ? "dwconv 3x3" : "dwconv 5x5") : "dwconv any";
    case CONV_GROUPED: return "igemm per group";
  }
  return "?";
}

int run_conv(wrt_model* m, wrt_op* op) {
  const wrt_target* tg = m->tg;
  float* y = tf(m, op->out);
  size_t P = (size_t)op->p[P_PIX], C = (size_t)op->p[P_C], CO = (size_t)op->p[P_CO], ks = (size_t)op->p[P_KS];
  size_t G = (size_t)op->p[P_G], cg = C / G, og = CO / G, MR = tg->gemm_mr, NR = tg->gemm_nr;
  switch (op->path) {
    case CONV_GEMM:
      run_gemm(tg, P, CO, C, tf(m, op->in[0]), C * sizeof(float), op->packed, y, CO * sizeof(float), &op->clamp);
      return WRT_OK;
    case CONV_DW: {
      size_t rows = (size_t)(op->p[P_N] * op->p[P_OH]), OW = (size_t)op->p[P_OW];
      for (size_t r = 0; r < rows; r++)
        op->dw->fn(C, OW, ks, op->ind + r * OW * ks, op->packed, y + r * OW * CO, CO * sizeof(float), &op->clamp);
      return WRT_OK;
    }
    case CONV_IGEMM:
    case CONV_GROUPED: {
      size_t per_group = (size_t)op->p[P_GPACK];
      for (size_t g = 0; g < G; g++) {
        const float** ind = (const float**)op->ind;
        if (g > 0) { /* the same taps, shifted to this group's channels; padding still reads zeros */
          const float** s = (const float**)(void*)m->scratch;
          for (size_t i = 0; i < P * ks; i++) s[i] = ind[i] == m->zeros ? m->zeros : ind[i] + g * cg;
          ind = s;
        }
        const float* pk = op->packed + g * per_group;
        for (size_t p0 = 0; p0 < P; p0 += MR) {
          size_t mr = P - p0 < MR ? P - p0 : MR;
          for (size_t n0 = 0; n0 < og; n0 += NR) {
            size_t nc = og - n0 < NR ? og - n0 : NR;
            wrt_igemm_fn fn = gemm_panel_width(tg, nc) == NR ? tg->igemm : tg->igemm_half;
            fn(mr, nc, cg, ks, ind + p0 * ks, pk + (n0 / NR) * NR * (1 + ks * cg),
               y + p0 * CO + g * og + n0, CO * sizeof(float), &op->clamp);
          }
        }
      }
      return WRT_OK;
    }
  }
  return op_fail(op, WRT_ERR_UNSUPPORTED, "internal: no convolution path");
}

/* ---- CONV_TRANSPOSE_2D ------------------------------------------------------------------------------------------ */
int plan_conv_transpose(wrt_model* m, wrt_op* op, wrt_cost* c) {
  const wrt_tensor* x = &m->t[op->in[0]];
  conv_geometry(m, op);
  op->p[P_PIX] = (int64_t)x->dims[0] * x->dims[1] * x->dims[2]; /* GEMM rows = input pixels */
  op->packed_in = 0x2;                                           /* the bias is added at run time */
  uint64_t P = (uint64_t)op->p[P_PIX], C = (uint64_t)op->p[P_C], CO = (uint64_t)op->p[P_CO];
  uint64_t ks = (uint64_t)op->p[P_KS], G = (uint64_t)op->p[P_G], cg = C / G, og = CO / G, J = ks * og;
  uint64_t chunk = (uint64_t)(256 * 1024) / (J * sizeof(float) + 1);
  chunk = chunk < m->tg->gemm_mr ? m->tg->gemm_mr : chunk;
  op->p[T_CHUNK] = (int64_t)chunk;
  /* packed panels, plus the transposed weights of one group while packing (freed at once) */
  c->bytes += gemm_packed_floats(m->tg, J, cg) * G * sizeof(float) + cg * J * sizeof(float) + 1;
  c->scratch = chunk * J * sizeof(float);
  uint64_t opix = (uint64_t)m->t[op->out].count / (CO ? CO : 1);
  c->work += sat_mul(G * P, J * cg) + WORK_SCALAR * sat_mul(G * P, ks * og) + WORK_COPY * opix * CO;
  return WRT_OK;
}

int prepare_conv_transpose(wrt_model* m, wrt_op* op) {
  size_t C = (size_t)op->p[P_C], CO = (size_t)op->p[P_CO], ks = (size_t)op->p[P_KS], G = (size_t)op->p[P_G];
  size_t cg = C / G, og = CO / G, J = ks * og;
  size_t per_group = (size_t)gemm_packed_floats(m->tg, J, cg);
  uint64_t bytes = (uint64_t)per_group * G * sizeof(float), tmp_bytes = (uint64_t)cg * J * sizeof(float) + 1;
  float* pk = m_alloc(m, bytes);
  if (!pk) return m_alloc_fail(m, op, "packing the weights", bytes);
  float* tmp = rt_alloc((size_t)tmp_bytes); /* transient (counted in the plan) */
  if (!tmp) return m_alloc_fail(m, op, "transposing the weights", tmp_bytes);
  m->weights_bytes += (size_t)bytes;
  const float* W = (const float*)m->t[op->in[1]].file_data;
  for (size_t g = 0; g < G; g++) {
    /* B[c][t*og + o] = W[g*og + o][t][c] */
    for (size_t o = 0; o < og; o++)
      for (size_t t = 0; t < ks; t++)
        for (size_t c = 0; c < cg; c++) tmp[c * J + t * og + o] = W[((g * og + o) * ks + t) * cg + c];
    pack_gemm(m->tg, J, cg, tmp, J, 1, 0, pk + g * per_group);
  }
  rt_free(tmp);
  op->packed = pk;
  op->p[P_GPACK] = (int64_t)per_group;
  return WRT_OK;
}

int run_conv_transpose(wrt_model* m, wrt_op* op) {
  const wrt_attrs* a = &op->a;
  const float* x = tf(m, op->in[0]);
  float* y = tf(m, op->out);
  const float* bias = op->n_in > 2 && op->in[2] >= 0 ? tf(m, op->in[2]) : 0;
  size_t C = (size_t)op->p[P_C], CO = (size_t)op->p[P_CO], ks = (size_t)op->p[P_KS], G = (size_t)op->p[P_G];
  size_t cg = C / G, og = CO / G, J = ks * og, P = (size_t)op->p[P_PIX], chunk = (size_t)op->p[T_CHUNK];
  size_t H = (size_t)op->p[P_H], W = (size_t)op->p[P_W], OH = (size_t)op->p[P_OH], OW = (size_t)op->p[P_OW];
  size_t KW = (size_t)op->p[P_KW], opix = (size_t)op->p[P_N] * OH * OW;
  for (size_t p = 0; p < opix; p++)
    for (size_t c = 0; c < CO; c++) y[p * CO + c] = bias ? bias[c] : 0.0f;
  wrt_clamp none = {-__builtin_inff(), __builtin_inff()};
  float* cols = m->scratch;
  for (size_t g = 0; g < G; g++) {
    const float* pk = op->packed + g * (size_t)op->p[P_GPACK];
    for (size_t p0 = 0; p0 < P; p0 += chunk) {
      size_t rows = P - p0 < chunk ? P - p0 : chunk;
      run_gemm(m->tg, rows, J, cg, x + p0 * C + g * cg, C * sizeof(float), pk, cols, J * sizeof(float), &none);
      for (size_t r = 0; r < rows; r++) {
        size_t p = p0 + r, n = p / (H * W), ih = (p / W) % H, iw = p % W;
        for (size_t t = 0; t < ks; t++) {
          int64_t oh = (int64_t)ih * a->strides[0] + (int64_t)(t / KW) * a->dilations[0] - a->pads[0];
          int64_t ow = (int64_t)iw * a->strides[1] + (int64_t)(t % KW) * a->dilations[1] - a->pads[1];
          if (oh < 0 || oh >= (int64_t)OH || ow < 0 || ow >= (int64_t)OW) continue;
          float* dst = y + ((n * OH + (size_t)oh) * OW + (size_t)ow) * CO + g * og;
          const float* src = cols + r * J + t * og;
          for (size_t o = 0; o < og; o++) dst[o] += src[o];
        }
      }
    }
  }
  if (!is_unclamped(&op->clamp)) clamp_inplace(y, opix * CO, &op->clamp);
  return WRT_OK;
}
