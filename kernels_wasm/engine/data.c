/* Data movement for any element size: RESHAPE, TRANSPOSE, CONCATENATION, SLICE, PAD, RESIZE, DEPTH_TO_SPACE,
 * GATHER, SCATTER_ND, EXPAND, SPLIT. Most are one strided copy (a view of the input with per-axis strides) into the output. */
#include "engine.h"
#ifdef __wasm_simd128__
#include <wasm_simd128.h>
#endif

/* dst[idx] = src[sum idx_i * sstr_i] over `dims`, dst contiguous unless dstr is given; strides in elements */
static void strided_copy(uint8_t* dst, const uint8_t* src, size_t es, int rank, const size_t* dims,
                         const int64_t* sstr, const int64_t* dstr) {
  size_t total = 1;
  for (int i = 0; i < rank; i++) total *= dims[i];
  if (total == 0) return;
  if (rank == 0) {
    rt_copy(dst, src, es);
    return;
  }
  int last = rank - 1;
  size_t n = dims[last], rows = total / n, idx[WRT_MAX_RANK + 2] = {0};
  int64_t cs[WRT_MAX_RANK + 2];
  size_t acc = 1;
  for (int i = rank - 1; i >= 0; i--) { /* contiguous destination strides */
    cs[i] = dstr ? dstr[i] : (int64_t)acc;
    acc *= dims[i];
  }
  int64_t ss = sstr[last], ds = cs[last];
  for (size_t row = 0; row < rows; row++) {
    int64_t so = 0, dof = 0;
    for (int i = 0; i < last; i++) {
      so += (int64_t)idx[i] * sstr[i];
      dof += (int64_t)idx[i] * cs[i];
    }
    const uint8_t* s = src + so * (int64_t)es;
    uint8_t* d = dst + dof * (int64_t)es;
    if (ss == 1 && ds == 1) rt_copy(d, s, n * es);
    else if (es == 4)
      for (size_t j = 0; j < n; j++) ((uint32_t*)(void*)d)[(int64_t)j * ds] = ((const uint32_t*)(const void*)s)[(int64_t)j * ss];
    else if (es == 1)
      for (size_t j = 0; j < n; j++) d[(int64_t)j * ds] = s[(int64_t)j * ss];
    else
      for (size_t j = 0; j < n; j++) rt_copy(d + (int64_t)j * ds * (int64_t)es, s + (int64_t)j * ss * (int64_t)es, es);
    for (int i = last - 1; i >= 0; i--) {
      if (++idx[i] < dims[i]) break;
      idx[i] = 0;
    }
  }
}

/* y[r][c] = x[c][r] for r0 <= r < r1, c < C, in TILE x TILE tiles so reads and writes both stay within a few cache
 * lines; for float32 and for int8 elements */
enum { TILE = 16 };
#define TRANSPOSE2D(NAME, T)                                                                                     \
  static void NAME(T* y, const T* x, size_t R, size_t C, size_t r0, size_t r1) {                                 \
    if (C == 3) { /* RGB planes -> pixels, the usual graph input: three read streams, one write stream */       \
      const T *x0 = x, *x1 = x + R, *x2 = x + 2 * R;                                                             \
      for (size_t r = r0; r < r1; r++) {                                                                         \
        y[3 * r] = x0[r];                                                                                        \
        y[3 * r + 1] = x1[r];                                                                                    \
        y[3 * r + 2] = x2[r];                                                                                    \
      }                                                                                                          \
      return;                                                                                                    \
    }                                                                                                            \
    for (size_t t0 = r0; t0 < r1; t0 += TILE) {                                                                  \
      size_t t1 = r1 - t0 < TILE ? r1 : t0 + TILE;                                                               \
      for (size_t c0 = 0; c0 < C; c0 += TILE) {                                                                  \
        size_t c1 = C - c0 < TILE ? C : c0 + TILE;                                                               \
        for (size_t r = t0; r < t1; r++)                                                                         \
          for (size_t c = c0; c < c1; c++) y[r * C + c] = x[c * R + r];                                          \
      }                                                                                                          \
    }                                                                                                            \
  }
