/* wrt_load / wrt_run / wrt_release, the run loop and the tensor-info API: the top of the engine. A load verifies the
 * file (fb.c), reads it (model_read.c), checks every shape (shape_check.c), plans every op through the op table
 * (ops.c) and checks the plan against the model's limits, then allocates and prepares. */
#include "engine.h"

static int prepare_inputs(wrt_model* m, wrt_op* op) {
  /* first, every constant the op reads at run time gets an owned copy (so no kernel, and no indirection buffer
   * built below, ever sees a NULL tensor); the inputs it packs (plan: packed_in) are read from the file */
  for (int i = 0; i < op->n_in; i++) {
    int ti = op->in[i];
    if (ti >= 0 && m->t[ti].is_const && !(i < 16 && (op->packed_in >> i & 1)) && !const_data(m, ti))
      return m_alloc_fail(m, op, "a constant input", m->t[ti].nbytes);
  }
  return op->impl->prepare ? op->impl->prepare(m, op) : WRT_OK;
}

/* A dense path over block-sparse weights (plan: expand_in) reads their dense expansion, made here for the time of
 * its prepare (the plan counted it): the file's bytes are what every prepare reads. */
static int prepare_op(wrt_model* m, wrt_op* op) {
  const uint8_t* saved[8] = {0};
  void* dense[8] = {0};
  int r = WRT_OK;
  for (int i = 0; i < op->n_in && i < 8 && r == WRT_OK; i++) {
    if (!(WRT_KF_SPARSE || WRT_KF_QSPARSE) || !(op->expand_in >> i & 1)) continue; /* (none in a module without) */
    wrt_tensor* t = &m->t[op->in[i]];
    dense[i] = rt_alloc((size_t)t->nbytes + 1); /* float32 or int8 */
    if (!dense[i]) {
      r = m_alloc_fail(m, op, "expanding block-sparse weights", t->nbytes + 1);
      break;
    }
    sparse_expand(t, dense[i]);
    saved[i] = t->file_data;
    t->file_data = (const uint8_t*)dense[i];
  }
  if (r == WRT_OK) r = prepare_inputs(m, op);
  for (int i = 0; i < op->n_in && i < 8; i++)
    if (dense[i]) {
      m->t[op->in[i]].file_data = saved[i];
      rt_free(dense[i]);
    }
  return r;
}

/* The model being loaded or run on this thread: after a trap the host asks which op was at work. */
static WRT_TLS wrt_model* active;

const char* wrt_active_op(void) {
  static WRT_TLS char buf[192];
  buf[0] = 0;
  if (active && active->cur_op >= 0 && active->cur_op < active->n_ops)
    describe_op(buf, sizeof buf, &active->ops[active->cur_op]);
  return buf;
}

int run_ops(wrt_model* m, int begin, int end) {
  if (m->streaming) return rt_error(WRT_ERR_INPUT, "the model is still loading (wrt_load_next)");
  active = m;
  if (m->threads > 1) rt_pool_wake();
  for (int k = begin; k < end; k++) {
    wrt_op* op = &m->ops[k];
    if (op->skip) continue;
    m->cur_op = k;
    if (WRT_KF_CHAINS && op->chain > 1 && k + op->chain <= end && run_chain(m, k)) { /* the chain's ops, all in this range */
      k += op->chain - 1;
      continue;
    }
    int r = op->impl->run(m, op);
    if (r) return r;
  }
  m->cur_op = -1;
  active = 0;
  return WRT_OK;
}


/* Plan every op, then check the whole model's memory and work against its limits before allocating anything.
 * resize: the model's weights and constants are already in place; only what follows the shapes is counted. */
