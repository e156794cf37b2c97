/* int8 pools and reductions (python_ref/qops.py): MAX_POOL_2D and REDUCE_MAX (the max of the integers, rescaled to
 * the output), AVERAGE_POOL_2D (sum of x - zx over the taps, requantized with f32(sx / f32(f32(n) * sy)) per
 * position), MEAN (the same with one divisor), SOFTMAX (int32 exponential table, int32 sum, float32 reciprocal). */
#include "engine.h"

enum { QP_MAX = 1, QP_AVG, QP_MEAN, QP_REDUCE_MAX, QP_SOFTMAX };

/* m = f32(sx / f32(f32(n) * sy)) */
static float avg_scale(float sx, int64_t n, float sy) {
  float d = (float)n * sy;
  return sx / d;
}

int plan_qpool(wrt_model* m, wrt_op* op, wrt_cost* c) {
  wrt_qplan* p = &op->u.q;
  const wrt_tensor *x = &m->t[op->in[0]], *y = &m->t[op->out];
  const wrt_attrs* a = &op->a;
  int pool = op->type == OP_MAX_POOL_2D || op->type == OP_AVERAGE_POOL_2D;
  float lo = pool ? a->act_min : -__builtin_inff(), hi = pool ? a->act_max : __builtin_inff();
  q_out_params(m, op, lo, hi, &p->rq, &p->lo, &p->hi);
  p->za = x->q->z;
  c->work += WORK_VEC * x->count;
  switch (op_code(op)) {
    OP_CASE(MAX_POOL_2D) OP_CASE(AVERAGE_POOL_2D) {
      p->n = x->dims[0];
      p->h = x->dims[1];
      p->w = x->dims[2];
      p->c = x->dims[3];
      p->oh = y->dims[1];
      p->ow = y->dims[2];
      p->kh = a->kernel[0];
      p->kw = a->kernel[1];
      p->ks = p->kh * p->kw;
      p->pix = y->dims[0] * y->dims[1] * y->dims[2];
      uint64_t P = (uint64_t)p->pix, ks = (uint64_t)p->ks;
      op->path = op->type == OP_MAX_POOL_2D ? QP_MAX : QP_AVG;
      c->bytes += ptr_bytes(P * ks) + 1 + (uint64_t)p->c + 64 + 256;
      c->scratch = (uint64_t)p->c * 4 + 4;
      c->work += WORK_DW * sat_mul(y->count, ks);
      return WRT_OK;
    }
    OP_CASE(MEAN) OP_CASE(REDUCE_MAX)
      op->path = op->type == OP_MEAN ? QP_MEAN : QP_REDUCE_MAX;
      c->scratch = y->count * 4 + 4;
      c->bytes += 256;
      return WRT_OK;
    default: /* SOFTMAX */
      if (!WRT_KEEP_OP(SOFTMAX)) return WRT_ERR_UNSUPPORTED; /* a module without it: refused before */
      op->path = QP_SOFTMAX;
      op->packed_in = 0x2;
      c->bytes += 256 * 4;
      c->work += WORK_SCALAR * x->count;
      return WRT_OK;
  }
}

int prepare_qpool(wrt_model* m, wrt_op* op) {
  wrt_qplan* p = &op->u.q;
  const wrt_tensor *x = &m->t[op->in[0]], *y = &m->t[op->out];
  int r;
  switch (op->path) {
    case QP_MAX: case QP_REDUCE_MAX: /* the max, then rescaled to the output: a table (the identity when equal) */
      if (!(p->table = q_alloc_table(m, op, 256))) return WRT_ERR_NOMEM;
      q_rescale_table(p->table, x->dtype, x->q, y->q, p->lo, p->hi);
      if (op->path == QP_REDUCE_MAX) return WRT_OK;
      /* padding never wins a max: it reads the dtype's smallest value */
      if ((r = q_fill_pad(m, op, qmin_of(x->dtype), (size_t)p->c + 64))) return r;
      return q_indirection(m, op, 0);
    case QP_AVG: /* padding reads zx, which adds zx - zx = 0 */
      if ((r = q_fill_pad(m, op, p->za, (size_t)p->c + 64))) return r;
      return q_indirection(m, op, 0);
    case QP_SOFTMAX: {
      int32_t* t = m_alloc(m, 256 * 4);
      if (!t) return m_alloc_fail(m, op, "the exponential table", 256 * 4);
      for (int k = 0; k < 256; k++) t[k] = (int32_t)fb_rd32(m->t[op->in[1]].file_data + 4 * k);
      p->bias = t;
      return WRT_OK;
    }
    default: return WRT_OK;
  }
}

