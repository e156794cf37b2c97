/* Test driver for the engine outside Python: the ASan build and the aarch64 build under qemu use it.
 *   wrt_driver check FILE...            load (and, when it loads, run with zero inputs) each file, then release;
 *                                       prints "<code>\t<message>" per file; loads each again through the
 *                                       streamed load (wrt_load_begin/next), "-2\t..." where its code differs
 *   wrt_driver run MODEL OUTDIR IN...   raw float32 inputs in graph order -> OUTDIR/out<i>.bin
 *   wrt_driver target                   prints the kernel target name
 *   wrt_driver call                     calls of training exports (train.c) or image exports (image.c) on host
 *                                       buffers: requests on stdin until it ends, each answered on stdout before
 *                                       the next is read (format: call() below; tests/aarch64_steps.py)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../wasmrt.h"
#include "driver_calls.h"

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

/* -- call ---------------------------------------------------------------------------------------------------------
 * Request (little-endian): u32 name length, the name, u32 argument count, one kind letter per argument (a or p
 * array, i int, z size_t, f float, d double: the SIGNATURES of wasmrt/train/engine_steps.py and
 * wasmrt/vision/imgops.py), one u64 word per argument (an array: its offset in the blob, all ones for NULL; an int:
 * its value; a float or double: its bits), u64 blob size, the blob.
 * Answer: i32 error code (a size_t result: its value, the message then meaningless), u32 message length, the
 * message, then the blob as the call left it. */
typedef struct {
  const char* kinds;
  const uint64_t* word;
  unsigned char* blob;
} call_args;

static uint64_t arg_word(const call_args* c, int i, char kind) {
  if (c->kinds[i] != kind) { /* a wrapper reads an argument unlike its own kinds string: a driver bug */
    fprintf(stderr, "driver: argument %d read as '%c', declared '%c'\n", i, kind, c->kinds[i]);
    exit(3);
  }
  return c->word[i];
}
static void* arg_ptr(const call_args* c, int i, char kind) {
  uint64_t w = arg_word(c, i, kind);
  return w == UINT64_MAX ? 0 : c->blob + w;
}
static float arg_f32(const call_args* c, int i) {
  uint32_t bits = (uint32_t)arg_word(c, i, 'f');
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}
static double arg_f64(const call_args* c, int i) {
  uint64_t bits = arg_word(c, i, 'd');
  double d;
  memcpy(&d, &bits, sizeof d);
  return d;
}
#define A(i) arg_ptr(c, i, 'a')
#define P(i) arg_ptr(c, i, 'p')
#define D(i) arg_f64(c, i)
#define I(i) ((int)(int64_t)arg_word(c, i, 'i'))
#define Z(i) ((size_t)arg_word(c, i, 'z'))
#define F(i) arg_f32(c, i)

/* an export's result as the answer's i32: its error code, or a size_t (wrt_img_box_blur_scratch) that fits */
static int32_t int_result(int r) { return r; }
static int32_t size_result(size_t n) {
  if (n > INT32_MAX) {
    fprintf(stderr, "driver: a result of %zu does not fit the answer\n", n);
    exit(3);
  }
  return (int32_t)n;
}
#define RESULT(r) _Generic((r), size_t: size_result, default: int_result)(r)

#define WRAP(name, kinds, ...) \
  static int32_t call_##name(const call_args* c) { return RESULT(name(__VA_ARGS__)); }
/* each export: its name, its kinds, its arguments (indices written out: C leaves their evaluation order open),
 * generated into driver_calls.h from the hosts' SIGNATURES */
WRT_TRAIN_CALLS(WRAP)
WRT_IMG_CALLS(WRAP)
#define ROW(name, kinds, ...) {#name, kinds, call_##name},
static const struct {
  const char* name;
  const char* kinds;
  int32_t (*fn)(const call_args*);
} CALL_TABLE[] = {WRT_TRAIN_CALLS(ROW) WRT_IMG_CALLS(ROW)};

static int read_all(void* p, size_t n) { return fread(p, 1, n, stdin) == n; }

/* one request: 0 answered, 1 no request (stdin at its end), 2 refused (the process then ends) */
static int call(void) {
  uint32_t len = 0, nargs = 0;
  char name[64] = {0}, kinds[32] = {0};
  uint64_t word[32], size = 0;
  size_t got = fread(&len, 1, 4, stdin);
  if (got == 0 && feof(stdin)) return 1;
  if (got != 4 || len >= sizeof name || !read_all(name, len) || !read_all(&nargs, 4) ||
      nargs >= sizeof kinds || !read_all(kinds, nargs) || !read_all(word, 8 * (size_t)nargs) || !read_all(&size, 8))
    return fprintf(stderr, "call: a short or malformed request\n"), 2;
  size_t k = 0, n = sizeof CALL_TABLE / sizeof CALL_TABLE[0];
  while (k < n && strcmp(CALL_TABLE[k].name, name)) k++;
  if (k == n) return fprintf(stderr, "call: %s is not a training or image export\n", name), 2;
  if (strcmp(CALL_TABLE[k].kinds, kinds))
    return fprintf(stderr, "call: %s takes (%s), the host sent (%s)\n", name, CALL_TABLE[k].kinds, kinds), 2;
  unsigned char* blob = malloc(size ? size : 1); /* its exact size: under ASan, a write past it is caught */
  if (!blob || !read_all(blob, size))
    return fprintf(stderr, "call: no blob of %llu bytes\n", (unsigned long long)size), 2;
  for (uint32_t i = 0; i < nargs; i++)
    if ((kinds[i] == 'a' || kinds[i] == 'p') && word[i] != UINT64_MAX && word[i] > size)
      return fprintf(stderr, "call: argument %u lies past the blob\n", i), 2;
  call_args c = {kinds, word, blob};
  int32_t code = CALL_TABLE[k].fn(&c);
  const char* msg = code ? wrt_error_message() : "";
  uint32_t mlen = (uint32_t)strlen(msg);
  fwrite(&code, 4, 1, stdout);
  fwrite(&mlen, 4, 1, stdout);
  fwrite(msg, 1, mlen, stdout);
  fwrite(blob, 1, size, stdout);
  fflush(stdout); /* the host waits for this answer before it sends the next request */
  free(blob);
  return 0;
}

static int calls(void) {
  int r;
  while ((r = call()) == 0) continue;
  return r == 1 ? 0 : r;
}

int main(int argc, char** argv) {
  if (argc >= 2 && !strcmp(argv[1], "check")) return check(argc, argv);
  if (argc >= 4 && !strcmp(argv[1], "run")) return run(argc, argv);
  if (argc >= 2 && !strcmp(argv[1], "target")) return printf("%s\n", wrt_target_name()), 0;
  if (argc == 2 && !strcmp(argv[1], "call")) return calls();
  fprintf(stderr, "usage: wrt_driver check FILE... | run MODEL OUTDIR IN... | target | call\n");
  return 2;
}
