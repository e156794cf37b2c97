/* LSTM, GRU and RNN (python_ref/recurrent.py): per direction, one GEMM of every step's input with the packed input
 * weights (biases folded in), then per step one GEMM of the batch's state with the packed recurrence, and the gate
 * functions on rows of H floats (the target's sigmoid/tanh kernels; other activations in double). Outputs past a
 * row's sequence length are 0; its final states are those of its last step (0 when it has none). */
#include "engine.h"

static const int DEFAULTS[3][3] = {{WRT_Activation_SIGMOID, WRT_Activation_TANH, WRT_Activation_TANH},
                                   {WRT_Activation_SIGMOID, WRT_Activation_TANH, 0},
                                   {WRT_Activation_TANH, 0, 0}};

typedef struct {
  int code;
  float alpha, beta;
} act_fn;

static act_fn activation(const wrt_op* op, int d, int k) {
  const wrt_attrs* a = &op->a;
  int n = op->type == OP_LSTM ? 3 : op->type == OP_GRU ? 2 : 1, i = d * n + k;
  act_fn f = {a->n_acts ? a->acts[i] : DEFAULTS[op->type == OP_LSTM ? 0 : op->type == OP_GRU ? 1 : 2][k], 0, 0};
  float da = 0, db = 0; /* ONNX's defaults */
  switch (f.code) {
    case WRT_Activation_AFFINE: case WRT_Activation_THRESHOLDED_RELU: case WRT_Activation_SCALED_TANH:
    case WRT_Activation_ELU: da = 1; db = f.code == WRT_Activation_SCALED_TANH ? 1 : 0; break;
    case WRT_Activation_LEAKY_RELU: da = 0.01f; break;
    case WRT_Activation_HARD_SIGMOID: da = 0.2f; db = 0.5f; break;
    default: break;
  }
  f.alpha = a->n_alphas ? a->alphas[i] : da;
  f.beta = a->n_betas ? a->betas[i] : db;
  return f;
}

static void apply(const wrt_model* m, act_fn f, float* v, size_t n) {
  static const float none[2] = {0, 0};
  wrt_vunary_fn k = f.code == WRT_Activation_SIGMOID ? m->tg->vunary[WRT_UN_SIGMOID]
                    : f.code == WRT_Activation_TANH  ? m->tg->vunary[WRT_UN_TANH]
                    : f.code == WRT_Activation_RELU  ? m->tg->vunary[WRT_UN_RELU]
                                                     : 0;
  if (k) {
    k(n, v, v, none);
    return;
  }
  double al = f.alpha, be = f.beta;
  for (size_t i = 0; i < n; i++) {
    double x = v[i], y;
    switch (f.code) {
      case WRT_Activation_SIGMOID: { double e = rt_exp(-(x < 0 ? -x : x)); y = x >= 0 ? 1 / (1 + e) : e / (1 + e); break; }
      case WRT_Activation_TANH: y = rt_tanh(x); break;
      case WRT_Activation_RELU: y = x > 0 ? x : 0; break;
      case WRT_Activation_AFFINE: y = al * x + be; break;
      case WRT_Activation_LEAKY_RELU: y = x >= 0 ? x : al * x; break;
      case WRT_Activation_THRESHOLDED_RELU: y = x > al ? x : 0; break;
      case WRT_Activation_SCALED_TANH: y = al * rt_tanh(be * x); break;
      case WRT_Activation_HARD_SIGMOID: y = al * x + be; y = y < 0 ? 0 : y > 1 ? 1 : y; break;
      case WRT_Activation_ELU: y = x >= 0 ? x : al * (rt_exp(x) - 1); break;
      case WRT_Activation_SOFTSIGN: y = x / (1 + (x < 0 ? -x : x)); break;
      case WRT_Activation_SOFTPLUS: y = x > 0 ? x + rt_log(1 + rt_exp(-x)) : rt_log(1 + rt_exp(x)); break;
      case WRT_Activation_RELU6: y = x < 0 ? 0 : x > 6 ? 6 : x; break;
      default: y = x; break; /* IDENTITY */
    }
    v[i] = (float)y;
  }
}

