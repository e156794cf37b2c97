/* What every op module and loader stage shares: model-owned allocation (counted against the model's budget and
 * zeroed), owned copies of constants, error messages that name the op, and names of ops and dtypes. */
#include "engine.h"
#define WRT_OPS_DEFINE_TABLES /* the generated op tables live here, at the bottom of the engine (after engine.h: */
#include "generated/wrt_ops.h" /* their options fields follow WRT_KEEP_OP) */

const wrt_opdef* wrt_opdef_of(int code) {
  return code > 0 && code < OP_MAX_CODE && WRT_OPDEFS[code].name ? &WRT_OPDEFS[code] : 0;
}

/* ops with a fused output clamp: their options table has act_min (python_ref/opdefs.py's ACT) */
int op_has_clamp(int type) {
  const wrt_optionsdef* od = &WRT_OPTIONS[WRT_OPDEFS[type].options];
  for (int k = 0; k < od->n_fields; k++)
    if (od->fields[k].attr == ATTR_act_min) return 1;
  return 0;
}

struct alloc_node {
  alloc_node* next;
};

/* Each model allocation carries a 64-byte link header, so release frees everything without bookkeeping arrays.
 * Every byte counts against the model's budget (mem_limit), which load() checks against the plan beforehand. */
void* m_alloc(wrt_model* m, uint64_t n) {
  if (n > m->mem_limit || m->mem_used > m->mem_limit - n) return 0;
#if !defined(__wasm__)
  uint64_t r = (n + WRT_ALIGN - 1) & ~(uint64_t)(WRT_ALIGN - 1);
  if (m->pool && r <= m->pool_cap - m->pool_used) { /* zeroed, freed with the pool */
    void* q = m->pool + m->pool_used;
    m->pool_used += r;
    m->mem_used += n;
    return q;
  }
#endif
  uint8_t* p = rt_calloc((size_t)n + WRT_ALIGN);
  if (!p) return 0;
  m->mem_used += n;
  alloc_node* a = (alloc_node*)(void*)p;
  a->next = m->allocs;
  m->allocs = a;
  return p + WRT_ALIGN;
}

/* zeroed memory the loader needs only for a while; counted against the budget while held, like model memory */
void* m_scratch(wrt_model* m, uint64_t n) {
  if (n > m->mem_limit || m->mem_used > m->mem_limit - n) return 0;
  void* p = rt_calloc((size_t)n);
  if (p) m->mem_used += n;
  return p;
}

void m_scratch_free(wrt_model* m, void* p, uint64_t n) {
  rt_free(p);
  m->mem_used -= n;
}

void* m_alloc_shaped(wrt_model* m, uint64_t n) {
  alloc_node* keep = m->allocs;
  m->allocs = m->shape_allocs;
  void* p = m_alloc(m, n);
  m->shape_allocs = m->allocs;
  m->allocs = keep;
  if (p) m->shape_used += n;
  return p;
}

void m_free_shaped(wrt_model* m) {
  for (alloc_node* a = m->shape_allocs; a;) {
    alloc_node* next = a->next;
    rt_free(a);
    a = next;
  }
  m->shape_allocs = 0;
  m->mem_used -= m->shape_used;
  m->shape_used = 0;
}

void m_free_all(wrt_model* m) {
  m_free_shaped(m);
#if !defined(__wasm__)
  rt_unmap(m->pool, (size_t)m->pool_cap);
  m->pool = 0;
#endif
  for (alloc_node* a = m->allocs; a;) {
    alloc_node* next = a->next;
    rt_free(a);
    a = next;
  }
  m->allocs = 0;
}

int m_alloc_fail(wrt_model* m, const wrt_op* op, const char* what, uint64_t bytes) {
  char msg[160];
  if (bytes > m->mem_limit || m->mem_used > m->mem_limit - bytes)
    rt_format(msg, sizeof msg, "%s needs %l bytes, beyond the model's memory limit of %l bytes (max_memory)", what,
              (int64_t)bytes, (int64_t)m->mem_limit);
  else
    rt_format(msg, sizeof msg, "out of memory: %s needs %l bytes", what, (int64_t)bytes);
  return op ? op_fail(op, WRT_ERR_NOMEM, "%s", msg) : rt_error(WRT_ERR_NOMEM, "%s", msg);
}

