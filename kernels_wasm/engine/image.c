/* The vision pipelines' image operations over caller memory (wrt_img_*, declared in wasmrt.h): the rotated crop
 * with 8-bit bilinear sampling into a model input, the mask resize to frame size, the temporal smoothing and the
 * compositing with its box blur. python_ref/vision/sample.py and segment.py are the specification; every result here
 * is bit for bit theirs (float64 where they compute in float64, float32 where they do, integers elsewhere).
 * Each buffer comes with its size in bytes: a size too small for the shapes given is an error, never a read past it.
 * Plain loops: these are a few hundred thousand pixels a frame, bound by memory and the exact rounding rules. */
#include "engine.h"
#ifdef __wasm_simd128__
#include <wasm_simd128.h>
#endif

/* frames up to 2^26 pixels (8192 x 8192), 4 bytes each: every byte count fits a 32-bit size_t */
#define IMG_MAX_SIDE 32768
#define IMG_MAX_PIXELS ((size_t)1 << 26)
/* crop geometry beyond this (pixels) is refused: positions * 32 stay far inside int64 */
#define IMG_MAX_COORD 1e9
/* output columns whose coordinates are computed once per call, on the stack (20 KB at most) */
#define IMG_CHUNK 512

static int bad_shape(const char* who, int w, int h) {
  if (w < 1 || h < 1 || w > IMG_MAX_SIDE || h > IMG_MAX_SIDE || (size_t)w * (size_t)h > IMG_MAX_PIXELS) {
    return rt_error(WRT_ERR_INPUT, "%s: size %dx%d must be 1..%d per side and at most %z pixels", who, w, h,
                    IMG_MAX_SIDE, IMG_MAX_PIXELS);
  }
  return WRT_OK;
}

static int bad_buffer(const char* who, const char* name, const void* p, size_t have, size_t need, size_t align) {
  if (!p) return rt_error(WRT_ERR_INPUT, "%s: %s is NULL", who, name);
  if ((uintptr_t)p % align) return rt_error(WRT_ERR_INPUT, "%s: %s is not %z-byte aligned", who, name, align);
  if (have < need) return rt_error(WRT_ERR_INPUT, "%s: %s holds %z bytes, needs %z", who, name, have, need);
  return WRT_OK;
}

static int bad_channels(const char* who, const char* name, int c) {
  return c == 3 || c == 4 ? WRT_OK : rt_error(WRT_ERR_INPUT, "%s: %s channels must be 3 or 4, got %d", who, name, c);
}

static int finite_within(double x, double lim) { return x >= -lim && x <= lim; } /* false for NaN */

typedef int32_t v4i __attribute__((vector_size(16)));
typedef uint8_t v4u8 __attribute__((vector_size(4)));
typedef uint8_t v4u8_u __attribute__((vector_size(4), aligned(1), may_alias)); /* four bytes at any address */
typedef float v4f __attribute__((vector_size(16)));
typedef float v4f_u __attribute__((vector_size(16), aligned(4), may_alias)); /* four floats at any float address */
typedef double v2d __attribute__((vector_size(16)));
typedef uint16_t v4u16 __attribute__((vector_size(8)));
typedef uint16_t v16u16 __attribute__((vector_size(32)));
typedef uint8_t v16u8 __attribute__((vector_size(16)));
typedef uint8_t v16u8_u __attribute__((vector_size(16), aligned(1), may_alias));
typedef float v2f_u __attribute__((vector_size(8), aligned(4), may_alias));

static int clampi(int64_t v, int n) { return v < 0 ? 0 : v >= n ? n - 1 : (int)v; }

#ifdef __wasm_simd128__
/* two RGBA taps a, b as 16-bit lanes a0 b0 a1 b1 a2 b2 a3 b3: i32x4.dot_i16x8_s with (w0, w1) pairs blends them */
static inline __attribute__((always_inline)) v128_t taps16(const uint8_t* a, const uint8_t* b) {
  const v128_t t = wasm_v128_load32_lane(b, wasm_v128_load32_zero(a), 1);
  return wasm_i8x16_shuffle(t, wasm_i32x4_splat(0), 0, 16, 4, 16, 1, 16, 5, 16, 2, 16, 6, 16, 3, 16, 7, 16);
}
#endif

/* the bilinear blend of an RGBA pixel's four taps a b (top) c d (bottom): (wy0 (a wx0 + b wx1) + wy1 (c wx0 +
 * d wx1) + 2^9) >> 10 per channel, weights out of 32 packed as wx = wx0 | wx1 << 16, wy = wy0 | wy1 << 16 */
static inline __attribute__((always_inline)) v4i bilinear4(const uint8_t* a, const uint8_t* b, const uint8_t* c,
                                                           const uint8_t* d, int32_t wx, int32_t wy) {
#ifdef __wasm_simd128__
  /* each stage as 16-bit products summed in pairs: every term and sum below 2^15 */
  const v128_t vx = wasm_i32x4_splat(wx);
  const v128_t top = wasm_i32x4_dot_i16x8(taps16(a, b), vx), bot = wasm_i32x4_dot_i16x8(taps16(c, d), vx);
  const v128_t s = wasm_i32x4_dot_i16x8(
      wasm_i8x16_shuffle(top, bot, 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29), wasm_i32x4_splat(wy));
  return (v4i)wasm_i32x4_shr(wasm_i32x4_add(s, wasm_i32x4_splat(1 << 9)), 10);
#else
#define TAP(p) __builtin_convertvector(*(const v4u8_u*)(p), v4i)
  const int32_t x0 = wx & 0xffff, x1 = wx >> 16, y0 = wy & 0xffff, y1 = wy >> 16;
  return (y0 * (TAP(a) * x0 + TAP(b) * x1) + y1 * (TAP(c) * x0 + TAP(d) * x1) + (1 << 9)) >> 10;
#undef TAP
#endif
}

