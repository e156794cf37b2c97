/* The engine's model representation: verified tensors and ops, the prepared execution state, and the op modules. */
#ifndef WRT_ENGINE_H
#define WRT_ENGINE_H

#include "../include/wrt_kernels.h"
#include "fb.h"
#include "generated/wrt_ops.h" /* OP_* codes, wrt_opdef, options tables: from python_ref/opdefs.py */
#include "rt.h"

#define WRT_MAX_RANK 8
#define WRT_FORMAT_VERSION 1

typedef struct {
  const char* name;
  int32_t rank;
  int32_t dims[WRT_MAX_RANK];
  uint8_t dtype, esize, is_const;
  uint8_t planned;           /* load: its owned copy is already counted in the plan */
  uint64_t count, nbytes;
  int64_t arena_offset;      /* -1 for constants */
  const uint8_t* file_data;  /* constants: the bytes in the model file (valid during wrt_load only) */
  void* data;                /* at run time: arena address, or an owned copy of the constant (NULL if unused) */
} wrt_tensor;

typedef struct {
  int32_t strides[2], dilations[2], pads[4], groups, output_padding[2], kernel[2];
  uint8_t ceil_mode, count_include_pad, keepdims, mode, coord, nearest;
  float act_min, act_max, min, max, alpha, beta, value;
  int32_t axis, block;
  int32_t list[16]; /* axes (reductions), shape (RESHAPE), perm (TRANSPOSE), pads (PAD) */
  int n_list;
  int32_t starts[WRT_MAX_RANK], ends[WRT_MAX_RANK], steps[WRT_MAX_RANK];
  int32_t size[2];
  float scales[2];
} wrt_attrs;

typedef struct wrt_op {
  uint16_t type;
  const char* name;
  int index;
  int n_in;
  int32_t* in; /* -1 = absent optional input */
  int32_t out;
  wrt_attrs a;
  /* planned at load (plan_*: no allocation), then prepared (prepare_*) */
  int path;               /* which implementation runs it */
  uint8_t packed_in;      /* bit i: input i is consumed at load (packed); every other constant input is copied */
  uint8_t skip;           /* the output is empty: nothing to prepare or run */
  wrt_clamp clamp;
  float* packed;          /* packed weights (GEMM panels, igemm taps, dwconv tiles) */
  const float** ind;      /* indirection pointers */
  const wrt_dwconv_entry* dw;
  int64_t p[24];          /* op-specific integers computed at load */
} wrt_op;

typedef struct alloc_node alloc_node;

/* What an op claims, computed by its plan_* function before anything is allocated: model-owned bytes (packed
 * weights, indirection, tables), the shared scratch it needs, and the work of one run, so a hostile file is refused
 * before it can claim memory or time. Work is in units of one multiply-add of a SIMD GEMM (tens of picoseconds
 * natively); the WORK_* weights below scale other kinds of work to it (measured on the bundled models). */
typedef struct {
  uint64_t bytes, scratch, work;
} wrt_cost;

/* Resource limits of one model (wrt_load_with_limits); 0 selects the default */
#define WRT_DEFAULT_MAX_MEMORY ((uint64_t)1 << 30)
#define WRT_DEFAULT_MAX_WORK ((uint64_t)1 << 33)
#define WORK_DW 2       /* a depthwise or pooling multiply-add (per tap and channel) */
#define WORK_VEC 4      /* an element of a vectorized element-wise op */
#define WORK_COPY 8     /* an element moved by a data-movement op */
#define WORK_SCALAR 32  /* an element of a scalar loop (in double: softmax sums, bilinear resize, reductions) */
#define WORK_LIBM 256   /* an element through exp/pow in double */

struct wrt_model {
  const wrt_target* tg;
  int n_tensors, n_ops, n_inputs, n_outputs;
  wrt_tensor* t;
  wrt_op* ops;
  int32_t *inputs, *outputs;
  uint8_t* arena;
  size_t arena_size;
  float* scratch;          /* per-op temporary memory, shared by all ops */
  uint64_t scratch_bytes_wide;
  float *zeros, *neg_inf;  /* padding sources for indirection: >= pad_floats each */
  size_t pad_floats;
  size_t weights_bytes;
  alloc_node* allocs;      /* every allocation of this model, freed by wrt_release */
  uint64_t mem_used, mem_limit; /* bytes allocated for this model, and its budget */
  uint64_t work, work_limit;    /* estimated work of one run, and its budget */
  int cur_op;              /* the op being prepared or run (-1: none), for error reports after a trap */
};