static int plan_model(wrt_model* m, uint64_t* need, int resize) {
  uint64_t bytes = 0, scratch = 0, heavy_work = 0;
  int heavy = -1;
  m->pad_floats = 16;
  m->work = 0;
  for (int k = 0; k < m->n_ops; k++) {
    wrt_op* op = &m->ops[k];
    if (!resize) choice_reset(op, k); /* also for an op skipped now, which a resize may bring in */
    op->skip = 1; /* nothing to compute when every output is empty */
    for (int k = 0; k < op->n_out; k++) op->skip &= m->t[op->outs[k]].count == 0;
    if (op->skip) continue;
    m->cur_op = k;
    op->impl = op_impl(op->type, dtype_class(m, op));
#ifdef WRT_TRIMMED
    if (!op->impl) return op_not_in_module(m, op); /* the full modules may hold it: say so */
#endif
    if (!op->impl)
      return op_fail(op, WRT_ERR_UNSUPPORTED, "%s inputs are not supported by the C engine (%s has no %s variant)",
                     dtype_name(m->t[op->in[0]].dtype), op_name(op), dtype_name(m->t[op->in[0]].dtype));
    int clamped = op_has_clamp(op->type);
    op->clamp.min = clamped ? op->a.act_min : -__builtin_inff();
    op->clamp.max = clamped ? op->a.act_max : __builtin_inff();
    wrt_cost c = {0, 0, 0, 1};
    int r = op->impl->plan(m, op, &c);
    if (r) return r;
    if (resize) c.bytes = 0; /* packed at load */
    c.bytes = c.bytes + c.shape_bytes < c.bytes ? UINT64_MAX : c.bytes + c.shape_bytes;
    op->work = c.work;
    /* constants the op reads at run time are copied once each (const_data) */
    for (int i = 0; i < op->n_in; i++) {
      wrt_tensor* t = op->in[i] >= 0 ? &m->t[op->in[i]] : 0;
      if (t && t->is_const && !(i < 16 && (op->packed_in >> i & 1)) && !t->data && !t->planned) {
        t->planned = 1;
        c.bytes += t->nbytes + 1;
      }
    }
    bytes = bytes + c.bytes < bytes ? UINT64_MAX : bytes + c.bytes;
    scratch = c.scratch > scratch ? c.scratch : scratch;
    m->work = m->work + c.work < m->work ? UINT64_MAX : m->work + c.work;
    if (c.work > heavy_work) { heavy_work = c.work; heavy = k; }
  }
  m->cur_op = -1;
  m->scratch_bytes_wide = scratch;
  uint64_t pad = 2 * (uint64_t)m->pad_floats * sizeof(float), arena = m->arena_size ? m->arena_size : 1;
  uint64_t total = m->mem_used - m->shape_used;
  const uint64_t parts[4] = {arena, pad, bytes, scratch};
  for (int i = 0; i < 4; i++) total = total + parts[i] < total ? UINT64_MAX : total + parts[i];
  if (total > m->mem_limit)
    return rt_error(WRT_ERR_NOMEM,
                    "the model needs %l bytes (arena %l, weights and tables %l, scratch %l, structure %l), beyond its "
                    "memory limit of %l bytes (max_memory)",
                    (int64_t)(total > INT64_MAX ? INT64_MAX : total), (int64_t)arena,
                    (int64_t)(bytes > INT64_MAX ? INT64_MAX : bytes), (int64_t)scratch, (int64_t)m->mem_used,
                    (int64_t)m->mem_limit);
  if (m->work > m->work_limit) {
    char where[160] = "";
    if (heavy >= 0) describe_op(where, sizeof where, &m->ops[heavy]);
    return rt_error(WRT_ERR_LIMIT,
                    "one run would take about %l operations (the largest, %s, %l), beyond the model's work limit of "
                    "%l (max_work)",
                    (int64_t)(m->work > INT64_MAX ? INT64_MAX : m->work), where, (int64_t)heavy_work,
                    (int64_t)m->work_limit);
  }
  plan_chains(m);
  *need = total;
  return WRT_OK;
}

/* What follows the tensor shapes, allocated as planned: the padding sources for indirection (as long as the widest
 * channel row a convolution or pool reads), the arena at the tensors' offsets, each op's tables, the scratch. */
