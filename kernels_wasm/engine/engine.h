/* The engine's model representation and every internal prototype, by layer (each layer calls only those below):
 *   model.c                         wrt_load / wrt_run / wrt_release, the tensor-info API, the run loop
 *   ops.c                           the op table: {plan, prepare, run, kernel} per (op type, dtype class)
 *   model_read.c, shape_check.c     loader stages: verified tensors/ops/attributes, inferred shapes
 *   conv.c, pool.c, gemm.c, ...     op modules (conv.c and pool.c use gemm.c and indirection.c; conv.c winograd.c)
 *   sparse.c                        the block-sparse variant of CONV_2D and FULLY_CONNECTED
 *   qsparse.c                       its int8 variant (qconv.c hands it the layers qsparse_chosen picks)
 *   choice.c                        per-op algorithm candidates, forced choices, the measuring procedure's decision
 *   support.c, rt_*.c, fb.c         allocation, constants, errors and names; libc replacements; FlatBuffers
 */
#ifndef WRT_ENGINE_H
#define WRT_ENGINE_H

#include "../include/wrt_kernels.h"
#include "fb.h"
#include "generated/wrt_ops.h" /* OP_* codes, wrt_opdef, options tables: from python_ref/opdefs.py */
#include "rt.h"

#define WRT_MAX_RANK 8
#define WRT_FORMAT_VERSION 1
/* code whose work is done elsewhere (load-time planning and packing, dispatch around the kernels) in files built
 * for speed: compiled for size in the wasm modules (their size budget), as the -Oz files are */
#if defined(__wasm__) && defined(__clang__)
#define WRT_FOR_SIZE __attribute__((minsize))
#else
#define WRT_FOR_SIZE
#endif

/* format limits (python_ref/wrt_file.py has the same) */
#define WRT_MAX_TENSORS (1 << 20)
#define WRT_MAX_OPS (1 << 20)
#define WRT_MAX_OP_INPUTS (1 << 24)   /* all operators' inputs and outputs together */
#define WRT_MAX_NAME_BYTES (1 << 26)  /* all tensor and operator names together, counting repeats */
#define WRT_MAX_QUANT_VALUES (1 << 24) /* all tensors' quantization scales and zero points together */

/* Quantization parameters of an int8/uint8/int32 tensor (python_ref/quant.py QuantParams): real = scale * (q - zp),
 * per tensor (axis -1, n = 1) or per index of `axis`. Verified by read_quant (qrules.c). */
typedef struct {
  int32_t n, axis;
  float s;            /* scale[0]: the scale of a per-tensor quantized tensor */
  int32_t z;          /* zp[0] */
  const float* scale; /* n values */
  const int32_t* zp;  /* n values (a shared or absent zero point expanded) */
} wrt_quant;
#define WRT_MAX_OP_OUTPUTS 4096       /* outputs of one op (SPLIT) */
#define WRT_MAX_ALIAS_CHECKS (1 << 26) /* output-vs-input/output comparisons of the memory plan check */
#define WRT_MAX_LONG_LIST 4096        /* values of a long list attribute */
#define WRT_MAX_ACTS 6                /* activations of a recurrent op: 3 per direction */
#define WRT_MAX_SPARSE_BYTES ((uint64_t)1 << 30) /* all block-sparse constants expanded (float32), python_ref/sparse.py */

typedef struct {
  const char* name;
  int32_t rank;
  int32_t dims[WRT_MAX_RANK];
  uint8_t dtype, esize, is_const;
  uint8_t planned;           /* load: its owned copy is already counted in the plan */
  uint64_t count, nbytes;
  int64_t arena_offset;      /* -1 for constants */
  const wrt_quant* q;        /* quantization parameters, NULL when the tensor has none */
  const uint8_t* file_data;  /* constants: the bytes in the model file (valid during wrt_load only) */
  uint32_t file_off, file_len; /* constants read from the file: where their bytes are (a streamed load fetches them
                                * again when their op is prepared); file_len 0: none, or an owned widened copy */
  const int32_t *dmin, *dmax; /* graph inputs sized at run time: the bounds of each dimension (else NULL) */
  /* block-sparse constants (python_ref/sparse.py): file_data holds the stored blocks' values (float32), sp_starts and
   * sp_cols the row starts and columns (little-endian int32, copied from the file: prepare reads them) */
  uint8_t sparse;
  uint32_t sp_blocks;
  const uint8_t *sp_starts, *sp_cols;
  void* data;                /* at run time: arena address, or an owned copy of the constant (NULL if unused) */
} wrt_tensor;

