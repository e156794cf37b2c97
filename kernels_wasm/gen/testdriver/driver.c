/* Kernel test/probe driver: runs a list of kernel calls on a static arena that the host fills and reads back.
 * The same file builds as an x86-64 shared library (ctypes), a freestanding wasm module (wasmtime) and a static aarch64
 * program (qemu; DRV_MAIN: arena image on stdin, result on stdout). Pointers inside the arena are int64 byte offsets,
 * turned into real pointers here, so the host never needs the address width of the target.
 * DRV_TARGETS: comma-separated list of table addresses, e.g. &wrt_target_scalar,&wrt_target_avx2.
 */
#include "wrt_kernels.h"

#ifdef DRV_MAIN
#include <unistd.h>
#endif

static const wrt_target* const drv_targets[] = {DRV_TARGETS};
#define DRV_NTARGETS (sizeof drv_targets / sizeof drv_targets[0])
#define DRV_ARENA ((size_t)24 << 20)
#define DRV_WORDS 16 /* int64 words per command */

static _Alignas(64) unsigned char drv_arena[DRV_ARENA];
static const float* drv_ptrs[1 << 16];

enum { CMD_INFO = 1, CMD_GEMM, CMD_IGEMM, CMD_DWCONV, CMD_VBINARY, CMD_VUNARY, CMD_POOL, CMD_GEMM_LOOP, CMD_SPMM, CMD_SPMV,
       CMD_SPPACK, CMD_SPMMU, CMD_SPPACKU, CMD_INTERLEAVE3, CMD_WINO_IN, CMD_WINO_OUT,
       CMD_TGEMM, CMD_GRAD, CMD_SGD, CMD_ADAM };

unsigned char* drv_base(void) { return drv_arena; }
size_t drv_arena_size(void) { return DRV_ARENA; }
size_t drv_ntargets(void) { return DRV_NTARGETS; }

static float* F(int64_t off) { return (float*)(void*)(drv_arena + off); }

static float bits_f32(int64_t v) {
  union { uint32_t u; float f; } x = {(uint32_t)v};
  return x.f;
}

/* n pointers from the int64 offsets at off, into drv_ptrs starting at slot `first`. */
static const float* const* ptrs(int64_t off, size_t n, size_t first) {
  const int64_t* o = (const int64_t*)(const void*)(drv_arena + off);
  for (size_t i = 0; i < n; i++) drv_ptrs[first + i] = F(o[i]);
  return drv_ptrs + first;
}

/* out[0..]: mr, nr, then (ks, ct, present) for each dwconv slot, then a bitmask of non-null function pointers. */
static void info(const wrt_target* t, int64_t* out) {
  out[0] = t->gemm_mr;
  out[1] = t->gemm_nr;
  for (int i = 0; i < WRT_MAX_DWCONV; i++) {
    out[2 + 3 * i] = t->dwconv[i].ks;
    out[3 + 3 * i] = t->dwconv[i].ct;
    out[4 + 3 * i] = t->dwconv[i].fn != NULL;
  }
  int64_t mask = (t->gemm != NULL) | (t->igemm != NULL) << 1 | (t->maxpool != NULL) << 2 | (t->avgpool != NULL) << 3;
  for (int i = 0; i < WRT_BIN_COUNT; i++) {
    mask |= (int64_t)(t->vbinary[i] != NULL && t->vbinary_scalar[i] != NULL) << (4 + i);
  }
  for (int i = 0; i < WRT_UN_COUNT; i++) mask |= (int64_t)(t->vunary[i] != NULL) << (4 + WRT_BIN_COUNT + i);
  out[2 + 3 * WRT_MAX_DWCONV] = mask;
  out[3 + 3 * WRT_MAX_DWCONV] = t->gemm_half && t->igemm_half ? t->gemm_nr_half : 0;
  out[4 + 3 * WRT_MAX_DWCONV] = t->spmm_mr;
  out[5 + 3 * WRT_MAX_DWCONV] = t->spmm_g;
  out[6 + 3 * WRT_MAX_DWCONV] = (t->spmm != NULL) | (t->spmv != NULL) << 1 | (t->sppack != NULL) << 2 |
                                (t->spmmu != NULL) << 3 | (t->sppacku != NULL) << 4;
  out[7 + 3 * WRT_MAX_DWCONV] = t->spmmu_mr;
  out[8 + 3 * WRT_MAX_DWCONV] = t->gemm_mr_half;
#if !defined(__wasm__)
  out[9 + 3 * WRT_MAX_DWCONV] = t->interleave3 != NULL;
#endif
}

