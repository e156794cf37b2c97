/* The op table: for each op type and dtype class, the functions that plan, prepare and run it. Adding an op is one
 * entry here (plus its shape rule in shape_check.c and its module); a float32 element-wise unary op with a vector
 * kernel needs none of these (python_ref/opdefs.py's family, generated/wrt_ops.h). Adding a dtype variant of an op
 * (int8, sparse weights) is one more entry in the op's row. A missing entry is reported as unsupported, naming op
 * and dtype. */
#include "engine.h"

#define IMPL(plan, prepare, run, kernel) {plan, prepare, run, kernel}

static const char* k_elementwise(const wrt_op* op) {
  static const char* const chained[] = {"elementwise", "elementwise", "elementwise, 2 ops in one pass",
      "elementwise, 3 ops in one pass", "elementwise, 4 ops in one pass", "elementwise, 5 ops in one pass",
      "elementwise, 6 ops in one pass", "elementwise, 7 ops in one pass", "elementwise, 8 ops in one pass"};
  return op->chain < sizeof chained / sizeof *chained ? chained[op->chain] : "elementwise";
}
static const char* k_pool(const wrt_op* op) { (void)op; return "pool"; }
static const char* k_reduce(const wrt_op* op) { (void)op; return "reduce (double)"; }
static const char* k_copy(const wrt_op* op) { (void)op; return "copy"; }
static const char* k_col2im(const wrt_op* op) { (void)op; return "gemm + col2im"; }
static const char* k_scalar(const wrt_op* op) { (void)op; return "scalar"; }
static const char* k_rnn(const wrt_op* op) { (void)op; return "gemm + gates"; }

static const wrt_op_impl CONV = IMPL(plan_conv, prepare_conv, run_conv, conv_kernel);
static const wrt_op_impl CONV_T = IMPL(plan_conv_transpose, prepare_conv_transpose, run_conv_transpose, k_col2im);
static const wrt_op_impl DENSE = IMPL(plan_dense, prepare_dense, run_dense, dense_kernel);
static const wrt_op_impl ELTWISE = IMPL(plan_elementwise, 0, run_elementwise, k_elementwise);
static const wrt_op_impl POOL = IMPL(plan_pool, prepare_pool, run_pool, k_pool);
static const wrt_op_impl REDUCE = IMPL(plan_reduce, 0, run_reduce, k_reduce);
static const wrt_op_impl DATA = IMPL(plan_data, prepare_data, run_data, k_copy);
/* int8 (QS8): python_ref/qops.py */
static const char* k_qpool(const wrt_op* op) { (void)op; return "qs8 pool (portable)"; }
static const char* k_qdata(const wrt_op* op) { (void)op; return "qs8 copy"; }
static const wrt_op_impl QCONV = IMPL(plan_qconv, prepare_qconv, run_qconv, qconv_kernel);
static const wrt_op_impl QELT = IMPL(plan_qelt, prepare_qelt, run_qelt, qelt_kernel);
static const wrt_op_impl QPOOL = IMPL(plan_qpool, prepare_qpool, run_qpool, k_qpool);
static const wrt_op_impl QDATA = IMPL(plan_qdata, prepare_qdata, run_qdata, k_qdata);
static const wrt_op_impl TYPED = IMPL(plan_typed, 0, run_typed, k_scalar);
static const wrt_op_impl RNN = IMPL(plan_rnn, prepare_rnn, run_rnn, k_rnn);
static const wrt_op_impl MEDIAPIPE = IMPL(plan_mediapipe, 0, run_mediapipe, k_scalar);

/* block-sparse weights: the sparse kernels, or below the target's break-even the float32 implementation */
static int plan_sparse_or_dense(wrt_model* m, wrt_op* op, wrt_cost* c) {
  int r = plan_sparse(m, op, c);
  if (r != WRT_PLAN_DENSE) return r;
  op->impl = op_impl(op->type, WRT_DC_F32);
  return op->impl->plan(m, op, c);
}
static const wrt_op_impl SPARSE = IMPL(plan_sparse_or_dense, prepare_sparse, run_sparse, sparse_kernel);