static int allocate_shaped(wrt_model* m) {
  size_t pad = m->pad_floats;
  m->zeros = m_alloc_shaped(m, pad * sizeof(float));
  m->neg_inf = m_alloc_shaped(m, pad * sizeof(float));
  if (!m->zeros || !m->neg_inf) return m_alloc_fail(m, 0, "the padding buffers", 2 * pad * sizeof(float));
  for (size_t i = 0; i < pad; i++) m->neg_inf[i] = -__builtin_inff();
  m->arena = m_alloc_shaped(m, m->arena_size ? m->arena_size : 1);
  if (!m->arena) return m_alloc_fail(m, 0, "the arena", m->arena_size);
  for (int i = 0; i < m->n_tensors; i++)
    if (!m->t[i].is_const) m->t[i].data = m->arena + m->t[i].arena_offset;
  return WRT_OK;
}

static int allocate_scratch(wrt_model* m, uint64_t need) {
  m->cur_op = -1;
  m->scratch = 0;
  if (m->scratch_bytes_wide) {
    m->scratch = m_alloc_shaped(m, m->scratch_bytes_wide);
    if (!m->scratch) return m_alloc_fail(m, 0, "the scratch buffer", m->scratch_bytes_wide);
  }
  if (m->mem_used > need)
    return rt_error(WRT_ERR_UNSUPPORTED, "internal error: the model claimed %l bytes, %l were planned",
                    (int64_t)m->mem_used, (int64_t)need);
  return WRT_OK;
}

static int allocate_plan(wrt_model* m, uint64_t need) {
  int r = allocate_shaped(m);
  for (int k = 0; k < m->n_ops && !r; k++) {
    if (m->ops[k].skip) continue;
    m->cur_op = k;
    r = prepare_op(m, &m->ops[k]);
  }
  return r ? r : allocate_scratch(m, need);
}

/* Verify and read the file, check the shapes and plan against the limits: everything that reads the file's
 * structure. Constants are read from it too (checks, float16 widening, plans that look at values). */
static int load_structure(wrt_model* m, const void* data, size_t size, uint64_t* need) {
  if (!data && size) return rt_error(WRT_ERR_INPUT, "model data is NULL");
  fb_buf f = {(const uint8_t*)data, size};
  int r = fb_verify_model(f);
  if (!r) r = read_model(m, f);
  if (!r) r = check_shapes(m, 0);
  if (!r) r = check_aliasing(m); /* the file's plan, at the declared shapes */
  if (r) return r;
  m->tg = pick_target();
  if (!m->tg || !m->tg->gemm || !m->tg->igemm)
    return rt_error(WRT_ERR_UNSUPPORTED, "kernel target '%s' lacks GEMM kernels", m->tg ? m->tg->name : "none");
  if ((r = plan_model(m, need, 0))) return r;
#if !defined(__wasm__)
  /* Natively the planned memory is one mapping in huge pages where the OS gives them: MobileNetV2 ran 3-5% slower
   * from separate heap blocks, the engine created first in a process slowest. Not for a model whose inputs can be
   * resized: a resize re-makes the shaped blocks, which a pool cannot give back. */
  int sized_at_run_time = 0;
  for (int i = 0; i < m->n_inputs; i++) sized_at_run_time |= m->t[m->inputs[i]].dmin != 0;
  m->pool_cap = *need - m->mem_used + (uint64_t)(8 * m->n_ops + m->n_tensors + 8) * WRT_ALIGN; /* + rounding */
  m->pool = sized_at_run_time ? 0 : rt_map((size_t)m->pool_cap);
#endif
  return WRT_OK;
}

/* ---- streamed load: the file's bytes and the packed weights never held together ----------------------------------- */
static uint64_t stage_size(uint32_t n) { return ((uint64_t)n + WRT_ALIGN - 1) / WRT_ALIGN * WRT_ALIGN; }

