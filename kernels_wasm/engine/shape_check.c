/* Every op's output shape and dtype, inferred from its inputs and attributes as python_ref/shapes.py does, and
 * compared with the shape the file declares. The kernels trust these shapes, so this is where a hostile file that
 * declares a too-small output (or inconsistent attributes) is stopped. */
#include "engine.h"

typedef struct {
  int rank;
  int64_t d[WRT_MAX_RANK];
} shp;

static shp of(const wrt_tensor* t) {
  shp s = {t->rank, {0}};
  for (int i = 0; i < t->rank; i++) s.d[i] = t->dims[i];
  return s;
}

static void fmt_shape(char* out, size_t cap, const shp* s) {
  size_t n = rt_format(out, cap, "[");
  for (int i = 0; i < s->rank && n < cap; i++) n += rt_format(out + n, cap - n, i ? ", %l" : "%l", s->d[i]);
  if (n < cap) rt_format(out + n, cap - n, "]");
}

#define FAIL(...) return op_fail(op, WRT_ERR_FORMAT, __VA_ARGS__)
#define CHECK(c, ...) \
  do {                \
    if (!(c)) FAIL(__VA_ARGS__); \
  } while (0)

/* "[256]" for messages (a static buffer: one use per message) */
static const char* shape_text(const wrt_tensor* t) {
  static WRT_TLS char b[96];
  shp s = of(t);
  fmt_shape(b, sizeof b, &s);
  return b;
}

static int rank_is(const wrt_op* op, const wrt_tensor* t, int r, const char* what) {
  if (t->rank == r) return 0;
  char b[96];
  shp s = of(t);
  fmt_shape(b, sizeof b, &s);
  FAIL("%s must have rank %d, got shape %s", what, r, b);
}

static int broadcast(const wrt_op* op, const shp* a, const shp* b, shp* out) {
  int r = a->rank > b->rank ? a->rank : b->rank;
  out->rank = r;
  for (int i = 0; i < r; i++) {
    int ia = i - (r - a->rank), ib = i - (r - b->rank);
    int64_t da = ia >= 0 ? a->d[ia] : 1, db = ib >= 0 ? b->d[ib] : 1;
    if (da != db && da != 1 && db != 1) {
      char x[96], y[96];
      fmt_shape(x, sizeof x, a);
      fmt_shape(y, sizeof y, b);
      FAIL("shapes %s and %s do not broadcast", x, y);
    }
    out->d[i] = da == 1 ? db : da;
  }
  return 0;
}

/* a tensor's new shape after a run-time shape change, within the format's limits */
static int set_shape(wrt_model* m, const wrt_op* op, wrt_tensor* t, const shp* s) {
  (void)m;
  uint64_t count = 1;
  int empty = 0;
  for (int i = 0; i < s->rank; i++) {
    CHECK(s->d[i] >= 0 && s->d[i] <= INT32_MAX, "output dimension %l is out of range", s->d[i]);
    empty |= s->d[i] == 0;
    count = count > ((uint64_t)1 << 32) ? count : count * (uint64_t)s->d[i];
  }
  if (empty) count = 0;
  CHECK(count <= ((uint64_t)1 << 31), "output tensor '%s' would have %l elements", t->name, (int64_t)count);
  t->rank = s->rank;
  for (int i = 0; i < s->rank; i++) t->dims[i] = (int32_t)s->d[i];
  t->count = count;
  t->nbytes = count * t->esize;
  return 0;
}

int64_t conv_out_size(int64_t size, int64_t k, int64_t s, int64_t d, int64_t p0, int64_t p1) {
  int64_t span = size + p0 + p1 - d * (k - 1) - 1;
  return span < 0 ? (span - s + 1) / s + 1 : span / s + 1; /* floor division */
}

int64_t pool_out_size(int64_t size, int64_t k, int64_t s, int64_t d, int64_t p0, int64_t p1, int ceil_mode) {
  int64_t span = size + p0 + p1 - d * (k - 1) - 1;
  if (!ceil_mode) return conv_out_size(size, k, s, d, p0, p1);
  int64_t out = (span >= 0 ? (span + s - 1) / s : -((-span) / s)) + 1;
  if ((out - 1) * s >= size + p0) out--;
  return out;
}

static int spatial_ok(const wrt_op* op) {
  const wrt_attrs* a = &op->a;
  for (int i = 0; i < 2; i++) {
    CHECK(a->strides[i] >= 1 && a->strides[i] <= (1 << 16), "strides must all be >= 1, got [%d, %d]", a->strides[0],
          a->strides[1]);
    CHECK(a->dilations[i] >= 1 && a->dilations[i] <= (1 << 16), "dilations must all be >= 1, got [%d, %d]",
          a->dilations[0], a->dilations[1]);
  }
  for (int i = 0; i < 4; i++)
    CHECK(a->pads[i] >= 0 && a->pads[i] <= (1 << 20), "pads must all be >= 0, got [%d, %d, %d, %d]", a->pads[0],
          a->pads[1], a->pads[2], a->pads[3]);
  return 0;
}