typedef struct {
  int32_t strides[2], dilations[2], pads[4], groups, output_padding[2], kernel[2];
  uint8_t ceil_mode, count_include_pad, keepdims, mode, coord, nearest, qdtype; /* qdtype: QUANTIZE's output type */
  uint8_t float_output; /* FULLY_CONNECTED: int8 in, the accumulator dequantized to float32 out */
  float act_min, act_max, min, max, alpha, beta, value;
  int32_t axis, block;
  int32_t list[16]; /* axes (reductions), shape (RESHAPE), perm (TRANSPOSE), pads (PAD) */
  int n_list;
  int32_t starts[WRT_MAX_RANK], ends[WRT_MAX_RANK], steps[WRT_MAX_RANK];
  int32_t size[2];
  float scales[2];
  float epsilon, clip, cell_clip, proj_clip, target_rotation, scale;
  uint8_t to, reduction, direction, coupling, linear_before_reset, align_corners;
  int32_t dimensions, rotation_idx[2];
  int32_t acts[WRT_MAX_ACTS]; /* recurrent ops: activations, with their alpha and beta */
  float alphas[WRT_MAX_ACTS], betas[WRT_MAX_ACTS];
  int n_acts, n_alphas, n_betas;
  const int32_t* ints; /* a long list: SPLIT sizes, LANDMARKS_TO_TRANSFORM_MATRIX subset (model-owned) */
  int n_ints;
} wrt_attrs;

/* ---- per-op plans: what plan_* decides at load, one struct per op family ------------------------------------- */
typedef struct {
  int64_t n, h, w, c, oh, ow, co, kh, kw, groups, ks; /* ks = kh * kw taps */
  int64_t pix;      /* GEMM rows: output pixels (CONV_2D) or input pixels (CONV_TRANSPOSE_2D) */
  int64_t gpack;    /* packed floats per group */
  int64_t chunk;    /* CONV_TRANSPOSE_2D: GEMM rows per col2im pass */
  float* packed;    /* packed weights (GEMM panels, igemm taps, dwconv tiles) */
  const float** ind; /* indirection pointers into the arena (igemm, dwconv) */
  const wrt_dwconv_entry* dw;
  int64_t tile;     /* Winograd: output tile size m (2 or 4); chunk holds its tiles per block, gpack per position */
} wrt_conv_plan;

typedef struct {
  int64_t n, k, m;  /* GEMM: m rows of k, n columns */
  int rbatch;       /* MATMUL: output batch axes */
  int64_t bdims[WRT_MAX_RANK], astride[WRT_MAX_RANK]; /* their sizes, and a's stride (in matrices) along each */
  float* packed;
} wrt_dense_plan;

typedef struct {
  const float** ind; /* per output pixel, kernel taps pointers */
} wrt_pool_plan;

typedef struct {
  int32_t i0, i1;
  double f;
} wrt_lerp;

typedef struct {
  const wrt_lerp *h, *w; /* RESIZE: per output row / column, the input indices and weight */
  const int32_t* maps;   /* PAD: per output axis, the source index of each position (-1: the pad value) */
} wrt_data_plan;

/* int8 (QS8) ops: what their plan decided (qconv.c, qelt.c, qpool.c, qdata.c; python_ref/qops.py) */
typedef struct {
  int64_t n, h, w, c, oh, ow, co, kh, kw, groups, ks, pix; /* convolutions: as wrt_conv_plan */
  int64_t gpack;           /* packed bytes per group */
  uint8_t* packed;         /* weights packed for the kernels */
  const int8_t** ind;      /* indirection into the arena (igemm, depthwise, pools) */
  const wrt_qdwconv_entry* dw;
  int8_t* pad;             /* a row of the input's zero point: where padding taps read */
  wrt_qparams rq;          /* output requantization */
  int32_t lo, hi;          /* integer output bounds */
  int32_t za, zb, zw;      /* input zero points (zw: per-tensor weights) */
  float ma, mb;            /* float multipliers */
  wrt_qadd_params add;     /* ADD/SUB fixed point */
  const float* mult;       /* per-channel multipliers (as many as the channels rounded up to 4, zeros after) */
  int32_t *sp_nnz, *sp_offs; /* block-sparse weights (qsparse.c): pairs per block row, their column offsets */
  const int32_t* bias;     /* generic convolution: biases; PRELU: slope minus its zero point */
  uint8_t* table;          /* 256-byte tables indexed by the raw input byte (one per input for CONCATENATION) */
  const void* aux;         /* op-specific: DEQUANTIZE float table, RESIZE weights, ... */
} wrt_qplan;
typedef struct {
  int64_t t, b, i, d, h, p; /* steps, batch, input size, directions, hidden size, output (projection) size */
  int gates, n_acts;        /* per direction */
} wrt_rnn_dims;

