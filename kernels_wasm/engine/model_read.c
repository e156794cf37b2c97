/* .wrt -> verified tensors and ops, with the checks of python_ref/wrt_file.py (same wording where possible).
 * What the format says about ops (codes, arity, options tables, field slots, defaults, enum ranges) comes from
 * generated/wrt_ops.h (its tables are defined in support.c); where the engine keeps each attribute is ATTR_HOME below. */
#include "engine.h"

static const uint8_t ESIZE[] = {4, 2, 1, 1, 4, 8, 1};
/* FLOAT16 constants (weights stored at half size) compute as float32: widen them once, here, so every op and the
 * weight packing see float32. Exact: every fp16 value is a float32 value. */
float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, mant = h & 0x3ffu, bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13); /* inf, nan */
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13); /* normal: rebias 15 -> 127 */
  } else if (mant == 0) {
    bits = sign; /* signed zero */
  } else {        /* subnormal: normalize */
    int e = -1;
    do {
      mant <<= 1;
      e++;
    } while (!(mant & 0x400u));
    bits = sign | ((uint32_t)(112 - e) << 23) | ((mant & 0x3ffu) << 13);
  }
  float x;
  rt_copy(&x, &bits, 4);
  return x;
}

/* A float16 buffer of n values becomes float32 once, however many tensors share it (*shared: its widened copy), so
 * a small file cannot multiply its constants by referencing one buffer many times. */
static int widen_f16(wrt_model* m, wrt_tensor* t, uint64_t n, float** shared) {
  float* w = *shared;
  if (!w) {
    w = (float*)m_alloc(m, n * 4 + 1);
    if (!w) return WRT_ERR_NOMEM;
    for (uint64_t i = 0; i < n; i++)
      w[i] = half_to_float((uint16_t)(t->file_data[2 * i] | (t->file_data[2 * i + 1] << 8)));
    *shared = w;
  }
  t->file_data = (const uint8_t*)w;
  t->file_len = 0; /* owned: a streamed load has nothing to fetch */
  t->dtype = WRT_F32;
  t->esize = 4;
  t->nbytes = t->count * 4;
  return WRT_OK;
}

/* ---- block-sparse constants (python_ref/sparse.py: the same checks, the same words) --------------------------- */
/* a module built for models without them (wasmrt build --for: no sparse kernel family) refuses them instead */
#define READS_SPARSE (WRT_KF_SPARSE || WRT_KF_QSPARSE)

static int sparse_fail(uint32_t i, const wrt_tensor* t, const char* msg) {
  return rt_error(WRT_ERR_FORMAT, "tensor %u ('%s'): %s", i, t->name, msg);
}

/* the encoding in table sp against the tensor's shape and its buffer of `len` bytes */
static int read_sparsity(wrt_model* m, fb_buf f, size_t sp, uint32_t i, wrt_tensor* t, uint32_t len) {
  char msg[200];
  if (t->rank == 0) return sparse_fail(i, t, "a block-sparse tensor needs rank 1 or more");
  uint64_t rows = (uint64_t)t->dims[0], cols = rows ? t->count / rows : 1;
  if (!rows) /* python_ref: prod(shape[1:]) */
    for (int d = 1; d < t->rank; d++) cols *= (uint64_t)t->dims[d];
  uint64_t br = (rows + 3) / 4;
  size_t sv = fb_ref(f, sp, 0), cv = fb_ref(f, sp, 1);
  uint32_t ns = fb_vlen(f, sv), nb = fb_vlen(f, cv);
  if (ns != br + 1) {
    rt_format(msg, sizeof msg, "block-sparse: %u row starts, expected %l (one per block of 4 rows, and one more)", ns,
              (int64_t)(br + 1));
    return sparse_fail(i, t, msg);
  }
  int32_t prev = fb_vi32(f, sv, 0);
  int bad = prev != 0;
  for (uint32_t r = 1; r < ns && !bad; r++) {
    int32_t s = fb_vi32(f, sv, r);
    bad = s < prev;
    prev = s;
  }
  if (bad || (uint32_t)prev != nb) {
    rt_format(msg, sizeof msg, "block-sparse: row starts must begin at 0, never decrease and end at the %u stored blocks",
              nb);
    return sparse_fail(i, t, msg);
  }
  for (uint32_t r = 0; r + 1 < ns; r++) {
    uint32_t b0 = (uint32_t)fb_vi32(f, sv, r), b1 = (uint32_t)fb_vi32(f, sv, r + 1);
    for (uint32_t b = b0; b < b1; b++) {
      int32_t c = fb_vi32(f, cv, b);
      if (c < 0 || (uint64_t)c >= cols || (b > b0 && c <= fb_vi32(f, cv, b - 1))) {
        rt_format(msg, sizeof msg, "block-sparse: block %u (block row %u) is in column %d; columns must increase "
                  "within a block row and stay below %l", b, r, c, (int64_t)cols);
        return sparse_fail(i, t, msg);
      }
    }
  }
  uint64_t need = (uint64_t)nb * 4 * t->esize;
  if (len != need) {
    rt_format(msg, sizeof msg, "block-sparse: the buffer holds %u bytes, %u blocks of 4 %s values need %l", len, nb,
              dtype_name(t->dtype), (int64_t)need);
    return sparse_fail(i, t, msg);
  }
  if (rows % 4) { /* values of rows past shape[0] must be 0 (floats: +-0) */
    uint32_t b0 = (uint32_t)fb_vi32(f, sv, ns - 2);
    for (uint32_t b = b0; b < nb; b++)
      for (uint64_t j = rows % 4; j < 4; j++) {
        const uint8_t* v = t->file_data + (b * 4 + j) * t->esize;
        uint32_t bits = t->esize == 4   ? fb_rd32(v) & 0x7fffffffu
                        : t->esize == 2 ? (uint32_t)((v[0] | v[1] << 8) & 0x7fff)
                                        : v[0];
        if (bits) {
          rt_format(msg, sizeof msg, "block-sparse: block %u has a non-zero value past row %l", b, (int64_t)rows - 1);
          return sparse_fail(i, t, msg);
        }
      }
  }
  t->sparse = 1;
  t->sp_blocks = nb;
  /* copied: a streamed load frees the file before prepare reads them */
  uint8_t* idx = m_alloc(m, 4 * ((size_t)ns + nb) + 1);
  if (!idx) return m_alloc_fail(m, 0, "block-sparse indices", 4 * ((uint64_t)ns + nb));
  rt_copy(idx, fb_vdata(f, sv), 4 * (size_t)ns);
  rt_copy(idx + 4 * (size_t)ns, fb_vdata(f, cv), 4 * (size_t)nb);
  t->sp_starts = idx;
  t->sp_cols = idx + 4 * (size_t)ns;
  return WRT_OK;
}

