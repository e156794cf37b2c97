/* MEAN, REDUCE_SUM, REDUCE_MAX over any set of axes, and SOFTMAX; sums and exponentials in double, as python_ref. */
#include "engine.h"

int plan_reduce(wrt_model* m, wrt_op* op, wrt_cost* c) {
  const wrt_tensor *x = &m->t[op->in[0]], *y = &m->t[op->out];
  if (op->type == OP_LAYER_NORM) {
    c->work += 3 * WORK_SCALAR * x->count;
    return WRT_OK;
  }
  if (op->type == OP_SOFTMAX) { /* an exp in double per element: a few dozen units each */
    int ax = op->a.axis < 0 ? op->a.axis + x->rank : op->a.axis;
    c->scratch = (uint64_t)x->dims[ax] * sizeof(double);
    c->work += WORK_LIBM * x->count;
  } else {
    c->scratch = y->count * sizeof(double);
    c->work += WORK_SCALAR * (x->count + y->count);
  }
  return WRT_OK;
}

static int run_softmax(wrt_model* m, wrt_op* op) {
  const wrt_tensor* xt = &m->t[op->in[0]];
  int ax = op->a.axis < 0 ? op->a.axis + xt->rank : op->a.axis;
  size_t outer = 1, inner = 1, L = (size_t)xt->dims[ax];
  for (int i = 0; i < ax; i++) outer *= (size_t)xt->dims[i];
  for (int i = ax + 1; i < xt->rank; i++) inner *= (size_t)xt->dims[i];
  const float* x = t_f32(m, op->in[0]);
  float* y = t_f32(m, op->out);
  double* e = (double*)m->scratch;
  for (size_t o = 0; o < outer; o++)
    for (size_t i = 0; i < inner; i++) {
      const float* xs = x + o * L * inner + i;
      float* ys = y + o * L * inner + i;
      float mx = -__builtin_inff();
      for (size_t l = 0; l < L; l++) mx = rt_maxf(mx, xs[l * inner]);
      double sum = 0;
      for (size_t l = 0; l < L; l++) sum += e[l] = rt_exp((double)xs[l * inner] - (double)mx);
      for (size_t l = 0; l < L; l++) ys[l * inner] = (float)(e[l] / sum);
    }
  return WRT_OK;
}

/* LAYER_NORM: per row of the normalized axes, mean and biased variance in double, then scale and bias (broadcast
 * over the row: their element strides are 0 on the axes they lack or have of size 1) */
static void row_strides(const wrt_model* m, int ti, const wrt_tensor* x, int ax, int64_t* st) {
  const wrt_tensor* t = &m->t[ti];
  int64_t s = 1;
  for (int i = x->rank - 1; i >= ax; i--) {
    int it = i - (x->rank - t->rank);
    int64_t d = it >= 0 ? t->dims[it] : 1;
    st[i - ax] = d == 1 ? 0 : s;
    s *= d;
  }
}

static int run_layer_norm(wrt_model* m, wrt_op* op) {
  const wrt_tensor* xt = &m->t[op->in[0]];
  int ax = op->a.axis < 0 ? op->a.axis + xt->rank : op->a.axis, nr = xt->rank - ax;
  size_t L = 1;
  for (int i = ax; i < xt->rank; i++) L *= (size_t)xt->dims[i];
  size_t rows = L ? (size_t)xt->count / L : 0;
  const float* x = t_f32(m, op->in[0]);
  float* y = t_f32(m, op->out);
  int has_s = op->n_in > 1 && op->in[1] >= 0, has_b = op->n_in > 2 && op->in[2] >= 0;
  const float *sc = has_s ? t_f32(m, op->in[1]) : 0, *bi = has_b ? t_f32(m, op->in[2]) : 0;
  int64_t ss[WRT_MAX_RANK] = {0}, bs[WRT_MAX_RANK] = {0};
  if (has_s) row_strides(m, op->in[1], xt, ax, ss);
  if (has_b) row_strides(m, op->in[2], xt, ax, bs);
  double eps = op->a.epsilon;
  for (size_t r = 0; r < rows; r++) {
    const float* xr = x + r * L;
    float* yr = y + r * L;
    double sum = 0, sq = 0;
    for (size_t j = 0; j < L; j++) sum += xr[j];
    double mean = sum / (double)L;
    for (size_t j = 0; j < L; j++) sq += ((double)xr[j] - mean) * ((double)xr[j] - mean);
    double inv = 1 / rt_sqrt(sq / (double)L + eps);
    int64_t idx[WRT_MAX_RANK] = {0}, so = 0, bo = 0;
    for (size_t j = 0; j < L; j++) {
      double v = ((double)xr[j] - mean) * inv;
      if (has_s) v *= sc[so];
      if (has_b) v += bi[bo];
      yr[j] = (float)v;
      for (int i = nr - 1; i >= 0; i--) { /* next position in the normalized axes */
        so += ss[i];
        bo += bs[i];
        if (++idx[i] < xt->dims[ax + i]) break;
        so -= ss[i] * xt->dims[ax + i];
        bo -= bs[i] * xt->dims[ax + i];
        idx[i] = 0;
      }
    }
  }
  return WRT_OK;
}

