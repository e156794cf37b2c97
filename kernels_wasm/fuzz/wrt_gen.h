/* Recipe -> .wrt: the structure-aware half of the engine fuzzer.
 *
 * The fuzz input is not a model file but a recipe, read byte by byte like a FuzzedDataProvider: which ops (any op
 * of generated/wrt_ops.h), which tensors feed them (activations, graph inputs, constants, the same tensor many
 * times), which attributes (coherent with the input shapes most of the time, hostile values otherwise: zeros,
 * 2^20 groups, 2^24 pads, NaN, out-of-range enums), which shapes (zeros, huge dimensions), how the arena is planned
 * (sequential, everything at offset 0, exactly 2^31 bytes) and how tables are shared (one Tensor table referenced a
 * quarter million times, one name string for every tensor). A recipe of zero bytes is a valid one-op model; every recipe
 * gives a FlatBuffer that passes the verifier: the attack is on the meaning, not on the bytes. */
#ifndef WRT_FUZZ_GEN_H
#define WRT_FUZZ_GEN_H

#include <stddef.h>
#include <stdint.h>

#include "fbb.h"

enum { WRT_GEN_INPUT_ZEROS, WRT_GEN_INPUT_RANDOM, WRT_GEN_INPUT_SPECIAL };

typedef struct {
  fbb b;
  const uint8_t* data; /* the .wrt file (inside b) */
  size_t size;
  int input_mode;      /* WRT_GEN_INPUT_*: what the harness writes into the graph inputs */
  uint32_t input_seed;
  int runs;            /* wrt_run calls: 1 or 2 (the second reuses the arena and scratch) */
} wrt_gen_out;

/* 0 and a file in out (free with wrt_gen_free), or -1 when the file would exceed the generator's size limit */
int wrt_gen(const uint8_t* recipe, size_t n, wrt_gen_out* out);
void wrt_gen_free(wrt_gen_out* out);

/* deterministic value i of a fill pattern (also used for the harness' input data) */
uint32_t wrt_gen_hash(uint32_t seed, uint64_t i);

#endif