/* Each entry is linked in only where the module keeps that op's class (WRT_KEEP, engine.h): a trimmed module's
 * table holds its models' rows, and the linker drops every function no row reaches. */
#define E(op, c, impl) [WRT_DC_##c] = WRT_KEEP(op, c) ? &impl : 0
/* float32 only */
#define F32(op, impl) {E(op, F32, impl)}
/* int8 only */
#define QS8(op, qimpl) {E(op, QS8, qimpl)}
/* float32 and int8 */
#define F32_QS8(op, impl, qimpl) {E(op, F32, impl), E(op, QS8, qimpl)}
/* float32 (dense or block-sparse weights) and int8 */
#define F32_QS8_SPARSE(op, impl, qimpl) {E(op, F32, impl), E(op, QS8, qimpl), E(op, F32_SPARSE, SPARSE)}
/* any element type: data movement copies bytes */
#define ANY(op, impl) {E(op, F32, impl), E(op, QS8, impl), E(op, OTHER, impl)}
/* float32 and integers through `impl`, int8 through `qimpl` */
#define ANY_QS8(op, impl, qimpl) {E(op, F32, impl), E(op, QS8, qimpl), E(op, OTHER, impl)}
/* float32 through `impl`, integers through the typed scalar loops */
#define F32_INT(op, impl) {E(op, F32, impl), E(op, OTHER, TYPED)}
/* float32, int8, and integers through the typed scalar loops */
#define F32_QS8_INT(op, impl, qimpl) {E(op, F32, impl), E(op, QS8, qimpl), E(op, OTHER, TYPED)}