typedef struct {
  wrt_rnn_dims g;
  float* w[2];    /* per direction, packed input weights (gates * H columns) with the biases folded in */
  float* r[2];    /* packed recurrence: all gates (LSTM, RNN) or z and r (GRU) */
  float* rh[2];   /* GRU: the h gate's recurrence (bias Rbh when linear_before_reset) */
  float* proj[2]; /* LSTM projection, with its bias */
  float* bias[2]; /* LSTM with layer norm: the gate biases, added after the normalization */
} wrt_rnn_plan;
typedef struct {
  int64_t pix, k, n, kc, ks; /* GEMM rows (output pixels), columns (ks taps x kc channels), outputs */
  int mode;                  /* how a tile's input is read (sparse.c) */
  int64_t col_bytes;         /* bytes between the columns of the input the offsets were made for */
  int32_t *nnz, *offs;       /* stored blocks per block row; byte offset of each block's column in the input tile */
  float* w;                  /* per block row: 4 biases, then the 4 weights of each stored block */
  int64_t nz;                /* SP_UNSTRUCT: the non-zero weights (nnz, offs and w are per channel, 1 weight each) */
  const float** ind;         /* convolutions that gather rows: per tile of spmm_mr pixels, ks*mr tap pointers */
} wrt_sparse_plan;

typedef struct wrt_op_impl wrt_op_impl;

typedef struct wrt_op {
  uint16_t type;
  const char* name;
  int index;
  int n_in;
  int32_t* in; /* -1 = absent optional input */
  int32_t out;   /* the first output (most ops have one) */
  int n_out;
  int32_t* outs; /* every output */
  wrt_attrs a;
  /* planned at load (plan: no allocation), then prepared */
  const wrt_op_impl* impl; /* ops.c: the implementation for this op type and dtype class */
  int path;                /* which path of it runs (the module's own enum) */
  uint16_t packed_in;      /* bit i: input i is consumed at load (packed); every other constant input is copied */
  uint8_t skip;            /* the output is empty: nothing to prepare or run */
  uint8_t expand_in;       /* bit i: input i is block-sparse and expanded to dense for a dense path's prepare */
  uint8_t sparse_path;     /* block-sparse weights: 0 not planned yet, 1 the sparse kernels, 2 dense (kept on resize) */
  uint8_t cands, algo;     /* choice.c: the WRT_CH_* candidates its plan offered, and the one it took */
  int8_t force;            /* the candidate index wrt_set_choices forced at load, or -1: the rules */
  uint8_t chain;           /* elementwise.c: this op and the chain-1 after it run as one element-wise chain (>1) */
  int8_t chain_buf;        /* in a chain: the block buffer its output lives in, or -1 (the last op: its tensor) */
  uint64_t work;           /* its cost's work: small ops run on one thread */
  wrt_clamp clamp;
  union {
    wrt_conv_plan conv;
    wrt_dense_plan dense;
    wrt_pool_plan pool;
    wrt_data_plan data;
    wrt_qplan q;
    wrt_rnn_plan rnn;
    wrt_sparse_plan sparse;
  } u;
} wrt_op;

typedef struct alloc_node alloc_node;

/* What an op claims, computed by its plan function before anything is allocated: model-owned bytes (packed
 * weights, indirection, tables), the shared scratch it needs, and the work of one run, so a hostile file is refused
 * before it can claim memory or time. Work is in units of one multiply-add of a SIMD GEMM (tens of picoseconds
 * natively); the WORK_* weights below scale other kinds of work to it (measured on the bundled models). */
