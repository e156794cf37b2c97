/* int8 element-wise ops (python_ref/qops.py): ADD/SUB (fixed point, through the target's kernels), MUL, MAXIMUM,
 * MINIMUM, PRELU, RELU, CLIP, LOOKUP, QUANTIZE, DEQUANTIZE. A function of one int8 input is a 256-entry table built
 * at load with the exact scalar rules (rescales, RELU/CLIP bounds, per-channel PRELU), applied per byte at run. */
#include "engine.h"

enum { QE_ADD = 1, QE_MUL, QE_EXTREMUM, QE_PRELU, QE_PRELU_RT, QE_TABLE, QE_QUANTIZE, QE_DEQUANTIZE, QE_DEQUANTIZE_CH };


/* PRELU tables: one per slope element, when they stay small */
#define PRELU_TABLE_LIMIT 4096

int plan_qelt(wrt_model* m, wrt_op* op, wrt_cost* c) {
  wrt_qplan* p = &op->u.q;
  const wrt_tensor *x = &m->t[op->in[0]], *y = &m->t[op->out];
  float lo = op_has_clamp(op->type) ? op->a.act_min : -__builtin_inff();
  float hi = op_has_clamp(op->type) ? op->a.act_max : __builtin_inff();
  if (op->type == OP_CLIP) lo = op->a.min, hi = op->a.max;
  if (op->type == OP_RELU) lo = 0.0f;
  if (y->q) q_out_params(m, op, lo, hi, &p->rq, &p->lo, &p->hi);
  p->za = x->q ? x->q->z : 0;
  c->work += WORK_VEC * y->count;
  switch (op_code(op)) {
    OP_CASE(ADD) OP_CASE(SUB) {
      const wrt_quant *qa = x->q, *qb = m->t[op->in[1]].q;
      float ra = qa->s / y->q->s, rb = qb->s / y->q->s;
      int32_t ma, mb, sh;
      qadd_params(ra, op->type == OP_SUB ? -rb : rb, &ma, &mb, &sh); /* in range: checked by the reader */
      uint32_t bias = (1u << (sh - 1)) - (uint32_t)ma * (uint32_t)qa->z - (uint32_t)mb * (uint32_t)qb->z;
      p->add = (wrt_qadd_params){(int32_t)bias, ma, mb, sh, p->rq.zy, p->lo - p->rq.zy, p->hi - p->rq.zy};
      op->path = QE_ADD;
      return WRT_OK;
    }
    OP_CASE(MUL) {
      const wrt_quant* qb = m->t[op->in[1]].q;
      p->zb = qb->z;
      p->ma = x->q->s * qb->s;
      p->ma = p->ma / y->q->s;
      op->path = QE_MUL;
      c->work += WORK_SCALAR * y->count;
      return WRT_OK;
    }
    OP_CASE(MAXIMUM) OP_CASE(MINIMUM)
      op->path = QE_EXTREMUM;
      c->bytes += 512;
      return WRT_OK;
    OP_CASE(PRELU) {
      const wrt_tensor* s = &m->t[op->in[1]];
      p->ma = x->q->s / y->q->s;
      if (s->is_const && s->count <= PRELU_TABLE_LIMIT) {
        op->path = QE_PRELU;
        op->packed_in = 0x2;
        c->bytes += 256 * s->count + 1;
      } else {
        op->path = QE_PRELU_RT;
        c->work += WORK_SCALAR * y->count;
      }
      return WRT_OK;
    }
    OP_CASE(QUANTIZE)
      if (x->dtype == WRT_F32) {
        op->path = QE_QUANTIZE;
        c->work += WORK_SCALAR * y->count;
        return WRT_OK;
      }
      op->path = QE_TABLE;
      c->bytes += 256;
      return WRT_OK;
    OP_CASE(DEQUANTIZE)
      op->path = x->q->axis < 0 ? QE_DEQUANTIZE : QE_DEQUANTIZE_CH;
      c->bytes += 256 * 4;
      return WRT_OK;
    default: /* RELU, CLIP, LOOKUP */
      op->path = QE_TABLE;
      c->bytes += 256;
      if (op->type == OP_LOOKUP) op->packed_in = 0x2;
      return WRT_OK;
  }
}