TRANSPOSE2D(transpose2d_f32, uint32_t)
TRANSPOSE2D(transpose2d_i8, uint8_t)

/* a batch of 2-D transposes as tasks: ranges of TILE output rows of one matrix */
typedef struct {
  void* y;
  const void* x;
  size_t es, R, C, tiles;
#if !defined(__wasm__)
  wrt_interleave3_fn interleave3; /* the target's vector RGB interleave, or NULL */
#endif
} transpose_job;

static void transpose_rows(void* ctx, size_t t0, size_t t1) {
  const transpose_job* j = ctx;
#if !defined(__wasm__)
  if (j->es == 4 && j->C == 3 && j->interleave3) { /* each matrix's run of tiles in one call */
    for (size_t t = t0, e; t < t1; t = e) {
      size_t k = t / j->tiles, r0 = t % j->tiles * TILE, R = j->R;
      e = (k + 1) * j->tiles < t1 ? (k + 1) * j->tiles : t1;
      size_t r1 = (e - k * j->tiles) * TILE < R ? (e - k * j->tiles) * TILE : R;
      const float* x = (const float*)j->x + k * 3 * R;
      j->interleave3(r1 - r0, x + r0, x + R + r0, x + 2 * R + r0, (float*)j->y + k * 3 * R + 3 * r0);
    }
    return;
  }
#endif
  for (size_t t = t0; t < t1; t++) {
    size_t k = t / j->tiles, r0 = t % j->tiles * TILE, r1 = j->R - r0 < TILE ? j->R : r0 + TILE, off = k * j->R * j->C;
    if (j->es == 4) transpose2d_f32((uint32_t*)j->y + off, (const uint32_t*)j->x + off, j->R, j->C, r0, r1);
    else transpose2d_i8((uint8_t*)j->y + off, (const uint8_t*)j->x + off, j->R, j->C, r0, r1);
  }
}

static void contiguous_strides(const wrt_tensor* t, int64_t* s) {
  int64_t acc = 1;
  for (int i = t->rank - 1; i >= 0; i--) {
    s[i] = acc;
    acc *= t->dims[i];
  }
}

/* ---- RESIZE tables, built at load ------------------------------------------------------------------------------- */
typedef wrt_lerp lerp;

/* the input coordinate of output index xo, in float32 as python_ref (and onnxruntime) compute it */
float resize_coord(int xo, int out, int in, float scale, int coord) {
  float s = scale > 0 ? scale : (float)out / (float)in;
  float x = (float)xo;
  switch (coord) {
    case 0: return (x + 0.5f) / s - 0.5f;
    case 3: return out > 1 ? (x + 0.5f) / s - 0.5f : 0.0f;
    case 1: return out > 1 ? x * (float)(in - 1) / (float)(out - 1) : 0.0f;
    case 2: return x / s;
    default: return (x + 0.5f) / s;
  }
}

int32_t nearest_index(float x, int in, int mode) {
  float fl = (float)rt_floor(x);
  int tie = (x - fl) == 0.5f;
  float idx;
  if (mode == 0) idx = tie ? fl : (float)rt_floor(x + 0.5f);
  else if (mode == 1) idx = tie ? fl + 1 : (float)rt_floor(x + 0.5f);
  else if (mode == 2) idx = fl;
  else idx = (float)rt_ceil(x);
  if (!(idx >= 0)) idx = 0; /* also NaN */
  if (idx > (float)(in - 1)) idx = (float)(in - 1);
  return (int32_t)idx;
}

static lerp* resize_axis(wrt_model* m, int out, int in, float scale, const wrt_attrs* a) {
  lerp* t = m_alloc_shaped(m, sizeof(lerp) * (uint64_t)out);
  if (!t) return 0;
  for (int i = 0; i < out; i++) {
    float c = resize_coord(i, out, in, scale, a->coord);
    if (a->mode == 0) {
      t[i].i0 = t[i].i1 = nearest_index(c, in, a->nearest);
      t[i].f = 0;
    } else {
      double x = c;
      if (!(x >= 0)) x = 0;
      if (x > in - 1) x = in - 1;
      int32_t i0 = (int32_t)rt_floor(x);
      t[i].i0 = i0;
      t[i].i1 = i0 + 1 < in ? i0 + 1 : in - 1;
      t[i].f = x - i0;
    }
  }
  return t;
}