static const wrt_op_impl* const TABLE[OP_MAX_CODE][WRT_DC_COUNT] = {
    [OP_CONV_2D] = F32_QS8_SPARSE(CONV_2D, CONV, QCONV),
    [OP_CONV_TRANSPOSE_2D] = F32_QS8(CONV_TRANSPOSE_2D, CONV_T, QCONV),
    [OP_FULLY_CONNECTED] = F32_QS8_SPARSE(FULLY_CONNECTED, DENSE, QCONV),
    [OP_MATMUL] = F32_QS8(MATMUL, DENSE, QCONV),
    [OP_ADD] = F32_QS8_INT(ADD, ELTWISE, QELT),
    [OP_SUB] = F32_QS8_INT(SUB, ELTWISE, QELT),
    [OP_MUL] = F32_QS8_INT(MUL, ELTWISE, QELT),
    [OP_DIV] = F32_INT(DIV, ELTWISE),
    [OP_MAXIMUM] = F32_QS8_INT(MAXIMUM, ELTWISE, QELT),
    [OP_MINIMUM] = F32_QS8_INT(MINIMUM, ELTWISE, QELT),
    [OP_POW] = F32(POW, ELTWISE),
    [OP_PRELU] = F32_QS8(PRELU, ELTWISE, QELT),
    [OP_RELU] = F32_QS8(RELU, ELTWISE, QELT),
    [OP_CLIP] = F32_QS8(CLIP, ELTWISE, QELT),
    [OP_MAX_POOL_2D] = F32_QS8(MAX_POOL_2D, POOL, QPOOL),
    [OP_AVERAGE_POOL_2D] = F32_QS8(AVERAGE_POOL_2D, POOL, QPOOL),
    [OP_MEAN] = F32_QS8(MEAN, REDUCE, QPOOL),
    [OP_REDUCE_MAX] = F32_QS8(REDUCE_MAX, REDUCE, QPOOL),
    [OP_REDUCE_SUM] = F32(REDUCE_SUM, REDUCE),
    [OP_SOFTMAX] = F32_QS8(SOFTMAX, REDUCE, QPOOL),
    [OP_RESHAPE] = ANY(RESHAPE, DATA),
    [OP_TRANSPOSE] = ANY(TRANSPOSE, DATA),
    [OP_CONCATENATION] = ANY_QS8(CONCATENATION, DATA, QDATA),
    [OP_SLICE] = ANY(SLICE, DATA),
    [OP_PAD] = ANY(PAD, DATA),
    [OP_RESIZE] = F32_QS8(RESIZE, DATA, QDATA),
    [OP_DEPTH_TO_SPACE] = ANY(DEPTH_TO_SPACE, DATA),
    [OP_GATHER] = ANY(GATHER, DATA),
    [OP_QUANTIZE] = QS8(QUANTIZE, QELT),
    [OP_DEQUANTIZE] = QS8(DEQUANTIZE, QELT),
    [OP_LOOKUP] = QS8(LOOKUP, QELT),
    [OP_LAYER_NORM] = F32(LAYER_NORM, REDUCE),
    [OP_GELU] = F32(GELU, ELTWISE),
    [OP_ERF] = F32(ERF, ELTWISE),
    [OP_LOG] = F32(LOG, ELTWISE),
    [OP_FLOOR] = F32(FLOOR, ELTWISE),
    [OP_CEIL] = F32(CEIL, ELTWISE),
    [OP_WHERE] = ANY(WHERE, TYPED),
    [OP_EXPAND] = ANY(EXPAND, DATA),
    [OP_CAST] = ANY(CAST, TYPED),
    [OP_EQUAL] = ANY(EQUAL, TYPED),
    [OP_LESS] = ANY(LESS, TYPED),
    [OP_GREATER] = ANY(GREATER, TYPED),
    [OP_LESS_EQUAL] = ANY(LESS_EQUAL, TYPED),
    [OP_GREATER_EQUAL] = ANY(GREATER_EQUAL, TYPED),
    [OP_NOT] = ANY(NOT, TYPED),
    [OP_AND] = ANY(AND, TYPED),
    [OP_OR] = ANY(OR, TYPED),
    [OP_XOR] = ANY(XOR, TYPED),
    [OP_SCATTER_ND] = ANY(SCATTER_ND, DATA),
    [OP_SPLIT] = ANY(SPLIT, DATA),
    [OP_LSTM] = F32(LSTM, RNN),
    [OP_GRU] = F32(GRU, RNN),
    [OP_RNN] = F32(RNN, RNN),
    [OP_LANDMARKS_TO_TRANSFORM_MATRIX] = F32(LANDMARKS_TO_TRANSFORM_MATRIX, MEDIAPIPE),
    [OP_TRANSFORM_TENSOR_BILINEAR] = F32(TRANSFORM_TENSOR_BILINEAR, MEDIAPIPE),
    [OP_TRANSFORM_LANDMARKS] = F32(TRANSFORM_LANDMARKS, MEDIAPIPE),
};

int dtype_class(const wrt_model* m, wrt_op* op) {
  if (op_is_quantized(m, op)) return WRT_DC_QS8;
  if (m->t[op->in[0]].dtype != WRT_F32) return WRT_DC_OTHER;
  /* a module without the sparse class never checks dense weights for zeros: they run dense */
  int candidates = WRT_KEEP(CONV_2D, F32_SPARSE) || WRT_KEEP(FULLY_CONNECTED, F32_SPARSE);
  return op->n_in > 1 && op->in[1] >= 0 && (m->t[op->in[1]].sparse || (candidates && sparse_candidate(m, op)))
             ? WRT_DC_F32_SPARSE
             : WRT_DC_F32;
}

const wrt_op_impl* op_impl(int type, int dclass) {
  if (type <= 0 || type >= OP_MAX_CODE || dclass < 0 || dclass >= WRT_DC_COUNT) return 0;
  /* float32 element-wise unary ops with a vector kernel (generated/wrt_ops.h) need no entry above */
  if (!TABLE[type][dclass] && dclass == WRT_DC_F32 && WRT_OPDEFS[type].unary >= 0) return op_kept(type) ? &ELTWISE : 0;
  return TABLE[type][dclass];
}