static int conv_weights(wrt_model* m, const wrt_op* op, int* g) {
  const wrt_tensor *x = &m->t[op->in[0]], *w = &m->t[op->in[1]];
  int r;
  if ((r = rank_is(op, x, 4, "input x (NHWC)")) || (r = rank_is(op, w, 4, "weights w (OHWI)"))) return r;
  *g = op->a.groups;
  CHECK(*g >= 1, "groups must be >= 1, got %d", *g);
  CHECK(w->dims[0] % *g == 0, "%d output channels are not divisible by groups=%d", w->dims[0], *g);
  CHECK(w->dims[1] >= 1 && w->dims[2] >= 1 && w->dims[3] >= 1, "weights have an empty dimension");
  if (op->n_in > 2 && op->in[2] >= 0) {
    const wrt_tensor* b = &m->t[op->in[2]];
    CHECK(b->rank == 1 && b->dims[0] == w->dims[0], "bias must have shape [%d]", w->dims[0]);
  }
  CHECK((int64_t)x->dims[3] == (int64_t)w->dims[3] * *g, "input has %d channels but weights expect %l (groups=%d)",
        x->dims[3], (int64_t)w->dims[3] * *g, *g);
  return spatial_ok(op);
}

static int infer_rnn(wrt_model* m, wrt_op* op, int k, shp* out);
static int infer_extra(wrt_model* m, wrt_op* op, int k, shp* out);

