/* GENERATED from kernels_wasm/gen/families.py by python -m kernels_wasm.gen: do not edit.
 * Kernel families a module built for given models may leave out (wasmrt build --for sets their macros
 * to 0 in its generated wrt_trim.h); the full modules keep them all. */
#ifndef WRT_FAMILIES_H
#define WRT_FAMILIES_H

#ifndef WRT_KF_DWCONV /* float32 depthwise convolution tiles */
#define WRT_KF_DWCONV 1
#endif
#ifndef WRT_KF_DWCONV_9 /* the float32 depthwise kernel for 9-tap filters */
#define WRT_KF_DWCONV_9 1
#endif
#ifndef WRT_KF_DWCONV_25 /* the float32 depthwise kernel for 25-tap filters */
#define WRT_KF_DWCONV_25 1
#endif
#ifndef WRT_KF_DWCONV_ANY /* the float32 depthwise kernel for any other filters */
#define WRT_KF_DWCONV_ANY 1
#endif
#ifndef WRT_KF_MAXPOOL /* float32 max pooling */
#define WRT_KF_MAXPOOL 1
#endif
#ifndef WRT_KF_AVGPOOL /* float32 average pooling */
#define WRT_KF_AVGPOOL 1
#endif
#ifndef WRT_KF_QS8 /* every int8 kernel: GEMM, indirect GEMM, depthwise, addition, packing */
#define WRT_KF_QS8 1
#endif
#ifndef WRT_KF_QDWCONV_ANY /* the int8 depthwise kernels of any filter (the others run 3x3 filters) */
#define WRT_KF_QDWCONV_ANY 1
#endif
#ifndef WRT_KF_QPATCH /* the int8 convolution of small patches as a GEMM (engine: qconv.c QC_PATCH; else the indirect GEMM) */
#define WRT_KF_QPATCH 1
#endif
#ifndef WRT_KF_QGEMM_ROW /* the int8 GEMM of a lone row (a GEMM of one row, or one past whole tiles: M odd, every target's MR being even) */
#define WRT_KF_QGEMM_ROW 1
#endif
#ifndef WRT_KF_QADD_SCALAR /* the int8 addition of a broadcast scalar */
#define WRT_KF_QADD_SCALAR 1
#endif
#ifndef WRT_KF_SPARSE /* float32 sparse GEMM and GEMV */
#define WRT_KF_SPARSE 1
#endif
#ifndef WRT_KF_QSPARSE /* int8 block-sparse GEMM */
#define WRT_KF_QSPARSE 1
#endif
#ifndef WRT_KF_WINOGRAD /* Winograd F(2x2,3x3) and F(4x4,3x3) transforms */
#define WRT_KF_WINOGRAD 1
#endif
#ifndef WRT_KF_RESIZE /* re-planning a model whose inputs are sized at run time (engine: planner.c, wrt_resize_inputs) */
#define WRT_KF_RESIZE 1
#endif
#ifndef WRT_KF_INTERLEAVE /* the 3-channel interleave of transposes (exact data movement: without it the generic loop gives the same bytes) */
#define WRT_KF_INTERLEAVE 1
#endif
#ifndef WRT_KF_CHAINS /* element-wise ops in a row run block by block as one pass (engine: elementwise.c plan_chains; without it each op runs alone: the same bytes) */
#define WRT_KF_CHAINS 1
#endif
#ifndef WRT_KF_TRAIN /* training: the gradient GEMM, activation gradients, SGD and Adam updates */
#define WRT_KF_TRAIN 1
#endif
#ifndef WRT_KF_UNARY_RELU /* the float32 relu kernel */
#define WRT_KF_UNARY_RELU 1
#endif
#ifndef WRT_KF_UNARY_CLIP /* the float32 clip kernel */
#define WRT_KF_UNARY_CLIP 1
#endif
#ifndef WRT_KF_UNARY_LEAKY_RELU /* the float32 leaky_relu kernel */
#define WRT_KF_UNARY_LEAKY_RELU 1
#endif
#ifndef WRT_KF_UNARY_HARD_SWISH /* the float32 hard_swish kernel */
#define WRT_KF_UNARY_HARD_SWISH 1
#endif
#ifndef WRT_KF_UNARY_HARD_SIGMOID /* the float32 hard_sigmoid kernel */
#define WRT_KF_UNARY_HARD_SIGMOID 1
#endif
#ifndef WRT_KF_UNARY_SIGMOID /* the float32 sigmoid kernel */
#define WRT_KF_UNARY_SIGMOID 1
#endif
#ifndef WRT_KF_UNARY_TANH /* the float32 tanh kernel */
#define WRT_KF_UNARY_TANH 1
#endif
#ifndef WRT_KF_UNARY_EXP /* the float32 exp kernel */
#define WRT_KF_UNARY_EXP 1
#endif
#ifndef WRT_KF_UNARY_SQRT /* the float32 sqrt kernel */
#define WRT_KF_UNARY_SQRT 1
#endif
#ifndef WRT_KF_UNARY_ABS /* the float32 abs kernel */
#define WRT_KF_UNARY_ABS 1
#endif
#ifndef WRT_KF_UNARY_NEG /* the float32 neg kernel */
#define WRT_KF_UNARY_NEG 1
#endif
#ifndef WRT_KF_BINARY_SUB /* the float32 sub kernel */
#define WRT_KF_BINARY_SUB 1
#endif
#ifndef WRT_KF_BINARY_RSUB /* the float32 rsub kernel */
#define WRT_KF_BINARY_RSUB 1
#endif
#ifndef WRT_KF_BINARY_MUL /* the float32 mul kernel */
#define WRT_KF_BINARY_MUL 1
#endif
#ifndef WRT_KF_BINARY_DIV /* the float32 div kernel */
#define WRT_KF_BINARY_DIV 1
#endif
#ifndef WRT_KF_BINARY_RDIV /* the float32 rdiv kernel */
#define WRT_KF_BINARY_RDIV 1
#endif
#ifndef WRT_KF_BINARY_MAX /* the float32 max kernel */
#define WRT_KF_BINARY_MAX 1
#endif
#ifndef WRT_KF_BINARY_MIN /* the float32 min kernel */
#define WRT_KF_BINARY_MIN 1
#endif
#ifndef WRT_KF_BINARY_PRELU /* the float32 prelu kernel */
#define WRT_KF_BINARY_PRELU 1
#endif
#ifndef WRT_KF_BINARY_ADD_SCALAR /* the float32 add kernel of a broadcast scalar */
#define WRT_KF_BINARY_ADD_SCALAR 1
#endif
#ifndef WRT_KF_BINARY_SUB_SCALAR /* the float32 sub kernel of a broadcast scalar */
#define WRT_KF_BINARY_SUB_SCALAR 1
#endif
#ifndef WRT_KF_BINARY_RSUB_SCALAR /* the float32 rsub kernel of a broadcast scalar */
#define WRT_KF_BINARY_RSUB_SCALAR 1
#endif
#ifndef WRT_KF_BINARY_MUL_SCALAR /* the float32 mul kernel of a broadcast scalar */
#define WRT_KF_BINARY_MUL_SCALAR 1
#endif
#ifndef WRT_KF_BINARY_DIV_SCALAR /* the float32 div kernel of a broadcast scalar */
#define WRT_KF_BINARY_DIV_SCALAR 1
#endif
#ifndef WRT_KF_BINARY_RDIV_SCALAR /* the float32 rdiv kernel of a broadcast scalar */
#define WRT_KF_BINARY_RDIV_SCALAR 1
#endif
#ifndef WRT_KF_BINARY_MAX_SCALAR /* the float32 max kernel of a broadcast scalar */
#define WRT_KF_BINARY_MAX_SCALAR 1
#endif
#ifndef WRT_KF_BINARY_MIN_SCALAR /* the float32 min kernel of a broadcast scalar */
#define WRT_KF_BINARY_MIN_SCALAR 1
#endif
#ifndef WRT_KF_BINARY_PRELU_SCALAR /* the float32 prelu kernel of a broadcast scalar */
#define WRT_KF_BINARY_PRELU_SCALAR 1
#endif

#define WRT_QPATCH_K 32 /* bytes: the deepest patch of QC_PATCH (qconv.c) */

#endif