typedef struct {
  uint64_t bytes;       /* what the op keeps for the model's life (packed weights) */
  uint64_t shape_bytes; /* what follows the tensor shapes (indirection, tables): re-made when inputs are resized */
  uint64_t scratch, work;
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
  void* scratch;           /* per-op temporary memory, shared by all ops */
  uint64_t scratch_bytes_wide;
  float *zeros, *neg_inf;  /* padding sources for indirection: >= pad_floats each */
  size_t pad_floats;
  size_t weights_bytes;
  alloc_node* allocs;      /* every allocation of this model, freed by wrt_release */
  alloc_node* shape_allocs; /* those that follow the tensor shapes (m_alloc_shaped): re-made by a resize */
  uint64_t shape_used;     /* their bytes (part of mem_used) */
  uint8_t dynamic;         /* some input has run-time dimensions */
  uint8_t broken;          /* a resize failed after freeing the old plan: the model refuses to run */
  uint64_t mem_used, mem_limit; /* bytes allocated for this model, and its budget */
  uint8_t* pool;                /* natively: the planned memory in one mapping (huge pages), cut up by m_alloc */
  uint64_t pool_cap, pool_used;
  uint64_t work, work_limit;    /* estimated work of one run, and its budget */
  int cur_op;              /* the op being prepared or run (-1: none), for error reports after a trap */
  int threads;             /* threads its runs may use (wrt_set_threads), 1 by default */
  /* a streamed load (wrt_load_begin/wrt_load_next): the op being prepared and its next input; its constants are
   * staged at the start of the arena (unused until the first run) or, when they exceed it, in stage_own */
  uint8_t streaming;
  const uint8_t* file;     /* a load from the caller's bytes (wrt_load_with_limits): read in place, not fetched */
  int load_op, load_in;
  uint64_t load_need;      /* what the plan allows the model to claim */
  size_t stage_used, stage_hi;
  uint8_t* stage_own;
};

/* ---- the op table (ops.c) --------------------------------------------------------------------------------------- */
/* Dtype classes: an op's implementation is chosen by its type and by the class of its first input; float32 ops whose
 * weights (input 1) are block-sparse form their own class. */
enum { WRT_DC_F32, WRT_DC_QS8, WRT_DC_OTHER, WRT_DC_F32_SPARSE, WRT_DC_COUNT };
/* A module built for given models (wasmrt build --for) is compiled with its generated wrt_trim.h, which defines
 * WRT_TRIMMED, the models' names (WRT_TRIM_MODELS), the kernel families it holds (WRT_KF_*) and, for every op, the
 * dtype classes it keeps (WRT_KEEP_<OP>, a mask of WRT_DC_BIT): only those rows of the op table are linked in.
 * Without it (the full modules and the native builds) every op is kept. */
#define WRT_DC_BIT(c) (1u << WRT_DC_##c)
#ifdef WRT_TRIMMED
#define WRT_KEEP(op, c) ((WRT_KEEP_##op >> WRT_DC_##c) & 1u)
#define WRT_KEEP_OP(op) (WRT_KEEP_##op != 0)
#else
#define WRT_KEEP(op, c) 1u
#define WRT_KEEP_OP(op) 1
#endif
/* `switch (op_code(op)) { OP_CASE(X) ... }`: a case that a module without X leaves out. Its label then takes a value
 * above every op code, which op_code tells the compiler never comes (read_model refuses unknown codes, check_op the
 * ops a module lacks), so it drops what only that label reached. */
#define OP_CASE(X) case (WRT_KEEP_OP(X) ? OP_##X : OP_MAX_CODE + OP_##X):
static inline int op_code(const wrt_op* op) {
  if (op->type >= OP_MAX_CODE) __builtin_unreachable();
  return op->type;
}

struct wrt_op_impl {
  int (*plan)(wrt_model* m, wrt_op* op, wrt_cost* c); /* choose the path, fill the plan, state the cost */
  int (*prepare)(wrt_model* m, wrt_op* op);           /* pack weights, build indirection and tables; may be NULL */
  int (*run)(wrt_model* m, wrt_op* op);
  const char* (*kernel)(const wrt_op* op);            /* the path that runs it, for profiles */
};

int dtype_class(const wrt_model* m, wrt_op* op);
const wrt_op_impl* op_impl(int type, int dclass); /* NULL: this engine has no such variant */
int op_kept(int type); /* whether this module holds the op (one built for given models may not) */
int op_not_in_module(const wrt_model* m, const wrt_op* op); /* its refusal, naming the models the module is for */