/* output k of the op */
static int infer(wrt_model* m, wrt_op* op, int k, shp* out) {
  const wrt_attrs* a = &op->a;
  const wrt_tensor* x = &m->t[op->in[0]];
  shp xs = of(x);
  int r, g;
  switch (op_code(op)) {
    OP_CASE(CONV_2D) {
      if ((r = conv_weights(m, op, &g))) return r;
      const wrt_tensor* w = &m->t[op->in[1]];
      int64_t oh = conv_out_size(x->dims[1], w->dims[1], a->strides[0], a->dilations[0], a->pads[0], a->pads[2]);
      int64_t ow = conv_out_size(x->dims[2], w->dims[2], a->strides[1], a->dilations[1], a->pads[1], a->pads[3]);
      CHECK(oh >= 1 && ow >= 1, "output would be empty (%lx%l)", oh, ow);
      *out = (shp){4, {x->dims[0], oh, ow, w->dims[0]}};
      if (op->n_in > 3 && op->in[3] >= 0) { /* residual: the output's shape */
        const wrt_tensor* res = &m->t[op->in[3]];
        int same = res->rank == 4;
        for (int i = 0; same && i < 4; i++) same = res->dims[i] == out->d[i];
        CHECK(same, "residual r must have the output's shape [%l, %l, %l, %l]", out->d[0], oh, ow, out->d[3]);
      }
      return 0;
    }
    OP_CASE(CONV_TRANSPOSE_2D) {
      if ((r = conv_weights(m, op, &g))) return r;
      const wrt_tensor* w = &m->t[op->in[1]];
      for (int i = 0; i < 2; i++) {
        int lim = a->strides[i] > a->dilations[i] ? a->strides[i] : a->dilations[i];
        CHECK(a->output_padding[i] >= 0 && a->output_padding[i] < lim,
              "output_padding [%d, %d] must be smaller than the stride or the dilation", a->output_padding[0],
              a->output_padding[1]);
      }
      int64_t oh = (int64_t)(x->dims[1] - 1) * a->strides[0] - a->pads[0] - a->pads[2] +
                   (int64_t)a->dilations[0] * (w->dims[1] - 1) + 1 + a->output_padding[0];
      int64_t ow = (int64_t)(x->dims[2] - 1) * a->strides[1] - a->pads[1] - a->pads[3] +
                   (int64_t)a->dilations[1] * (w->dims[2] - 1) + 1 + a->output_padding[1];
      CHECK(x->dims[1] >= 1 && x->dims[2] >= 1, "input spatial size is empty");
      CHECK(oh >= 1 && ow >= 1, "output would be empty (%lx%l): pads are too large", oh, ow);
      *out = (shp){4, {x->dims[0], oh, ow, w->dims[0]}};
      return 0;
    }
    OP_CASE(FULLY_CONNECTED) {
      const wrt_tensor* w = &m->t[op->in[1]];
      if ((r = rank_is(op, w, 2, "weights w [N, K]"))) return r;
      CHECK(x->rank >= 1, "input must have rank >= 1");
      CHECK(x->dims[x->rank - 1] == w->dims[1], "input has K=%d features but weights expect %d",
            x->dims[x->rank - 1], w->dims[1]);
      if (op->n_in > 2 && op->in[2] >= 0) {
        const wrt_tensor* b = &m->t[op->in[2]];
        CHECK(b->rank == 1 && b->dims[0] == w->dims[0], "bias must have shape [%d]", w->dims[0]);
      }
      *out = xs;
      out->d[x->rank - 1] = w->dims[0];
      return 0;
    }
    OP_CASE(MATMUL) {
      shp sa = xs, sb = of(&m->t[op->in[1]]);
      CHECK(sa.rank >= 1 && sb.rank >= 1, "inputs must have rank >= 1");
      shp a2 = sa, b2 = sb;
      if (sa.rank == 1) { a2.rank = 2; a2.d[0] = 1; a2.d[1] = sa.d[0]; }
      if (sb.rank == 1) { b2.rank = 2; b2.d[0] = sb.d[0]; b2.d[1] = 1; }
      CHECK(a2.d[a2.rank - 1] == b2.d[b2.rank - 2], "inner dimensions differ: %l vs %l", a2.d[a2.rank - 1],
            b2.d[b2.rank - 2]);
      shp ba = a2, bb = b2, batch;
      ba.rank -= 2;
      bb.rank -= 2;
      if ((r = broadcast(op, &ba, &bb, &batch))) return r;
      *out = batch;
      if (sa.rank > 1) out->d[out->rank++] = a2.d[a2.rank - 2];
      if (sb.rank > 1) out->d[out->rank++] = b2.d[b2.rank - 1];
      CHECK(out->rank <= WRT_MAX_RANK, "result rank exceeds %d", WRT_MAX_RANK);
      return 0;
    }
    OP_CASE(ADD) OP_CASE(SUB) OP_CASE(MUL) OP_CASE(DIV) OP_CASE(MAXIMUM) OP_CASE(MINIMUM) OP_CASE(POW) {
      shp b = of(&m->t[op->in[1]]);
      return broadcast(op, &xs, &b, out);
    }
    OP_CASE(PRELU) {
      shp s = of(&m->t[op->in[1]]), bc;
      if ((r = broadcast(op, &xs, &s, &bc))) return r;
      CHECK(bc.rank == xs.rank && __builtin_memcmp(bc.d, xs.d, sizeof(int64_t) * (size_t)xs.rank) == 0,
            "slope shape does not broadcast to the input shape");
      *out = xs;
      return 0;
    }
    OP_CASE(CLIP)
      CHECK(a->min <= a->max, "min %g is greater than max %g", (double)a->min, (double)a->max);
      *out = xs;
      return 0;
    OP_CASE(MAX_POOL_2D) OP_CASE(AVERAGE_POOL_2D) {
      if ((r = rank_is(op, x, 4, "input x (NHWC)"))) return r;
      CHECK(a->kernel[0] >= 1 && a->kernel[1] >= 1 && a->kernel[0] <= 4096 && a->kernel[1] <= 4096,
            "kernel must all be >= 1, got [%d, %d]", a->kernel[0], a->kernel[1]);
      if ((r = spatial_ok(op))) return r;
      int64_t kh = (int64_t)a->dilations[0] * (a->kernel[0] - 1) + 1, kw = (int64_t)a->dilations[1] * (a->kernel[1] - 1) + 1;
      int64_t oh = pool_out_size(x->dims[1], a->kernel[0], a->strides[0], a->dilations[0], a->pads[0], a->pads[2], a->ceil_mode);
      int64_t ow = pool_out_size(x->dims[2], a->kernel[1], a->strides[1], a->dilations[1], a->pads[1], a->pads[3], a->ceil_mode);
      CHECK(oh >= 1 && ow >= 1, "output would be empty (%lx%l)", oh, ow);
      CHECK(a->pads[0] < kh && a->pads[2] < kh && a->pads[1] < kw && a->pads[3] < kw,
            "pads [%d, %d, %d, %d] must be smaller than the kernel extent", a->pads[0], a->pads[1], a->pads[2], a->pads[3]);
      *out = (shp){4, {x->dims[0], oh, ow, x->dims[3]}};
      return 0;
    }
    OP_CASE(MEAN) OP_CASE(REDUCE_MAX) OP_CASE(REDUCE_SUM) {
      uint8_t red[WRT_MAX_RANK] = {0};
      if (a->n_list == 0)
        for (int i = 0; i < x->rank; i++) red[i] = 1;
      for (int i = 0; i < a->n_list; i++) {
        int ax = a->list[i];
        CHECK(ax >= -x->rank && ax < x->rank, "axis %d is out of range for rank %d", ax, x->rank);
        ax = ax < 0 ? ax + x->rank : ax;
        CHECK(!red[ax], "axes repeat axis %d", ax);
        red[ax] = 1;
      }
      out->rank = 0;
      for (int i = 0; i < x->rank; i++) {
        CHECK(!(red[i] && x->dims[i] == 0 && op->type == OP_REDUCE_MAX), "cannot reduce the empty axis %d", i);
        if (!red[i]) out->d[out->rank++] = x->dims[i];
        else if (a->keepdims) out->d[out->rank++] = 1;
      }
      return 0;
    }
    OP_CASE(SOFTMAX) {
      CHECK(x->rank >= 1, "input must have rank >= 1");
      CHECK(a->axis >= -x->rank && a->axis < x->rank, "axis %d is out of range for rank %d", a->axis, x->rank);
      int table = op->n_in > 1 && op->in[1] >= 0;
      if (is_q8(x->dtype)) CHECK(table, "a quantized SOFTMAX needs its int32 exponential table (input 1)");
      else CHECK(!table, "the table input is only for quantized (int8/uint8) inputs");
      *out = xs;
      return 0;
    }
    OP_CASE(QUANTIZE)
      CHECK(x->dtype == WRT_F32 || is_q8(x->dtype), "input must be float32, int8 or uint8, got %s",
            dtype_name(x->dtype));
      *out = xs;
      return 0;
    OP_CASE(DEQUANTIZE)
      CHECK(is_q8(x->dtype), "input must be int8 or uint8, got %s", dtype_name(x->dtype));
      *out = xs;
      return 0;
    OP_CASE(LOOKUP) {
      const wrt_tensor* t = &m->t[op->in[1]];
      CHECK(is_q8(x->dtype), "input must be int8 or uint8, got %s", dtype_name(x->dtype));
      CHECK(t->rank == 1 && t->dims[0] == 256 && is_q8(t->dtype), "table must be [256] of int8 or uint8, got %s of %s",
            shape_text(t), dtype_name(t->dtype));
      *out = xs;
      return 0;
    }
    OP_CASE(RESHAPE) {
      int neg = -1;
      int64_t known = 1;
      out->rank = a->n_list;
      for (int i = 0; i < a->n_list; i++) {
        int64_t d = a->list[i];
        CHECK(d >= 0 || d == -1, "shape has an entry %l < 0 other than -1", d);
        if (d == 0) { /* a copy of the input's dimension at this index */
          CHECK(i < x->rank, "shape copies (0) a dimension the input does not have");
          d = x->dims[i];
        }
        if (d == -1) {
          CHECK(neg < 0, "shape has more than one -1");
          neg = i;
        } else {
          known *= d;
          CHECK(known <= ((int64_t)1 << 32), "shape is absurd");
        }
        out->d[i] = d;
      }
      if (neg >= 0) {
        CHECK(known > 0, "cannot infer the -1 of a shape with a zero dimension");
        CHECK((int64_t)x->count % known == 0, "cannot reshape %l elements", (int64_t)x->count);
        out->d[neg] = (int64_t)x->count / known;
      } else {
        CHECK(known == (int64_t)x->count, "cannot reshape %l elements to %l", (int64_t)x->count, known);
      }
      return 0;
    }
    OP_CASE(TRANSPOSE) {
      int32_t p[WRT_MAX_RANK];
      int n = a->n_list ? a->n_list : x->rank;
      CHECK(n == x->rank, "perm has %d entries for %d axes", a->n_list, x->rank);
      uint8_t seen[WRT_MAX_RANK] = {0};
      for (int i = 0; i < n; i++) {
        p[i] = a->n_list ? a->list[i] : n - 1 - i;
        CHECK(p[i] >= 0 && p[i] < n && !seen[p[i]], "perm is not a permutation of %d axes", n);
        seen[p[i]] = 1;
      }
      out->rank = n;
      for (int i = 0; i < n; i++) out->d[i] = x->dims[p[i]];
      return 0;
    }
    OP_CASE(CONCATENATION) {
      int ax = a->axis;
      CHECK(ax >= 0 && ax < x->rank, "axis %d must be in [0, %d)", ax, x->rank);
      *out = xs;
      out->d[ax] = 0;
      for (int k = 0; k < op->n_in; k++) {
        const wrt_tensor* t = &m->t[op->in[k]];
        CHECK(t->dtype == x->dtype, "inputs have different dtypes");
        int same = t->rank == x->rank;
        for (int i = 0; same && i < x->rank; i++) same = i == ax || t->dims[i] == x->dims[i];
        CHECK(same, "input %d is incompatible with input 0 on axis %d", k, ax);
        out->d[ax] += t->dims[ax];
      }
      return 0;
    }
    OP_CASE(SLICE) {
      CHECK(a->n_list == x->rank, "starts/ends/steps must each have %d values (one per axis), got %d", x->rank,
            a->n_list);
      out->rank = x->rank;
      for (int i = 0; i < x->rank; i++) {
        int64_t b = a->starts[i], e = a->ends[i], s = a->steps[i], d = x->dims[i], n;
        CHECK(s != 0, "step of axis %d is 0", i);
        if (s > 0) {
          CHECK(b >= 0 && e >= 0, "axis %d: start %l / end %l must be >= 0", i, b, e);
          b = b < d ? b : d; /* clamped to the axis (python_ref/shapes.py slice_params) */
          e = e < d ? e : d;
          n = e > b ? (e - b + s - 1) / s : 0;
        } else {
          CHECK(b >= 0 && e >= -1, "axis %d: with step %l, start %l must be >= 0 and end %l >= -1", i, s, b, e);
          b = b < d - 1 ? b : d - 1;
          e = e < d - 1 ? e : d - 1;
          n = d > 0 && b > e ? (b - e + (-s) - 1) / (-s) : 0;
        }
        out->d[i] = n;
      }
      return 0;
    }
    OP_CASE(PAD) {
      int rk = x->rank;
      CHECK(a->n_list == 2 * rk, "pads must have %d values, got %d", 2 * rk, a->n_list);
      out->rank = rk;
      for (int i = 0; i < rk; i++) {
        int64_t lo = a->list[i], hi = a->list[i + rk], d = x->dims[i];
        CHECK(lo >= 0 && hi >= 0 && lo <= (1 << 24) && hi <= (1 << 24), "pads must all be >= 0");
        if (a->mode == WRT_PadMode_REFLECT)
          CHECK(lo <= d - 1 && hi <= d - 1, "reflect pads %l,%l of axis %d must be < its size %l", lo, hi, i, d);
        if (a->mode == WRT_PadMode_EDGE) CHECK(d > 0 || (lo == 0 && hi == 0), "edge padding of the empty axis %d", i);
        out->d[i] = d + lo + hi;
      }
      if (a->mode == WRT_PadMode_CONSTANT && x->dtype != WRT_F32 && x->dtype != WRT_F16) {
        /* an integer element type must hold the value once truncated toward zero: v in (lo - 1, hi + 1) */
        double v = a->value, lo = -1, hi = 2; /* bool */
        if (x->dtype == WRT_I8) lo = -129, hi = 128;
        if (x->dtype == WRT_U8) lo = -1, hi = 256;
        if (x->dtype == WRT_I32) lo = -2147483649.0, hi = 2147483648.0;
        int ok = x->dtype == WRT_I64 ? v >= -9223372036854775808.0 && v < 9223372036854775808.0 : v > lo && v < hi;
        CHECK(ok, "pad value %g is not representable as %s", (double)a->value, dtype_name(x->dtype));
      }
      return 0;
    }
    OP_CASE(RESIZE) {
      if ((r = rank_is(op, x, 4, "input x (NHWC)"))) return r;
      CHECK(a->scales[0] >= 0 && a->scales[1] >= 0, "scales must be 2 values >= 0");
      int64_t hw[2];
      for (int k = 0; k < 2; k++) { /* size 0: floor(in * scale), python_ref/shapes.py resize_size */
        CHECK(a->size[k] >= 0, "size must all be >= 0, got [%d, %d]", a->size[0], a->size[1]);
        CHECK(a->size[k] > 0 || a->scales[k] > 0, "size %d is 0 (from the scale) but scales[%d] is 0", k, k);
        double v = a->size[k] ? (double)a->size[k] : rt_floor((double)x->dims[1 + k] * (double)a->scales[k]);
        CHECK(v >= 1 && v <= (double)(1 << 30), "the output size is empty or absurd");
        hw[k] = (int64_t)v;
      }
      CHECK(x->dims[1] >= 1 && x->dims[2] >= 1, "input spatial size %dx%d is empty", x->dims[1], x->dims[2]);
      *out = (shp){4, {x->dims[0], hw[0], hw[1], x->dims[3]}};
      return 0;
    }
    OP_CASE(DEPTH_TO_SPACE) {
      if ((r = rank_is(op, x, 4, "input x (NHWC)"))) return r;
      int64_t b = a->block;
      CHECK(b >= 1 && b <= 4096, "block must be >= 1, got %l", b);
      CHECK(x->dims[3] % (b * b) == 0, "%d channels are not divisible by block*block = %l", x->dims[3], b * b);
      *out = (shp){4, {x->dims[0], x->dims[1] * b, x->dims[2] * b, x->dims[3] / (b * b)}};
      return 0;
    }
    OP_CASE(GATHER) {
      const wrt_tensor* ind = &m->t[op->in[1]];
      CHECK(x->rank >= 1, "input must have rank >= 1");
      CHECK(ind->dtype == WRT_I32 || ind->dtype == WRT_I64, "indices must be int32 or int64, got %s",
            dtype_name(ind->dtype));
      int ax = a->axis;
      CHECK(ax >= -x->rank && ax < x->rank, "axis %d is out of range for rank %d", ax, x->rank);
      ax = ax < 0 ? ax + x->rank : ax;
      CHECK(x->rank - 1 + ind->rank <= WRT_MAX_RANK, "result rank exceeds %d", WRT_MAX_RANK);
      out->rank = 0;
      for (int i = 0; i < ax; i++) out->d[out->rank++] = x->dims[i];
      for (int i = 0; i < ind->rank; i++) out->d[out->rank++] = ind->dims[i];
      for (int i = ax + 1; i < x->rank; i++) out->d[out->rank++] = x->dims[i];
      return 0;
    }
    OP_CASE(LSTM) OP_CASE(GRU) OP_CASE(RNN)
      return infer_rnn(m, op, k, out);
  }
  return infer_extra(m, op, k, out);
}

