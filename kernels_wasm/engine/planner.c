/* The arena plan at the current shapes, for a model whose inputs were resized at run time (wasmrt/compile/planner.py makes
 * the file's plan offline, the same way): activations that are live at the same time never share bytes; a RESHAPE
 * of an activation shares its input's bytes (the two form one group, live over the union); groups are placed largest
 * first, each at the lowest-waste free gap over its lifetime (best fit), 64-byte aligned. */
#include "engine.h"

typedef struct {
  uint64_t size, offset;
  int first, last; /* the steps that write it first and read it last (-1: a graph input; n_ops: a graph output) */
} group;

/* Beyond this many groups the quadratic placement could take seconds: each group then gets its own bytes. */
#define MAX_PACKED_GROUPS 4096

static int find(int* root, int x) {
  while (root[x] != x) x = root[x] = root[root[x]];
  return x;
}

/* heap sort of group indices: largest size first, ties by index */
static int before(const group* g, int a, int b) { return g[a].size > g[b].size || (g[a].size == g[b].size && a < b); }

static void sift(int* idx, const group* g, int i, int n) {
  for (;;) {
    int c = 2 * i + 1;
    if (c >= n) return;
    if (c + 1 < n && before(g, idx[c], idx[c + 1])) c++; /* the later-placed child: a min-heap of 'before' */
    if (!before(g, idx[i], idx[c])) return;
    int t = idx[i];
    idx[i] = idx[c];
    idx[c] = t;
    i = c;
  }
}

static void sort_by_size(int* idx, const group* g, int n) {
  for (int i = n / 2 - 1; i >= 0; i--) sift(idx, g, i, n);
  for (int end = n - 1; end > 0; end--) {
    int t = idx[0];
    idx[0] = idx[end];
    idx[end] = t;
    sift(idx, g, 0, end);
  }
}

int plan_arena(wrt_model* m, int64_t* offsets, uint64_t* arena_size) {
  int nt = m->n_tensors;
  int* root = rt_alloc(sizeof(int) * (size_t)(nt ? nt : 1) * 2);
  group* g = rt_alloc(sizeof(group) * (size_t)(nt ? nt : 1));
  if (!root || !g) {
    rt_free(root);
    rt_free(g);
    return rt_error(WRT_ERR_NOMEM, "out of memory planning the arena");
  }
  int* gid = root + nt;
  for (int i = 0; i < nt; i++) root[i] = i;
  for (int k = 0; k < m->n_ops; k++) {
    const wrt_op* op = &m->ops[k];
    if (op->type == OP_RESHAPE && !m->t[op->in[0]].is_const) root[find(root, op->out)] = find(root, op->in[0]);
  }
  int ng = 0;
  for (int i = 0; i < nt; i++) gid[i] = -1;
  for (int i = 0; i < nt; i++) {
    if (m->t[i].is_const) continue;
    int r = find(root, i);
    if (gid[r] < 0) {
      gid[r] = ng;
      g[ng++] = (group){0, 0, m->n_ops + 1, -2};
    }
    group* q = &g[gid[r]];
    uint64_t sz = (m->t[i].nbytes + 63) / 64 * 64;
    q->size = sz > q->size ? sz : q->size;
    if (!q->size) q->size = 64;
  }
  /* lifetimes: every use of every member */
#define TOUCH(ti, step)                                          \
  do {                                                           \
    int t_ = (ti);                                               \
    if (t_ >= 0 && !m->t[t_].is_const) {                         \
      group* q_ = &g[gid[find(root, t_)]];                       \
      if ((step) < q_->first) q_->first = (step);                \
      if ((step) > q_->last) q_->last = (step);                  \
    }                                                            \
  } while (0)
  for (int i = 0; i < m->n_inputs; i++) TOUCH(m->inputs[i], -1);
  for (int k = 0; k < m->n_ops; k++) {
    const wrt_op* op = &m->ops[k];
    for (int i = 0; i < op->n_in; i++) TOUCH(op->in[i], k);
    for (int i = 0; i < op->n_out; i++) TOUCH(op->outs[i], k);
  }
  for (int i = 0; i < m->n_outputs; i++) TOUCH(m->outputs[i], m->n_ops);
#undef TOUCH
  uint64_t end = 0;
  if (ng > MAX_PACKED_GROUPS) {
    for (int k = 0; k < ng; k++) {
      g[k].offset = end;
      end += g[k].size;
    }
  } else {
    int* idx = rt_alloc(sizeof(int) * 2 * (size_t)(ng ? ng : 1));
    if (!idx) {
      rt_free(root);
      rt_free(g);
      return rt_error(WRT_ERR_NOMEM, "out of memory planning the arena");
    }
    int* placed = idx + ng;
    for (int k = 0; k < ng; k++) idx[k] = k;
    sort_by_size(idx, g, ng);
    int np = 0;
    for (int a = 0; a < ng; a++) {
      group* q = &g[idx[a]];
      /* the busy intervals overlapping q's lifetime, by offset (placed is kept sorted by offset) */
      uint64_t best = UINT64_MAX, best_gap = UINT64_MAX, cursor = 0;
      for (int b = 0; b < np; b++) {
        const group* o = &g[placed[b]];
        if (o->first > q->last || q->first > o->last) continue;
        if (o->offset >= cursor && o->offset - cursor >= q->size && o->offset - cursor < best_gap) {
          best = cursor;
          best_gap = o->offset - cursor;
        }
        if (o->offset + o->size > cursor) cursor = o->offset + o->size;
      }
      q->offset = best != UINT64_MAX ? best : cursor;
      int at = np++; /* insert, sorted by offset */
      while (at > 0 && g[placed[at - 1]].offset > q->offset) {
        placed[at] = placed[at - 1];
        at--;
      }
      placed[at] = idx[a];
      if (q->offset + q->size > end) end = q->offset + q->size;
    }
    rt_free(idx);
  }
  for (int i = 0; i < nt; i++) offsets[i] = m->t[i].is_const ? -1 : (int64_t)g[gid[find(root, i)]].offset;
  *arena_size = end;
  rt_free(root);
  rt_free(g);
  return WRT_OK;
}
