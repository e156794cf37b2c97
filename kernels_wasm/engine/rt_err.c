/* Error messages without libc: a small printf subset into a per-thread buffer. */
#include "rt.h"

static WRT_TLS char last_error[512];

static void put(char* out, size_t cap, size_t* n, char c) {
  if (*n + 1 < cap) out[*n] = c;
  (*n)++;
}

static void put_u64(char* out, size_t cap, size_t* n, uint64_t v) {
  char tmp[24];
  int k = 0;
  do { tmp[k++] = (char)('0' + v % 10); v /= 10; } while (v);
  while (k) put(out, cap, n, tmp[--k]);
}

static void put_i64(char* out, size_t cap, size_t* n, int64_t v) {
  if (v < 0) {
    put(out, cap, n, '-');
    put_u64(out, cap, n, (uint64_t)0 - (uint64_t)v);
  } else {
    put_u64(out, cap, n, (uint64_t)v);
  }
}

/* Python's format(v, ".6g") / ".9g" (p significant digits, trailing zeros dropped, exponent as e-05): quantization
 * parameters in messages read the same as python_ref's */
static void put_g(char* out, size_t cap, size_t* n, double v, int p) {
  if (rt_isnan(v)) { put(out, cap, n, 'n'); put(out, cap, n, 'a'); put(out, cap, n, 'n'); return; }
  if (v < 0 || (v == 0 && 1 / v < 0)) { put(out, cap, n, '-'); v = -v; }
  if (v > 1.7976931348623157e308) { put(out, cap, n, 'i'); put(out, cap, n, 'n'); put(out, cap, n, 'f'); return; }
  if (v == 0) { put(out, cap, n, '0'); return; }
  int e = 0;
  for (double t = v; t >= 10; t /= 10) e++;
  for (double t = v; t < 1; t *= 10) e--;
  uint64_t lo = 1, d = 0;
  for (int i = 1; i < p; i++) lo *= 10;
  for (int tries = 0; tries < 3; tries++) { /* digits = round(v * 10^(p-1-e)), one multiply or divide when exact */
    int k = p - 1 - e;
    double sv = v;
    for (; k > 22; k -= 22) sv *= 1e22;
    for (; k < -22; k += 22) sv /= 1e22;
    double pw = 1;
    for (int i = 0; i < (k < 0 ? -k : k); i++) pw *= 10;
    sv = k >= 0 ? sv * pw : sv / pw;
    d = (uint64_t)(sv + 0.5);
    if (d >= lo * 10) { e++; continue; }
    if (d < lo) { e--; continue; }
    break;
  }
  char dig[24];
  for (int i = p - 1; i >= 0; i--) { dig[i] = (char)('0' + d % 10); d /= 10; }
  int last = p;
  while (last > 1 && dig[last - 1] == '0') last--;
  if (e >= -4 && e < p) {
    if (e < 0) {
      put(out, cap, n, '0');
      put(out, cap, n, '.');
      for (int i = 0; i < -e - 1; i++) put(out, cap, n, '0');
      for (int i = 0; i < last; i++) put(out, cap, n, dig[i]);
    } else {
      for (int i = 0; i <= e; i++) put(out, cap, n, i < last ? dig[i] : '0');
      if (last > e + 1) {
        put(out, cap, n, '.');
        for (int i = e + 1; i < last; i++) put(out, cap, n, dig[i]);
      }
    }
    return;
  }
  put(out, cap, n, dig[0]);
  if (last > 1) {
    put(out, cap, n, '.');
    for (int i = 1; i < last; i++) put(out, cap, n, dig[i]);
  }
  put(out, cap, n, 'e');
  put(out, cap, n, e < 0 ? '-' : '+');
  if (e < 0) e = -e;
  if (e < 10) put(out, cap, n, '0');
  put_u64(out, cap, n, (uint64_t)e);
}

size_t rt_vformat(char* out, size_t cap, const char* fmt, va_list ap) {
  size_t n = 0;
  for (const char* p = fmt; *p; p++) {
    if (*p != '%') { put(out, cap, &n, *p); continue; }
    switch (*++p) {
      case 'd': put_i64(out, cap, &n, va_arg(ap, int)); break;
      case 'u': put_u64(out, cap, &n, va_arg(ap, unsigned)); break;
      case 'l': put_i64(out, cap, &n, va_arg(ap, int64_t)); break;
      case 'z': put_u64(out, cap, &n, va_arg(ap, size_t)); break;
      case 'g': put_g(out, cap, &n, va_arg(ap, double), 6); break;
      case 'G': put_g(out, cap, &n, va_arg(ap, double), 9); break;
      case 'c': put(out, cap, &n, (char)va_arg(ap, int)); break;
      case 's': {
        const char* s = va_arg(ap, const char*);
        for (s = s ? s : "(null)"; *s; s++) put(out, cap, &n, *s);
        break;
      }
      case '%': put(out, cap, &n, '%'); break;
      default: p--; put(out, cap, &n, '%'); break; /* unknown: print literally */
    }
  }
  if (cap) out[n < cap ? n : cap - 1] = 0;
  return n;
}

size_t rt_format(char* out, size_t cap, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  size_t n = rt_vformat(out, cap, fmt, ap);
  va_end(ap);
  return n;
}

int rt_verror(int code, const char* fmt, va_list ap) {
  rt_vformat(last_error, sizeof last_error, fmt, ap);
  return code;
}

int rt_error(int code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  rt_verror(code, fmt, ap);
  va_end(ap);
  return code;
}

const char* rt_last_error(void) { return last_error; }
void rt_clear_error(void) { last_error[0] = 0; }
const char* wrt_error_message(void) { return last_error; }
