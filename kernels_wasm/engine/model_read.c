/* .wrt -> verified tensors and ops, with the checks of python_ref/wrt_file.py (same wording where possible). */
#include "engine.h"

static const wrt_opdef OPDEFS[OP_MAX_CODE] = {
    [OP_CONV_2D] = {"CONV_2D", 2, 3, 1},
    [OP_CONV_TRANSPOSE_2D] = {"CONV_TRANSPOSE_2D", 2, 3, 2},
    [OP_FULLY_CONNECTED] = {"FULLY_CONNECTED", 2, 3, 3},
    [OP_MATMUL] = {"MATMUL", 2, 2, 0},
    [OP_ADD] = {"ADD", 2, 2, 4},
    [OP_SUB] = {"SUB", 2, 2, 4},
    [OP_MUL] = {"MUL", 2, 2, 4},
    [OP_DIV] = {"DIV", 2, 2, 4},
    [OP_MAXIMUM] = {"MAXIMUM", 2, 2, 4},
    [OP_MINIMUM] = {"MINIMUM", 2, 2, 4},
    [OP_POW] = {"POW", 2, 2, 0},
    [OP_PRELU] = {"PRELU", 2, 2, 0},
    [OP_RELU] = {"RELU", 1, 1, 0},
    [OP_CLIP] = {"CLIP", 1, 1, 5},
    [OP_LEAKY_RELU] = {"LEAKY_RELU", 1, 1, 6},
    [OP_HARD_SWISH] = {"HARD_SWISH", 1, 1, 0},
    [OP_HARD_SIGMOID] = {"HARD_SIGMOID", 1, 1, 7},
    [OP_SIGMOID] = {"SIGMOID", 1, 1, 0},
    [OP_TANH] = {"TANH", 1, 1, 0},
    [OP_EXP] = {"EXP", 1, 1, 0},
    [OP_SQRT] = {"SQRT", 1, 1, 0},
    [OP_ABS] = {"ABS", 1, 1, 0},
    [OP_NEG] = {"NEG", 1, 1, 0},
    [OP_MAX_POOL_2D] = {"MAX_POOL_2D", 1, 1, 8},
    [OP_AVERAGE_POOL_2D] = {"AVERAGE_POOL_2D", 1, 1, 8},
    [OP_MEAN] = {"MEAN", 1, 1, 9},
    [OP_REDUCE_MAX] = {"REDUCE_MAX", 1, 1, 9},
    [OP_REDUCE_SUM] = {"REDUCE_SUM", 1, 1, 9},
    [OP_SOFTMAX] = {"SOFTMAX", 1, 1, 10},
    [OP_RESHAPE] = {"RESHAPE", 1, 1, 11},
    [OP_TRANSPOSE] = {"TRANSPOSE", 1, 1, 12},
    [OP_CONCATENATION] = {"CONCATENATION", 1, 255, 13},
    [OP_SLICE] = {"SLICE", 1, 1, 14},
    [OP_PAD] = {"PAD", 1, 1, 15},
    [OP_RESIZE] = {"RESIZE", 1, 1, 16},
    [OP_DEPTH_TO_SPACE] = {"DEPTH_TO_SPACE", 1, 1, 17},
    [OP_GATHER] = {"GATHER", 2, 2, 18},
};

static const char* const OPTION_NAMES[] = {
    "NONE", "Conv2DOptions", "ConvTranspose2DOptions", "FullyConnectedOptions", "BinaryOptions", "ClipOptions",
    "LeakyReluOptions", "HardSigmoidOptions", "Pool2DOptions", "ReduceOptions", "SoftmaxOptions", "ReshapeOptions",
    "TransposeOptions", "ConcatenationOptions", "SliceOptions", "PadOptions", "ResizeOptions", "DepthToSpaceOptions",
    "GatherOptions"};

const wrt_opdef* wrt_opdef_of(int code) {
  return code > 0 && code < OP_MAX_CODE && OPDEFS[code].name ? &OPDEFS[code] : 0;
}

const char* op_name(const wrt_op* op) { return OPDEFS[op->type].name; }

