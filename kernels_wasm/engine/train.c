/* Training steps over caller memory: the gradients of a fully connected layer, activation gradients, the losses and
 * the optimizer updates of python_ref/train, on the target's generated kernels (kernels_wasm/gen/kernels/train.py).
 * Hosts orchestrate a step (the Python and JS trainers); the work is here. One thread: every kernel's chains run in
 * a fixed order, so the bytes never depend on a thread count. */
#include "engine.h"

#if !defined(WRT_KF_TRAIN) || WRT_KF_TRAIN
static const wrt_target* train_target(void) {
  const wrt_target* tg = pick_target();
  if (!tg->tgemm || !tg->sgd || !tg->adam) {
    rt_error(WRT_ERR_UNSUPPORTED, "this module was built without the training kernels (wasmrt build --for trims them)");
    return 0;
  }
  return tg;
}

static int bad_sizes(int a, int b, int c) {
  return a <= 0 || b <= 0 || c <= 0 ? rt_error(WRT_ERR_INPUT, "training: sizes must be positive, got %d, %d, %d",
                                               a, b, c) : 0;
}

static int has_clamp(float lo, float hi) { return lo > -__builtin_inff() || hi < __builtin_inff(); }

/* y [rows, cout] = clamp(a w^T + b), group by group: a holds each group's [rows, k] operand one after the other
 * (a fully connected layer: one group, a = x), w [cout, k]; wt: k * cout floats of scratch */
static void forward_groups(const wrt_target* tg, size_t rows, size_t k, size_t cout, size_t groups, const float* a,
                           const float* w, const float* b, float lo, float hi, float* wt, float* y) {
  size_t og = cout / groups;
  for (size_t o = 0; o < cout; o++) /* wt [k, cout]: each group's weights transposed side by side */
    for (size_t t = 0; t < k; t++) wt[t * cout + o] = w[o * k + t];
  for (size_t r = 0; r < rows; r++)
    for (size_t o = 0; o < cout; o++) y[r * cout + o] = b ? b[o] : 0.0f;
  for (size_t gi = 0; gi < groups; gi++)
    tg->tgemm(rows, og, k, a + gi * rows * k, k, 1, wt + gi * og, cout, y + gi * og, cout, 1);
  if (has_clamp(lo, hi))
    for (size_t i = 0; i < rows * cout; i++) y[i] = y[i] < lo ? lo : y[i] > hi ? hi : y[i];
}

/* dy (masked by the clamp in place, from y) -> per group dw = dy^T a, da = dy w (da NULL: none); db = sum dy */
static void backward_groups(const wrt_target* tg, size_t rows, size_t k, size_t cout, size_t groups, const float* a,
                            const float* w, const float* y, float lo, float hi, float* dy, float* da, float* dw,
                            float* db) {
  size_t og = cout / groups;
  if (has_clamp(lo, hi)) {
    const float bounds[2] = {lo, hi};
    tg->grad[WRT_GRAD_CLAMP](rows * cout, y, dy, dy, bounds);
  }
  static const float one = 1.0f;
  if (db) tg->tgemm(1, cout, rows, &one, 0, 0, dy, cout, db, cout, 0);
  for (size_t gi = 0; gi < groups; gi++) {
    const float* dyg = dy + gi * og;
    if (dw) tg->tgemm(og, k, rows, dyg, 1, cout, a + gi * rows * k, k, dw + gi * og * k, k, 0);
    if (da) tg->tgemm(rows, k, og, dyg, cout, 1, w + gi * og * k, k, da + gi * rows * k, k, 0);
  }
}

int wrt_train_dense_forward(int rows, int cin, int cout, const float* x, const float* w, const float* b,
                            float act_min, float act_max, float* wt, float* y) {
  const wrt_target* tg = train_target();
  if (!tg) return WRT_ERR_UNSUPPORTED;
  if (bad_sizes(rows, cin, cout)) return WRT_ERR_INPUT;
  if (!x || !w || !wt || !y) return rt_error(WRT_ERR_INPUT, "training: a NULL buffer");
  forward_groups(tg, (size_t)rows, (size_t)cin, (size_t)cout, 1, x, w, b, act_min, act_max, wt, y);
  return WRT_OK;
}