static void clip(float* v, size_t n, float c) {
  if (c == __builtin_inff()) return;
  for (size_t i = 0; i < n; i++) v[i] = v[i] < -c ? -c : v[i] > c ? c : v[i];
}

static const float* in_f32(const wrt_model* m, const wrt_op* op, int i) {
  return i < op->n_in && op->in[i] >= 0 ? (const float*)m->t[op->in[i]].file_data : 0;
}

static int has(const wrt_op* op, int i) { return i < op->n_in && op->in[i] >= 0; }

/* scratch floats: every step's input product, one step's recurrent product, states and temporaries */
static uint64_t scratch_floats(const wrt_rnn_dims* g) {
  uint64_t gh = (uint64_t)g->gates * (uint64_t)g->h, mx = (uint64_t)(g->h > g->p ? g->h : g->p);
  return sat_mul((uint64_t)g->t * (uint64_t)g->b, gh) + (uint64_t)g->b * (gh + 2 * (uint64_t)g->p + 3 * mx + 2) + 16;
}

int plan_rnn(wrt_model* m, wrt_op* op, wrt_cost* c) {
  wrt_rnn_plan* p = &op->u.rnn;
  int e = rnn_geometry(m, op, &p->g);
  if (e) return e;
  const wrt_rnn_dims* g = &p->g;
  uint64_t D = (uint64_t)g->d, T = (uint64_t)g->t, B = (uint64_t)g->b, I = (uint64_t)g->i, H = (uint64_t)g->h,
           P = (uint64_t)g->p, GH = (uint64_t)g->gates * H;
  op->packed_in = 0x2 | 0x4 | 0x8 | 0x100 | 0x200; /* w, r, b, proj_w, proj_b */
  /* as prepare_rnn allocates: per direction the packed GEMMs (and the biases kept for layer norm), once the biases */
  uint64_t floats = gemm_packed_floats(m->tg, GH, I) + (op->type == OP_LSTM && has(op, 10) ? GH : 0);
  floats += op->type == OP_GRU ? gemm_packed_floats(m->tg, 2 * H, H) + gemm_packed_floats(m->tg, H, H)
                               : gemm_packed_floats(m->tg, GH, P);
  if (has(op, 8)) floats += gemm_packed_floats(m->tg, P, H);
  c->bytes += (D * floats + 2 * GH) * sizeof(float);
  c->scratch = scratch_floats(g) * sizeof(float);
  /* GEMMs, then the gate functions (vector kernels, or double for unusual activations) */
  uint64_t macs = sat_mul(T * B, GH * (I + P) + (has(op, 8) ? P * H : 0));
  c->work += D * (macs + WORK_LIBM * T * B * GH);
  return WRT_OK;
}

static float* packed(wrt_model* m, wrt_op* op, size_t n, size_t k, const float* w, size_t ks, size_t ns,
                     const float* bias, int* err) {
  uint64_t bytes = gemm_packed_floats(m->tg, n, k) * sizeof(float);
  float* pk = m_alloc(m, bytes);
  if (!pk) {
    *err = m_alloc_fail(m, op, "packing the weights", bytes);
    return 0;
  }
  m->weights_bytes += (size_t)bytes;
  pack_gemm(m->tg, n, k, w, ks, ns, bias, pk);
  return pk;
}