/* acc[j] += x[j] in double. In the SIMD wasm builds (-Oz: nothing is vectorized for us) two at a time on f64x2:
 * the same additions in the same order, each sum running over the rows in turn. A squeeze-and-excitation MEAN over
 * a 120x160x96 map took 1.1 ms one element at a time. Native builds vectorize the plain loop themselves (-O3). */
static void add_row(double* acc, const float* x, size_t n) {
  size_t j = 0;
#ifdef __wasm_simd128__
  typedef float f32x2_t __attribute__((vector_size(8)));
  typedef double f64x2_t __attribute__((vector_size(16)));
  for (; j + 2 <= n; j += 2) {
    f32x2_t v;
    f64x2_t a;
    __builtin_memcpy(&v, x + j, sizeof v);
    __builtin_memcpy(&a, acc + j, sizeof a);
    a += __builtin_convertvector(v, f64x2_t);
    __builtin_memcpy(acc + j, &a, sizeof a);
  }
#endif
  for (; j < n; j++) acc[j] += x[j];
}

int run_reduce(wrt_model* m, wrt_op* op) {
  if (op->type == OP_SOFTMAX) return run_softmax(m, op);
  if (op->type == OP_LAYER_NORM) return run_layer_norm(m, op);
  const wrt_tensor* xt = &m->t[op->in[0]];
  const wrt_tensor* yt = &m->t[op->out];
  const float* x = t_f32(m, op->in[0]);
  float* y = t_f32(m, op->out);
  int r = xt->rank;
  uint8_t red[WRT_MAX_RANK] = {0};
  for (int i = 0; i < r; i++) red[i] = op->a.n_list == 0;
  for (int i = 0; i < op->a.n_list; i++) red[op->a.list[i] < 0 ? op->a.list[i] + r : op->a.list[i]] = 1;
  /* output strides over the input axes: 0 on reduced axes */
  size_t ostride[WRT_MAX_RANK], s = 1, reduced = 1;
  for (int i = r - 1; i >= 0; i--) {
    ostride[i] = red[i] ? 0 : s;
    if (red[i]) reduced *= (size_t)xt->dims[i];
    else s *= (size_t)xt->dims[i];
  }
  size_t nout = (size_t)yt->count;
  int is_max = op->type == OP_REDUCE_MAX;
  double* acc = (double*)m->scratch;
  for (size_t i = 0; i < nout; i++) {
    if (is_max) y[i] = -__builtin_inff();
    else acc[i] = 0;
  }
  if (xt->count == 0) goto done;
  if (r == 0) { /* a scalar reduces to itself */
    if (is_max) y[0] = x[0];
    else acc[0] = x[0];
    goto done;
  }
  {
    size_t n = (size_t)xt->dims[r - 1], rows = (size_t)xt->count / n, idx[WRT_MAX_RANK] = {0};
    int last_red = red[r - 1];
    for (size_t row = 0; row < rows; row++) {
      size_t o = 0;
      for (int i = 0; i < r - 1; i++) o += idx[i] * ostride[i];
      const float* xr = x + row * n;
      if (is_max) {
        if (last_red) {
          float v = y[o];
          for (size_t j = 0; j < n; j++) v = rt_maxf(v, xr[j]);
          y[o] = v;
        } else {
          for (size_t j = 0; j < n; j++) y[o + j] = rt_maxf(y[o + j], xr[j]);
        }
      } else if (last_red) {
        double v = 0;
        for (size_t j = 0; j < n; j++) v += xr[j];
        acc[o] += v;
      } else {
        add_row(acc + o, xr, n);
      }
      for (int i = r - 2; i >= 0; i--) {
        if (++idx[i] < (size_t)xt->dims[i]) break;
        idx[i] = 0;
      }
    }
  }
done:
  if (!is_max) {
    double div = op->type == OP_MEAN ? (double)(reduced ? reduced : 1) : 1.0;
    for (size_t i = 0; i < nout; i++) y[i] = (float)(acc[i] / div);
  }
  return WRT_OK;
}