/* ---- quantization parameters and rules (qrules.c) ------------------------------------------------------------- */
int read_quant(wrt_model* m, fb_buf f, size_t qt, wrt_tensor* t, uint32_t index); /* Tensor.quant, verified */
int check_quant(wrt_model* m, wrt_op* op);            /* python_ref/qrules.py check_op */
int op_is_quantized(const wrt_model* m, const wrt_op* op);
int quant_equal(const wrt_quant* a, const wrt_quant* b);
int qadd_params(float ra, float rb, int32_t* ma, int32_t* mb, int32_t* shift); /* nonzero: ratios out of range */

/* ---- loader stages ---------------------------------------------------------------------------------------------- */
int read_model(wrt_model* m, fb_buf f); /* model_read.c: tensors, ops, attributes, graph checks */
/* shape_check.c: every op's output shape/dtype as python_ref infers; assign: set them (a run-time shape change)
 * instead of comparing them with the file's */
int check_shapes(wrt_model* m, int assign);
int check_aliasing(wrt_model* m); /* model_read.c: no op's output shares arena bytes with its inputs */
int run_ops(wrt_model* m, int begin, int end); /* model.c: ops [begin, end), skipping those with empty outputs */
/* planner.c: arena offsets of every activation at the current shapes (by lifetime, greedy by size, best fit;
 * RESHAPE outputs share their input's bytes) into offsets[n_tensors]; the arena size */
int plan_arena(wrt_model* m, int64_t* offsets, uint64_t* arena_size);

/* ---- support (support.c) ---------------------------------------------------------------------------------------- */
/* model-owned allocation (freed with the model), zeroed; NULL past the model's memory budget or when out of memory.
 * Sizes are computed in 64 bits, so nothing wraps in wasm32. */
void* m_alloc(wrt_model* m, uint64_t n);
void* m_scratch(wrt_model* m, uint64_t n); /* counted, freed by m_scratch_free(m, p, n) before load returns */
void m_scratch_free(wrt_model* m, void* p, uint64_t n);
void* m_alloc_shaped(wrt_model* m, uint64_t n); /* freed by m_free_shaped when the inputs are resized */
void m_free_shaped(wrt_model* m);
void m_free_all(wrt_model* m);
int m_alloc_fail(wrt_model* m, const wrt_op* op, const char* what, uint64_t bytes); /* the error for a NULL m_alloc */
const void* const_data(wrt_model* m, int ti); /* owned, aligned copy of a constant (made on first use) */
const char* op_name(const wrt_op* op);        /* "CONV_2D" */
int op_has_clamp(int type);                   /* the op has a fused output clamp (act_min, act_max) */
const char* dtype_name(int dtype);            /* "float32" */
int op_fail(const wrt_op* op, int code, const char* fmt, ...); /* "operator 3 (CONV_2D 'conv1'): ..." */
void describe_op(char* out, size_t cap, const wrt_op* op);      /* "operator 3 (CONV_2D 'conv1')" */
void clamp_inplace(float* y, size_t n, const wrt_clamp* c);
/* an op's parallel loop over n fixed tasks (see rt_threads.c): on one thread below PAR_MIN_WORK */
#define PAR_MIN_WORK ((uint64_t)1 << 18)
int op_threads(const wrt_model* m, const wrt_op* op);
void op_parallel(const wrt_model* m, const wrt_op* op, size_t n, rt_task_fn fn, void* ctx);
/* the same over rows [0, rows), cut into at most ROW_TASKS ranges of whole rows */
#define ROW_TASKS 64
typedef void (*row_range_fn)(void* ctx, size_t r0, size_t r1);
void op_parallel_rows(const wrt_model* m, const wrt_op* op, size_t rows, row_range_fn fn, void* ctx);
static inline int is_unclamped(const wrt_clamp* c) { return c->min == -__builtin_inff() && c->max == __builtin_inff(); }

/* tensor data by element type */
static inline float* t_f32(const wrt_model* m, int ti) { return (float*)m->t[ti].data; }
static inline uint8_t* t_bytes(const wrt_model* m, int ti) { return (uint8_t*)m->t[ti].data; }

/* cost helpers */
static inline uint64_t ptr_bytes(uint64_t n) { return n * (uint64_t)sizeof(void*); }
static inline uint64_t sat_mul(uint64_t a, uint64_t b) { /* saturating: costs of hostile shapes never wrap */
  return (double)a * (double)b >= 1.8e19 ? UINT64_MAX : a * b; /* (a 128-bit check would need libcalls in wasm) */
}