/* bilinear4 of a row on the grid (wy0 32, wy1 0): (a wx0 + b wx1 + 2^4) >> 5 per channel, wx packed likewise */
static inline __attribute__((always_inline)) v4i linear4(const uint8_t* a, const uint8_t* b, int32_t wx) {
#ifdef __wasm_simd128__
  const v128_t s = wasm_i32x4_dot_i16x8(taps16(a, b), wasm_i32x4_splat(wx));
  return (v4i)wasm_i32x4_shr(wasm_i32x4_add(s, wasm_i32x4_splat(1 << 4)), 5);
#else
#define TAP(p) __builtin_convertvector(*(const v4u8_u*)(p), v4i)
  return (TAP(a) * (wx & 0xffff) + TAP(b) * (wx >> 16) + (1 << 4)) >> 5;
#undef TAP
#endif
}

/* a blended RGBA pixel normalised in float32 lanes, (v - mean) / div with lanes = {mean, div}: its three values and
 * the next pixel's first (which the caller writes after, or leaves to the next pixel) */
static inline __attribute__((always_inline)) void put_lanes(float* of, v4i s, const float* lanes) {
  *(v4f_u*)of = (__builtin_convertvector(s, v4f) - lanes[0]) / lanes[1];
}

/* one axis of an unrotated crop: q = rint(p * 32); the taps' element offsets (clamped) and weights out of 32 (0 for a
 * tap outside with a zero border) */
static void crop_axis(double p, int n, int unit, int zero_border, int32_t* o0, int32_t* o1, int32_t* w0,
                      int32_t* w1) {
  const int64_t q = (int64_t)__builtin_rint(p * 32);
  const int f = (int)(q & 31);
  const int64_t i0 = (q - f) / 32;
  *o0 = clampi(i0, n) * unit;
  *o1 = clampi(i0 + 1, n) * unit;
  *w0 = zero_border && (i0 < 0 || i0 >= n) ? 0 : 32 - f;
  *w1 = zero_border && (i0 + 1 < 0 || i0 + 1 >= n) ? 0 : f;
}

/* wrt_img_crop without rotation (sin 0): tap weight (wx wy) 32 summed over the taps, + 2^14, >> 15 is
 * (wy0 (a wx0 + b wx1) + wy1 (c wx0 + d wx1) + 2^9) >> 10: the same integers as the rotated loop */
static void crop_unrotated(const uint8_t* src, int width, int height, int channels, double cx, double cy, double w,
                           double h, double cos_a, int out_w, int out_h, int zero_border, const float* table,
                           const float* lanes, uint8_t* ob, float* of, int out_float) {
  int32_t c0[IMG_CHUNK], c1[IMG_CHUNK], wx0[IMG_CHUNK], wx1[IMG_CHUNK];
  const size_t stride = (size_t)width * (size_t)channels;
  for (int j0 = 0; j0 < out_w; j0 += IMG_CHUNK) {
    const int nj = out_w - j0 < IMG_CHUNK ? out_w - j0 : IMG_CHUNK;
    for (int jj = 0; jj < nj; jj++) {
      const double u = ((double)(j0 + jj) / out_w - 0.5) * w;
      crop_axis(cx + u * cos_a, width, channels, zero_border, &c0[jj], &c1[jj], &wx0[jj], &wx1[jj]);
    }
    for (int i = 0; i < out_h; i++) {
      int32_t r0, r1, wy0, wy1;
      crop_axis(cy + ((double)i / out_h - 0.5) * h * cos_a, height, 1, zero_border, &r0, &r1, &wy0, &wy1);
      const uint8_t* top = src + (size_t)r0 * stride;
      const uint8_t* bot = src + (size_t)r1 * stride;
      size_t o = ((size_t)i * (size_t)out_w + (size_t)j0) * 3;
      int jj = 0;
      /* a float32 lane store writes the next pixel's first value too: not at the end of a chunk's row, whose next
       * value another chunk (or none) writes */
      const size_t row_end = o + (size_t)nj * 3;
      if (channels == 4 && lanes && wy0 == 32) { /* a row on the grid (wy1 0: a downscale by 2, say): its taps alone,
                                                  * (32 (a wx0 + b wx1) + 2^9) >> 10 = (a wx0 + b wx1 + 2^4) >> 5 */
        for (; jj < nj - 1; jj++, o += 3) {
          const v4i s = linear4(top + c0[jj], top + c1[jj], wx0[jj] | wx1[jj] << 16);
          put_lanes(of + o, s, lanes);
        }
      }
      if (channels == 4 && lanes) { /* RGBA into float32 lanes, without a branch per pixel: all but the row's last */
        for (; jj < nj - 1; jj++, o += 3) {
          const v4i s = bilinear4(top + c0[jj], top + c1[jj], bot + c0[jj], bot + c1[jj], wx0[jj] | wx1[jj] << 16,
                                  wy0 | wy1 << 16);
          put_lanes(of + o, s, lanes);
        }
      }
      for (; jj < nj; jj++) {
        const uint8_t *a = top + c0[jj], *b = top + c1[jj], *c = bot + c0[jj], *d = bot + c1[jj];
        const int32_t x0 = wx0[jj], x1 = wx1[jj];
        int32_t v[4];
        if (channels == 4) { /* an RGBA tap as one vector (the fourth lane computed and unused) */
#define TAP(p) __builtin_convertvector(*(const v4u8_u*)(p), v4i)
          const v4i s = (wy0 * (TAP(a) * x0 + TAP(b) * x1) + wy1 * (TAP(c) * x0 + TAP(d) * x1) + (1 << 9)) >> 10;
#undef TAP
          if (lanes && o + 4 <= row_end) { /* the table's values as float32 lanes; the fourth is the next pixel's */
            put_lanes(of + o, s, lanes);
            o += 3;
            continue;
          }
          for (int ch = 0; ch < 3; ch++) v[ch] = s[ch];
        } else {
          for (int ch = 0; ch < 3; ch++) {
            v[ch] = (wy0 * (a[ch] * x0 + b[ch] * x1) + wy1 * (c[ch] * x0 + d[ch] * x1) + (1 << 9)) >> 10;
          }
        }
        for (int ch = 0; ch < 3; ch++) {
          if (out_float) {
            of[o++] = table[v[ch]];
          } else {
            ob[o++] = (uint8_t)v[ch];
          }
        }
      }
    }
  }
}