static void run_qpools(wrt_model* m, wrt_op* op) {
  const wrt_qplan* p = &op->u.q;
  const wrt_tensor* x = &m->t[op->in[0]];
  uint8_t* y = t_bytes(m, op->out);
  size_t C = (size_t)p->c, ks = (size_t)p->ks, OH = (size_t)p->oh, OW = (size_t)p->ow;
  int u8 = x->dtype == WRT_U8;
  int32_t* acc = m->scratch;
  for (size_t px = 0; px < (size_t)p->pix; px++) {
    const uint8_t* const* in = (const uint8_t* const*)(const void*)(p->ind + px * ks);
    uint8_t* yp = y + px * C;
    if (!WRT_KEEP(AVERAGE_POOL_2D, QS8) || op->path == QP_MAX) { /* (a module without average pooling: max only) */
      for (size_t c = 0; c < C; c++) acc[c] = q_at(in[0], c, u8);
      for (size_t t = 1; t < ks; t++)
        for (size_t c = 0; c < C; c++) {
          int32_t v = q_at(in[t], c, u8);
          acc[c] = v > acc[c] ? v : acc[c];
        }
      for (size_t c = 0; c < C; c++) yp[c] = p->table[(uint8_t)acc[c]];
      continue;
    }
    for (size_t c = 0; c < C; c++) acc[c] = 0;
    for (size_t t = 0; t < ks; t++)
      for (size_t c = 0; c < C; c++) acc[c] += q_at(in[t], c, u8);
    size_t r = px % (OH * OW);
    int64_t n = pool_divisor(&op->a, p->h, p->w, (int64_t)(r / OW), (int64_t)(r % OW));
    float mult = avg_scale(x->q->s, n, m->t[op->out].q->s);
    int32_t off = (int32_t)((uint32_t)ks * (uint32_t)p->za);
    for (size_t c = 0; c < C; c++) yp[c] = (uint8_t)q_requant(acc[c] - off, mult, &p->rq);
  }
}

