// Lip mask from the landmark rings and natural-looking recolouring: a port of python_ref/vision/lips.py (its
// docstring defines the rasterization rule, the feathering and the colour arithmetic). Work is confined to the
// lips' bounding box, grown by the feather's reach.

export const LIPS_OUTER = [61, 146, 91, 181, 84, 17, 314, 405, 321, 375, 291, 409, 270, 269, 267, 0, 37, 39, 40, 185];
export const LIPS_INNER = [78, 95, 88, 178, 87, 14, 317, 402, 318, 324, 308, 415, 310, 311, 312, 13, 82, 81, 80, 191];
const MOUTH_CORNERS = [61, 291];
const FEATHER = 0.02;
const LIGHTNESS_SHIFT = 0.7;

const landmarksOf = (face) => (ArrayBuffer.isView(face) || Array.isArray(face) ? face : face.landmarks);

/** Fill `mask` (reg.w x reg.h, row-major, region origin reg.x0, reg.y0) with `value` where pixel centres lie inside
 * the ring of landmarks `idx` (even-odd): flat coordinates, the crossings of a row sorted in place. */
function rasterize(lm, idx, mask, reg, value) {
  const n = idx.length, px = new Float64Array(n), py = new Float64Array(n), xs = new Float64Array(n);
  let ymin = Infinity, ymax = -Infinity;
  for (let k = 0; k < n; k++) {
    const x = lm[3 * idx[k]], y = lm[3 * idx[k] + 1];
    if (!Number.isFinite(x) || !Number.isFinite(y)) return;
    px[k] = x; py[k] = y;
    ymin = Math.min(ymin, y); ymax = Math.max(ymax, y);
  }
  if (n < 3) return;
  const i0 = Math.max(reg.y0, Math.floor(ymin - 0.5)), i1 = Math.min(reg.y0 + reg.h - 1, Math.ceil(ymax - 0.5));
  for (let i = i0; i <= i1; i++) {
    const yc = i + 0.5;
    let c = 0;
    for (let k = 0; k < n; k++) {
      const q = k + 1 < n ? k + 1 : 0;
      if ((py[k] > yc) !== (py[q] > yc)) {
        const x = px[k] + ((yc - py[k]) * (px[q] - px[k])) / (py[q] - py[k]);
        let at = c++;
        for (; at > 0 && xs[at - 1] > x; at--) xs[at] = xs[at - 1]; // insertion: a handful of crossings
        xs[at] = x;
      }
    }
    const row = (i - reg.y0) * reg.w - reg.x0;
    for (let k = 0; k + 1 < c; k += 2) {
      const j0 = Math.max(reg.x0, Math.ceil(xs[k] - 0.5)), j1 = Math.min(reg.x0 + reg.w, Math.ceil(xs[k + 1] - 0.5));
      for (let j = j0; j < j1; j++) mask[row + j] = value;
    }
  }
}

export function featherRadius(lm) {
  const [a, b] = MOUTH_CORNERS;
  return Math.max(1, Math.floor(FEATHER * Math.hypot(lm[3 * b] - lm[3 * a], lm[3 * b + 1] - lm[3 * a + 1]) + 0.5));
}

/** The region that holds the lips and their feathered edge, clipped to the W x H image: {x0, y0, w, h}. */
export function lipRegion(lm, width, height, grow = 2 * featherRadius(lm)) {
  let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
  for (const k of LIPS_OUTER) {
    x0 = Math.min(x0, lm[3 * k]); x1 = Math.max(x1, lm[3 * k]);
    y0 = Math.min(y0, lm[3 * k + 1]); y1 = Math.max(y1, lm[3 * k + 1]);
  }
  if (![x0, y0, x1, y1].every(Number.isFinite)) return { x0: 0, y0: 0, w: 0, h: 0 };
  const rx0 = Math.max(0, Math.floor(x0) - grow - 1), ry0 = Math.max(0, Math.floor(y0) - grow - 1);
  const rx1 = Math.min(width, Math.ceil(x1) + grow + 1), ry1 = Math.min(height, Math.ceil(y1) + grow + 1);
  return { x0: rx0, y0: ry0, w: Math.max(0, rx1 - rx0), h: Math.max(0, ry1 - ry0) };
}

/** 0/1 lip mask over a region: {x0, y0, w, h, data: Uint8Array(w*h)} (outer ring minus inner ring). */
export function lipMask(face, width, height, region) {
  const lm = landmarksOf(face);
  const reg = region ?? lipRegion(lm, width, height);
  const data = new Uint8Array(reg.w * reg.h);
  rasterize(lm, LIPS_OUTER, data, reg, 1);
  const inner = new Uint8Array(reg.w * reg.h);
  rasterize(lm, LIPS_INNER, inner, reg, 1);
  for (let i = 0; i < data.length; i++) data[i] &= inner[i] ^ 1;
  return { ...reg, data };
}