/* ---- recurrent ops: python_ref/shapes.py rnn_dims ------------------------------------------------------------- */
static int want_shape(const wrt_op* op, const wrt_model* m, int i, const char* what, int rank, const int64_t* d) {
  if (i >= op->n_in || op->in[i] < 0) return 0;
  const wrt_tensor* t = &m->t[op->in[i]];
  int same = t->rank == rank;
  for (int a = 0; same && a < rank; a++) same = t->dims[a] == d[a];
  if (same) return 0;
  shp want = {rank, {0}}, got = of(t);
  for (int a = 0; a < rank; a++) want.d[a] = d[a];
  char b1[96], b2[96];
  fmt_shape(b1, sizeof b1, &got);
  fmt_shape(b2, sizeof b2, &want);
  FAIL("%s has shape %s, expected %s", what, b1, b2);
}

int rnn_geometry(const wrt_model* m, const wrt_op* op, wrt_rnn_dims* g) {
  const wrt_tensor *x = &m->t[op->in[0]], *w = &m->t[op->in[1]], *r = &m->t[op->in[2]];
  int gates = op->type == OP_LSTM ? 4 : op->type == OP_GRU ? 3 : 1, n_acts = op->type == OP_LSTM ? 3 : op->type == OP_GRU ? 2 : 1;
  int e;
  if ((e = rank_is(op, x, 3, "input x [T, B, I]")) || (e = rank_is(op, w, 3, "weights w [D, gates*H, I]")) ||
      (e = rank_is(op, r, 3, "recurrence r [D, gates*H, P]")))
    return e;
  int64_t d = op->a.direction == WRT_Direction_BIDIRECTIONAL ? 2 : 1;
  CHECK(w->dims[0] == d && r->dims[0] == d, "w and r must have %l direction(s) on axis 0, got %d and %d", d,
        w->dims[0], r->dims[0]);
  CHECK(w->dims[1] > 0 && w->dims[1] % gates == 0, "w axis 1 (%d) must be %d * hidden size", w->dims[1], gates);
  int64_t h = w->dims[1] / gates, t = x->dims[0], b = x->dims[1];
  CHECK(w->dims[2] == x->dims[2], "w expects %d input features, x has %d", w->dims[2], x->dims[2]);
  int has_proj = op->type == OP_LSTM && op->n_in > 8 && op->in[8] >= 0;
  int64_t p = has_proj ? m->t[op->in[8]].dims[1] : h;
  if (has_proj) CHECK(m->t[op->in[8]].rank == 3, "projection proj_w must have rank 3");
  int64_t rs[3] = {d, gates * h, p};
  if ((e = want_shape(op, m, 2, "recurrence r", 3, rs))) return e;
  int64_t bs[2] = {d, 2 * gates * h}, h0[3] = {d, b, p}, c0[3] = {d, b, h}, ps[2] = {d, 3 * h}, pw[3] = {d, p, h},
          pb[2] = {d, p}, ln[3] = {d, 4, h}, sl[1] = {b};
  if ((e = want_shape(op, m, 3, "bias b", 2, bs)) || (e = want_shape(op, m, 4, "seq_lens", 1, sl)) ||
      (e = want_shape(op, m, 5, "initial state h0", 3, h0)))
    return e;
  if (op->type == OP_LSTM) {
    if ((e = want_shape(op, m, 6, "initial cell c0", 3, c0)) || (e = want_shape(op, m, 7, "peepholes p", 2, ps)) ||
        (e = want_shape(op, m, 8, "projection proj_w", 3, pw)) ||
        (e = want_shape(op, m, 9, "projection bias proj_b", 2, pb)) ||
        (e = want_shape(op, m, 10, "layer norm ln", 3, ln)))
      return e;
    CHECK(has_proj || op->n_in <= 9 || op->in[9] < 0, "proj_b needs proj_w");
  }
  const wrt_attrs* a = &op->a;
  CHECK(a->n_acts == 0 || a->n_acts == n_acts * d, "activations must have %l entries (%d per direction), got %d",
        n_acts * d, n_acts, a->n_acts);
  for (int i = 0; i < a->n_acts; i++)
    CHECK(a->acts[i] >= 0 && a->acts[i] <= WRT_Activation_IDENTITY, "activation %d is not a valid Activation",
          a->acts[i]);
  CHECK(a->n_alphas == 0 || a->n_alphas == n_acts * d, "activation_alpha must have %l entries, got %d", n_acts * d,
        a->n_alphas);
  CHECK(a->n_betas == 0 || a->n_betas == n_acts * d, "activation_beta must have %l entries, got %d", n_acts * d,
        a->n_betas);
  CHECK(a->clip > 0, "clip must be > 0 (inf: none)");
  if (op->type == OP_LSTM) CHECK(a->cell_clip > 0 && a->proj_clip > 0, "cell_clip and proj_clip must be > 0");
  CHECK(t <= INT32_MAX && b <= INT32_MAX, "absurd sequence");
  *g = (wrt_rnn_dims){t, b, x->dims[2], d, h, p, gates, n_acts};
  return 0;
}

