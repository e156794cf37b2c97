/* int8 data movement that is more than a copy (python_ref/qops.py): CONCATENATION rescales each input to the
 * output's parameters (a byte copy where they are equal and no clamp binds), RESIZE copies (nearest) or blends the raw
 * integers with 11-bit weights (bilinear: y = (v + 2^21) >> 22). RESHAPE, TRANSPOSE, SLICE, DEPTH_TO_SPACE, GATHER
 * and PAD move bytes through data.c (PAD fills the quantized pad value). */
#include "engine.h"

enum { QD_CONCAT = 1, QD_RESIZE };
#define BILINEAR_BITS 11

typedef struct {
  int32_t i0, i1, a; /* input indices and the integer weight of i1, in [0, 2^11] */
} qlerp;

int plan_qdata(wrt_model* m, wrt_op* op, wrt_cost* c) {
  wrt_qplan* p = &op->u.q;
  const wrt_tensor* y = &m->t[op->out];
  c->work += WORK_COPY * y->count;
  if (op->type == OP_CONCATENATION) {
    q_out_params(m, op, op->a.act_min, op->a.act_max, &p->rq, &p->lo, &p->hi);
    op->path = QD_CONCAT;
    c->bytes += 256 * (uint64_t)op->n_in + 1;
    c->work += WORK_COPY * (uint64_t)op->n_in;
    return WRT_OK;
  }
  op->path = QD_RESIZE;
  c->bytes += sizeof(qlerp) * ((uint64_t)y->dims[1] + (uint64_t)y->dims[2]);
  if (op->a.mode != WRT_ResizeMode_NEAREST) c->work += WORK_VEC * y->count;
  return WRT_OK;
}

static qlerp* resize_axis(wrt_model* m, int out, int in, float scale, const wrt_attrs* a) {
  qlerp* t = m_alloc(m, sizeof(qlerp) * (uint64_t)out);
  if (!t) return 0;
  for (int i = 0; i < out; i++) {
    float c = resize_coord(i, out, in, scale, a->coord);
    if (a->mode == WRT_ResizeMode_NEAREST) {
      t[i].i0 = t[i].i1 = nearest_index(c, in, a->nearest);
      t[i].a = 0;
      continue;
    }
    c = c < 0.0f ? 0.0f : c; /* clamped to [0, in - 1] in float32 */
    c = c > (float)(in - 1) ? (float)(in - 1) : c;
    int32_t i0 = (int32_t)rt_floor(c);
    float frac = c - (float)i0;
    t[i].i0 = i0;
    t[i].i1 = i0 + 1 < in ? i0 + 1 : in - 1;
    t[i].a = q_rne(frac * (float)(1 << BILINEAR_BITS));
  }
  return t;
}

int prepare_qdata(wrt_model* m, wrt_op* op) {
  wrt_qplan* p = &op->u.q;
  const wrt_tensor *x = &m->t[op->in[0]], *y = &m->t[op->out];
  if (!WRT_KEEP(RESIZE, QS8) || op->path == QD_CONCAT) { /* one rescale table per input; NULL entries copy */
    if (!(p->table = q_alloc_table(m, op, 256 * (size_t)op->n_in + 1))) return WRT_ERR_NOMEM;
    for (int k = 0; k < op->n_in; k++) {
      const wrt_tensor* t = &m->t[op->in[k]];
      q_rescale_table(p->table + 256 * k, t->dtype, t->q, y->q, p->lo, p->hi);
    }
    return WRT_OK;
  }
  qlerp* th = resize_axis(m, y->dims[1], x->dims[1], op->a.scales[0], &op->a);
  qlerp* tw = resize_axis(m, y->dims[2], x->dims[2], op->a.scales[1], &op->a);
  if (!th || !tw)
    return m_alloc_fail(m, op, "the resize tables", sizeof(qlerp) * ((uint64_t)y->dims[1] + (uint64_t)y->dims[2]));
  p->aux = th;
  p->bias = (const int32_t*)(const void*)tw;
  return WRT_OK;
}

static int is_identity(const uint8_t* t) {
  for (unsigned u = 0; u < 256; u++)
    if (t[u] != u) return 0;
  return 1;
}

static void run_concat(wrt_model* m, wrt_op* op) {
  const wrt_tensor* y = &m->t[op->out];
  int ax = op->a.axis;
  size_t outer = 1, inner = 1;
  for (int i = 0; i < ax; i++) outer *= (size_t)y->dims[i];
  for (int i = ax + 1; i < y->rank; i++) inner *= (size_t)y->dims[i];
  size_t row = (size_t)y->dims[ax] * inner, off = 0;
  for (int k = 0; k < op->n_in; k++) {
    const wrt_tensor* t = &m->t[op->in[k]];
    const uint8_t* table = op->u.q.table + 256 * k;
    int copy = is_identity(table);
    size_t chunk = (size_t)t->dims[ax] * inner;
    for (size_t o = 0; o < outer; o++) {
      uint8_t* d = (uint8_t*)y->data + o * row + off;
      const uint8_t* s = (const uint8_t*)t->data + o * chunk;
      if (copy) rt_copy(d, s, chunk);
      else q_lookup(chunk, s, table, d);
    }
    off += chunk;
  }
}

static void run_resize(wrt_model* m, wrt_op* op) {
  const wrt_tensor *x = &m->t[op->in[0]], *y = &m->t[op->out];
  const qlerp *th = op->u.q.aux, *tw = (const qlerp*)(const void*)op->u.q.bias;
  size_t N = (size_t)y->dims[0], OH = (size_t)y->dims[1], OW = (size_t)y->dims[2], C = (size_t)y->dims[3];
  size_t H = (size_t)x->dims[1], W = (size_t)x->dims[2];
  const uint8_t* xd = x->data;
  uint8_t* yd = y->data;
  int u8 = x->dtype == WRT_U8;
  const int32_t one = 1 << BILINEAR_BITS, half = 1 << (2 * BILINEAR_BITS - 1);
  for (size_t n = 0; n < N; n++)
    for (size_t oh = 0; oh < OH; oh++) {
      const qlerp* h = &th[oh];
      for (size_t ow = 0; ow < OW; ow++) {
        const qlerp* w = &tw[ow];
        uint8_t* o = yd + ((n * OH + oh) * OW + ow) * C;
        const uint8_t* p00 = xd + ((n * H + (size_t)h->i0) * W + (size_t)w->i0) * C;
        if (op->a.mode == WRT_ResizeMode_NEAREST) {
          rt_copy(o, p00, C);
          continue;
        }
        const uint8_t* p01 = xd + ((n * H + (size_t)h->i0) * W + (size_t)w->i1) * C;
        const uint8_t* p10 = xd + ((n * H + (size_t)h->i1) * W + (size_t)w->i0) * C;
        const uint8_t* p11 = xd + ((n * H + (size_t)h->i1) * W + (size_t)w->i1) * C;
        for (size_t c = 0; c < C; c++) {
          int32_t top = q_at(p00, c, u8) * (one - w->a) + q_at(p01, c, u8) * w->a;
          int32_t bottom = q_at(p10, c, u8) * (one - w->a) + q_at(p11, c, u8) * w->a;
          int32_t v = top * (one - h->a) + bottom * h->a;
          o[c] = (uint8_t)((v + half) >> (2 * BILINEAR_BITS));
        }
      }
    }
}

int run_qdata(wrt_model* m, wrt_op* op) {
  if (op->path == QD_CONCAT) run_concat(m, op);
  else if (WRT_KEEP(RESIZE, QS8)) run_resize(m, op); /* (a module without it: CONCATENATION only) */
  return WRT_OK;
}
