/* Element-wise ops with numpy broadcasting. Shapes are collapsed so the innermost run is contiguous in the output
 * and has stride 0 or 1 in each operand; that covers same-shape, scalar and per-channel cases with one kernel call
 * per run, and anything else with an outer index loop. */
#include "engine.h"

typedef struct {
  int rank;
  size_t dim[WRT_MAX_RANK], sa[WRT_MAX_RANK], sb[WRT_MAX_RANK];
} bcast;

static void operand_strides(const wrt_tensor* t, const wrt_tensor* y, size_t* s) {
  size_t st = 1;
  for (int i = y->rank - 1; i >= 0; i--) {
    int it = i - (y->rank - t->rank);
    size_t d = it >= 0 ? (size_t)t->dims[it] : 1;
    s[i] = d == 1 ? 0 : st;
    st *= d;
  }
}

static void bcast_setup(const wrt_tensor* a, const wrt_tensor* b, const wrt_tensor* y, bcast* bc) {
  size_t sa[WRT_MAX_RANK], sb[WRT_MAX_RANK];
  operand_strides(a, y, sa);
  operand_strides(b, y, sb);
  bc->rank = 0;
  for (int i = 0; i < y->rank; i++) { /* drop size-1 axes, merge an axis into the previous kept one when possible */
    size_t d = (size_t)y->dims[i];
    if (d == 1) continue;
    int r = bc->rank;
    if (r > 0 && bc->sa[r - 1] == sa[i] * d && bc->sb[r - 1] == sb[i] * d) {
      bc->dim[r - 1] *= d;
      bc->sa[r - 1] = sa[i];
      bc->sb[r - 1] = sb[i];
      continue;
    }
    bc->dim[r] = d;
    bc->sa[r] = sa[i];
    bc->sb[r] = sb[i];
    bc->rank++;
  }
  if (bc->rank == 0) { /* a single element */
    bc->rank = 1;
    bc->dim[0] = 1;
    bc->sa[0] = bc->sb[0] = 0;
  }
}

typedef void (*row_fn)(size_t n, const float* a, size_t sa, const float* b, size_t sb, float* y, const void* ctx);

static void bcast_run(const bcast* bc, const float* a, const float* b, float* y, row_fn fn, const void* ctx) {
  int r = bc->rank, last = r - 1;
  size_t n = bc->dim[last], idx[WRT_MAX_RANK] = {0}, rows = 1;
  for (int i = 0; i < last; i++) rows *= bc->dim[i];
  if (n == 0) return;
  for (size_t row = 0; row < rows; row++) {
    size_t oa = 0, ob = 0;
    for (int i = 0; i < last; i++) {
      oa += idx[i] * bc->sa[i];
      ob += idx[i] * bc->sb[i];
    }
    fn(n, a + oa, bc->sa[last], b + ob, bc->sb[last], y + row * n, ctx);
    for (int i = last - 1; i >= 0; i--) {
      if (++idx[i] < bc->dim[i]) break;
      idx[i] = 0;
    }
  }
}

/* ---- binary ops through the kernel table ----------------------------------------------------------------------- */
typedef struct {
  const wrt_target* tg;
  int code, rev;
  const wrt_clamp* clamp;
} bin_ctx;

static float bin_scalar(int code, float a, float b) {
  switch (code) {
    case WRT_BIN_ADD: return a + b;
    case WRT_BIN_SUB: return a - b;
    case WRT_BIN_RSUB: return b - a;
    case WRT_BIN_MUL: return a * b;
    case WRT_BIN_DIV: return a / b;
    case WRT_BIN_RDIV: return b / a;
    case WRT_BIN_MAX: return rt_maxf(a, b);
    case WRT_BIN_PRELU: return a >= 0 ? a : a * b; /* the float product of floats: python_ref's, rounded once */
    default: return rt_minf(a, b);
  }
}

static float clampf(float v, const wrt_clamp* c) {
  v = v < c->min ? c->min : v;
  return v > c->max ? c->max : v;
}

static void bin_row(size_t n, const float* a, size_t sa, const float* b, size_t sb, float* y, const void* vctx) {
  const bin_ctx* c = vctx;
  wrt_vbinary_fn full = c->tg->vbinary[c->code], sc = c->tg->vbinary_scalar[c->code];
  wrt_vbinary_fn rsc = c->rev >= 0 ? c->tg->vbinary_scalar[c->rev] : 0;
  if (sa == 1 && sb == 1 && full) full(n, a, b, y, c->clamp);
  else if (sa == 1 && sb == 0 && sc) sc(n, a, b, y, c->clamp);
  else if (sa == 0 && sb == 1 && rsc) rsc(n, b, a, y, c->clamp);
  else
    for (size_t i = 0; i < n; i++) y[i] = clampf(bin_scalar(c->code, a[i * sa], b[i * sb]), c->clamp);
}

static void pow_row(size_t n, const float* a, size_t sa, const float* b, size_t sb, float* y, const void* ctx) {
  (void)ctx;
  for (size_t i = 0; i < n; i++) y[i] = (float)rt_pow(a[i * sa], b[i * sb]);
}