/* one output pixel of the rotated crop at (px, py) (sample.py's p): its three channels */
static void crop_pixel(const uint8_t* src, int width, int height, int channels, int zero_border, double px,
                       double py, int32_t val[3]) {
  const size_t stride = (size_t)width * (size_t)channels;
  const int64_t xq = (int64_t)__builtin_rint(px * 32), yq = (int64_t)__builtin_rint(py * 32);
  const int fx = (int)(xq & 31), fy = (int)(yq & 31);
  const int64_t x0 = (xq - fx) / 32, y0 = (yq - fy) / 32;
  /* the weights times 32 (sum 2^15) */
  int32_t wt[4] = {(32 - fx) * (32 - fy) * 32, fx * (32 - fy) * 32, (32 - fx) * fy * 32, fx * fy * 32};
  const uint8_t* tap[4];
  for (int k = 0; k < 4; k++) {
    const int64_t r = y0 + (k >> 1), c = x0 + (k & 1);
    if (zero_border && (r < 0 || r >= height || c < 0 || c >= width)) wt[k] = 0;
    tap[k] = src + (size_t)clampi(r, height) * stride + (size_t)clampi(c, width) * (size_t)channels;
  }
  for (int ch = 0; ch < 3; ch++) { /* each sum <= 255 * 2^15 + 2^14: always 0..255 */
    val[ch] = (tap[0][ch] * wt[0] + tap[1][ch] * wt[1] + tap[2][ch] * wt[2] + tap[3][ch] * wt[3] + (1 << 14)) >> 15;
  }
}

static void put3(const int32_t val[3], const float* table, uint8_t* ob, float* of, int out_float, size_t o) {
  for (int ch = 0; ch < 3; ch++) {
    if (out_float) {
      of[o + (size_t)ch] = table[val[ch]];
    } else {
      ob[o + (size_t)ch] = (uint8_t)val[ch];
    }
  }
}

/* one pixel of crop_rotated4 at output offset q: its taps from a (top left), blended and stored */
static inline __attribute__((always_inline)) void rotated_put(const uint8_t* a, int32_t stride, int32_t wx,
                                                              int32_t wy, const float* table, const float* lanes,
                                                              uint8_t* ob, float* of, int out_float, size_t q,
                                                              size_t row_end) {
  const v4i s = bilinear4(a, a + 4, a + stride, a + stride + 4, wx, wy);
  if (lanes && q + 4 <= row_end) { /* float32 lanes; the fourth is the next pixel's (crop_unrotated says when) */
    put_lanes(of + q, s, lanes);
  } else {
    const int32_t val[3] = {s[0], s[1], s[2]};
    put3(val, table, ob, of, out_float, q);
  }
}

/* the rotated crop of an RGBA image along one output row, four pixels at a time while all their taps lie inside
 * (sample.py's positions in float64 lanes: the same operations as crop_pixel, so the same roundings; the weights
 * out of 32 per axis: (wy0 (a wx0 + b wx1) + wy1 (c wx0 + d wx1) + 2^9) >> 10 is crop_pixel's sum, as in
 * crop_unrotated); a group with a tap outside goes crop_pixel's way. */
static void crop_rotated4(const uint8_t* src, int width, int height, int zero_border, const double* col_x,
                          const double* col_y, int nj, double vs, double vc, const float* table, const float* lanes,
                          uint8_t* ob, float* of, int out_float, size_t o) {
  const size_t row_end = o + (size_t)nj * 3;
  const int32_t stride = width * 4;
  const v2d sub = {vs, vs}, add = {vc, vc};
  int jj = 0;
  for (; jj + 4 <= nj; jj += 4, o += 12) {
    /* + 1.5 2^52 rounds |x| < 2^31 to an integer, half to even as rint, left in the low word of each lane */
    const v2d round = {0x1.8p52, 0x1.8p52};
    const v4i xq = __builtin_shufflevector((v4i)((*(const v2d*)&col_x[jj] - sub) * 32 + round),
                                           (v4i)((*(const v2d*)&col_x[jj + 2] - sub) * 32 + round), 0, 2, 4, 6);
    const v4i yq = __builtin_shufflevector((v4i)((*(const v2d*)&col_y[jj] + add) * 32 + round),
                                           (v4i)((*(const v2d*)&col_y[jj + 2] + add) * 32 + round), 0, 2, 4, 6);
    const v4i x0 = xq >> 5, y0 = yq >> 5, fx = xq & 31, fy = yq & 31; /* >> 5 of a negative: the floor */
    const v4i in = (x0 >= 0) & (x0 < width - 1) & (y0 >= 0) & (y0 < height - 1);
    if (!(in[0] & in[1] & in[2] & in[3])) {
      for (int k = 0; k < 4; k++) {
        int32_t val[3];
        crop_pixel(src, width, height, 4, zero_border, col_x[jj + k] - vs, col_y[jj + k] + vc, val);
        put3(val, table, ob, of, out_float, o + (size_t)k * 3);
      }
      continue;
    }
    const v4i off = y0 * stride + x0 * 4, wx0 = 32 - fx, wy0 = 32 - fy;
    const v4i wx = wx0 | fx << 16, wy = wy0 | fy << 16;
    /* the four pixels spelled out: constant lane indices keep the vectors in registers */
    rotated_put(src + off[0], stride, wx[0], wy[0], table, lanes, ob, of, out_float, o, row_end);
    rotated_put(src + off[1], stride, wx[1], wy[1], table, lanes, ob, of, out_float, o + 3, row_end);
    rotated_put(src + off[2], stride, wx[2], wy[2], table, lanes, ob, of, out_float, o + 6, row_end);
    rotated_put(src + off[3], stride, wx[3], wy[3], table, lanes, ob, of, out_float, o + 9, row_end);
  }
  for (; jj < nj; jj++, o += 3) {
    int32_t val[3];
    crop_pixel(src, width, height, 4, zero_border, col_x[jj] - vs, col_y[jj] + vc, val);
    put3(val, table, ob, of, out_float, o);
  }
}