/* the constants of op k still to fetch, and the bytes their staging takes */
static int wants_bytes(const wrt_model* m, const wrt_op* op, int i) {
  int ti = op->in[i];
  if (ti < 0 || !m->t[ti].is_const || !m->t[ti].file_len) return 0;
  for (int j = 0; j < i; j++)
    if (op->in[j] == ti) return 0; /* an input read twice is fetched once */
  return 1;
}

/* Before op k's first constant: its staging area, the arena's start when they fit (the arena is unused until the
 * first run, and cleared again once loaded), else a block of their own for the time of its prepare. */
static int stage_begin(wrt_model* m, const wrt_op* op) {
  uint64_t total = 0;
  m->stage_used = 0;
  if (m->file) return WRT_OK; /* read in place */
  for (int i = 0; i < op->n_in; i++)
    if (wants_bytes(m, op, i)) total += stage_size(m->t[op->in[i]].file_len);
  if (total <= m->arena_size) return WRT_OK;
  m->stage_own = total < SIZE_MAX ? rt_alloc((size_t)total) : 0;
  return m->stage_own ? WRT_OK : m_alloc_fail(m, op, "staging its constants", total);
}

static void stage_end(wrt_model* m, const wrt_op* op) {
  for (int i = 0; i < op->n_in; i++)
    if (op->in[i] >= 0 && m->t[op->in[i]].file_len) m->t[op->in[i]].file_data = 0;
  if (!m->stage_own && m->stage_used > m->stage_hi) m->stage_hi = m->stage_used;
  rt_free(m->stage_own);
  m->stage_own = 0;
}

int wrt_load_next(wrt_model* m, uintptr_t* want) {
  if (!m || !m->streaming) return -rt_error(WRT_ERR_INPUT, "wrt_load_next: no streamed load in progress");
  active = m;
  int r = WRT_OK;
  while (m->load_op < m->n_ops) {
    wrt_op* op = &m->ops[m->load_op];
    if (op->skip) {
      m->load_op++;
      continue;
    }
    m->cur_op = m->load_op;
    if (m->load_in == 0 && (r = stage_begin(m, op))) break;
    while (m->load_in < op->n_in) {
      int i = m->load_in++;
      if (!wants_bytes(m, op, i)) continue;
      wrt_tensor* t = &m->t[op->in[i]];
      if (m->file) {
        t->file_data = m->file + t->file_off;
        continue;
      }
      uint8_t* at = (m->stage_own ? m->stage_own : m->arena) + m->stage_used;
      m->stage_used += (size_t)stage_size(t->file_len);
      t->file_data = at;
      want[0] = (uintptr_t)at; /* an address: 32 bits in wasm32, where hosts read two uint32 */
      want[1] = (uintptr_t)t->file_off;
      active = 0;
      return (int)t->file_len;
    }
    r = prepare_op(m, op);
    stage_end(m, op);
    if (r) break;
    m->load_op++;
    m->load_in = 0;
  }
  if (!r) {
    rt_zero(m->arena, m->stage_hi); /* as every allocation: zero before the model's first run */
    r = allocate_scratch(m, m->load_need);
  }
  for (int i = 0; i < m->n_tensors; i++) m->t[i].file_data = 0;
  m->streaming = 0;
  m->file = 0; /* the caller may free the model bytes now */
  m->cur_op = -1;
  active = 0;
  return -r;
}

/* ---- run-time input sizes ----------------------------------------------------------------------------------- */
typedef struct {
  int32_t rank, dims[WRT_MAX_RANK];
  uint64_t count, nbytes;
  int64_t offset;
} saved_shape;

static void save_shapes(const wrt_model* m, saved_shape* s) {
  for (int i = 0; i < m->n_tensors; i++) {
    const wrt_tensor* t = &m->t[i];
    s[i].rank = t->rank;
    rt_copy(s[i].dims, t->dims, sizeof t->dims);
    s[i].count = t->count;
    s[i].nbytes = t->nbytes;
    s[i].offset = t->arena_offset;
  }
}

