/* Per-op algorithm choice: the candidates an op has (a set of WRT_CH_* bits, offered by the op's plan), the one the
 * rules or a forced choice vector picked, and the measuring procedure's decision (hosts time, this file decides).
 *
 * Candidates are listed in the fixed order of their bits, so index 0 is always the dense path (indirect GEMM or
 * plain GEMM), the one whose results follow python_ref's direct computation: a vector of zeros is the deterministic
 * choice. A forced index the op lacks (or -1) leaves the op to the rules. The forced vector (wrt_set_choices) is
 * read when a model is planned at load, like the process-wide sparse and conv policies; a resize keeps the choice.
 *
 * Measuring (hosts, docs/choices.md): per candidate index k a load with every op that has k forced to it, then
 * warm-up runs and timed passes of each op that has k, alone (wrt_run_ops(i, i + 1), on the zeros of a fresh arena:
 * only convolutions and fully-connected layers have candidates, and their speed does not depend on the values),
 * whose times go to wrt_tune_time; wrt_tune_pick then names each op's fastest candidate (the rules' unless another
 * is faster by the margin). wasm has no clock import: the host times. */
#include "engine.h"

/* the procedure's constants, read by every host through wrt_tune_param (one declaration) */
enum { TUNE_PASSES = 3, TUNE_WARM = 1, TUNE_BUDGET_MS = 2000, TUNE_MARGIN_PCT = 3 };
#define TUNE_MAX_SAMPLES 8

static int32_t* forced; /* per op: a candidate index, or -1 */
static int n_forced;
static int forced_all = -1; /* ops beyond the vector */

int wrt_force_choice(int k) {
  int old = forced_all;
  forced_all = k >= 0 && k < WRT_CH_COUNT ? k : -1;
  return old;
}

int wrt_set_choices(const int32_t* choices, int n) {
  if (forced) rt_free(forced);
  forced = 0;
  n_forced = 0;
  if (!choices || n <= 0) return WRT_OK;
  if (n > WRT_MAX_OPS) return rt_error(WRT_ERR_INPUT, "wrt_set_choices: %d choices, more than %d ops", n, WRT_MAX_OPS);
  forced = rt_alloc((size_t)n * sizeof *forced);
  if (!forced) return rt_error(WRT_ERR_NOMEM, "wrt_set_choices: out of memory");
  for (int i = 0; i < n; i++) forced[i] = choices[i] >= 0 && choices[i] < WRT_CH_COUNT ? choices[i] : -1;
  n_forced = n;
  return WRT_OK;
}

void choice_reset(wrt_op* op, int k) {
  op->cands = 0;
  op->algo = 0;
  op->force = (int8_t)(forced && k < n_forced ? forced[k] : forced_all);
}

void choice_offer(wrt_op* op, unsigned bits) { op->cands |= (uint8_t)bits; }

unsigned choice_forced(const wrt_op* op) {
  if (op->force < 0) return 0;
  int k = op->force;
  for (unsigned b = 1; b < (1u << WRT_CH_COUNT); b <<= 1)
    if (op->cands & b && k-- == 0) return b;
  return 0;
}

unsigned choice_note(wrt_op* op, unsigned bit) {
  op->algo = (uint8_t)bit;
  return bit;
}

/* Winograd F(m x m, 3x3) applies: a float 3x3 convolution of one group, stride 1, dilation 1 */
int choice_winograd(const wrt_model* m, const wrt_op* op) {
  if (op->type != OP_CONV_2D || op->n_in < 2 || op->in[1] < 0) return 0;
  const wrt_tensor* w = &m->t[op->in[1]];
  const wrt_attrs* a = &op->a;
  return w->rank == 4 && w->dims[1] == 3 && w->dims[2] == 3 && a->strides[0] == 1 && a->strides[1] == 1 &&
         a->dilations[0] == 1 && a->dilations[1] == 1 && a->groups == 1 && m->t[op->in[0]].dtype == WRT_F32;
}

static const wrt_op* op_of(const wrt_model* m, int i) {
  return m && i >= 0 && i < m->n_ops && !m->ops[i].skip ? &m->ops[i] : 0;
}

int wrt_op_num_choices(const wrt_model* m, int i) {
  const wrt_op* op = op_of(m, i);
  int n = op ? __builtin_popcount(op->cands) : 0;
  return n >= 2 ? n : 0;
}

static unsigned nth_bit(unsigned set, int k) {
  for (unsigned b = 1; b < (1u << WRT_CH_COUNT); b <<= 1)
    if (set & b && k-- == 0) return b;
  return 0;
}