/* sample.py: output (i, j) takes the image at p = centre + R(angle) ((j / n_w - 0.5) w, (i / n_h - 0.5) h), rounded
 * to 1/32 pixel (half to even), four taps with weights summing to 2^15, (sum + 2^14) >> 15. */
int wrt_img_crop(const uint8_t* src, size_t src_bytes, int width, int height, int channels, double cx, double cy,
                 double w, double h, double cos_a, double sin_a, int out_w, int out_h, int zero_border,
                 double mean, double div, void* out, size_t out_bytes, int out_float) {
  const char* who = "wrt_img_crop";
  int err;
  if ((err = bad_shape(who, width, height)) || (err = bad_shape(who, out_w, out_h)) ||
      (err = bad_channels(who, "source", channels))) return err;
  if ((zero_border != 0 && zero_border != 1) || (out_float != 0 && out_float != 1)) {
    return rt_error(WRT_ERR_INPUT, "%s: zero_border and out_float are 0 or 1, got %d and %d", who, zero_border,
                    out_float);
  }
  if (!finite_within(cx, IMG_MAX_COORD) || !finite_within(cy, IMG_MAX_COORD) || !finite_within(w, IMG_MAX_COORD) ||
      !finite_within(h, IMG_MAX_COORD) || !finite_within(cos_a, 2) || !finite_within(sin_a, 2)) {
    return rt_error(WRT_ERR_INPUT, "%s: the rectangle (centre %g, %g, size %g x %g, cos %g, sin %g) must be finite "
                    "and within %g pixels", who, cx, cy, w, h, cos_a, sin_a, IMG_MAX_COORD);
  }
  if (out_float && !(div != 0 && finite_within(div, 1e30) && finite_within(mean, 1e30))) {
    return rt_error(WRT_ERR_INPUT, "%s: normalisation (v - %g) / %g needs finite values and a non-zero divisor", who,
                    mean, div);
  }
  size_t n_out = (size_t)out_w * (size_t)out_h * 3, elt = out_float ? 4 : 1;
  if ((err = bad_buffer(who, "source", src, src_bytes, (size_t)width * (size_t)height * (size_t)channels, 1)) ||
      (err = bad_buffer(who, "output", out, out_bytes, n_out * elt, elt))) return err;
  float table[256]; /* (v - mean) / div in float64, rounded once to float32, as the pipelines normalise */
  /* float32 (v - mean) / div gives the same words for every v with the usual normalisations ([0, 1], [-1, 1]: a
   * quotient of small integers is never near enough a float32 tie for float64's first rounding to matter), checked
   * here for all 256; then the RGBA crops normalise four lanes at a time instead of looking up bytes */
  const float lanes[2] = {(float)mean, (float)div};
  int same = out_float;
  if (out_float) {
    for (int v = 0; v < 256; v++) {
      union { float f; uint32_t u; } want = {(float)(((double)v - mean) / div)}, got = {((float)v - lanes[0]) / lanes[1]};
      table[v] = want.f;
      same &= want.u == got.u;
    }
  }
  uint8_t* ob = (uint8_t*)out;
  float* of = (float*)out;
  if (sin_a == 0) { /* no rotation: sample.py's positions are per column and per row (v sin and u sin are 0) */
    crop_unrotated(src, width, height, channels, cx, cy, w, h, cos_a, out_w, out_h, zero_border, table,
                   same ? lanes : NULL, ob, of, out_float);
    return WRT_OK;
  }
  /* RGBA with positions well inside int32 (|p| * 32 < 2^28): four output pixels at a time (crop_rotated4) */
  const int fast = channels == 4 &&
                   __builtin_fabs(cx) + __builtin_fabs(cy) + 2 * (__builtin_fabs(w) + __builtin_fabs(h)) < (1 << 22);
  /* per column (in chunks on the stack): cx + u cos, cy + u sin, the first terms of sample.py's sums */
  double col_x[IMG_CHUNK] __attribute__((aligned(16))), col_y[IMG_CHUNK] __attribute__((aligned(16)));
  for (int j0 = 0; j0 < out_w; j0 += IMG_CHUNK) {
    const int nj = out_w - j0 < IMG_CHUNK ? out_w - j0 : IMG_CHUNK;
    for (int jj = 0; jj < nj; jj++) {
      const double u = ((double)(j0 + jj) / out_w - 0.5) * w;
      col_x[jj] = cx + u * cos_a;
      col_y[jj] = cy + u * sin_a;
    }
    for (int i = 0; i < out_h; i++) {
      const double v = ((double)i / out_h - 0.5) * h, vs = v * sin_a, vc = v * cos_a;
      size_t o = ((size_t)i * (size_t)out_w + (size_t)j0) * 3;
      if (fast) {
        crop_rotated4(src, width, height, zero_border, col_x, col_y, nj, vs, vc, table, same ? lanes : NULL, ob, of,
                      out_float, o);
        continue;
      }
      for (int jj = 0; jj < nj; jj++, o += 3) {
        int32_t val[3];
        crop_pixel(src, width, height, channels, zero_border, col_x[jj] - vs, col_y[jj] + vc, val);
        put3(val, table, ob, of, out_float, o);
      }
    }
  }
  return WRT_OK;
}

/* segment.py resize_mask: source x = (j + 0.5) * (w / W) - 0.5 clamped to [0, w - 1], float64, then float32 */
static void mask_axis(int n_src, int n_dst, int j, int* i0, int* i1, double* f) {
  double s = ((double)j + 0.5) * ((double)n_src / n_dst) - 0.5;
  s = s < 0 ? 0 : s > n_src - 1 ? n_src - 1 : s;
  *i0 = (int)s; /* s >= 0: truncation is the floor */
  *i1 = *i0 + 1 < n_src ? *i0 + 1 : n_src - 1;
  *f = s - *i0;
}

