/* Per-op profiling. Hosts learn the ops (type, model name, which kernel path runs them) and either step through
 * a run op by op with their own clock (wrt_run_ops: the wasm modules stay import-free, JS times each step with
 * performance.now) or, natively, let the engine time every op itself (wrt_run_profiled: the calling thread's CPU
 * time, CLOCK_THREAD_CPUTIME_ID, which time slices lost to other processes on a loaded machine do not inflate). */
#if !defined(__wasm__) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 199309L /* clock_gettime, CLOCK_THREAD_CPUTIME_ID under -std=c11 */
#endif
#include "engine.h"

int wrt_num_ops(const wrt_model* m) { return m ? m->n_ops : 0; }

static const wrt_op* op_at(const wrt_model* m, int i) { return m && i >= 0 && i < m->n_ops ? &m->ops[i] : 0; }

const char* wrt_op_type(const wrt_model* m, int i) {
  const wrt_op* op = op_at(m, i);
  return op ? op_name(op) : 0;
}

const char* wrt_op_name(const wrt_model* m, int i) {
  const wrt_op* op = op_at(m, i);
  return op ? (op->name ? op->name : "") : 0;
}

const char* wrt_op_kernel(const wrt_model* m, int i) {
  const wrt_op* op = op_at(m, i);
  if (!op) return 0;
  return op->skip ? "skipped (empty output)" : op->impl ? op->impl->kernel(op) : "?";
}

int wrt_op_span(const wrt_model* m, int i) {
  const wrt_op* op = op_at(m, i);
  return op && op->chain > 1 && i + op->chain <= m->n_ops ? op->chain : 1;
}

int wrt_run_ops(wrt_model* m, int begin, int end) {
  if (!m) return rt_error(WRT_ERR_INPUT, "wrt_run_ops: model is NULL");
  if (begin < 0 || end > m->n_ops || begin > end)
    return rt_error(WRT_ERR_INPUT, "wrt_run_ops: ops [%d, %d) outside [0, %d)", begin, end, m->n_ops);
  return run_ops(m, begin, end);
}

void* wrt_tensor_data(wrt_model* m, int t) { return m && t >= 0 && t < m->n_tensors ? m->t[t].data : 0; }
size_t wrt_tensor_nbytes(const wrt_model* m, int t) {
  return m && t >= 0 && t < m->n_tensors ? (size_t)m->t[t].nbytes : 0;
}

#if !defined(__wasm__)
#include <time.h>

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

int wrt_run_profiled(wrt_model* m, double* ms, int cap) {
  if (!m) return -rt_error(WRT_ERR_INPUT, "wrt_run_profiled: model is NULL");
  double t0 = now_ms();
  for (int k = 0, span; k < m->n_ops; k += span) { /* a chain's time is its first op's */
    span = wrt_op_span(m, k);
    int r = run_ops(m, k, k + span);
    if (r) return -r;
    double t1 = now_ms();
    for (int i = k; i < k + span && ms; i++)
      if (i < cap) ms[i] = i == k ? t1 - t0 : 0;
    t0 = t1;
  }
  return m->n_ops;
}
#endif
