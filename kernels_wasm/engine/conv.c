/* CONV_2D (GEMM for 1x1, indirect GEMM for KxK, depthwise tiles, per-group igemm) and CONV_TRANSPOSE_2D
 * (GEMM into columns, then a col2im scatter). Weights are packed for the target's tiles at load; the indirection
 * buffers point into the arena, whose address is fixed for the model's lifetime. */
#include "engine.h"

enum { CONV_GEMM = 1, CONV_IGEMM, CONV_DW, CONV_GROUPED, CONV_WINO2, CONV_WINO4 };

static int algo_policy = WRT_CONV_AUTO;

int wrt_set_conv_algo(int algo) {
  int old = algo_policy;
  if (algo >= WRT_CONV_AUTO && algo <= WRT_CONV_WINO4) algo_policy = algo;
  return old;
}

static void conv_geometry(wrt_model* m, wrt_op* op, wrt_conv_plan* p) {
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

static const float* bias_of(wrt_model* m, const wrt_op* op) {
  return op->n_in > 2 && op->in[2] >= 0 ? (const float*)m->t[op->in[2]].file_data : 0;
}

/* the residual of a fused ADD (passes.fuse_residual_adds): same shape as the output, added before the clamp */
static int has_residual(const wrt_op* op) { return op->n_in > 3 && op->in[3] >= 0; }

static const float* residual_of(const wrt_model* m, const wrt_op* op) {
  return has_residual(op) ? t_f32(m, op->in[3]) : 0;
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
  return op->u.conv.ks == 1 && a->strides[0] == 1 && a->strides[1] == 1 && a->pads[0] == 0 && a->pads[1] == 0 &&
         a->pads[2] == 0 && a->pads[3] == 0;
}

/* The algorithm of a dense (one group) KxK convolution that is not 1x1: the candidates, and the choice among them
 * (wrt_set_conv_algo forces one where it applies). Winograd applies to 3x3 filters of stride 1 and dilation 1.
 * Rules, per target from per-layer timings (kernels_wasm/gen/kernels/winograd.py RULES): F(4x4) from enough
 * channels and pixels that the transforms are paid by the GEMMs; F(2x2) instead where few F(4x4) tiles share each
 * streamed transformed weight (small maps with many channels); else the indirect GEMM. */
static int choose_conv(wrt_model* m, wrt_op* op) {
  const wrt_target* tg = m->tg;
  const wrt_conv_plan* p = &op->u.conv;
  int wino = WRT_KF_WINOGRAD && choice_winograd(m, op);
  choice_offer(op, WRT_CH_DENSE | (wino ? WRT_CH_WINO2 | WRT_CH_WINO4 : 0u));
  unsigned f = choice_forced(op); /* a per-op choice (choice.c) before the process-wide one */
  if (f) return f == WRT_CH_WINO2 ? CONV_WINO2 : f == WRT_CH_WINO4 ? CONV_WINO4 : CONV_IGEMM;
  if (algo_policy == WRT_CONV_IGEMM || (algo_policy != WRT_CONV_AUTO && !wino)) return CONV_IGEMM;
  if (algo_policy == WRT_CONV_WINO2) return CONV_WINO2;
  if (algo_policy == WRT_CONV_WINO4) return CONV_WINO4;
  if (!wino) return CONV_IGEMM;
  uint64_t C = (uint64_t)p->c, CO = (uint64_t)p->co;
  if ((C < CO ? C : CO) < tg->wino_min_channels || C * CO < tg->wino_min_cc ||
      (uint64_t)p->oh * (uint64_t)p->ow < tg->wino_min_pixels)
    return CONV_IGEMM;
  uint64_t tiles4 = (uint64_t)p->n * (((uint64_t)p->oh + 3) / 4) * (((uint64_t)p->ow + 3) / 4);
  return C * CO >= tiles4 * tg->wino_f2_weights_per_tile ? CONV_WINO2 : CONV_WINO4;
}

WRT_FOR_SIZE int plan_conv(wrt_model* m, wrt_op* op, wrt_cost* c) {
  wrt_conv_plan* p = &op->u.conv;
  conv_geometry(m, op, p);
  uint64_t P = (uint64_t)p->pix, C = (uint64_t)p->c, CO = (uint64_t)p->co;
  uint64_t ks = (uint64_t)p->ks, G = (uint64_t)p->groups, cg = C / G, og = CO / G;
  op->packed_in = 0x6; /* weights, bias */
  if (C + 16 > m->pad_floats) m->pad_floats = (size_t)C + 16;
  if (has_residual(op)) c->work += WORK_VEC * P * CO;
  p->dw = G == C && og == 1 ? pick_dwconv(m->tg, (size_t)ks) : 0;
  if (p->dw) {
    uint64_t ct = p->dw->ct;
    op->path = CONV_DW;
    c->bytes += ((C + ct - 1) / ct) * ct * (1 + ks) * sizeof(float);
    c->shape_bytes += ptr_bytes(P * ks) + 1;
    c->work += WORK_DW * sat_mul(P * C, ks);
    return WRT_OK;
  }
  c->bytes += gemm_packed_floats(m->tg, og, ks * cg) * G * sizeof(float);
  c->work += sat_mul(P * CO, ks * cg);
  if (G == 1 && pointwise(op)) {
    op->path = CONV_GEMM;
    return WRT_OK;
  }
  op->path = G == 1 ? choose_conv(m, op) : CONV_GROUPED;
  choice_note(op, op->path == CONV_WINO2 ? WRT_CH_WINO2 : op->path == CONV_WINO4 ? WRT_CH_WINO4 : WRT_CH_DENSE);
  if (WRT_KF_WINOGRAD && (op->path == CONV_WINO2 || op->path == CONV_WINO4)) {
    c->work -= sat_mul(P * CO, ks * cg); /* instead of the direct convolution's */
    c->bytes -= gemm_packed_floats(m->tg, og, ks * cg) * G * sizeof(float);
    return plan_winograd(m, op, c, op->path == CONV_WINO2 ? 2 : 4);
  }
  c->shape_bytes += ptr_bytes(P * ks) + 1;
  if (G > 1) { /* each group's taps are shifted into scratch at run time */
    c->scratch = ptr_bytes(P * ks);
    c->work += WORK_COPY * sat_mul(G, P * ks);
  }
  return WRT_OK;
}

WRT_FOR_SIZE int prepare_conv(wrt_model* m, wrt_op* op) {
  wrt_conv_plan* p = &op->u.conv;
  const float* W = (const float*)m->t[op->in[1]].file_data;
  const float* bias = bias_of(m, op);
  size_t C = (size_t)p->c, CO = (size_t)p->co, ks = (size_t)p->ks, G = (size_t)p->groups;
  size_t cg = C / G, og = CO / G;
  if (WRT_KF_WINOGRAD && (op->path == CONV_WINO2 || op->path == CONV_WINO4)) return prepare_winograd(m, op);
  if (p->packed) { /* a resize: the weights stay, the indirection follows the new shapes */
    if (op->path == CONV_GEMM) return WRT_OK;
    if (op->path != CONV_DW) return build_igemm_indirection(m, op, p);
    p->ind = build_pixel_indirection(m, op, m->zeros, p->kh, p->kw);
    return p->ind ? WRT_OK : WRT_ERR_NOMEM;
  }
  if (op->path == CONV_DW) {
    uint64_t ct = p->dw->ct, tiles = (C + ct - 1) / ct, floats = tiles * ct * (1 + ks);
    float* pk = m_alloc(m, floats * sizeof(float));
    if (!pk) return m_alloc_fail(m, op, "packing the weights", floats * sizeof(float));
    m->weights_bytes += (size_t)floats * sizeof(float);
    float* o = pk;
    for (size_t t0 = 0; t0 < C; t0 += (size_t)ct) {
      for (size_t j = 0; j < ct; j++) *o++ = t0 + j < C && bias ? bias[t0 + j] : 0.0f;
      for (size_t t = 0; t < ks; t++)
        for (size_t j = 0; j < ct; j++) *o++ = t0 + j < C ? W[(t0 + j) * ks + t] : 0.0f;
    }
    p->packed = pk;
    p->ind = build_pixel_indirection(m, op, m->zeros, p->kh, p->kw);
    return p->ind ? WRT_OK : WRT_ERR_NOMEM;
  }
  /* GEMM-shaped: per group, k = ks*cg rows (tap-major, then channel), og columns; OHWI is already that order */
  size_t k = ks * cg, per_group = (size_t)gemm_packed_floats(m->tg, og, k);
  uint64_t bytes = (uint64_t)per_group * G * sizeof(float);
  float* pk = m_alloc(m, bytes);
  if (!pk) return m_alloc_fail(m, op, "packing the weights", bytes);
  m->weights_bytes += (size_t)bytes;
  for (size_t g = 0; g < G; g++)
    pack_gemm(m->tg, og, k, W + g * og * k, 1, k, bias ? bias + g * og : 0, pk + g * per_group);
  p->packed = pk;
  p->gpack = (int64_t)per_group;
  return op->path == CONV_GEMM ? WRT_OK : build_igemm_indirection(m, op, p);
}

const char* conv_kernel(const wrt_op* op) {
  static const char* const names[][2] = { /* by path (then the specialized depthwise entries), without/with a residual */
      {"?", "?"}, {"gemm 1x1", "gemm 1x1 + add"}, {"igemm", "igemm + add"}, {"dwconv any", "dwconv any + add"},
      {"igemm per group", "igemm per group + add"}, {"dwconv 3x3", "dwconv 3x3 + add"},
      {"dwconv 5x5", "dwconv 5x5 + add"}, {"winograd F(2x2,3x3)", "winograd F(2x2,3x3) + add"},
      {"winograd F(4x4,3x3)", "winograd F(4x4,3x3) + add"}};
  const wrt_dwconv_entry* dw = op->u.conv.dw;
  int k = op->path == CONV_DW && dw && dw->ks ? (dw->ks == 9 ? 5 : 6) : op->path >= CONV_WINO2 ? op->path + 2 : op->path;
  return k >= 0 && k <= 8 ? names[k][has_residual(op)] : "?";
}

/* Tasks of a convolution run: depthwise, ranges of output rows; igemm, ranges of MR-pixel blocks (of one group). */
typedef struct {
  const wrt_model* m;
  const wrt_op* op;
  const wrt_clamp* kc; /* the kernels' clamp: none when a residual is added afterwards */
  const float* res;    /* the residual, or NULL */
  const float** ind;   /* igemm: this group's taps */
  const float* pk;     /* igemm: this group's packed weights */
  size_t g;
  size_t chunks, per; /* depthwise by channels: chunks per row, channel tiles per chunk */
} conv_job;

static void dw_rows(void* ctx, size_t r0, size_t r1) {
  const conv_job* j = ctx;
  const wrt_conv_plan* p = &j->op->u.conv;
  const wrt_target* tg = j->m->tg;
  size_t C = (size_t)p->c, CO = (size_t)p->co, ks = (size_t)p->ks, OW = (size_t)p->ow;
  float* y = t_f32(j->m, j->op->out);
  for (size_t r = r0; r < r1; r++) {
    float* row = y + r * OW * CO;
    p->dw->fn(C, OW, ks, p->ind + r * OW * ks, p->packed, row, CO * sizeof(float), j->kc);
    if (j->res) tg->vbinary[WRT_BIN_ADD](OW * CO, row, j->res + r * OW * CO, row, &j->op->clamp);
  }
}

/* A row is cut into chunks of whole channel tiles when its weights would not stay in L1 across its pixels (7x7x960:
 * 38 KB), and on several threads when the map has few rows (7x7 late in a network: two threads would split 7 rows
 * 4 + 3). A task is one row's chunk, run with the row's taps shifted to the chunk. Each channel is computed by the
 * same kernel code as in a whole row, so the bytes do not change. */
#define DW_TASKS 32      /* about this many (row, chunk) tasks */
#define DW_SPLIT_ROWS 16 /* below this many rows */
#define DW_CHUNK_TAPS 512 /* the shifted taps of a row live on the stack */
#define DW_L1_WEIGHTS (16 * 1024) /* bytes of a chunk's packed weights, at most (about) */

static void dw_chunk(void* ctx, size_t t) {
  const conv_job* j = ctx;
  const wrt_conv_plan* p = &j->op->u.conv;
  size_t C = (size_t)p->c, CO = (size_t)p->co, ks = (size_t)p->ks, OW = (size_t)p->ow, ct = p->dw->ct;
  size_t r = t / j->chunks, c0 = t % j->chunks * j->per * ct, c1 = c0 + j->per * ct < C ? c0 + j->per * ct : C;
  const float* taps[DW_CHUNK_TAPS];
  const float* const* src = p->ind + r * OW * ks;
  for (size_t i = 0; i < OW * ks; i++) taps[i] = src[i] + c0; /* the zero buffer holds more than C floats */
  float* row = t_f32(j->m, j->op->out) + r * OW * CO + c0;
  p->dw->fn(c1 - c0, OW, ks, taps, p->packed + c0 * (1 + ks), row, CO * sizeof(float), j->kc);
  if (!j->res) return;
  const float* res = j->res + r * OW * CO + c0;
  for (size_t x = 0; x < OW; x++)
    j->m->tg->vbinary[WRT_BIN_ADD](c1 - c0, row + x * CO, res + x * CO, row + x * CO, &j->op->clamp);
}

/* Asks for the cache lines of an output about to be written, for writing. The arena is reused and a run's weights
 * do not fit the last-level cache, so an op's output lands on lines no cache holds: the first convolution (an RGB
 * image's 3 channels per tap, the stores' share of its work is large) ran at 27 GFLOP/s with cold caches, 79 warm,
 * and took 0.44 ms in MobileNetV2 instead of 0.28. WebAssembly has no prefetch. */
static void prefetch_out(const void* p, size_t bytes) {
#if !defined(__wasm__)
  for (size_t o = 0; o < bytes; o += 64) __builtin_prefetch((const char*)p + o, 1);
#else
  (void)p, (void)bytes;
#endif
}

/* tiles ahead whose output lines igemm_blocks asks for */
#define OUT_AHEAD 2

static void igemm_blocks(void* ctx, size_t b0, size_t b1) {
  const conv_job* j = ctx;
  const wrt_conv_plan* p = &j->op->u.conv;
  const wrt_target* tg = j->m->tg;
  size_t P = (size_t)p->pix, CO = (size_t)p->co, ks = (size_t)p->ks, G = (size_t)p->groups;
  size_t cg = (size_t)p->c / G, og = CO / G, MR = tg->gemm_mr, NR = tg->gemm_nr;
  float* y = t_f32(j->m, j->op->out);
  for (size_t b = b0; b < b1; b++) {
    size_t p0 = b * MR, mr = P - p0 < MR ? P - p0 : MR;
    if (b + OUT_AHEAD < b1) prefetch_out(y + (p0 + OUT_AHEAD * MR) * CO, MR * CO * sizeof(float));
    for (size_t n0 = 0; n0 < og; n0 += NR) {
      size_t nc = og - n0 < NR ? og - n0 : NR;
      wrt_igemm_fn fn = gemm_panel_width(tg, nc) == NR ? tg->igemm : tg->igemm_half;
      fn(mr, nc, cg, ks, j->ind + p0 * ks, j->pk + (n0 / NR) * NR * (1 + ks * cg), y + p0 * CO + j->g * og + n0,
         CO * sizeof(float), j->kc);
    }
  }
}

int run_conv(wrt_model* m, wrt_op* op) {
  const wrt_conv_plan* p = &op->u.conv;
  const wrt_target* tg = m->tg;
  float* y = t_f32(m, op->out);
  size_t P = (size_t)p->pix, C = (size_t)p->c, CO = (size_t)p->co, ks = (size_t)p->ks;
  size_t G = (size_t)p->groups, cg = C / G;
  /* with a residual, kernels write the plain sum and the residual add applies the clamp, each row block while
   * it is still in cache */
  const float* res = residual_of(m, op);
  const wrt_clamp none = {-__builtin_inff(), __builtin_inff()};
  conv_job j = {m, op, res ? &none : &op->clamp, res, 0, 0, 0, 0, 0};
  switch (op->path) {
    case CONV_GEMM:
      run_gemm(tg, P, CO, C, t_f32(m, op->in[0]), C * sizeof(float), p->packed, y, CO * sizeof(float), &op->clamp,
               res, op_threads(m, op));
      return WRT_OK;
    case CONV_DW: {
      size_t rows = (size_t)(p->n * p->oh), tiles = (C + p->dw->ct - 1) / p->dw->ct;
      size_t want = tiles * p->dw->ct * (1 + ks) * sizeof(float) / DW_L1_WEIGHTS + 1; /* chunks per row */
      if (rows < DW_SPLIT_ROWS && op_threads(m, op) > 1 && want < (DW_TASKS + rows - 1) / rows)
        want = (DW_TASKS + rows - 1) / rows;
      if (want > tiles) want = tiles;
      if (want < 2 || (size_t)p->ow * ks > DW_CHUNK_TAPS) {
        op_parallel_rows(m, op, rows, dw_rows, &j);
        return WRT_OK;
      }
      j.per = (tiles + want - 1) / want;
      j.chunks = (tiles + j.per - 1) / j.per;
      op_parallel(m, op, rows * j.chunks, dw_chunk, &j);
      return WRT_OK;
    }
    case CONV_WINO2:
    case CONV_WINO4:
      return WRT_KF_WINOGRAD ? run_winograd(m, op, res) : WRT_ERR_UNSUPPORTED; /* never planned without it */
    case CONV_IGEMM:
    case CONV_GROUPED: {
      for (size_t g = 0; g < G; g++) {
        j.g = g;
        j.ind = (const float**)p->ind;
        if (g > 0) { /* the same taps, shifted to this group's channels; padding still reads zeros */
          const float** s = (const float**)m->scratch;
          for (size_t i = 0; i < P * ks; i++) s[i] = p->ind[i] == m->zeros ? m->zeros : p->ind[i] + g * cg;
          j.ind = s;
        }
        j.pk = p->packed + g * (size_t)p->gpack;
        op_parallel_rows(m, op, (P + tg->gemm_mr - 1) / tg->gemm_mr, igemm_blocks, &j);
      }
      if (res) tg->vbinary[WRT_BIN_ADD](P * CO, y, res, y, &op->clamp);
      return WRT_OK;
    }
  }
  return op_fail(op, WRT_ERR_UNSUPPORTED, "internal: no convolution path");
}

/* ---- CONV_TRANSPOSE_2D ------------------------------------------------------------------------------------------
 * One GEMM of the input pixels by the weights of every tap (columns tap-major, then output channel), then each
 * product placed at its output pixel. When the stride equals the kernel (no padding, no dilation: the 2x2 stride-2
 * upsampling of segmentation heads) every output pixel gets exactly one product: the GEMM adds the bias and clamps,
 * and the placing is a copy (CT_TILES). Otherwise the output starts as the bias and the products are added to it. */
enum { CT_ADD = 0, CT_TILES = 1 };

static int ct_tiles(const wrt_op* op, const wrt_conv_plan* p) {
  const wrt_attrs* a = &op->a;
  return a->strides[0] == p->kh && a->strides[1] == p->kw && a->dilations[0] == 1 && a->dilations[1] == 1 &&
         !a->pads[0] && !a->pads[1] && !a->pads[2] && !a->pads[3] && p->oh == p->h * p->kh && p->ow == p->w * p->kw;
}

WRT_FOR_SIZE int plan_conv_transpose(wrt_model* m, wrt_op* op, wrt_cost* c) {
  const wrt_tensor* x = &m->t[op->in[0]];
  wrt_conv_plan* p = &op->u.conv;
  conv_geometry(m, op, p);
  p->pix = (int64_t)x->dims[0] * x->dims[1] * x->dims[2]; /* GEMM rows = input pixels */
  op->path = ct_tiles(op, p) ? CT_TILES : CT_ADD;
  op->packed_in = op->path == CT_TILES ? 0x6 : 0x2; /* CT_ADD adds the bias at run time */
  uint64_t P = (uint64_t)p->pix, C = (uint64_t)p->c, CO = (uint64_t)p->co;
  uint64_t ks = (uint64_t)p->ks, G = (uint64_t)p->groups, cg = C / G, og = CO / G, J = ks * og;
  uint64_t chunk = (uint64_t)(256 * 1024) / (J * sizeof(float) + 1);
  chunk = chunk < m->tg->gemm_mr ? m->tg->gemm_mr : chunk;
  p->chunk = (int64_t)chunk;
  /* packed panels, plus the transposed weights and biases of one group while packing (freed at once) */
  c->bytes += gemm_packed_floats(m->tg, J, cg) * G * sizeof(float) + (cg + 1) * J * sizeof(float) + 1;
  c->scratch = chunk * J * sizeof(float);
  uint64_t opix = (uint64_t)m->t[op->out].count / (CO ? CO : 1);
  c->work += sat_mul(G * P, J * cg) + WORK_SCALAR * sat_mul(G * P, ks * og) + WORK_COPY * opix * CO;
  return WRT_OK;
}

WRT_FOR_SIZE int prepare_conv_transpose(wrt_model* m, wrt_op* op) {
  wrt_conv_plan* p = &op->u.conv;
  if (p->packed) return WRT_OK; /* a resize: nothing follows the shapes */
  size_t C = (size_t)p->c, CO = (size_t)p->co, ks = (size_t)p->ks, G = (size_t)p->groups;
  size_t cg = C / G, og = CO / G, J = ks * og;
  size_t per_group = (size_t)gemm_packed_floats(m->tg, J, cg);
  uint64_t bytes = (uint64_t)per_group * G * sizeof(float), tmp_bytes = (uint64_t)(cg + 1) * J * sizeof(float) + 1;
  float* pk = m_alloc(m, bytes);
  if (!pk) return m_alloc_fail(m, op, "packing the weights", bytes);
  float* tmp = rt_alloc((size_t)tmp_bytes); /* transient (counted in the plan) */
  if (!tmp) return m_alloc_fail(m, op, "transposing the weights", tmp_bytes);
  m->weights_bytes += (size_t)bytes;
  const float* W = (const float*)m->t[op->in[1]].file_data;
  const float* bias = op->path == CT_TILES ? bias_of(m, op) : 0;
  float* tb = tmp + cg * J; /* the bias of each column */
  for (size_t g = 0; g < G; g++) {
    /* B[c][t*og + o] = W[g*og + o][t][c] */
    for (size_t o = 0; o < og; o++)
      for (size_t t = 0; t < ks; t++) {
        for (size_t c = 0; c < cg; c++) tmp[c * J + t * og + o] = W[((g * og + o) * ks + t) * cg + c];
        tb[t * og + o] = bias ? bias[g * og + o] : 0.0f;
      }
    pack_gemm(m->tg, J, cg, tmp, J, 1, bias ? tb : 0, pk + g * per_group);
  }
  rt_free(tmp);
  p->packed = pk;
  p->gpack = (int64_t)per_group;
  return WRT_OK;
}

/* CT_TILES: input pixel (n, ih, iw) and tap (kh, kw) own output pixel (n, ih*KH + kh, iw*KW + kw); the KW taps of
 * one kh are KW*og adjacent floats in the GEMM row and in the output row */
static int run_ct_tiles(wrt_model* m, wrt_op* op) {
  const wrt_conv_plan* p = &op->u.conv;
  const float* x = t_f32(m, op->in[0]);
  float* y = t_f32(m, op->out);
  size_t C = (size_t)p->c, CO = (size_t)p->co, ks = (size_t)p->ks, G = (size_t)p->groups;
  size_t cg = C / G, og = CO / G, J = ks * og, P = (size_t)p->pix, chunk = (size_t)p->chunk;
  size_t W = (size_t)p->w, KH = (size_t)p->kh, KW = (size_t)p->kw, OW = (size_t)p->ow, run = KW * og;
  float* cols = m->scratch;
  for (size_t g = 0; g < G; g++) {
    const float* pk = p->packed + g * (size_t)p->gpack;
    for (size_t p0 = 0; p0 < P; p0 += chunk) {
      size_t rows = P - p0 < chunk ? P - p0 : chunk;
      run_gemm(m->tg, rows, J, cg, x + p0 * C + g * cg, C * sizeof(float), pk, cols, J * sizeof(float), &op->clamp,
               0, op_threads(m, op));
      size_t orow = p0 / W * KH, iw = p0 % W; /* orow: the first output row of input row (n, ih), n*OH + ih*KH */
      for (size_t r = 0; r < rows; r++) {
        for (size_t kh = 0; kh < KH; kh++) {
          const float* src = cols + r * J + kh * run;
          float* dst = y + ((orow + kh) * OW + iw * KW) * CO + g * og;
          if (G == 1)
            for (size_t i = 0; i < run; i++) dst[i] = src[i];
          else
            for (size_t kw = 0; kw < KW; kw++)
              for (size_t o = 0; o < og; o++) dst[kw * CO + o] = src[kw * og + o];
        }
        if (++iw == W) iw = 0, orow += KH;
      }
    }
  }
  return WRT_OK;
}

int run_conv_transpose(wrt_model* m, wrt_op* op) {
  const wrt_attrs* a = &op->a;
  const wrt_conv_plan* p = &op->u.conv;
  const float* x = t_f32(m, op->in[0]);
  float* y = t_f32(m, op->out);
  const float* bias = op->n_in > 2 && op->in[2] >= 0 ? t_f32(m, op->in[2]) : 0;
  size_t C = (size_t)p->c, CO = (size_t)p->co, ks = (size_t)p->ks, G = (size_t)p->groups;
  size_t cg = C / G, og = CO / G, J = ks * og, P = (size_t)p->pix, chunk = (size_t)p->chunk;
  size_t H = (size_t)p->h, W = (size_t)p->w, OH = (size_t)p->oh, OW = (size_t)p->ow;
  size_t KH = (size_t)p->kh, KW = (size_t)p->kw, opix = (size_t)p->n * OH * OW;
  if (op->path == CT_TILES) return run_ct_tiles(m, op);
  for (size_t p = 0; p < opix; p++)
    for (size_t c = 0; c < CO; c++) y[p * CO + c] = bias ? bias[c] : 0.0f;
  wrt_clamp none = {-__builtin_inff(), __builtin_inff()};
  float* cols = m->scratch;
  for (size_t g = 0; g < G; g++) {
    const float* pk = p->packed + g * (size_t)p->gpack;
    for (size_t p0 = 0; p0 < P; p0 += chunk) {
      size_t rows = P - p0 < chunk ? P - p0 : chunk;
      run_gemm(m->tg, rows, J, cg, x + p0 * C + g * cg, C * sizeof(float), pk, cols, J * sizeof(float), &none, 0,
               op_threads(m, op));
      /* the input pixel (n, ih, iw) of each GEMM row, stepped rather than divided out per row (64-bit divisions
       * cost more than the scatter itself: selfie segmentation's 2x2 upsampling head ran at 4 GFLOP/s) */
      size_t n = p0 / (H * W), ih = (p0 / W) % H, iw = p0 % W;
      for (size_t r = 0; r < rows; r++) {
        const float* src = cols + r * J; /* tap (kh, kw) at src + (kh * KW + kw) * og */
        int64_t oh0 = (int64_t)ih * a->strides[0] - a->pads[0], ow0 = (int64_t)iw * a->strides[1] - a->pads[1];
        for (size_t kh = 0; kh < KH; kh++) {
          int64_t oh = oh0 + (int64_t)kh * a->dilations[0];
          for (size_t kw = 0; kw < KW; kw++, src += og) {
            int64_t ow = ow0 + (int64_t)kw * a->dilations[1];
            if (oh < 0 || oh >= (int64_t)OH || ow < 0 || ow >= (int64_t)OW) continue;
            float* dst = y + ((n * OH + (size_t)oh) * OW + (size_t)ow) * CO + g * og;
            for (size_t o = 0; o < og; o++) dst[o] += src[o];
          }
        }
        if (++iw == W) {
          iw = 0;
          if (++ih == H) ih = 0, n++;
        }
      }
    }
  }
  if (!is_unclamped(&op->clamp)) clamp_inplace(y, opix * CO, &op->clamp);
  return WRT_OK;
}
