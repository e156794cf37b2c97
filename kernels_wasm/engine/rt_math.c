/* Double-precision exp/log/pow for the non-hot ops (SOFTMAX, POW): wasm has no libm, and computing in double then
 * rounding once keeps these ops within an ulp or two of python_ref, which computes in float64. */
#include "rt.h"

static double from_bits(uint64_t u) {
  double d;
  __builtin_memcpy(&d, &u, sizeof d);
  return d;
}

static uint64_t to_bits(double d) {
  uint64_t u;
  __builtin_memcpy(&u, &d, sizeof u);
  return u;
}

int rt_isnan(double x) { return x != x; }
float rt_inf(void) { return __builtin_inff(); }
double rt_floor(double x) { return __builtin_floor(x); }
double rt_ceil(double x) { return __builtin_ceil(x); }
double rt_sqrt(double x) { return __builtin_sqrt(x); }

float rt_minf(float a, float b) { return (a != a || b != b) ? a + b : (a < b ? a : b); }
float rt_maxf(float a, float b) { return (a != a || b != b) ? a + b : (a > b ? a : b); }

/* 2^k for k in [-1022, 1023] */
static double pow2i(int k) { return from_bits((uint64_t)(k + 1023) << 52); }

double rt_exp(double x) {
  if (x != x) return x;
  if (x > 709.782712893384) return __builtin_inf();
  if (x < -745.2) return 0.0;
  const double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
  double kd = __builtin_floor(x * 1.4426950408889634 + 0.5);
  int k = (int)kd;
  double r = (x - kd * ln2_hi) - kd * ln2_lo; /* |r| <= 0.347 */
  /* Taylor series to r^14/14!: truncation error < 1e-18 */
  double p = 1.0 / 87178291200.0;
  static const double inv_fact[] = {1.0 / 6227020800.0, 1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0,
                                    1.0 / 362880.0,     1.0 / 40320.0,     1.0 / 5040.0,     1.0 / 720.0,
                                    1.0 / 120.0,        1.0 / 24.0,        1.0 / 6.0,        0.5,
                                    1.0,                1.0};
  for (unsigned i = 0; i < sizeof inv_fact / sizeof inv_fact[0]; i++) p = p * r + inv_fact[i];
  /* split the scale so 2^k never leaves the normal range */
  int k1 = k / 2, k2 = k - k1;
  return p * pow2i(k1) * pow2i(k2);
}

double rt_log(double x) {
  if (x != x || x < 0) return __builtin_nan("");
  if (x == 0) return -__builtin_inf();
  if (x == __builtin_inf()) return x;
  int e = 0;
  if (x < 2.2250738585072014e-308) { x *= 18014398509481984.0; e = -54; } /* subnormal: scale by 2^54 */
  uint64_t u = to_bits(x);
  e += (int)((u >> 52) & 0x7ff) - 1023;
  double m = from_bits((u & 0x000fffffffffffffull) | 0x3ff0000000000000ull); /* [1, 2) */
  if (m > 1.4142135623730951) { m *= 0.5; e++; }
  double s = (m - 1.0) / (m + 1.0), s2 = s * s; /* |s| <= 0.1716 */
  double t = 0.0;
  for (int k = 23; k >= 3; k -= 2) t = (t + 1.0 / k) * s2;
  double logm = 2.0 * s * (1.0 + t);
  return (double)e * 6.93147180559945286227e-01 + logm;
}

double rt_pow(double x, double y) {
  if (y == 0) return 1.0;
  if (x == 1.0) return 1.0;
  if (x != x || y != y) return x + y;
  int yint = __builtin_floor(y) == y;
  if (yint && y >= -64 && y <= 64) { /* exact by squaring, as the common x^2, x^3 cases expect */
    int n = (int)(y < 0 ? -y : y);
    double r = 1.0, b = x;
    while (n) {
      if (n & 1) r *= b;
      b *= b;
      n >>= 1;
    }
    return y < 0 ? 1.0 / r : r;
  }
  if (x == 0) return y > 0 ? 0.0 : __builtin_inf();
  double ax = x < 0 ? -x : x;
  if (x < 0 && !yint) return __builtin_nan("");
  double r = rt_exp(y * rt_log(ax));
  if (x < 0) { /* integer y beyond 64: odd powers keep the sign */
    double half = y * 0.5;
    if (__builtin_floor(half) != half) r = -r;
  }
  return r;
}
