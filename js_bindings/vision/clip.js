// The deterministic test clip of python_ref/vision/clip.py: a still image moving and rotating slowly.
// Used by the try-on page when there is no camera, and by the tracking tests (same bytes as Python).

const ROTATE = (12 * Math.PI) / 180;
const ZOOM = 0.08;
const SHIFT_X = 24, SHIFT_Y = 12;

export function clipParams(t, n) {
  const p = (2 * Math.PI * t) / n;
  return { angle: ROTATE * Math.sin(p), scale: 1 + ZOOM * Math.sin(2 * p), sx: SHIFT_X * Math.sin(p), sy: SHIFT_Y * Math.sin(2 * p) };
}

/** Frame t of n: {data: Uint8ClampedArray RGBA, width: size, height: size} from RGBA pixels {data, width, height}. */
export function clipFrame(image, t, n, size = 384) {
  const { data: src, width: w, height: h } = image;
  const C = image.channels ?? 4;
  const { angle, scale, sx, sy } = clipParams(t, n);
  const c = Math.cos(angle), s = Math.sin(angle);
  const out = new Uint8ClampedArray(size * size * 4);
  const cl = (i, m) => (i < 0 ? 0 : i > m - 1 ? m - 1 : i);
  for (let i = 0; i < size; i++) {
    for (let j = 0; j < size; j++) {
      const dx = j + 0.5 - size / 2 - sx, dy = i + 0.5 - size / 2 - sy;
      const xs = w / 2 + ((dx * c + dy * s) / scale) * (w / size) - 0.5;
      const ys = h / 2 + ((-dx * s + dy * c) / scale) * (h / size) - 0.5;
      const x0 = Math.floor(xs), y0 = Math.floor(ys), fx = xs - x0, fy = ys - y0;
      const c0 = cl(x0, w) * C, c1 = cl(x0 + 1, w) * C, r0 = cl(y0, h) * w * C, r1 = cl(y0 + 1, h) * w * C;
      const o = (i * size + j) * 4;
      for (let k = 0; k < 3; k++) {
        const p00 = src[r0 + c0 + k], p01 = src[r0 + c1 + k], p10 = src[r1 + c0 + k], p11 = src[r1 + c1 + k];
        const top = p00 + (p01 - p00) * fx, bottom = p10 + (p11 - p10) * fx;
        out[o + k] = Math.floor(top + (bottom - top) * fy + 0.5);
      }
      out[o + 3] = 255;
    }
  }
  return { data: out, width: size, height: size };
}
