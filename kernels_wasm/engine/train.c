/* Training steps over caller memory: the gradients of a fully connected layer, activation gradients, the losses and
 * the optimizer updates of python_ref/train, on the target's generated kernels (kernels_wasm/gen/kernels/train.py).
 * Hosts orchestrate a step (the Python and JS trainers); the work is here. One thread: every kernel's chains run in
 * a fixed order, so the bytes never depend on a thread count. */
#include "engine.h"

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

int wrt_train_dense_forward(int rows, int cin, int cout, const float* x, const float* w, const float* b,
                            float act_min, float act_max, float* wt, float* y) {
  const wrt_target* tg = train_target();
  if (!tg) return WRT_ERR_UNSUPPORTED;
  if (bad_sizes(rows, cin, cout)) return WRT_ERR_INPUT;
  if (!x || !w || !wt || !y) return rt_error(WRT_ERR_INPUT, "training: a NULL buffer");
  for (int o = 0; o < cout; o++)
    for (int k = 0; k < cin; k++) wt[(size_t)k * cout + o] = w[(size_t)o * cin + k];
  for (int r = 0; r < rows; r++)
    for (int o = 0; o < cout; o++) y[(size_t)r * cout + o] = b ? b[o] : 0.0f;
  tg->tgemm((size_t)rows, (size_t)cout, (size_t)cin, x, (size_t)cin, 1, wt, (size_t)cout, y, (size_t)cout, 1);
  if (act_min > -__builtin_inff() || act_max < __builtin_inff()) {
    size_t n = (size_t)rows * cout;
    for (size_t i = 0; i < n; i++) y[i] = y[i] < act_min ? act_min : y[i] > act_max ? act_max : y[i];
  }
  return WRT_OK;
}

int wrt_train_dense_backward(int rows, int cin, int cout, const float* x, const float* w, const float* y,
                             float act_min, float act_max, float* dy, float* dx, float* dw, float* db) {
  const wrt_target* tg = train_target();
  if (!tg) return WRT_ERR_UNSUPPORTED;
  if (bad_sizes(rows, cin, cout)) return WRT_ERR_INPUT;
  if (!x || !w || !dy || (act_min > -__builtin_inff() || act_max < __builtin_inff() ? !y : 0))
    return rt_error(WRT_ERR_INPUT, "training: a NULL buffer");
  size_t n = (size_t)rows * cout;
  if (act_min > -__builtin_inff() || act_max < __builtin_inff()) { /* the fused clamp: dy in place */
    const float bounds[2] = {act_min, act_max};
    tg->grad[WRT_GRAD_CLAMP](n, y, dy, dy, bounds);
  }
  static const float one = 1.0f;
  if (dx) tg->tgemm((size_t)rows, (size_t)cin, (size_t)cout, dy, (size_t)cout, 1, w, (size_t)cin, dx, (size_t)cin, 0);
  if (dw) tg->tgemm((size_t)cout, (size_t)cin, (size_t)rows, dy, 1, (size_t)cout, x, (size_t)cin, dw, (size_t)cin, 0);
  if (db) tg->tgemm(1, (size_t)cout, (size_t)rows, &one, 0, 0, dy, (size_t)cout, db, (size_t)cout, 0);
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
