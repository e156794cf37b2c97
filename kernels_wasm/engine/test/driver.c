/* Test driver for the engine outside Python: the ASan build and the aarch64 build under qemu use it.
 *   wrt_driver check FILE...            load (and, when it loads, run with zero inputs) each file, then release;
 *                                       prints "<code>\t<message>" per file; loads each again through the
 *                                       streamed load (wrt_load_begin/next), "-2\t..." where its code differs
 *   wrt_driver run MODEL OUTDIR IN...   raw float32 inputs in graph order -> OUTDIR/out<i>.bin
 *   wrt_driver target                   prints the kernel target name
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../wasmrt.h"

static unsigned char* read_file(const char* path, size_t* n) {
  FILE* f = fopen(path, "rb");
  if (!f) return 0;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char* b = malloc(len > 0 ? (size_t)len : 1);
  *n = b ? fread(b, 1, (size_t)len, f) : 0;
  fclose(f);
  return b;
}

/* wrt_load_begin on a copy the engine frees, then each constant copied where wrt_load_next asks, from the host's
 * bytes: the streamed load the wasm hosts use. Returns 0 or the error code; the model is released. */
static int load_streamed(const unsigned char* b, size_t n) {
  void* copy = wrt_alloc(n ? n : 1); /* wrt_load_begin takes a block of the engine's allocator */
  if (!copy) return -1;
  memcpy(copy, b, n);
  int err = 0;
  wrt_model* m = wrt_load_begin(copy, n, 0, 0, &err); /* the engine's now: freed by it */
  uintptr_t want[2];
  int r;
  while (m && (r = wrt_load_next(m, want)) > 0) {
    if (want[1] > n || (size_t)r > n - want[1]) {
      wrt_release(m);
      return -3; /* the engine asked for bytes past the file */
    }
    memcpy((void*)want[0], b + want[1], (size_t)r);
  }
  if (!m) return err;
  if (r < 0) {
    wrt_release(m);
    return -r;
  }
  wrt_release(m);
  return 0;
}

static int check(int argc, char** argv) {
  for (int i = 2; i < argc; i++) {
    size_t n = 0;
    unsigned char* b = read_file(argv[i], &n);
    if (!b) {
      printf("-1\tcannot read %s\n", argv[i]);
      continue;
    }
    int err = 0;
    wrt_model* m = wrt_load(b, n, &err);
    int load_err = m ? 0 : err;
    if (m) {
      for (int k = 0; k < wrt_num_inputs(m); k++) memset(wrt_input_ptr(m, k), 0, wrt_tensor_bytes(m, 0, k));
      err = wrt_run(m);
      wrt_release(m);
    }
    printf("%d\t%s\n", err, err ? wrt_error_message() : "ok");
    int streamed = load_streamed(b, n); /* the wasm hosts' path: the same answer */
    if (streamed != load_err)
      printf("-2\tthe streamed load gave %d where the in-place load gave %d\n", streamed, load_err);
    free(b); /* the engine keeps no reference to the bytes */
  }
  return 0;
}

static int run(int argc, char** argv) {
  size_t n = 0;
  unsigned char* b = read_file(argv[2], &n);
  if (!b) return fprintf(stderr, "cannot read %s\n", argv[2]), 2;
  int err = 0;
  wrt_model* m = wrt_load(b, n, &err);
  free(b);
  if (!m) return fprintf(stderr, "load failed (%d): %s\n", err, wrt_error_message()), 1;
  if (argc - 4 != wrt_num_inputs(m)) return fprintf(stderr, "model has %d inputs\n", wrt_num_inputs(m)), 2;
  for (int k = 0; k < wrt_num_inputs(m); k++) {
    size_t len = 0;
    unsigned char* in = read_file(argv[4 + k], &len);
    if (!in || len != wrt_tensor_bytes(m, 0, k)) return fprintf(stderr, "input %d: wrong size\n", k), 2;
    memcpy(wrt_input_ptr(m, k), in, len);
    free(in);
  }
  if ((err = wrt_run(m))) return fprintf(stderr, "run failed (%d): %s\n", err, wrt_error_message()), 1;
  for (int k = 0; k < wrt_num_outputs(m); k++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/out%d.bin", argv[3], k);
    FILE* f = fopen(path, "wb");
    if (!f) return fprintf(stderr, "cannot write %s\n", path), 2;
    fwrite(wrt_output_ptr(m, k), 1, wrt_tensor_bytes(m, 1, k), f);
    fclose(f);
  }
  printf("%s\n", wrt_model_target(m));
  wrt_release(m);
  return 0;
}

int main(int argc, char** argv) {
  if (argc >= 2 && !strcmp(argv[1], "check")) return check(argc, argv);
  if (argc >= 4 && !strcmp(argv[1], "run")) return run(argc, argv);
  if (argc >= 2 && !strcmp(argv[1], "target")) return printf("%s\n", wrt_target_name()), 0;
  fprintf(stderr, "usage: wrt_driver check FILE... | run MODEL OUTDIR IN... | target\n");
  return 2;
}