/* ---- op modules: plan_* / prepare_* at load, run_* per inference, *_kernel for profiles ------------------------ */
int plan_conv(wrt_model* m, wrt_op* op, wrt_cost* c);
int prepare_conv(wrt_model* m, wrt_op* op);
int run_conv(wrt_model* m, wrt_op* op);
const char* conv_kernel(const wrt_op* op);
int plan_conv_transpose(wrt_model* m, wrt_op* op, wrt_cost* c);
int prepare_conv_transpose(wrt_model* m, wrt_op* op);
int run_conv_transpose(wrt_model* m, wrt_op* op);
int plan_dense(wrt_model* m, wrt_op* op, wrt_cost* c); /* FULLY_CONNECTED, MATMUL */
int prepare_dense(wrt_model* m, wrt_op* op);
int run_dense(wrt_model* m, wrt_op* op);
const char* dense_kernel(const wrt_op* op);
int plan_pool(wrt_model* m, wrt_op* op, wrt_cost* c);
int64_t pool_divisor(const wrt_attrs* a, int64_t H, int64_t W, int64_t oh, int64_t ow); /* average pool's n */
int prepare_pool(wrt_model* m, wrt_op* op);
int run_pool(wrt_model* m, wrt_op* op);
/* numpy broadcasting of a and b to y, collapsed: size-1 axes dropped, adjacent axes merged; strides in elements
 * (0 where an operand is broadcast); the innermost axis is contiguous in y (elementwise.c) */
typedef struct {
  int rank;
  size_t dim[WRT_MAX_RANK], sa[WRT_MAX_RANK], sb[WRT_MAX_RANK];
} wrt_bcast;
void bcast_setup(const wrt_tensor* a, const wrt_tensor* b, const wrt_tensor* y, wrt_bcast* bc);
int plan_elementwise(wrt_model* m, wrt_op* op, wrt_cost* c);
int run_elementwise(wrt_model* m, wrt_op* op); /* binary, unary, PRELU, POW */
void plan_chains(wrt_model* m);                  /* element-wise ops that run as one pass over memory */
int run_chain(wrt_model* m, int k);              /* op k's chain; 0: not run (its ops run one by one) */
int plan_reduce(wrt_model* m, wrt_op* op, wrt_cost* c);
int run_reduce(wrt_model* m, wrt_op* op);      /* MEAN, REDUCE_MAX, REDUCE_SUM, SOFTMAX */
int plan_data(wrt_model* m, wrt_op* op, wrt_cost* c);
int prepare_data(wrt_model* m, wrt_op* op);
int run_data(wrt_model* m, wrt_op* op);        /* data movement, any element size */
float resize_coord(int xo, int out, int in, float scale, int coord); /* RESIZE's input coordinate, in float32 */
int32_t nearest_index(float x, int in, int mode);                    /* ... rounded by the nearest mode */

/* int8 ops (qconv.c, qelt.c, qpool.c, qdata.c) */
int plan_qconv(wrt_model* m, wrt_op* op, wrt_cost* c);      /* CONV_2D, CONV_TRANSPOSE_2D, FULLY_CONNECTED, MATMUL */
int prepare_qconv(wrt_model* m, wrt_op* op);
int run_qconv(wrt_model* m, wrt_op* op);
const char* qconv_kernel(const wrt_op* op);
int plan_qelt(wrt_model* m, wrt_op* op, wrt_cost* c);       /* element-wise, LOOKUP, QUANTIZE, DEQUANTIZE */
int prepare_qelt(wrt_model* m, wrt_op* op);
int run_qelt(wrt_model* m, wrt_op* op);
const char* qelt_kernel(const wrt_op* op);
int plan_qpool(wrt_model* m, wrt_op* op, wrt_cost* c);      /* pools, MEAN, REDUCE_MAX, SOFTMAX */
int prepare_qpool(wrt_model* m, wrt_op* op);
int run_qpool(wrt_model* m, wrt_op* op);
int plan_qdata(wrt_model* m, wrt_op* op, wrt_cost* c);      /* CONCATENATION, PAD, RESIZE, TRANSPOSE */
int prepare_qdata(wrt_model* m, wrt_op* op);
int run_qdata(wrt_model* m, wrt_op* op);

