/* FlatBuffers verification for schema/wrt.fbs, driven by a field table per FlatBuffers table.
 * The model-level tables are described below, in the slot order of schema/wrt.fbs (a union takes two slots: its
 * type, then its value); the options tables of union Options come from generated/wrt_ops.h (python_ref/opdefs.py). */
#include "fb.h"

#include "generated/wrt_ops.h"
#include "rt.h"

enum { K_SCALAR, K_STRING, K_VEC, K_VEC_STRING, K_VEC_TABLE, K_TABLE, K_UNION_TYPE, K_UNION };

typedef struct fb_tdesc fb_tdesc;
typedef struct {
  const char* name;
  uint8_t kind;
  uint8_t size;        /* scalar size, or vector element size */
  const fb_tdesc* sub; /* K_TABLE / K_VEC_TABLE */
} fb_fdesc;

struct fb_tdesc {
  const char* name;
  int nfields;
  const fb_fdesc* f;
};

#define TD(var, fields) static const fb_tdesc var = {#var, (int)(sizeof fields / sizeof fields[0]), fields}

static const fb_fdesc quant_f[] = {{"scale", K_VEC, 4, 0}, {"zero_point", K_VEC, 8, 0}, {"axis", K_SCALAR, 4, 0}};
TD(QuantParams, quant_f);
static const fb_fdesc sparsity_f[] = {{"row_starts", K_VEC, 4, 0}, {"columns", K_VEC, 4, 0}};
TD(BlockSparsity, sparsity_f);
static const fb_fdesc tensor_f[] = {{"name", K_STRING, 0, 0},        {"shape", K_VEC, 4, 0},
                                    {"dtype", K_SCALAR, 1, 0},       {"buffer", K_SCALAR, 4, 0},
                                    {"arena_offset", K_SCALAR, 8, 0}, {"quant", K_TABLE, 0, &QuantParams},
                                    {"shape_min", K_VEC, 4, 0},      {"shape_max", K_VEC, 4, 0},
                                    {"sparsity", K_TABLE, 0, &BlockSparsity}};
TD(Tensor, tensor_f);
static const fb_fdesc buffer_f[] = {{"data", K_VEC, 1, 0}};
TD(Buffer, buffer_f);
static const fb_fdesc operator_f[] = {{"type", K_SCALAR, 2, 0},        {"inputs", K_VEC, 4, 0},
                                      {"outputs", K_VEC, 4, 0},        {"options_type", K_UNION_TYPE, 1, 0},
                                      {"options", K_UNION, 0, 0},      {"name", K_STRING, 0, 0}};
TD(Operator, operator_f);
static const fb_fdesc plan_f[] = {{"arena_size", K_SCALAR, 8, 0}, {"alignment", K_SCALAR, 4, 0},
                                  {"lower_bound", K_SCALAR, 8, 0}};
TD(MemoryPlan, plan_f);
static const fb_fdesc pre_f[] = {{"input", K_SCALAR, 4, 0}, {"layout", K_STRING, 0, 0}, {"color", K_STRING, 0, 0},
                                 {"mean", K_VEC, 4, 0},     {"std", K_VEC, 4, 0},       {"resize", K_STRING, 0, 0},
                                 {"crop_fraction", K_SCALAR, 4, 0}};
TD(Preprocess, pre_f);
static const fb_fdesc kv_f[] = {{"key", K_STRING, 0, 0}, {"value", K_STRING, 0, 0}};
TD(KeyValue, kv_f);
static const fb_fdesc meta_f[] = {{"source", K_STRING, 0, 0},
                                  {"producer", K_STRING, 0, 0},
                                  {"preprocess", K_VEC_TABLE, 0, &Preprocess},
                                  {"labels", K_VEC_STRING, 0, 0},
                                  {"props", K_VEC_TABLE, 0, &KeyValue}};
TD(Metadata, meta_f);
static const fb_fdesc model_f[] = {{"version", K_SCALAR, 4, 0},          {"tensors", K_VEC_TABLE, 0, &Tensor},
                                   {"operators", K_VEC_TABLE, 0, &Operator}, {"inputs", K_VEC, 4, 0},
                                   {"outputs", K_VEC, 4, 0},             {"buffers", K_VEC_TABLE, 0, &Buffer},
                                   {"plan", K_TABLE, 0, &MemoryPlan},     {"metadata", K_TABLE, 0, &Metadata}};
TD(Model, model_f);

