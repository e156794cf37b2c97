// The rotated square crop the landmark model sees: from a detection or from landmarks, the exact bilinear warp to
// 192x192, and landmarks mapped back. A port of python_ref/vision/roi.py (its docstring defines every rule).

import { sampleRect } from "./sample.js";

export const LANDMARK_INPUT = 192;
const DETECTION_SCALE = 1.5;
// Make a crop derived from landmarks match a detector crop (see python_ref/vision/roi.py).
const LANDMARK_SCALE = 0.92;
const LANDMARK_SHIFT = 0.025;
const EYE_OUTER = [33, 263];

/** roi: {cx, cy, side, angle}; (u, v) in [-0.5, 0.5] -> image point. */
function toImage(roi, c, s, u, v) {
  return [roi.cx + roi.side * (u * c - v * s), roi.cy + roi.side * (u * s + v * c)];
}

export function roiFromDetection(det) {
  const [x0, y0, x1, y1] = det.box;
  const k = det.keypoints;
  const side = DETECTION_SCALE * Math.max(x1 - x0, y1 - y0);
  return { cx: (x0 + x1) / 2, cy: (y0 + y1) / 2, side, angle: Math.atan2(k[3] - k[1], k[2] - k[0]) };
}

/** landmarks: 468*3 numbers (x, y, z), image pixels -> the crop for the next frame. */
export function roiFromLandmarks(lm) {
  const [a, b] = EYE_OUTER;
  const angle = Math.atan2(lm[3 * b + 1] - lm[3 * a + 1], lm[3 * b] - lm[3 * a]);
  const c = Math.cos(angle), s = Math.sin(angle);
  let u0 = Infinity, u1 = -Infinity, v0 = Infinity, v1 = -Infinity;
  for (let i = 0; i < lm.length; i += 3) {
    const x = lm[i], y = lm[i + 1];
    const ru = x * c + y * s, rv = -x * s + y * c; // turned by -angle
    if (ru < u0) u0 = ru;
    if (ru > u1) u1 = ru;
    if (rv < v0) v0 = rv;
    if (rv > v1) v1 = rv;
  }
  const side = DETECTION_SCALE * LANDMARK_SCALE * Math.max(u1 - u0, v1 - v0);
  const mu = (u0 + u1) / 2, mv = (v0 + v1) / 2 + LANDMARK_SHIFT * side;
  return { cx: mu * c - mv * s, cy: mu * s + mv * c, side, angle };
}

/** Tracking is trusted only while the crop stays plausible (python_ref/vision/roi.py: roi_is_sane). */
export function roiIsSane(roi, previous, width, height) {
  if (![roi.cx, roi.cy, roi.side, roi.angle].every(Number.isFinite)) return false;
  if (!(roi.cx >= 0 && roi.cx <= width && roi.cy >= 0 && roi.cy <= height)) return false;
  if (!(roi.side >= 16 && roi.side <= 4 * Math.max(width, height))) return false;
  if (previous) {
    const r = roi.side / previous.side;
    if (!(r >= 0.5 && r <= 2)) return false;
    if (Math.hypot(roi.cx - previous.cx, roi.cy - previous.cy) > 0.5 * previous.side) return false;
  }
  return true;
}

/**
 * The landmark model's input: Float32Array(n*n*3) in [0, 1] (NHWC). pixels: {data, width, height, channels?}.
 * MediaPipe's sampling (sample.js): 8-bit bilinear at 1/32 pixel, edge pixels replicated.
 */
export function warpRoi(pixels, roi, n = LANDMARK_INPUT, out = new Float32Array(n * n * 3), ops = null) {
  if (ops) return ops.crop(pixels, roi.cx, roi.cy, roi.side, roi.side, roi.angle, n, n, "replicate", 0, 255, out);
  const px = sampleRect(pixels, roi.cx, roi.cy, roi.side, roi.side, roi.angle, n, n, "replicate");
  for (let i = 0; i < px.length; i++) out[i] = Math.fround(px[i] / 255);
  return out;
}

/** Model output (1404 values, crop pixels) -> Float64Array(468*3): x, y image pixels, z in the same scale. */
export function mapLandmarks(raw, roi, n = LANDMARK_INPUT) {
  const c = Math.cos(roi.angle), s = Math.sin(roi.angle);
  const out = new Float64Array(raw.length);
  for (let i = 0; i < raw.length; i += 3) {
    const [x, y] = toImage(roi, c, s, raw[i] / n - 0.5, raw[i + 1] / n - 0.5);
    out[i] = x;
    out[i + 1] = y;
    out[i + 2] = (raw[i + 2] * roi.side) / n;
  }
  return out;
}