/* ---- PAD index maps --------------------------------------------------------------------------------------------- */
static int32_t pad_source(int64_t o, int64_t lo, int64_t d, int mode) {
  int64_t i = o - lo;
  if (i >= 0 && i < d) return (int32_t)i;
  if (mode == 0 || d == 0) return -1;
  if (mode == 2) return (int32_t)(i < 0 ? 0 : d - 1);
  if (d == 1) return 0;
  int64_t period = 2 * (d - 1); /* reflect without repeating the edge */
  i %= period;
  if (i < 0) i += period;
  return (int32_t)(i < d ? i : period - i);
}

WRT_FOR_SIZE int plan_data(wrt_model* m, wrt_op* op, wrt_cost* c) {
  const wrt_tensor *x = &m->t[op->in[0]], *y = &m->t[op->out];
  if (!is_unclamped(&op->clamp) && x->dtype != WRT_F32)
    return op_fail(op, WRT_ERR_UNSUPPORTED, "a fused clamp on %s data is not implemented by the C engine",
                   dtype_name(x->dtype));
  c->work += WORK_COPY * y->count;
  switch (op_code(op)) {
    OP_CASE(SPLIT) c->work += WORK_COPY * x->count; break;
    OP_CASE(SCATTER_ND)
      c->work += WORK_COPY * (x->count + m->t[op->in[2]].count) + WORK_SCALAR * m->t[op->in[1]].count;
      if (op->a.reduction != WRT_ScatterReduction_NONE && x->dtype != WRT_F32 && x->dtype != WRT_I32 &&
          x->dtype != WRT_I64)
        return op_fail(op, WRT_ERR_UNSUPPORTED, "a %s reduction on %s data is not supported", "ScatterND",
                       dtype_name(x->dtype));
      break;
    OP_CASE(RESIZE)
      c->shape_bytes += sizeof(lerp) * ((uint64_t)y->dims[1] + (uint64_t)y->dims[2]);
      if (op->a.mode != 0) c->work += WORK_SCALAR * y->count;
      break;
    OP_CASE(PAD)
      for (int i = 0; i < y->rank; i++) c->shape_bytes += sizeof(int32_t) * (uint64_t)y->dims[i];
      c->shape_bytes += sizeof(int32_t);
      if (x->dtype == WRT_F16 && op->a.value != 0)
        return op_fail(op, WRT_ERR_UNSUPPORTED, "a non-zero float16 pad value is not supported");
      break;
    OP_CASE(CONCATENATION) { /* one copy per input and outer index, even where an input is empty on the axis */
      uint64_t outer = 1;
      for (int i = 0; i < op->a.axis; i++) outer *= (uint64_t)y->dims[i];
      c->work += WORK_COPY * outer * (uint64_t)op->n_in;
      break;
    }
    OP_CASE(GATHER) { /* run-time indices are checked on every run */
      const wrt_tensor* it = &m->t[op->in[1]];
      c->work += WORK_COPY * it->count;
      if (it->is_const) { /* constant indices are checked once, here */
        int ax = op->a.axis < 0 ? op->a.axis + x->rank : op->a.axis;
        for (uint64_t k = 0; k < it->count; k++) {
          int64_t v;
          if (it->dtype == WRT_I32) v = (int32_t)fb_rd32(it->file_data + 4 * k);
          else v = (int64_t)fb_rd64(it->file_data + 8 * k);
          if (v < -(int64_t)x->dims[ax] || v >= x->dims[ax])
            return op_fail(op, WRT_ERR_FORMAT, "index %l out of range [%d, %d) on axis %d", v, -x->dims[ax],
                           x->dims[ax], ax);
        }
      }
      break;
    }
    default: break;
  }
  return WRT_OK;
}