int wrt_train_dense_backward(int rows, int cin, int cout, const float* x, const float* w, const float* y,
                             float act_min, float act_max, float* dy, float* dx, float* dw, float* db) {
  const wrt_target* tg = train_target();
  if (!tg) return WRT_ERR_UNSUPPORTED;
  if (bad_sizes(rows, cin, cout)) return WRT_ERR_INPUT;
  if (!x || !w || !dy || (has_clamp(act_min, act_max) && !y)) return rt_error(WRT_ERR_INPUT, "training: a NULL buffer");
  backward_groups(tg, (size_t)rows, (size_t)cin, (size_t)cout, 1, x, w, y, act_min, act_max, dy, dx, dw, db);
  return WRT_OK;
}

int wrt_train_grad(int op, size_t n, const float* v, const float* dy, float* dx, float lo, float hi) {
  const wrt_target* tg = train_target();
  if (!tg) return WRT_ERR_UNSUPPORTED;
  if (!v || !dy || !dx) return rt_error(WRT_ERR_INPUT, "training: a NULL buffer");
  float bounds[2] = {lo, hi};
  int kernel;
  switch (op) { /* the forward op (OP_* of python_ref/opdefs.py) -> its gradient kernel */
    case OP_RELU: kernel = WRT_GRAD_CLAMP, bounds[0] = 0.0f, bounds[1] = __builtin_inff(); break;
    case OP_CLIP: kernel = WRT_GRAD_CLAMP; break;
    case OP_HARD_SWISH: kernel = WRT_GRAD_HARD_SWISH; break; /* v: the forward's input */
    case OP_SIGMOID: kernel = WRT_GRAD_SIGMOID; break;       /* v: the forward's output */
    case OP_TANH: kernel = WRT_GRAD_TANH; break;
    default: return rt_error(WRT_ERR_UNSUPPORTED, "training: no activation gradient for op code %d", op);
  }
  tg->grad[kernel](n, v, dy, dx, bounds);
  return WRT_OK;
}

static int finite_loss(float loss) {
  return loss - loss == 0.0f ? WRT_OK
                             : rt_error(WRT_ERR_TRAINING, "the loss diverged (%g): lower the learning rate or check "
                                        "the data", (double)loss);
}

/* mean over rows of -log softmax(z)[label] in double; dz = (softmax(z) - onehot) / rows, rounded once */
int wrt_train_softmax_xent(int rows, int classes, const float* z, const int32_t* labels, float* dz, float* loss) {
  if (bad_sizes(rows, classes, 1)) return WRT_ERR_INPUT;
  if (!z || !labels || !dz || !loss) return rt_error(WRT_ERR_INPUT, "training: a NULL buffer");
  for (int r = 0; r < rows; r++)
    if (labels[r] < 0 || labels[r] >= classes)
      return rt_error(WRT_ERR_INPUT, "label %d of sample %d is not a class index 0..%d", labels[r], r, classes - 1);
  double total = 0.0;
  for (int r = 0; r < rows; r++) {
    const float* zr = z + (size_t)r * classes;
    double mx = zr[0], s = 0.0;
    for (int c = 1; c < classes; c++) mx = zr[c] > mx ? zr[c] : mx;
    for (int c = 0; c < classes; c++) s += rt_exp((double)zr[c] - mx);
    double lse = rt_log(s);
    total -= (double)zr[labels[r]] - mx - lse;
    for (int c = 0; c < classes; c++) {
      double p = rt_exp((double)zr[c] - mx - lse);
      dz[(size_t)r * classes + c] = (float)((p - (c == labels[r] ? 1.0 : 0.0)) / rows);
    }
  }
  *loss = (float)(total / rows);
  return finite_loss(*loss);
}

/* mean over n of (y - t)^2 in double; dy = 2 (y - t) / n */
int wrt_train_mse(size_t n, const float* y, const float* t, float* dy, float* loss) {
  if (!n || !y || !t || !dy || !loss) return rt_error(WRT_ERR_INPUT, "training: empty or NULL buffer");
  double s = 0.0;
  for (size_t i = 0; i < n; i++) {
    double d = (double)y[i] - (double)t[i];
    s += d * d;
    dy[i] = (float)(2.0 * d / (double)n);
  }
  *loss = (float)(s / (double)n);
  return finite_loss(*loss);
}