/* ---- names ----------------------------------------------------------------------------------------------------- */
/* Names are interned by their position in the file: a string shared by many tables (a hostile file can point a
 * million tensors at one name) is copied once, into chunks owned by the model. */
typedef struct {
  size_t pos;
  const char* s;
} name_slot;

typedef struct {
  name_slot* slots; /* open addressing, mask + 1 entries (at least twice the names to intern) */
  size_t mask;
  char* chunk;
  size_t left;
} name_pool;

static const char* pool_copy(wrt_model* m, name_pool* np, const char* src, size_t n) {
  if (n + 1 > np->left) {
    size_t size = n + 1 > 65536 ? n + 1 : 65536;
    np->chunk = m_alloc(m, size);
    if (!np->chunk) return 0;
    np->left = size;
  }
  char* d = np->chunk;
  rt_copy(d, src, n);
  d[n] = 0;
  np->chunk += n + 1;
  np->left -= n + 1;
  return d;
}

/* the string at position pos (0: absent, ""), verified by fb_verify_model; NULL when out of memory */
static const char* intern(wrt_model* m, name_pool* np, fb_buf f, size_t pos) {
  if (!pos) return "";
  for (size_t i = (pos * 2654435761u) & np->mask;; i = (i + 1) & np->mask) {
    name_slot* sl = &np->slots[i];
    if (sl->s && sl->pos == pos) return sl->s;
    if (sl->s) continue;
    const char* src = (const char*)f.b + pos + 4;
    size_t len = fb_rd32(f.b + pos), n = 0;
    while (n < len && src[n]) n++;
    sl->s = pool_copy(m, np, src, n);
    sl->pos = pos;
    return sl->s;
  }
}