WRT_FOR_SIZE int prepare_data(wrt_model* m, wrt_op* op) {
  const wrt_tensor *x = &m->t[op->in[0]], *y = &m->t[op->out];
  if (WRT_KEEP_OP(RESIZE) && op->type == OP_RESIZE) {
    lerp* th = resize_axis(m, y->dims[1], x->dims[1], op->a.scales[0], &op->a);
    lerp* tw = resize_axis(m, y->dims[2], x->dims[2], op->a.scales[1], &op->a);
    if (!th || !tw)
      return m_alloc_fail(m, op, "the resize tables", sizeof(lerp) * ((uint64_t)y->dims[1] + (uint64_t)y->dims[2]));
    op->u.data.h = th;
    op->u.data.w = tw;
  } else if (op->type == OP_PAD) {
    uint64_t total = 0;
    for (int i = 0; i < y->rank; i++) total += (uint64_t)y->dims[i];
    int32_t* maps = m_alloc_shaped(m, sizeof(int32_t) * (total + 1));
    if (!maps) return m_alloc_fail(m, op, "the pad index maps", sizeof(int32_t) * (total + 1));
    int32_t* o = maps;
    for (int i = 0; i < y->rank; i++)
      for (int64_t k = 0; k < y->dims[i]; k++) *o++ = pad_source(k, op->a.list[i], x->dims[i], op->a.mode);
    op->u.data.maps = maps;
  }
  return WRT_OK;
}

static void pad_value_bytes(const wrt_tensor* t, float v, uint8_t* out) {
  rt_zero(out, 8);
  if (t->q) { /* quantized: the real value, quantized (python_ref/qops.py) */
    out[0] = (uint8_t)q_quantize_value(v, t->q, t->dtype);
    return;
  }
  switch (t->dtype) {
    case WRT_F32: __builtin_memcpy(out, &v, 4); break;
    case WRT_I8: case WRT_U8: out[0] = (uint8_t)(int64_t)v; break;
    case WRT_BOOL: out[0] = v != 0; break;
    case WRT_I32: { int32_t i = (int32_t)(int64_t)v; __builtin_memcpy(out, &i, 4); break; }
    case WRT_I64: { int64_t i = (int64_t)v; __builtin_memcpy(out, &i, 8); break; }
    default: break; /* float16: only 0 is accepted at load */
  }
}

/* n elements of es bytes, each the pad value */
static void fill(uint8_t* d, size_t n, const uint8_t* val, size_t es) {
  if (es == 4) {
    uint32_t v;
    __builtin_memcpy(&v, val, 4);
    for (size_t j = 0; j < n; j++) ((uint32_t*)(void*)d)[j] = v;
  } else {
    for (size_t j = 0; j < n; j++) rt_copy(d + j * es, val, es);
  }
}

