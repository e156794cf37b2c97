/* Which kernel table a model uses. wasm: the one variant the module was compiled with (WRT_WASM_TARGET); the
 * relaxed SIMD module picks among three by what the host's i32x4.relaxed_dot_i8x16_i7x16_add_s computes.
 * x86-64: the best the CPU runs (AVX-512 VNNI > AVX-512 > AVX2+FMA > scalar), or
 * WASMRT_FORCE_TARGET=scalar|avx2|avx512|avx512vnni for tests (ignored when the CPU lacks it); avx512vnni differs
 * from avx512 only in its int8 kernels. aarch64: NEON when compiled in. */
#include "engine.h"

#if defined(WRT_WASM_TARGET) && defined(__wasm_relaxed_simd__)
#include <wasm_simd128.h>

/* The relaxed int8 dot product is defined on every host only for a second operand in [0, 127]; past that a host reads
 * the second operand as unsigned (x86 VNNI) or signed (aarch64 sdot) and may saturate each pair's int16 sum (x86
 * pmaddubsw, wasmtime on x86). Its int8 GEMMs need an exact dot product, so run it on bytes where every other
 * behaviour gives another answer: 1 (unsigned x signed, exact), 2 (signed x signed, exact) or 0 (anything else).
 * The operands pass through volatile memory, so neither the compiler nor the host can fold the instruction. */
static int relaxed_dot_kind(void) {
  static volatile const int8_t va[16] = {127, 127, 127, 127, -128, -128, -128, -128, 127, -128, 5, -7, 100, -100, 1, 0};
  static volatile const uint8_t vb[16] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x80, 0xFF, 0x80,
                                          0x80, 0x7F, 0x90, 0x01, 0xC8, 0xC8, 0x00, 0xFF};
  static volatile const int32_t vc[4] = {1, -2, 3, -4};
  int8_t a[16];
  uint8_t b[16];
  int32_t c[4], r[4];
  for (int i = 0; i < 16; i++) a[i] = va[i], b[i] = vb[i];
  for (int i = 0; i < 4; i++) c[i] = vc[i];
  wasm_v128_store(r, wasm_i32x4_relaxed_dot_i8x16_i7x16_add(wasm_v128_load(a), wasm_v128_load(b), wasm_v128_load(c)));
  int us = 1, ss = 1;
  for (int l = 0; l < 4; l++) {
    int32_t u = c[l], s = c[l];
    for (int j = 4 * l; j < 4 * l + 4; j++) u += a[j] * (int32_t)b[j], s += a[j] * (int32_t)(int8_t)b[j];
    us &= r[l] == u;
    ss &= r[l] == s;
  }
  return us ? 1 : ss ? 2 : 0;
}
#endif

#if !defined(WRT_WASM_TARGET)
static int same(const char* a, const char* b) {
  while (*a && *a == *b) a++, b++;
  return *a == *b;
}
#endif

const wrt_target* pick_target(void) {
#if defined(WRT_WASM_TARGET) && defined(__wasm_relaxed_simd__)
  int kind = relaxed_dot_kind();
  if (kind == 2) { /* the usdot table with XOFF 0 (so xmask 0): the same kernels, activations read signed */
    static wrt_target sdot;
    if (!sdot.name) {
      sdot = wrt_target_wasm_relaxed_usdot;
      sdot.name = "wasm_relaxed_sdot";
      sdot.qgemm_xoff = 0;
    }
    return &sdot;
  }
  return kind == 1 ? &wrt_target_wasm_relaxed_usdot : &WRT_WASM_TARGET;
#elif defined(WRT_WASM_TARGET)
  return &WRT_WASM_TARGET;
#elif defined(__x86_64__)
  const wrt_target* best = &wrt_target_scalar;
  const char* force = rt_getenv("WASMRT_FORCE_TARGET");
  int avx2 = 0, avx512 = 0, vnni = 0;
#if defined(WRT_HAVE_AVX2)
  avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (avx2) best = &wrt_target_avx2;
#endif
#if defined(WRT_HAVE_AVX512)
  avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  if (avx512) best = &wrt_target_avx512;
  vnni = avx512 && __builtin_cpu_supports("avx512vnni");
  if (vnni) best = &wrt_target_avx512vnni;
#endif
  if (force) {
    if (same(force, "scalar")) return &wrt_target_scalar;
#if defined(WRT_HAVE_AVX2)
    if (same(force, "avx2") && avx2) return &wrt_target_avx2;
#endif
#if defined(WRT_HAVE_AVX512)
    if (same(force, "avx512") && avx512) return &wrt_target_avx512;
    if (same(force, "avx512vnni") && vnni) return &wrt_target_avx512vnni;
#endif
  }
  (void)avx2;
  (void)avx512;
  (void)vnni;
  return best;
#elif defined(__aarch64__) && defined(WRT_HAVE_NEON)
  const char* force = rt_getenv("WASMRT_FORCE_TARGET");
  if (force && same(force, "scalar")) return &wrt_target_scalar;
  return &wrt_target_neon;
#else
  return &wrt_target_scalar;
#endif
}