const void* const_data(wrt_model* m, int ti) {
  wrt_tensor* t = &m->t[ti];
  if (!t->data) {
    t->data = m_alloc(m, t->nbytes + 1);
    if (!t->data) return 0;
    if (t->nbytes) rt_copy(t->data, t->file_data, (size_t)t->nbytes);
    m->weights_bytes += (size_t)t->nbytes;
  }
  return t->data;
}

const char* op_name(const wrt_op* op) { return WRT_OPDEFS[op->type].name; }

/* the ops of a module built for given models (WRT_KEEP_ROWS of its wrt_trim.h); every op otherwise */
#ifdef WRT_TRIMMED
static const uint8_t KEPT[OP_MAX_CODE] = {WRT_KEEP_ROWS};
int op_kept(int type) { return type > 0 && type < OP_MAX_CODE && KEPT[type]; }
#else
int op_kept(int type) { return type > 0 && type < OP_MAX_CODE; }
#endif

int op_not_in_module(const wrt_model* m, const wrt_op* op) {
#ifdef WRT_TRIMMED
  return op_fail(op, WRT_ERR_UNSUPPORTED,
                 "%s on %s inputs is not in this module, which was built for other models (" WRT_TRIM_MODELS
                 ") by wasmrt build --for: load this model with the full modules or with modules built for it",
                 op_name(op), dtype_name(m->t[op->in[0]].dtype));
#else
  return op_fail(op, WRT_ERR_UNSUPPORTED, "%s on %s inputs is not implemented by the C engine", op_name(op),
                 dtype_name(m->t[op->in[0]].dtype));
#endif
}

static const char* const DTYPE_NAMES[] = {"float32", "float16", "int8", "uint8", "int32", "int64", "bool"};
const char* dtype_name(int d) { return d >= 0 && d < 7 ? DTYPE_NAMES[d] : "?"; }

void describe_op(char* out, size_t cap, const wrt_op* op) {
  rt_format(out, cap, "operator %d (%s '%s')", op->index, op_name(op), op->name);
}

int op_fail(const wrt_op* op, int code, const char* fmt, ...) {
  char msg[384], where[192];
  va_list ap;
  va_start(ap, fmt);
  rt_vformat(msg, sizeof msg, fmt, ap);
  va_end(ap);
  describe_op(where, sizeof where, op);
  return rt_error(code, "%s: %s", where, msg);
}

int op_threads(const wrt_model* m, const wrt_op* op) { return op->work >= PAR_MIN_WORK ? m->threads : 1; }

void op_parallel(const wrt_model* m, const wrt_op* op, size_t n, rt_task_fn fn, void* ctx) {
  rt_parallel(op_threads(m, op), n, fn, ctx);
}

typedef struct {
  row_range_fn fn;
  void* ctx;
  size_t rows, per;
} rows_job;

static void rows_task(void* ctx, size_t t) {
  const rows_job* j = ctx;
  size_t r0 = t * j->per, r1 = r0 + j->per < j->rows ? r0 + j->per : j->rows;
  j->fn(j->ctx, r0, r1);
}

void op_parallel_rows(const wrt_model* m, const wrt_op* op, size_t rows, row_range_fn fn, void* ctx) {
  if (!rows) return;
  rows_job j = {fn, ctx, rows, (rows + ROW_TASKS - 1) / ROW_TASKS};
  op_parallel(m, op, (rows + j.per - 1) / j.per, rows_task, &j);
}

void clamp_inplace(float* y, size_t n, const wrt_clamp* c) {
  for (size_t i = 0; i < n; i++) {
    float v = y[i] < c->min ? c->min : y[i];
    y[i] = v > c->max ? c->max : v;
  }
}