/* MEAN and REDUCE_MAX: acc[output element] over the reduced axes (every input element visited once, in order) */
static void run_qreduce(wrt_model* m, wrt_op* op) {
  const wrt_qplan* p = &op->u.q;
  const wrt_tensor *x = &m->t[op->in[0]], *yt = &m->t[op->out];
  int rank = x->rank, u8 = x->dtype == WRT_U8, is_max = op->path == QP_REDUCE_MAX;
  uint8_t red[WRT_MAX_RANK] = {0};
  if (op->a.n_list == 0)
    for (int i = 0; i < rank; i++) red[i] = 1;
  for (int i = 0; i < op->a.n_list; i++) red[op->a.list[i] < 0 ? op->a.list[i] + rank : op->a.list[i]] = 1;
  size_t ostride[WRT_MAX_RANK], s = 1;
  int64_t n = 1;
  for (int i = rank - 1; i >= 0; i--) {
    ostride[i] = red[i] ? 0 : s;
    if (!red[i]) s *= (size_t)x->dims[i];
    else n *= x->dims[i];
  }
  uint32_t* acc = m->scratch;
  size_t ny = (size_t)yt->count;
  for (size_t j = 0; j < ny; j++) acc[j] = is_max ? (uint32_t)qmin_of(x->dtype) : 0u;
  const uint8_t* xd = x->data;
  /* reduced axes in one run (axes of size 1 aside), as a mean over H and W of NHWC: [outer, R, inner], inner rows
   * summed whole (the order of an exact integer sum does not matter) */
  int lo = rank, hi = -1, run = 1;
  for (int i = 0; i < rank; i++)
    if (red[i] && x->dims[i] > 1) lo = lo < i ? lo : i, hi = i;
  for (int i = lo; i <= hi; i++) run &= red[i] || x->dims[i] == 1;
  if (run && hi >= 0 && !is_max) {
    size_t outer = 1, R = 1, inner = 1;
    for (int i = 0; i < rank; i++) *(i < lo ? &outer : i <= hi ? &R : &inner) *= (size_t)x->dims[i];
    for (size_t o = 0; o < outer; o++)
      for (size_t r = 0; r < R; r++, xd += inner)
        for (size_t i = 0; i < inner; i++) acc[o * inner + i] += (uint32_t)(q_at(xd, i, u8) - p->za);
  } else {
    run = 0;
  }
  size_t idx[WRT_MAX_RANK] = {0}, o = 0;
  for (uint64_t i = 0; !run && i < x->count; i++) {
    int32_t v = q_at(xd, (size_t)i, u8);
    if (is_max) acc[o] = v > (int32_t)acc[o] ? (uint32_t)v : acc[o];
    else acc[o] += (uint32_t)(v - p->za);
    for (int k = rank - 1; k >= 0; k--) { /* next index; o follows the kept axes */
      o += ostride[k];
      if (++idx[k] < (size_t)x->dims[k]) break;
      o -= ostride[k] * (size_t)x->dims[k];
      idx[k] = 0;
    }
  }
  uint8_t* y = yt->data;
  float mult = avg_scale(x->q->s, n > 1 ? n : 1, yt->q->s);
  for (size_t j = 0; j < ny; j++)
    y[j] = is_max ? p->table[(uint8_t)acc[j]] : (uint8_t)q_requant((int32_t)acc[j], mult, &p->rq);
}

/* e = T[max - x] along the axis, S = sum e, r = f32(1 / f32(f32(S) * sy)), y = zy + clamp(rne(f32(f32(e) * r))) */
static void run_softmax(wrt_model* m, wrt_op* op) {
  const wrt_qplan* p = &op->u.q;
  const wrt_tensor *x = &m->t[op->in[0]], *yt = &m->t[op->out];
  int ax = ((op->a.axis % x->rank) + x->rank) % x->rank, u8 = x->dtype == WRT_U8;
  size_t outer = 1, inner = 1, D = (size_t)x->dims[ax];
  for (int i = 0; i < ax; i++) outer *= (size_t)x->dims[i];
  for (int i = ax + 1; i < x->rank; i++) inner *= (size_t)x->dims[i];
  const uint8_t* xd = x->data;
  uint8_t* y = yt->data;
  const int32_t* T = p->bias;
  float sy = yt->q->s;
  for (size_t o = 0; o < outer; o++)
    for (size_t in = 0; in < inner; in++) {
      size_t base = o * D * inner + in;
      int32_t mx = q_at(xd, base, u8);
      for (size_t d = 1; d < D; d++) {
        int32_t v = q_at(xd, base + d * inner, u8);
        mx = v > mx ? v : mx;
      }
      uint32_t S = 0;
      for (size_t d = 0; d < D; d++) S += (uint32_t)T[mx - q_at(xd, base + d * inner, u8)];
      float den = (float)(int32_t)S * sy;
      float r = 1.0f / den;
      for (size_t d = 0; d < D; d++)
        y[base + d * inner] = (uint8_t)q_finish((float)T[mx - q_at(xd, base + d * inner, u8)] * r, &p->rq);
    }
}

int run_qpool(wrt_model* m, wrt_op* op) {
  switch (op->path) {
    case QP_MAX: case QP_AVG: run_qpools(m, op); break;
    case QP_SOFTMAX:
      if (WRT_KEEP_OP(SOFTMAX)) run_softmax(m, op); /* (planned only in modules that hold it) */
      break;
    default:
      if (WRT_KEEP_OP(MEAN) || WRT_KEEP_OP(REDUCE_MAX)) run_qreduce(m, op);
      break;
  }
  return WRT_OK;
}