/* model-owned allocation (freed with the model); NULL past the model's memory budget or when out of memory.
 * Sizes are computed in 64 bits, so nothing wraps in wasm32. */
void* m_alloc(wrt_model* m, uint64_t n);
void m_free_all(wrt_model* m);
int m_alloc_fail(wrt_model* m, const wrt_op* op, const char* what, uint64_t bytes); /* the error for a NULL m_alloc */

/* stages of wrt_load */
int read_model(wrt_model* m, fb_buf f);        /* model_read.c: tensors, ops, attributes, graph checks */
int check_shapes(wrt_model* m);                /* shape_check.c: every op's output shape/dtype as python_ref infers */
int run_op(wrt_model* m, wrt_op* op);          /* model.c */
int run_ops(wrt_model* m, int begin, int end); /* model.c: ops [begin, end), skipping those with empty outputs */
const char* op_kernel_name(const wrt_op* op);  /* model.c: the implementation path, for profiles */
const char* conv_kernel_name(const wrt_op* op); /* conv.c */

/* helpers shared by the op modules */
const char* op_name(const wrt_op* op);  /* "CONV_2D" */
int op_fail(const wrt_op* op, int code, const char* fmt, ...); /* "operator 3 (CONV_2D 'conv1'): ..." */
const void* const_data(wrt_model* m, int ti); /* owned, aligned copy of a constant (made on first use) */
static inline float* tf(wrt_model* m, int ti) { return (float*)m->t[ti].data; }
static inline int is_unclamped(const wrt_clamp* c) { return c->min == -__builtin_inff() && c->max == __builtin_inff(); }
void clamp_inplace(float* y, size_t n, const wrt_clamp* c);

/* op modules, three stages: plan_* at load chooses the path and adds the op's cost (nothing allocated);
 * prepare_* at load packs weights and builds indirection and tables; run_* per inference. */
int plan_conv(wrt_model* m, wrt_op* op, wrt_cost* c);
int prepare_conv(wrt_model* m, wrt_op* op);
int run_conv(wrt_model* m, wrt_op* op);
int plan_conv_transpose(wrt_model* m, wrt_op* op, wrt_cost* c);
int prepare_conv_transpose(wrt_model* m, wrt_op* op);
int run_conv_transpose(wrt_model* m, wrt_op* op);
int plan_dense(wrt_model* m, wrt_op* op, wrt_cost* c); /* FULLY_CONNECTED, MATMUL */
int prepare_dense(wrt_model* m, wrt_op* op);
int run_dense(wrt_model* m, wrt_op* op);
int plan_pool(wrt_model* m, wrt_op* op, wrt_cost* c);
int prepare_pool(wrt_model* m, wrt_op* op);
int run_pool(wrt_model* m, wrt_op* op);
void plan_elementwise(wrt_model* m, wrt_op* op, wrt_cost* c);
int run_elementwise(wrt_model* m, wrt_op* op);  /* binary, unary, PRELU, POW */
void plan_reduce(wrt_model* m, wrt_op* op, wrt_cost* c);
int run_reduce(wrt_model* m, wrt_op* op);       /* MEAN, REDUCE_MAX, REDUCE_SUM, SOFTMAX */
int plan_data(wrt_model* m, wrt_op* op, wrt_cost* c);
int prepare_data(wrt_model* m, wrt_op* op);
int run_data(wrt_model* m, wrt_op* op);         /* data movement ops */

/* cost helpers */
static inline uint64_t ptr_bytes(uint64_t n) { return n * (uint64_t)sizeof(void*); }
static inline uint64_t sat_mul(uint64_t a, uint64_t b) { /* saturating: costs of hostile shapes never wrap */
  return (double)a * (double)b >= 1.8e19 ? UINT64_MAX : a * b; /* (a 128-bit check would need libcalls in wasm) */
}

/* GEMM packing into panels of NR columns: w(k, j) read via strides (in floats) from src; bias may be NULL */
uint64_t gemm_packed_floats(const wrt_target* tg, uint64_t n, uint64_t kc_total);
size_t gemm_panel_width(const wrt_target* tg, size_t nc); /* NR, or NR/2 for a narrow last panel */
void pack_gemm(const wrt_target* tg, size_t n, size_t k, const float* w, size_t w_k_stride, size_t w_n_stride,
               const float* bias, float* out);
void run_gemm(const wrt_target* tg, size_t m, size_t n, size_t k, const float* a, size_t a_stride_bytes,
              const float* packed, float* c, size_t c_stride_bytes, const wrt_clamp* clamp);

const wrt_target* pick_target(void);

#endif