static void restore_shapes(wrt_model* m, const saved_shape* s) {
  for (int i = 0; i < m->n_tensors; i++) {
    wrt_tensor* t = &m->t[i];
    t->rank = s[i].rank;
    rt_copy(t->dims, s[i].dims, sizeof t->dims);
    t->count = s[i].count;
    t->nbytes = s[i].nbytes;
    t->arena_offset = s[i].offset;
  }
}

/* the new input shapes: within each dynamic input's bounds, equal to a fixed input's shape */
static int set_input_shapes(wrt_model* m, const int32_t* dims, int n) {
  int at = 0;
  for (int i = 0; i < m->n_inputs; i++) {
    wrt_tensor* t = &m->t[m->inputs[i]];
    if (at + t->rank > n)
      return rt_error(WRT_ERR_INPUT, "wrt_resize_inputs: %d dimensions given, the inputs have more", n);
    uint64_t count = 1;
    for (int d = 0; d < t->rank; d++) {
      int32_t v = dims[at + d];
      int32_t lo = t->dmin ? t->dmin[d] : t->dims[d], hi = t->dmax ? t->dmax[d] : t->dims[d];
      if (v < lo || v > hi) {
        if (lo == hi)
          return rt_error(WRT_ERR_INPUT, "input %d ('%s'): dimension %d is %d, the model fixes it at %d", i, t->name,
                          d, v, lo);
        return rt_error(WRT_ERR_INPUT, "input %d ('%s'): dimension %d is %d, outside the model's bounds %d..%d", i,
                        t->name, d, v, lo, hi);
      }
      count *= (uint64_t)v; /* <= 2^31 per dimension, at most 8 of them: checked below before it could wrap */
      if (count > ((uint64_t)1 << 31))
        return rt_error(WRT_ERR_INPUT, "input %d ('%s'): the shape would have over 2^31 elements", i, t->name);
    }
    for (int d = 0; d < t->rank; d++) t->dims[d] = dims[at + d];
    t->count = count;
    t->nbytes = count * t->esize;
    at += t->rank;
  }
  if (at != n) return rt_error(WRT_ERR_INPUT, "wrt_resize_inputs: %d dimensions given, the inputs have %d", n, at);
  return WRT_OK;
}

int wrt_resize_inputs(wrt_model* m, const int32_t* dims, int n) {
  if (!m) return rt_error(WRT_ERR_INPUT, "wrt_resize_inputs: model is NULL");
  if (m->streaming) return rt_error(WRT_ERR_INPUT, "the model is still loading (wrt_load_next)");
  if (m->broken) return rt_error(WRT_ERR_NOMEM, "the model could not be re-planned after its last resize; load it again");
#if !WRT_KF_RESIZE /* a module built for models of fixed input sizes leaves the re-planning (planner.c) out */
  (void)dims, (void)n;
  return rt_error(WRT_ERR_UNSUPPORTED, "wrt_resize_inputs: this module was built for models whose inputs have fixed "
                  "sizes (" WRT_TRIM_MODELS ") by wasmrt build --for");
#endif
  rt_clear_error();
  saved_shape* old = rt_alloc(sizeof(saved_shape) * (size_t)(m->n_tensors ? m->n_tensors : 1));
  int64_t* offsets = rt_alloc(sizeof(int64_t) * (size_t)(m->n_tensors ? m->n_tensors : 1));
  if (!old || !offsets) {
    rt_free(old);
    rt_free(offsets);
    return rt_error(WRT_ERR_NOMEM, "out of memory resizing the inputs");
  }
  save_shapes(m, old);
  size_t old_arena = m->arena_size;
  uint64_t arena = 0, need = 0;
  /* shapes, arena plan and costs first: on any error the model keeps its previous sizes and plan */
  int r = set_input_shapes(m, dims, n);
  if (!r) r = check_shapes(m, 1);
  if (!r) r = plan_arena(m, offsets, &arena);
  if (!r && arena > ((uint64_t)1 << 31))
    r = rt_error(WRT_ERR_NOMEM, "the resized model needs a %l-byte arena; the limit is 2 GiB", (int64_t)arena);
  if (!r) {
    for (int i = 0; i < m->n_tensors; i++) m->t[i].arena_offset = offsets[i];
    m->arena_size = (size_t)arena;
    r = plan_model(m, &need, 1);
  }
  if (r) {
    restore_shapes(m, old);
    m->arena_size = old_arena;
    uint64_t again;
    plan_model(m, &again, 1); /* the op plans of the previous sizes, which passed before */
    rt_free(old);
    rt_free(offsets);
    return r;
  }
  rt_free(old);
  rt_free(offsets);
  m_free_shaped(m);
  if ((r = allocate_plan(m, need))) m->broken = 1;
  return r;
}