/* A whole GEMM M x N x K on packed panels (the probe's inner loop): a row-major, packed panels back to back. */
static void gemm_loop(const wrt_target* t, const int64_t* c, const wrt_clamp* cl) {
  const size_t m = (size_t)c[0], n = (size_t)c[1], k = (size_t)c[2], reps = (size_t)c[6];
  const size_t mr = t->gemm_mr, nr = t->gemm_nr;
  const float* a = F(c[3]);
  const float* w = F(c[4]);
  float* y = F(c[5]);
  for (size_t r = 0; r < reps; r++) {
    for (size_t j = 0; j < n; j += nr) {
      const float* panel = w + (j / nr) * nr * (k + 1);
      const size_t nc = n - j < nr ? n - j : nr;
      for (size_t i = 0; i < m; i += mr) {
        t->gemm(m - i < mr ? m - i : mr, nc, k, a + i * k, k * sizeof(float), panel, y + i * n + j, n * sizeof(float), cl);
      }
    }
  }
}

/* Runs ncmd commands at cmd_off; returns 0, or 1 + the index of the first bad command. */
int drv_run(size_t cmd_off, size_t ncmd) {
  for (size_t i = 0; i < ncmd; i++) {
    const int64_t* c = (const int64_t*)(const void*)(drv_arena + cmd_off) + i * DRV_WORDS;
    if (c[1] < 0 || (size_t)c[1] >= DRV_NTARGETS) return (int)i + 1;
    const wrt_target* t = drv_targets[c[1]];
    const int64_t* a = c + 2;
    wrt_clamp cl = {bits_f32(c[14]), bits_f32(c[15])};
    switch (c[0]) {
      case CMD_INFO:
        info(t, (int64_t*)(void*)(drv_arena + a[0]));
        break;
      case CMD_GEMM: /* mr nc kc a a_stride w c c_stride half */
        (a[8] ? t->gemm_half : t->gemm)((size_t)a[0], (size_t)a[1], (size_t)a[2], F(a[3]), (size_t)a[4], F(a[5]), F(a[6]), (size_t)a[7], &cl);
        break;
      case CMD_IGEMM: /* mr nc kc ks ind w c c_stride half */
        (a[8] ? t->igemm_half : t->igemm)((size_t)a[0], (size_t)a[1], (size_t)a[2], (size_t)a[3], ptrs(a[4], (size_t)(a[0] * a[3]), 0),
                 F(a[5]), F(a[6]), (size_t)a[7], &cl);
        break;
      case CMD_DWCONV: /* slot channels width ks in w out out_stride */
        t->dwconv[a[0]].fn((size_t)a[1], (size_t)a[2], (size_t)a[3], ptrs(a[4], (size_t)(a[2] * a[3]), 0), F(a[5]),
                           F(a[6]), (size_t)a[7], &cl);
        break;
      case CMD_VBINARY: /* op scalar_b n a b y */
        (a[1] ? t->vbinary_scalar : t->vbinary)[a[0]]((size_t)a[2], F(a[3]), F(a[4]), F(a[5]), &cl);
        break;
      case CMD_VUNARY: /* op n x y params */
        t->vunary[a[0]]((size_t)a[1], F(a[2]), F(a[3]), F(a[4]));
        break;
      case CMD_POOL: /* avg channels ks in y scale_bits */
        (a[0] ? t->avgpool : t->maxpool)((size_t)a[1], (size_t)a[2], ptrs(a[3], (size_t)a[2], 0), F(a[4]),
                                         bits_f32(a[5]), &cl);
        break;
      case CMD_GEMM_LOOP:
        gemm_loop(t, a, &cl);
        break;
      case CMD_SPMM: /* mr n x x_stride nnz offs w y y_stride */
        t->spmm((size_t)a[0], (size_t)a[1], F(a[2]), (size_t)a[3], (const int32_t*)(const void*)F(a[4]),
                (const int32_t*)(const void*)F(a[5]), F(a[6]), F(a[7]), (size_t)a[8], &cl);
        break;
      case CMD_SPMV: /* n x nnz offs w y */
        t->spmv((size_t)a[0], F(a[1]), (const int32_t*)(const void*)F(a[2]), (const int32_t*)(const void*)F(a[3]),
                F(a[4]), F(a[5]), &cl);
        break;
      case CMD_SPPACK: /* mr kc ks ind out */
        if (!t->sppack) return (int)i + 1;
        t->sppack((size_t)a[0], (size_t)a[1], (size_t)a[2], ptrs(a[3], (size_t)(a[0] * a[2]), 0), F(a[4]));
        break;
      case CMD_SPMMU: /* mr n x nnz offs w y y_stride */
        t->spmmu((size_t)a[0], (size_t)a[1], F(a[2]), (const int32_t*)(const void*)F(a[3]),
                 (const int32_t*)(const void*)F(a[4]), F(a[5]), F(a[6]), (size_t)a[7], &cl);
        break;
#if !defined(__wasm__) /* native only (wrt_kernels.h) */
      case CMD_INTERLEAVE3: /* n p0 p1 p2 y */
        if (!t->interleave3) return (int)i + 1;
        t->interleave3((size_t)a[0], F(a[1]), F(a[2]), F(a[3]), F(a[4]));
        break;
#endif
      case CMD_SPPACKU: /* mr kc ks ind out */
        t->sppacku((size_t)a[0], (size_t)a[1], (size_t)a[2], ptrs(a[3], (size_t)(a[0] * a[2]), 0), F(a[4]));
        break;
      case CMD_WINO_IN: /* kind c in out out_stride (kind 0: F(2x2), 16 taps; 1: F(4x4), 36) */
        if (a[0] < 0 || a[0] >= WRT_WINO_KINDS) return (int)i + 1;
        t->wino_in[a[0]]((size_t)a[1], ptrs(a[2], a[0] ? 36 : 16, 0), F(a[3]), (size_t)a[4]);
        break;
      case CMD_WINO_OUT: /* kind c in in_stride bias out row_stride px_stride rows cols */
        if (a[0] < 0 || a[0] >= WRT_WINO_KINDS) return (int)i + 1;
        t->wino_out[a[0]]((size_t)a[1], F(a[2]), (size_t)a[3], F(a[4]), F(a[5]), (size_t)a[6], (size_t)a[7],
                          (size_t)a[8], (size_t)a[9], &cl);
        break;
      case CMD_TGEMM: /* m n k a a_rs a_cs b ldb c ldc accumulate */
        if (!t->tgemm) return (int)i + 1;
        t->tgemm((size_t)a[0], (size_t)a[1], (size_t)a[2], F(a[3]), (size_t)a[4], (size_t)a[5], F(a[6]), (size_t)a[7],
                 F(a[8]), (size_t)a[9], (int)a[10]);
        break;
      case CMD_GRAD: /* op n v dy dx params */
        if (a[0] < 0 || a[0] >= WRT_GRAD_COUNT || !t->grad[a[0]]) return (int)i + 1;
        t->grad[a[0]]((size_t)a[1], F(a[2]), F(a[3]), F(a[4]), F(a[5]));
        break;
      case CMD_SGD: /* n p g buf params */
        if (!t->sgd) return (int)i + 1;
        t->sgd((size_t)a[0], F(a[1]), F(a[2]), F(a[3]), F(a[4]));
        break;
      case CMD_ADAM: /* n p g m v params */
        if (!t->adam) return (int)i + 1;
        t->adam((size_t)a[0], F(a[1]), F(a[2]), F(a[3]), F(a[4]), F(a[5]));
        break;
      default:
        return (int)i + 1;
    }
  }
  return 0;
}

#ifdef DRV_MAIN
/* stdin: uint64 used, cmd_off, ncmd, then `used` arena bytes; stdout: int32 status, then the arena bytes. */
static int read_all(unsigned char* p, size_t n) {
  while (n) {
    ssize_t r = read(0, p, n);
    if (r <= 0) return -1;
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

static int write_all(const unsigned char* p, size_t n) {
  while (n) {
    ssize_t r = write(1, p, n);
    if (r <= 0) return -1;
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

int main(void) {
  uint64_t hdr[3];
  if (read_all((unsigned char*)hdr, sizeof hdr) || hdr[0] > DRV_ARENA || read_all(drv_arena, hdr[0])) return 2;
  int32_t status = drv_run(hdr[1], hdr[2]);
  return write_all((const unsigned char*)&status, sizeof status) || write_all(drv_arena, hdr[0]) ? 3 : 0;
}
#endif