int op_fail(const wrt_op* op, int code, const char* fmt, ...) {
  char msg[384];
  va_list ap;
  va_start(ap, fmt);
  rt_vformat(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return rt_error(code, "operator %d (%s '%s'): %s", op->index, op_name(op), op->name, msg);
}

static const uint8_t ESIZE[] = {4, 2, 1, 1, 4, 8, 1};
static const char* const DTYPE_NAMES[] = {"float32", "float16", "int8", "uint8", "int32", "int64", "bool"};
const char* dtype_name(int d);
const char* dtype_name(int d) { return d >= 0 && d < 7 ? DTYPE_NAMES[d] : "?"; }

/* ---- owned strings ---------------------------------------------------------------------------------------------- */
static const char* dup_str(wrt_model* m, const char* s) {
  size_t n = 0;
  while (s[n]) n++;
  char* d = m_alloc(m, n + 1);
  if (!d) return 0;
  rt_copy(d, s, n + 1);
  return d;
}

/* ---- tensors ---------------------------------------------------------------------------------------------------- */
static int read_tensors(wrt_model* m, fb_buf f, size_t root) {
  size_t tv = fb_ref(f, root, 1), bv = fb_ref(f, root, 5), plan = fb_ref(f, root, 6);
  uint32_t nt = fb_vlen(f, tv), nb = fb_vlen(f, bv);
  if (nt > (1u << 20)) return rt_error(WRT_ERR_FORMAT, "model has %u tensors (limit 1048576)", nt);
  uint64_t arena = fb_u64(f, plan, 0, 0);
  uint32_t align = fb_u32(f, plan, 1, 64);
  if (align != 16 && align != 32 && align != 64 && align != 128)
    return rt_error(WRT_ERR_FORMAT, "arena alignment %u is not 16, 32, 64 or 128", align);
  if (arena > ((uint64_t)1 << 31))
    return rt_error(WRT_ERR_UNSUPPORTED, "the memory plan needs a %l-byte arena; the limit is 2 GiB", (int64_t)arena);
  m->arena_size = (size_t)arena;
  m->n_tensors = (int)nt;
  m->t = m_alloc(m, sizeof(wrt_tensor) * (nt ? nt : 1));
  if (!m->t) return rt_error(WRT_ERR_NOMEM, "out of memory reading %u tensors", nt);
  rt_zero(m->t, sizeof(wrt_tensor) * (nt ? nt : 1));
  for (uint32_t i = 0; i < nt; i++) {
    size_t tt = fb_vref(f, tv, i);
    wrt_tensor* t = &m->t[i];
    t->name = dup_str(m, fb_str(f, fb_ref(f, tt, 0)));
    if (!t->name) return rt_error(WRT_ERR_NOMEM, "out of memory");
    size_t sv = fb_ref(f, tt, 1);
    uint32_t rank = fb_vlen(f, sv);
    if (rank > WRT_MAX_RANK)
      return rt_error(WRT_ERR_FORMAT, "tensor %u ('%s'): rank %u exceeds %d", i, t->name, rank, WRT_MAX_RANK);
    t->rank = (int32_t)rank;
    uint64_t count = 1;
    for (uint32_t d = 0; d < rank; d++) {
      int32_t v = fb_vi32(f, sv, d);
      if (v < 0) return rt_error(WRT_ERR_FORMAT, "tensor %u ('%s'): negative dimension %d", i, t->name, v);
      t->dims[d] = v;
      count = count > ((uint64_t)1 << 32) ? count : count * (uint64_t)v; /* saturates, checked below */
    }
    if (count > ((uint64_t)1 << 31))
      return rt_error(WRT_ERR_FORMAT, "tensor %u ('%s'): absurd shape (%l elements)", i, t->name, (int64_t)count);
    int8_t dt = (int8_t)fb_u8(f, tt, 2, 0);
    if (dt < 0 || dt > 6) return rt_error(WRT_ERR_FORMAT, "tensor %u ('%s'): unknown dtype code %d", i, t->name, dt);
    t->dtype = (uint8_t)dt;
    t->esize = ESIZE[dt];
    t->count = count;
    t->nbytes = count * t->esize;
    uint32_t buf = fb_u32(f, tt, 3, 0);
    t->arena_offset = fb_i64(f, tt, 4, -1);
    if (buf != 0) {
      if (buf >= nb) return rt_error(WRT_ERR_FORMAT, "tensor %u ('%s'): buffer %u of %u", i, t->name, buf, nb);
      size_t dv = fb_ref(f, fb_vref(f, bv, buf), 0);
      uint32_t len = fb_vlen(f, dv);
      if (len != t->nbytes)
        return rt_error(WRT_ERR_FORMAT, "tensor %u ('%s'): constant holds %u bytes, shape needs %l", i, t->name, len,
                        (int64_t)t->nbytes);
      t->is_const = 1;
      t->arena_offset = -1;
      t->file_data = len ? fb_vdata(f, dv) : 0;
    } else {
      int64_t off = t->arena_offset;
      if (off < 0 || off % align != 0 || (uint64_t)off > arena || t->nbytes > arena - (uint64_t)off)
        return rt_error(WRT_ERR_FORMAT,
                        "tensor %u ('%s'): arena offset %l + %l bytes outside the %l-byte arena or misaligned", i,
                        t->name, off, (int64_t)t->nbytes, (int64_t)arena);
    }
  }
  return WRT_OK;
}

/* ---- attributes ------------------------------------------------------------------------------------------------- */
static int rd_ints(const wrt_op* op, fb_buf f, size_t tab, int slot, const char* what, int32_t* dst, int cap,
                   int* n, const int32_t* def, int ndef) {
  size_t v = fb_ref(f, tab, slot);
  if (!v) {
    for (int i = 0; i < ndef; i++) dst[i] = def[i];
    if (n) *n = ndef;
    return WRT_OK;
  }
  uint32_t len = fb_vlen(f, v);
  if (len > (uint32_t)cap) return op_fail(op, WRT_ERR_FORMAT, "%s has %u values, at most %d allowed", what, len, cap);
  for (uint32_t i = 0; i < len; i++) dst[i] = fb_vi32(f, v, i);
  if (n) *n = (int)len;
  else if ((int)len != ndef) return op_fail(op, WRT_ERR_FORMAT, "%s must have %d values, got %u", what, ndef, len);
  return WRT_OK;
}

static int rd_enum(const wrt_op* op, fb_buf f, size_t tab, int slot, const char* what, int count, uint8_t def,
                   uint8_t* dst) {
  int8_t v = (int8_t)fb_u8(f, tab, slot, def); /* absent = the schema default, which writers omit */
  if (v < 0 || v >= count) return op_fail(op, WRT_ERR_FORMAT, "%s = %d is not a valid %s", what, v, what);
  *dst = (uint8_t)v;
  return WRT_OK;
}

static int read_options(wrt_op* op, fb_buf f, size_t ot) {
  static const int32_t ONES[2] = {1, 1}, ZEROS[4] = {0, 0, 0, 0};
  const float inf = __builtin_inff();
  wrt_attrs* a = &op->a;
  a->act_min = -inf;
  a->act_max = inf;
  int r = WRT_OK;
  int n = 0;
  switch (wrt_opdef_of(op->type)->options) {
    case 1: /* Conv2DOptions */
    case 2: /* ConvTranspose2DOptions */
      if ((r = rd_ints(op, f, ot, 0, "strides", a->strides, 2, 0, ONES, 2)) ||
          (r = rd_ints(op, f, ot, 1, "dilations", a->dilations, 2, 0, ONES, 2)) ||
          (r = rd_ints(op, f, ot, 2, "pads", a->pads, 4, 0, ZEROS, 4)))
        return r;
      a->groups = fb_i32(f, ot, 3, 1);
      if (op->type == OP_CONV_TRANSPOSE_2D) {
        if ((r = rd_ints(op, f, ot, 4, "output_padding", a->output_padding, 2, 0, ZEROS, 2))) return r;
        n = 1;
      }
      a->act_min = fb_f32(f, ot, 4 + n, -inf);
      a->act_max = fb_f32(f, ot, 5 + n, inf);
      break;
    case 3: /* FullyConnectedOptions */
    case 4: /* BinaryOptions */
      a->act_min = fb_f32(f, ot, 0, -inf);
      a->act_max = fb_f32(f, ot, 1, inf);
      break;
    case 5:
      a->min = fb_f32(f, ot, 0, -inf);
      a->max = fb_f32(f, ot, 1, inf);
      break;
    case 6: a->alpha = fb_f32(f, ot, 0, 0.01f); break;
    case 7:
      a->alpha = fb_f32(f, ot, 0, 0.2f);
      a->beta = fb_f32(f, ot, 1, 0.5f);
      break;
    case 8: /* Pool2DOptions */
      if ((r = rd_ints(op, f, ot, 0, "kernel", a->kernel, 2, 0, ONES, 2)) ||
          (r = rd_ints(op, f, ot, 1, "strides", a->strides, 2, 0, ONES, 2)) ||
          (r = rd_ints(op, f, ot, 2, "dilations", a->dilations, 2, 0, ONES, 2)) ||
          (r = rd_ints(op, f, ot, 3, "pads", a->pads, 4, 0, ZEROS, 4)))
        return r;
      a->ceil_mode = fb_u8(f, ot, 4, 0) != 0;
      a->count_include_pad = fb_u8(f, ot, 5, 0) != 0;
      a->act_min = fb_f32(f, ot, 6, -inf);
      a->act_max = fb_f32(f, ot, 7, inf);
      break;
    case 9:
      if ((r = rd_ints(op, f, ot, 0, "axes", a->list, WRT_MAX_RANK, &a->n_list, ZEROS, 0))) return r;
      a->keepdims = fb_u8(f, ot, 1, 1) != 0;
      break;
    case 10: a->axis = fb_i32(f, ot, 0, -1); break;
    case 11: return rd_ints(op, f, ot, 0, "shape", a->list, WRT_MAX_RANK, &a->n_list, ZEROS, 0);
    case 12: return rd_ints(op, f, ot, 0, "perm", a->list, WRT_MAX_RANK, &a->n_list, ZEROS, 0);
    case 13:
      a->axis = fb_i32(f, ot, 0, 0);
      a->act_min = fb_f32(f, ot, 1, -inf);
      a->act_max = fb_f32(f, ot, 2, inf);
      break;
    case 14: {
      int n0 = 0, n1 = 0, n2 = 0;
      if ((r = rd_ints(op, f, ot, 0, "starts", a->starts, WRT_MAX_RANK, &n0, ZEROS, 0)) ||
          (r = rd_ints(op, f, ot, 1, "ends", a->ends, WRT_MAX_RANK, &n1, ZEROS, 0)) ||
          (r = rd_ints(op, f, ot, 2, "steps", a->steps, WRT_MAX_RANK, &n2, ZEROS, 0)))
        return r;
      if (n0 != n1 || n1 != n2)
        return op_fail(op, WRT_ERR_FORMAT, "starts/ends/steps have %d/%d/%d values", n0, n1, n2);
      a->n_list = n0;
      break;
    }
    case 15:
      if ((r = rd_ints(op, f, ot, 0, "pads", a->list, 2 * WRT_MAX_RANK, &a->n_list, ZEROS, 0)) ||
          (r = rd_enum(op, f, ot, 1, "PadMode", 3, 0, &a->mode)))
        return r;
      a->value = fb_f32(f, ot, 2, 0.0f);
      break;
    case 16: {
      static const int32_t SZ[2] = {0, 0};
      if ((r = rd_ints(op, f, ot, 0, "size", a->size, 2, 0, SZ, 2))) return r;
      size_t sv = fb_ref(f, ot, 1);
      if (sv) {
        if (fb_vlen(f, sv) != 2) return op_fail(op, WRT_ERR_FORMAT, "scales must have 2 values, got %u", fb_vlen(f, sv));
        a->scales[0] = fb_vf32(f, sv, 0);
        a->scales[1] = fb_vf32(f, sv, 1);
      }
      if ((r = rd_enum(op, f, ot, 2, "ResizeMode", 2, 1, &a->mode)) || (r = rd_enum(op, f, ot, 3, "CoordMode", 5, 0, &a->coord)) ||
          (r = rd_enum(op, f, ot, 4, "NearestMode", 4, 0, &a->nearest)))
        return r;
      break;
    }
    case 17:
      a->block = fb_i32(f, ot, 0, 2);
      return rd_enum(op, f, ot, 1, "DepthToSpaceMode", 2, 0, &a->mode);
    case 18: a->axis = fb_i32(f, ot, 0, 0); break;
    default: break;
  }
  return r;
}

/* ---- operators -------------------------------------------------------------------------------------------------- */
static int read_ops(wrt_model* m, fb_buf f, size_t root) {
  size_t ov = fb_ref(f, root, 2);
  uint32_t no = fb_vlen(f, ov);
  if (no > (1u << 20)) return rt_error(WRT_ERR_FORMAT, "model has %u operators (limit 1048576)", no);
  m->n_ops = (int)no;
  m->ops = m_alloc(m, sizeof(wrt_op) * (no ? no : 1));
  if (!m->ops) return rt_error(WRT_ERR_NOMEM, "out of memory reading %u operators", no);
  rt_zero(m->ops, sizeof(wrt_op) * (no ? no : 1));
  int nt = m->n_tensors;
  for (uint32_t k = 0; k < no; k++) {
    size_t ot = fb_vref(f, ov, k);
    wrt_op* op = &m->ops[k];
    op->index = (int)k;
    uint16_t code = fb_u16(f, ot, 0, 0);
    const wrt_opdef* d = wrt_opdef_of(code);
    if (!d) return rt_error(WRT_ERR_FORMAT, "operator %u: unknown op type code %d", k, (int)code);
    op->type = code;
    size_t name = fb_ref(f, ot, 5);
    char fallback[24];
    rt_format(fallback, sizeof fallback, "op%u", k);
    op->name = dup_str(m, name ? fb_str(f, name) : fallback);
    if (!op->name) return rt_error(WRT_ERR_NOMEM, "out of memory");
    size_t iv = fb_ref(f, ot, 1), outv = fb_ref(f, ot, 2);
    uint32_t ni = fb_vlen(f, iv), nout = fb_vlen(f, outv);
    if (ni < d->min_in || (d->max_in != 255 && ni > d->max_in) || ni > 4096) {
      if (d->max_in == 255) return op_fail(op, WRT_ERR_FORMAT, "%u inputs, expected at least %d", ni, d->min_in);
      return op_fail(op, WRT_ERR_FORMAT, "%u inputs, expected %d..%d", ni, d->min_in, d->max_in);
    }
    if (nout != 1) return op_fail(op, WRT_ERR_FORMAT, "%u outputs, expected 1", nout);
    op->n_in = (int)ni;
    op->in = m_alloc(m, sizeof(int32_t) * (ni ? ni : 1));
    if (!op->in) return rt_error(WRT_ERR_NOMEM, "out of memory");
    for (uint32_t i = 0; i < ni; i++) {
      int32_t ti = fb_vi32(f, iv, i);
      if (ti < -1 || ti >= nt)
        return op_fail(op, WRT_ERR_FORMAT, "input tensor index %d out of range (0..%d)", ti, nt - 1);
      if (ti < 0 && (i < d->min_in || d->max_in == 255)) return op_fail(op, WRT_ERR_FORMAT, "required input missing");
      op->in[i] = ti;
    }
    op->out = fb_vi32(f, outv, 0);
    if (op->out < 0 || op->out >= nt)
      return op_fail(op, WRT_ERR_FORMAT, "output tensor index %d out of range (0..%d)", op->out, nt - 1);
    uint8_t otype = fb_u8(f, ot, 3, 0);
    size_t opts = fb_ref(f, ot, 4);
    if (d->options && (otype != d->options || !opts))
      return op_fail(op, WRT_ERR_FORMAT, "options of type %d (%s), expected %s", otype,
                     otype < sizeof OPTION_NAMES / sizeof OPTION_NAMES[0] ? OPTION_NAMES[otype] : "?",
                     OPTION_NAMES[d->options]);
    int r = read_options(op, f, d->options ? opts : 0);
    if (r) return r;
  }
  return WRT_OK;
}

/* graph inputs/outputs, then: every op reads only constants, graph inputs or earlier outputs; one writer per tensor */
static int read_io_and_order(wrt_model* m, fb_buf f, size_t root) {
  int nt = m->n_tensors;
  const char* kinds[2] = {"input", "output"};
  for (int w = 0; w < 2; w++) {
    size_t v = fb_ref(f, root, 3 + w);
    uint32_t n = fb_vlen(f, v);
    if (n == 0) return rt_error(WRT_ERR_FORMAT, "model has no %ss", kinds[w]);
    if (n > 4096) return rt_error(WRT_ERR_FORMAT, "model has %u %ss (limit 4096)", n, kinds[w]);
    int32_t* dst = m_alloc(m, sizeof(int32_t) * n);
    if (!dst) return rt_error(WRT_ERR_NOMEM, "out of memory");
    for (uint32_t i = 0; i < n; i++) {
      int32_t ti = fb_vi32(f, v, i);
      if (ti < 0 || ti >= nt)
        return rt_error(WRT_ERR_FORMAT, "graph %s refers to tensor %d, but the model has %d tensors", kinds[w], ti, nt);
      if (m->t[ti].is_const)
        return rt_error(WRT_ERR_UNSUPPORTED, "graph %s tensor %d ('%s') is a constant", kinds[w], ti, m->t[ti].name);
      dst[i] = ti;
    }
    if (w == 0) { m->inputs = dst; m->n_inputs = (int)n; }
    else { m->outputs = dst; m->n_outputs = (int)n; }
  }
  size_t pre = fb_ref(f, fb_ref(f, root, 7), 2); /* Metadata.preprocess: hints must name a graph input */
  for (uint32_t i = 0; i < fb_vlen(f, pre); i++) {
    int32_t in = fb_i32(f, fb_vref(f, pre, i), 0, 0);
    if (in < 0 || in >= m->n_inputs)
      return rt_error(WRT_ERR_FORMAT, "preprocess hint for input #%d of %d", in, m->n_inputs);
  }
  uint8_t* ready = m_alloc(m, (uint64_t)nt + 1);
  if (!ready) return rt_error(WRT_ERR_NOMEM, "out of memory");
  for (int i = 0; i < nt; i++) ready[i] = m->t[i].is_const;
  for (int i = 0; i < m->n_inputs; i++) ready[m->inputs[i]] = 1;
  for (int k = 0; k < m->n_ops; k++) {
    wrt_op* op = &m->ops[k];
    for (int i = 0; i < op->n_in; i++) {
      int ti = op->in[i];
      if (ti >= 0 && !ready[ti])
        return op_fail(op, WRT_ERR_FORMAT, "reads tensor %d ('%s') before any op writes it", ti, m->t[ti].name);
    }
    if (ready[op->out])
      return op_fail(op, WRT_ERR_FORMAT, "writes tensor %d ('%s'), which is already a constant, input or earlier output",
                     op->out, m->t[op->out].name);
    ready[op->out] = 1;
  }
  for (int i = 0; i < m->n_outputs; i++)
    if (!ready[m->outputs[i]])
      return rt_error(WRT_ERR_FORMAT, "graph output tensor %d ('%s') is never written", m->outputs[i],
                      m->t[m->outputs[i]].name);
  return WRT_OK;
}

int read_model(wrt_model* m, fb_buf f) {
  size_t root = fb_root(f);
  uint32_t version = fb_u32(f, root, 0, 0);
  if (version != WRT_FORMAT_VERSION)
    return rt_error(WRT_ERR_FORMAT, "format version %u, this reader knows %d", version, WRT_FORMAT_VERSION);
  int r = read_tensors(m, f, root);
  if (!r) r = read_ops(m, f, root);
  if (!r) r = read_io_and_order(m, f, root);
  return r;
}
