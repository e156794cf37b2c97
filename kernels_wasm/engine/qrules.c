/* Quantization parameters: reading Tensor.quant and the rules every quantized tensor and op must follow, with the
 * checks and words of python_ref/qrules.py (python_ref/README.md, "Quantized int8: what a reader verifies"). */
#include "engine.h"

/* the first four values, as python_ref's _few(): "[0.5, 0, -1, nan, ...]" */
static void few_floats(char* out, size_t cap, const float* v, uint32_t n) {
  size_t k = rt_format(out, cap, "[");
  for (uint32_t i = 0; i < n && i < 4 && k < cap; i++) k += rt_format(out + k, cap - k, i ? ", %g" : "%g", (double)v[i]);
  if (k < cap) rt_format(out + k, cap - k, n > 4 ? ", ...]" : "]");
}

static void few_ints(char* out, size_t cap, fb_buf f, size_t zv, uint32_t n) {
  size_t k = rt_format(out, cap, "[");
  for (uint32_t i = 0; i < n && i < 4 && k < cap; i++)
    k += rt_format(out + k, cap - k, i ? ", %l" : "%l", (int64_t)fb_rd64(fb_vdata(f, zv) + 8 * i));
  if (k < cap) rt_format(out + k, cap - k, n > 4 ? ", ...]" : "]");
}