/* PRELU of the value x against slope element j (slope bytes sd): x >= zx -> rescale; else (x - zx)(s - zs[ch])
 * requantized with f32(f32(sx * ss[ch]) / sy), ch the element's index along the slope's own axis */
static int32_t prelu(const wrt_model* m, const wrt_op* op, int32_t x, const uint8_t* sd, uint64_t j) {
  const wrt_qplan* p = &op->u.q;
  const wrt_tensor *s = &m->t[op->in[1]], *xt = &m->t[op->in[0]], *y = &m->t[op->out];
  int32_t d = x - xt->q->z;
  if (d >= 0) return q_requant(d, p->ma, &p->rq);
  int64_t inner = 1;
  if (s->q->axis >= 0)
    for (int i = s->q->axis + 1; i < s->rank; i++) inner *= s->dims[i];
  size_t ch = s->q->axis < 0 ? 0 : (size_t)(((int64_t)j / inner) % s->dims[s->q->axis]);
  float mneg = xt->q->s * s->q->scale[ch];
  mneg = mneg / y->q->s;
  return q_requant(d * (q_at(sd, (size_t)j, s->dtype == WRT_U8) - s->q->zp[ch]), mneg, &p->rq);
}

int prepare_qelt(wrt_model* m, wrt_op* op) {
  wrt_qplan* p = &op->u.q;
  const wrt_tensor *x = &m->t[op->in[0]], *y = &m->t[op->out];
  switch (op->path) {
    case QE_EXTREMUM: { /* (the paths of ops a module built for given models lacks are left out) */
      if (!WRT_KEEP(MAXIMUM, QS8) && !WRT_KEEP(MINIMUM, QS8)) return WRT_OK;
      if (!(p->table = q_alloc_table(m, op, 512))) return WRT_ERR_NOMEM;
      q_rescale_table(p->table, x->dtype, x->q, y->q, p->lo, p->hi);
      q_rescale_table(p->table + 256, m->t[op->in[1]].dtype, m->t[op->in[1]].q, y->q, p->lo, p->hi);
      return WRT_OK;
    }
    case QE_TABLE: {
      if (!(p->table = q_alloc_table(m, op, 256))) return WRT_ERR_NOMEM;
      if (WRT_KEEP_OP(LOOKUP) && op->type == OP_LOOKUP) { /* table[x - qmin], indexed here by the raw byte of x */
        const uint8_t* t = m->t[op->in[1]].file_data;
        for (unsigned u = 0; u < 256; u++) p->table[u] = t[x->dtype == WRT_U8 ? u : u ^ 0x80u];
      } else {
        q_rescale_table(p->table, x->dtype, x->q, y->q, p->lo, p->hi);
      }
      return WRT_OK;
    }
    case QE_PRELU: { /* one table per slope element */
      if (!WRT_KEEP(PRELU, QS8)) return WRT_OK;
      const wrt_tensor* s = &m->t[op->in[1]];
      if (!(p->table = q_alloc_table(m, op, 256 * s->count + 1))) return WRT_ERR_NOMEM;
      for (uint64_t j = 0; j < s->count; j++)
        for (unsigned u = 0; u < 256; u++)
          p->table[j * 256 + u] = (uint8_t)prelu(m, op, q_byte(u, x->dtype == WRT_U8), s->file_data, j);
      return WRT_OK;
    }
    case QE_DEQUANTIZE: { /* f32(f32(x - zx) * sx) per raw byte */
      float* t = m_alloc(m, 256 * 4);
      if (!t) return m_alloc_fail(m, op, "a lookup table", 256 * 4);
      for (unsigned u = 0; u < 256; u++)
        t[u] = (float)(q_byte(u, x->dtype == WRT_U8) - x->q->z) * x->q->s;
      p->aux = t;
      return WRT_OK;
    }
    default: return WRT_OK;
  }
}

const char* qelt_kernel(const wrt_op* op) {
  switch (op->path) {
    case QE_ADD: return "qs8 add";
    case QE_TABLE: return "qs8 lookup";
    case QE_PRELU: return "qs8 prelu tables";
    default: return "qs8 element-wise";
  }
}

