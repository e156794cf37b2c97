/* See wrt_gen.h. Every decision reads the recipe; byte 0 always means the ordinary choice (first op kind, shapes
 * of 1, attributes at their defaults), so short recipes are plain models and libFuzzer's mutations move them
 * towards hostile ones one decision at a time. The op set, arity, options tables, field slots, kinds and enum
 * ranges come from generated/wrt_ops.h, so a new op of python_ref/opdefs.py is fuzzed without an edit here (its
 * inputs then get generic shapes until a case below knows better). */
#include "wrt_gen.h"

#include <stdlib.h>
#include <string.h>

#include "../engine/generated/wrt_ops.h"

#define MAXT 160           /* distinct tensors */
#define MAXOPS 40
#define MAX_IN 4096        /* the format's limit on the inputs of one op */
#define CONST_BUDGET (256u << 10) /* constant bytes in a file, usually: big files are slow to fuzz */
#define CONST_BUDGET_BIG (768u << 10) /* in one recipe of 64 */
#define FILE_LIMIT (1u << 20) /* the scope: any file under 1 MB is refused or runs well under 1 s */
#define RANK_MAX 8

enum { DT_F32 = 0, DT_F16 = 1, DT_I8 = 2, DT_U8 = 3, DT_I32 = 4, DT_I64 = 5, DT_BOOL = 6 };
static const uint8_t ESIZE[7] = {4, 2, 1, 1, 4, 8, 1};
enum { K_ACT, K_CONST, K_INPUT };
enum { FILL_SMALL, FILL_ZERO, FILL_SPECIAL, FILL_INDEX, FILL_HOSTILE };

typedef struct {
  int rank;
  int32_t d[RANK_MAX];
  uint8_t dtype, kind, quant;
  uint8_t sp;      /* block-sparse constant: 0 no, 1 a coherent encoding, 2..6 one lie (sparse_plan) */
  uint32_t sp_per; /* stored blocks per block row */
  int buf; /* constants: index into bufs (>= 1) */
  int64_t off;
} gt;

typedef struct {
  uint8_t set;
  int32_t i;
  float f;
  int n;
  int32_t v[24];
  float fv[8];
} gval;

typedef struct {
  int type; /* op code, possibly unknown */
  int n_in;
  int32_t* in;
  int out;
  gval a[FBB_MAX_SLOTS];
  uint8_t opts; /* 0: as the op wants, 1: no options table, 2: another options type */
} gop;

typedef struct {
  uint8_t dtype, fill;
  uint64_t count;
  uint32_t seed;
  int32_t span; /* FILL_INDEX: values in [-span, span) or [0, span) */
  uint8_t neg;
} gbuf;

typedef struct {
  const uint8_t* p;
  size_t n, i;
  gt t[MAXT];
  int nt;
  gop ops[MAXOPS];
  int nops;
  gbuf bufs[MAXT + 1];
  int nbufs;
  int inputs[16], nin, outputs[16], nout;
  uint64_t const_bytes, const_budget;
} G;

/* ---- reading the recipe ------------------------------------------------------------------------------------------ */
static unsigned u8(G* g) { return g->i < g->n ? g->p[g->i++] : 0; }
static unsigned u16(G* g) { return u8(g) | u8(g) << 8; }
static uint32_t u32(G* g) { return (uint32_t)u16(g) | (uint32_t)u16(g) << 16; }
static int below(G* g, int n) { return n <= 1 ? 0 : n <= 256 ? (int)(u8(g) % (unsigned)n) : (int)(u32(g) % (unsigned)n); }
static int rare(G* g, unsigned k) { return u8(g) >= 256u - k; } /* k in 256; a zero byte says no */

uint32_t wrt_gen_hash(uint32_t seed, uint64_t i) {
  uint64_t z = ((uint64_t)seed << 32 ^ i) + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return (uint32_t)(z ^ (z >> 31));
}

static const int32_t HOSTILE_INTS[] = {0,       -1,          1,          2,         3,          7,          16,
                                       255,     4096,        65535,      1 << 16,   (1 << 16) + 1, 1 << 20, 1 << 24,
                                       (1 << 24) + 1, 1 << 30, 0x7fffffff, (int32_t)0x80000000, -2, -65536, 46341};
#define N_HOSTILE ((int)(sizeof HOSTILE_INTS / sizeof HOSTILE_INTS[0]))
static const int32_t BIG_DIMS[] = {0, 0, 1 << 16, (1 << 16) + 1, 1 << 20, 1 << 24, 1 << 30, 0x7fffffff,
                                   65535, 4096, 1000, 46341, 3 << 20, 1 << 12};
#define N_BIG ((int)(sizeof BIG_DIMS / sizeof BIG_DIMS[0]))

static int32_t hostile_int(G* g) { return u8(g) < 200 ? HOSTILE_INTS[below(g, N_HOSTILE)] : (int32_t)u32(g); }

/* a dimension: 1..k mostly, sometimes 0, larger or huge */
static int32_t dimk(G* g, int k) {
  unsigned b = u8(g);
  if (b < 208) return 1 + (int32_t)(b % (unsigned)k);
  if (b < 224) return (int32_t)(b - 208) + 9;
  if (b < 236) return 0;
  return BIG_DIMS[below(g, N_BIG)];
}