/* a source row interpolated along x at the output columns (float64, as resize_mask's top and bottom; gf = 1 - cf),
 * two columns at a time */
static void mask_row(const float* r, const int* c0, const int* c1, const double* cf, const double* gf, int n,
                     double* out) {
  int j = 0;
  for (; j + 2 <= n; j += 2) {
    const v2d a = {r[c0[j]], r[c0[j + 1]]}, b = {r[c1[j]], r[c1[j + 1]]};
    *(v2d*)&out[j] = a * *(const v2d*)&gf[j] + b * *(const v2d*)&cf[j];
  }
  for (; j < n; j++) out[j] = (double)r[c0[j]] * gf[j] + (double)r[c1[j]] * cf[j];
}

/* two float64 pairs rounded to four float32 (one demotion per pair in wasm, not one per value) */
static inline __attribute__((always_inline)) v4f demote4(v2d a, v2d b) {
#ifdef __wasm_simd128__
  const v128_t lo = wasm_f32x4_demote_f64x2_zero((v128_t)a), hi = wasm_f32x4_demote_f64x2_zero((v128_t)b);
  return (v4f)wasm_i64x2_shuffle(lo, hi, 0, 2);
#else
  return __builtin_convertvector(__builtin_shufflevector(a, b, 0, 1, 2, 3), v4f);
#endif
}

static void smooth_span(const float* mask, const float* prev, float* out, size_t n, const float* c);

/* segment.py check_ratio: the smoothing ratio in [0, 1] (NaN refused) */
static int bad_ratio(const char* who, float ratio) {
  return ratio >= 0.0f && ratio <= 1.0f ? WRT_OK
                                        : rt_error(WRT_ERR_INPUT, "%s: the smoothing ratio must be in [0, 1], got %g", who,
                                                   (double)ratio);
}

/* resize_mask; with prev (and c: ratio, c1..c5), each output row span is smoothed with prev's as it is made (out may
 * be prev: the span is made in `made` first) */
static int resize_mask(const char* who, const float* src, size_t src_bytes, int width, int height, const float* prev,
                       float* out, size_t out_bytes, int out_width, int out_height, const float* c) {
  int err;
  const size_t n = (size_t)out_width * (size_t)out_height;
  if ((err = bad_shape(who, width, height)) || (err = bad_shape(who, out_width, out_height)) ||
      (err = bad_buffer(who, "source", src, src_bytes, (size_t)width * (size_t)height * 4, 4)) ||
      (err = bad_buffer(who, "output", out, out_bytes, n * 4, 4)) ||
      (prev && (err = bad_buffer(who, "previous", prev, n * 4, n * 4, 4)))) return err;
  float made[IMG_CHUNK] __attribute__((aligned(16)));
  int col0[IMG_CHUNK], col1[IMG_CHUNK];
  double colf[IMG_CHUNK] __attribute__((aligned(16))), colg[IMG_CHUNK] __attribute__((aligned(16)));
  /* the top and bottom source rows along x, kept while consecutive output rows share them (an upsampled mask) */
  double rows[2][IMG_CHUNK] __attribute__((aligned(16)));
  for (int j0 = 0; j0 < out_width; j0 += IMG_CHUNK) {
    const int nj = out_width - j0 < IMG_CHUNK ? out_width - j0 : IMG_CHUNK;
    for (int jj = 0; jj < nj; jj++) {
      mask_axis(width, out_width, j0 + jj, &col0[jj], &col1[jj], &colf[jj]);
      colg[jj] = 1 - colf[jj];
    }
    int have[2] = {-1, -1};
    for (int i = 0; i < out_height; i++) {
      int y0, y1;
      double fy;
      mask_axis(height, out_height, i, &y0, &y1, &fy);
      if (have[0] != y0) {
        if (have[1] == y0) { /* the last bottom row is this top row */
          for (int jj = 0; jj < nj; jj++) rows[0][jj] = rows[1][jj];
        } else {
          mask_row(src + (size_t)y0 * (size_t)width, col0, col1, colf, colg, nj, rows[0]);
        }
        have[0] = y0;
        have[1] = -1;
      }
      if (have[1] != y1) {
        mask_row(src + (size_t)y1 * (size_t)width, col0, col1, colf, colg, nj, rows[1]);
        have[1] = y1;
      }
      const size_t at = (size_t)i * (size_t)out_width + (size_t)j0;
      float* row = prev ? made : out + at;
      const double gy = 1 - fy;
      int jj = 0;
      for (; jj + 4 <= nj; jj += 4) { /* float64 lanes: the same products and sum, rounded once to float32 */
        const v2d x0 = *(const v2d*)&rows[0][jj] * gy + *(const v2d*)&rows[1][jj] * fy;
        const v2d x1 = *(const v2d*)&rows[0][jj + 2] * gy + *(const v2d*)&rows[1][jj + 2] * fy;
        *(v4f_u*)(row + jj) = demote4(x0, x1);
      }
      for (; jj < nj; jj++) row[jj] = (float)(rows[0][jj] * gy + rows[1][jj] * fy);
      if (prev) smooth_span(made, prev + at, out + at, (size_t)nj, c);
    }
  }
  return WRT_OK;
}

int wrt_img_resize_mask(const float* src, size_t src_bytes, int width, int height, float* out, size_t out_bytes,
                        int out_width, int out_height) {
  return resize_mask("wrt_img_resize_mask", src, src_bytes, width, height, NULL, out, out_bytes, out_width,
                     out_height, NULL);
}

