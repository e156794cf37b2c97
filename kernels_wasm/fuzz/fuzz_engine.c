/* libFuzzer target for the C engine (built by `wasmrt build --only fuzz`, run by `wasmrt fuzz --target engine`).
 *
 * An input is a recipe (wrt_gen.h) that becomes a well-formed .wrt; an input that already is a .wrt file (bytes 4..8
 * "WRT0") is loaded as it is, so model files can seed the corpus too. Each model is loaded with resource budgets,
 * its inputs written (zeros, random or special values), run once or twice, its outputs read, and released.
 * Findings, beside what AddressSanitizer/UBSan and libFuzzer's -timeout / -rss_limit_mb / -malloc_limit_mb report:
 *   - a generated file that fails the FlatBuffers verifier (a bug of the generator: the attack is on meaning);
 *   - more heap held at once during load + run than the memory budget allows (counted by malloc hooks);
 *   - a model that loads but reports an inconsistent input or output (NULL pointer, size not its shape's).
 *   - a model whose load held more heap than the engine counts in wrt_memory_size, beyond temporaries in
 *     proportion to the file (16 bytes per file byte): the budget would be blind to it.
 * Environment: WRT_FUZZ_MAX_MEMORY (bytes, default 256 MiB), WRT_FUZZ_MAX_WORK (default 2^20 multiply-adds: well
 * under a second under ASan; 0 = the engine's default),
 * WRT_FUZZ_DUMP=DIR (write each generated .wrt to DIR and do not load it: the replay of a corpus on other engines),
 * WRT_FUZZ_STATS=FILE (append the count of each load/run verdict at exit). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../engine/fb.h"
#include "../engine/wasmrt.h"
#include "wrt_gen.h"

void __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void*, size_t),
                                               void (*free_hook)(const volatile void*));
size_t __sanitizer_get_allocated_size(const volatile void* p);

static int tracking;
static int64_t live, peak;
static double max_memory = 256.0 * 1024 * 1024, max_work = 1048576.0;
#define SLACK (1 << 20) /* bookkeeping beside the budget: the model struct, names, op tables */

static void finding(const char* what, const char* engine_msg) {
  fprintf(stderr, "==wrt-fuzz== FINDING: %s%s%s\n", what, engine_msg ? " / engine: " : "", engine_msg ? engine_msg : "");
  abort();
}

static void on_malloc(const volatile void* p, size_t n) {
  (void)p;
  if (!tracking) return;
  live += (int64_t)n;
  if (live > peak) peak = live;
  if ((double)live > max_memory + SLACK) { /* stop at the allocation that crosses the budget: its stack is the report */
    tracking = 0;
    char msg[160];
    snprintf(msg, sizeof msg, "memory bomb: %lld bytes held at once (allocating %zu), over the %.0f-byte budget",
             (long long)live, n, max_memory);
    finding(msg, 0);
  }
}

static void on_free(const volatile void* p) {
  if (tracking && p) live -= (int64_t)__sanitizer_get_allocated_size(p);
}

static const char *dump_dir, *stats_path;
static uint64_t verdicts[8], generated, gen_failed;

static void write_stats(void) {
  FILE* f = fopen(stats_path, "a");
  if (!f) return;
  fprintf(f, "generated %llu gen_failed %llu ok %llu format %llu unsupported %llu nomem %llu input %llu\n",
          (unsigned long long)generated, (unsigned long long)gen_failed, (unsigned long long)verdicts[0],
          (unsigned long long)verdicts[1], (unsigned long long)verdicts[2], (unsigned long long)verdicts[3],
          (unsigned long long)verdicts[4]);
  fclose(f);
}

int LLVMFuzzerInitialize(int* argc, char*** argv) {
  (void)argc, (void)argv;
  const char* v = getenv("WRT_FUZZ_MAX_MEMORY");
  if (v && *v) max_memory = strtod(v, 0);
  v = getenv("WRT_FUZZ_MAX_WORK");
  if (v && *v) max_work = strtod(v, 0);
  dump_dir = getenv("WRT_FUZZ_DUMP");
  stats_path = getenv("WRT_FUZZ_STATS");
  if (stats_path) atexit(write_stats);
  __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free);
  return 0;
}

static void dump(const uint8_t* data, size_t size, const uint8_t* recipe, size_t n) {
  char path[4096];
  uint64_t h = 1469598103934665603ull; /* FNV-1a of the recipe names the file */
  for (size_t i = 0; i < n; i++) h = (h ^ recipe[i]) * 1099511628211ull;
  snprintf(path, sizeof path, "%s/%016llx.wrt", dump_dir, (unsigned long long)h);
  FILE* f = fopen(path, "wb");
  if (!f) return;
  fwrite(data, 1, size, f);
  fclose(f);
}

