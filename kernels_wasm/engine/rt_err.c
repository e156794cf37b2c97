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

/* %g-like: 6 significant digits, enough to name an attribute value in a message */
static void put_double(char* out, size_t cap, size_t* n, double v) {
  if (rt_isnan(v)) { put(out, cap, n, 'n'); put(out, cap, n, 'a'); put(out, cap, n, 'n'); return; }
  if (v < 0) { put(out, cap, n, '-'); v = -v; }
  if (v > 1e300) { put(out, cap, n, 'i'); put(out, cap, n, 'n'); put(out, cap, n, 'f'); return; }
  if (v >= 1e15 || (v != 0 && v < 1e-4)) { /* scientific */
    int e = 0;
    while (v >= 10) { v /= 10; e++; }
    while (v < 1) { v *= 10; e--; }
    put_double(out, cap, n, v);
    put(out, cap, n, 'e');
    put_i64(out, cap, n, e);
    return;
  }
  uint64_t ip = (uint64_t)v;
  double frac = v - (double)ip;
  int digits = 0;
  for (uint64_t t = ip; t; t /= 10) digits++;
  int decimals = digits >= 6 ? 0 : 6 - (digits ? digits : 1);
  uint64_t scale = 1;
  for (int i = 0; i < decimals; i++) scale *= 10;
  uint64_t f = (uint64_t)(frac * (double)scale + 0.5);
  if (f >= scale) { ip++; f -= scale; }
  put_u64(out, cap, n, ip);
  if (decimals && f) {
    char tmp[8];
    for (int i = decimals - 1; i >= 0; i--) { tmp[i] = (char)('0' + f % 10); f /= 10; }
    int last = decimals;
    while (last > 0 && tmp[last - 1] == '0') last--;
    put(out, cap, n, '.');
    for (int i = 0; i < last; i++) put(out, cap, n, tmp[i]);
  }
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
      case 'f': put_double(out, cap, &n, va_arg(ap, double)); break;
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