int wrt_input_dim_min(const wrt_model* m, int i, int axis) {
  if (!m || i < 0 || i >= m->n_inputs) return -1;
  const wrt_tensor* t = &m->t[m->inputs[i]];
  return axis < 0 || axis >= t->rank ? -1 : t->dmin ? t->dmin[axis] : t->dims[axis];
}

int wrt_input_dim_max(const wrt_model* m, int i, int axis) {
  if (!m || i < 0 || i >= m->n_inputs) return -1;
  const wrt_tensor* t = &m->t[m->inputs[i]];
  return axis < 0 || axis >= t->rank ? -1 : t->dmax ? t->dmax[axis] : t->dims[axis];
}

static uint64_t limit_or_default(double v, uint64_t def, uint64_t cap) {
  if (!(v > 0)) return def; /* 0, negative or NaN: the default */
  return v >= (double)cap ? cap : (uint64_t)v;
}

static wrt_model* model_new(double max_memory, double max_work, int* err) {
  rt_clear_error();
  wrt_model* m = rt_calloc(sizeof(wrt_model));
  if (!m) {
    if (err) *err = rt_error(WRT_ERR_NOMEM, "out of memory");
    return 0;
  }
  /* a model's allocations stay addressable by size_t (4 GiB in wasm32, less the allocator's headers) */
  m->mem_limit = limit_or_default(max_memory, WRT_DEFAULT_MAX_MEMORY, (uint64_t)(SIZE_MAX >> 1) + ((uint64_t)1 << 30));
  m->work_limit = limit_or_default(max_work, WRT_DEFAULT_MAX_WORK, UINT64_MAX >> 1);
  m->cur_op = -1;
  m->threads = 1;
  return m;
}

/* streamed: the engine owns data and frees it once the structure is read; else the caller's bytes are read in place */
static wrt_model* load_begin(const void* data, size_t size, double max_memory, double max_work, int* err, int streamed) {
  wrt_model* m = model_new(max_memory, max_work, err);
  int r = WRT_ERR_NOMEM;
  if (m) {
    active = m;
    r = load_structure(m, data, size, &m->load_need);
    for (int i = 0; i < m->n_tensors; i++) m->t[i].file_data = m->t[i].file_len ? 0 : m->t[i].file_data;
    m->file = streamed ? 0 : (const uint8_t*)data;
  }
  if (streamed) rt_free((void*)data); /* before anything large is allocated: the packed weights take its place */
  if (!m) return 0;
  if (!r) r = allocate_shaped(m);
  m->streaming = !r;
  m->cur_op = -1;
  active = 0;
  if (err) *err = r;
  if (r) {
    wrt_release(m);
    return 0;
  }
  return m;
}

wrt_model* wrt_load_begin(void* data, size_t size, double max_memory, double max_work, int* err) {
  return load_begin(data, size, max_memory, max_work, err, 1);
}