/* int8 arithmetic (qmath.c): the exact rules of python_ref/quant.py */
static inline int is_q8(int dtype) { return dtype == WRT_I8 || dtype == WRT_U8; }
static inline int qmin_of(int dtype) { return dtype == WRT_U8 ? 0 : -128; }
static inline int qmax_of(int dtype) { return dtype == WRT_U8 ? 255 : 127; }
/* the byte u as an int8 (u8 = 0) or uint8 (u8 = 1) integer; element i of such a tensor */
static inline int32_t q_byte(unsigned u, int u8) { return u8 ? (int32_t)(u & 255u) : (int32_t)(int8_t)(uint8_t)u; }
static inline int32_t q_at(const uint8_t* p, size_t i, int u8) { return q_byte(p[i], u8); }
/* rne of a float32 already clamped to |v| < 2^22: the magic-number trick, exact on every target */
static inline int32_t q_rne(float v) {
  float t = v + 12582912.0f;
  return (int32_t)(t - 12582912.0f);
}
static inline int32_t q_finish(float v, const wrt_qparams* p) {
  v = v < p->lo ? p->lo : v;
  v = v > p->hi ? p->hi : v;
  return q_rne(v) + p->zy;
}
static inline int32_t q_requant(int32_t acc, float mult, const wrt_qparams* p) { return q_finish((float)acc * mult, p); }
static inline int32_t q_wrap(int64_t v) { return (int32_t)(uint32_t)(uint64_t)v; } /* two's complement mod 2^32 */
int32_t q_bound(float v, const wrt_quant* q, int dtype);   /* a real clamp bound as an integer of the output */
/* the output's requantization: bounds from [lo, hi] real values (act_min/act_max, or +-inf: the dtype's range) */
void q_out_params(const wrt_model* m, const wrt_op* op, float lo, float hi, wrt_qparams* p, int32_t* ilo, int32_t* ihi);
int32_t q_quantize_value(float x, const wrt_quant* q, int dtype); /* QUANTIZE of one float */
/* QUANTIZE of n floats (qquant.c) */
void q_quantize_f32(size_t n, const float* x, uint8_t* y, float s, float lo, float hi, int32_t z);
/* table[u] = rescale of the input byte u (an int8 or uint8 of dtype xdt, parameters qx) to qy with bounds */
void q_rescale_table(uint8_t* table, int xdt, const wrt_quant* qx, const wrt_quant* qy, int32_t lo, int32_t hi);
uint8_t* q_alloc_table(wrt_model* m, const wrt_op* op, size_t n); /* n bytes, model-owned; NULL: error set */
int q_fill_pad(wrt_model* m, wrt_op* op, int32_t z, size_t bytes);  /* op->u.q.pad: a row of the zero point */
void q_lookup(size_t n, const uint8_t* x, const uint8_t* table, uint8_t* y);
int q_indirection(wrt_model* m, wrt_op* op, size_t MR); /* op->u.q.ind over its geometry; padding reads u.q.pad */

float half_to_float(uint16_t h); /* exact: every fp16 value is a float32 value (model_read.c) */
int plan_typed(wrt_model* m, wrt_op* op, wrt_cost* c);
int run_typed(wrt_model* m, wrt_op* op);       /* comparisons, logic, WHERE, CAST, integer arithmetic */
int plan_rnn(wrt_model* m, wrt_op* op, wrt_cost* c);
int prepare_rnn(wrt_model* m, wrt_op* op);
int run_rnn(wrt_model* m, wrt_op* op);         /* LSTM, GRU, RNN */
int plan_mediapipe(wrt_model* m, wrt_op* op, wrt_cost* c);
int run_mediapipe(wrt_model* m, wrt_op* op);   /* MediaPipe's attention mesh ops */
int plan_sparse(wrt_model* m, wrt_op* op, wrt_cost* c); /* CONV_2D, FULLY_CONNECTED with block-sparse weights */
#define WRT_PLAN_DENSE (-1) /* plan_sparse: below the break-even, the layer runs on the float32 implementation */
int prepare_sparse(wrt_model* m, wrt_op* op);
int run_sparse(wrt_model* m, wrt_op* op);
const char* sparse_kernel(const wrt_op* op);
void sparse_expand(const wrt_tensor* t, void* out); /* the dense equivalent of a block-sparse constant (its dtype) */
int sparse_candidate(const wrt_model* m, wrt_op* op); /* dense weights the unstructured sparse kernel runs */
int sparse_policy(void); /* wrt_set_sparse_policy's WRT_SPARSE_* */
/* int8 block-sparse weights (qsparse.c): whether the layer runs on qspmm (fast: the dense int8 kernels could run it,
 * i.e. int8 input and centered constant weights), its plan, prepare (bias: the int32 biases or NULL) and run */
