/* Element-wise ops with numpy broadcasting. Shapes are collapsed so the innermost run is contiguous in the output
 * and has stride 0 or 1 in each operand; that covers same-shape, scalar and per-channel cases with one kernel call
 * per run, and anything else with an outer index loop. */
#include "engine.h"

typedef wrt_bcast bcast;

static void operand_strides(const wrt_tensor* t, const wrt_tensor* y, size_t* s) {
  size_t st = 1;
  for (int i = y->rank - 1; i >= 0; i--) {
    int it = i - (y->rank - t->rank);
    size_t d = it >= 0 ? (size_t)t->dims[it] : 1;
    s[i] = d == 1 ? 0 : st;
    st *= d;
  }
}

void bcast_setup(const wrt_tensor* a, const wrt_tensor* b, const wrt_tensor* y, bcast* bc) {
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

/* Tasks of an element-wise run, a fixed function of the shape: about TASK_ELEMS outputs each, as whole rows when
 * rows are short, or segments of a long row. Every element's arithmetic is the same however the rows are cut. */
#define TASK_ELEMS 16384

typedef struct {
  const bcast* bc;
  const float *a, *b;
  float* y;
  row_fn fn;
  const void* ctx;
  size_t n, rows, segs, seg_len, rows_per_task;
} bcast_job;

static void bcast_rows(const bcast_job* j, size_t row0, size_t row1, size_t c0, size_t c1) {
  const bcast* bc = j->bc;
  int last = bc->rank - 1;
  size_t idx[WRT_MAX_RANK] = {0}, rest = row0;
  for (int i = last - 1; i >= 0; i--) { /* the row's index along each outer axis */
    idx[i] = rest % bc->dim[i];
    rest /= bc->dim[i];
  }
  for (size_t row = row0; row < row1; row++) {
    size_t oa = 0, ob = 0;
    for (int i = 0; i < last; i++) {
      oa += idx[i] * bc->sa[i];
      ob += idx[i] * bc->sb[i];
    }
    j->fn(c1 - c0, j->a + oa + c0 * bc->sa[last], bc->sa[last], j->b + ob + c0 * bc->sb[last], bc->sb[last],
          j->y + row * j->n + c0, j->ctx);
    for (int i = last - 1; i >= 0; i--) {
      if (++idx[i] < bc->dim[i]) break;
      idx[i] = 0;
    }
  }
}

static void bcast_task(void* ctx, size_t t) {
  const bcast_job* j = ctx;
  if (j->segs > 1) { /* one segment of one long row */
    size_t row = t / j->segs, c0 = t % j->segs * j->seg_len, c1 = c0 + j->seg_len < j->n ? c0 + j->seg_len : j->n;
    bcast_rows(j, row, row + 1, c0, c1);
  } else {
    size_t r0 = t * j->rows_per_task, r1 = r0 + j->rows_per_task < j->rows ? r0 + j->rows_per_task : j->rows;
    bcast_rows(j, r0, r1, 0, j->n);
  }
}

static void bcast_run(const wrt_model* m, const wrt_op* op, const bcast* bc, const float* a, const float* b, float* y,
                      row_fn fn, const void* ctx) {
  size_t n = bc->dim[bc->rank - 1], rows = 1;
  for (int i = 0; i < bc->rank - 1; i++) rows *= bc->dim[i];
  if (n == 0) return;
  bcast_job j = {bc, a, b, y, fn, ctx, n, rows, (n + TASK_ELEMS - 1) / TASK_ELEMS, TASK_ELEMS, 0};
  j.rows_per_task = n >= TASK_ELEMS ? 1 : TASK_ELEMS / n;
  size_t tasks = j.segs > 1 ? rows * j.segs : (rows + j.rows_per_task - 1) / j.rows_per_task;
  op_parallel(m, op, tasks, bcast_task, &j);
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

/* the op's vector kernel (python_ref/opdefs.py's unary family, generated/wrt_ops.h) */
static int unary_code(int type) { return WRT_OPDEFS[type].unary; }

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
/* (a module without these ops leaves their double-precision path out) */
static int is_double_fn(int type) {
  return (WRT_KEEP_OP(GELU) && type == OP_GELU) || (WRT_KEEP_OP(ERF) && type == OP_ERF) ||
         (WRT_KEEP_OP(LOG) && type == OP_LOG) || (WRT_KEEP_OP(FLOOR) && type == OP_FLOOR) ||
         (WRT_KEEP_OP(CEIL) && type == OP_CEIL);
}
static int is_pow(int type) { return WRT_KEEP_OP(POW) && type == OP_POW; }

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

typedef struct {
  wrt_vunary_fn fn; /* NULL: the scalar form */
  int code;
  const float* x;
  float* y;
  size_t n;
  float params[2];
} unary_job;

static void unary_task(void* ctx, size_t t) {
  const unary_job* j = ctx;
  size_t i0 = t * TASK_ELEMS, len = j->n - i0 < TASK_ELEMS ? j->n - i0 : TASK_ELEMS;
  if (j->fn) j->fn(len, j->x + i0, j->y + i0, j->params);
  else
    for (size_t i = i0; i < i0 + len; i++) j->y[i] = unary_scalar(j->code, j->x[i], j->params);
}

WRT_FOR_SIZE int plan_elementwise(wrt_model* m, wrt_op* op, wrt_cost* c) {
  /* POW, and unary ops without a vector kernel, compute in double */
  int slow = is_pow(op->type) || is_double_fn(op->type) || (op->n_in == 1 && !m->tg->vunary[unary_code(op->type)]);
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
  if (WRT_KEEP_UNARY_F32 && op->n_in == 1) { /* (a module without unary ops leaves this out) */
    float params[2] = {0, 0};
    WRT_UNARY_PARAMS(op->type, &op->a, params);
    unary_job j = {m->tg->vunary[unary_code(op->type)], unary_code(op->type), x, yd, (size_t)y->count,
                   {params[0], params[1]}};
    op_parallel(m, op, (j.n + TASK_ELEMS - 1) / TASK_ELEMS, unary_task, &j);
    return WRT_OK;
  }
  bcast bc;
  bcast_setup(&m->t[op->in[0]], &m->t[op->in[1]], y, &bc);
  const float* b = t_f32(m, op->in[1]);
  if (is_pow(op->type)) bcast_run(m, op, &bc, x, b, yd, pow_row, 0);
  else {
    bin_ctx c = {m->tg, 0, 0, &op->clamp};
    c.code = binary_code(op->type, &c.rev);
    bcast_run(m, op, &bc, x, b, yd, bin_row, &c);
  }
  return WRT_OK;
}

/* ---- chains ------------------------------------------------------------------------------------------------------
 * Element-wise ops that follow one another over the same number of values, each reading the one before (PP-OCR's
 * decomposed hard-swish and the scale and offset after it: ADD+clamp, MUL, DIV, MUL, ADD), run as one pass: block by
 * block, every op of the chain in turn, the values between them in small buffers that stay in L1, only the last
 * op's output written to memory. Each op runs the kernel it runs alone on the same values, and an element's
 * arithmetic does not depend on where a block starts, so the bytes are those of the ops run one by one. */
#define CHAIN_MAX 8      /* ops in a chain, at most */
#define CHAIN_BUFS 3     /* values held between the ops of a block */
#define CHAIN_BLOCK 1024 /* floats per block and buffer (12 KB of buffers on the stack) */

/* t holds one value per channel (the last axis of y), broadcast over the others: a squeeze-and-excitation scale */
static int per_channel(const wrt_tensor* t, const wrt_tensor* y) {
  int64_t c = y->rank ? y->dims[y->rank - 1] : 1;
  if (c < 2 || c > CHAIN_BLOCK || t->rank < 1 || t->rank > y->rank || t->dims[t->rank - 1] != c) return 0;
  return t->count == (uint64_t)c;
}

/* an op that can join a chain of ops over the shape of tensor `like`: a float32 element-wise op with a vector or
 * scalar form (not POW, not the double-precision functions) whose output has that shape, and whose inputs have it
 * too, or hold one value, or one per channel */
static int chain_member(const wrt_model* m, const wrt_op* op, const wrt_tensor* like) {
  if (op->skip || !op->impl || op->impl->run != run_elementwise || op->n_out != 1 || op->n_in < 1 || op->n_in > 2)
    return 0;
  if (is_pow(op->type) || is_double_fn(op->type)) return 0;
  const wrt_tensor* y = &m->t[op->out];
  if (y->dtype != WRT_F32 || y->q || y->rank != like->rank) return 0;
  for (int d = 0; d < y->rank; d++)
    if (y->dims[d] != like->dims[d]) return 0;
  for (int i = 0; i < op->n_in; i++) {
    const wrt_tensor* t = op->in[i] >= 0 ? &m->t[op->in[i]] : 0;
    if (!t || t->dtype != WRT_F32 || t->q || (t->count != y->count && t->count != 1 && !per_channel(t, y))) return 0;
  }
  return 1;
}

static int reads(const wrt_op* op, int32_t t) {
  for (int i = 0; i < op->n_in; i++)
    if (op->in[i] == t) return 1;
  return 0;
}

static int is_output(const wrt_model* m, int32_t t) {
  for (int i = 0; i < m->n_outputs; i++)
    if (m->outputs[i] == t) return 1;
  return 0;
}

/* every value of ops [k, k + len) but the last is read inside them only (uses[t]: the op inputs that read t) */
static int chain_closed(const wrt_model* m, int k, int len, const uint32_t* uses) {
  for (int j = 0; j < len - 1; j++) {
    int32_t t = m->ops[k + j].out;
    uint32_t inside = 0;
    for (int i = j + 1; i < len; i++)
      for (int q = 0; q < m->ops[k + i].n_in; q++) inside += m->ops[k + i].in[q] == t;
    if (inside != uses[t] || is_output(m, t)) return 0;
  }
  return 1;
}

static int chain_from(const wrt_model* m, int k, const uint32_t* uses) {
  const wrt_tensor* like = &m->t[m->ops[k].out];
  if (like->count < CHAIN_BLOCK || !chain_member(m, &m->ops[k], like)) return 1;
  int len = 1;
  while (len < CHAIN_MAX && k + len < m->n_ops && chain_member(m, &m->ops[k + len], like) &&
         reads(&m->ops[k + len], m->ops[k + len - 1].out))
    len++;
  while (len > 1 && !chain_closed(m, k, len, uses)) len--;
  return len;
}

/* block buffers for the values between the ops: a buffer is free again after the value's last reader */
static int chain_buffers(wrt_model* m, int k, int len) {
  int last[CHAIN_MAX], owner[CHAIN_BUFS];
  for (int b = 0; b < CHAIN_BUFS; b++) owner[b] = -1;
  for (int j = 0; j < len; j++) {
    last[j] = j;
    for (int i = j + 1; i < len; i++)
      if (reads(&m->ops[k + i], m->ops[k + j].out)) last[j] = i;
  }
  for (int j = 0; j < len; j++) {
    wrt_op* op = &m->ops[k + j];
    op->chain_buf = -1;
    if (j == len - 1) break;
    /* free the buffers of values no op after j reads: op j may write over its own input, element by element at
     * the same place, as the element-wise kernels allow (y == a) */
    for (int b = 0; b < CHAIN_BUFS; b++)
      if (owner[b] >= 0 && last[owner[b]] <= j) owner[b] = -1;
    for (int b = 0; b < CHAIN_BUFS && op->chain_buf < 0; b++)
      if (owner[b] < 0) owner[b] = j, op->chain_buf = (int8_t)b;
    if (op->chain_buf < 0) return j + 1; /* out of buffers: the chain ends with op j, which writes its tensor */
  }
  return len;
}

void plan_chains(wrt_model* m) {
  for (int k = 0; k < m->n_ops; k++) m->ops[k].chain = 0, m->ops[k].chain_buf = -1;
  if (!WRT_KF_CHAINS) return; /* a module built for models within a size budget: every op runs alone */
  uint32_t* uses = rt_alloc((size_t)m->n_tensors * sizeof(uint32_t) + 1);
  if (!uses) return; /* chains are an optimization: without them every op runs alone */
  for (int t = 0; t < m->n_tensors; t++) uses[t] = 0;
  for (int k = 0; k < m->n_ops; k++)
    if (!m->ops[k].skip)
      for (int i = 0; i < m->ops[k].n_in; i++)
        if (m->ops[k].in[i] >= 0) uses[m->ops[k].in[i]]++;
  for (int k = 0; k < m->n_ops;) {
    int len = chain_from(m, k, uses);
    for (int b; len > 1 && (b = chain_buffers(m, k, len)) != len;) /* shorter: its last value is read after it */
      for (len = b; len > 1 && !chain_closed(m, k, len, uses);) len--;
    if (len > 1) m->ops[k].chain = (uint8_t)len;
    else m->ops[k].chain_buf = -1;
    k += len;
  }
  rt_free(uses);
}

typedef struct {
  wrt_model* m;
  int k, len;
  size_t n, row;   /* values; with a per-channel input, the channels (blocks and tasks are whole rows), else 1 */
  size_t block, task; /* values per block and per task */
} chain_job;

static void chain_task(void* ctx, size_t t) {
  const chain_job* j = ctx;
  const wrt_model* m = j->m;
  float buf[CHAIN_BUFS][CHAIN_BLOCK];
  size_t i0 = t * j->task, i1 = j->n - i0 < j->task ? j->n : i0 + j->task;
  for (size_t b0 = i0; b0 < i1; b0 += j->block) {
    size_t len = i1 - b0 < j->block ? i1 - b0 : j->block;
    for (int q = 0; q < j->len; q++) {
      const wrt_op* op = &m->ops[j->k + q];
      float* y = op->chain_buf >= 0 ? buf[op->chain_buf] : t_f32(m, op->out) + b0;
      const float* in[2] = {0, 0};
      size_t s[2] = {0, 0};
      int rows = 0; /* an input holds one value per channel: row by row, as the op alone runs it */
      for (int i = 0; i < op->n_in; i++) {
        int from = -1; /* the op of the chain that computed this input */
        for (int p = 0; p < q; p++)
          if (m->ops[j->k + p].out == op->in[i]) from = p;
        uint64_t count = m->t[op->in[i]].count;
        if (from >= 0) in[i] = buf[m->ops[j->k + from].chain_buf], s[i] = 1;
        else if (count == 1) in[i] = t_f32(m, op->in[i]);
        else if (count == j->n) in[i] = t_f32(m, op->in[i]) + b0, s[i] = 1;
        else in[i] = t_f32(m, op->in[i]), s[i] = 1, rows |= 1 << i;
      }
      if (op->n_in == 1) {
        float params[2] = {0, 0};
        WRT_UNARY_PARAMS(op->type, &op->a, params);
        wrt_vunary_fn fn = m->tg->vunary[unary_code(op->type)];
        if (fn) fn(len, in[0], y, params);
        else
          for (size_t i = 0; i < len; i++) y[i] = unary_scalar(unary_code(op->type), in[0][i], params);
      } else {
        bin_ctx c = {m->tg, 0, 0, &op->clamp};
        c.code = binary_code(op->type, &c.rev);
        if (!rows) bin_row(len, in[0], s[0], in[1], s[1], y, &c);
        else
          for (size_t r = 0; r < len; r += j->row) /* the channel vector from its start in every row */
            bin_row(j->row, in[0] + (rows & 1 ? 0 : r), s[0], in[1] + (rows & 2 ? 0 : r), s[1], y + r, &c);
      }
    }
  }
}

/* The last op's output must not land on memory the chain still reads (the arena reuses the memory of values no
 * later op needs): a block is written after all of its reads, so the output may coincide with an input, but not
 * overlap one at another offset. */
static int chain_safe(const wrt_model* m, int k, int len) {
  const wrt_tensor* out = &m->t[m->ops[k + len - 1].out];
  uintptr_t y0 = (uintptr_t)out->data, y1 = y0 + (uintptr_t)out->nbytes;
  for (int q = 0; q < len; q++) {
    const wrt_op* op = &m->ops[k + q];
    for (int i = 0; i < op->n_in; i++) {
      const wrt_tensor* t = &m->t[op->in[i]];
      uintptr_t a0 = (uintptr_t)t->data, a1 = a0 + (uintptr_t)t->nbytes;
      if (a0 < y1 && y0 < a1 && !(a0 == y0 && t->count == out->count)) return 0;
    }
  }
  return 1;
}

int run_chain(wrt_model* m, int k) {
  const wrt_op* op = &m->ops[k];
  int len = op->chain;
  if (len < 2 || k + len > m->n_ops || !chain_safe(m, k, len)) return 0;
  const wrt_tensor* y = &m->t[op->out];
  chain_job j = {m, k, len, (size_t)y->count, 1, CHAIN_BLOCK, TASK_ELEMS};
  for (int q = 0; q < len; q++)
    for (int i = 0; i < m->ops[k + q].n_in; i++) {
      uint64_t count = m->t[m->ops[k + q].in[i]].count;
      if (count != 1 && count != j.n) j.row = (size_t)y->dims[y->rank - 1];
    }
  if (j.row > 1) { /* whole rows: the per-channel inputs start again at each */
    j.block = CHAIN_BLOCK / j.row * j.row;
    j.task = TASK_ELEMS > j.row ? TASK_ELEMS / j.row * j.row : j.row;
  }
  op_parallel(m, op, (j.n + j.task - 1) / j.task, chain_task, &j);
  return 1;
}
