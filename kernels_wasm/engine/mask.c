/* The selfie segmentation's image operations over caller memory (wrt_img_*, declared in wasmrt.h): the model's mask
 * resized to the frame, its temporal smoothing, the compositing by it and the box blur behind the person.
 * python_ref/vision/segment.py is the specification; every result is bit for bit its (float64 where it computes in
 * float64, float32 where it does, integers elsewhere). Each buffer comes with its size in bytes: a size too small for
 * the shapes given is an error, never a read past it. Built for speed (-O2 in wasm): these run on every pixel of
 * every frame. */
#include "image.h"

/* A person's mask is mostly exactly 0 or exactly 1 (the model's sigmoid saturates: two thirds of its values on a
 * webcam photo), so the mask's steps look at UNIFORM values at a time: where every tap of a resized block is +0
 * (SAT_ZERO) or every one is 1 (SAT_ONE), each value is that one (float64 weights summing to 1 within a few ulps,
 * rounded to float32); where a block's values are all +0 or 1 and the previous mask's are the same bits, smoothing
 * leaves them (new + (prev - new) u ratio = new + 0); compositing copies the frame or the background. */
#define UNIFORM 16
#define SAT_ZERO 1
#define SAT_ONE 2
#define ONE_BITS 0x3f800000u

static inline uint32_t bits_of(float f) {
  union { float f; uint32_t u; } v = {f};
  return v.u;
}

/* SAT_ZERO, SAT_ONE or 0 for source values r[lo..hi] (a block's taps all lie among them) */
static int range_saturated(const float* r, int lo, int hi) {
  uint32_t any = 0, all = ~0u;
  for (int k = lo; k <= hi; k++) {
    const uint32_t a = bits_of(r[k]);
    any |= a;
    all &= a;
  }
  return any == 0 ? SAT_ZERO : any == ONE_BITS && all == ONE_BITS ? SAT_ONE : 0;
}

/* segment.py resize_mask: source x = (j + 0.5) * (w / W) - 0.5 clamped to [0, w - 1], float64, then float32 */
static void mask_axis(int n_src, int n_dst, int j, int* i0, int* i1, double* f) {
  double s = ((double)j + 0.5) * ((double)n_src / n_dst) - 0.5;
  s = s < 0 ? 0 : s > n_src - 1 ? n_src - 1 : s;
  *i0 = (int)s; /* s >= 0: truncation is the floor */
  *i1 = *i0 + 1 < n_src ? *i0 + 1 : n_src - 1;
  *f = s - *i0;
}

/* columns j..end-1 of mask_row: two at a time, each a pair of adjacent taps loaded at once and weighted by (g, f)
 * (w: g, f per column), a g + b f summed as before; a column at the right edge (c1 = c0) alone */
static void mask_cols(const float* r, const int* c0, const int* c1, const double* w, int j, int end, double* out) {
  for (; j + 2 <= end; j += 2) {
    if (c1[j] == c0[j] + 1 && c1[j + 1] == c0[j + 1] + 1) {
      const v2d p = __builtin_convertvector(*(const v2f_u*)(r + c0[j]), v2d) * *(const v2d*)&w[2 * j];
      const v2d q = __builtin_convertvector(*(const v2f_u*)(r + c0[j + 1]), v2d) * *(const v2d*)&w[2 * j + 2];
      *(v2d*)&out[j] = __builtin_shufflevector(p, q, 0, 2) + __builtin_shufflevector(p, q, 1, 3);
      continue;
    }
    for (int k = j; k < j + 2; k++) out[k] = (double)r[c0[k]] * w[2 * k] + (double)r[c1[k]] * w[2 * k + 1];
  }
  for (; j < end; j++) out[j] = (double)r[c0[j]] * w[2 * j] + (double)r[c1[j]] * w[2 * j + 1];
}

/* a source row interpolated along x at the output columns (float64, as resize_mask's top and bottom: a g + b f with
 * g = 1 - f, w: g, f per column); sat: range_saturated of each whole block of UNIFORM columns, whose values are
 * then 0 g + 0 f = +0 or 1 g + 1 f = g + f without reading the taps */