/* for each innermost run of y under broadcasting: fn(n, a + oa, sa, b + ob*eb, sb, y + row*n); b is input 1, or
 * (PRELU) the tables of its elements, eb bytes each */
typedef void (*qrow_fn)(const wrt_model* m, const wrt_op* op, size_t n, const uint8_t* a, size_t sa, const uint8_t* b,
                        size_t sb, uint8_t* y);

static void each_row(const wrt_model* m, const wrt_op* op, const wrt_bcast* bc, const uint8_t* b, size_t eb,
                     qrow_fn fn) {
  const uint8_t* a = m->t[op->in[0]].data;
  uint8_t* y = m->t[op->out].data;
  int last = bc->rank - 1;
  size_t n = bc->dim[last], idx[WRT_MAX_RANK] = {0}, rows = 1;
  for (int i = 0; i < last; i++) rows *= bc->dim[i];
  for (size_t row = 0; row < rows; row++) {
    size_t oa = 0, ob = 0;
    for (int i = 0; i < last; i++) {
      oa += idx[i] * bc->sa[i];
      ob += idx[i] * bc->sb[i];
    }
    fn(m, op, n, a + oa, bc->sa[last], b + ob * eb, bc->sb[last], y + row * n);
    for (int i = last - 1; i >= 0; i--) {
      if (++idx[i] < bc->dim[i]) break;
      idx[i] = 0;
    }
  }
}

static void add_row(const wrt_model* m, const wrt_op* op, size_t n, const uint8_t* a, size_t sa, const uint8_t* b,
                    size_t sb, uint8_t* y) {
  const wrt_qadd_params* q = &op->u.q.add;
  const wrt_target* tg = m->tg;
  int ua = m->t[op->in[0]].dtype == WRT_U8, ub = m->t[op->in[1]].dtype == WRT_U8;
  if (!ua && !ub) {
    if (sa == 1 && sb == 1 && tg->qadd) return tg->qadd(n, (const int8_t*)a, (const int8_t*)b, (int8_t*)y, q);
    if (sa == 1 && sb == 0 && tg->qadd_scalar)
      return tg->qadd_scalar(n, (const int8_t*)a, (const int8_t*)b, (int8_t*)y, q);
    if (sa == 0 && sb == 1 && tg->qadd_scalar) {
      wrt_qadd_params sw = *q;
      sw.ma = q->mb;
      sw.mb = q->ma;
      return tg->qadd_scalar(n, (const int8_t*)b, (const int8_t*)a, (int8_t*)y, &sw);
    }
  }
  for (size_t i = 0; i < n; i++) {
    uint32_t acc = (uint32_t)q->bias + (uint32_t)q->ma * (uint32_t)q_at(a, i * sa, ua) +
                   (uint32_t)q->mb * (uint32_t)q_at(b, i * sb, ub);
    int32_t v = (int32_t)acc >> q->shift;
    v = v < q->lo ? q->lo : v > q->hi ? q->hi : v;
    y[i] = (uint8_t)(v + q->zy);
  }
}

static void mul_row(const wrt_model* m, const wrt_op* op, size_t n, const uint8_t* a, size_t sa, const uint8_t* b,
                    size_t sb, uint8_t* y) {
  const wrt_qplan* p = &op->u.q;
  int ua = m->t[op->in[0]].dtype == WRT_U8, ub = m->t[op->in[1]].dtype == WRT_U8;
  for (size_t i = 0; i < n; i++)
    y[i] = (uint8_t)q_requant((q_at(a, i * sa, ua) - p->za) * (q_at(b, i * sb, ub) - p->zb), p->ma, &p->rq);
}

static void extremum_row(const wrt_model* m, const wrt_op* op, size_t n, const uint8_t* a, size_t sa,
                         const uint8_t* b, size_t sb, uint8_t* y) {
  const uint8_t *ta = op->u.q.table, *tb = ta + 256;
  int uy = m->t[op->out].dtype == WRT_U8, mx = op->type == OP_MAXIMUM;
  for (size_t i = 0; i < n; i++) {
    uint8_t va = ta[a[i * sa]], vb = tb[b[i * sb]];
    int32_t x0 = q_byte(va, uy), x1 = q_byte(vb, uy);
    y[i] = mx ? (x0 < x1 ? vb : va) : (x1 < x0 ? vb : va);
  }
}