// out[j] = (in[j - r] + ... + in[j + r]) / (2r + 1), the taps summed in that order, zeros outside (those left out:
// adding 0 changes no sum); along rows (step 1) or columns (step w)
function boxBlur(src, out, w, h, r, horizontal) {
  const n = 2 * r + 1, len = horizontal ? w : h, step = horizontal ? 1 : w;
  const lines = horizontal ? h : w, lineStep = horizontal ? w : 1;
  for (let line = 0; line < lines; line++) {
    const base = line * lineStep;
    for (let x = 0; x < len; x++) {
      const k0 = x - r < 0 ? 0 : x - r, k1 = x + r >= len ? len - 1 : x + r;
      let acc = 0;
      for (let k = k0, q = base + k0 * step; k <= k1; k++, q += step) acc += src[q];
      out[base + x * step] = acc / n;
    }
  }
  return out;
}

/** Feathered alpha in [0, 1] over the lip region: {x0, y0, w, h, data: Float64Array}. */
export function lipAlpha(face, width, height) {
  const lm = landmarksOf(face);
  const r = featherRadius(lm);
  const m = lipMask(lm, width, height, lipRegion(lm, width, height, 2 * r));
  const a = Float64Array.from(m.data), t = new Float64Array(a.length);
  for (let pass = 0; pass < 2; pass++) boxBlur(boxBlur(a, t, m.w, m.h, r, true), a, m.w, m.h, r, false);
  return { x0: m.x0, y0: m.y0, w: m.w, h: m.h, data: a };
}

// -- colour ---------------------------------------------------------------------------------------------------