int wrt_img_mask_frame(const float* src, size_t src_bytes, int width, int height, const float* prev, float* out,
                       size_t out_bytes, int out_width, int out_height, float ratio, float c1, float c2, float c3,
                       float c4, float c5) {
  const float c[6] = {ratio, c1, c2, c3, c4, c5};
  const int err = bad_ratio("wrt_img_mask_frame", ratio);
  return err ? err : resize_mask("wrt_img_mask_frame", src, src_bytes, width, height, ratio > 0 ? prev : NULL, out,
                                 out_bytes, out_width, out_height, c);
}

/* four values of smooth_span (float32 lanes: the same operations as one by one, no contraction) */
static inline __attribute__((always_inline)) v4f smooth4(v4f m, v4f q, float ratio, float c1, float c2, float c3,
                                                         float c4, float c5) {
  const v4f t = m - 0.5f, x = t * t, p = x * (c1 + x * (c2 + x * (c3 + x * (c4 + x * c5))));
  const v4i gt = p > 1.0f; /* min(1, p) by bits: p > 1 is false for NaN, which stays NaN */
  const v4f one = {1.0f, 1.0f, 1.0f, 1.0f};
  const v4f u = one - (v4f)((gt & (v4i)one) | (~gt & (v4i)p));
  return m + (q - m) * (u * ratio);
}

/* segment.py smooth over n values: t = new - 0.5, x = t^2, u = 1 - min(1, x (c1 + x (c2 + ...))),
 * new + (prev - new) u ratio, all float32 (c: ratio, c1..c5). Each value's prev is read before its out is written:
 * out may be mask or prev. */
static void smooth_span(const float* mask, const float* prev, float* out, size_t n, const float* c) {
  const float ratio = c[0], c1 = c[1], c2 = c[2], c3 = c[3], c4 = c[4], c5 = c[5];
  size_t i = 0;
  /* sixteen at a time: four independent polynomial chains (one chain waits on each multiply and add) */
  for (; i + 16 <= n; i += 16) {
    v4f r[4];
    for (int k = 0; k < 4; k++)
      r[k] = smooth4(*(const v4f_u*)(mask + i + 4 * k), *(const v4f_u*)(prev + i + 4 * k), ratio, c1, c2, c3, c4, c5);
    for (int k = 0; k < 4; k++) *(v4f_u*)(out + i + 4 * k) = r[k]; /* after every read: out may be prev */
  }
  for (; i + 4 <= n; i += 4)
    *(v4f_u*)(out + i) = smooth4(*(const v4f_u*)(mask + i), *(const v4f_u*)(prev + i), ratio, c1, c2, c3, c4, c5);
  for (; i < n; i++) {
    const float m = mask[i], t = m - 0.5f, x = t * t;
    const float p = x * (c1 + x * (c2 + x * (c3 + x * (c4 + x * c5))));
    const float u = 1.0f - (p > 1.0f ? 1.0f : p); /* NaN stays NaN, as numpy's minimum */
    out[i] = m + (prev[i] - m) * (u * ratio);
  }
}

/* prev NULL or ratio not > 0: the new mask unchanged. out may be new or prev. */
int wrt_img_smooth(const float* mask, const float* prev, float* out, size_t n, float ratio, float c1, float c2,
                   float c3, float c4, float c5) {
  const char* who = "wrt_img_smooth";
  int err;
  if (n > IMG_MAX_PIXELS) return rt_error(WRT_ERR_INPUT, "%s: %z values, at most %z", who, n, IMG_MAX_PIXELS);
  if ((err = bad_buffer(who, "mask", mask, n * 4, n * 4, 4)) || (err = bad_buffer(who, "output", out, n * 4, n * 4, 4)) ||
      (prev && (err = bad_buffer(who, "previous", prev, n * 4, n * 4, 4))) || (err = bad_ratio(who, ratio))) return err;
  if (!prev || ratio == 0) {
    for (size_t i = 0; i < n; i++) out[i] = mask[i];
    return WRT_OK;
  }
  const float c[6] = {ratio, c1, c2, c3, c4, c5};
  smooth_span(mask, prev, out, n, c);
  return WRT_OK;
}