static void mask_row(const float* r, const int* c0, const int* c1, const double* w, int n, double* out,
                     uint8_t* sat) {
  int j = 0;
  for (int b = 0; j + UNIFORM <= n; b++, j += UNIFORM) {
    const int s = range_saturated(r, c0[j], c1[j + UNIFORM - 1]);
    sat[b] = (uint8_t)s;
    if (s == SAT_ZERO) {
      for (int k = j; k < j + UNIFORM; k++) out[k] = 0.0;
    } else if (s == SAT_ONE) {
      for (int k = j; k < j + UNIFORM; k++) out[k] = w[2 * k] + w[2 * k + 1];
    } else {
      mask_cols(r, c0, c1, w, j, j + UNIFORM, out);
    }
  }
  mask_cols(r, c0, c1, w, j, n, out);
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

/* segment.py check_ratio: the smoothing ratio in [0, 1] (NaN refused) */
static int bad_ratio(const char* who, float ratio) {
  return ratio >= 0.0f && ratio <= 1.0f ? WRT_OK
                                        : rt_error(WRT_ERR_INPUT, "%s: the smoothing ratio must be in [0, 1], got %g", who,
                                                   (double)ratio);
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

/* UNIFORM values all of the given bits */
static inline __attribute__((always_inline)) int all_bits(const float* x, uint32_t b) {
  const v4i want = {(int32_t)b, (int32_t)b, (int32_t)b, (int32_t)b};
  v4i ok = {-1, -1, -1, -1};
  for (int k = 0; k < UNIFORM; k += 4) ok &= *(const v4i_u*)(x + k) == want;
#ifdef __wasm_simd128__
  return wasm_i32x4_all_true((v128_t)ok);
#else
  return (ok[0] & ok[1] & ok[2] & ok[3]) != 0;
#endif
}

/* UNIFORM values all +0 or 1 whose previous values are the same bits: smoothing leaves them (prev - new = +0, times
 * u ratio >= 0 is +0) */
static inline __attribute__((always_inline)) int unchanged(const float* mask, const float* prev) {
  const v4i zero = {0, 0, 0, 0}, one = {ONE_BITS, ONE_BITS, ONE_BITS, ONE_BITS};
  v4i ok = {-1, -1, -1, -1};
  for (int k = 0; k < UNIFORM; k += 4) {
    const v4i m = *(const v4i_u*)(mask + k), q = *(const v4i_u*)(prev + k);
    ok &= (m == q) & ((m == zero) | (m == one));
  }
#ifdef __wasm_simd128__
  return wasm_i32x4_all_true((v128_t)ok);
#else
  return (ok[0] & ok[1] & ok[2] & ok[3]) != 0;
#endif
}

/* segment.py smooth over n values: t = new - 0.5, x = t^2, u = 1 - min(1, x (c1 + x (c2 + ...))),
 * new + (prev - new) u ratio, all float32 (c: ratio, c1..c5). Each value's prev is read before its out is written:
 * out may be mask or prev. */
static void smooth_span(const float* mask, const float* prev, float* out, size_t n, const float* c) {
  const float ratio = c[0], c1 = c[1], c2 = c[2], c3 = c[3], c4 = c[4], c5 = c[5];
  size_t i = 0;
  /* sixteen at a time: four independent polynomial chains (one chain waits on each multiply and add) */
  for (; i + 16 <= n; i += 16) {
    if (unchanged(mask + i, prev + i)) {
      if (out != prev) for (int k = 0; k < 16; k++) out[i + k] = mask[i + k];
      continue;
    }
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
  if ((err = img_bad_buffer(who, "mask", mask, n * 4, n * 4, 4)) || (err = img_bad_buffer(who, "output", out, n * 4, n * 4, 4)) ||
      (prev && (err = img_bad_buffer(who, "previous", prev, n * 4, n * 4, 4))) || (err = bad_ratio(who, ratio))) return err;
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
/* out_name: what the output is called in the message */
static int bad_composite(const char* who, const uint8_t* frame, size_t frame_bytes, int channels,
                         const uint8_t* background, size_t background_bytes, int bg_channels, int width, int height,
                         const char* out_name, const uint8_t* out, size_t out_bytes) {
  int err;
  if ((err = img_bad_shape(who, width, height)) || (err = img_bad_channels(who, "frame", channels)) ||
      (bg_channels != 0 && (err = img_bad_channels(who, "background", bg_channels)))) return err;
  const size_t n = (size_t)width * (size_t)height;
  if ((err = img_bad_buffer(who, "frame", frame, frame_bytes, n * (size_t)channels, 1)) ||
      (err = img_bad_buffer(who, "background", background, background_bytes, bg_channels ? n * (size_t)bg_channels : 3,
                        1)) ||
      (err = img_bad_buffer(who, out_name, out, out_bytes, n * (size_t)channels, 1))) return err;
  return WRT_OK;
}

/* an RGBA frame over an RGBA background or a colour (bg_channels 4 or 0): the colour's lanes and the thresholds of
 * alpha_uniform, set once per call */
struct blend {
  float full, none;
  v16u16 bc, bk; /* a colour, and 255 colour + 127 */
  v16u8 b8;
};

static void blend_init(struct blend* k, const uint8_t* background, int bg_channels) {
  k->full = float_at_or_above(509.0 / 510);
  k->none = float_at_or_above(1.0 / 510);
  const uint16_t r = bg_channels ? 0 : background[0], g = bg_channels ? 0 : background[1],
                 bl = bg_channels ? 0 : background[2];
  k->bc = (v16u16){r, g, bl, 0, r, g, bl, 0, r, g, bl, 0, r, g, bl, 0};
  k->bk = k->bc * 255 + 127;
  k->b8 = __builtin_convertvector(k->bc, v16u8);
}

/* UNIFORM RGBA pixels composited; uniform: alpha_uniform's answer for their mask values (1: all 255, -1: all 0: the
 * frame's or the background's bytes, as (v 255 + 127) // 255 is v) */
static inline __attribute__((always_inline)) void composite16(const struct blend* k, const uint8_t* frame,
                                                              const float* mask, const uint8_t* background,
                                                              int bg_channels, uint8_t* out, int uniform) {
  const v16u8 keep8 = {0, 0, 0, 0xff, 0, 0, 0, 0xff, 0, 0, 0, 0xff, 0, 0, 0, 0xff};
  for (int q = 0; q < UNIFORM; q += 4) {
    const v16u8 f8 = *(const v16u8_u*)(frame + 4 * q);
    if (uniform) {
      v16u8 b8 = k->b8;
      if (bg_channels) b8 = *(const v16u8_u*)(background + 4 * q) & ~keep8;
      *(v16u8_u*)(out + 4 * q) = uniform > 0 ? f8 : (f8 & keep8) | b8;
      continue;
    }
    v16u16 a;
    alpha4(mask + q, &a);
    const v16u16 f = __builtin_convertvector(f8, v16u16);
    v16u16 y;
    if (bg_channels) { /* in 16-bit lanes: every sum <= 65152 */
      const v16u16 b = __builtin_convertvector(*(const v16u8_u*)(background + 4 * q), v16u16);
      y = f * a + b * (255 - a) + 127;
    } else { /* a colour: (f - b) a + 255 b + 127, one product; the lanes wrap modulo 2^16 on the way, and the
              * result, the same integer as f a + b (255 - a) + 127, lies in 0..65152 */
      y = (f - k->bc) * a + k->bk;
    }
    store4(out + 4 * q, &y, &f);
  }
}

/* n pixels of composite (bg_channels 0: background is one colour's 3 bytes) */
static void composite_span(const uint8_t* frame, int channels, const float* mask, const uint8_t* background,
                           int bg_channels, size_t n, uint8_t* out) {
  size_t p = 0;
  struct blend k;
  blend_init(&k, background, bg_channels);
  /* a loop per background kind: the kind's test out of the loop */
  if (channels == 4 && bg_channels == 4) {
    for (; p + UNIFORM <= n; p += UNIFORM)
      composite16(&k, frame + 4 * p, mask + p, background + 4 * p, 4, out + 4 * p,
                  alpha_uniform(mask + p, k.full, k.none));
  } else if (channels == 4 && bg_channels == 0) {
    for (; p + UNIFORM <= n; p += UNIFORM)
      composite16(&k, frame + 4 * p, mask + p, background, 0, out + 4 * p, alpha_uniform(mask + p, k.full, k.none));
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
}

int wrt_img_composite(const uint8_t* frame, size_t frame_bytes, int channels, const float* mask, size_t mask_bytes,
                      const uint8_t* background, size_t background_bytes, int bg_channels, int width, int height,
                      uint8_t* out, size_t out_bytes) {
  const char* who = "wrt_img_composite";
  int err;
  if ((err = bad_composite(who, frame, frame_bytes, channels, background, background_bytes, bg_channels, width, height,
                           "output", out, out_bytes)) ||
      (err = img_bad_buffer(who, "mask", mask, mask_bytes, (size_t)width * (size_t)height * 4, 4))) return err;
  composite_span(frame, channels, mask, background, bg_channels, (size_t)width * (size_t)height, out);
  return WRT_OK;
}

/* a frame composited by the mask as the mask is made (wrt_img_mask_composite): the mask's rows are composited while
 * they are in cache, and the mask never leaves the engine between the two */
struct img_comp {
  const uint8_t* frame;
  int channels;
  const uint8_t* background;
  int bg_channels;
  uint8_t* out;
};

/* resize_mask; with prev (and c: ratio, c1..c5), each output row span is smoothed with prev's as it is made (out may
 * be prev: each value of prev is read before its out is written); with cp, each finished span is composited */
static int resize_mask(const char* who, const float* src, size_t src_bytes, int width, int height, const float* prev,
                       float* out, size_t out_bytes, int out_width, int out_height, const float* c,
                       const struct img_comp* cp) {
  int err;
  const size_t n = (size_t)out_width * (size_t)out_height;
  if ((err = img_bad_shape(who, width, height)) || (err = img_bad_shape(who, out_width, out_height)) ||
      (err = img_bad_buffer(who, "source", src, src_bytes, (size_t)width * (size_t)height * 4, 4)) ||
      (err = img_bad_buffer(who, "output", out, out_bytes, n * 4, 4)) ||
      (prev && (err = img_bad_buffer(who, "previous", prev, n * 4, n * 4, 4)))) return err;
  float made[IMG_CHUNK] __attribute__((aligned(16)));
  int col0[IMG_CHUNK], col1[IMG_CHUNK];
  double colw[2 * IMG_CHUNK] __attribute__((aligned(16))); /* per column: 1 - f, f */
  /* the top and bottom source rows along x (rows[0], rows[1]), kept while consecutive output rows share them (an
   * upsampled mask), and their blocks' saturation */
  double row_a[IMG_CHUNK] __attribute__((aligned(16))), row_b[IMG_CHUNK] __attribute__((aligned(16)));
  uint8_t sat_a[IMG_CHUNK / UNIFORM], sat_b[IMG_CHUNK / UNIFORM];
  double* rows[2] = {row_a, row_b};
  uint8_t* sat[2] = {sat_a, sat_b};
  for (int j0 = 0; j0 < out_width; j0 += IMG_CHUNK) {
    const int nj = out_width - j0 < IMG_CHUNK ? out_width - j0 : IMG_CHUNK;
    for (int jj = 0; jj < nj; jj++) {
      mask_axis(width, out_width, j0 + jj, &col0[jj], &col1[jj], &colw[2 * jj + 1]);
      colw[2 * jj] = 1 - colw[2 * jj + 1];
    }
    int have[2] = {-1, -1};
    for (int i = 0; i < out_height; i++) {
      int y0, y1;
      double fy;
      mask_axis(height, out_height, i, &y0, &y1, &fy);
      if (have[0] != y0) {
        if (have[1] == y0) { /* the last bottom row is this top row */
          double* r = rows[0];
          uint8_t* t = sat[0];
          rows[0] = rows[1], rows[1] = r;
          sat[0] = sat[1], sat[1] = t;
        } else {
          mask_row(src + (size_t)y0 * (size_t)width, col0, col1, colw, nj, rows[0], sat[0]);
        }
        have[0] = y0;
        have[1] = -1;
      }
      if (have[1] != y1) {
        mask_row(src + (size_t)y1 * (size_t)width, col0, col1, colw, nj, rows[1], sat[1]);
        have[1] = y1;
      }
      const size_t at = (size_t)i * (size_t)out_width + (size_t)j0;
      const double gy = 1 - fy;
      int jj = 0;
      /* whole blocks made and smoothed while in registers */
      for (; jj + UNIFORM <= nj; jj += UNIFORM) {
        float* o = out + at + jj;
        const float* q = prev ? prev + at + jj : NULL;
        const int top = sat[0][jj / UNIFORM], sat_both = top == sat[1][jj / UNIFORM] ? top : 0;
        const float v = sat_both == SAT_ONE ? 1.0f : 0.0f;
        if (sat_both && (!q || all_bits(q, bits_of(v)))) { /* v, as the previous values: smoothing leaves them */
          if (o != q)
            for (int k = 0; k < UNIFORM; k++) o[k] = v;
        } else {
          v4f m[UNIFORM / 4];
          for (int k = 0; k < UNIFORM / 4; k++) {
            if (sat_both) {
              m[k] = (v4f){v, v, v, v};
            } else { /* float64 lanes: the same products and sum, rounded once to float32 */
              const double* t = &rows[0][jj + 4 * k];
              const double* d = &rows[1][jj + 4 * k];
              m[k] = demote4(*(const v2d*)t * gy + *(const v2d*)d * fy,
                             *(const v2d*)(t + 2) * gy + *(const v2d*)(d + 2) * fy);
            }
          }
          if (q) /* four independent polynomial chains */
            for (int k = 0; k < UNIFORM / 4; k++)
              m[k] = smooth4(m[k], *(const v4f_u*)(q + 4 * k), c[0], c[1], c[2], c[3], c[4], c[5]);
          for (int k = 0; k < UNIFORM / 4; k++) *(v4f_u*)(o + 4 * k) = m[k];
        }
      }
      /* the rest of the row */
      float* row = prev ? made : out + at;
      for (int k = jj; k < nj; k++) row[k] = (float)(rows[0][k] * gy + rows[1][k] * fy);
      if (prev) smooth_span(made + jj, prev + at + jj, out + at + jj, (size_t)(nj - jj), c);
      if (cp) { /* the row composited while its mask values are in cache */
        const size_t bg_at = cp->bg_channels ? at * (size_t)cp->bg_channels : 0; /* a colour: the same 3 bytes */
        composite_span(cp->frame + at * (size_t)cp->channels, cp->channels, out + at, cp->background + bg_at,
                       cp->bg_channels, (size_t)nj, cp->out + at * (size_t)cp->channels);
      }
    }
  }
  return WRT_OK;
}

int wrt_img_resize_mask(const float* src, size_t src_bytes, int width, int height, float* out, size_t out_bytes,
                        int out_width, int out_height) {
  return resize_mask("wrt_img_resize_mask", src, src_bytes, width, height, NULL, out, out_bytes, out_width,
                     out_height, NULL, NULL);
}

int wrt_img_mask_frame(const float* src, size_t src_bytes, int width, int height, const float* prev, float* out,
                       size_t out_bytes, int out_width, int out_height, float ratio, float c1, float c2, float c3,
                       float c4, float c5) {
  const float c[6] = {ratio, c1, c2, c3, c4, c5};
  const int err = bad_ratio("wrt_img_mask_frame", ratio);
  return err ? err : resize_mask("wrt_img_mask_frame", src, src_bytes, width, height, ratio > 0 ? prev : NULL, out,
                                 out_bytes, out_width, out_height, c, NULL);
}

int wrt_img_mask_composite(const float* src, size_t src_bytes, int width, int height, const float* prev, float* out,
                           size_t out_bytes, int out_width, int out_height, float ratio, float c1, float c2, float c3,
                           float c4, float c5, const uint8_t* frame, size_t frame_bytes, int channels,
                           const uint8_t* background, size_t background_bytes, int bg_channels, uint8_t* image,
                           size_t image_bytes) {
  const char* who = "wrt_img_mask_composite";
  const float c[6] = {ratio, c1, c2, c3, c4, c5};
  const struct img_comp cp = {frame, channels, background, bg_channels, image};
  int err;
  if ((err = bad_ratio(who, ratio)) || (err = img_bad_shape(who, out_width, out_height)) ||
      (err = bad_composite(who, frame, frame_bytes, channels, background, background_bytes, bg_channels, out_width,
                           out_height, "image", image, image_bytes))) return err;
  return resize_mask(who, src, src_bytes, width, height, ratio > 0 ? prev : NULL, out, out_bytes, out_width,
                     out_height, c, &cp);
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
  if ((err = img_bad_shape(who, width, height)) || (err = img_bad_channels(who, "frame", channels))) return err;
  if (radius < 0 || radius > BLUR_MAX_RADIUS || passes < 0 || passes > 64) {
    return rt_error(WRT_ERR_INPUT, "%s: radius must be 0..%d and passes 0..64, got %d and %d", who, BLUR_MAX_RADIUS,
                    radius, passes);
  }
  const size_t n = (size_t)width * (size_t)height;
  if ((err = img_bad_buffer(who, "frame", frame, frame_bytes, n * (size_t)channels, 1)) ||
      (err = img_bad_buffer(who, "output", out, out_bytes, n * 3, 1)) ||
      (err = img_bad_buffer(who, "scratch", scratch, scratch_bytes, wrt_img_box_blur_scratch(width, height), 4))) {
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
