/* wrt_load / wrt_run / wrt_release and the tensor-info API. */
#include "engine.h"

struct alloc_node {
  alloc_node* next;
};

/* Each model allocation carries a 64-byte link header, so release frees everything without bookkeeping arrays. */
void* m_alloc(wrt_model* m, uint64_t n) {
  if (n > ((uint64_t)1 << 31) - WRT_ALIGN) return 0;
  uint8_t* p = rt_alloc((size_t)n + WRT_ALIGN);
  if (!p) return 0;
  alloc_node* a = (alloc_node*)(void*)p;
  a->next = m->allocs;
  m->allocs = a;
  return p + WRT_ALIGN;
}

void m_free_all(wrt_model* m) {
  for (alloc_node* a = m->allocs; a;) {
    alloc_node* next = a->next;
    rt_free(a);
    a = next;
  }
  m->allocs = 0;
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

void need_scratch(wrt_model* m, uint64_t bytes) {
  if (bytes > ((uint64_t)1 << 31)) bytes = (uint64_t)1 << 32; /* m_alloc refuses it: an out-of-memory error */
  if (bytes > m->scratch_bytes_wide) m->scratch_bytes_wide = bytes;
}

static int prepare_op(wrt_model* m, wrt_op* op) {
  op->clamp.min = -__builtin_inff();
  op->clamp.max = __builtin_inff();
  switch (op->type) {
    case OP_CONV_2D: case OP_CONV_TRANSPOSE_2D: case OP_FULLY_CONNECTED: case OP_ADD: case OP_SUB: case OP_MUL:
    case OP_DIV: case OP_MAXIMUM: case OP_MINIMUM: case OP_MAX_POOL_2D: case OP_AVERAGE_POOL_2D: case OP_CONCATENATION:
      op->clamp.min = op->a.act_min;
      op->clamp.max = op->a.act_max;
      break;
    default: break;
  }
  switch (op->type) {
    case OP_CONV_2D: return prepare_conv(m, op);
    case OP_CONV_TRANSPOSE_2D: return prepare_conv_transpose(m, op);
    case OP_FULLY_CONNECTED: case OP_MATMUL:
      if (m->t[op->in[1]].dims[m->t[op->in[1]].rank - 1 - (op->type == OP_MATMUL && m->t[op->in[1]].rank > 1)] == 0)
        return op_fail(op, WRT_ERR_UNSUPPORTED, "an empty reduction dimension is not supported");
      return prepare_dense(m, op);
    case OP_MAX_POOL_2D: case OP_AVERAGE_POOL_2D: return prepare_pool(m, op);
    case OP_MEAN: case OP_REDUCE_MAX: case OP_REDUCE_SUM: case OP_SOFTMAX: return prepare_reduce(m, op);
    case OP_RESHAPE: case OP_TRANSPOSE: case OP_CONCATENATION: case OP_SLICE: case OP_PAD: case OP_RESIZE:
    case OP_DEPTH_TO_SPACE: case OP_GATHER:
      return prepare_data(m, op);
    default: /* element-wise: constant operands are read directly */
      for (int i = 0; i < op->n_in; i++)
        if (op->in[i] >= 0 && m->t[op->in[i]].is_const && !const_data(m, op->in[i]))
          return rt_error(WRT_ERR_NOMEM, "out of memory");
      return WRT_OK;
  }
}

const char* op_kernel_name(const wrt_op* op) {
  switch (op->type) {
    case OP_CONV_2D: return conv_kernel_name(op);
    case OP_CONV_TRANSPOSE_2D: return "gemm + col2im";
    case OP_FULLY_CONNECTED: case OP_MATMUL: return op->packed ? "gemm" : "pack + gemm";
    case OP_MAX_POOL_2D: case OP_AVERAGE_POOL_2D: return "pool";
    case OP_MEAN: case OP_REDUCE_MAX: case OP_REDUCE_SUM: case OP_SOFTMAX: return "reduce (double)";
    case OP_RESHAPE: case OP_TRANSPOSE: case OP_CONCATENATION: case OP_SLICE: case OP_PAD: case OP_RESIZE:
    case OP_DEPTH_TO_SPACE: case OP_GATHER:
      return "copy";
    default: return "elementwise";
  }
}

int run_op(wrt_model* m, wrt_op* op) {
  switch (op->type) {
    case OP_CONV_2D: return run_conv(m, op);
    case OP_CONV_TRANSPOSE_2D: return run_conv_transpose(m, op);
    case OP_FULLY_CONNECTED: case OP_MATMUL: return run_dense(m, op);
    case OP_MAX_POOL_2D: case OP_AVERAGE_POOL_2D: return run_pool(m, op);
    case OP_MEAN: case OP_REDUCE_MAX: case OP_REDUCE_SUM: case OP_SOFTMAX: return run_reduce(m, op);
    case OP_RESHAPE: case OP_TRANSPOSE: case OP_CONCATENATION: case OP_SLICE: case OP_PAD: case OP_RESIZE:
    case OP_DEPTH_TO_SPACE: case OP_GATHER:
      return run_data(m, op);
    default: return run_elementwise(m, op);
  }
}

static int load(wrt_model* m, const void* data, size_t size) {
  if (!data && size) return rt_error(WRT_ERR_INPUT, "model data is NULL");
  fb_buf f = {(const uint8_t*)data, size};
  int r = fb_verify_model(f);
  if (!r) r = read_model(m, f);
  if (!r) r = check_shapes(m);
  if (r) return r;
  m->tg = pick_target();
  if (!m->tg || !m->tg->gemm || !m->tg->igemm)
    return rt_error(WRT_ERR_UNSUPPORTED, "kernel target '%s' lacks GEMM kernels", m->tg ? m->tg->name : "none");
  /* padding sources for indirection: as long as the widest channel row of any activation */
  size_t pad = 16;
  for (int i = 0; i < m->n_tensors; i++) {
    const wrt_tensor* t = &m->t[i];
    size_t c = t->rank ? (size_t)t->dims[t->rank - 1] : 1;
    if (!t->is_const && c + 16 > pad) pad = c + 16;
  }
  m->pad_floats = pad;
  m->zeros = m_alloc(m, pad * sizeof(float));
  m->neg_inf = m_alloc(m, pad * sizeof(float));
  m->arena = m_alloc(m, m->arena_size ? m->arena_size : 1);
  if (!m->zeros || !m->neg_inf || !m->arena)
    return rt_error(WRT_ERR_NOMEM, "out of memory allocating the %z-byte arena", m->arena_size);
  for (size_t i = 0; i < pad; i++) {
    m->zeros[i] = 0.0f;
    m->neg_inf[i] = -__builtin_inff();
  }
  /* the arena is not cleared: every op writes its whole output before anyone reads it */
  for (int i = 0; i < m->n_tensors; i++)
    if (!m->t[i].is_const) m->t[i].data = m->arena + m->t[i].arena_offset;
  for (int k = 0; k < m->n_ops; k++)
    if ((r = prepare_op(m, &m->ops[k]))) return r;
  if (m->scratch_bytes_wide) {
    m->scratch = m_alloc(m, m->scratch_bytes_wide);
    if (!m->scratch)
      return rt_error(WRT_ERR_NOMEM, "out of memory allocating %l bytes of scratch", (int64_t)m->scratch_bytes_wide);
  }
  for (int i = 0; i < m->n_tensors; i++) m->t[i].file_data = 0; /* the caller may free the model bytes now */
  return WRT_OK;
}

wrt_model* wrt_load(const void* data, size_t size, int* err) {
  rt_clear_error();
  wrt_model* m = rt_alloc(sizeof(wrt_model));
  if (!m) {
    if (err) *err = rt_error(WRT_ERR_NOMEM, "out of memory");
    return 0;
  }
  rt_zero(m, sizeof *m);
  int r = load(m, data, size);
  if (err) *err = r;
  if (r) {
    wrt_release(m);
    return 0;
  }
  return m;
}

void wrt_release(wrt_model* m) {
  if (!m) return;
  m_free_all(m);
  rt_free(m);
}

int wrt_run(wrt_model* m) {
  if (!m) return rt_error(WRT_ERR_INPUT, "wrt_run: model is NULL");
  return wrt_run_ops(m, 0, m->n_ops);
}

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
