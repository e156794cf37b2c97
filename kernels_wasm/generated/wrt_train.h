/* GENERATED from kernels_wasm/gen/kernels/train.py by python -m kernels_wasm.gen: do not edit.
 * Activation-gradient op codes: the index of each kernel in wrt_target.grad. */
#ifndef WRT_TRAIN_H
#define WRT_TRAIN_H

enum {
  WRT_GRAD_CLAMP = 0, /* v: the forward's output */
  WRT_GRAD_HARD_SWISH = 1, /* v: the forward's input */
  WRT_GRAD_SIGMOID = 2, /* v: the forward's output */
  WRT_GRAD_TANH = 3, /* v: the forward's output */
  WRT_GRAD_COUNT = 4
};

#endif
