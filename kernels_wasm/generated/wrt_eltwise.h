/* GENERATED from kernels_wasm/gen/kernels/eltwise.py by python -m kernels_wasm.gen: do not edit.
 * Element-wise op codes: the index of each op's kernel in wrt_target.vbinary / vbinary_scalar / vunary. */
#ifndef WRT_ELTWISE_H
#define WRT_ELTWISE_H

/* binary: y = a OP b; RSUB, RDIV swap the operands; PRELU is a >= 0 ? a : a * b (b: the slope) */
enum {
  WRT_BIN_ADD = 0,
  WRT_BIN_SUB = 1,
  WRT_BIN_RSUB = 2,
  WRT_BIN_MUL = 3,
  WRT_BIN_DIV = 4,
  WRT_BIN_RDIV = 5,
  WRT_BIN_MAX = 6,
  WRT_BIN_MIN = 7,
  WRT_BIN_PRELU = 8,
  WRT_BIN_COUNT = 9
};

enum {
  WRT_UN_RELU = 0,
  WRT_UN_CLIP = 1,
  WRT_UN_LEAKY_RELU = 2,
  WRT_UN_HARD_SWISH = 3,
  WRT_UN_HARD_SIGMOID = 4,
  WRT_UN_SIGMOID = 5,
  WRT_UN_TANH = 6,
  WRT_UN_EXP = 7,
  WRT_UN_SQRT = 8,
  WRT_UN_ABS = 9,
  WRT_UN_NEG = 10,
  WRT_UN_COUNT = 11
};

#endif
