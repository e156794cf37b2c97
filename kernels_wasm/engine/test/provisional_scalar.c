/* Provisional portable kernel table, written against include/wrt_kernels.h to test the engine before the generated
 * kernels (kernels_wasm/generated) exist. The build uses it only for a target whose generated source is missing.
 * WRT_PROVISIONAL_SYMBOL / WRT_PROVISIONAL_NAME let one source stand in for any target. */
#include "../../include/wrt_kernels.h"
#include "../rt.h"

#ifndef WRT_PROVISIONAL_SYMBOL
#define WRT_PROVISIONAL_SYMBOL wrt_target_scalar
#endif
#ifndef WRT_PROVISIONAL_NAME
#define WRT_PROVISIONAL_NAME "scalar"
#endif

#define MR 4
#define NR 8
#define CT 4

static float cl(float v, const wrt_clamp* c) {
  v = v < c->min ? c->min : v;
  return v > c->max ? c->max : v;
}

static void gemm(size_t mr, size_t nc, size_t kc, const float* a, size_t a_stride, const float* w, float* c,
                 size_t c_stride, const wrt_clamp* clamp) {
  for (size_t i = 0; i < mr; i++) {
    const float* ar = (const float*)((const char*)a + i * a_stride);
    float* cr = (float*)((char*)c + i * c_stride);
    for (size_t j = 0; j < nc; j++) {
      float acc = w[j];
      for (size_t k = 0; k < kc; k++) acc += ar[k] * w[NR + k * NR + j];
      cr[j] = cl(acc, clamp);
    }
  }
}

static void igemm(size_t mr, size_t nc, size_t kc, size_t ks, const float* const* ind, const float* w, float* c,
                  size_t c_stride, const wrt_clamp* clamp) {
  for (size_t i = 0; i < mr; i++) {
    float* cr = (float*)((char*)c + i * c_stride);
    for (size_t j = 0; j < nc; j++) {
      float acc = w[j];
      for (size_t t = 0; t < ks; t++) {
        const float* ar = ind[t * mr + i];
        for (size_t k = 0; k < kc; k++) acc += ar[k] * w[NR + (t * kc + k) * NR + j];
      }
      cr[j] = cl(acc, clamp);
    }
  }
}

static void dwconv(size_t channels, size_t width, size_t ks, const float* const* in, const float* w, float* out,
                   size_t out_stride, const wrt_clamp* clamp) {
  for (size_t p = 0; p < width; p++) {
    float* o = (float*)((char*)out + p * out_stride);
    for (size_t ch = 0; ch < channels; ch++) {
      const float* base = w + (ch / CT) * CT * (1 + ks);
      size_t j = ch % CT;
      float acc = base[j];
      for (size_t t = 0; t < ks; t++) acc += in[p * ks + t][ch] * base[CT + t * CT + j];
      o[ch] = cl(acc, clamp);
    }
  }
}

static float bin(int op, float a, float b) {
  switch (op) {
    case WRT_BIN_ADD: return a + b;
    case WRT_BIN_SUB: return a - b;
    case WRT_BIN_RSUB: return b - a;
    case WRT_BIN_MUL: return a * b;
    case WRT_BIN_DIV: return a / b;
    case WRT_BIN_RDIV: return b / a;
    case WRT_BIN_MAX: return rt_maxf(a, b);
    default: return rt_minf(a, b);
  }
}

#define BIN(name, code)                                                                                    \
  static void name(size_t n, const float* a, const float* b, float* y, const wrt_clamp* c) {               \
    for (size_t i = 0; i < n; i++) y[i] = cl(bin(code, a[i], b[i]), c);                                    \
  }                                                                                                        \
  static void name##_s(size_t n, const float* a, const float* b, float* y, const wrt_clamp* c) {           \
    float s = b[0];                                                                                        \
    for (size_t i = 0; i < n; i++) y[i] = cl(bin(code, a[i], s), c);                                       \
  }