static float hostile_float(G* g) {
  static const float F[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, 2.0f, 1e30f, -1e30f, 1e-40f, 3.4e38f, 65504.0f, 1e-3f};
  unsigned b = u8(g);
  if (b < 12) return __builtin_nanf("");
  if (b < 24) return __builtin_inff();
  if (b < 36) return -__builtin_inff();
  if (b < 200) return F[b % (sizeof F / sizeof F[0])];
  uint32_t u = u32(g);
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* ---- tensors ----------------------------------------------------------------------------------------------------- */
static uint64_t count_of(const gt* t) {
  uint64_t c = 1;
  for (int i = 0; i < t->rank; i++) {
    uint64_t d = (uint64_t)(uint32_t)t->d[i];
    c = d && c > ((uint64_t)1 << 40) / d ? (uint64_t)1 << 40 : c * d; /* saturate: this big is refused anyway */
  }
  return c;
}

static int add_tensor(G* g, int rank, const int32_t* d, uint8_t dtype, uint8_t kind) {
  if (g->nt >= MAXT) return -1;
  gt* t = &g->t[g->nt];
  memset(t, 0, sizeof *t);
  t->rank = rank;
  memcpy(t->d, d, sizeof(int32_t) * (size_t)rank);
  t->dtype = dtype;
  t->kind = kind;
  t->off = -1;
  return g->nt++;
}

static int add_input(G* g, int rank, const int32_t* d, uint8_t dtype) {
  if (g->nin >= 16) return -1;
  int ti = add_tensor(g, rank, d, dtype, K_INPUT);
  if (ti >= 0) g->inputs[g->nin++] = ti;
  return ti;
}

static void sparse_plan(gt* t, gbuf* b);

/* a constant; its data is generated while the file is written. Shapes over the constant budget are shrunk (the
 * shape then no longer fits its op, which the engine must refuse), so files stay a few MiB at most. */
static int add_const(G* g, int rank, const int32_t* d, uint8_t dtype, uint8_t fill, int32_t span) {
  if (g->nbufs >= MAXT) return -1;
  int ti = add_tensor(g, rank, d, dtype, K_CONST);
  if (ti < 0) return -1;
  gt* t = &g->t[ti];
  uint64_t room = g->const_bytes < g->const_budget ? g->const_budget - g->const_bytes : 0;
  while (count_of(t) * ESIZE[dtype] > room && count_of(t) > 1) { /* scalars may overrun by a few bytes */
    int big = 0;
    for (int i = 1; i < rank; i++)
      if (t->d[i] > t->d[big]) big = i;
    t->d[big] /= 2;
  }
  uint64_t c = count_of(t);
  g->const_bytes += c * ESIZE[dtype];
  gbuf* b = &g->bufs[++g->nbufs];
  *b = (gbuf){dtype, fill, c, u32(g), span > 0 ? span : 1, (uint8_t)rare(g, 64)};
  t->buf = g->nbufs;
  sparse_plan(t, b);
  return ti;
}

/* Block-sparse constants (python_ref/sparse.py). Decided from the buffer's seed, so that recipes read as they did
 * before sparse tensors existed: one float constant in 16, a coherent encoding (blocks spread evenly over the
 * columns, the buffer sized to them) mostly, else one lie: 2 a row start missing (also for huge shapes, whose few
 * bytes stand for gigabytes), 3 row starts that decrease, 4 a column past the end, 5 a column repeated, 6 a buffer
 * one block too long. */
static void sparse_plan(gt* t, gbuf* b) {
  if (t->rank < 1 || (b->dtype != DT_F32 && b->dtype != DT_F16) || b->seed % 16) return;
  uint32_t h = wrt_gen_hash(b->seed, 0x5a5a);
  uint64_t rows = (uint32_t)t->d[0], cols = 1;
  for (int i = 1; i < t->rank; i++) cols = (uint64_t)(uint32_t)t->d[i] && cols > ((uint64_t)1 << 40) / (uint32_t)t->d[i]
                                               ? (uint64_t)1 << 40 : cols * (uint32_t)t->d[i];
  uint64_t br = (rows + 3) / 4;
  t->sp = (uint8_t)(h % 8 ? 1 : 2 + (h >> 3) % 5);
  if (br > 4096 || cols > 0x7fffffff) {
    t->sp = 2, t->sp_per = 0, b->count = 0;
    return;
  }
  t->sp_per = (uint32_t)(cols < 1 + (h >> 8) % 4 ? cols : 1 + (h >> 8) % 4);
  b->count = br * t->sp_per * 4 + (t->sp == 6 ? 4 : 0);
  if (rows % 4 && t->sp == 1 && (h & 16)) b->fill = FILL_ZERO; /* padding rows must hold 0: let some run */
}

/* the BlockSparsity table of a sparse constant (slot 6 of Tensor) */
static fbb_ref write_sparsity(fbb* b, const gt* t) {
  uint64_t rows = (uint32_t)t->d[0], cols = 1, per = t->sp_per;
  for (int i = 1; i < t->rank; i++) cols *= (uint32_t)t->d[i];
  uint32_t br = rows > 4 * 4096 ? 0 : (uint32_t)((rows + 3) / 4), nrs = br + 1, nb = (uint32_t)(br * per);
  int32_t* rs = malloc(sizeof(int32_t) * (nrs + 1)); /* huge shapes: one row start, no blocks (sparse_plan) */
  int32_t* cs = malloc(sizeof(int32_t) * (nb + 1));
  if (!rs || !cs) return free(rs), free(cs), 0;
  for (uint32_t r = 0; r <= br; r++) rs[r] = (int32_t)(r * per);
  for (uint32_t k = 0; k < nb; k++) cs[k] = (int32_t)((k % per) * (cols / per));
  if (t->sp == 2) nrs = br ? br : 1;
  if (t->sp == 3 && br >= 2) rs[1] = rs[2] + 1;
  if (t->sp == 4 && nb) cs[nb - 1] = (int32_t)cols;
  if (t->sp == 5 && nb) cs[nb - 1] = per > 1 ? cs[nb - 2] : -1;
  fbb_ref rv = fbb_vec(b, rs, 4, nrs, 4), cv = fbb_vec(b, cs, 4, nb, 4);
  free(rs);
  free(cs);
  fbb_table(b);
  fbb_add_ref(b, 0, rv);
  fbb_add_ref(b, 1, cv);
  return fbb_end(b);
}

static uint8_t pick_dtype(G* g) {
  unsigned b = u8(g);
  return b < 224 ? DT_F32 : (uint8_t)(b % 7);
}

static int new_shape(G* g, int rank, int32_t* d, int k) {
  for (int i = 0; i < rank; i++) d[i] = dimk(g, k);
  return rank;
}

static int pick_rank(G* g) {
  unsigned b = u8(g);
  return b < 200 ? (int)(b % 4) + 1 : b < 230 ? 0 : (int)(b % 5) + 4;
}

/* a fresh tensor of the given rank (-1: any) to feed an op: mostly a graph input, sometimes a constant (a constant
 * as the data input of a kernel that expects an activation is a class of its own) */
static int fresh(G* g, int rank) {
  int32_t d[RANK_MAX];
  if (rank < 0) rank = pick_rank(g);
  new_shape(g, rank, d, rank == 4 ? 6 : 8);
  if (rank == 4 && u8(g) < 224) d[0] = 1;
  if (rare(g, 40)) return add_const(g, rank, d, pick_dtype(g), (uint8_t)below(g, 3), 1);
  int ti = add_input(g, rank, d, pick_dtype(g));
  return ti >= 0 ? ti : add_const(g, rank, d, DT_F32, FILL_SMALL, 1);
}

/* the data input of an op: the latest activation most of the time (a chain), else any tensor of the wanted rank,
 * any tensor at all, or a fresh one */
static int data_input(G* g, int rank) {
  unsigned b = u8(g);
  int last = -1;
  for (int i = g->nt - 1; i >= 0 && last < 0; i--)
    if (g->t[i].kind != K_CONST && (rank < 0 || g->t[i].rank == rank)) last = i;
  if (b < 176 && last >= 0) return last;
  if (b < 216 && g->nt) {
    int cand[MAXT], n = 0;
    for (int i = 0; i < g->nt; i++)
      if (rank < 0 || g->t[i].rank == rank) cand[n++] = i;
    if (n) return cand[below(g, n)];
  }
  if (b < 228 && g->nt) return below(g, g->nt);
  return fresh(g, rank);
}

/* a second operand: a constant (weights, bias, broadcast operand) mostly, else an activation of that shape */
static int operand(G* g, int rank, const int32_t* d, uint8_t dtype, uint8_t fill, int32_t span) {
  unsigned b = u8(g);
  if (b < 208) return add_const(g, rank, d, dtype, fill, span);
  if (b < 232) {
    int ti = add_input(g, rank, d, dtype);
    if (ti >= 0) return ti;
  }
  for (int i = g->nt - 1; i >= 0; i--) /* an existing tensor of exactly this shape */
    if (g->t[i].rank == rank && !memcmp(g->t[i].d, d, sizeof(int32_t) * (size_t)rank)) return i;
  return add_const(g, rank, d, dtype, fill, span);
}

/* ---- attributes: by ATTR_* id, through the generated options tables ---------------------------------------------- */
static const wrt_optionsdef* optdef(int type) {
  const wrt_opdef* d = type > 0 && type < OP_MAX_CODE ? &WRT_OPDEFS[type] : 0;
  return d && d->name ? &WRT_OPTIONS[d->options] : &WRT_OPTIONS[OPTIONS_NONE];
}

static int fidx(const gop* op, int attr) {
  const wrt_optionsdef* od = optdef(op->type);
  for (int k = 0; k < od->n_fields; k++)
    if (od->fields[k].attr == attr) return k;
  return -1;
}

static void seti(gop* op, int attr, int32_t v) {
  int k = fidx(op, attr);
  if (k >= 0) op->a[k] = (gval){.set = 1, .i = v};
}
static void setf(gop* op, int attr, float v) {
  int k = fidx(op, attr);
  if (k >= 0) op->a[k] = (gval){.set = 1, .f = v};
}
static void setv(gop* op, int attr, const int32_t* v, int n) {
  int k = fidx(op, attr);
  if (k < 0) return;
  op->a[k] = (gval){.set = 1, .n = n};
  memcpy(op->a[k].v, v, sizeof(int32_t) * (size_t)n);
}
static void setfv(gop* op, int attr, const float* v, int n) {
  int k = fidx(op, attr);
  if (k < 0) return;
  op->a[k] = (gval){.set = 1, .n = n};
  memcpy(op->a[k].fv, v, sizeof(float) * (size_t)n);
}
static int32_t geti(const gop* op, int attr) {
  int k = fidx(op, attr);
  if (k < 0) return 0;
  return op->a[k].set ? op->a[k].i : optdef(op->type)->fields[k].def_int;
}
/* a list attribute (its default when unset) into out[LIST_CAP]; returns the number of values */
#define LIST_CAP 24
static int getv(const gop* op, int attr, int32_t* out) {
  int k = fidx(op, attr);
  if (k < 0) return 0;
  if (op->a[k].set) {
    memcpy(out, op->a[k].v, sizeof(int32_t) * (size_t)op->a[k].n);
    return op->a[k].n;
  }
  const wrt_fielddef* fd = &optdef(op->type)->fields[k];
  for (int i = 0; i < fd->def_len && fd->def_ints; i++) out[i] = fd->def_ints[i];
  return fd->def_ints ? fd->def_len : 0;
}

/* the hostile pass: a field replaced by an edge value of its kind */
static void hostile_field(G* g, gval* v, const wrt_fielddef* fd) {
  v->set = 1;
  switch (fd->kind) {
    case WRT_ATTR_INT: v->i = hostile_int(g); break;
    case WRT_ATTR_FLOAT: v->f = hostile_float(g); break;
    case WRT_ATTR_BOOL: v->i = u8(g) < 128 ? 1 : (int32_t)u8(g); break;
    case WRT_ATTR_ENUM: v->i = u8(g) < 200 ? WRT_ENUMS[fd->enum_id].max + 1 - below(g, 3) : (int8_t)u8(g); break;
    case WRT_ATTR_INTS:
      v->n = below(g, 11);
      for (int i = 0; i < v->n; i++) v->v[i] = u8(g) < 128 ? (int32_t)below(g, 6) - 1 : hostile_int(g);
      break;
    default:
      v->n = below(g, 5);
      for (int i = 0; i < v->n; i++) v->fv[i] = hostile_float(g);
  }
}

/* ---- ops: inputs and attributes coherent with the data input, most of the time ----------------------------------- */
static int32_t small(G* g, int lo, int hi) { return lo + below(g, hi - lo + 1); }

static void spatial_attrs(G* g, gop* op, int32_t kh, int32_t kw, int pool) {
  if (rare(g, 112)) {
    int32_t s[2] = {small(g, 1, 3), small(g, 1, 3)};
    setv(op, ATTR_strides, s, 2);
  }
  if (rare(g, 48)) {
    int32_t dl[2] = {small(g, 1, 2), small(g, 1, 2)};
    setv(op, ATTR_dilations, dl, 2);
  }
  if (rare(g, 112)) {
    int32_t p[4];
    for (int i = 0; i < 4; i++) p[i] = small(g, 0, 2);
    if (pool) { /* pads smaller than the kernel extent */
      int32_t dl[LIST_CAP];
      getv(op, ATTR_dilations, dl);
      for (int i = 0; i < 4; i++) {
        int64_t ext = (int64_t)(i % 2 ? kw - 1 : kh - 1) * dl[i % 2] + 1;
        if (p[i] >= ext) p[i] = (int32_t)(ext - 1);
      }
    }
    setv(op, ATTR_pads, p, 4);
  }
  if (rare(g, 24)) setf(op, ATTR_act_min, hostile_float(g));
  if (rare(g, 24)) setf(op, ATTR_act_max, hostile_float(g));
}

static void push_in(gop* op, int ti) { op->in[op->n_in++] = ti; }

static int32_t divisor_of(G* g, int32_t c) {
  int32_t cand[8] = {1};
  int n = 1;
  for (int32_t k = 2; k <= 8 && n < 8; k++)
    if (c > 0 && c % k == 0) cand[n++] = k;
  return cand[below(g, n)];
}

static void gen_conv(G* g, gop* op) {
  int x = data_input(g, 4);
  push_in(op, x);
  const gt* xt = &g->t[x];
  int32_t c = xt->rank == 4 ? xt->d[3] : 1, groups;
  unsigned b = u8(g);
  groups = b < 160 ? 1 : b < 208 ? c : b < 232 ? divisor_of(g, c) : hostile_int(g);
  int32_t cin = groups >= 1 && c % groups == 0 ? c / groups : dimk(g, 4);
  int64_t cout = (int64_t)(groups >= 1 ? groups : 1) * dimk(g, 4);
  if (cout > 0x7fffffff) cout = 0x7fffffff;
  int32_t kh = dimk(g, 3), kw = dimk(g, 3);
  int32_t wd[4] = {(int32_t)cout, kh, kw, cin};
  uint8_t wdt = rare(g, 32) ? DT_F16 : DT_F32;
  push_in(op, operand(g, 4, wd, wdt, (uint8_t)below(g, 3), 1));
  b = u8(g);
  if (b >= 128) {
    int32_t bd[1] = {(int32_t)cout};
    push_in(op, b < 240 ? operand(g, 1, bd, DT_F32, FILL_SMALL, 1) : -1);
  }
  if (groups != 1 || rare(g, 16)) seti(op, ATTR_groups, groups);
  spatial_attrs(g, op, kh, kw, 0);
  if (op->type == OP_CONV_TRANSPOSE_2D && rare(g, 64)) {
    int32_t s[LIST_CAP], dl[LIST_CAP];
    getv(op, ATTR_strides, s);
    getv(op, ATTR_dilations, dl);
    int32_t lim0 = s[0] > dl[0] ? s[0] : dl[0], lim1 = s[1] > dl[1] ? s[1] : dl[1];
    int32_t op2[2] = {below(g, lim0), below(g, lim1)};
    setv(op, ATTR_output_padding, op2, 2);
  }
}

static void gen_dense(G* g, gop* op) {
  int x = data_input(g, -1);
  push_in(op, x);
  const gt* xt = &g->t[x];
  int32_t k = xt->rank ? xt->d[xt->rank - 1] : 1, n = dimk(g, 8);
  if (op->type == OP_MATMUL) {
    int32_t d[RANK_MAX];
    int rank = xt->rank >= 2 ? xt->rank - below(g, xt->rank - 1) : 1 + below(g, 2);
    for (int i = 0; i < rank - 2; i++) d[i] = u8(g) < 200 ? xt->d[xt->rank - rank + i] : 1; /* batch: broadcast */
    if (rank >= 2) {
      d[rank - 2] = k;
      d[rank - 1] = n;
    } else {
      d[0] = k;
    }
    push_in(op, operand(g, rank, d, xt->dtype, FILL_SMALL, 1));
    return;
  }
  int32_t wd[2] = {n, k};
  push_in(op, operand(g, 2, wd, rare(g, 32) ? DT_F16 : DT_F32, (uint8_t)below(g, 3), 1));
  unsigned b = u8(g);
  if (b >= 128) {
    int32_t bd[1] = {n};
    push_in(op, b < 240 ? operand(g, 1, bd, DT_F32, FILL_SMALL, 1) : -1);
  }
  if (rare(g, 24)) setf(op, ATTR_act_min, hostile_float(g));
  if (rare(g, 24)) setf(op, ATTR_act_max, hostile_float(g));
}

/* a shape that broadcasts against x: the same, a suffix, with ones, or a scalar */
static int broadcast_shape(G* g, const gt* xt, int32_t* d) {
  unsigned b = u8(g);
  int rank = b < 96 ? xt->rank : b < 192 ? (xt->rank ? below(g, xt->rank + 1) : 0) : b < 224 ? 0 : pick_rank(g);
  for (int i = 0; i < rank; i++) {
    int src = xt->rank - rank + i;
    d[i] = src >= 0 && u8(g) < 224 ? xt->d[src] : 1;
    if (rare(g, 8)) d[i] = dimk(g, 8);
  }
  return rank;
}

static void gen_binary(G* g, gop* op) {
  int x = data_input(g, -1);
  const gt* xt = &g->t[x];
  int32_t d[RANK_MAX];
  int rank = broadcast_shape(g, xt, d);
  int y = rare(g, 24) ? x : operand(g, rank, d, g->t[x].dtype, (uint8_t)below(g, 3), 1);
  if (rare(g, 32)) { /* operands swapped: the constant first */
    push_in(op, y);
    push_in(op, x);
  } else {
    push_in(op, x);
    push_in(op, y);
  }
  if (rare(g, 24)) setf(op, ATTR_act_min, hostile_float(g));
  if (rare(g, 24)) setf(op, ATTR_act_max, hostile_float(g));
}

static void gen_unary(G* g, gop* op) {
  push_in(op, data_input(g, -1));
  switch (op->type) {
    case OP_CLIP:
      if (rare(g, 160)) setf(op, ATTR_min, (float)small(g, -6, 0));
      if (rare(g, 160)) setf(op, ATTR_max, (float)small(g, 0, 6));
      break;
    case OP_LEAKY_RELU:
      if (rare(g, 96)) setf(op, ATTR_alpha, (float)small(g, 0, 10) / 10.0f);
      break;
    case OP_HARD_SIGMOID:
      if (rare(g, 96)) setf(op, ATTR_alpha, (float)small(g, 1, 5) / 10.0f);
      if (rare(g, 96)) setf(op, ATTR_beta, (float)small(g, 0, 10) / 10.0f);
      break;
    default: break;
  }
}

static void gen_pool(G* g, gop* op) {
  int x = data_input(g, 4);
  push_in(op, x);
  int32_t k[2] = {dimk(g, 3), dimk(g, 3)};
  if (u8(g) < 200) setv(op, ATTR_kernel, k, 2);
  spatial_attrs(g, op, k[0], k[1], 1);
  if (rare(g, 48)) seti(op, ATTR_ceil_mode, 1);
  if (rare(g, 64)) seti(op, ATTR_count_include_pad, 1);
}

static void gen_reduce(G* g, gop* op) {
  int x = data_input(g, -1);
  push_in(op, x);
  int r = g->t[x].rank;
  if (op->type == OP_SOFTMAX) {
    if (r && rare(g, 128)) seti(op, ATTR_axis, small(g, -r, r - 1));
    return;
  }
  int32_t axes[RANK_MAX];
  int n = 0;
  for (int i = 0; i < r; i++)
    if (u8(g) >= 128) axes[n++] = u8(g) < 128 ? i : i - r;
  if (n) setv(op, ATTR_axes, axes, n);
  if (rare(g, 96)) seti(op, ATTR_keepdims, 0);
}

static void gen_reshape(G* g, gop* op) {
  int x = data_input(g, -1);
  push_in(op, x);
  const gt* xt = &g->t[x];
  int32_t s[RANK_MAX];
  int n = 0;
  for (int i = 0; i < xt->rank; i++) { /* x's dims, adjacent ones merged at random */
    int64_t v = xt->d[i];
    if (n && u8(g) >= 160) v *= s[n - 1], n--;
    s[n++] = v > 0x7fffffff ? 0x7fffffff : (int32_t)v;
  }
  int zero = 0;
  for (int i = 0; i < n; i++) zero |= s[i] == 0;
  if (!n || zero) { /* no entry may be 0: the zero-sized one becomes -1 */
    n = 1 + below(g, 2);
    s[0] = -1;
    if (n == 2) s[1] = 1 + below(g, 4);
  } else if (u8(g) >= 192) {
    s[below(g, n)] = -1;
  }
  if (u8(g) >= 224 && n < RANK_MAX) s[n++] = 1;
  setv(op, ATTR_shape, s, n);
}

static void gen_transpose(G* g, gop* op) {
  int x = data_input(g, -1);
  push_in(op, x);
  int r = g->t[x].rank;
  if (u8(g) < 48) return; /* reverse */
  int32_t p[RANK_MAX];
  for (int i = 0; i < r; i++) p[i] = i;
  for (int i = r - 1; i > 0; i--) {
    int j = below(g, i + 1);
    int32_t t = p[i];
    p[i] = p[j];
    p[j] = t;
  }
  setv(op, ATTR_perm, p, r);
}

static void gen_concat(G* g, gop* op) {
  int x = data_input(g, -1);
  push_in(op, x);
  const gt* xt = &g->t[x];
  int ax = xt->rank ? below(g, xt->rank) : 0;
  if (ax) seti(op, ATTR_axis, ax);
  unsigned b = u8(g);
  static const int MANY[] = {16, 255, 1024, MAX_IN};
  int n = b < 150 ? 2 : b < 200 ? 3 + below(g, 3) : b < 230 ? 1 : MANY[below(g, 4)];
  int same = n > 8 || rare(g, 32); /* the same tensor n times (aliasing) */
  int other = -1;
  for (int i = 1; i < n; i++) {
    if (same || (other >= 0 && u8(g) < 128)) {
      push_in(op, other >= 0 && !same ? other : x);
      continue;
    }
    int32_t d[RANK_MAX];
    memcpy(d, xt->d, sizeof d);
    if (xt->rank) d[ax] = dimk(g, 4);
    other = operand(g, xt->rank, d, xt->dtype, FILL_SMALL, 1);
    push_in(op, other);
  }
  if (rare(g, 16)) setf(op, ATTR_act_min, hostile_float(g));
}

static void gen_slice(G* g, gop* op) {
  int x = data_input(g, -1);
  push_in(op, x);
  const gt* xt = &g->t[x];
  int32_t st[RANK_MAX], en[RANK_MAX], sp[RANK_MAX];
  for (int i = 0; i < xt->rank; i++) {
    int32_t d = xt->d[i];
    unsigned b = u8(g);
    sp[i] = b < 160 ? 1 : b < 200 ? 2 : b < 240 ? -1 : -3;
    int32_t lo = d > 0 ? (int32_t)(u32(g) % (uint32_t)d) : 0, hi = d > 0 ? (int32_t)(u32(g) % (uint32_t)d) : 0;
    if (sp[i] > 0) {
      st[i] = lo < hi ? lo : hi;
      en[i] = (lo < hi ? hi : lo) + (u8(g) < 128);
      if (en[i] > d) en[i] = d;
    } else {
      st[i] = lo > hi ? lo : hi;
      en[i] = (lo > hi ? hi : lo) - 1;
    }
  }
  setv(op, ATTR_starts, st, xt->rank);
  setv(op, ATTR_ends, en, xt->rank);
  setv(op, ATTR_steps, sp, xt->rank);
}

static void gen_pad(G* g, gop* op) {
  int x = data_input(g, -1);
  push_in(op, x);
  const gt* xt = &g->t[x];
  int32_t p[2 * RANK_MAX];
  int mode = u8(g) < 192 ? 0 : below(g, 3);
  for (int i = 0; i < 2 * xt->rank; i++) {
    p[i] = u8(g) < 240 ? small(g, 0, 2) : hostile_int(g);
    int32_t d = xt->d[i % xt->rank];
    if (mode == 1 && p[i] > d - 1) p[i] = d > 0 ? d - 1 : 0;
  }
  setv(op, ATTR_pads, p, 2 * xt->rank);
  if (mode) seti(op, ATTR_mode, mode);
  if (rare(g, 48)) setf(op, ATTR_value, hostile_float(g));
}

static void gen_resize(G* g, gop* op) {
  int x = data_input(g, 4);
  push_in(op, x);
  int32_t s[2] = {dimk(g, 16), dimk(g, 16)};
  setv(op, ATTR_size, s, 2);
  if (rare(g, 64)) {
    float sc[2] = {(float)small(g, 1, 8) / 2.0f, (float)small(g, 1, 8) / 2.0f};
    setfv(op, ATTR_scales, sc, 2);
  }
  if (rare(g, 128)) seti(op, ATTR_mode, below(g, 2));
  if (rare(g, 96)) seti(op, ATTR_coord, below(g, 5));
  if (rare(g, 64)) seti(op, ATTR_nearest, below(g, 4));
}

static void gen_d2s(G* g, gop* op) {
  int32_t blk = small(g, 1, 4);
  if (blk != 2) seti(op, ATTR_block, blk);
  if (rare(g, 64)) seti(op, ATTR_mode, 1);
  int x = data_input(g, 4);
  if (g->t[x].rank == 4 && g->t[x].d[3] % (blk * blk) && u8(g) < 200) { /* a fresh input with fitting channels */
    int64_t c = (int64_t)blk * blk * dimk(g, 3);
    int32_t d[4] = {1, dimk(g, 4), dimk(g, 4), c > 0x7fffffff ? blk * blk : (int32_t)c};
    int y = add_input(g, 4, d, DT_F32);
    if (y >= 0) x = y;
  }
  push_in(op, x);
}

static void gen_gather(G* g, gop* op) {
  int x = data_input(g, -1);
  push_in(op, x);
  const gt* xt = &g->t[x];
  int ax = xt->rank ? below(g, xt->rank) : 0;
  if (xt->rank && u8(g) >= 192) ax -= xt->rank;
  if (ax) seti(op, ATTR_axis, ax);
  int32_t d[RANK_MAX];
  int rank = below(g, 3);
  for (int i = 0; i < rank; i++) d[i] = dimk(g, 4);
  if (rare(g, 12)) { /* many indices */
    rank = 1;
    d[0] = u8(g) < 128 ? 1 << 16 : 1 << 20;
  }
  int32_t span = xt->rank ? xt->d[ax < 0 ? ax + xt->rank : ax] : 1;
  uint8_t dt = u8(g) < 208 ? DT_I32 : DT_I64;
  push_in(op, operand(g, rank, d, dt, rare(g, 16) ? FILL_HOSTILE : FILL_INDEX, span));
}

/* inputs of an op no case above knows: min..max inputs of generic shapes */
static void gen_generic(G* g, gop* op) {
  const wrt_opdef* d = op->type > 0 && op->type < OP_MAX_CODE && WRT_OPDEFS[op->type].name ? &WRT_OPDEFS[op->type] : 0;
  int n = d ? d->min_in + below(g, d->max_in - d->min_in + 1) : 1 + below(g, 3);
  for (int i = 0; i < n; i++) push_in(op, data_input(g, -1));
}

/* ---- output shapes, as python_ref/shapes.py computes them (no validation: the engine judges) ---------------------- */
static int64_t fdiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

static int64_t conv_len(int64_t n, int64_t k, int64_t s, int64_t dl, int64_t p0, int64_t p1, int ceil) {
  int64_t span = n + p0 + p1 - dl * (k - 1) - 1;
  if (s < 1) return -1;
  if (!ceil) return fdiv(span, s) + 1;
  int64_t o = -fdiv(-span, s) + 1;
  if ((o - 1) * s >= n + p0) o--;
  return o;
}

static int put(int64_t* o, int i, int64_t v) {
  if (v < 0 || v > 0x7fffffff) return -1;
  o[i] = v;
  return 0;
}

static int infer(const G* g, const gop* op, int* rank, int64_t* o) {
  if (op->n_in < 1 || op->in[0] < 0) return -1;
  const gt* x = &g->t[op->in[0]];
  const gt* w = op->n_in > 1 && op->in[1] >= 0 ? &g->t[op->in[1]] : 0;
  int32_t s[LIST_CAP], dl[LIST_CAP], p[LIST_CAP], k[LIST_CAP], list[LIST_CAP];
  *rank = x->rank;
  for (int i = 0; i < x->rank; i++) o[i] = x->d[i];
  switch (op->type) {
    case OP_CONV_2D: case OP_CONV_TRANSPOSE_2D: case OP_MAX_POOL_2D: case OP_AVERAGE_POOL_2D: {
      if (x->rank != 4 || getv(op, ATTR_strides, s) != 2 || getv(op, ATTR_dilations, dl) != 2 ||
          getv(op, ATTR_pads, p) != 4)
        return -1;
      int pool = op->type == OP_MAX_POOL_2D || op->type == OP_AVERAGE_POOL_2D;
      if (pool) {
        if (getv(op, ATTR_kernel, k) != 2) return -1;
      } else {
        if (!w || w->rank != 4) return -1;
        k[0] = w->d[1], k[1] = w->d[2], o[3] = w->d[0];
      }
      for (int i = 0; i < 2; i++) {
        int64_t v;
        if (op->type == OP_CONV_TRANSPOSE_2D) {
          int32_t opad[LIST_CAP];
          if (getv(op, ATTR_output_padding, opad) != 2) return -1;
          v = ((int64_t)x->d[1 + i] - 1) * s[i] - p[i] - p[i + 2] + (int64_t)dl[i] * ((int64_t)k[i] - 1) + 1 + opad[i];
        } else {
          v = conv_len(x->d[1 + i], k[i], s[i], dl[i], p[i], p[i + 2], pool && geti(op, ATTR_ceil_mode));
        }
        if (put(o, 1 + i, v)) return -1;
      }
      return 0;
    }
    case OP_FULLY_CONNECTED:
      if (!w || w->rank != 2 || !x->rank) return -1;
      o[x->rank - 1] = w->d[0];
      return 0;
    case OP_MATMUL: {
      if (!w || !x->rank || !w->rank) return -1;
      int ra = x->rank < 2 ? 2 : x->rank, rb = w->rank < 2 ? 2 : w->rank, rr = (ra > rb ? ra : rb) - 2, n = 0;
      for (int i = 0; i < rr; i++) {
        int ia = i - (rr - (ra - 2)), ib = i - (rr - (rb - 2));
        int64_t da = ia >= 0 ? x->d[ia] : 1, db = ib >= 0 ? w->d[ib] : 1;
        o[n++] = da == 1 ? db : da;
      }
      if (x->rank > 1) o[n++] = x->d[x->rank - 2];
      if (w->rank > 1) o[n++] = w->d[w->rank - 1];
      *rank = n;
      return n <= RANK_MAX ? 0 : -1;
    }
    case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_MAXIMUM: case OP_MINIMUM: case OP_POW:
    case OP_PRELU: {
      if (!w) return -1;
      int r = x->rank > w->rank ? x->rank : w->rank;
      for (int i = 0; i < r; i++) {
        int ia = i - (r - x->rank), ib = i - (r - w->rank);
        int64_t da = ia >= 0 ? x->d[ia] : 1, db = ib >= 0 ? w->d[ib] : 1;
        o[i] = da == 1 ? db : da;
      }
      *rank = op->type == OP_PRELU ? x->rank : r;
      return 0;
    }
    case OP_MEAN: case OP_REDUCE_MAX: case OP_REDUCE_SUM: {
      int n = getv(op, ATTR_axes, list), keep = geti(op, ATTR_keepdims) != 0, r = 0;
      uint8_t red[RANK_MAX] = {0};
      for (int i = 0; i < n; i++)
        if (list[i] >= -x->rank && list[i] < x->rank) red[list[i] < 0 ? list[i] + x->rank : list[i]] = 1;
      for (int i = 0; i < x->rank; i++)
        if (!n || red[i]) {
          if (keep) o[r++] = 1;
        } else {
          o[r++] = x->d[i];
        }
      *rank = r;
      return 0;
    }
    case OP_RESHAPE: {
      int n = getv(op, ATTR_shape, list), neg = -1;
      int64_t known = 1, count = (int64_t)count_of(x);
      for (int i = 0; i < n && i < RANK_MAX; i++) {
        o[i] = list[i];
        if (list[i] == -1) neg = i;
        else if (list[i] > 0 && known <= ((int64_t)1 << 31)) known *= list[i]; /* stays below 2^62 */
      }
      if (neg >= 0 && put(o, neg, known ? count / known : 0)) return -1;
      *rank = n;
      return n <= RANK_MAX ? 0 : -1;
    }
    case OP_TRANSPOSE: {
      int n = getv(op, ATTR_perm, list);
      for (int i = 0; i < x->rank; i++) {
        int32_t a = n ? (i < n ? list[i] : -1) : x->rank - 1 - i;
        if (a < 0 || a >= x->rank) return -1;
        o[i] = x->d[a];
      }
      return 0;
    }
    case OP_CONCATENATION: {
      int ax = geti(op, ATTR_axis);
      if (ax < 0 || ax >= x->rank) return -1;
      int64_t sum = 0;
      for (int i = 0; i < op->n_in; i++)
        if (op->in[i] >= 0 && g->t[op->in[i]].rank > ax) sum += g->t[op->in[i]].d[ax];
      return put(o, ax, sum);
    }
    case OP_SLICE: {
      int32_t st[LIST_CAP], en[LIST_CAP], sp[LIST_CAP];
      int n = getv(op, ATTR_starts, st);
      if (getv(op, ATTR_ends, en) != n || getv(op, ATTR_steps, sp) != n || n != x->rank) return -1;
      for (int i = 0; i < n; i++) {
        int64_t b = st[i], e = en[i], step = sp[i];
        if (!step) return -1;
        o[i] = step > 0 ? (e > b ? (e - b + step - 1) / step : 0) : (b > e ? (b - e - step - 1) / -step : 0);
      }
      return 0;
    }
    case OP_PAD: {
      int n = getv(op, ATTR_pads, list);
      if (n != 2 * x->rank) return -1;
      for (int i = 0; i < x->rank; i++)
        if (put(o, i, (int64_t)x->d[i] + list[i] + list[i + x->rank])) return -1;
      return 0;
    }
    case OP_RESIZE:
      if (x->rank != 4 || getv(op, ATTR_size, list) != 2) return -1;
      o[1] = list[0], o[2] = list[1];
      return 0;
    case OP_DEPTH_TO_SPACE: {
      int64_t b = geti(op, ATTR_block);
      if (x->rank != 4 || b < 1) return -1;
      if (put(o, 1, x->d[1] * b) || put(o, 2, x->d[2] * b)) return -1;
      o[3] = x->d[3] / (b * b);
      return 0;
    }
    case OP_GATHER: {
      int ax = geti(op, ATTR_axis), r = 0;
      if (!w || ax < -x->rank || ax >= x->rank) return -1;
      ax = ax < 0 ? ax + x->rank : ax;
      for (int i = 0; i < ax; i++) o[r++] = x->d[i];
      for (int i = 0; i < w->rank && r < RANK_MAX; i++) o[r++] = w->d[i];
      for (int i = ax + 1; i < x->rank && r < RANK_MAX; i++) o[r++] = x->d[i];
      *rank = r;
      return x->rank - 1 + w->rank <= RANK_MAX ? 0 : -1;
    }
    default: /* element-wise unary and SOFTMAX keep the shape */
      return op->type > 0 && op->type < OP_MAX_CODE && WRT_OPDEFS[op->type].name ? 0 : -1;
  }
}

/* ---- one op -------------------------------------------------------------------------------------------------------- */
static int op_codes(int* codes) {
  int n = 0;
  for (int c = 1; c < OP_MAX_CODE; c++)
    if (WRT_OPDEFS[c].name) codes[n++] = c;
  return n;
}

static int gen_op(G* g) {
  if (g->nops >= MAXOPS || g->nt >= MAXT - 8) return -1;
  static int codes[OP_MAX_CODE], ncodes;
  if (!ncodes) ncodes = op_codes(codes);
  gop* op = &g->ops[g->nops];
  memset(op, 0, sizeof *op);
  op->in = malloc(sizeof(int32_t) * (MAX_IN + 4));
  if (!op->in) return -1;
  unsigned b = u8(g);
  op->type = b < 252 ? codes[b % (unsigned)ncodes] : (int)u16(g); /* rarely: an unknown code */
  switch (op->type) {
    case OP_CONV_2D: case OP_CONV_TRANSPOSE_2D: gen_conv(g, op); break;
    case OP_FULLY_CONNECTED: case OP_MATMUL: gen_dense(g, op); break;
    case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_MAXIMUM: case OP_MINIMUM: case OP_POW: case OP_PRELU:
      gen_binary(g, op);
      break;
    case OP_MAX_POOL_2D: case OP_AVERAGE_POOL_2D: gen_pool(g, op); break;
    case OP_MEAN: case OP_REDUCE_MAX: case OP_REDUCE_SUM: case OP_SOFTMAX: gen_reduce(g, op); break;
    case OP_RESHAPE: gen_reshape(g, op); break;
    case OP_TRANSPOSE: gen_transpose(g, op); break;
    case OP_CONCATENATION: gen_concat(g, op); break;
    case OP_SLICE: gen_slice(g, op); break;
    case OP_PAD: gen_pad(g, op); break;
    case OP_RESIZE: gen_resize(g, op); break;
    case OP_DEPTH_TO_SPACE: gen_d2s(g, op); break;
    case OP_GATHER: gen_gather(g, op); break;
    default: /* element-wise unary ops: python_ref/opdefs.py's family (generated/wrt_ops.h) */
      if (op->type > 0 && op->type < OP_MAX_CODE && WRT_OPDEFS[op->type].family == WRT_FAMILY_UNARY) gen_unary(g, op);
      else gen_generic(g, op);
      break;
  }
  if (g->nt == 0 || op->n_in == 0) return -1;
  if (op->in[0] < 0) op->in[0] = 0; /* a failed add_* (tensor table full): any tensor */
  /* hostile pass over the attributes, then over the wiring */
  const wrt_optionsdef* od = optdef(op->type);
  for (int k = 0; k < od->n_fields; k++)
    if (rare(g, 10)) hostile_field(g, &op->a[k], &od->fields[k]);
  if (rare(g, 6)) op->opts = (uint8_t)(1 + below(g, 2));
  if (rare(g, 8) && op->n_in) op->in[below(g, op->n_in)] = below(g, g->nt + 1) - 1;
  if (rare(g, 4) && op->n_in < MAX_IN) push_in(op, data_input(g, -1));
  if (rare(g, 4) && op->n_in > 0) op->n_in--;
  /* the output: the shape the op computes, sometimes perturbed, sometimes an existing tensor */
  int64_t o[RANK_MAX];
  int rank;
  int32_t d[RANK_MAX];
  if (infer(g, op, &rank, o) == 0 && rank >= 0 && rank <= RANK_MAX) {
    for (int i = 0; i < rank; i++) d[i] = o[i] > 0x7fffffff ? 0x7fffffff : (int32_t)o[i];
  } else {
    rank = new_shape(g, pick_rank(g), d, 8);
  }
  if (rare(g, 8) && rank) {
    int i = below(g, rank);
    d[i] = u8(g) < 128 ? (d[i] < 0x7fffffff ? d[i] + 1 : 0) : d[i] - (d[i] > 0);
  }
  uint8_t dt = op->n_in && op->in[0] >= 0 ? g->t[op->in[0]].dtype : DT_F32;
  if (rare(g, 6)) dt = (uint8_t)below(g, 7);
  op->out = rare(g, 4) ? below(g, g->nt) : add_tensor(g, rank, d, dt, K_ACT);
  if (op->out < 0) op->out = 0;
  g->nops++;
  return 0;
}

/* ---- writing the file ---------------------------------------------------------------------------------------------- */
typedef struct {
  const gbuf* b;
} fill_ctx;

static void fill_elem(void* ctx, size_t i, uint8_t* dst) {
  const gbuf* b = ((fill_ctx*)ctx)->b;
  uint32_t h = wrt_gen_hash(b->seed, i);
  int64_t v = 0;
  float f = 0;
  switch (b->fill) {
    case FILL_SMALL: f = (float)((int32_t)(h % 2001) - 1000) / 1000.0f, v = (int64_t)(h % 7) - 3; break;
    case FILL_ZERO: break;
    case FILL_SPECIAL: {
      static const float S[] = {0.0f, 1.0f, -1.0f, 1e30f, -1e30f, 1e-40f, 65504.0f, 3.4e38f};
      uint32_t k = h % 11;
      f = k == 8 ? __builtin_nanf("") : k == 9 ? __builtin_inff() : k == 10 ? -__builtin_inff() : S[k];
      v = HOSTILE_INTS[h % N_HOSTILE];
      break;
    }
    case FILL_INDEX: v = b->neg ? (int64_t)(h % (2u * (uint32_t)b->span)) - b->span : h % (uint32_t)b->span; break;
    default: v = h % 4 ? (int64_t)HOSTILE_INTS[h % N_HOSTILE] : (int64_t)h << 20; break;
  }
  switch (b->dtype) {
    case DT_F32: memcpy(dst, &f, 4); break;
    case DT_F16: { /* float16 bits: the value's top bits are as good a pattern as any */
      uint16_t hbits = b->fill == FILL_ZERO ? 0 : b->fill == FILL_SMALL ? (uint16_t)(0x3000 + (h % 0x1000)) : (uint16_t)h;
      memcpy(dst, &hbits, 2);
      break;
    }
    case DT_I32: { int32_t x = (int32_t)v; memcpy(dst, &x, 4); break; }
    case DT_I64: memcpy(dst, &v, 8); break;
    default: *dst = (uint8_t)v; break;
  }
}

static fbb_ref name_ref(G* g, fbb* b, int mode, fbb_ref shared, const char* prefix, int i) {
  if (mode == 1) return shared;
  char s[32];
  int n = 0;
  while (prefix[n]) s[n] = prefix[n], n++;
  int v = i, digits = 1;
  for (int t = v; t >= 10; t /= 10) digits++;
  for (int k = digits - 1; k >= 0; k--, v /= 10) s[n + k] = (char)('0' + v % 10);
  n += digits;
  (void)g;
  return fbb_string(b, s, (size_t)n);
}

static fbb_ref write_options(fbb* b, const gop* op, int opts_type) {
  const wrt_optionsdef* od = &WRT_OPTIONS[opts_type];
  fbb_ref vec[FBB_MAX_SLOTS] = {0};
  const wrt_optionsdef* mine = optdef(op->type);
  for (int k = 0; k < od->n_fields; k++) { /* children first */
    const wrt_fielddef* fd = &od->fields[k];
    const gval* v = mine == od ? &op->a[k] : 0;
    if (!v || !v->set) continue;
    if (fd->kind == WRT_ATTR_INTS) vec[k] = fbb_vec(b, v->v, 4, (size_t)v->n, 4);
    if (fd->kind == WRT_ATTR_FLOATS) vec[k] = fbb_vec(b, v->fv, 4, (size_t)v->n, 4);
  }
  fbb_table(b);
  for (int k = 0; k < od->n_fields; k++) {
    const wrt_fielddef* fd = &od->fields[k];
    const gval* v = mine == od ? &op->a[k] : 0;
    if (!v || !v->set) continue;
    uint8_t u = (uint8_t)v->i;
    switch (fd->kind) {
      case WRT_ATTR_INT: fbb_add(b, fd->slot, &v->i, 4); break;
      case WRT_ATTR_FLOAT: fbb_add(b, fd->slot, &v->f, 4); break;
      case WRT_ATTR_BOOL: case WRT_ATTR_ENUM: fbb_add(b, fd->slot, &u, 1); break;
      default: fbb_add_ref(b, fd->slot, vec[k]); break;
    }
  }
  return fbb_end(b);
}

static int64_t nbytes(const gt* t) { return (int64_t)(count_of(t) * ESIZE[t->dtype]); }

/* arena offsets for every activation and graph input; returns the arena size the plan declares */
static uint64_t plan(G* g, uint32_t* align_out) {
  static const uint32_t ALIGNS[] = {16, 32, 128, 8, 0, 256, 64};
  uint32_t align = u8(g) < 232 ? 64 : ALIGNS[below(g, 7)];
  *align_out = align;
  uint32_t a = align ? align : 1;
  unsigned mode = u8(g);
  uint64_t end = 0;
  for (int i = 0; i < g->nt; i++) {
    gt* t = &g->t[i];
    if (t->kind == K_CONST) continue;
    if (mode >= 200 && mode < 224) { /* everything at offset 0: activations alias each other */
      t->off = 0;
      if ((uint64_t)nbytes(t) > end) end = (uint64_t)nbytes(t);
      continue;
    }
    end = (end + a - 1) / a * a;
    t->off = (int64_t)end;
    end += (uint64_t)nbytes(t);
  }
  end = (end + a - 1) / a * a;
  if (mode >= 224 && mode < 240) return (uint64_t)1 << 31; /* the arena limit exactly */
  if (mode >= 240) {
    static const int64_t DELTA[] = {-64, -1, 1, 64, ((int64_t)1 << 31) + 64, ((int64_t)1 << 32)};
    int64_t v = (int64_t)end + DELTA[below(g, 6)];
    if (rare(g, 128) && g->nt) g->t[below(g, g->nt)].off += (int64_t)a * (1 + below(g, 3)) * (u8(g) < 128 ? 1 : -1);
    return v < 0 ? 0 : (uint64_t)v;
  }
  return end;
}

static fbb_ref write_tensor(G* g, fbb* b, int i, int name_mode, fbb_ref shared_name) {
  const gt* t = &g->t[i];
  fbb_ref name = name_mode == 2 ? 0 : name_ref(g, b, name_mode, shared_name, "t", i);
  fbb_ref shape = fbb_vec(b, t->d, 4, (size_t)t->rank, 4);
  fbb_ref quant = 0, sparsity = t->kind == K_CONST && t->sp ? write_sparsity(b, t) : 0;
  if (t->quant) {
    float scale[2] = {0.5f, hostile_float(g)};
    int64_t zp[2] = {0, (int64_t)hostile_int(g)};
    size_t n = (size_t)below(g, 3);
    fbb_ref sv = fbb_vec(b, scale, 4, n, 4), zv = fbb_vec(b, zp, 8, n, 8);
    fbb_table(b);
    fbb_add_ref(b, 0, sv);
    fbb_add_ref(b, 1, zv);
    int32_t axis = hostile_int(g);
    fbb_add(b, 2, &axis, 4);
    quant = fbb_end(b);
  }
  fbb_table(b);
  if (name) fbb_add_ref(b, 0, name);
  if (t->rank || u8(g) < 200) fbb_add_ref(b, 1, shape); /* rank 0: an empty vector or no vector */
  if (t->dtype) fbb_add(b, 2, &t->dtype, 1);
  if (t->kind == K_CONST) {
    uint32_t buf = (uint32_t)t->buf;
    fbb_add(b, 3, &buf, 4);
    if (rare(g, 8)) fbb_add(b, 4, &t->off, 8);
  } else {
    fbb_add(b, 4, &t->off, 8);
  }
  if (quant) fbb_add_ref(b, 5, quant);
  if (sparsity) fbb_add_ref(b, 6, sparsity);
  return fbb_end(b);
}

static fbb_ref write_model(G* g, fbb* b) {
  uint32_t align;
  uint64_t arena = plan(g, &align);
  /* names: unique, one string for every tensor (and op), one long string for all, or none */
  unsigned nm = u8(g);
  int name_mode = nm < 224 ? 0 : nm < 240 ? 1 : nm < 248 ? 3 : 2;
  fbb_ref shared = 0;
  if (name_mode == 1) shared = fbb_string(b, "shared", 6);
  if (name_mode == 3) {
    size_t n = (size_t)1 << (10 + below(g, 7)); /* 1 KiB .. 64 KiB */
    char* s = malloc(n);
    if (s) {
      memset(s, 'n', n);
      shared = fbb_string(b, s, n);
      free(s);
    }
    name_mode = 1;
  }
  /* buffers: 0 is the empty one */
  fbb_ref* bufs = malloc(sizeof(fbb_ref) * (size_t)(g->nbufs + 1));
  if (!bufs) return 0;
  for (int i = 0; i <= g->nbufs; i++) {
    fbb_ref data = 0;
    if (i) {
      fill_ctx c = {&g->bufs[i]};
      data = fbb_bytes_fill(b, ESIZE[g->bufs[i].dtype], (size_t)g->bufs[i].count, 64, fill_elem, &c);
    }
    fbb_table(b);
    if (data) fbb_add_ref(b, 0, data);
    bufs[i] = fbb_end(b);
  }
  size_t nbuf_refs = (size_t)g->nbufs + 1;
  if (rare(g, 4)) nbuf_refs += (size_t)1 << (4 + below(g, 12)); /* the last Buffer table, referenced again */
  fbb_ref* bref = malloc(sizeof(fbb_ref) * nbuf_refs);
  if (!bref) return free(bufs), 0;
  for (size_t i = 0; i < nbuf_refs; i++) bref[i] = bufs[i <= (size_t)g->nbufs ? i : (size_t)g->nbufs];
  fbb_ref buffers = fbb_vec_refs(b, bref, nbuf_refs);
  free(bref);
  free(bufs);
  /* tensors, then some tensor table referenced many more times */
  fbb_ref* tref = malloc(sizeof(fbb_ref) * ((size_t)g->nt + 1));
  if (!tref) return 0;
  for (int i = 0; i < g->nt; i++) {
    g->t[i].quant = (uint8_t)rare(g, 4);
    tref[i] = write_tensor(g, b, i, name_mode, shared);
  }
  size_t ntref = (size_t)g->nt;
  int alias = -1;
  if (rare(g, 10) && g->nt) {
    static const size_t MANY[] = {2, 100, 4096, 65536, 200000, 250000}; /* 1 MB of offsets at most */
    alias = below(g, g->nt);
    ntref += MANY[below(g, 6)];
  }
  fbb_ref* all = malloc(sizeof(fbb_ref) * (ntref ? ntref : 1));
  if (!all) return free(tref), 0;
  for (size_t i = 0; i < ntref; i++) all[i] = tref[i < (size_t)g->nt ? i : (size_t)alias];
  fbb_ref tensors = fbb_vec_refs(b, all, ntref);
  free(all);
  free(tref);
  /* operators */
  fbb_ref* oref = malloc(sizeof(fbb_ref) * ((size_t)g->nops + 1));
  if (!oref) return 0;
  for (int k = 0; k < g->nops; k++) {
    const gop* op = &g->ops[k];
    int want = optdef(op->type) == &WRT_OPTIONS[OPTIONS_NONE] ? 0 : WRT_OPDEFS[op->type].options;
    int otype = op->opts == 0 ? want : op->opts == 1 ? 0 : 1 + (want + (int)u8(g)) % (OPTIONS_COUNT - 1);
    fbb_ref ins = fbb_vec(b, op->in, 4, (size_t)op->n_in, 4);
    int32_t out = op->out;
    fbb_ref outs = fbb_vec(b, &out, 4, 1, 4);
    fbb_ref opts = otype ? write_options(b, op, otype) : 0;
    fbb_ref name = name_mode == 2 ? 0 : name_ref(g, b, name_mode, shared, "op", k);
    fbb_table(b);
    uint16_t type = (uint16_t)op->type;
    fbb_add(b, 0, &type, 2);
    fbb_add_ref(b, 1, ins);
    fbb_add_ref(b, 2, outs);
    if (otype) {
      uint8_t ot = (uint8_t)otype;
      fbb_add(b, 3, &ot, 1);
      fbb_add_ref(b, 4, opts);
    }
    if (name) fbb_add_ref(b, 5, name);
    oref[k] = fbb_end(b);
  }
  fbb_ref operators = fbb_vec_refs(b, oref, (size_t)g->nops);
  free(oref);
  /* graph inputs and outputs */
  fbb_ref inputs = fbb_vec(b, g->inputs, 4, (size_t)g->nin, 4);
  fbb_ref outputs = fbb_vec(b, g->outputs, 4, (size_t)g->nout, 4);
  /* plan and metadata */
  fbb_table(b);
  fbb_add(b, 0, &arena, 8);
  if (align != 64) fbb_add(b, 1, &align, 4);
  uint64_t lower = arena;
  fbb_add(b, 2, &lower, 8);
  fbb_ref planref = fbb_end(b);
  fbb_ref meta = 0;
  if (rare(g, 8)) {
    int32_t pin = u8(g) < 200 ? 0 : hostile_int(g);
    fbb_ref layout = fbb_string(b, "NHWC", 4);
    float mean[3] = {127.5f, 127.5f, 127.5f};
    fbb_ref mv = fbb_vec(b, mean, 4, (size_t)below(g, 4), 4);
    fbb_table(b);
    fbb_add(b, 0, &pin, 4);
    fbb_add_ref(b, 1, layout);
    fbb_add_ref(b, 3, mv);
    fbb_ref pre = fbb_end(b);
    fbb_ref pres = fbb_vec_refs(b, &pre, 1);
    fbb_ref label = fbb_string(b, "label", 5);
    size_t nl = (size_t)1 << below(g, 17); /* one label string referenced up to 65536 times */
    fbb_ref* lr = malloc(sizeof(fbb_ref) * nl);
    fbb_ref labels = 0;
    if (lr) {
      for (size_t i = 0; i < nl; i++) lr[i] = label;
      labels = fbb_vec_refs(b, lr, nl);
      free(lr);
    }
    fbb_table(b);
    fbb_add_ref(b, 2, pres);
    if (labels) fbb_add_ref(b, 3, labels);
    meta = fbb_end(b);
  }
  fbb_table(b);
  uint32_t version = rare(g, 2) ? (uint32_t)hostile_int(g) : 1;
  fbb_add(b, 0, &version, 4);
  fbb_add_ref(b, 1, tensors);
  fbb_add_ref(b, 2, operators);
  fbb_add_ref(b, 3, inputs);
  fbb_add_ref(b, 4, outputs);
  fbb_add_ref(b, 5, buffers);
  fbb_add_ref(b, 6, planref);
  if (meta) fbb_add_ref(b, 7, meta);
  return fbb_end(b);
}

static void free_ops(G* g) {
  for (int k = 0; k < MAXOPS; k++) {
    free(g->ops[k].in);
    g->ops[k].in = 0;
  }
}

int wrt_gen(const uint8_t* recipe, size_t n, wrt_gen_out* out) {
  G* g = calloc(1, sizeof(G));
  if (!g) return -1;
  g->p = recipe;
  g->n = n;
  memset(out, 0, sizeof *out);
  out->input_mode = below(g, 3);
  out->input_seed = u32(g);
  out->runs = 1 + rare(g, 32);
  g->const_budget = rare(g, 4) ? CONST_BUDGET_BIG : CONST_BUDGET;
  unsigned b = u8(g);
  int nops = b < 200 ? 1 + (int)(b % 6) : b < 248 ? 1 + (int)(b % 16) : MAXOPS;
  for (int k = 0; k < nops; k++)
    if (gen_op(g)) break;
  if (g->nops == 0) {
    free_ops(g);
    free(g);
    return -1;
  }
  /* graph outputs: the last op's output, sometimes others (an input, a constant, an earlier output) */
  g->outputs[g->nout++] = g->ops[g->nops - 1].out;
  while (g->nout < 16 && rare(g, 24)) g->outputs[g->nout++] = below(g, g->nt);
  if (g->nin == 0 && rare(g, 128)) g->inputs[g->nin++] = g->ops[0].out; /* an op output declared as input */
  fbb_init(&out->b, FILE_LIMIT);
  fbb_ref root = write_model(g, &out->b);
  free_ops(g);
  free(g);
  out->data = root ? fbb_finish(&out->b, root, "WRT0", &out->size) : 0;
  if (!out->data) {
    fbb_free(&out->b);
    return -1;
  }
  return 0;
}

void wrt_gen_free(wrt_gen_out* out) { fbb_free(&out->b); }