/* b: the 256-byte table of the first slope element of the run; sb: slope elements per step */
static void prelu_row(const wrt_model* m, const wrt_op* op, size_t n, const uint8_t* a, size_t sa, const uint8_t* b,
                      size_t sb, uint8_t* y) {
  (void)m;
  (void)op;
  if (sb == 0 && sa == 1) {
    q_lookup(n, a, b, y);
    return;
  }
  for (size_t i = 0; i < n; i++) y[i] = b[i * sb * 256 + a[i * sa]];
}

/* a slope computed at run time: b is the slope itself */
static void prelu_rt_row(const wrt_model* m, const wrt_op* op, size_t n, const uint8_t* a, size_t sa,
                         const uint8_t* b, size_t sb, uint8_t* y) {
  const uint8_t* s0 = m->t[op->in[1]].data;
  int ux = m->t[op->in[0]].dtype == WRT_U8;
  for (size_t i = 0; i < n; i++) y[i] = (uint8_t)prelu(m, op, q_at(a, i * sa, ux), s0, (uint64_t)(b - s0) + i * sb);
}

int run_qelt(wrt_model* m, wrt_op* op) {
  const wrt_qplan* p = &op->u.q;
  const wrt_tensor *x = &m->t[op->in[0]], *y = &m->t[op->out];
  size_t n = (size_t)y->count;
  const uint8_t* xd = x->data;
  uint8_t* yd = y->data;
  switch (op->path) {
    case QE_TABLE:
      q_lookup(n, xd, p->table, yd);
      return WRT_OK;
    case QE_QUANTIZE: {
      float lo = (float)(qmin_of(y->dtype) - y->q->z), hi = (float)(qmax_of(y->dtype) - y->q->z);
      q_quantize_f32(n, (const float*)(const void*)xd, yd, y->q->s, lo, hi, y->q->z);
      return WRT_OK;
    }
    case QE_DEQUANTIZE: {
      const float* t = p->aux;
      float* yf = (float*)(void*)yd;
      for (size_t i = 0; i < n; i++) yf[i] = t[xd[i]];
      return WRT_OK;
    }
    case QE_DEQUANTIZE_CH: {
      const wrt_quant* q = x->q;
      size_t inner = 1, ax = (size_t)q->axis, C = (size_t)x->dims[ax];
      for (int i = (int)ax + 1; i < x->rank; i++) inner *= (size_t)x->dims[i];
      int u8 = x->dtype == WRT_U8;
      float* yf = (float*)(void*)yd;
      for (size_t i = 0; i < n; i++) {
        size_t ch = (i / inner) % C;
        yf[i] = (float)(q_at(xd, i, u8) - q->zp[ch]) * q->scale[ch];
      }
      return WRT_OK;
    }
    default: break;
  }
  wrt_bcast bc;
  bcast_setup(x, &m->t[op->in[1]], y, &bc);
  if (!bc.dim[bc.rank - 1]) return WRT_OK;
  const uint8_t* b = m->t[op->in[1]].data;
  switch (op->path) {
    case QE_ADD: each_row(m, op, &bc, b, 1, add_row); break; /* (each op's row loop only where the module has it) */
    case QE_MUL: if (WRT_KEEP(MUL, QS8)) each_row(m, op, &bc, b, 1, mul_row); break;
    case QE_EXTREMUM:
      if (WRT_KEEP(MAXIMUM, QS8) || WRT_KEEP(MINIMUM, QS8)) each_row(m, op, &bc, b, 1, extremum_row);
      break;
    case QE_PRELU_RT: if (WRT_KEEP(PRELU, QS8)) each_row(m, op, &bc, b, 1, prelu_rt_row); break;
    default: if (WRT_KEEP(PRELU, QS8)) each_row(m, op, &bc, p->table, 256, prelu_row); break; /* PRELU */
  }
  return WRT_OK;
}