int prepare_rnn(wrt_model* m, wrt_op* op) {
  wrt_rnn_plan* p = &op->u.rnn;
  const wrt_rnn_dims* g = &p->g;
  size_t H = (size_t)g->h, I = (size_t)g->i, P = (size_t)g->p, G = (size_t)g->gates, GH = G * H;
  const float *W = in_f32(m, op, 1), *R = in_f32(m, op, 2), *B = in_f32(m, op, 3);
  const float *PW = in_f32(m, op, 8), *PB = in_f32(m, op, 9);
  if (p->w[0]) return WRT_OK; /* a resize: the weights stay, nothing else follows the shapes */
  int ln = op->type == OP_LSTM && has(op, 10), lbr = op->type == OP_GRU && op->a.linear_before_reset;
  int err = WRT_OK;
  float* bias = m_alloc(m, 2 * GH * sizeof(float)); /* [0, GH): the input GEMM's bias; [GH, 2GH): Rbh (GRU) */
  if (!bias) return m_alloc_fail(m, op, "the biases", 2 * GH * sizeof(float));
  for (int d = 0; d < g->d; d++) {
    const float* b = B ? B + (size_t)d * 2 * GH : 0;
    for (size_t j = 0; j < GH; j++) { /* Wb + Rb, except what must stay with the recurrence (GRU's Rbh) */
      int keep = lbr && j >= 2 * H;
      bias[j] = b ? b[j] + (keep ? 0.0f : b[GH + j]) : 0.0f;
      bias[GH + j] = b && keep ? b[GH + j] : 0.0f;
    }
    if (ln) { /* the biases come after the normalization: keep them for run time */
      p->bias[d] = m_alloc(m, GH * sizeof(float));
      if (!p->bias[d]) return m_alloc_fail(m, op, "the biases", GH * sizeof(float));
      rt_copy(p->bias[d], bias, GH * sizeof(float));
    }
    p->w[d] = packed(m, op, GH, I, W + (size_t)d * GH * I, 1, I, ln ? 0 : bias, &err);
    if (!p->w[d]) return err;
    const float* r = R + (size_t)d * GH * P;
    if (op->type == OP_GRU) {
      p->r[d] = packed(m, op, 2 * H, H, r, 1, H, 0, &err);
      if (p->r[d]) p->rh[d] = packed(m, op, H, H, r + 2 * H * H, 1, H, lbr ? bias + GH + 2 * H : 0, &err);
      if (!p->r[d] || !p->rh[d]) return err;
    } else {
      p->r[d] = packed(m, op, GH, P, r, 1, P, 0, &err);
      if (!p->r[d]) return err;
    }
    if (PW) {
      p->proj[d] = packed(m, op, P, H, PW + (size_t)d * P * H, 1, H, PB ? PB + (size_t)d * P : 0, &err);
      if (!p->proj[d]) return err;
    }
  }
  return WRT_OK;
}

/* TFLite's layer-normalized gate: (v - mean) / sqrt(var + 1e-8) * coef + bias, in double */
static void layer_norm(float* v, size_t n, const float* coef, const float* bias) {
  double s = 0, q = 0;
  for (size_t i = 0; i < n; i++) s += v[i];
  double mean = s / (double)n;
  for (size_t i = 0; i < n; i++) q += ((double)v[i] - mean) * ((double)v[i] - mean);
  double inv = 1 / rt_sqrt(q / (double)n + 1e-8);
  for (size_t i = 0; i < n; i++) v[i] = (float)(((double)v[i] - mean) * inv * coef[i] + bias[i]);
}

static int read_lengths(wrt_model* m, wrt_op* op, int64_t* lens) {
  const wrt_rnn_dims* g = &op->u.rnn.g;
  for (int64_t b = 0; b < g->b; b++) {
    int64_t v = g->t;
    if (has(op, 4)) {
      const wrt_tensor* s = &m->t[op->in[4]];
      v = s->dtype == WRT_I32 ? ((const int32_t*)s->data)[b] : ((const int64_t*)s->data)[b];
    }
    if (v < 0 || v > g->t)
      return op_fail(op, WRT_ERR_INPUT, "seq_lens[%l] = %l is outside [0, %l]", b, v, g->t);
    lens[b] = v;
  }
  return WRT_OK;
}