/* ---- raw little-endian reads ---------------------------------------------------------------------------------- */
uint32_t fb_rd32(const uint8_t* p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
uint64_t fb_rd64(const uint8_t* p) { return (uint64_t)fb_rd32(p) | (uint64_t)fb_rd32(p + 4) << 32; }
static uint16_t rd16(const uint8_t* p) { return (uint16_t)(p[0] | p[1] << 8); }

/* ---- verification ----------------------------------------------------------------------------------------------- */
/* The path to the field being checked ("ops[3].inputs"), kept as a stack of names and vector indices and formatted
 * only when a check fails: formatting it at every field made verification the bulk of a small model's load. */
typedef struct {
  const char* name; /* NULL: a vector index */
  uint32_t index;
} path_frame;

#define MAX_DEPTH 8
#define MAX_TABLES (1 << 22)
#define MAX_FRAMES (4 * MAX_DEPTH + 8)

/* A table already verified as the same type from the same or a lower depth passes again without a walk: FlatBuffers
 * may share one table among many references, and checking each of them again made such files slow to load. */
#define SEEN_SLOTS 256
typedef struct {
  const void* type;
  uint32_t pos;
  int depth;
} seen_table;

typedef struct {
  fb_buf f;
  path_frame path[MAX_FRAMES];
  int plen;
  int tables; /* tables walked: bounds the work a hostile file can cause */
  seen_table seen[SEEN_SLOTS];
} vctx;

static seen_table* seen_slot(vctx* c, size_t pos) { return &c->seen[((uint32_t)pos >> 2) * 2654435761u >> 24]; }

static int seen_before(vctx* c, size_t pos, const void* type, int depth) {
  const seen_table* e = seen_slot(c, pos);
  return e->type == type && e->pos == pos && depth <= e->depth;
}

static const char* path_text(const vctx* c, char* buf, size_t size) {
  if (!c->plen) return "root";
  size_t n = 0;
  buf[0] = 0;
  for (int i = 0; i < c->plen && n + 1 < size; i++) {
    const path_frame* p = &c->path[i];
    n += p->name ? rt_format(buf + n, size - n, i ? ".%s" : "%s", p->name) : rt_format(buf + n, size - n, "[%u]", p->index);
  }
  return buf;
}

static int fail(vctx* c, const char* what) {
  char path[200];
  return rt_error(WRT_ERR_FORMAT, "corrupt .wrt file: %s: %s (file is %z bytes)", path_text(c, path, sizeof path), what,
                  c->f.n);
}

/* frames beyond MAX_FRAMES are not recorded (the depth limit refuses such files before they matter) */
static int path_push(vctx* c, const char* name, uint32_t index) {
  if (c->plen < MAX_FRAMES) c->path[c->plen] = (path_frame){name, index};
  return c->plen++;
}

/* a uoffset at `at` (already known in bounds) pointing to an object of at least `min` bytes */
static int deref(vctx* c, size_t at, size_t min, size_t* out) {
  uint32_t off = fb_rd32(c->f.b + at);
  if (off == 0 || off > c->f.n - at) return fail(c, "offset points outside the file");
  size_t pos = at + off;
  if (pos % 4 != 0) return fail(c, "misaligned offset");
  if (min > c->f.n - pos) return fail(c, "object runs past the end of the file");
  *out = pos;
  return 0;
}

static int vec_bounds(vctx* c, size_t pos, size_t esize, uint32_t* len) {
  *len = fb_rd32(c->f.b + pos);
  if ((uint64_t)*len * esize > (uint64_t)(c->f.n - pos - 4))
  {
    char path[200];
    return rt_error(WRT_ERR_FORMAT, "corrupt .wrt file: %s: vector of %u elements runs past the end of the %z-byte file",
                    path_text(c, path, sizeof path), *len, c->f.n);
  }
  return 0;
}

static int verify_string(vctx* c, size_t pos) {
  uint32_t len;
  if (vec_bounds(c, pos, 1, &len)) return WRT_ERR_FORMAT;
  if ((uint64_t)len + 1 > (uint64_t)(c->f.n - pos - 4) || c->f.b[pos + 4 + len] != 0)
    return fail(c, "string is not NUL-terminated inside the file");
  return 0;
}

static int verify_table(vctx* c, size_t pos, const fb_tdesc* d, int depth);
static int verify_options(vctx* c, size_t pos, const wrt_optionsdef* od, int depth);

static int verify_field(vctx* c, size_t tab, size_t at, const fb_fdesc* fd, int slot, int depth) {
  size_t pos;
  uint32_t len;
  switch (fd->kind) {
    case K_SCALAR:
    case K_UNION_TYPE:
      return 0;
    case K_STRING:
      if (deref(c, at, 4, &pos)) return WRT_ERR_FORMAT;
      return verify_string(c, pos);
    case K_VEC:
      if (deref(c, at, 4, &pos)) return WRT_ERR_FORMAT;
      return vec_bounds(c, pos, fd->size, &len);
    case K_VEC_STRING:
    case K_VEC_TABLE: {
      if (deref(c, at, 4, &pos) || vec_bounds(c, pos, 4, &len)) return WRT_ERR_FORMAT;
      for (uint32_t i = 0; i < len; i++) {
        size_t el;
        int base = path_push(c, NULL, i);
        if (deref(c, pos + 4 + (size_t)i * 4, 4, &el)) return WRT_ERR_FORMAT;
        int r = fd->kind == K_VEC_STRING ? verify_string(c, el) : verify_table(c, el, fd->sub, depth + 1);
        if (r) return r;
        c->plen = base;
      }
      return 0;
    }
    case K_TABLE:
      if (deref(c, at, 4, &pos)) return WRT_ERR_FORMAT;
      return verify_table(c, pos, fd->sub, depth + 1);
    case K_UNION: {
      uint8_t type = fb_u8(c->f, tab, slot - 1, 0);
      if (type == 0) return 0;
      if (type >= OPTIONS_COUNT) {
        char msg[64];
        rt_format(msg, sizeof msg, "unknown union type %d", (int)type);
        return fail(c, msg);
      }
      if (deref(c, at, 4, &pos)) return WRT_ERR_FORMAT;
      return verify_options(c, pos, &WRT_OPTIONS[type], depth + 1);
    }
  }
  return fail(c, "internal: unknown field kind");
}

/* the table header at `pos`: vtable and table sizes inside the file */
typedef struct {
  size_t pos;
  int64_t vt;
  uint16_t vsize, tsize;
} tab_hdr;

static int table_header(vctx* c, size_t pos, int depth, tab_hdr* h) {
  const fb_buf f = c->f;
  if (depth > MAX_DEPTH) return fail(c, "tables nested too deeply");
  if (++c->tables > MAX_TABLES) return fail(c, "too many tables");
  if (pos % 4 || pos + 4 > f.n) return fail(c, "table outside the file");
  int64_t vt = (int64_t)pos - (int32_t)fb_rd32(f.b + pos);
  if (vt < 0 || (uint64_t)vt + 4 > f.n || vt % 2) return fail(c, "vtable outside the file");
  uint16_t vsize = rd16(f.b + vt), tsize = rd16(f.b + vt + 2);
  if (vsize < 4 || vsize % 2 || (uint64_t)vt + vsize > f.n) return fail(c, "vtable size out of bounds");
  if (tsize < 4 || (uint64_t)pos + tsize > f.n) return fail(c, "table size out of bounds");
  *h = (tab_hdr){pos, vt, vsize, tsize};
  return 0;
}

/* the field in `slot` (vtable entry at byte 4 + 2 * slot), when present */
static int verify_slot(vctx* c, const tab_hdr* h, const fb_fdesc* fd, int slot, int depth) {
  size_t slot_at = 4 + 2 * (size_t)slot;
  uint16_t off = slot_at + 2 <= h->vsize ? rd16(c->f.b + h->vt + slot_at) : 0;
  if (!off) return 0;
  size_t need = fd->kind == K_SCALAR || fd->kind == K_UNION_TYPE ? fd->size : 4;
  int base = path_push(c, fd->name, 0);
  if (off < 4 || (size_t)off + need > h->tsize) return fail(c, "field outside its table");
  int r = verify_field(c, h->pos, h->pos + off, fd, slot, depth);
  if (r) return r;
  c->plen = base;
  return 0;
}

static int verify_table(vctx* c, size_t pos, const fb_tdesc* d, int depth) {
  tab_hdr h;
  if (seen_before(c, pos, d, depth)) return 0;
  if (table_header(c, pos, depth, &h)) return WRT_ERR_FORMAT;
  for (int s = 0; s < d->nfields; s++) {
    int r = verify_slot(c, &h, &d->f[s], s, depth);
    if (r) return r;
  }
  *seen_slot(c, pos) = (seen_table){d, (uint32_t)pos, depth};
  return 0;
}

/* an options table of union Options, from its generated field list */
static int verify_options(vctx* c, size_t pos, const wrt_optionsdef* od, int depth) {
  tab_hdr h;
  if (seen_before(c, pos, od, depth)) return 0;
  if (table_header(c, pos, depth, &h)) return WRT_ERR_FORMAT;
  for (int k = 0; k < od->n_fields; k++) {
    const wrt_fielddef* g = &od->fields[k];
    int vec = g->kind == WRT_ATTR_INTS || g->kind == WRT_ATTR_FLOATS;
    fb_fdesc fd = {g->name, (uint8_t)(vec ? K_VEC : K_SCALAR), g->size, 0};
    int r = verify_slot(c, &h, &fd, g->slot, depth);
    if (r) return r;
  }
  *seen_slot(c, pos) = (seen_table){od, (uint32_t)pos, depth};
  return 0;
}

int fb_verify_model(fb_buf f) {
  if (f.n < 8)
    return rt_error(WRT_ERR_FORMAT, "not a .wrt model (only %z bytes)", f.n);
  if (f.b[4] != 'W' || f.b[5] != 'R' || f.b[6] != 'T' || f.b[7] != '0')
    return rt_error(WRT_ERR_FORMAT, "not a .wrt model (file identifier '%c%c%c%c', expected 'WRT0')",
                    f.b[4] >= 32 && f.b[4] < 127 ? f.b[4] : '?', f.b[5] >= 32 && f.b[5] < 127 ? f.b[5] : '?',
                    f.b[6] >= 32 && f.b[6] < 127 ? f.b[6] : '?', f.b[7] >= 32 && f.b[7] < 127 ? f.b[7] : '?');
  if (f.n > 0x7fffffffu) return rt_error(WRT_ERR_FORMAT, "model file of %z bytes exceeds 2 GiB", f.n);
  vctx c = {.f = f, .path = {{"Model", 0}}, .plen = 1};
  size_t root;
  if (deref(&c, 0, 4, &root)) return WRT_ERR_FORMAT;
  return verify_table(&c, root, &Model, 0);
}

/* ---- accessors ----------------------------------------------------------------------------------------------------- */
size_t fb_root(fb_buf f) { return fb_rd32(f.b); }

size_t fb_field(fb_buf f, size_t tab, int slot, size_t size) {
  if (!tab || tab + 4 > f.n) return 0;
  int64_t vt = (int64_t)tab - (int32_t)fb_rd32(f.b + tab);
  if (vt < 0 || (uint64_t)vt + 4 > f.n) return 0;
  uint16_t vsize = rd16(f.b + vt), tsize = rd16(f.b + vt + 2);
  size_t at = 4 + 2 * (size_t)slot;
  if (at + 2 > vsize || (uint64_t)vt + at + 2 > f.n) return 0;
  uint16_t off = rd16(f.b + vt + at);
  if (!off || off + size > tsize || tab + off + size > f.n) return 0;
  return tab + off;
}

uint8_t fb_u8(fb_buf f, size_t tab, int slot, uint8_t def) {
  size_t p = fb_field(f, tab, slot, 1);
  return p ? f.b[p] : def;
}
uint16_t fb_u16(fb_buf f, size_t tab, int slot, uint16_t def) {
  size_t p = fb_field(f, tab, slot, 2);
  return p ? rd16(f.b + p) : def;
}
uint32_t fb_u32(fb_buf f, size_t tab, int slot, uint32_t def) {
  size_t p = fb_field(f, tab, slot, 4);
  return p ? fb_rd32(f.b + p) : def;
}
int32_t fb_i32(fb_buf f, size_t tab, int slot, int32_t def) { return (int32_t)fb_u32(f, tab, slot, (uint32_t)def); }
uint64_t fb_u64(fb_buf f, size_t tab, int slot, uint64_t def) {
  size_t p = fb_field(f, tab, slot, 8);
  return p ? fb_rd64(f.b + p) : def;
}
int64_t fb_i64(fb_buf f, size_t tab, int slot, int64_t def) { return (int64_t)fb_u64(f, tab, slot, (uint64_t)def); }
float fb_f32(fb_buf f, size_t tab, int slot, float def) {
  size_t p = fb_field(f, tab, slot, 4);
  if (!p) return def;
  uint32_t u = fb_rd32(f.b + p);
  float v;
  __builtin_memcpy(&v, &u, 4);
  return v;
}

size_t fb_ref(fb_buf f, size_t tab, int slot) {
  size_t p = fb_field(f, tab, slot, 4);
  if (!p) return 0;
  uint32_t off = fb_rd32(f.b + p);
  if (!off || off > f.n - p || p + off + 4 > f.n) return 0;
  return p + off;
}

uint32_t fb_vlen(fb_buf f, size_t vec) { return vec && vec + 4 <= f.n ? fb_rd32(f.b + vec) : 0; }
const uint8_t* fb_vdata(fb_buf f, size_t vec) { return f.b + vec + 4; }

size_t fb_vref(fb_buf f, size_t vec, uint32_t i) {
  size_t at = vec + 4 + (size_t)i * 4;
  if (i >= fb_vlen(f, vec) || at + 4 > f.n) return 0;
  uint32_t off = fb_rd32(f.b + at);
  if (!off || off > f.n - at) return 0;
  return at + off;
}

int32_t fb_vi32(fb_buf f, size_t vec, uint32_t i) { return (int32_t)fb_rd32(f.b + vec + 4 + (size_t)i * 4); }

float fb_vf32(fb_buf f, size_t vec, uint32_t i) {
  uint32_t u = fb_rd32(f.b + vec + 4 + (size_t)i * 4);
  float v;
  __builtin_memcpy(&v, &u, 4);
  return v;
}

const char* fb_str(fb_buf f, size_t s) { return s ? (const char*)f.b + s + 4 : ""; }