#define TFAIL(...) return tensor_fail(i, t, __VA_ARGS__)
static int tensor_fail(uint32_t i, const wrt_tensor* t, const char* fmt, ...) {
  char msg[320];
  va_list ap;
  va_start(ap, fmt);
  rt_vformat(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return rt_error(WRT_ERR_FORMAT, "tensor %u ('%s'): %s", i, t->name, msg);
}

int read_quant(wrt_model* m, fb_buf f, size_t qt, wrt_tensor* t, uint32_t i) {
  size_t sv = fb_ref(f, qt, 0), zv = fb_ref(f, qt, 1);
  uint32_t n = fb_vlen(f, sv), nz = fb_vlen(f, zv);
  int32_t axis = fb_i32(f, qt, 2, -1);
  char b[160];
  if (!is_q8(t->dtype) && t->dtype != WRT_I32)
    TFAIL("quantization parameters on a %s tensor (only int8, uint8 and int32 tensors are quantized)",
          dtype_name(t->dtype));
  if (n < 1) TFAIL("quantization with no scale");
  if (nz != 0 && nz != 1 && nz != n)
    TFAIL("%u scales but %u zero points (expected %u, one shared by every channel, or none for all zeros)", n, nz, n);
  wrt_quant* q = m_alloc(m, sizeof(wrt_quant) + (uint64_t)n * 8);
  if (!q) return m_alloc_fail(m, 0, "quantization parameters", sizeof(wrt_quant) + (uint64_t)n * 8);
  float* scale = (float*)(void*)(q + 1);
  int32_t* zp = (int32_t*)(void*)(scale + n);
  int finite = 1;
  for (uint32_t k = 0; k < n; k++) {
    scale[k] = fb_vf32(f, sv, k);
    finite &= scale[k] > 0 && scale[k] <= 3.4028234663852886e38f; /* false for NaN */
  }
  if (!finite) {
    few_floats(b, sizeof b, scale, n);
    TFAIL("scales must be finite and > 0, got %s", b);
  }
  if (axis < 0) {
    if (axis != -1) TFAIL("quantization axis %d", axis);
    if (n != 1) TFAIL("per-tensor quantization (axis -1) with %u scales", n);
  } else {
    if (axis >= t->rank) TFAIL("quantization axis %d out of range for rank %d", axis, t->rank);
    if ((int64_t)n != t->dims[axis]) TFAIL("%u per-channel scales for %d channels on axis %d", n, t->dims[axis], axis);
  }
  int64_t lo = t->dtype == WRT_I8 ? -128 : 0, hi = t->dtype == WRT_I8 ? 127 : t->dtype == WRT_U8 ? 255 : 0;
  for (uint32_t k = 0; k < nz; k++) {
    int64_t z = (int64_t)fb_rd64(fb_vdata(f, zv) + 8 * k);
    if (z < lo || z > hi) {
      few_ints(b, sizeof b, f, zv, nz);
      TFAIL("zero points must be in [%l, %l] for %s, got %s", lo, hi, dtype_name(t->dtype), b);
    }
  }
  for (uint32_t k = 0; k < n; k++) zp[k] = nz ? (int32_t)(int64_t)fb_rd64(fb_vdata(f, zv) + 8 * (nz == 1 ? 0 : k)) : 0;
  q->n = (int32_t)n;
  q->axis = axis;
  q->s = scale[0];
  q->z = zp[0];
  q->scale = scale;
  q->zp = zp;
  t->q = q;
  return WRT_OK;
}

/* ---- per-op rules --------------------------------------------------------------------------------------------- */
/* the op's families, declared in python_ref/opdefs.py (generated/wrt_ops.h): its int8 form and input rule */
static const wrt_opdef* def_of(int type) {
  static const wrt_opdef none = {.name = 0};
  const wrt_opdef* d = wrt_opdef_of(type);
  return d ? d : &none;
}
static int quant_form(int type) { return def_of(type)->quant; }

int op_is_quantized(const wrt_model* m, const wrt_op* op) {
  if (quant_form(op->type) == WRT_QUANT_INTEGER) return 1; /* QUANTIZE, DEQUANTIZE, LOOKUP */
  const wrt_tensor* x = &m->t[op->in[0]];
  return is_q8(x->dtype) && x->q;
}

int quant_equal(const wrt_quant* a, const wrt_quant* b) {
  if (!a || !b) return a == b;
  if (a->axis != b->axis || a->n != b->n) return 0;
  for (int32_t k = 0; k < a->n; k++)
    if (a->scale[k] != b->scale[k] || a->zp[k] != b->zp[k]) return 0;
  return 1;
}

/* python_ref's repr of QuantParams */
static void quant_repr(char* out, size_t cap, const wrt_quant* q) {
  if (q->axis < 0) rt_format(out, cap, "QuantParams(scale=%G, zero_point=%d)", (double)q->s, q->z);
  else rt_format(out, cap, "QuantParams(%d channels on axis %d)", q->n, q->axis);
}

#define FAIL(...) return op_fail(op, WRT_ERR_FORMAT, __VA_ARGS__)

/* python_ref's _need: input k (or the output, k < 0) is int8/uint8 with parameters, per tensor if asked */
static int need(const wrt_model* m, const wrt_op* op, int ti, int k, int per_tensor) {
  char name[24];
  if (k >= 0) rt_format(name, sizeof name, "input %d", k);
  else rt_format(name, sizeof name, "the output");
  if (ti < 0) FAIL("%s is missing", name);
  const wrt_tensor* t = &m->t[ti];
  if (!is_q8(t->dtype)) FAIL("%s is %s, expected int8 or uint8 in a quantized op", name, dtype_name(t->dtype));
  if (!t->q) FAIL("%s (%s) has no quantization parameters", name, dtype_name(t->dtype));
  if (per_tensor && t->q->axis >= 0)
    FAIL("%s must be quantized per tensor, it has %d scales on axis %d", name, t->q->n, t->q->axis);
  return 0;
}

static int check_table(const wrt_model* m, const wrt_op* op, int slot, int dtype, const char* what) {
  int ti = op->n_in > slot ? op->in[slot] : -1;
  if (ti < 0) FAIL("%s needs its table input", what);
  const wrt_tensor* t = &m->t[ti];
  if (!t->is_const) FAIL("the %s table must be a constant", what);
  if (t->rank != 1 || t->dims[0] != 256 || t->dtype != dtype) {
    char shape[96];
    size_t k = rt_format(shape, sizeof shape, "[");
    for (int i = 0; i < t->rank && k < sizeof shape; i++) k += rt_format(shape + k, sizeof shape - k, i ? ", %d" : "%d", t->dims[i]);
    if (k < sizeof shape) rt_format(shape + k, sizeof shape - k, "]");
    FAIL("the %s table must be [256] of %s, got %s of %s", what, dtype_name(dtype), shape, dtype_name(t->dtype));
  }
  return 0;
}

/* XNNPACK's fixed-point ADD parameters (python_ref/quant.py add_params); nonzero when the ratios are out of range */
int qadd_params(float ra, float rb, int32_t* ma, int32_t* mb, int32_t* shift) {
  float big = ra < 0 ? -ra : ra, bb = rb < 0 ? -rb : rb;
  big = bb > big ? bb : big;
  uint32_t bits;
  __builtin_memcpy(&bits, &big, 4);
  int e = (int)(bits >> 23) - 127;
  int s = 20 - e;
  if (s < 12 || s > 30) return 1;
  /* |r| * 2^s is exact in double (a float's 24 bits shifted), then rounded half to even */
  double va = (double)(ra < 0 ? -ra : ra) * (double)(1u << s), vb = (double)(rb < 0 ? -rb : rb) * (double)(1u << s);
  double fa = rt_floor(va), fb = rt_floor(vb);
  int64_t ia = (int64_t)fa + (va - fa > 0.5 || (va - fa == 0.5 && ((int64_t)fa & 1)));
  int64_t ib = (int64_t)fb + (vb - fb > 0.5 || (vb - fb == 0.5 && ((int64_t)fb & 1)));
  uint32_t sa, sbb;
  __builtin_memcpy(&sa, &ra, 4);
  __builtin_memcpy(&sbb, &rb, 4);
  *ma = (int32_t)(sa >> 31 ? -ia : ia);
  *mb = (int32_t)(sbb >> 31 ? -ib : ib);
  *shift = s;
  return 0;
}

static int check_weights(const wrt_model* m, const wrt_op* op) {
  int r;
  if ((r = need(m, op, op->in[1], 1, 0))) return r;
  const wrt_quant* qw = m->t[op->in[1]].q;
  if (qw->axis >= 0 && qw->axis != 0)
    FAIL("weights must be quantized per tensor or per output channel (axis 0), not axis %d", qw->axis);
  int bi = op->n_in > 2 ? op->in[2] : -1;
  if (bi >= 0) {
    const wrt_tensor* b = &m->t[bi];
    if (b->dtype != WRT_I32) FAIL("the bias of a quantized op must be int32, got %s", dtype_name(b->dtype));
    int bad = 0;
    if (b->q) {
      for (int32_t k = 0; k < b->q->n; k++) bad |= b->q->zp[k] != 0;
      bad |= b->q->axis != -1 && b->q->axis != 0;
    }
    if (bad) FAIL("a quantized bias must have zero point 0 (per tensor or per output channel)");
  }
  return 0;
}

static int check_softmax_table(const wrt_model* m, const wrt_op* op) {
  int r;
  if ((r = check_table(m, op, 1, WRT_I32, "quantized SOFTMAX"))) return r;
  const wrt_tensor *x = &m->t[op->in[0]], *t = &m->t[op->in[1]];
  int64_t n = 1;
  if (x->rank) {
    int ax = ((op->a.axis % x->rank) + x->rank) % x->rank;
    n = x->dims[ax];
  }
  int64_t t0 = (int32_t)fb_rd32(t->file_data);
  int ok = t0 >= 1;
  for (int k = 0; k < 256; k++) {
    int64_t v = (int32_t)fb_rd32(t->file_data + 4 * k);
    ok &= v >= 0 && v <= t0;
  }
  if (!ok) FAIL("the SOFTMAX table must hold values in [0, table[0]] with table[0] >= 1");
  if (t0 * (n > 1 ? n : 1) > 2147483647)
    FAIL("the SOFTMAX table's table[0] = %l times %l values along the axis overflows int32", t0, n);
  return 0;
}

static int is_nan(float v) { return v != v; }

int check_quant(wrt_model* m, wrt_op* op) {
  const wrt_tensor *x = &m->t[op->in[0]], *y = &m->t[op->out];
  const wrt_attrs* a = &op->a;
  int r;
  if (!op_is_quantized(m, op)) {
    if (def_of(op->type)->needs_quant && is_q8(x->dtype))
      FAIL("input 0 (%s) has no quantization parameters; %s takes integers only as quantized tensors",
           dtype_name(x->dtype), op_name(op));
    if (op->type == OP_CONCATENATION && x->dtype != WRT_F32 && x->dtype != WRT_F16 &&
        (a->act_min != -__builtin_inff() || a->act_max != __builtin_inff()))
      FAIL("a fused clamp on plain (unquantized) integers");
    for (int k = 0; k < op->n_in; k++)
      if (op->in[k] >= 0 && m->t[op->in[k]].q && !(quant_form(op->type) == WRT_QUANT_WEIGHTED && k > 0))
        FAIL("input %d is quantized but input 0 is not: mixing quantized and plain tensors", k);
    if (y->q) FAIL("the output is quantized but the inputs are not");
    return 0;
  }
  if (!WRT_QUANT_NATIVE(quant_form(op->type)))
    FAIL("has no quantized variant: quantized input 0%s", quant_form(op->type) == WRT_QUANT_TABLE
         ? " (converters express quantized element-wise functions as a LOOKUP table)" : "");
  if (op_has_clamp(op->type)) {
    if (is_nan(a->act_min)) FAIL("act_min is NaN");
    if (is_nan(a->act_max)) FAIL("act_max is NaN");
  }
  if (op->type == OP_CLIP) {
    if (is_nan(a->min)) FAIL("min is NaN");
    if (is_nan(a->max)) FAIL("max is NaN");
  }
  if (op->type == OP_DEQUANTIZE) {
    if ((r = need(m, op, op->in[0], 0, 0))) return r;
    if (y->q) FAIL("the float output of DEQUANTIZE has quantization parameters");
    return 0;
  }
  if (op->a.float_output) { /* the int32 accumulator dequantized: a plain float32 output */
    if (y->q) FAIL("the float output (float_output) has quantization parameters");
  } else if ((r = need(m, op, op->out, -1, 1))) {
    return r;
  }
  if (op->type == OP_QUANTIZE) {
    if (x->dtype != WRT_F32) return need(m, op, op->in[0], 0, 1);
    if (x->q) FAIL("a float input with quantization parameters");
    return 0;
  }
  if (op->type == OP_LOOKUP) {
    if ((r = need(m, op, op->in[0], 0, 1))) return r;
    return check_table(m, op, 1, y->dtype, "LOOKUP");
  }
  if ((r = need(m, op, op->in[0], 0, 1))) return r;
  if (quant_form(op->type) == WRT_QUANT_WEIGHTED) {
    if ((r = check_weights(m, op))) return r;
  } else if (op->type == OP_SOFTMAX) {
    if ((r = check_softmax_table(m, op))) return r;
  } else if (op->type != OP_GATHER) {
    for (int k = 1; k < op->n_in; k++)
      if ((r = need(m, op, op->in[k], k, op->type != OP_PRELU))) return r;
  }
  if (op->type == OP_ADD || op->type == OP_SUB) {
    float sy = y->q->s, ra = x->q->s / sy, rb = m->t[op->in[1]].q->s / sy;
    int32_t ma, mb, sh;
    if (qadd_params(ra, rb, &ma, &mb, &sh)) {
      float big = (ra < 0 ? -ra : ra) > (rb < 0 ? -rb : rb) ? (ra < 0 ? -ra : ra) : (rb < 0 ? -rb : rb);
      FAIL("ADD/SUB scale ratio %g outside [2^-10, 2^8)", (double)big);
    }
  }
  if (quant_form(op->type) == WRT_QUANT_MOVES && !quant_equal(x->q, y->q)) {
    char qa[96], qb[96];
    quant_repr(qa, sizeof qa, x->q);
    quant_repr(qb, sizeof qb, y->q);
    FAIL("input and output quantization differ (%s vs %s); %s moves integers unchanged, so both must be equal "
         "(requantize with QUANTIZE first)", qa, qb, op_name(op));
  }
  return 0;
}
