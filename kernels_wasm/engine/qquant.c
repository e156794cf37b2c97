/* QUANTIZE of float32 rows (python_ref/quant.py quantize): y = z + rne(clamp(x / s, lo, hi)), NaN as 0, one float32
 * operation at a time. A model's first op on a camera frame, so this file is built for speed (vectorized) while the
 * rest of the int8 glue is built for size; the rounding reads the integer from the bits of v + 1.5 * 2^23 (q_rne
 * without its float-to-int conversion, which would keep the loop scalar in wasm). */
#include "engine.h"

void q_quantize_f32(size_t n, const float* x, uint8_t* y, float s, float lo, float hi, int32_t z) {
  for (size_t i = 0; i < n; i++) {
    float v = x[i] / s;
    v = v == v ? v : 0.0f;
    v = v < lo ? lo : v;
    v = v > hi ? hi : v;
    union { float f; int32_t i; } t = { v + 12582912.0f };
    y[i] = (uint8_t)(t.i - 0x4B400000 + z);
  }
}
