/* The op table: for each op type and dtype class, the functions that plan, prepare and run it. Adding an op is one
 * entry here (plus its shape rule in shape_check.c and its module); adding a dtype variant of an op (int8, sparse
 * weights) is one more entry in the op's row. A missing entry is reported as unsupported, naming op and dtype. */
#include "engine.h"

#define IMPL(plan, prepare, run, kernel) {plan, prepare, run, kernel}

static const char* k_elementwise(const wrt_op* op) { (void)op; return "elementwise"; }
static const char* k_pool(const wrt_op* op) { (void)op; return "pool"; }
static const char* k_reduce(const wrt_op* op) { (void)op; return "reduce (double)"; }
static const char* k_copy(const wrt_op* op) { (void)op; return "copy"; }
static const char* k_col2im(const wrt_op* op) { (void)op; return "gemm + col2im"; }

static const wrt_op_impl CONV = IMPL(plan_conv, prepare_conv, run_conv, conv_kernel);
static const wrt_op_impl CONV_T = IMPL(plan_conv_transpose, prepare_conv_transpose, run_conv_transpose, k_col2im);
static const wrt_op_impl DENSE = IMPL(plan_dense, prepare_dense, run_dense, dense_kernel);
static const wrt_op_impl ELTWISE = IMPL(plan_elementwise, 0, run_elementwise, k_elementwise);
static const wrt_op_impl POOL = IMPL(plan_pool, prepare_pool, run_pool, k_pool);
static const wrt_op_impl REDUCE = IMPL(plan_reduce, 0, run_reduce, k_reduce);
static const wrt_op_impl DATA = IMPL(plan_data, prepare_data, run_data, k_copy);

/* block-sparse weights: the sparse kernels, or below the target's break-even the float32 implementation */
static int plan_sparse_or_dense(wrt_model* m, wrt_op* op, wrt_cost* c) {
  int r = plan_sparse(m, op, c);
  if (r != WRT_PLAN_DENSE) return r;
  op->impl = op_impl(op->type, WRT_DC_F32);
  return op->impl->plan(m, op, c);
}
static const wrt_op_impl SPARSE = IMPL(plan_sparse_or_dense, prepare_sparse, run_sparse, sparse_kernel);

/* float32 only */
#define F32(impl) {[WRT_DC_F32] = &impl}
/* any element type: data movement copies bytes */
#define ANY(impl) {[WRT_DC_F32] = &impl, [WRT_DC_QS8] = &impl, [WRT_DC_OTHER] = &impl}

static const wrt_op_impl* const TABLE[OP_MAX_CODE][WRT_DC_COUNT] = {
    [OP_CONV_2D] = {[WRT_DC_F32] = &CONV, [WRT_DC_F32_SPARSE] = &SPARSE},
    [OP_CONV_TRANSPOSE_2D] = F32(CONV_T),
    [OP_FULLY_CONNECTED] = {[WRT_DC_F32] = &DENSE, [WRT_DC_F32_SPARSE] = &SPARSE},
    [OP_MATMUL] = F32(DENSE),
    [OP_ADD] = F32(ELTWISE),
    [OP_SUB] = F32(ELTWISE),
    [OP_MUL] = F32(ELTWISE),
    [OP_DIV] = F32(ELTWISE),
    [OP_MAXIMUM] = F32(ELTWISE),
    [OP_MINIMUM] = F32(ELTWISE),
    [OP_POW] = F32(ELTWISE),
    [OP_PRELU] = F32(ELTWISE),
    [OP_RELU] = F32(ELTWISE),
    [OP_CLIP] = F32(ELTWISE),
    [OP_LEAKY_RELU] = F32(ELTWISE),
    [OP_HARD_SWISH] = F32(ELTWISE),
    [OP_HARD_SIGMOID] = F32(ELTWISE),
    [OP_SIGMOID] = F32(ELTWISE),
    [OP_TANH] = F32(ELTWISE),
    [OP_EXP] = F32(ELTWISE),
    [OP_SQRT] = F32(ELTWISE),
    [OP_ABS] = F32(ELTWISE),
    [OP_NEG] = F32(ELTWISE),
    [OP_MAX_POOL_2D] = F32(POOL),
    [OP_AVERAGE_POOL_2D] = F32(POOL),
    [OP_MEAN] = F32(REDUCE),
    [OP_REDUCE_MAX] = F32(REDUCE),
    [OP_REDUCE_SUM] = F32(REDUCE),
    [OP_SOFTMAX] = F32(REDUCE),
    [OP_RESHAPE] = ANY(DATA),
    [OP_TRANSPOSE] = ANY(DATA),
    [OP_CONCATENATION] = ANY(DATA),
    [OP_SLICE] = ANY(DATA),
    [OP_PAD] = ANY(DATA),
    [OP_RESIZE] = F32(DATA),
    [OP_DEPTH_TO_SPACE] = ANY(DATA),
    [OP_GATHER] = ANY(DATA),
};

int dtype_class(const wrt_model* m, const wrt_op* op) {
  if (m->t[op->in[0]].dtype != WRT_F32) return WRT_DC_OTHER;
  return op->n_in > 1 && op->in[1] >= 0 && m->t[op->in[1]].sparse ? WRT_DC_F32_SPARSE : WRT_DC_F32;
}

const wrt_op_impl* op_impl(int type, int dclass) {
  return type > 0 && type < OP_MAX_CODE && dclass >= 0 && dclass < WRT_DC_COUNT ? TABLE[type][dclass] : 0;
}