static int run_pad(wrt_model* m, wrt_op* op) {
  const wrt_tensor *x = &m->t[op->in[0]], *y = &m->t[op->out];
  size_t es = x->esize;
  int r = y->rank;
  uint8_t val[8] = {0};
  if (op->a.mode == WRT_PadMode_CONSTANT) pad_value_bytes(y, op->a.value, val); /* (checked representable at load) */
  const int32_t* map[WRT_MAX_RANK];
  const int32_t* p = op->u.data.maps;
  for (int i = 0; i < r; i++) {
    map[i] = p;
    p += y->dims[i];
  }
  int64_t xs[WRT_MAX_RANK];
  contiguous_strides(x, xs);
  const uint8_t* src = x->data;
  uint8_t* dst = y->data;
  if (y->count == 0) return WRT_OK;
  if (r == 0) {
    rt_copy(dst, src, es);
    return WRT_OK;
  }
  size_t n = (size_t)y->dims[r - 1], rows = (size_t)y->count / n, idx[WRT_MAX_RANK] = {0};
  /* constant mode: each output row is [lo fill | the source row | hi fill], two fills and one copy */
  size_t lo = (size_t)op->a.list[r - 1], mid = (size_t)x->dims[r - 1];
  int runs = op->a.mode == 0 && lo + mid <= n;
  for (size_t row = 0; row < rows; row++) {
    int64_t so = 0;
    int valid = 1;
    for (int i = 0; i < r - 1; i++) {
      int32_t s = map[i][idx[i]];
      if (s < 0) valid = 0;
      so += (int64_t)s * xs[i];
    }
    uint8_t* d = dst + row * n * es;
    if (runs) {
      if (!valid) {
        fill(d, n, val, es);
      } else {
        fill(d, lo, val, es);
        rt_copy(d + lo * es, src + so * (int64_t)es, mid * es);
        fill(d + (lo + mid) * es, n - lo - mid, val, es);
      }
    } else {
      for (size_t j = 0; j < n; j++) {
        int32_t s = map[r - 1][j];
        rt_copy(d + j * es, valid && s >= 0 ? src + (so + s) * (int64_t)es : val, es);
      }
    }
    for (int i = r - 2; i >= 0; i--) {
      if (++idx[i] < (size_t)y->dims[i]) break;
      idx[i] = 0;
    }
  }
  return WRT_OK;
}

typedef struct {
  const wrt_model* m;
  const wrt_op* op;
} data_job;

/* one output pixel of a bilinear RESIZE over C channels: along H, then along W (python_ref's order), in float32
 * with the weights rounded to float32 (within a few ulp of python_ref's double). In vectors of 4 channels: the double
 * version ran 0.45 ms of pose_detection's 17 in Chromium, and clang at -Os vectorises the plain loop with a masked
 * load per lane. */
static void blend_pixel(float* restrict o, const float* p00, const float* p10, const float* p01, const float* p11,
                        float fh, float fw, size_t C) {
  const float gh = 1.0f - fh, gw = 1.0f - fw;
  size_t c = 0;
#ifdef __wasm_simd128__
  const v128_t vfh = wasm_f32x4_splat(fh), vgh = wasm_f32x4_splat(gh), vfw = wasm_f32x4_splat(fw),
               vgw = wasm_f32x4_splat(gw);
  for (; c + 4 <= C; c += 4) {
    v128_t r0 = wasm_f32x4_add(wasm_f32x4_mul(wasm_v128_load(p00 + c), vgh),
                               wasm_f32x4_mul(wasm_v128_load(p10 + c), vfh));
    v128_t r1 = wasm_f32x4_add(wasm_f32x4_mul(wasm_v128_load(p01 + c), vgh),
                               wasm_f32x4_mul(wasm_v128_load(p11 + c), vfh));
    wasm_v128_store(o + c, wasm_f32x4_add(wasm_f32x4_mul(r0, vgw), wasm_f32x4_mul(r1, vfw)));
  }
#endif
  for (; c < C; c++) o[c] = (p00[c] * gh + p10[c] * fh) * gw + (p01[c] * gh + p11[c] * fh) * fw;
}

/* output rows [r0, r1) of n * OH + oh */
static void resize_rows(void* ctx, size_t begin, size_t end) {
  const wrt_model* m = ((const data_job*)ctx)->m;
  const wrt_op* op = ((const data_job*)ctx)->op;
  const wrt_tensor *x = &m->t[op->in[0]], *y = &m->t[op->out];
  const lerp *th = op->u.data.h, *tw = op->u.data.w;
  size_t OH = (size_t)y->dims[1], OW = (size_t)y->dims[2], C = (size_t)y->dims[3];
  size_t H = (size_t)x->dims[1], W = (size_t)x->dims[2];
  const float* xd = t_f32(m, op->in[0]);
  float* yd = t_f32(m, op->out);
  for (size_t row = begin; row < end; row++) {
    size_t n = row / OH, oh = row % OH;
    const lerp* h = &th[oh];
    const float* r0 = xd + (n * H + (size_t)h->i0) * W * C; /* the two input rows */
    const float* r1 = xd + (n * H + (size_t)h->i1) * W * C;
    float* o = yd + (n * OH + oh) * OW * C;
    for (size_t ow = 0; ow < OW; ow++, o += C) {
      const lerp* w = &tw[ow];
      size_t c0 = (size_t)w->i0 * C, c1 = (size_t)w->i1 * C;
      if (op->a.mode == 0) rt_copy(o, r0 + c0, C * sizeof(float));
      else blend_pixel(o, r0 + c0, r1 + c0, r0 + c1, r1 + c1, (float)h->f, (float)w->f, C);
    }
  }
}

