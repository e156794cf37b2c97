/* GENERATED from kernels_wasm/gen/families.py by python -m kernels_wasm.gen: do not edit.
 * Kernel families a module built for given models may leave out (wasmrt build --for sets their macros
 * to 0 in its generated wrt_trim.h); the full modules keep them all. */
#ifndef WRT_FAMILIES_H
#define WRT_FAMILIES_H

#ifndef WRT_KF_DWCONV /* float32 depthwise convolution tiles */
#define WRT_KF_DWCONV 1
#endif
#ifndef WRT_KF_POOL /* float32 max and average pooling */
#define WRT_KF_POOL 1
#endif
#ifndef WRT_KF_QS8 /* every int8 kernel: GEMM, indirect GEMM, depthwise, addition, packing */
#define WRT_KF_QS8 1
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
#ifndef WRT_KF_BINARY_ADD /* the float32 add kernels */
#define WRT_KF_BINARY_ADD 1
#endif
#ifndef WRT_KF_BINARY_SUB /* the float32 sub kernels */
#define WRT_KF_BINARY_SUB 1
#endif
#ifndef WRT_KF_BINARY_RSUB /* the float32 rsub kernels */
#define WRT_KF_BINARY_RSUB 1
#endif
#ifndef WRT_KF_BINARY_MUL /* the float32 mul kernels */
#define WRT_KF_BINARY_MUL 1
#endif
#ifndef WRT_KF_BINARY_DIV /* the float32 div kernels */
#define WRT_KF_BINARY_DIV 1
#endif
#ifndef WRT_KF_BINARY_RDIV /* the float32 rdiv kernels */
#define WRT_KF_BINARY_RDIV 1
#endif
#ifndef WRT_KF_BINARY_MAX /* the float32 max kernels */
#define WRT_KF_BINARY_MAX 1
#endif
#ifndef WRT_KF_BINARY_MIN /* the float32 min kernels */
#define WRT_KF_BINARY_MIN 1
#endif
#ifndef WRT_KF_BINARY_PRELU /* the float32 prelu kernels */
#define WRT_KF_BINARY_PRELU 1
#endif

#endif