/* ---- unary ------------------------------------------------------------------------------------------------------ */
static float unary_scalar(int code, float x, const float* p) {
  double d = x;
  switch (code) {
    case WRT_UN_RELU: return x > 0 ? x : (x == x ? 0.0f : x);
    case WRT_UN_CLIP: return x < p[0] ? p[0] : (x > p[1] ? p[1] : x);
    case WRT_UN_LEAKY_RELU: return x >= 0 ? x : (float)(p[0] * d);
    case WRT_UN_HARD_SWISH: { double t = d + 3; t = t < 0 ? 0 : (t > 6 ? 6 : t); return (float)(d * t / 6); }
    case WRT_UN_HARD_SIGMOID: { double t = p[0] * d + p[1]; return (float)(t < 0 ? 0 : (t > 1 ? 1 : t)); }
    case WRT_UN_SIGMOID: { double e = rt_exp(-(d < 0 ? -d : d)); return (float)(d >= 0 ? 1 / (1 + e) : e / (1 + e)); }
    case WRT_UN_TANH: { double e = rt_exp(-2 * (d < 0 ? -d : d)), t = (1 - e) / (1 + e); return (float)(d < 0 ? -t : t); }
    case WRT_UN_EXP: return (float)rt_exp(d);
    case WRT_UN_SQRT: return (float)rt_sqrt(d);
    case WRT_UN_ABS: return x < 0 ? -x : x;
    default: return -x;
  }
}

static int unary_code(int type) {
  switch (type) {
    case OP_RELU: return WRT_UN_RELU;
    case OP_CLIP: return WRT_UN_CLIP;
    case OP_LEAKY_RELU: return WRT_UN_LEAKY_RELU;
    case OP_HARD_SWISH: return WRT_UN_HARD_SWISH;
    case OP_HARD_SIGMOID: return WRT_UN_HARD_SIGMOID;
    case OP_SIGMOID: return WRT_UN_SIGMOID;
    case OP_TANH: return WRT_UN_TANH;
    case OP_EXP: return WRT_UN_EXP;
    case OP_SQRT: return WRT_UN_SQRT;
    case OP_ABS: return WRT_UN_ABS;
    default: return WRT_UN_NEG;
  }
}

static int binary_code(int type, int* rev) {
  switch (type) {
    case OP_ADD: *rev = WRT_BIN_ADD; return WRT_BIN_ADD;
    case OP_SUB: *rev = WRT_BIN_RSUB; return WRT_BIN_SUB;
    case OP_MUL: *rev = WRT_BIN_MUL; return WRT_BIN_MUL;
    case OP_DIV: *rev = WRT_BIN_RDIV; return WRT_BIN_DIV;
    case OP_MAXIMUM: *rev = WRT_BIN_MAX; return WRT_BIN_MAX;
    case OP_PRELU: *rev = -1; return WRT_BIN_PRELU; /* no reversed form: x broadcast over a slope row runs scalar */
    default: *rev = WRT_BIN_MIN; return WRT_BIN_MIN;
  }
}

/* ---- functions without a vector kernel, in double (python_ref's precision, rounded once) ---------------------- */
static int is_double_fn(int type) {
  return type == OP_GELU || type == OP_ERF || type == OP_LOG || type == OP_FLOOR || type == OP_CEIL;
}

static float double_fn(const wrt_op* op, float xf) {
  double x = xf;
  switch (op->type) {
    case OP_GELU:
      if (op->a.mode == WRT_GeluMode_TANH) {
        /* x * sigmoid(2u) = x (1 + tanh u) / 2, with u = sqrt(2/pi) (x + 0.044715 x^3): no cancellation for x < 0 */
        double u = 0.7978845608028654 * (x + 0.044715 * x * x * x), e = rt_exp(-2 * (u < 0 ? -u : u));
        return (float)(x * (u >= 0 ? 1 / (1 + e) : e / (1 + e)));
      }
      return (float)(0.5 * x * (1 + rt_erf(x * 0.7071067811865476)));
    case OP_ERF: return (float)rt_erf(x);
    case OP_LOG: return (float)rt_log(x);
    case OP_FLOOR: return (float)rt_floor(x);
    default: return (float)rt_ceil(x);
  }
}

int plan_elementwise(wrt_model* m, wrt_op* op, wrt_cost* c) {
  /* POW, and unary ops without a vector kernel, compute in double */
  int slow = op->type == OP_POW || is_double_fn(op->type) || (op->n_in == 1 && !m->tg->vunary[unary_code(op->type)]);
  c->work += (slow ? WORK_LIBM : WORK_VEC) * m->t[op->out].count;
  return WRT_OK;
}

int run_elementwise(wrt_model* m, wrt_op* op) {
  const wrt_tensor* y = &m->t[op->out];
  float* yd = t_f32(m, op->out);
  const float* x = t_f32(m, op->in[0]);
  if (is_double_fn(op->type)) {
    for (size_t i = 0; i < y->count; i++) yd[i] = double_fn(op, x[i]);
    return WRT_OK;
  }
  if (op->n_in == 1) {
    float params[2] = {0, 0};
    if (op->type == OP_CLIP) { params[0] = op->a.min; params[1] = op->a.max; }
    if (op->type == OP_LEAKY_RELU) params[0] = op->a.alpha;
    if (op->type == OP_HARD_SIGMOID) { params[0] = op->a.alpha; params[1] = op->a.beta; }
    int code = unary_code(op->type);
    wrt_vunary_fn fn = m->tg->vunary[code];
    if (fn) fn((size_t)y->count, x, yd, params);
    else
      for (size_t i = 0; i < y->count; i++) yd[i] = unary_scalar(code, x[i], params);
    return WRT_OK;
  }
  bcast bc;
  bcast_setup(&m->t[op->in[0]], &m->t[op->in[1]], y, &bc);
  const float* b = t_f32(m, op->in[1]);
  if (op->type == OP_POW) bcast_run(&bc, x, b, yd, pow_row, 0);
  else {
    bin_ctx c = {m->tg, 0, 0, &op->clamp};
    c.code = binary_code(op->type, &c.rev);
    bcast_run(&bc, x, b, yd, bin_row, &c);
  }
  return WRT_OK;
}
