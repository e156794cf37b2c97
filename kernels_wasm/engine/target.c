/* Which kernel table a model uses. wasm: the one variant the module was compiled with (WRT_WASM_TARGET).
 * x86-64: the best the CPU runs (AVX-512 VNNI > AVX-512 > AVX2+FMA > scalar), or
 * WASMRT_FORCE_TARGET=scalar|avx2|avx512|avx512vnni for tests (ignored when the CPU lacks it); avx512vnni differs
 * from avx512 only in its int8 kernels. aarch64: NEON when compiled in. */
#include "engine.h"

#if !defined(WRT_WASM_TARGET)
static int same(const char* a, const char* b) {
  while (*a && *a == *b) a++, b++;
  return *a == *b;
}
#endif

const wrt_target* pick_target(void) {
#if defined(WRT_WASM_TARGET)
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