const char* wrt_op_choice_name(const wrt_model* m, int i, int k) {
  if (k < 0 || k >= wrt_op_num_choices(m, i)) return 0;
  const wrt_op* op = &m->ops[i];
  switch (nth_bit(op->cands, k)) {
    case WRT_CH_DENSE: {
      const wrt_attrs* a = &op->a;
      const wrt_tensor* w = &m->t[op->in[1]];
      int gemm = op->type != OP_CONV_2D || (w->rank == 4 && w->dims[1] == 1 && w->dims[2] == 1 && a->strides[0] == 1 &&
                                            a->strides[1] == 1 && !a->pads[0] && !a->pads[1] && !a->pads[2] &&
                                            !a->pads[3]);
      return gemm ? "dense" : "igemm";
    }
    case WRT_CH_SPARSE: return "sparse";
    case WRT_CH_WINO2: return "winograd F(2x2,3x3)";
    case WRT_CH_WINO4: return "winograd F(4x4,3x3)";
    default: return 0;
  }
}

int wrt_op_chosen(const wrt_model* m, int i) {
  if (!wrt_op_num_choices(m, i)) return -1;
  const wrt_op* op = &m->ops[i];
  if (!(op->cands & op->algo)) return -1;
  return __builtin_popcount(op->cands & (op->algo - 1u));
}

/* the measuring procedure's state: per op and candidate, up to TUNE_MAX_SAMPLES times */
static float* tune_ms;
static uint8_t* tune_n;
static int tune_ops;

int wrt_tune_param(int which) {
  static const int params[] = {TUNE_PASSES, TUNE_WARM, TUNE_BUDGET_MS, TUNE_MARGIN_PCT, WRT_CH_COUNT};
  return which >= 0 && which < (int)(sizeof params / sizeof *params) ? params[which] : -1;
}

int wrt_tune_begin(int n_ops) {
  if (tune_ms) rt_free(tune_ms);
  if (tune_n) rt_free(tune_n);
  tune_ms = 0;
  tune_n = 0;
  tune_ops = 0;
  if (n_ops <= 0) return WRT_OK;
  if (n_ops > WRT_MAX_OPS) return rt_error(WRT_ERR_INPUT, "wrt_tune_begin: %d ops, more than %d", n_ops, WRT_MAX_OPS);
  size_t cells = (size_t)n_ops * WRT_CH_COUNT;
  tune_ms = rt_alloc(cells * TUNE_MAX_SAMPLES * sizeof *tune_ms);
  tune_n = rt_calloc(cells);
  if (!tune_ms || !tune_n) {
    wrt_tune_begin(0);
    return rt_error(WRT_ERR_NOMEM, "wrt_tune_begin: out of memory");
  }
  tune_ops = n_ops;
  return WRT_OK;
}

void wrt_tune_time(int op, int k, double ms) {
  if (op < 0 || op >= tune_ops || k < 0 || k >= WRT_CH_COUNT || !(ms >= 0.0) || ms > 1e9) return;
  size_t cell = (size_t)op * WRT_CH_COUNT + (size_t)k;
  if (tune_n[cell] < TUNE_MAX_SAMPLES) tune_ms[cell * TUNE_MAX_SAMPLES + tune_n[cell]++] = (float)ms;
}

/* the median of a cell's times (the upper one of an even count); -1 without any */
double wrt_tune_median(int op, int k) {
  if (op < 0 || op >= tune_ops || k < 0 || k >= WRT_CH_COUNT) return -1.0;
  size_t cell = (size_t)op * WRT_CH_COUNT + (size_t)k;
  int n = tune_n[cell];
  if (!n) return -1.0;
  float v[TUNE_MAX_SAMPLES];
  for (int i = 0; i < n; i++) v[i] = tune_ms[cell * TUNE_MAX_SAMPLES + i];
  for (int i = 1; i < n; i++) /* insertion sort: a handful of values */
    for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
      float t = v[j];
      v[j] = v[j - 1];
      v[j - 1] = t;
    }
  return v[n / 2];
}

/* op's candidate of the lowest median among those timed; the rules' (rules_k) unless another beats it by the margin,
 * so noise does not move a choice; rules_k when nothing was timed */
int wrt_tune_pick(int op, int rules_k) {
  int best = -1;
  double best_ms = 0.0;
  for (int k = 0; k < WRT_CH_COUNT; k++) {
    double t = wrt_tune_median(op, k);
    if (t >= 0.0 && (best < 0 || t < best_ms)) {
      best = k;
      best_ms = t;
    }
  }
  double rules_ms = wrt_tune_median(op, rules_k);
  if (best < 0) return rules_k;
  if (rules_ms >= 0.0 && best_ms >= rules_ms * (1.0 - TUNE_MARGIN_PCT / 100.0)) return rules_k;
  return best;
}
