/* Engine-internal runtime: memory, errors, math. The only file set that knows whether it runs in wasm or natively. */
#ifndef WRT_RT_H
#define WRT_RT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "wasmrt.h"

#if defined(__wasm__)
#define WRT_TLS
#else
#define WRT_TLS _Thread_local
#endif

#define WRT_ALIGN 64

/* memory: 64-byte aligned blocks; wasm reuses freed blocks (linear memory never shrinks) */
void* rt_alloc(size_t n);
void* rt_calloc(size_t n);
void rt_free(void* p);
#if !defined(__wasm__)
void* rt_map(size_t n); /* zeroed, 2 MB aligned, in huge pages where the OS gives them; NULL: none */
void rt_unmap(void* p, size_t n);
#endif
void rt_copy(void* dst, const void* src, size_t n);  /* memmove semantics */
void rt_zero(void* dst, size_t n);

/* errors: the last message, per thread natively */
int rt_error(int code, const char* fmt, ...);
int rt_verror(int code, const char* fmt, va_list ap);
const char* rt_last_error(void);
void rt_clear_error(void);
/* printf subset: %d %u (unsigned) %l (int64_t) %z (size_t) %s %c %%, %g / %G (double as Python's
 * format(v, ".6g") / ".9g") */
size_t rt_vformat(char* out, size_t cap, const char* fmt, va_list ap);
size_t rt_format(char* out, size_t cap, const char* fmt, ...);

/* math in double precision for the non-hot ops (no libm in wasm) */
double rt_exp(double x);
double rt_log(double x);
double rt_pow(double x, double y);
double rt_floor(double x);
double rt_ceil(double x);
double rt_sqrt(double x);
double rt_tanh(double x);
double rt_erf(double x);
double rt_sin(double x);
double rt_cos(double x);
double rt_atan2(double y, double x);
float rt_inf(void);
int rt_isnan(double x);
float rt_minf(float a, float b);  /* NaN-propagating min/max as numpy's minimum/maximum */
float rt_maxf(float a, float b);

/* parallel regions (rt_threads.c): fn(ctx, t) for every t < n on the caller and up to threads - 1 pool threads;
 * inline in single-threaded builds, and natively while another region runs */
typedef void (*rt_task_fn)(void* ctx, size_t task);
void rt_parallel(int threads, size_t n, rt_task_fn fn, void* ctx);
/* a hint that regions follow soon: sleeping pool threads wake and spin a while */
void rt_pool_wake(void);

/* environment (native only; NULL in wasm) */
const char* rt_getenv(const char* name);

#endif
