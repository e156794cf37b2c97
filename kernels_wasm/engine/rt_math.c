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

double rt_tanh(double x) {
  double a = x < 0 ? -x : x;
  if (a != a) return x;
  double t;
  if (a < 0.25) { /* odd series a - a^3/3 + 2a^5/15 - ...: no cancellation near 0 */
    double a2 = a * a;
    t = a * (1.0 + a2 * (-1.0 / 3 + a2 * (2.0 / 15 + a2 * (-17.0 / 315 + a2 * (62.0 / 2835 + a2 * (-1382.0 / 155925 +
        a2 * (21844.0 / 6081075 + a2 * (-929569.0 / 638512875))))))));
  } else {
    double e = rt_exp(-2 * a);
    t = (1 - e) / (1 + e);
  }
  return x < 0 ? -t : t;
}

/* erf: the Taylor series below 2 (alternating terms of at most 11, 40 of them: error ~1e-15), the continued
 * fraction of erfc above (Lentz's algorithm) */
double rt_erf(double x) {
  double a = x < 0 ? -x : x;
  if (a != a) return x;
  double r;
  if (a < 2.0) {
    double a2 = a * a, term = a, sum = a; /* term_n = (-1)^n a^(2n+1) / n! */
    for (int n = 1; n < 60; n++) {
      term *= -a2 / n;
      double add = term / (2 * n + 1);
      sum += add;
      if ((add < 0 ? -add : add) < 1e-17 * sum) break;
    }
    r = sum * 1.1283791670955126; /* 2 / sqrt(pi) */
  } else if (a < 6.5) {
    /* erfc(a) = exp(-a^2) / sqrt(pi) * 1 / (a + (1/2) / (a + 1 / (a + (3/2) / (a + 2 / (a + ...))))) */
    const double tiny = 1e-300;
    double f = a, c = a, d = 0;
    for (int n = 1; n < 200; n++) {
      double an = n * 0.5;
      d = a + an * d;
      d = d == 0 ? tiny : d;
      c = a + an / c;
      c = c == 0 ? tiny : c;
      d = 1 / d;
      double delta = c * d;
      f *= delta;
      if (delta > 1 - 1e-16 && delta < 1 + 1e-16) break;
    }
    r = 1 - rt_exp(-a * a) * 0.5641895835477563 / f; /* 1 / sqrt(pi) */
  } else {
    r = 1.0;
  }
  return x < 0 ? -r : r;
}

/* sin/cos: x = k pi/2 + r (three-part pi/2, |r| <= pi/4), then their Taylor series */
static double sin_series(double r) {
  double r2 = r * r, t = 0;
  for (int n = 21; n >= 3; n -= 2) t = (t + 1.0) * -r2 / (n * (n - 1));
  return r * (1 + t);
}
static double cos_series(double r) {
  double r2 = r * r, t = 0;
  for (int n = 22; n >= 2; n -= 2) t = (t + 1.0) * -r2 / (n * (n - 1));
  return 1 + t;
}
static double quadrant(double x, int* q) {
  double k = __builtin_floor(x * 0.6366197723675814 + 0.5); /* 2 / pi */
  *q = (int)((int64_t)k & 3);
  return ((x - k * 1.5707963267341256) - k * 6.077100506506192e-11) - k * 2.0222662487959506e-21;
}
double rt_sin(double x) {
  if (x != x || x == __builtin_inf() || x == -__builtin_inf()) return __builtin_nan("");
  int q;
  double r = quadrant(x, &q);
  double v = q & 1 ? cos_series(r) : sin_series(r);
  return q & 2 ? -v : v;
}
double rt_cos(double x) {
  if (x != x || x == __builtin_inf() || x == -__builtin_inf()) return __builtin_nan("");
  int q;
  double r = quadrant(x, &q);
  double v = q & 1 ? sin_series(r) : cos_series(r);
  return (q == 1 || q == 2) ? -v : v;
}

/* atan by reduction to |t| <= tan(pi/8) and its series; atan2 from the quadrant */
static double atan_pos(double a) { /* a >= 0 */
  int inv = a > 1;
  if (inv) a = 1 / a;
  double base = 0;
  if (a > 0.41421356237309503) { /* atan(a) = pi/4 + atan((a - 1) / (a + 1)) */
    a = (a - 1) / (a + 1);
    base = 0.7853981633974483;
  }
  double a2 = a * a, t = 0;
  for (int n = 49; n >= 3; n -= 2) t = (t + 1.0 / n) * -a2;
  double r = base + a * (1 + t);
  return inv ? 1.5707963267948966 - r : r;
}
double rt_atan2(double y, double x) {
  if (x != x || y != y) return x + y;
  if (x == 0 && y == 0) return (y < 0 || (y == 0 && 1 / y < 0)) ? -0.0 : 0.0;
  double ax = x < 0 ? -x : x, ay = y < 0 ? -y : y;
  double r = ax >= ay ? atan_pos(ay / ax) : 1.5707963267948966 - atan_pos(ax / ay);
  if (x < 0) r = 3.141592653589793 - r;
  return y < 0 ? -r : r;
}