static int run_resize(wrt_model* m, wrt_op* op) {
  data_job j = {m, op};
  op_parallel_rows(m, op, (size_t)(m->t[op->out].dims[0] * m->t[op->out].dims[1]), resize_rows, &j);
  return WRT_OK;
}

static int run_gather(wrt_model* m, wrt_op* op) {
  const wrt_tensor *x = &m->t[op->in[0]], *it = &m->t[op->in[1]];
  int ax = op->a.axis < 0 ? op->a.axis + x->rank : op->a.axis;
  size_t outer = 1, inner = 1, D = (size_t)x->dims[ax], K = (size_t)it->count, es = x->esize;
  for (int i = 0; i < ax; i++) outer *= (size_t)x->dims[i];
  for (int i = ax + 1; i < x->rank; i++) inner *= (size_t)x->dims[i];
  const uint8_t* src = x->data;
  uint8_t* dst = m->t[op->out].data;
  for (size_t k = 0; k < K; k++) { /* run-time indices are checked before anything is written */
    int64_t v = it->dtype == WRT_I32 ? ((const int32_t*)it->data)[k] : ((const int64_t*)it->data)[k];
    if (v < -(int64_t)D || v >= (int64_t)D)
      return op_fail(op, WRT_ERR_INPUT, "index %l out of range [%l, %l) on axis %d", v, -(int64_t)D, (int64_t)D, ax);
  }
  for (size_t o = 0; o < outer; o++)
    for (size_t k = 0; k < K; k++) {
      int64_t v = it->dtype == WRT_I32 ? ((const int32_t*)it->data)[k] : ((const int64_t*)it->data)[k];
      if (v < 0) v += (int64_t)D;
      rt_copy(dst + ((o * K + k) * inner) * es, src + ((o * D + (size_t)v) * inner) * es, inner * es);
    }
  return WRT_OK;
}