int wrt_train_sgd(size_t n, float* p, const float* g, float* buf, float lr, float momentum, float weight_decay) {
  const wrt_target* tg = train_target();
  if (!tg) return WRT_ERR_UNSUPPORTED;
  if (!p || !g || !buf) return rt_error(WRT_ERR_INPUT, "training: a NULL buffer");
  if (!(lr > 0.0f) || !(momentum >= 0.0f && momentum < 1.0f) || !(weight_decay >= 0.0f))
    return rt_error(WRT_ERR_INPUT, "sgd: lr > 0, momentum in [0, 1), weight_decay >= 0");
  const float params[3] = {lr, momentum, weight_decay};
  tg->sgd(n, p, g, buf, params);
  return WRT_OK;
}

int wrt_train_adam(size_t n, float* p, const float* g, float* m, float* v, float lr, float b1, float b2, float eps,
                   float weight_decay, int step) {
  const wrt_target* tg = train_target();
  if (!tg) return WRT_ERR_UNSUPPORTED;
  if (!p || !g || !m || !v) return rt_error(WRT_ERR_INPUT, "training: a NULL buffer");
  if (!(lr > 0.0f) || !(b1 >= 0.0f && b1 < 1.0f) || !(b2 >= 0.0f && b2 < 1.0f) || !(eps > 0.0f) ||
      !(weight_decay >= 0.0f) || step < 1)
    return rt_error(WRT_ERR_INPUT, "adam: lr > 0, betas in [0, 1), eps > 0, weight_decay >= 0, step >= 1");
  const float params[7] = {lr, b1, b2, eps, weight_decay, (float)(1.0 - rt_pow(b1, step)),
                           (float)(1.0 - rt_pow(b2, step))};
  tg->adam(n, p, g, m, v, params);
  return WRT_OK;
}

/* CONV_2D, NHWC input [n, h, w, cin], weights OHWI [cout, kh, kw, cin / groups]. geo: oh, ow, kh, kw, sh, sw, dh, dw,
 * pt, pl (the output size fixes the bottom and right padding), then groups for a convolution; an average pooling's
 * pb, pr and count_include_pad. The patches of group g (im2col, [n*oh*ow, kh*kw*cin/groups], zero where a tap reads
 * padding) follow each other in cols: the forward's and the backward's A operand. Output channels
 * [g*cout/groups, (g+1)*cout/groups) read input channels [g*cin/groups, ...): groups == cin is a depthwise one. */
typedef struct { int n, h, w, cin, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl; } conv_geo;

static int read_geo(conv_geo* g, int n, int h, int w, int cin, const int32_t* geo) {
  if (!geo) return rt_error(WRT_ERR_INPUT, "training: no geometry");
  *g = (conv_geo){n, h, w, cin, geo[0], geo[1], geo[2], geo[3], geo[4], geo[5], geo[6], geo[7], geo[8], geo[9]};
  if (n <= 0 || h <= 0 || w <= 0 || cin <= 0 || g->oh <= 0 || g->ow <= 0 || g->kh <= 0 || g->kw <= 0 || g->sh <= 0 ||
      g->sw <= 0 || g->dh <= 0 || g->dw <= 0 || g->pt < 0 || g->pl < 0)
    return rt_error(WRT_ERR_INPUT, "training: bad window geometry");
  return WRT_OK;
}

static int read_groups(const int32_t* geo, int cin, int cout) {
  int groups = geo[10];
  if (groups <= 0 || cin % groups || cout % groups)
    return rt_error(WRT_ERR_INPUT, "training: %d groups for %d, %d channels", groups, cin,
                    cout), 0;
  return groups;
}

/* the input row and column of output pixel (r, c)'s tap (i, j), or -1 in the padding */
static int tap_at(int o, int k, int s, int d, int p, int size) {
  int v = o * s + k * d - p;
  return v >= 0 && v < size ? v : -1;
}

/* channels [c0, c0 + cg) of x into cols [n*oh*ow, kh*kw*cg] (col2im: the transpose, adding dcols into dx). The
 * input row of a tap is found once per output row and kernel row, its column inline: this runs per tap. */