BIN(b_add, WRT_BIN_ADD)
BIN(b_sub, WRT_BIN_SUB)
BIN(b_rsub, WRT_BIN_RSUB)
BIN(b_mul, WRT_BIN_MUL)
BIN(b_div, WRT_BIN_DIV)
BIN(b_rdiv, WRT_BIN_RDIV)
BIN(b_max, WRT_BIN_MAX)
BIN(b_min, WRT_BIN_MIN)

static float un(int op, float x, const float* p) {
  double d = x;
  switch (op) {
    case WRT_UN_RELU: return x > 0 ? x : 0.0f;
    case WRT_UN_CLIP: return x < p[0] ? p[0] : (x > p[1] ? p[1] : x);
    case WRT_UN_LEAKY_RELU: return x >= 0 ? x : p[0] * x;
    case WRT_UN_HARD_SWISH: { float t = x + 3; t = t < 0 ? 0 : (t > 6 ? 6 : t); return x * t / 6; }
    case WRT_UN_HARD_SIGMOID: { float t = p[0] * x + p[1]; return t < 0 ? 0 : (t > 1 ? 1 : t); }
    case WRT_UN_SIGMOID: return (float)(1.0 / (1.0 + rt_exp(-d)));
    case WRT_UN_TANH: { double e = rt_exp(-2 * (d < 0 ? -d : d)), t = (1 - e) / (1 + e); return (float)(d < 0 ? -t : t); }
    case WRT_UN_EXP: return (float)rt_exp(d);
    case WRT_UN_SQRT: return (float)rt_sqrt(d);
    case WRT_UN_ABS: return x < 0 ? -x : x;
    default: return -x;
  }
}

#define UN(name, code) \
  static void name(size_t n, const float* x, float* y, const float* p) { for (size_t i = 0; i < n; i++) y[i] = un(code, x[i], p); }
UN(u_relu, WRT_UN_RELU)
UN(u_clip, WRT_UN_CLIP)
UN(u_leaky, WRT_UN_LEAKY_RELU)
UN(u_hswish, WRT_UN_HARD_SWISH)
UN(u_hsig, WRT_UN_HARD_SIGMOID)
UN(u_sig, WRT_UN_SIGMOID)
UN(u_tanh, WRT_UN_TANH)
UN(u_exp, WRT_UN_EXP)
UN(u_sqrt, WRT_UN_SQRT)
UN(u_abs, WRT_UN_ABS)
UN(u_neg, WRT_UN_NEG)

static void maxpool(size_t channels, size_t ks, const float* const* in, float* y, float scale, const wrt_clamp* c) {
  (void)scale;
  for (size_t ch = 0; ch < channels; ch++) {
    float v = in[0][ch];
    for (size_t t = 1; t < ks; t++) v = rt_maxf(v, in[t][ch]);
    y[ch] = cl(v, c);
  }
}

static void avgpool(size_t channels, size_t ks, const float* const* in, float* y, float scale, const wrt_clamp* c) {
  for (size_t ch = 0; ch < channels; ch++) {
    float v = 0;
    for (size_t t = 0; t < ks; t++) v += in[t][ch];
    y[ch] = cl(v * scale, c);
  }
}

const wrt_target WRT_PROVISIONAL_SYMBOL = {
    .name = WRT_PROVISIONAL_NAME,
    .gemm_mr = MR,
    .gemm_nr = NR,
    .gemm = gemm,
    .igemm = igemm,
    .dwconv = {{0, CT, dwconv}},
    .vbinary = {b_add, b_sub, b_rsub, b_mul, b_div, b_rdiv, b_max, b_min},
    .vbinary_scalar = {b_add_s, b_sub_s, b_rsub_s, b_mul_s, b_div_s, b_rdiv_s, b_max_s, b_min_s},
    .vunary = {u_relu, u_clip, u_leaky, u_hswish, u_hsig, u_sig, u_tanh, u_exp, u_sqrt, u_abs, u_neg},
    .maxpool = maxpool,
    .avgpool = avgpool,
};