static int infer_rnn(wrt_model* m, wrt_op* op, int k, shp* out) {
  wrt_rnn_dims g;
  int e = rnn_geometry(m, op, &g);
  if (e) return e;
  if (k == 0) *out = (shp){4, {g.t, g.d, g.b, g.p}};
  else if (k == 1) *out = (shp){3, {g.d, g.b, g.p}};
  else *out = (shp){3, {g.d, g.b, g.h}};
  return 0;
}

/* ---- transformer blocks, comparisons, data movement, MediaPipe ops ------------------------------------------- */
static int is_matrix_4x4(const wrt_op* op, const wrt_tensor* t) {
  CHECK(t->rank == 3 && t->dims[0] == 1 && t->dims[1] == 4 && t->dims[2] == 4, "matrix must have shape [1, 4, 4]");
  return 0;
}

static int infer_extra(wrt_model* m, wrt_op* op, int k, shp* out) {
  const wrt_attrs* a = &op->a;
  const wrt_tensor* x = &m->t[op->in[0]];
  shp xs = of(x);
  int r;
  switch (op_code(op)) {
    OP_CASE(LAYER_NORM) {
      CHECK(x->rank >= 1, "input must have rank >= 1");
      CHECK(a->axis >= -x->rank && a->axis < x->rank, "axis %d is out of range for rank %d", a->axis, x->rank);
      int ax = a->axis < 0 ? a->axis + x->rank : a->axis;
      shp norm = {x->rank - ax, {0}};
      for (int i = ax; i < x->rank; i++) norm.d[i - ax] = x->dims[i];
      for (int i = 1; i < op->n_in; i++) {
        if (op->in[i] < 0) continue;
        shp s = of(&m->t[op->in[i]]), bc;
        CHECK(s.rank <= norm.rank, "scale/bias have more axes than the normalized shape");
        if ((r = broadcast(op, &norm, &s, &bc))) return r;
        CHECK(__builtin_memcmp(bc.d, norm.d, sizeof(int64_t) * (size_t)norm.rank) == 0,
              "scale/bias do not broadcast to the normalized shape");
      }
      CHECK(a->epsilon >= 0, "epsilon must be >= 0");
      *out = xs;
      return 0;
    }
    OP_CASE(CAST) OP_CASE(NOT) OP_CASE(TRANSFORM_LANDMARKS)
      if (op->type == OP_TRANSFORM_LANDMARKS) {
        if ((r = is_matrix_4x4(op, &m->t[op->in[1]]))) return r;
        CHECK(a->dimensions == 2 || a->dimensions == 3, "dimensions must be 2 or 3, got %d", a->dimensions);
        CHECK(x->rank >= 1 && x->dims[x->rank - 1] % a->dimensions == 0,
              "the last axis is not a multiple of %d", a->dimensions);
        CHECK(a->scale != 0, "scale must not be 0");
      }
      *out = xs;
      return 0;
    OP_CASE(WHERE) {
      shp sa = of(&m->t[op->in[1]]), sb = of(&m->t[op->in[2]]), t;
      if ((r = broadcast(op, &xs, &sa, &t))) return r;
      return broadcast(op, &t, &sb, out);
    }
    OP_CASE(EQUAL) OP_CASE(LESS) OP_CASE(GREATER) OP_CASE(LESS_EQUAL) OP_CASE(GREATER_EQUAL) OP_CASE(AND)
    OP_CASE(OR) OP_CASE(XOR) {
      shp b = of(&m->t[op->in[1]]);
      return broadcast(op, &xs, &b, out);
    }
    OP_CASE(EXPAND) {
      shp t = {a->n_list, {0}};
      for (int i = 0; i < a->n_list; i++) {
        CHECK(a->list[i] >= 0, "shape has a negative entry %d", a->list[i]);
        t.d[i] = a->list[i];
      }
      return broadcast(op, &xs, &t, out);
    }
    OP_CASE(SCATTER_ND) {
      const wrt_tensor *ind = &m->t[op->in[1]], *upd = &m->t[op->in[2]];
      CHECK(x->rank >= 1 && ind->rank >= 1, "x and indices must have rank >= 1");
      int64_t kk = ind->dims[ind->rank - 1];
      CHECK(kk >= 1 && kk <= x->rank, "indices address %l axes, x has %d", kk, x->rank);
      int same = upd->rank == ind->rank - 1 + x->rank - (int)kk;
      for (int i = 0; same && i < ind->rank - 1; i++) same = upd->dims[i] == ind->dims[i];
      for (int i = (int)kk; same && i < x->rank; i++) same = upd->dims[ind->rank - 1 + i - kk] == x->dims[i];
      CHECK(same, "updates must have shape indices.shape[:-1] + x.shape[%l:]", kk);
      *out = xs;
      return 0;
    }
    OP_CASE(SPLIT) {
      CHECK(x->rank >= 1, "input must have rank >= 1");
      CHECK(a->axis >= -x->rank && a->axis < x->rank, "axis %d is out of range for rank %d", a->axis, x->rank);
      int ax = a->axis < 0 ? a->axis + x->rank : a->axis;
      CHECK(a->n_ints == op->n_out, "sizes has %d entries for %d outputs", a->n_ints, op->n_out);
      int64_t sum = 0;
      for (int i = 0; i < a->n_ints; i++) {
        CHECK(a->ints[i] >= 0, "sizes must be >= 0");
        sum += a->ints[i];
      }
      CHECK(sum == x->dims[ax], "sizes sum to %l, the axis has %d", sum, x->dims[ax]);
      *out = xs;
      out->d[ax] = a->ints[k];
      return 0;
    }
    OP_CASE(LANDMARKS_TO_TRANSFORM_MATRIX) {
      CHECK(x->rank == 3 && x->dims[0] == 1 && x->dims[2] == 3, "landmarks must have shape [1, N, 3]");
      CHECK(a->n_ints >= 1, "subset must not be empty");
      for (int i = 0; i < a->n_ints; i++)
        CHECK(a->ints[i] >= 0 && a->ints[i] < x->dims[1], "subset index %d outside [0, %d)", a->ints[i], x->dims[1]);
      for (int i = 0; i < 2; i++)
        CHECK(a->rotation_idx[i] >= 0 && a->rotation_idx[i] < x->dims[1], "rotation_idx %d outside [0, %d)",
              a->rotation_idx[i], x->dims[1]);
      CHECK(a->size[0] >= 1 && a->size[1] >= 1, "size must all be >= 1");
      CHECK(a->scales[0] > 0 && a->scales[1] > 0, "scales must be > 0");
      *out = (shp){3, {1, 4, 4}};
      return 0;
    }
    OP_CASE(TRANSFORM_TENSOR_BILINEAR)
      if ((r = rank_is(op, x, 4, "input x (NHWC)")) || (r = is_matrix_4x4(op, &m->t[op->in[1]]))) return r;
      CHECK(x->dims[0] == 1, "batch must be 1, got %d", x->dims[0]);
      CHECK(a->size[0] >= 1 && a->size[1] >= 1 && a->size[0] <= (1 << 16) && a->size[1] <= (1 << 16),
            "size must all be in [1, 65536]");
      *out = (shp){4, {1, a->size[0], a->size[1], x->dims[3]}};
      return 0;
  }
  /* element-wise unary ops (python_ref/opdefs.py's family, generated/wrt_ops.h) keep the shape */
  if (WRT_OPDEFS[op->type].family == WRT_FAMILY_UNARY) {
    *out = xs;
    return 0;
  }
  /* an op of the format (generated/wrt_ops.h) without a shape rule, and so without a kernel, here */
  return op_fail(op, WRT_ERR_UNSUPPORTED, "%s is not implemented by the C engine", op_name(op));
}

