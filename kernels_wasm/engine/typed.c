/* Element-wise ops on any element type, with numpy broadcasting: comparisons (bool out), logical ops on bools,
 * WHERE, CAST, and integer arithmetic (int32/int64 ADD, SUB, MUL, DIV, MAXIMUM, MINIMUM: wrap-around, DIV truncates
 * toward zero as python_ref). One scalar loop per op: these ops move shape arithmetic and masks, not bulk data. */
#include "engine.h"

typedef union {
  double f;
  int64_t i;
} value;

static int is_float(int dt) { return dt == WRT_F32 || dt == WRT_F16; }

/* float32 -> float16, round to nearest even (numpy's astype): overflow gives inf, tiny values subnormals or zero */
static uint16_t float_to_half(float f) {
  uint32_t x;
  rt_copy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);     /* nan */
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);    /* >= 65520 (halfway past 65504): inf */
  if (a >= 0x38800000u) {                                     /* normal half: rebias 127 -> 15, round 13 bits */
    uint32_t r = a - (112u << 23);
    return (uint16_t)(sign | ((r + 0xfffu + ((r >> 13) & 1u)) >> 13));
  }
  if (a <= 0x33000000u) return (uint16_t)sign;               /* <= 2^-25 (the tie goes to even: zero) */
  uint32_t m = (a & 0x7fffffu) | 0x800000u, shift = 126u - (a >> 23); /* subnormal half: units of 2^-24 */
  uint32_t q = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (q & 1u))) q++;
  return (uint16_t)(sign | q);
}

static value rd(const uint8_t* p, int dt, size_t k) {
  value v;
  switch (dt) {
    case WRT_F32: { float f; rt_copy(&f, p + 4 * k, 4); v.f = f; break; }
    case WRT_F16: { uint16_t h; rt_copy(&h, p + 2 * k, 2); v.f = half_to_float(h); break; }
    case WRT_I8: v.i = (int8_t)p[k]; break;
    case WRT_U8: case WRT_BOOL: v.i = p[k]; break;
    case WRT_I32: { int32_t i; rt_copy(&i, p + 4 * k, 4); v.i = i; break; }
    case WRT_I64: { int64_t i; rt_copy(&i, p + 8 * k, 8); v.i = i; break; }
    default: v.i = 0; break;
  }
  return v;
}

static void wr(uint8_t* p, int dt, size_t k, value v) {
  switch (dt) {
    case WRT_F32: { float f = (float)v.f; rt_copy(p + 4 * k, &f, 4); break; }
    case WRT_F16: { uint16_t h = float_to_half((float)v.f); rt_copy(p + 2 * k, &h, 2); break; }
    case WRT_I8: case WRT_U8: p[k] = (uint8_t)v.i; break;
    case WRT_BOOL: p[k] = v.i != 0; break;
    case WRT_I32: { int32_t i = (int32_t)(uint32_t)(uint64_t)v.i; rt_copy(p + 4 * k, &i, 4); break; }
    case WRT_I64: rt_copy(p + 8 * k, &v.i, 8); break;
    default: break;
  }
}

/* a float to an integer type: truncation toward zero; NaN and values outside int64 (undefined in C and ONNX) give
 * INT64_MIN, then wrap to the target like any integer */
static int64_t f2i(double f) {
  if (!(f > -9.2233720368547758e18 && f < 9.2233720368547758e18)) return INT64_MIN;
  return (int64_t)f;
}

/* ---- broadcasting: up to three operands, strides 0 on broadcast axes ------------------------------------------ */
typedef struct {
  int rank, n;
  int64_t dims[WRT_MAX_RANK];
  int64_t str[3][WRT_MAX_RANK]; /* element strides of each operand over the output axes */
} walk;

static void walk_setup(const wrt_model* m, const wrt_op* op, int n, walk* w) {
  const wrt_tensor* y = &m->t[op->out];
  w->rank = y->rank;
  w->n = n;
  for (int i = 0; i < y->rank; i++) w->dims[i] = y->dims[i];
  for (int k = 0; k < n; k++) {
    const wrt_tensor* t = &m->t[op->in[k]];
    int64_t st = 1;
    for (int i = y->rank - 1; i >= 0; i--) {
      int it = i - (y->rank - t->rank);
      int64_t d = it >= 0 ? t->dims[it] : 1;
      w->str[k][i] = d == 1 ? 0 : st;
      st *= d;
    }
  }
}

/* calls fn(ctx, out index, operand offsets) for every output element in order */
static int walk_all(const walk* w, int (*fn)(void* ctx, size_t o, const size_t* off), void* ctx) {
  int64_t idx[WRT_MAX_RANK] = {0};
  size_t total = 1, off[3] = {0, 0, 0};
  for (int i = 0; i < w->rank; i++) total *= (size_t)w->dims[i];
  for (size_t o = 0; o < total; o++) {
    int r = fn(ctx, o, off);
    if (r) return r;
    for (int i = w->rank - 1; i >= 0; i--) {
      for (int k = 0; k < w->n; k++) off[k] += (size_t)w->str[k][i];
      if (++idx[i] < w->dims[i]) break;
      for (int k = 0; k < w->n; k++) off[k] -= (size_t)(w->str[k][i] * w->dims[i]);
      idx[i] = 0;
    }
  }
  return WRT_OK;
}

typedef struct {
  const wrt_op* op;
  const uint8_t *a, *b, *c;
  uint8_t* y;
  int da, db, dy;
} typed_ctx;