static void im2col(const conv_geo* g, int c0, int cg, const float* x, float* cols, int back) {
  size_t kk = (size_t)g->kh * g->kw * cg;
  for (int b = 0; b < g->n; b++)
    for (int r = 0; r < g->oh; r++)
      for (int i = 0; i < g->kh; i++) {
        int y = tap_at(r, i, g->sh, g->dh, g->pt, g->h);
        for (int c = 0; c < g->ow; c++) {
          float* col = cols + (((size_t)b * g->oh + r) * g->ow + c) * kk + (size_t)i * g->kw * cg;
          for (int j = 0, xx = c * g->sw - g->pl; j < g->kw; j++, xx += g->dw, col += cg) {
            float* src = y >= 0 && xx >= 0 && xx < g->w  /* NULL: the tap reads padding */
                             ? (float*)x + (((size_t)b * g->h + y) * g->w + xx) * g->cin + c0 : 0;
            if (back) {
              if (src) /* the padding's share is dropped */
                for (int ch = 0; ch < cg; ch++) src[ch] += col[ch];
            } else {
              for (int ch = 0; ch < cg; ch++) col[ch] = src ? src[ch] : 0.0f;
            }
          }
        }
      }
}

int wrt_train_conv_forward(int n, int h, int w, int cin, int cout, const int32_t* geo, const float* x,
                           const float* wt, const float* b, float act_min, float act_max, float* cols, float* wtt,
                           float* y) {
  conv_geo g;
  const wrt_target* tg = train_target();
  if (!tg) return WRT_ERR_UNSUPPORTED;
  if (read_geo(&g, n, h, w, cin, geo) || bad_sizes(cout, 1, 1)) return WRT_ERR_INPUT;
  int groups = read_groups(geo, cin, cout);
  if (!groups) return WRT_ERR_INPUT;
  if (!x || !wt || !cols || !wtt || !y) return rt_error(WRT_ERR_INPUT, "training: a NULL buffer");
  size_t rows = (size_t)n * g.oh * g.ow, cg = (size_t)(cin / groups), k = (size_t)g.kh * g.kw * cg;
  for (int gi = 0; gi < groups; gi++) im2col(&g, gi * (int)cg, (int)cg, x, cols + gi * rows * k, 0);
  forward_groups(tg, rows, k, (size_t)cout, (size_t)groups, cols, wt, b, act_min, act_max, wtt, y);
  return WRT_OK;
}

/* dy [n*oh*ow, cout] (masked by the fused clamp in place) -> per group dw = dy^T cols, db = sum dy, and
 * dx = col2im(dy w) through dcols (the size of cols; dx and dcols NULL: no input gradient) */
int wrt_train_conv_backward(int n, int h, int w, int cin, int cout, const int32_t* geo, const float* cols,
                            const float* wt, const float* y, float act_min, float act_max, float* dy, float* dcols,
                            float* dx, float* dw, float* db) {
  conv_geo g;
  const wrt_target* tg = train_target();
  if (!tg) return WRT_ERR_UNSUPPORTED;
  if (read_geo(&g, n, h, w, cin, geo) || bad_sizes(cout, 1, 1)) return WRT_ERR_INPUT;
  int groups = read_groups(geo, cin, cout);
  if (!groups) return WRT_ERR_INPUT;
  if (!cols || !wt || !dy || (has_clamp(act_min, act_max) && !y) || (dx && !dcols))
    return rt_error(WRT_ERR_INPUT, "training: a NULL buffer");
  size_t rows = (size_t)n * g.oh * g.ow, cg = (size_t)(cin / groups), k = (size_t)g.kh * g.kw * cg;
  backward_groups(tg, rows, k, (size_t)cout, (size_t)groups, cols, wt, y, act_min, act_max, dy, dx ? dcols : 0, dw,
                  db);
  if (!dx) return WRT_OK;
  for (size_t i = 0, nx = (size_t)n * h * w * cin; i < nx; i++) dx[i] = 0.0f;
  for (int gi = 0; gi < groups; gi++) im2col(&g, gi * (int)cg, (int)cg, dx, dcols + gi * rows * k, 1);
  return WRT_OK;
}