static int is_index(int dtype) { return dtype == WRT_I32 || dtype == WRT_I64; }

/* the dtype rules of python_ref/shapes.py: which inputs must agree, and the dtype of the outputs */
static int dtypes(wrt_model* m, const wrt_op* op, int* out) {
  const wrt_tensor* x = &m->t[op->in[0]];
  *out = x->dtype;
  /* quantized CONV_2D / CONV_TRANSPOSE_2D / FULLY_CONNECTED: int8/uint8 weights, int32 bias (python_ref's
   * _weight_dtypes) */
  int weighted = WRT_OPDEFS[op->type].quant == WRT_QUANT_WEIGHTED;
  if (op->a.float_output) { /* FULLY_CONNECTED's dequantized accumulator */
    CHECK(is_q8(x->dtype), "float_output needs an int8 or uint8 input, got %s", dtype_name(x->dtype));
    *out = WRT_F32;
  }
  if (weighted && is_q8(x->dtype)) {
    const wrt_tensor* w = &m->t[op->in[1]];
    CHECK(is_q8(w->dtype), "quantized input %s needs int8 or uint8 weights, got %s", dtype_name(x->dtype),
          dtype_name(w->dtype));
    if (op->n_in > 2 && op->in[2] >= 0)
      CHECK(m->t[op->in[2]].dtype == WRT_I32, "the bias of a quantized op must be int32, got %s",
            dtype_name(m->t[op->in[2]].dtype));
    return 0;
  }
  int first = 0, n = op->n_in; /* inputs [first, n) except `index` and `free` must have x's dtype... */
  int index = -1;              /* ...this one must be int32/int64... */
  int free = -1;               /* ...and this one may be anything (a table) */
  switch (op_code(op)) {
    case OP_QUANTIZE: *out = op->a.qdtype == WRT_QuantType_UINT8 ? WRT_U8 : WRT_I8; break;
    case OP_DEQUANTIZE: *out = WRT_F32; break;
    case OP_LOOKUP: free = 1; *out = m->t[op->in[1]].dtype; break;
    case OP_SOFTMAX: free = 1; break;
    case OP_GATHER: index = 1; break;
    case OP_SCATTER_ND: index = 1; break;
    case OP_LSTM: case OP_GRU: case OP_RNN: index = 4; break;
    case OP_WHERE:
      CHECK(x->dtype == WRT_BOOL, "cond must be bool, got %s", dtype_name(x->dtype));
      first = 1;
      *out = m->t[op->in[1]].dtype;
      break;
    case OP_CAST: *out = op->a.to; break;
    case OP_EQUAL: case OP_LESS: case OP_GREATER: case OP_LESS_EQUAL: case OP_GREATER_EQUAL: *out = WRT_BOOL; break;
    case OP_NOT: case OP_AND: case OP_OR: case OP_XOR:
      CHECK(x->dtype == WRT_BOOL, "inputs must be bool, got %s", dtype_name(x->dtype));
      break;
    default: break;
  }
  const wrt_tensor* ref = &m->t[op->in[first]];
  for (int i = first; i < n; i++) {
    int ti = op->in[i];
    if (ti < 0 || i == free) continue;
    if (i == index) {
      CHECK(is_index(m->t[ti].dtype), "input %d must be int32 or int64, got %s", i, dtype_name(m->t[ti].dtype));
      continue;
    }
    CHECK(m->t[ti].dtype == ref->dtype, "inputs have different dtypes (%s and %s)", dtype_name(ref->dtype),
          dtype_name(m->t[ti].dtype));
  }
  return 0;
}