static int compare_one(void* vc, size_t o, const size_t* off) {
  typed_ctx* c = vc;
  value a = rd(c->a, c->da, off[0]), b = rd(c->b, c->db, off[1]);
  int r;
  if (is_float(c->da)) {
    switch (c->op->type) {
      case OP_EQUAL: r = a.f == b.f; break;
      case OP_LESS: r = a.f < b.f; break;
      case OP_GREATER: r = a.f > b.f; break;
      case OP_LESS_EQUAL: r = a.f <= b.f; break;
      default: r = a.f >= b.f; break;
    }
  } else {
    switch (c->op->type) {
      case OP_EQUAL: case OP_AND: r = c->op->type == OP_EQUAL ? a.i == b.i : (a.i && b.i); break;
      case OP_LESS: r = a.i < b.i; break;
      case OP_GREATER: r = a.i > b.i; break;
      case OP_LESS_EQUAL: r = a.i <= b.i; break;
      case OP_GREATER_EQUAL: r = a.i >= b.i; break;
      case OP_OR: r = a.i || b.i; break;
      default: r = !a.i != !b.i; break; /* XOR */
    }
  }
  c->y[o] = (uint8_t)r;
  return WRT_OK;
}

static int where_one(void* vc, size_t o, const size_t* off) {
  typed_ctx* c = vc;
  size_t es = (size_t)(c->dy == WRT_I64 ? 8 : c->dy == WRT_F32 || c->dy == WRT_I32 ? 4 : c->dy == WRT_F16 ? 2 : 1);
  const uint8_t* src = c->a[off[0]] ? c->b + off[1] * es : c->c + off[2] * es;
  rt_copy(c->y + o * es, src, es);
  return WRT_OK;
}

static int64_t wrap(int64_t v, int dt) { return dt == WRT_I32 ? (int64_t)(int32_t)(uint32_t)(uint64_t)v : v; }

static int arith_one(void* vc, size_t o, const size_t* off) {
  typed_ctx* c = vc;
  int64_t a = rd(c->a, c->da, off[0]).i, b = rd(c->b, c->da, off[1]).i;
  uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
  value y;
  switch (c->op->type) {
    case OP_ADD: y.i = (int64_t)(ua + ub); break;
    case OP_SUB: y.i = (int64_t)(ua - ub); break;
    case OP_MUL: y.i = (int64_t)(ua * ub); break;
    case OP_MAXIMUM: y.i = a > b ? a : b; break;
    case OP_MINIMUM: y.i = a < b ? a : b; break;
    default: /* DIV */
      if (b == 0) return op_fail(c->op, WRT_ERR_INPUT, "integer division by zero");
      y.i = (a == INT64_MIN && b == -1) ? a : a / b; /* C truncates toward zero, as ONNX */
      break;
  }
  y.i = wrap(y.i, c->da);
  wr(c->y, c->da, o, y);
  return WRT_OK;
}

int plan_typed(wrt_model* m, wrt_op* op, wrt_cost* c) {
  const wrt_tensor *x = &m->t[op->in[0]], *y = &m->t[op->out];
  if (!is_unclamped(&op->clamp))
    return op_fail(op, WRT_ERR_UNSUPPORTED, "a fused clamp on %s data is not implemented by the C engine",
                   dtype_name(x->dtype));
  int arith = op->type == OP_ADD || op->type == OP_SUB || op->type == OP_MUL || op->type == OP_DIV ||
              op->type == OP_MAXIMUM || op->type == OP_MINIMUM;
  if (arith && x->dtype != WRT_I32 && x->dtype != WRT_I64)
    return op_fail(op, WRT_ERR_UNSUPPORTED, "%s inputs are not supported by the C engine (%s runs float32, int32 and "
                   "int64)", dtype_name(x->dtype), op_name(op));
  if ((op->type == OP_WHERE || arith) && (x->dtype == WRT_F16 || y->dtype == WRT_F16))
    return op_fail(op, WRT_ERR_UNSUPPORTED, "float16 tensors are not supported by the C engine here");
  c->work += WORK_SCALAR * y->count;
  return WRT_OK;
}

int run_typed(wrt_model* m, wrt_op* op) {
  const wrt_tensor* x = &m->t[op->in[0]];
  wrt_tensor* yt = &m->t[op->out];
  typed_ctx c = {op, t_bytes(m, op->in[0]), op->n_in > 1 ? t_bytes(m, op->in[1]) : 0,
                 op->n_in > 2 ? t_bytes(m, op->in[2]) : 0, t_bytes(m, op->out), x->dtype,
                 op->n_in > 1 ? m->t[op->in[1]].dtype : 0, yt->dtype};
  walk w;
  switch (op->type) {
    case OP_CAST:
      for (size_t k = 0; k < yt->count; k++) {
        value v = rd(c.a, c.da, k);
        if (is_float(c.da) && !is_float(c.dy)) v.i = c.dy == WRT_BOOL ? v.f != 0 : f2i(v.f);
        else if (!is_float(c.da) && is_float(c.dy)) v.f = (double)v.i;
        wr(c.y, c.dy, k, v);
      }
      return WRT_OK;
    case OP_NOT:
      for (size_t k = 0; k < yt->count; k++) c.y[k] = !c.a[k];
      return WRT_OK;
    case OP_WHERE:
      c.dy = yt->dtype;
      walk_setup(m, op, 3, &w);
      return walk_all(&w, where_one, &c);
    case OP_EQUAL: case OP_LESS: case OP_GREATER: case OP_LESS_EQUAL: case OP_GREATER_EQUAL: case OP_AND:
    case OP_OR: case OP_XOR:
      walk_setup(m, op, 2, &w);
      return walk_all(&w, compare_one, &c);
    default:
      walk_setup(m, op, 2, &w);
      return walk_all(&w, arith_one, &c);
  }
}