int qsparse_chosen(const wrt_model* m, wrt_op* op, int fast);
void qsparse_plan(wrt_model* m, wrt_op* op, wrt_cost* c);
int qsparse_prepare(wrt_model* m, wrt_op* op, const int32_t* bias);
void qsparse_run(wrt_model* m, wrt_op* op);

/* indirection buffers (indirection.c): pointers into the arena, whose address is fixed for the model's lifetime */
int64_t tap_input_pixel(const wrt_attrs* a, int64_t H, int64_t W, int64_t OH, int64_t OW, int64_t px, int64_t kh,
                        int64_t kw); /* (n*H + ih)*W + iw, or -1 where the tap falls in the padding */
int build_igemm_indirection(wrt_model* m, wrt_op* op, wrt_conv_plan* p);      /* per MR pixels, tap-major */
const float** build_tile_indirection(wrt_model* m, wrt_op* op, size_t mr);    /* the same for tiles of mr pixels */
const float** build_pixel_indirection(wrt_model* m, wrt_op* op, const float* pad_src, int64_t kh_n, int64_t kw_n);

/* Winograd F(m x m, 3 x 3) of a dense 3x3 stride-1 CONV_2D (winograd.c): the conv plan's geometry already set;
 * res: the fused residual (NULL: none), added after the output transforms */
int plan_winograd(wrt_model* m, wrt_op* op, wrt_cost* c, int tile);
int prepare_winograd(wrt_model* m, wrt_op* op);
int run_winograd(wrt_model* m, wrt_op* op, const float* res);

/* GEMM (gemm.c): packing into panels of NR columns, w(k, j) read via strides (in floats); bias may be NULL */
uint64_t gemm_packed_floats(const wrt_target* tg, uint64_t n, uint64_t kc_total);
size_t gemm_panel_width(const wrt_target* tg, size_t nc); /* NR, or NR/2 for a narrow last panel */
size_t gemm_row_block(const wrt_target* tg, size_t m, size_t k); /* rows of A per cache block */
void pack_gemm(const wrt_target* tg, size_t n, size_t k, const float* w, size_t w_k_stride, size_t w_n_stride,
               const float* bias, float* out);
void run_gemm(const wrt_target* tg, size_t m, size_t n, size_t k, const float* a, size_t a_stride_bytes,
              const float* packed, float* c, size_t c_stride_bytes, const wrt_clamp* clamp,
              const float* residual, /* NULL, or rows added to c before the clamp (c's stride) */
              int threads);

/* shape helpers (shape_check.c), shared with python_ref's rules */
int rnn_geometry(const wrt_model* m, const wrt_op* op, wrt_rnn_dims* g);
int64_t conv_out_size(int64_t size, int64_t k, int64_t s, int64_t d, int64_t p0, int64_t p1);
int64_t pool_out_size(int64_t size, int64_t k, int64_t s, int64_t d, int64_t p0, int64_t p1, int ceil_mode);

const wrt_target* pick_target(void); /* target.c */

/* Per-op algorithm choice (choice.c). An op's plan offers its candidates (bits, listed in this order: index 0 is the
 * dense path), asks which one was forced (0: none, follow the rules) and notes the one it takes. */
enum { WRT_CH_DENSE = 1, WRT_CH_SPARSE = 2, WRT_CH_WINO2 = 4, WRT_CH_WINO4 = 8, WRT_CH_COUNT = 4 };
void choice_reset(wrt_op* op, int k); /* before op k's first plan: no candidates, wrt_set_choices's forced index */
void choice_offer(wrt_op* op, unsigned bits);
unsigned choice_forced(const wrt_op* op); /* the forced candidate's bit among those offered so far, or 0 */
unsigned choice_note(wrt_op* op, unsigned bit); /* returns bit */
int choice_winograd(const wrt_model* m, const wrt_op* op); /* Winograd F(m x m, 3x3) applies to this CONV_2D */

#endif