/* how many taps of a window lie in [lo, hi) along one axis */
static int taps_in(int o, int k, int s, int d, int p, int lo, int hi) {
  int cnt = 0;
  for (int i = 0; i < k; i++) {
    int v = o * s + i * d - p;
    cnt += v >= lo && v < hi;
  }
  return cnt;
}

/* MAX_POOL_2D (geo[10] = 0) and AVERAGE_POOL_2D (geo[10] = 1, or 2 with count_include_pad; geo[11], geo[12]: pb, pr)
 * over NHWC [n, h, w, c], geo's first 10 as a convolution's. dy NULL: the forward, out = y [n, oh, ow, c]; else the
 * backward, out = dx [n, h, w, c]. Max: padding never wins; a window's gradient goes to its first tap (row-major)
 * holding the maximum. Average: window sums in double, rounded once; the divisor counts the taps on the input, plus
 * those on the explicit pads with count_include_pad (never the ceil_mode overhang); dx gets dy / divisor at every
 * tap on the input. */
int wrt_train_pool(int n, int h, int w, int c, const int32_t* geo, const float* x, const float* dy, float* out) {
  conv_geo g;
  if (read_geo(&g, n, h, w, c, geo)) return WRT_ERR_INPUT;
  int mode = geo[10], pb = mode ? geo[11] : 0, pr = mode ? geo[12] : 0;
  if (mode < 0 || mode > 2 || pb < 0 || pr < 0) return rt_error(WRT_ERR_INPUT, "training: bad window geometry");
  if ((!x && (!mode || !dy)) || !out) return rt_error(WRT_ERR_INPUT, "training: a NULL buffer");
  if (dy)
    for (size_t i = 0, nx = (size_t)n * h * w * c; i < nx; i++) out[i] = 0.0f;
  enum { CB = 64 }; /* channels per block: the window's running maxima (and where they are) or sums */
  float best[CB];
  double acc[CB];
  size_t at[CB];
  for (int b = 0; b < n; b++)
    for (int r = 0; r < g.oh; r++)
      for (int col = 0; col < g.ow; col++) {
        double div = 1.0;
        if (mode) {
          int lo_r = mode == 2 ? -g.pt : 0, lo_c = mode == 2 ? -g.pl : 0;
          int cnt = taps_in(r, g.kh, g.sh, g.dh, g.pt, lo_r, mode == 2 ? h + pb : h) *
                    taps_in(col, g.kw, g.sw, g.dw, g.pl, lo_c, mode == 2 ? w + pr : w);
          div = cnt > 0 ? (double)cnt : 1.0;
        }
        for (int c0 = 0; c0 < c; c0 += CB) {
          int cn = c - c0 < CB ? c - c0 : CB;
          size_t o = (((size_t)b * g.oh + r) * g.ow + col) * c + c0;
          for (int k = 0; k < cn; k++) /* max: none yet; average: the sums, or each channel's share of dy */
            best[k] = -__builtin_inff(), at[k] = (size_t)-1, acc[k] = mode && dy ? (double)dy[o + k] / div : 0.0;
          for (int i = 0; i < g.kh; i++)
            for (int j = 0; j < g.kw; j++) {
              int yy = tap_at(r, i, g.sh, g.dh, g.pt, h), xx = tap_at(col, j, g.sw, g.dw, g.pl, w);
              if (yy < 0 || xx < 0) continue;
              size_t p = (((size_t)b * h + yy) * w + xx) * c + c0;
              if (!mode) {
                const float* xp = x + p;
                for (int k = 0; k < cn; k++)
                  if (at[k] == (size_t)-1 || xp[k] > best[k]) best[k] = xp[k], at[k] = p + k;
              } else if (dy) {
                for (int k = 0; k < cn; k++) out[p + k] += (float)acc[k];
              } else {
                for (int k = 0; k < cn; k++) acc[k] += x[p + k];
              }
            }
          for (int k = 0; k < cn; k++) {
            if (!dy) out[o + k] = mode ? (float)(acc[k] / div) : best[k];
            else if (!mode && at[k] != (size_t)-1) out[at[k]] += dy[o + k];
          }
        }
      }
  return WRT_OK;
}
#else /* a module built for given models (wasmrt build --for) holds no training, nor exports its steps */
typedef int wrt_no_training;
#endif