export function parseColor(color) {
  if (Array.isArray(color)) return color.slice(0, 3).map(Number);
  let s = String(color).replace(/^#/, "");
  if (s.length === 3) s = [...s].map((ch) => ch + ch).join("");
  if (!/^[0-9a-fA-F]{6}$/.test(s)) throw new TypeError(`expected a colour like "#c2185b", got ${JSON.stringify(color)}`);
  return [0, 2, 4].map((i) => parseInt(s.slice(i, i + 2), 16));
}

const TO_LINEAR = Float64Array.from({ length: 256 }, (_, i) => {
  const v = i / 255;
  return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
});

export function linearToSrgb8(v) {
  v = Math.min(Math.max(v, 0), 1);
  const s = v <= 0.0031308 ? v * 12.92 : 1.055 * v ** (1 / 2.4) - 0.055;
  return Math.floor(s * 255 + 0.5);
}

// linearToSrgb8 without a power per value: SRGB8_FROM[k] is the least float64 in [0, 1] it takes to k or more (found
// by bisection on the function itself, once), and the byte is the largest k with SRGB8_FROM[k] <= v
let SRGB8_FROM = null;
function srgb8Thresholds() {
  const t = new Float64Array(256);
  t[0] = -Infinity;
  for (let k = 1; k < 256; k++) {
    let lo = k > 1 ? t[k - 1] : 0, hi = 1; // linearToSrgb8(lo) < k <= linearToSrgb8(hi)
    if (linearToSrgb8(lo) >= k) { t[k] = lo; continue; }
    for (;;) {
      const mid = lo + (hi - lo) / 2;
      if (mid === lo || mid === hi) break;
      if (linearToSrgb8(mid) >= k) hi = mid; else lo = mid;
    }
    t[k] = hi;
  }
  return t;
}

/** linearToSrgb8(v), by the thresholds. */
export function srgb8(v) {
  const t = (SRGB8_FROM ??= srgb8Thresholds());
  if (v !== v) return linearToSrgb8(v); // NaN
  let k = 0;
  for (let step = 128; step; step >>= 1) if (t[k + step] <= v) k += step;
  return k;
}

export function linearToOklab(r, g, b) {
  const l = Math.cbrt(0.4122214708 * r + 0.5363325363 * g + 0.0514459929 * b);
  const m = Math.cbrt(0.2119034982 * r + 0.6806995451 * g + 0.1073969566 * b);
  const s = Math.cbrt(0.0883024619 * r + 0.2817188376 * g + 0.6299787005 * b);
  return [0.2104542553 * l + 0.7936177850 * m - 0.0040720468 * s,
    1.9779984951 * l - 2.4285922050 * m + 0.4505937099 * s,
    0.0259040371 * l + 0.7827717662 * m - 0.8086757660 * s];
}

export function oklabToLinear(L, a, b) {
  let l = L + 0.3963377774 * a + 0.2158037573 * b;
  let m = L - 0.1055613458 * a - 0.0638541728 * b;
  let s = L - 0.0894841775 * a - 1.2914855480 * b;
  l = l * l * l; m = m * m * m; s = s * s * s;
  return [4.0767416621 * l - 3.3077115913 * m + 0.2309699292 * s,
    -1.2684380046 * l + 2.6097574011 * m - 0.3413193450 * s,
    -0.0041960863 * l - 0.7034186147 * m + 1.7076147010 * s];
}

/**
 * Recolour in place: pixels {data: RGBA bytes, width} whose pixel (x, y) is image pixel (x + ox, y + oy);
 * alpha from lipAlpha (image coordinates).
 */
export function recolor(pixels, alpha, color, intensity, ox = 0, oy = 0) {
  const { data, width } = pixels;
  const C = pixels.channels ?? 4;
  const k = Math.min(Math.max(Number(intensity) || 0, 0), 1);
  let wsum = 0, lsum = 0;
  // linearToOklab and oklabToLinear spelled out in the loops (the same operations, without an array per pixel)
  const lightness = new Float64Array(alpha.data.length);
  // alpha's row y, column x is pixel (alpha.x0 + x - ox, alpha.y0 + y - oy)
  const at = (y) => ((alpha.y0 + y - oy) * width + alpha.x0 - ox) * C;
  for (let y = 0, i = 0; y < alpha.h; y++) {
    for (let x = 0, p = at(y); x < alpha.w; x++, i++, p += C) {
      const a = alpha.data[i];
      if (!(a > 0)) continue;
      const r = TO_LINEAR[data[p]], g = TO_LINEAR[data[p + 1]], b = TO_LINEAR[data[p + 2]];
      const l = Math.cbrt(0.4122214708 * r + 0.5363325363 * g + 0.0514459929 * b);
      const m = Math.cbrt(0.2119034982 * r + 0.6806995451 * g + 0.1073969566 * b);
      const s = Math.cbrt(0.0883024619 * r + 0.2817188376 * g + 0.6299787005 * b);
      const L = 0.2104542553 * l + 0.7936177850 * m - 0.0040720468 * s;
      lightness[i] = L;
      wsum += a;
      lsum += a * L;
    }
  }
  if (!(wsum > 0) || k <= 0) return pixels;
  const [tr, tg, tb] = parseColor(color);
  const [tL, ta, tb2] = linearToOklab(TO_LINEAR[tr], TO_LINEAR[tg], TO_LINEAR[tb]);
  const shift = (tL - lsum / wsum) * LIGHTNESS_SHIFT;
  for (let y = 0, i = 0; y < alpha.h; y++) {
    for (let x = 0, p = at(y); x < alpha.w; x++, i++, p += C) {
      const a = alpha.data[i];
      if (!(a > 0)) continue;
      const f = a * k, L = lightness[i] + shift;
      let l = L + 0.3963377774 * ta + 0.2158037573 * tb2;
      let m = L - 0.1055613458 * ta - 0.0638541728 * tb2;
      let s = L - 0.0894841775 * ta - 1.2914855480 * tb2;
      l = l * l * l; m = m * m * m; s = s * s * s;
      const painted0 = 4.0767416621 * l - 3.3077115913 * m + 0.2309699292 * s;
      const painted1 = -1.2684380046 * l + 2.6097574011 * m - 0.3413193450 * s;
      const painted2 = -0.0041960863 * l - 0.7034186147 * m + 1.7076147010 * s;
      const r = TO_LINEAR[data[p]], g = TO_LINEAR[data[p + 1]], b = TO_LINEAR[data[p + 2]];
      data[p] = srgb8(r + (Math.min(Math.max(painted0, 0), 1) - r) * f);
      data[p + 1] = srgb8(g + (Math.min(Math.max(painted1, 0), 1) - g) * f);
      data[p + 2] = srgb8(b + (Math.min(Math.max(painted2, 0), 1) - b) * f);
    }
  }
  return pixels;
}

/** Recolour the lips of `face` in RGBA pixels {data, width, height} (ImageData or Node buffers), in place. */
export function recolorLips(pixels, face, { color = "#c2185b", intensity = 0.6 } = {}) {
  const alpha = lipAlpha(face, pixels.width, pixels.height);
  return recolor(pixels, alpha, color, intensity);
}

/**
 * The try-on on a 2D canvas whose pixels are the image's pixels (the frame drawn at 0, 0, natural size):
 * reads back only the lips' region, recolours it and puts it back. Returns the region's alpha (for overlays).
 */
export function paintLips(ctx, face, { color = "#c2185b", intensity = 0.6 } = {}) {
  if (!face) return null;
  const alpha = lipAlpha(face, ctx.canvas.width, ctx.canvas.height);
  if (!alpha.w || !alpha.h) return alpha;
  const img = ctx.getImageData(alpha.x0, alpha.y0, alpha.w, alpha.h);
  recolor(img, alpha, color, intensity, alpha.x0, alpha.y0);
  ctx.putImageData(img, alpha.x0, alpha.y0);
  return alpha;
}