/* ONNX ScatterND: copy x, then write the updates in index order (indices checked before anything is written) */
static int run_scatter_nd(wrt_model* m, wrt_op* op) {
  const wrt_tensor *x = &m->t[op->in[0]], *it = &m->t[op->in[1]];
  size_t es = x->esize, k = (size_t)it->dims[it->rank - 1], n = k ? (size_t)it->count / k : 0, inner = 1;
  for (int i = (int)k; i < x->rank; i++) inner *= (size_t)x->dims[i];
  int64_t xs[WRT_MAX_RANK];
  contiguous_strides(x, xs);
  uint8_t* y = t_bytes(m, op->out);
  const uint8_t* upd = t_bytes(m, op->in[2]);
  if (y != t_bytes(m, op->in[0])) rt_copy(y, t_bytes(m, op->in[0]), (size_t)x->nbytes);
  for (int pass = 0; pass < 2; pass++) /* pass 0 checks every index, pass 1 writes */
    for (size_t r = 0; r < n; r++) {
      int64_t off = 0;
      for (size_t a = 0; a < k; a++) {
        size_t q = r * k + a;
        int64_t v = it->dtype == WRT_I32 ? ((const int32_t*)it->data)[q] : ((const int64_t*)it->data)[q];
        int64_t d = x->dims[a];
        if (v < -d || v >= d)
          return op_fail(op, WRT_ERR_INPUT, "index %l out of range [%l, %l) on axis %d", v, -d, d, (int)a);
        off += (v < 0 ? v + d : v) * xs[a];
      }
      if (pass == 0) continue;
      uint8_t* dst = y + (size_t)off * es;
      const uint8_t* src = upd + r * inner * es;
      if (op->a.reduction == WRT_ScatterReduction_NONE) {
        rt_copy(dst, src, inner * es);
        continue;
      }
      for (size_t j = 0; j < inner; j++) {
        if (x->dtype == WRT_F32) {
          float* d = (float*)(void*)dst + j;
          float u = ((const float*)(const void*)src)[j];
          switch (op->a.reduction) {
            case WRT_ScatterReduction_ADD: *d = *d + u; break;
            case WRT_ScatterReduction_MUL: *d = *d * u; break;
            case WRT_ScatterReduction_MAX: *d = rt_maxf(*d, u); break;
            default: *d = rt_minf(*d, u); break;
          }
        } else { /* int32 / int64, wrap-around */
          int64_t dv, uv;
          if (es == 4) { dv = ((int32_t*)(void*)dst)[j]; uv = ((const int32_t*)(const void*)src)[j]; }
          else { dv = ((int64_t*)(void*)dst)[j]; uv = ((const int64_t*)(const void*)src)[j]; }
          uint64_t a = (uint64_t)dv, b = (uint64_t)uv;
          int64_t rv;
          switch (op->a.reduction) {
            case WRT_ScatterReduction_ADD: rv = (int64_t)(a + b); break;
            case WRT_ScatterReduction_MUL: rv = (int64_t)(a * b); break;
            case WRT_ScatterReduction_MAX: rv = dv > uv ? dv : uv; break;
            default: rv = dv < uv ? dv : uv; break;
          }
          if (es == 4) ((int32_t*)(void*)dst)[j] = (int32_t)(uint32_t)(uint64_t)rv;
          else ((int64_t*)(void*)dst)[j] = rv;
        }
      }
    }
  return WRT_OK;
}