static void fill_inputs(wrt_model* m, int mode, uint32_t seed) {
  for (int k = 0; k < wrt_num_inputs(m); k++) {
    uint8_t* p = (uint8_t*)wrt_input_ptr(m, k);
    size_t n = wrt_tensor_bytes(m, 0, k);
    if (!p && n) finding("a graph input has no memory", wrt_error_message());
    if (mode == WRT_GEN_INPUT_ZEROS) {
      memset(p, 0, n);
      continue;
    }
    size_t head = n < 4096 ? n : 4096; /* 4 KiB of pattern, then copies of it: big inputs cost the host little */
    for (size_t i = 0; i < head; i += 4) {
      uint32_t h = wrt_gen_hash(seed + (uint32_t)k, i);
      if (mode == WRT_GEN_INPUT_SPECIAL) h = (h & 3) == 0 ? 0x7fc00000u : (h & 3) == 1 ? 0x7f800000u : h;
      else if (wrt_tensor_dtype(m, 0, k) == WRT_F32) h = 0x3f000000u | (h & 0x807fffffu); /* +-[0.5, 1) */
      memcpy(p + i, &h, head - i < 4 ? head - i : 4);
    }
    for (size_t done = head; done < n; done *= 2) memcpy(p + done, p, n - done < done ? n - done : done);
  }
}

static volatile uint8_t sink;

static void read_outputs(const wrt_model* m) {
  for (int k = 0; k < wrt_num_outputs(m); k++) {
    const uint8_t* p = (const uint8_t*)wrt_output_ptr(m, k);
    size_t n = wrt_tensor_bytes(m, 1, k);
    uint64_t want = 1;
    for (int a = 0; a < wrt_tensor_rank(m, 1, k); a++) want *= (uint64_t)wrt_tensor_dim(m, 1, k, a);
    if (n % (want ? want : 1) != 0 || (want == 0) != (n == 0)) finding("output size disagrees with its shape", 0);
    if (!p && n) finding("a graph output has no memory", 0);
    uint8_t x = 0;
    for (size_t i = 0; i < n; i += 61) x ^= p[i]; /* ASan checks these reads */
    if (n) x ^= p[n - 1];
    sink = x;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  wrt_gen_out g = {0};
  const uint8_t* model = data;
  size_t model_size = size;
  int generated_file = !(size >= 8 && !memcmp(data + 4, "WRT0", 4));
  if (generated_file) {
    if (wrt_gen(data, size, &g)) {
      gen_failed++;
      return 0;
    }
    generated++;
    model = g.data;
    model_size = g.size;
  }
  if (dump_dir) {
    dump(model, model_size, data, size);
    wrt_gen_free(&g);
    return 0;
  }
  int err = 0;
  live = peak = 0;
  tracking = 1;
  wrt_model* m = wrt_load_with_limits(model, model_size, max_memory, max_work, &err);
  if (m) {
    int64_t claimed = (int64_t)wrt_memory_size(m), held = peak;
    int runs = generated_file ? g.runs : 1;
    for (int r = 0; r < runs && !err; r++) {
      fill_inputs(m, generated_file ? g.input_mode : WRT_GEN_INPUT_ZEROS, g.input_seed + (uint32_t)r);
      err = wrt_run(m);
      if (!err) read_outputs(m);
    }
    /* the budget is only as good as the engine's own count; loading may also hold temporaries in proportion to
     * the file (tables of its tensors and ops) */
    if (held > claimed + 16 * (int64_t)model_size + SLACK) {
      char msg[160];
      snprintf(msg, sizeof msg, "the engine held %lld bytes while loading but counts %lld", (long long)held,
               (long long)claimed);
      finding(msg, 0);
    }
    wrt_release(m);
  }
  tracking = 0;
  /* the load verified the file; a refused generated file is checked again to tell a generator bug from a hostile
   * meaning (verifying every file twice used to be a third of the fuzzer's time) */
  if (generated_file && !m && err == WRT_ERR_FORMAT && fb_verify_model((fb_buf){model, model_size}) != WRT_OK) {
    fprintf(stderr, "%s\n", wrt_error_message());
    finding("the generator wrote a file the FlatBuffers verifier refuses", 0);
  }
  verdicts[err >= 0 && err < 8 ? err : 7]++;
  wrt_gen_free(&g);
  return 0;
}