wrt_model* wrt_load_with_limits(const void* data, size_t size, double max_memory, double max_work, int* err) {
  wrt_model* m = load_begin(data, size, max_memory, max_work, err, 0);
  uintptr_t want[2];
  int r = m ? wrt_load_next(m, want) : 0; /* reads in place: never asks */
  if (r) {
    if (err) *err = -r;
    wrt_release(m);
    return 0;
  }
  return m;
}

wrt_model* wrt_load(const void* data, size_t size, int* err) { return wrt_load_with_limits(data, size, 0, 0, err); }

void wrt_release(wrt_model* m) {
  if (!m) return;
  rt_free(m->stage_own);
  m_free_all(m);
  rt_free(m);
}

int wrt_run(wrt_model* m) {
  if (!m) return rt_error(WRT_ERR_INPUT, "wrt_run: model is NULL");
  if (m->broken) return rt_error(WRT_ERR_NOMEM, "the model could not be re-planned after its last resize; load it again");
  return run_ops(m, 0, m->n_ops);
}

size_t wrt_memory_size(const wrt_model* m) { return m ? (size_t)m->mem_used : 0; }

int wrt_set_threads(wrt_model* m, int n) {
  if (!m) return 0;
#if defined(WRT_THREADS)
  /* wasm: the host passes the Workers it started + 1; one that has not joined the pool yet only makes a run
     use fewer threads (rt_parallel counts the pool at run time), never other bytes */
  int most = 64;
  m->threads = n < 1 ? 1 : n > most ? most : n;
#else
  (void)n;
  m->threads = 1;
#endif
  return m->threads;
}
double wrt_work_estimate(const wrt_model* m) { return m ? (double)m->work : 0; }

int wrt_current_op(const wrt_model* m) { return m ? m->cur_op : -1; }

static const wrt_tensor* io(const wrt_model* m, int which, int i) {
  if (!m) return 0;
  if (which == 0 && i >= 0 && i < m->n_inputs) return &m->t[m->inputs[i]];
  if (which == 1 && i >= 0 && i < m->n_outputs) return &m->t[m->outputs[i]];
  return 0;
}

int wrt_num_inputs(const wrt_model* m) { return m ? m->n_inputs : 0; }
int wrt_num_outputs(const wrt_model* m) { return m ? m->n_outputs : 0; }
const char* wrt_tensor_name(const wrt_model* m, int which, int i) {
  const wrt_tensor* t = io(m, which, i);
  return t ? t->name : 0;
}
int wrt_tensor_rank(const wrt_model* m, int which, int i) {
  const wrt_tensor* t = io(m, which, i);
  return t ? t->rank : -1;
}
int wrt_tensor_dim(const wrt_model* m, int which, int i, int axis) {
  const wrt_tensor* t = io(m, which, i);
  return t && axis >= 0 && axis < t->rank ? t->dims[axis] : -1;
}
int wrt_tensor_dtype(const wrt_model* m, int which, int i) {
  const wrt_tensor* t = io(m, which, i);
  return t ? t->dtype : -1;
}
size_t wrt_tensor_bytes(const wrt_model* m, int which, int i) {
  const wrt_tensor* t = io(m, which, i);
  return t ? (size_t)t->nbytes : 0;
}
float* wrt_input_ptr(wrt_model* m, int i) {
  const wrt_tensor* t = io(m, 0, i);
  return t ? (float*)t->data : 0;
}
const float* wrt_output_ptr(const wrt_model* m, int i) {
  const wrt_tensor* t = io(m, 1, i);
  return t ? (const float*)t->data : 0;
}
size_t wrt_arena_size(const wrt_model* m) { return m ? m->arena_size : 0; }
size_t wrt_weights_size(const wrt_model* m) { return m ? m->weights_bytes : 0; }
const char* wrt_model_target(const wrt_model* m) { return m && m->tg ? m->tg->name : ""; }
const char* wrt_target_name(void) {
  const wrt_target* t = pick_target();
  return t ? t->name : "";
}
