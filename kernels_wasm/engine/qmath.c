/* The int8 arithmetic every quantized op shares, exactly as python_ref/quant.py: output bounds, QUANTIZE of a value,
 * rescale tables, zero-point rows. All float work is float32, one operation at a time (-ffp-contract=off). */
#include "engine.h"

int32_t q_bound(float v, const wrt_quant* q, int dtype) {
  int32_t qmin = qmin_of(dtype), qmax = qmax_of(dtype);
  if (v == -__builtin_inff()) return qmin;
  if (v == __builtin_inff()) return qmax;
  float t = v / q->s;
  t = t + (float)q->z;
  t = t < (float)qmin ? (float)qmin : t;
  t = t > (float)qmax ? (float)qmax : t;
  return q_rne(t);
}

void q_out_params(const wrt_model* m, const wrt_op* op, float lo, float hi, wrt_qparams* p, int32_t* ilo,
                  int32_t* ihi) {
  const wrt_tensor* y = &m->t[op->out];
  int32_t l = q_bound(lo, y->q, y->dtype), h = q_bound(hi, y->q, y->dtype);
  p->zy = y->q->z;
  p->lo = (float)(l - p->zy);
  p->hi = (float)(h - p->zy);
  p->xmask = m->tg->qgemm_xoff ? 0x80808080u : 0;
  if (ilo) *ilo = l;
  if (ihi) *ihi = h;
}

int32_t q_quantize_value(float x, const wrt_quant* q, int dtype) {
  float v = x / q->s;
  if (v != v) v = 0.0f;
  float lo = (float)(qmin_of(dtype) - q->z), hi = (float)(qmax_of(dtype) - q->z);
  v = v < lo ? lo : v;
  v = v > hi ? hi : v;
  return q_rne(v) + q->z;
}

void q_rescale_table(uint8_t* table, int xdt, const wrt_quant* qx, const wrt_quant* qy, int32_t lo, int32_t hi) {
  float m = qx->s / qy->s;
  wrt_qparams p = {(float)(lo - qy->z), (float)(hi - qy->z), qy->z, 0};
  for (unsigned u = 0; u < 256; u++) table[u] = (uint8_t)q_requant(q_byte(u, xdt == WRT_U8) - qx->z, m, &p);
}

uint8_t* q_alloc_table(wrt_model* m, const wrt_op* op, size_t n) {
  uint8_t* t = m_alloc(m, n);
  if (!t) m_alloc_fail(m, op, "a lookup table", n);
  return t;
}

int q_fill_pad(wrt_model* m, wrt_op* op, int32_t z, size_t bytes) {
  int8_t* pad = m_alloc(m, bytes);
  if (!pad) return m_alloc_fail(m, op, "the padding row", bytes);
  for (size_t i = 0; i < bytes; i++) pad[i] = (int8_t)z;
  op->u.q.pad = pad;
  return WRT_OK;
}

void q_lookup(size_t n, const uint8_t* x, const uint8_t* table, uint8_t* y) {
  for (size_t i = 0; i < n; i++) y[i] = table[x[i]];
}

/* int8 indirection for the geometry in op->u.q (n, h, w, c, oh, ow, kw, ks, pix): per block of MR output pixels,
 * ks*mr row pointers, tap-major (MR = 0: per pixel, pixel-major); padding taps point to op->u.q.pad */
int q_indirection(wrt_model* m, wrt_op* op, size_t MR) {
  wrt_qplan* p = &op->u.q;
  size_t P = (size_t)p->pix, ks = (size_t)p->ks, KW = (size_t)p->kw, C = (size_t)p->c;
  uint64_t bytes = ptr_bytes((uint64_t)P * ks) + 1;
  const int8_t** ind = m_alloc(m, bytes);
  if (!ind) return m_alloc_fail(m, op, "the indirection buffer", bytes);
  const int8_t* x = (const int8_t*)m->t[op->in[0]].data;
  for (size_t p0 = 0; p0 < P; p0 += MR ? MR : 1) {
    size_t mr = !MR ? 1 : P - p0 < MR ? P - p0 : MR;
    for (size_t t = 0; t < ks; t++)
      for (size_t i = 0; i < mr; i++) {
        int64_t src = tap_input_pixel(&op->a, p->h, p->w, p->oh, p->ow, (int64_t)(p0 + i), (int64_t)(t / KW),
                                      (int64_t)(t % KW));
        ind[p0 * ks + t * mr + i] = src >= 0 ? x + (size_t)src * C : p->pad;
      }
  }
  p->ind = ind;
  return WRT_OK;
}