/* Infer every output of the op; assign: set the output tensors' shapes (a run-time shape change), else compare them
 * with the shapes the file declares. */
static int check_op(wrt_model* m, wrt_op* op, int assign) {
  if (!op_kept(op->type)) return op_not_in_module(m, op);
  if (op_has_clamp(op->type))
    CHECK(op->a.act_min <= op->a.act_max, "act_min %g is greater than act_max %g", (double)op->a.act_min,
          (double)op->a.act_max); /* NaN bounds fail too, as in python_ref */
  int dt = -1, r = dtypes(m, op, &dt);
  if (r) return r;
  for (int k = 0; k < op->n_out; k++) {
    wrt_tensor* y = &m->t[op->outs[k]];
    shp out;
    if ((r = infer(m, op, k, &out))) return r;
    CHECK(out.rank <= WRT_MAX_RANK, "result rank exceeds %d", WRT_MAX_RANK);
    CHECK(y->dtype == dt, "output dtype %s, expected %s", dtype_name(y->dtype), dtype_name(dt));
    if (assign) {
      if ((r = set_shape(m, op, y, &out))) return r;
      continue;
    }
    shp decl = of(y);
    int same = decl.rank == out.rank;
    for (int i = 0; same && i < out.rank; i++) same = decl.d[i] == out.d[i];
    if (!same) {
      char b1[128], b2[128];
      fmt_shape(b1, sizeof b1, &decl);
      fmt_shape(b2, sizeof b2, &out);
      FAIL("output tensor %d ('%s') is declared with shape %s, but the op produces %s", op->outs[k], y->name, b1, b2);
    }
  }
  return 0;
}

int check_shapes(wrt_model* m, int assign) {
  for (int k = 0; k < m->n_ops; k++) {
    int r = check_op(m, &m->ops[k], assign);
    if (r) return r;
  }
  for (int k = 0; k < m->n_ops; k++) {
    int r = check_quant(m, &m->ops[k]);
    if (r) return r;
  }
  return WRT_OK;
}
