/* The vision pipelines' crops over caller memory (wrt_img_crop, declared in wasmrt.h): a rotated rectangle sampled
 * with 8-bit bilinear weights into a model input (bytes, or normalised float32); and the image operations' argument
 * checks (image.h; mask.c holds the segmentation's). python_ref/vision/sample.py is the specification; every result
 * here is bit for bit its. Each buffer comes with its size in bytes: a size too small for the shapes given is an
 * error, never a read past it. */
#include "image.h"

/* crop geometry beyond this (pixels) is refused: positions * 32 stay far inside int64 */
#define IMG_MAX_COORD 1e9

int img_bad_shape(const char* who, int w, int h) {
  if (w < 1 || h < 1 || w > IMG_MAX_SIDE || h > IMG_MAX_SIDE || (size_t)w * (size_t)h > IMG_MAX_PIXELS) {
    return rt_error(WRT_ERR_INPUT, "%s: size %dx%d must be 1..%d per side and at most %z pixels", who, w, h,
                    IMG_MAX_SIDE, IMG_MAX_PIXELS);
  }
  return WRT_OK;
}

int img_bad_buffer(const char* who, const char* name, const void* p, size_t have, size_t need, size_t align) {
  if (!p) return rt_error(WRT_ERR_INPUT, "%s: %s is NULL", who, name);
  if ((uintptr_t)p % align) return rt_error(WRT_ERR_INPUT, "%s: %s is not %z-byte aligned", who, name, align);
  if (have < need) return rt_error(WRT_ERR_INPUT, "%s: %s holds %z bytes, needs %z", who, name, have, need);
  return WRT_OK;
}

int img_bad_channels(const char* who, const char* name, int c) {
  return c == 3 || c == 4 ? WRT_OK : rt_error(WRT_ERR_INPUT, "%s: %s channels must be 3 or 4, got %d", who, name, c);
}

static int finite_within(double x, double lim) { return x >= -lim && x <= lim; } /* false for NaN */

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
  if ((err = img_bad_shape(who, width, height)) || (err = img_bad_shape(who, out_w, out_h)) ||
      (err = img_bad_channels(who, "source", channels))) return err;
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
  if ((err = img_bad_buffer(who, "source", src, src_bytes, (size_t)width * (size_t)height * (size_t)channels, 1)) ||
      (err = img_bad_buffer(who, "output", out, out_bytes, n_out * elt, elt))) return err;
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