/* ---- tensors ---------------------------------------------------------------------------------------------------- */
static int read_each_tensor(wrt_model* m, fb_buf f, size_t root, name_pool* np, float** widened) {
  size_t tv = fb_ref(f, root, 1), bv = fb_ref(f, root, 5), plan = fb_ref(f, root, 6);
  uint32_t nt = fb_vlen(f, tv), nb = fb_vlen(f, bv);
  uint64_t arena = fb_u64(f, plan, 0, 0);
  uint32_t align = fb_u32(f, plan, 1, 64);
  if (align != 16 && align != 32 && align != 64 && align != 128)
    return rt_error(WRT_ERR_FORMAT, "arena alignment %u is not 16, 32, 64 or 128", align);
  if (arena > ((uint64_t)1 << 31))
    return rt_error(WRT_ERR_UNSUPPORTED, "the memory plan needs a %l-byte arena; the limit is 2 GiB", (int64_t)arena);
  m->arena_size = (size_t)arena;
  m->n_tensors = (int)nt;
  m->t = m_alloc(m, sizeof(wrt_tensor) * (nt ? nt : 1));
  if (!m->t) return m_alloc_fail(m, 0, "the tensor table", sizeof(wrt_tensor) * (uint64_t)nt);
  for (uint32_t i = 0; i < nt; i++) {
    size_t tt = fb_vref(f, tv, i);
    wrt_tensor* t = &m->t[i];
    t->name = intern(m, np, f, fb_ref(f, tt, 0));
    if (!t->name) return m_alloc_fail(m, 0, "tensor names", 65536);
    size_t sv = fb_ref(f, tt, 1);
    uint32_t rank = fb_vlen(f, sv);
    if (rank > WRT_MAX_RANK)
      return rt_error(WRT_ERR_FORMAT, "tensor %u ('%s'): rank %u exceeds %d", i, t->name, rank, WRT_MAX_RANK);
    t->rank = (int32_t)rank;
    uint64_t count = 1;
    int empty = 0;
    for (uint32_t d = 0; d < rank; d++) {
      int32_t v = fb_vi32(f, sv, d);
      if (v < 0) return rt_error(WRT_ERR_FORMAT, "tensor %u ('%s'): negative dimension %d", i, t->name, v);
      t->dims[d] = v;
      empty |= v == 0;
      count = count > ((uint64_t)1 << 32) ? count : count * (uint64_t)v; /* saturates, checked below */
    }
    if (empty) count = 0; /* exact, as python_ref: a zero dimension empties any shape */
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
    size_t sp = fb_ref(f, tt, 8);
    if (sp && !buf) return rt_error(WRT_ERR_FORMAT, "tensor %u ('%s'): block-sparse, but not a constant", i, t->name);
    if (sp && t->dtype != WRT_F32 && t->dtype != WRT_F16 && t->dtype != WRT_I8)
      return rt_error(WRT_ERR_FORMAT, "tensor %u ('%s'): block-sparse tensors must be float32, float16 or int8, not %s", i,
                      t->name, dtype_name(t->dtype));
    if (buf != 0) {
      if (buf >= nb) return rt_error(WRT_ERR_FORMAT, "tensor %u ('%s'): buffer %u of %u", i, t->name, buf, nb);
      size_t dv = fb_ref(f, fb_vref(f, bv, buf), 0);
      uint32_t len = fb_vlen(f, dv);
      if (len != t->nbytes && !sp)
        return rt_error(WRT_ERR_FORMAT, "tensor %u ('%s'): constant holds %u bytes, shape needs %l", i, t->name, len,
                        (int64_t)t->nbytes);
      t->is_const = 1;
      t->arena_offset = -1;
      t->file_data = len ? fb_vdata(f, dv) : 0;
      t->file_off = len ? (uint32_t)(dv + 4) : 0;
      t->file_len = len;
      if (sp && !READS_SPARSE)
        return rt_error(WRT_ERR_UNSUPPORTED, "tensor %u ('%s'): block-sparse weights are not in this module, which was "
                        "built for other models by wasmrt build --for: load this model with the full modules or with "
                        "modules built for it", i, t->name);
      if (sp) {
        int r = read_sparsity(m, f, sp, i, t, len);
        if (r != WRT_OK) return r;
      }
    }
    size_t lov = fb_ref(f, tt, 6), hiv = fb_ref(f, tt, 7);
    if (fb_vlen(f, lov) || fb_vlen(f, hiv)) { /* run-time dimensions: the bounds of each (any tensor: check_order
                                                  * refuses them but on graph inputs, as python_ref) */
      if (fb_vlen(f, lov) != rank || fb_vlen(f, hiv) != rank)
        return rt_error(WRT_ERR_FORMAT, "tensor %u ('%s'): shape bounds do not match its rank %u", i, t->name, rank);
      int32_t* b = m_alloc(m, 2 * sizeof(int32_t) * (rank ? rank : 1));
      if (!b) return m_alloc_fail(m, 0, "shape bounds", 2 * sizeof(int32_t) * rank);
      for (uint32_t d = 0; d < rank; d++) {
        b[d] = fb_vi32(f, lov, d);
        b[rank + d] = fb_vi32(f, hiv, d);
        if (!(1 <= b[d] && b[d] <= t->dims[d] && t->dims[d] <= b[rank + d]))
          return rt_error(WRT_ERR_FORMAT, "tensor %u ('%s'): dimension %u (%d) is not within its bounds %d..%d", i,
                          t->name, d, t->dims[d], b[d], b[rank + d]);
      }
      t->dmin = b;
      t->dmax = b + rank;
    }
    size_t qt = fb_ref(f, tt, 5);
    int r = qt ? read_quant(m, f, qt, t, i) : WRT_OK;
    if (r) return r;
    if (buf != 0) {
      uint64_t values = fb_vlen(f, fb_ref(f, fb_vref(f, bv, buf), 0)) / 2; /* the whole buffer: sparse or dense */
      if (t->dtype == WRT_F16 && widen_f16(m, t, values, &widened[buf]) != WRT_OK)
        return m_alloc_fail(m, 0, "float16 weights", values * 4);
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

/* widened[b]: float16 buffer b as float32, made on first use; the table of them is counted like the name table */
static int read_tensors(wrt_model* m, fb_buf f, size_t root, name_pool* np) {
  uint64_t bytes = ((uint64_t)fb_vlen(f, fb_ref(f, root, 5)) + 1) * sizeof(float*);
  float** widened = m_scratch(m, bytes);
  if (!widened) return m_alloc_fail(m, 0, "the float16 buffer table", bytes);
  int r = read_each_tensor(m, f, root, np, widened);
  m_scratch_free(m, widened, bytes);
  return r;
}

/* ---- attributes ------------------------------------------------------------------------------------------------- */
/* Where the engine keeps each attribute of the format (generated/wrt_ops.h): its C type and place in wrt_attrs.
 * Fixed-length lists (those with a non-empty default: strides, pads, kernel, size, scales, ...) must have exactly
 * def_len values; variable-length lists (empty default) hold up to `cap` and store their length in n_list when
 * `counted`. An attribute without a home makes its op unsupported by the C engine. */
typedef struct {
  uint8_t kind;     /* wrt_attr_kind the engine expects; WRT_ATTR_BOOL and WRT_ATTR_ENUM are kept as uint8_t */
  uint8_t owned;    /* a long list: copied into model-owned memory, its pointer stored at `at` */
  uint16_t cap;     /* lists: values the destination holds */
  int16_t count_at; /* variable-length list: offsetof the int receiving its length, or -1 */
  uint16_t at;      /* offsetof(wrt_attrs, ...) */
} attr_home;

#define AT(field) (uint16_t) offsetof(wrt_attrs, field)
#define HOME(kind, field, cap) {kind, 0, cap, -1, AT(field)}
#define LIST(kind, field, cap, count) {kind, 0, cap, (int16_t)AT(count), AT(field)}
#define LONG(field, count) {WRT_ATTR_INTS, 1, WRT_MAX_LONG_LIST, (int16_t)AT(count), AT(field)}
static const attr_home ATTR_HOME[WRT_NUM_ATTRS] = {
    [ATTR_strides] = HOME(WRT_ATTR_INTS, strides, 2),
    [ATTR_dilations] = HOME(WRT_ATTR_INTS, dilations, 2),
    [ATTR_pads] = HOME(WRT_ATTR_INTS, pads, 4), /* PadOptions.pads: PAD_PADS */
    [ATTR_groups] = HOME(WRT_ATTR_INT, groups, 1),
    [ATTR_output_padding] = HOME(WRT_ATTR_INTS, output_padding, 2),
    [ATTR_kernel] = HOME(WRT_ATTR_INTS, kernel, 2),
    [ATTR_act_min] = HOME(WRT_ATTR_FLOAT, act_min, 1),
    [ATTR_act_max] = HOME(WRT_ATTR_FLOAT, act_max, 1),
    [ATTR_min] = HOME(WRT_ATTR_FLOAT, min, 1),
    [ATTR_max] = HOME(WRT_ATTR_FLOAT, max, 1),
    [ATTR_alpha] = HOME(WRT_ATTR_FLOAT, alpha, 1),
    [ATTR_beta] = HOME(WRT_ATTR_FLOAT, beta, 1),
    [ATTR_value] = HOME(WRT_ATTR_FLOAT, value, 1),
    [ATTR_ceil_mode] = HOME(WRT_ATTR_BOOL, ceil_mode, 1),
    [ATTR_float_output] = HOME(WRT_ATTR_BOOL, float_output, 1),
    [ATTR_count_include_pad] = HOME(WRT_ATTR_BOOL, count_include_pad, 1),
    [ATTR_keepdims] = HOME(WRT_ATTR_BOOL, keepdims, 1),
    [ATTR_mode] = HOME(WRT_ATTR_ENUM, mode, 1),
    [ATTR_coord] = HOME(WRT_ATTR_ENUM, coord, 1),
    [ATTR_nearest] = HOME(WRT_ATTR_ENUM, nearest, 1),
    [ATTR_axis] = HOME(WRT_ATTR_INT, axis, 1),
    [ATTR_block] = HOME(WRT_ATTR_INT, block, 1),
    [ATTR_axes] = LIST(WRT_ATTR_INTS, list, WRT_MAX_RANK, n_list),
    [ATTR_shape] = LIST(WRT_ATTR_INTS, list, WRT_MAX_RANK, n_list),
    [ATTR_perm] = LIST(WRT_ATTR_INTS, list, WRT_MAX_RANK, n_list),
    [ATTR_starts] = HOME(WRT_ATTR_INTS, starts, WRT_MAX_RANK), /* lengths checked together below */
    [ATTR_ends] = HOME(WRT_ATTR_INTS, ends, WRT_MAX_RANK),
    [ATTR_steps] = HOME(WRT_ATTR_INTS, steps, WRT_MAX_RANK),
    [ATTR_size] = HOME(WRT_ATTR_INTS, size, 2),
    [ATTR_scales] = HOME(WRT_ATTR_FLOATS, scales, 2),
    [ATTR_dtype] = HOME(WRT_ATTR_ENUM, qdtype, 1),
    [ATTR_epsilon] = HOME(WRT_ATTR_FLOAT, epsilon, 1),
    [ATTR_to] = HOME(WRT_ATTR_ENUM, to, 1),
    [ATTR_reduction] = HOME(WRT_ATTR_ENUM, reduction, 1),
    [ATTR_sizes] = LONG(ints, n_ints),
    [ATTR_direction] = HOME(WRT_ATTR_ENUM, direction, 1),
    [ATTR_activations] = LIST(WRT_ATTR_INTS, acts, WRT_MAX_ACTS, n_acts),
    [ATTR_activation_alpha] = LIST(WRT_ATTR_FLOATS, alphas, WRT_MAX_ACTS, n_alphas),
    [ATTR_activation_beta] = LIST(WRT_ATTR_FLOATS, betas, WRT_MAX_ACTS, n_betas),
    [ATTR_clip] = HOME(WRT_ATTR_FLOAT, clip, 1),
    [ATTR_coupling] = HOME(WRT_ATTR_ENUM, coupling, 1),
    [ATTR_cell_clip] = HOME(WRT_ATTR_FLOAT, cell_clip, 1),
    [ATTR_proj_clip] = HOME(WRT_ATTR_FLOAT, proj_clip, 1),
    [ATTR_linear_before_reset] = HOME(WRT_ATTR_BOOL, linear_before_reset, 1),
    [ATTR_rotation_idx] = HOME(WRT_ATTR_INTS, rotation_idx, 2),
    [ATTR_target_rotation] = HOME(WRT_ATTR_FLOAT, target_rotation, 1),
    [ATTR_subset] = LONG(ints, n_ints),
    [ATTR_align_corners] = HOME(WRT_ATTR_BOOL, align_corners, 1),
    [ATTR_dimensions] = HOME(WRT_ATTR_INT, dimensions, 1),
    [ATTR_scale] = HOME(WRT_ATTR_FLOAT, scale, 1),
};
static const attr_home PAD_PADS = LIST(WRT_ATTR_INTS, list, 2 * WRT_MAX_RANK, n_list); /* [begin_0.., end_0..] */

static const char* const KIND_NAMES[] = {"int", "float", "bool", "ints", "floats", "enum"};

/* a list attribute: absent = its default; `len` = the number of values; an owned list is copied into model memory
 * and its pointer stored at dst */
static int rd_list(wrt_model* m, const wrt_op* op, fb_buf f, size_t tab, const wrt_fielddef* fd, const attr_home* h,
                   void* dst, int* len) {
  size_t v = fb_ref(f, tab, fd->slot);
  if (h->owned) {
    uint32_t n = v ? fb_vlen(f, v) : 0;
    if (n > h->cap) return op_fail(op, WRT_ERR_FORMAT, "%s has %u values, at most %d allowed", fd->name, n, h->cap);
    int32_t* vals = m_alloc(m, (uint64_t)n * sizeof(int32_t) + 1);
    if (!vals) return m_alloc_fail(m, op, "a list attribute", (uint64_t)n * sizeof(int32_t));
    for (uint32_t i = 0; i < n; i++) vals[i] = fb_vi32(f, v, i);
    *(const int32_t**)dst = vals;
    *len = (int)n;
    return WRT_OK;
  }
  if (!v) {
    for (int i = 0; i < fd->def_len; i++) {
      if (fd->kind == WRT_ATTR_INTS) ((int32_t*)dst)[i] = fd->def_ints[i];
      else ((float*)dst)[i] = fd->def_floats[i];
    }
    *len = fd->def_len;
    return WRT_OK;
  }
  uint32_t n = fb_vlen(f, v);
  if (fd->kind == WRT_ATTR_INTS && n > h->cap)
    return op_fail(op, WRT_ERR_FORMAT, "%s has %u values, at most %d allowed", fd->name, n, h->cap);
  if (fd->def_len && n != fd->def_len)
    return op_fail(op, WRT_ERR_FORMAT, "%s must have %d values, got %u", fd->name, fd->def_len, n);
  if (n > h->cap) return op_fail(op, WRT_ERR_FORMAT, "%s has %u values, at most %d allowed", fd->name, n, h->cap);
  for (uint32_t i = 0; i < n; i++) {
    if (fd->kind == WRT_ATTR_INTS) ((int32_t*)dst)[i] = fb_vi32(f, v, i);
    else ((float*)dst)[i] = fb_vf32(f, v, i);
  }
  *len = (int)n;
  return WRT_OK;
}

/* every field of the op's options table (ot = 0: no table, every field at its default) into op->a */
static int read_options(wrt_model* m, wrt_op* op, fb_buf f, size_t ot, int options) {
  wrt_attrs* a = &op->a;
  a->act_min = -__builtin_inff();
  a->act_max = __builtin_inff();
  const wrt_optionsdef* od = &WRT_OPTIONS[options];
  int len[WRT_NUM_ATTRS] = {0}; /* values of each list attribute */
  for (int k = 0; k < od->n_fields; k++) {
    const wrt_fielddef* fd = &od->fields[k];
    const attr_home* h = options == OPTIONS_PadOptions && fd->attr == ATTR_pads ? &PAD_PADS : &ATTR_HOME[fd->attr];
    if (!h->cap || h->kind != fd->kind)
      return op_fail(op, WRT_ERR_UNSUPPORTED, "attribute %s (%s) of %s is not implemented by the C engine", fd->name,
                     KIND_NAMES[fd->kind], od->name);
    uint8_t* dst = (uint8_t*)a + h->at;
    int r;
    switch (fd->kind) {
      case WRT_ATTR_INT: *(int32_t*)(void*)dst = fb_i32(f, ot, fd->slot, fd->def_int); break;
      case WRT_ATTR_FLOAT: *(float*)(void*)dst = fb_f32(f, ot, fd->slot, fd->def_float); break;
      case WRT_ATTR_BOOL: *dst = fb_u8(f, ot, fd->slot, (uint8_t)fd->def_int) != 0; break;
      case WRT_ATTR_ENUM: {
        /* absent = the schema default, which writers omit */
        int8_t v = (int8_t)fb_u8(f, ot, fd->slot, (uint8_t)fd->def_int);
        const wrt_enumdef* e = &WRT_ENUMS[fd->enum_id];
        if (v < e->min || v > e->max)
          return op_fail(op, WRT_ERR_FORMAT, "%s = %d is not a valid %s", e->name, v, e->name);
        *dst = (uint8_t)v;
        break;
      }
      default: /* WRT_ATTR_INTS, WRT_ATTR_FLOATS */
        if ((r = rd_list(m, op, f, ot, fd, h, dst, &len[fd->attr]))) return r;
        if (h->count_at >= 0) *(int*)(void*)((uint8_t*)a + h->count_at) = len[fd->attr];
        break;
    }
  }
  if (options == OPTIONS_SliceOptions) { /* starts, ends, steps: one value per axis each */
    int n0 = len[ATTR_starts], n1 = len[ATTR_ends], n2 = len[ATTR_steps];
    if (n0 != n1 || n1 != n2) return op_fail(op, WRT_ERR_FORMAT, "starts/ends/steps have %d/%d/%d values", n0, n1, n2);
    a->n_list = n0;
  }
  return WRT_OK;
}

/* ---- operators -------------------------------------------------------------------------------------------------- */
static int read_ops(wrt_model* m, fb_buf f, size_t root, name_pool* np) {
  size_t ov = fb_ref(f, root, 2);
  uint32_t no = fb_vlen(f, ov);
  m->n_ops = (int)no;
  m->ops = m_alloc(m, sizeof(wrt_op) * (no ? no : 1));
  if (!m->ops) return m_alloc_fail(m, 0, "the operator table", sizeof(wrt_op) * (uint64_t)no);
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
    size_t flen = rt_format(fallback, sizeof fallback, "op%u", k);
    op->name = name ? intern(m, np, f, name) : pool_copy(m, np, fallback, flen);
    if (!op->name) return m_alloc_fail(m, 0, "operator names", 65536);
    size_t iv = fb_ref(f, ot, 1), outv = fb_ref(f, ot, 2);
    uint32_t ni = fb_vlen(f, iv), nout = fb_vlen(f, outv);
    if (ni < d->min_in || (!d->variadic && ni > d->max_in) || ni > 4096) {
      if (d->variadic) return op_fail(op, WRT_ERR_FORMAT, "%u inputs, expected at least %d", ni, d->min_in);
      return op_fail(op, WRT_ERR_FORMAT, "%u inputs, expected %d..%d", ni, d->min_in, d->max_in);
    }
    if (d->variadic_out ? nout < 1 || nout > WRT_MAX_OP_OUTPUTS : nout != d->n_out) {
      if (d->variadic_out) return op_fail(op, WRT_ERR_FORMAT, "%u outputs, expected 1..%d", nout, WRT_MAX_OP_OUTPUTS);
      return op_fail(op, WRT_ERR_FORMAT, "%u outputs, expected %d", nout, d->n_out);
    }
    op->n_in = (int)ni;
    op->in = m_alloc(m, sizeof(int32_t) * (ni ? ni : 1));
    if (!op->in) return m_alloc_fail(m, op, "the input list", sizeof(int32_t) * (uint64_t)ni);
    for (uint32_t i = 0; i < ni; i++) {
      int32_t ti = fb_vi32(f, iv, i);
      if (ti < -1 || ti >= nt)
        return op_fail(op, WRT_ERR_FORMAT, "input tensor index %d out of range (0..%d)", ti, nt - 1);
      if (ti < 0 && (i < d->min_in || d->variadic)) return op_fail(op, WRT_ERR_FORMAT, "required input missing");
      if (ti >= 0 && i < 16 && (d->const_in >> i & 1) && !m->t[ti].is_const)
        return op_fail(op, WRT_ERR_FORMAT, "input %u (tensor %d '%s') must be a constant", i, ti, m->t[ti].name);
      if (ti >= 0 && m->t[ti].sparse && !(i == 1 && (code == OP_CONV_2D || code == OP_FULLY_CONNECTED)))
        return op_fail(op, WRT_ERR_FORMAT, "input %u (tensor %d '%s') is block-sparse; only the weights of CONV_2D "
                       "and FULLY_CONNECTED may be", i, ti, m->t[ti].name);
      op->in[i] = ti;
    }
    op->n_out = (int)nout;
    op->outs = m_alloc(m, sizeof(int32_t) * nout);
    if (!op->outs) return m_alloc_fail(m, op, "the output list", sizeof(int32_t) * (uint64_t)nout);
    for (uint32_t i = 0; i < nout; i++) {
      int32_t ti = fb_vi32(f, outv, i);
      if (ti < 0 || ti >= nt)
        return op_fail(op, WRT_ERR_FORMAT, "output tensor index %d out of range (0..%d)", ti, nt - 1);
      op->outs[i] = ti;
    }
    op->out = op->outs[0];
    uint8_t otype = fb_u8(f, ot, 3, 0);
    size_t opts = fb_ref(f, ot, 4);
    if (d->options && (otype != d->options || !opts))
      return op_fail(op, WRT_ERR_FORMAT, "options of type %d (%s), expected %s", otype,
                     otype < OPTIONS_COUNT ? WRT_OPTIONS[otype].name : "?", WRT_OPTIONS[d->options].name);
    int r = read_options(m, op, f, d->options ? opts : 0, d->options);
    if (r) return r;
  }
  return WRT_OK;
}

/* every op reads only constants, graph inputs or earlier outputs; one writer per tensor (ready: nt zeroed bytes) */
static int check_order(wrt_model* m, uint8_t* ready) {
  int nt = m->n_tensors;
  for (int i = 0; i < nt; i++) ready[i] = 0;
  for (int i = 0; i < m->n_inputs; i++) ready[m->inputs[i]] = 1;
  for (int i = 0; i < nt; i++) { /* shape bounds only on graph inputs (never on constants) */
    if (m->t[i].dmin && !ready[i])
      return rt_error(WRT_ERR_FORMAT, "tensor %d ('%s') has shape bounds but is not a graph input", i, m->t[i].name);
    ready[i] |= m->t[i].is_const;
  }
  for (int k = 0; k < m->n_ops; k++) {
    wrt_op* op = &m->ops[k];
    for (int i = 0; i < op->n_in; i++) {
      int ti = op->in[i];
      if (ti >= 0 && !ready[ti])
        return op_fail(op, WRT_ERR_FORMAT, "reads tensor %d ('%s') before any op writes it", ti, m->t[ti].name);
    }
    for (int k = 0; k < op->n_out; k++) {
      int ti = op->outs[k];
      if (ready[ti])
        return op_fail(op, WRT_ERR_FORMAT, "writes tensor %d ('%s'), which is already a constant, input or earlier "
                       "output", ti, m->t[ti].name);
      ready[ti] = 1;
    }
  }
  for (int i = 0; i < m->n_outputs; i++)
    if (!ready[m->outputs[i]])
      return rt_error(WRT_ERR_FORMAT, "graph output tensor %d ('%s') is never written", m->outputs[i],
                      m->t[m->outputs[i]].name);
  return WRT_OK;
}

/* An op's outputs share no arena bytes with its inputs or with each other; a RESHAPE's output may alias its input
 * exactly. Kernels check indices (GATHER, SCATTER_ND) and then write: a plan that let the output overwrite what was
 * checked would turn a checked index into an out-of-range one. The planners (wasmrt/compile/planner.py, planner.c) never
 * make such a plan. Each output is compared with the inputs, then the earlier outputs, in order; the comparisons
 * are counted first (a hostile SPLIT has 4096 outputs). python_ref/wrt_file.py checks the same, in the same order. */
static int shares_bytes(const wrt_tensor* a, const wrt_tensor* b) {
  return !a->is_const && !b->is_const && a->nbytes && b->nbytes &&
         a->arena_offset < b->arena_offset + (int64_t)b->nbytes && b->arena_offset < a->arena_offset + (int64_t)a->nbytes;
}

int check_aliasing(wrt_model* m) {
  uint64_t pairs = 0;
  for (int k = 0; k < m->n_ops; k++)
    pairs += (uint64_t)m->ops[k].n_out * (uint64_t)(m->ops[k].n_in + m->ops[k].n_out);
  if (pairs > WRT_MAX_ALIAS_CHECKS)
    return rt_error(WRT_ERR_FORMAT, "the memory plan needs %l overlap checks (limit %d)", (int64_t)pairs,
                    WRT_MAX_ALIAS_CHECKS);
  for (int k = 0; k < m->n_ops; k++) {
    const wrt_op* op = &m->ops[k];
    for (int a = 0; a < op->n_out; a++) {
      const wrt_tensor* y = &m->t[op->outs[a]];
      for (int j = 0; j < op->n_in + a; j++) {
        int ti = j < op->n_in ? op->in[j] : op->outs[j - op->n_in];
        if (ti < 0 || !shares_bytes(y, &m->t[ti])) continue;
        if (op->type == OP_RESHAPE && y->arena_offset == m->t[ti].arena_offset) continue;
        return op_fail(op, WRT_ERR_FORMAT, "output tensor %d ('%s') shares arena bytes with %s tensor %d ('%s')",
                       op->outs[a], y->name, j < op->n_in ? "input" : "output", ti, m->t[ti].name);
      }
    }
  }
  return WRT_OK;
}

/* graph inputs/outputs and preprocess hints, then the op order */
static int read_io_and_order(wrt_model* m, fb_buf f, size_t root) {
  int nt = m->n_tensors;
  const char* kinds[2] = {"input", "output"};
  for (int w = 0; w < 2; w++) {
    size_t v = fb_ref(f, root, 3 + w);
    uint32_t n = fb_vlen(f, v);
    if (n == 0) return rt_error(WRT_ERR_FORMAT, "model has no %ss", kinds[w]);
    if (n > 4096) return rt_error(WRT_ERR_FORMAT, "model has %u %ss (limit 4096)", n, kinds[w]);
    int32_t* dst = m_alloc(m, sizeof(int32_t) * n);
    if (!dst) return m_alloc_fail(m, 0, "the graph inputs and outputs", sizeof(int32_t) * n);
    for (uint32_t i = 0; i < n; i++) {
      int32_t ti = fb_vi32(f, v, i);
      if (ti < 0 || ti >= nt)
        return rt_error(WRT_ERR_FORMAT, "graph %s refers to tensor %d, but the model has %d tensors", kinds[w], ti, nt);
      if (w == 0 && m->t[ti].dmin) m->dynamic = 1;
      if (m->t[ti].is_const)
        return rt_error(WRT_ERR_FORMAT, "graph %s tensor %d ('%s') is a constant", kinds[w], ti, m->t[ti].name);
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
  uint8_t* ready = rt_calloc((size_t)nt + 1);
  if (!ready) return rt_error(WRT_ERR_NOMEM, "out of memory checking the op order");
  int r = check_order(m, ready);
  rt_free(ready);
  return r;
}

/* The size of the model's tables, from the lengths in the file, before any is copied: a file can point many tables
 * at one shared vector or string, so what it unpacks to is bounded here, not by its size. (python_ref/wrt_file.py
 * applies the same limits with the same words.) */
static int check_structure(wrt_model* m, fb_buf f, size_t root) {
  size_t tv = fb_ref(f, root, 1), ov = fb_ref(f, root, 2);
  uint32_t nt = fb_vlen(f, tv), no = fb_vlen(f, ov);
  if (nt > WRT_MAX_TENSORS) return rt_error(WRT_ERR_FORMAT, "model has %u tensors (limit %d)", nt, WRT_MAX_TENSORS);
  if (no > WRT_MAX_OPS) return rt_error(WRT_ERR_FORMAT, "model has %u operators (limit %d)", no, WRT_MAX_OPS);
  uint64_t names = 0, inputs = 0, qvalues = 0, expanded = 0;
  for (uint32_t i = 0; i < nt; i++) {
    size_t tt = fb_vref(f, tv, i), qt = fb_ref(f, tt, 5), sv = fb_ref(f, tt, 1);
    names += fb_vlen(f, fb_ref(f, tt, 0));
    if (qt) qvalues += (uint64_t)fb_vlen(f, fb_ref(f, qt, 0)) + fb_vlen(f, fb_ref(f, qt, 1));
    if (!fb_ref(f, tt, 8)) continue;
    uint64_t elems = 1; /* saturating at 2^40, as python_ref counts */
    for (uint32_t d = 0; d < fb_vlen(f, sv); d++) {
      int32_t v = fb_vi32(f, sv, d);
      elems = v <= 0 ? 0 : elems > ((uint64_t)1 << 40) / (uint64_t)v ? (uint64_t)1 << 40 : elems * (uint64_t)v;
    }
    expanded += 4 * elems;
  }
  if (expanded > WRT_MAX_SPARSE_BYTES)
    return rt_error(WRT_ERR_FORMAT, "block-sparse constants expand to %l bytes in all (limit %l)", (int64_t)expanded,
                    (int64_t)WRT_MAX_SPARSE_BYTES);
  for (uint32_t k = 0; k < no; k++) {
    size_t ot = fb_vref(f, ov, k);
    inputs += fb_vlen(f, fb_ref(f, ot, 1)) + fb_vlen(f, fb_ref(f, ot, 2));
    names += fb_vlen(f, fb_ref(f, ot, 5));
  }
  if (qvalues > WRT_MAX_QUANT_VALUES)
    return rt_error(WRT_ERR_FORMAT, "the tensors' quantization parameters hold %l values in all (limit %d)",
                    (int64_t)qvalues, WRT_MAX_QUANT_VALUES);
  if (inputs > WRT_MAX_OP_INPUTS)
    return rt_error(WRT_ERR_FORMAT, "the operators have %l inputs and outputs in all (limit %d)", (int64_t)inputs,
                    WRT_MAX_OP_INPUTS);
  if (names > WRT_MAX_NAME_BYTES)
    return rt_error(WRT_ERR_FORMAT, "tensor and operator names take %l bytes in all (limit %d)", (int64_t)names,
                    WRT_MAX_NAME_BYTES);
  uint64_t bytes = (uint64_t)nt * sizeof(wrt_tensor) + (uint64_t)no * sizeof(wrt_op) + inputs * sizeof(int32_t);
  if (bytes > m->mem_limit)
    return rt_error(WRT_ERR_NOMEM, "the model's tables need %l bytes, beyond its memory limit of %l bytes (max_memory)",
                    (int64_t)bytes, (int64_t)m->mem_limit);
  return WRT_OK;
}

int read_model(wrt_model* m, fb_buf f) {
  size_t root = fb_root(f);
  uint32_t version = fb_u32(f, root, 0, 0);
  if (version != WRT_FORMAT_VERSION)
    return rt_error(WRT_ERR_FORMAT, "format version %u, this reader knows %d", version, WRT_FORMAT_VERSION);
  int r = check_structure(m, f, root);
  if (r) return r;
  /* the name table: twice the names there can be (tensors + ops + 1), a power of two */
  uint64_t names = (uint64_t)fb_vlen(f, fb_ref(f, root, 1)) + fb_vlen(f, fb_ref(f, root, 2)) + 1, cap = 16;
  while (cap < 2 * names) cap *= 2;
  /* the name table lives only while loading */
  uint64_t pool_bytes = cap * sizeof(name_slot);
  name_pool np = {m_scratch(m, pool_bytes), (size_t)cap - 1, 0, 0};
  if (!np.slots) return m_alloc_fail(m, 0, "the name table", pool_bytes);
  r = read_tensors(m, f, root, &np);
  if (!r) r = read_ops(m, f, root, &np);
  m_scratch_free(m, np.slots, pool_bytes);
  if (!r) r = read_io_and_order(m, f, root);
  return r;
}