int run_data(wrt_model* m, wrt_op* op) {
  const wrt_tensor *x = &m->t[op->in[0]], *y = &m->t[op->out];
  size_t es = x->esize;
  int64_t xs[WRT_MAX_RANK];
  contiguous_strides(x, xs);
  switch (op_code(op)) {
    OP_CASE(RESHAPE)
      if (y->data != x->data) rt_copy(y->data, x->data, (size_t)x->nbytes); /* the planner normally aliases them */
      return WRT_OK;
    OP_CASE(TRANSPOSE) {
      size_t dims[WRT_MAX_RANK];
      int64_t ss[WRT_MAX_RANK];
      int r = 0;
      for (int i = 0; i < y->rank; i++) { /* drop size-1 axes; merge axes that stay adjacent in the source */
        int p = op->a.n_list ? op->a.list[i] : x->rank - 1 - i;
        if (y->dims[i] == 1) continue;
        if (r > 0 && ss[r - 1] == xs[p] * y->dims[i]) {
          dims[r - 1] *= (size_t)y->dims[i];
          ss[r - 1] = xs[p];
          continue;
        }
        dims[r] = (size_t)y->dims[i];
        ss[r++] = xs[p];
      }
      /* [B,] R x C output read from a [B,] C x R source (NCHW -> NHWC and back): a tiled 2-D transpose */
      int b = r == 3;
      if ((es == 4 || es == 1) && (r == 2 || r == 3) && ss[b] == 1 && ss[b + 1] == (int64_t)dims[b] &&
          (!b || ss[0] == (int64_t)(dims[1] * dims[2]))) {
        size_t R = dims[b], C = dims[b + 1], batches = b ? dims[0] : 1;
        transpose_job j = {y->data, x->data, es, R, C, (R + TILE - 1) / TILE,
#if !defined(__wasm__)
                           m->tg->interleave3
#endif
        };
        op_parallel_rows(m, op, batches * j.tiles, transpose_rows, &j);
        return WRT_OK;
      }
      strided_copy(y->data, x->data, es, r, dims, ss, 0);
      return WRT_OK;
    }
    OP_CASE(SLICE) {
      size_t dims[WRT_MAX_RANK];
      int64_t ss[WRT_MAX_RANK], base = 0;
      for (int i = 0; i < y->rank; i++) {
        int64_t last = op->a.steps[i] > 0 ? x->dims[i] : x->dims[i] - 1, b = op->a.starts[i];
        dims[i] = (size_t)y->dims[i];
        ss[i] = xs[i] * op->a.steps[i];
        if (y->dims[i]) base += xs[i] * (b < last ? b : last); /* starts are clamped to the axis */
      }
      strided_copy(y->data, (const uint8_t*)x->data + base * (int64_t)es, es, y->rank, dims, ss, 0);
      return WRT_OK;
    }
    OP_CASE(DEPTH_TO_SPACE) {
      size_t b = (size_t)op->a.block, N = (size_t)x->dims[0], H = (size_t)x->dims[1], W = (size_t)x->dims[2];
      size_t C = (size_t)x->dims[3], co = C / (b * b);
      size_t dims[6] = {N, H, b, W, b, co};
      int64_t ss[6] = {(int64_t)(H * W * C), (int64_t)(W * C), 0, (int64_t)C, 0, 0};
      if (op->a.mode == 0) { ss[2] = (int64_t)(b * co); ss[4] = (int64_t)co; ss[5] = 1; }  /* DCR */
      else { ss[2] = (int64_t)b; ss[4] = 1; ss[5] = (int64_t)(b * b); }                   /* CRD */
      strided_copy(y->data, x->data, es, 6, dims, ss, 0);
      return WRT_OK;
    }
    OP_CASE(CONCATENATION) {
      int ax = op->a.axis;
      size_t outer = 1, inner = 1;
      for (int i = 0; i < ax; i++) outer *= (size_t)y->dims[i];
      for (int i = ax + 1; i < y->rank; i++) inner *= (size_t)y->dims[i];
      size_t row = (size_t)y->dims[ax] * inner * es, off = 0;
      for (int k = 0; k < op->n_in; k++) {
        const wrt_tensor* t = &m->t[op->in[k]];
        size_t chunk = (size_t)t->dims[ax] * inner * es;
        for (size_t o = 0; o < outer; o++)
          rt_copy((uint8_t*)y->data + o * row + off, (const uint8_t*)t->data + o * chunk, chunk);
        off += chunk;
      }
      if (!is_unclamped(&op->clamp)) clamp_inplace(y->data, (size_t)y->count, &op->clamp);
      return WRT_OK;
    }
    OP_CASE(PAD) return run_pad(m, op);
    OP_CASE(RESIZE) return run_resize(m, op);
    OP_CASE(GATHER) return run_gather(m, op);
    OP_CASE(SCATTER_ND) return run_scatter_nd(m, op);
    OP_CASE(EXPAND) { /* strides 0 on the broadcast axes */
      size_t dims[WRT_MAX_RANK];
      int64_t ss[WRT_MAX_RANK];
      for (int i = 0; i < y->rank; i++) {
        int ix = i - (y->rank - x->rank);
        dims[i] = (size_t)y->dims[i];
        ss[i] = ix >= 0 && x->dims[ix] != 1 ? xs[ix] : 0;
      }
      strided_copy(y->data, x->data, es, y->rank, dims, ss, 0);
      return WRT_OK;
    }
    OP_CASE(SPLIT) { /* each output: a slice of x along the axis */
      int ax = op->a.axis < 0 ? op->a.axis + x->rank : op->a.axis;
      int64_t start = 0;
      for (int k = 0; k < op->n_out; k++) {
        const wrt_tensor* o = &m->t[op->outs[k]];
        size_t dims[WRT_MAX_RANK];
        for (int i = 0; i < o->rank; i++) dims[i] = (size_t)o->dims[i];
        if (o->count) strided_copy(o->data, (const uint8_t*)x->data + start * xs[ax] * (int64_t)es, es, o->rank, dims, xs, 0);
        start += o->dims[ax];
      }
      return WRT_OK;
    }
  }
  return op_fail(op, WRT_ERR_UNSUPPORTED, "internal: not a data movement op");
}
