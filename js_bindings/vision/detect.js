// Face detection with BlazeFace short range: letterbox, anchors, decoding, weighted NMS.
// A port of python_ref/vision/detect.py (its docstring defines every rule); float64 arithmetic in the same order.

import { sampleRect } from "./sample.js";

export const DETECTOR_INPUT = 128;
const ANCHOR_LAYERS = [[16, 2], [8, 6]]; // [grid side, anchors per cell]

/** Anchor centres in detector-input pixels, [x0, y0, x1, y1, ...] (896 anchors). */
export function ssdAnchors() {
  const out = [];
  for (const [n, perCell] of ANCHOR_LAYERS) {
    for (let row = 0; row < n; row++) {
      for (let col = 0; col < n; col++) {
        for (let k = 0; k < perCell; k++) out.push(((col + 0.5) / n) * DETECTOR_INPUT, ((row + 0.5) / n) * DETECTOR_INPUT);
      }
    }
  }
  return Float64Array.from(out);
}

const ANCHORS = ssdAnchors();

/**
 * RGBA (or RGB with channels: 3) pixels -> the detector's float32 [1,128,128,3] tensor with .geometry: MediaPipe's
 * letterbox (the image grown to a square of side max(W, H) about its centre, sampled by sample.js, zero border).
 */
export function letterbox(pixels, ops = null, out = undefined) {
  const { width: W, height: H } = pixels, n = DETECTOR_INPUT, side = Math.max(W, H), k = n / side;
  let data;
  if (ops) {
    data = ops.crop(pixels, W / 2, H / 2, side, side, 0, n, n, "zero", 127.5, 127.5, out);
  } else {
    const px = sampleRect(pixels, W / 2, H / 2, side, side, 0, n, n, "zero");
    data = new Float32Array(px.length);
    for (let i = 0; i < px.length; i++) data[i] = Math.fround((px[i] - 127.5) / 127.5);
  }
  const geometry = { dstLeft: ((side - W) / 2) * k, dstTop: ((side - H) / 2) * k, dstW: W * k, dstH: H * k,
    imageWidth: W, imageHeight: H };
  return { data, shape: [1, n, n, 3], geometry };
}

export const sigmoid = (z, clip = 100) => 1 / (1 + Math.exp(-Math.min(Math.max(z, -clip), clip)));

/**
 * Raw outputs -> detections above minScore (anchor order), image pixels.
 * geometry: the letterbox's {dstLeft, dstTop, dstW, dstH, imageWidth, imageHeight}.
 * A detection: {box: [xMin, yMin, xMax, yMax], keypoints: Float64Array(12), score}.
 */
/** An SSD detector's outputs -> detections above minScore, in anchor order, image pixels. Each row of `coords`
 * regressors holds the box centre and size, then keypoint (x, y) pairs, offsets from its anchor (anchors: x, y pairs
 * in detector-input pixels); scores are the sigmoid of the logits clipped to +-clip. */
export function decodeSsd(raw, logits, anchors, coords, clip, geometry, minScore) {
  const { dstLeft: left, dstTop: top, dstW: cw, dstH: ch, imageWidth: W, imageHeight: H } = geometry;
  const sx = W / cw, sy = H / ch, nk = (coords - 4) / 2;
  const toX = (x) => ((x - left) * W) / cw, toY = (y) => ((y - top) * H) / ch;
  const out = [];
  for (let i = 0; i < logits.length; i++) {
    const score = sigmoid(logits[i], clip);
    if (!(score >= minScore)) continue;
    const r = coords * i, ax = anchors[2 * i], ay = anchors[2 * i + 1];
    const cx = toX(raw[r] + ax), cy = toY(raw[r + 1] + ay);
    const hw = (raw[r + 2] * sx) / 2, hh = (raw[r + 3] * sy) / 2;
    const keypoints = new Float64Array(2 * nk);
    for (let k = 0; k < nk; k++) {
      keypoints[2 * k] = toX(raw[r + 4 + 2 * k] + ax);
      keypoints[2 * k + 1] = toY(raw[r + 5 + 2 * k] + ay);
    }
    out.push({ box: [cx - hw, cy - hh, cx + hw, cy + hh], keypoints, score });
  }
  return out;
}

export function decode(regressors, logits, geometry, minScore = 0.5) {
  return decodeSsd(regressors, logits, ANCHORS, 16, 100, geometry, minScore);
}

export function iou(a, b) {
  const iw = Math.min(a[2], b[2]) - Math.max(a[0], b[0]);
  const ih = Math.min(a[3], b[3]) - Math.max(a[1], b[1]);
  if (iw <= 0 || ih <= 0) return 0;
  const inter = iw * ih;
  const union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter;
  return union > 0 ? inter / union : 0;
}

/** Score-weighted blending of overlapping detections, strongest first. */
export function weightedNms(dets, iouThreshold = 0.3) {
  let remaining = dets.map((_, k) => k).sort((a, b) => dets[b].score - dets[a].score || a - b);
  const out = [];
  while (remaining.length) {
    const first = dets[remaining[0]];
    const cluster = [], rest = [];
    for (const k of remaining) (k === remaining[0] || iou(first.box, dets[k].box) > iouThreshold ? cluster : rest).push(k);
    const nk = first.keypoints.length; // 12 for faces, 14 for palms
    const box = [0, 0, 0, 0], keypoints = new Float64Array(nk);
    let wsum = 0;
    for (const k of cluster) {
      const d = dets[k];
      wsum += d.score;
      for (let c = 0; c < 4; c++) box[c] += d.box[c] * d.score;
      for (let c = 0; c < nk; c++) keypoints[c] += d.keypoints[c] * d.score;
    }
    for (let c = 0; c < 4; c++) box[c] /= wsum;
    for (let c = 0; c < nk; c++) keypoints[c] /= wsum;
    out.push({ box, keypoints, score: first.score });
    remaining = rest;
  }
  return out;
}