/* composite's alpha of four mask values, each repeated over an RGBA pixel's four 16-bit lanes */
/* (results through pointers: a 32-byte vector passed by value is an ABI question on x86-64 without AVX) */
static inline __attribute__((always_inline)) void alpha4(const float* mask, v16u16* alpha) {
  const v4f m = *(const v4f_u*)mask;
  const v4i pos = m > 0.0f, below = m < 1.0f; /* clip(m, 0, 1) by bits; NaN: 0 */
  const v4f one = {1.0f, 1.0f, 1.0f, 1.0f};
  const v4f c = (v4f)(pos & ((below & (v4i)m) | (~below & (v4i)one)));
  const v2d lo = __builtin_convertvector(__builtin_shufflevector(c, c, 0, 1), v2d);
  const v2d hi = __builtin_convertvector(__builtin_shufflevector(c, c, 2, 3), v2d);
  /* floor(255 c + 0.5): 255 c is exact in float64 and a half-integer only at c = 0.5 (127.5, which ties-to-even
   * also takes to 128), so adding 2^52 rounds it to the alpha, left in each lane's low word (little-endian) */
  const v2d round = {0x1p52, 0x1p52};
  const v4i a32 = __builtin_shufflevector((v4i)(lo * 255 + round), (v4i)(hi * 255 + round), 0, 2, 4, 6);
  const v4u16 a4 = __builtin_convertvector(a32, v4u16);
  *alpha = __builtin_shufflevector(a4, a4, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
}

/* four composited RGBA pixels: y // 255 as (y + (y >> 8) + 1) >> 8, the frame's fourth byte kept */
static inline __attribute__((always_inline)) void store4(uint8_t* out, const v16u16* sum, const v16u16* frame) {
  const v16u16 keep = {0, 0, 0, 0xffff, 0, 0, 0, 0xffff, 0, 0, 0, 0xffff, 0, 0, 0, 0xffff};
  const v16u16 y = (*sum + (*sum >> 8) + 1) >> 8;
  *(v16u8_u*)out = __builtin_convertvector((y & ~keep) | (*frame & keep), v16u8);
}

/* the least float32 at or above x, a positive float64 that no float32 equals (a rational of denominator 510) */
static float float_at_or_above(double x) {
  union { float f; uint32_t u; } v = {(float)x};
  if ((double)v.f < x) v.u++;
  return v.f;
}

/* UNIFORM mask values whose alphas are all 255 (1) or all 0 (-1), else 0: a >= 255 exactly when m >= 509/510, a = 0
 * when m < 1/510 or NaN (a float32 compares with a rational as with the least float32 at or above it) */
#define UNIFORM 16
static inline __attribute__((always_inline)) int alpha_uniform(const float* mask, float full, float none) {
  v4i hi = {-1, -1, -1, -1}, lo = {0, 0, 0, 0};
  for (int k = 0; k < UNIFORM; k += 4) {
    const v4f m = *(const v4f_u*)(mask + k);
    hi &= m >= full;
    lo |= m >= none;
  }
#ifdef __wasm_simd128__
  if (wasm_i32x4_all_true((v128_t)hi)) return 1;
  return wasm_v128_any_true((v128_t)lo) ? 0 : -1;
#else
  if ((hi[0] & hi[1] & hi[2] & hi[3]) != 0) return 1;
  return (lo[0] | lo[1] | lo[2] | lo[3]) == 0 ? -1 : 0;
#endif
}

/* segment.py composite: a = floor(clip(mask, 0, 1) * 255 + 0.5) (NaN: 0), out = (fg a + bg (255 - a) + 127) // 255
 * per colour channel; a 4-channel output keeps the frame's fourth byte. bg_channels 0: the background is one colour,
 * its 3 bytes (replace_background's colour: no frame-sized background to fill and read). */
int wrt_img_composite(const uint8_t* frame, size_t frame_bytes, int channels, const float* mask, size_t mask_bytes,
                      const uint8_t* background, size_t background_bytes, int bg_channels, int width, int height,
                      uint8_t* out, size_t out_bytes) {
  const char* who = "wrt_img_composite";
  int err;
  if ((err = bad_shape(who, width, height)) || (err = bad_channels(who, "frame", channels)) ||
      (bg_channels != 0 && (err = bad_channels(who, "background", bg_channels)))) return err;
  const size_t n = (size_t)width * (size_t)height;
  if ((err = bad_buffer(who, "frame", frame, frame_bytes, n * (size_t)channels, 1)) ||
      (err = bad_buffer(who, "mask", mask, mask_bytes, n * 4, 4)) ||
      (err = bad_buffer(who, "background", background, background_bytes, bg_channels ? n * (size_t)bg_channels : 3,
                        1)) ||
      (err = bad_buffer(who, "output", out, out_bytes, n * (size_t)channels, 1))) return err;
  size_t p = 0;
  /* four pixels whose alphas are all 255 or all 0 are the frame's or the background's bytes ((v 255 + 127) // 255
   * is v): a person's mask is mostly one or the other */
  const float full = float_at_or_above(509.0 / 510), none = float_at_or_above(1.0 / 510);
  const v16u8 keep8 = {0, 0, 0, 0xff, 0, 0, 0, 0xff, 0, 0, 0, 0xff, 0, 0, 0, 0xff};
  if (channels == 4 && bg_channels == 4) { /* four RGBA pixels at a time, in 16-bit lanes (every sum <= 65152) */
    for (; p + UNIFORM <= n; p += UNIFORM) {
      const int uniform = alpha_uniform(mask + p, full, none);
      for (size_t q = p; q < p + UNIFORM; q += 4) {
        const v16u8 f8 = *(const v16u8_u*)(frame + 4 * q);
        if (uniform) {
          *(v16u8_u*)(out + 4 * q) = uniform > 0 ? f8 : (f8 & keep8) | (*(const v16u8_u*)(background + 4 * q) & ~keep8);
          continue;
        }
        v16u16 a;
        alpha4(mask + q, &a);
        const v16u16 f = __builtin_convertvector(f8, v16u16);
        const v16u16 b = __builtin_convertvector(*(const v16u8_u*)(background + 4 * q), v16u16);
        const v16u16 y = f * a + b * (255 - a) + 127;
        store4(out + 4 * q, &y, &f);
      }
    }
  } else if (channels == 4 && bg_channels == 0) {
    /* a colour: (f - b) a + 255 b + 127, one product; the lanes wrap modulo 2^16 on the way, and the result, the
     * same integer as f a + b (255 - a) + 127, lies in 0..65152 */
    const uint16_t r = background[0], g = background[1], bl = background[2];
    const v16u16 bc = {r, g, bl, 0, r, g, bl, 0, r, g, bl, 0, r, g, bl, 0}, bk = bc * 255 + 127;
    const v16u8 b8 = __builtin_convertvector(bc, v16u8);
    for (; p + UNIFORM <= n; p += UNIFORM) {
      const int uniform = alpha_uniform(mask + p, full, none);
      for (size_t q = p; q < p + UNIFORM; q += 4) {
        const v16u8 f8 = *(const v16u8_u*)(frame + 4 * q);
        if (uniform) {
          *(v16u8_u*)(out + 4 * q) = uniform > 0 ? f8 : (f8 & keep8) | b8;
          continue;
        }
        v16u16 a;
        alpha4(mask + q, &a);
        const v16u16 f = __builtin_convertvector(f8, v16u16);
        const v16u16 y = (f - bc) * a + bk;
        store4(out + 4 * q, &y, &f);
      }
    }
  }
  for (; p < n; p++) {
    const double m = mask[p];
    const int32_t a = (int32_t)((m > 0 ? (m < 1 ? m : 1) : 0) * 255 + 0.5);
    const uint8_t* f = frame + p * (size_t)channels;
    const uint8_t* b = background + p * (size_t)bg_channels;
    uint8_t* o = out + p * (size_t)channels;
    /* the channels as one int32x4 vector; y // 255 = (y + (y >> 8) + 1) >> 8 for y <= 65152 (tests check all) */
    const v4u8 f4 = {f[0], f[1], f[2], channels == 4 ? f[3] : 0}, b4 = {b[0], b[1], b[2], 0};
    v4i y = __builtin_convertvector(f4, v4i) * a + __builtin_convertvector(b4, v4i) * (255 - a) + 127;
    y = (y + (y >> 8) + 1) >> 8;
    o[0] = (uint8_t)y[0];
    o[1] = (uint8_t)y[1];
    o[2] = (uint8_t)y[2];
    if (channels == 4) o[3] = f[3];
  }
  return WRT_OK;
}

/* floor(x / n) for 0 <= x < 2^16 and 1 <= n < 256 as one multiply: M = ceil(2^32 / n) errs by e < n, and
 * x e / 2^32 < 2^16 n / 2^32 < 1 / n, below the gap between x / n and the next integer (tests check every x, n) */
static uint32_t div_magic(uint32_t n) { return (uint32_t)((((uint64_t)1 << 32) + n - 1) / n); }
static uint8_t div_round(uint32_t s, uint32_t half, uint32_t magic) {
  return (uint8_t)(((uint64_t)(s + half) * magic) >> 32);
}

#define BLUR_MAX_RADIUS 127

size_t wrt_img_box_blur_scratch(int width, int height) {
  if (width < 1 || height < 1 || width > IMG_MAX_SIDE || height > IMG_MAX_SIDE) return 0;
  return (((size_t)width * (size_t)height * 3 + 3) & ~(size_t)3) + (size_t)width * 3 * 4;
}

/* one horizontal box pass of radius r, edges replicated: src rows of `sc` bytes per pixel -> dst RGB rows */
static void blur_rows(const uint8_t* src, int sc, uint8_t* dst, int width, int height, int r, uint32_t magic) {
  const uint32_t half = (uint32_t)r;
  for (int y = 0; y < height; y++) {
    const uint8_t* s = src + (size_t)y * (size_t)width * (size_t)sc;
    uint8_t* d = dst + (size_t)y * (size_t)width * 3;
    for (int k = 0; k < 3; k++) {
      uint32_t sum = 0;
      for (int i = -r; i <= r; i++) sum += s[(size_t)clampi(i, width) * (size_t)sc + (size_t)k];
      for (int x = 0; x < width; x++) {
        d[(size_t)x * 3 + (size_t)k] = div_round(sum, half, magic);
        sum += s[(size_t)clampi(x + r + 1, width) * (size_t)sc + (size_t)k];
        sum -= s[(size_t)clampi(x - r, width) * (size_t)sc + (size_t)k];
      }
    }
  }
}

/* one vertical box pass over RGB rows, with running column sums (cache-friendly rows) */
static void blur_cols(const uint8_t* src, uint8_t* dst, uint32_t* sums, int width, int height, int r, uint32_t magic) {
  const size_t row = (size_t)width * 3;
  const uint32_t half = (uint32_t)r;
  for (size_t q = 0; q < row; q++) sums[q] = 0;
  for (int i = -r; i <= r; i++) {
    const uint8_t* s = src + (size_t)clampi(i, height) * row;
    for (size_t q = 0; q < row; q++) sums[q] += s[q];
  }
  for (int y = 0; y < height; y++) {
    uint8_t* d = dst + (size_t)y * row;
    const uint8_t* add = src + (size_t)clampi(y + r + 1, height) * row;
    const uint8_t* sub = src + (size_t)clampi(y - r, height) * row;
    for (size_t q = 0; q < row; q++) {
      d[q] = div_round(sums[q], half, magic);
      sums[q] += (uint32_t)add[q] - (uint32_t)sub[q];
    }
  }
}

/* segment.py box_blur: `passes` box filters of radius r (rows, then columns, each pass rounded (sum + r) // (2r + 1)),
 * RGB out; radius 0: the frame's colours copied. scratch: wrt_img_box_blur_scratch(width, height) bytes. */
int wrt_img_box_blur(const uint8_t* frame, size_t frame_bytes, int channels, int width, int height, int radius,
                     int passes, uint8_t* out, size_t out_bytes, void* scratch, size_t scratch_bytes) {
  const char* who = "wrt_img_box_blur";
  int err;
  if ((err = bad_shape(who, width, height)) || (err = bad_channels(who, "frame", channels))) return err;
  if (radius < 0 || radius > BLUR_MAX_RADIUS || passes < 0 || passes > 64) {
    return rt_error(WRT_ERR_INPUT, "%s: radius must be 0..%d and passes 0..64, got %d and %d", who, BLUR_MAX_RADIUS,
                    radius, passes);
  }
  const size_t n = (size_t)width * (size_t)height;
  if ((err = bad_buffer(who, "frame", frame, frame_bytes, n * (size_t)channels, 1)) ||
      (err = bad_buffer(who, "output", out, out_bytes, n * 3, 1)) ||
      (err = bad_buffer(who, "scratch", scratch, scratch_bytes, wrt_img_box_blur_scratch(width, height), 4))) {
    return err;
  }
  uint8_t* tmp = (uint8_t*)scratch;
  uint32_t* sums = (uint32_t*)(tmp + ((n * 3 + 3) & ~(size_t)3));
  if (radius == 0 || passes == 0) {
    for (size_t p = 0; p < n; p++) {
      for (int k = 0; k < 3; k++) out[p * 3 + (size_t)k] = frame[p * (size_t)channels + (size_t)k];
    }
    return WRT_OK;
  }
  const uint32_t magic = div_magic((uint32_t)(2 * radius + 1));
  for (int t = 0; t < passes; t++) {
    if (t == 0) {
      blur_rows(frame, channels, tmp, width, height, radius, magic);
    } else {
      blur_rows(out, 3, tmp, width, height, radius, magic);
    }
    blur_cols(tmp, out, sums, width, height, radius, magic);
  }
  return WRT_OK;
}