int run_rnn(wrt_model* m, wrt_op* op) {
  const wrt_rnn_plan* p = &op->u.rnn;
  const wrt_rnn_dims* g = &p->g;
  size_t T = (size_t)g->t, B = (size_t)g->b, I = (size_t)g->i, H = (size_t)g->h, P = (size_t)g->p,
         D = (size_t)g->d, GH = (size_t)g->gates * H, MX = H > P ? H : P;
  int lstm = op->type == OP_LSTM, gru = op->type == OP_GRU;
  const float* x = t_f32(m, op->in[0]);
  float *y = t_f32(m, op->outs[0]), *yh = t_f32(m, op->outs[1]), *yc = lstm ? t_f32(m, op->outs[2]) : 0;
  const float *h0 = has(op, 5) ? t_f32(m, op->in[5]) : 0, *c0 = lstm && has(op, 6) ? t_f32(m, op->in[6]) : 0;
  const float *peep = lstm && has(op, 7) ? t_f32(m, op->in[7]) : 0, *lnc = lstm && has(op, 10) ? t_f32(m, op->in[10]) : 0;
  float* xw = m->scratch;
  float *rec = xw + T * B * GH, *h = rec + B * GH, *hn = h + B * P, *c = hn + B * P, *hp = c + B * MX,
        *tmp = hp + B * MX;
  size_t lv_at = (size_t)(tmp + B * MX - xw + 1) / 2 * 2; /* 8-byte aligned: the scratch is 64-byte aligned */
  int64_t* lv = (int64_t*)(void*)(xw + lv_at);
  int e;
  if ((e = read_lengths(m, op, lv))) return e;
  int64_t maxlen = 0;
  for (size_t b = 0; b < B; b++) maxlen = lv[b] > maxlen ? lv[b] : maxlen;
  const wrt_clamp none = {-__builtin_inff(), __builtin_inff()};
  const wrt_attrs* a = &op->a;
  int coupling = lstm ? a->coupling : 0;
  for (size_t d = 0; d < D; d++) {
    int reverse = a->direction == WRT_Direction_REVERSE || (a->direction == WRT_Direction_BIDIRECTIONAL && d == 1);
    act_fn f = activation(op, (int)d, 0), gg = activation(op, (int)d, 1), hf = lstm ? activation(op, (int)d, 2) : f;
    /* every step's input product at once: [T*B, GH] */
    run_gemm(m->tg, T * B, GH, I, x, I * sizeof(float), p->w[d], xw, GH * sizeof(float), &none, 0, op_threads(m, op));
    for (size_t b = 0; b < B; b++) {
      for (size_t k = 0; k < P; k++) h[b * P + k] = h0 ? h0[(d * B + b) * P + k] : 0.0f;
      if (lstm)
        for (size_t k = 0; k < H; k++) c[b * H + k] = c0 ? c0[(d * B + b) * H + k] : 0.0f;
      for (size_t t = (size_t)lv[b]; t < T; t++) rt_zero(y + ((t * D + d) * B + b) * P, P * sizeof(float));
    }
    for (int64_t s = 0; s < maxlen; s++) { /* one step's products are too small to share out: 1 thread */
      run_gemm(m->tg, B, gru ? 2 * H : GH, P, h, P * sizeof(float), p->r[d], rec, GH * sizeof(float), &none, 0, 1);
      if (gru && a->linear_before_reset) /* r * (Rh h + Rbh): Rh h needed before r is known */
        run_gemm(m->tg, B, H, H, h, H * sizeof(float), p->rh[d], rec + 2 * H, GH * sizeof(float), &none, 0, 1);
      for (size_t b = 0; b < B; b++) {
        if (s >= lv[b]) continue;
        size_t t = reverse ? (size_t)(lv[b] - 1 - s) : (size_t)s;
        float* gt = rec + b * GH;
        const float* xr = xw + (t * B + b) * GH;
        if (op->type == OP_RNN) {
          for (size_t k = 0; k < H; k++) gt[k] += xr[k];
          clip(gt, H, a->clip);
          apply(m, f, gt, H);
          rt_copy(hn + b * P, gt, H * sizeof(float));
          continue;
        }
        if (gru) {
          float *z = gt, *r = gt + H, *hh = gt + 2 * H, *hb = h + b * H;
          for (size_t k = 0; k < 2 * H; k++) gt[k] += xr[k];
          clip(gt, 2 * H, a->clip);
          apply(m, f, gt, 2 * H);
          if (a->linear_before_reset)
            for (size_t k = 0; k < H; k++) hh[k] = xr[2 * H + k] + r[k] * hh[k];
          else
            for (size_t k = 0; k < H; k++) tmp[b * H + k] = r[k] * hb[k]; /* (r * h) Rh, below */
          (void)z;
          continue;
        }
        /* LSTM: gates i, o, f, c */
        float *gi = gt, *go = gt + H, *gf = gt + 2 * H, *gc = gt + 3 * H, *cb = c + b * H;
        for (size_t k = 0; k < GH; k++) gt[k] += xr[k];
        if (peep)
          for (size_t k = 0; k < H; k++) {
            gi[k] += peep[d * 3 * H + k] * cb[k];
            gf[k] += peep[d * 3 * H + 2 * H + k] * cb[k];
          }
        static const int order[3] = {0, 2, 3}; /* i, f, c before the cell update; o after */
        for (int q = 0; q < 3; q++) {
          int k = order[q];
          if ((k == 0 && coupling == WRT_Coupling_INPUT_FROM_FORGET) ||
              (k == 2 && coupling == WRT_Coupling_FORGET_FROM_INPUT))
            continue;
          float* v = gt + (size_t)k * H;
          if (lnc) layer_norm(v, H, lnc + (d * 4 + (size_t)k) * H, p->bias[d] + (size_t)k * H);
          clip(v, H, a->clip);
          apply(m, k == 3 ? gg : f, v, H);
        }
        if (coupling == WRT_Coupling_INPUT_FROM_FORGET)
          for (size_t k = 0; k < H; k++) gi[k] = 1.0f - gf[k];
        if (coupling == WRT_Coupling_FORGET_FROM_INPUT)
          for (size_t k = 0; k < H; k++) gf[k] = 1.0f - gi[k];
        for (size_t k = 0; k < H; k++) cb[k] = gf[k] * cb[k] + gi[k] * gc[k];
        clip(cb, H, a->cell_clip);
        if (peep)
          for (size_t k = 0; k < H; k++) go[k] += peep[d * 3 * H + H + k] * cb[k];
        if (lnc) layer_norm(go, H, lnc + (d * 4 + 1) * H, p->bias[d] + H);
        clip(go, H, a->clip);
        apply(m, f, go, H);
        float* hv = hp + b * MX;
        rt_copy(hv, cb, H * sizeof(float));
        apply(m, hf, hv, H);
        for (size_t k = 0; k < H; k++) hv[k] *= go[k];
      }
      if (gru) {
        if (!a->linear_before_reset)
          run_gemm(m->tg, B, H, H, tmp, H * sizeof(float), p->rh[d], rec + 2 * H, GH * sizeof(float), &none, 0, 1);
        for (size_t b = 0; b < B; b++) {
          if (s >= lv[b]) continue;
          size_t t = reverse ? (size_t)(lv[b] - 1 - s) : (size_t)s;
          float *gt = rec + b * GH, *z = gt, *hh = gt + 2 * H, *hb = h + b * H;
          if (!a->linear_before_reset)
            for (size_t k = 0; k < H; k++) hh[k] += xw[(t * B + b) * GH + 2 * H + k];
          clip(hh, H, a->clip);
          apply(m, gg, hh, H);
          for (size_t k = 0; k < H; k++) hn[b * H + k] = (1.0f - z[k]) * hh[k] + z[k] * hb[k];
        }
      }
      if (lstm) {
        if (p->proj[d]) {
          run_gemm(m->tg, B, P, H, hp, MX * sizeof(float), p->proj[d], hn, P * sizeof(float), &none, 0, 1);
          for (size_t b = 0; b < B; b++) clip(hn + b * P, P, a->proj_clip);
        } else {
          for (size_t b = 0; b < B; b++) rt_copy(hn + b * P, hp + b * MX, H * sizeof(float));
        }
      }
      for (size_t b = 0; b < B; b++) { /* the new states of the rows still running, and their outputs */
        if (s >= lv[b]) continue;
        size_t t = reverse ? (size_t)(lv[b] - 1 - s) : (size_t)s;
        rt_copy(h + b * P, hn + b * P, P * sizeof(float));
        rt_copy(y + ((t * D + d) * B + b) * P, hn + b * P, P * sizeof(float));
      }
    }
    for (size_t b = 0; b < B; b++) {
      int ran = lv[b] > 0;
      for (size_t k = 0; k < P; k++) yh[(d * B + b) * P + k] = ran ? h[b * P + k] : 0.0f;
      if (lstm)
        for (size_t k = 0; k < H; k++) yc[(d * B + b) * H + k] = ran ? c[b * H + k] : 0.0f;
    }
  }
  return WRT_OK;
}
