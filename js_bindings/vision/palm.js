// Palm detection (MediaPipe's palm_detection_full / _lite): letterbox, SSD anchors, decoding, weighted NMS and the
// palm -> hand crop. A port of python_ref/vision/palm.py (its docstring defines every rule); float64 arithmetic in
// the same order, constants from the generated constants.js.

import {
  HAND_TARGET_ANGLE, PALM_ANCHORS, PALM_INPUT, PALM_MIN_SCORE, PALM_NMS_IOU, PALM_NUM_COORDS,
  PALM_ROI, PALM_ROTATION_KEYPOINTS, PALM_SCORE_CLIP,
} from "./constants.js";
import { decodeSsd, weightedNms } from "./detect.js";
import { sampleRect } from "./sample.js";

export const normalizeRadians = (a) => a - 2 * Math.PI * Math.floor((a + Math.PI) / (2 * Math.PI));

/** Anchor centres [x0, y0, x1, y1, ...] in units of the input side (fixed-size anchors: their size is 1). */
export function palmAnchors(opts = PALM_ANCHORS) {
  const strides = opts.strides;
  const perLayer = opts.aspect_ratios.length + (opts.interpolated_scale_aspect_ratio > 0 ? 1 : 0);
  const out = [];
  for (let layer = 0; layer < opts.num_layers;) {
    let last = layer;
    while (last < opts.num_layers && strides[last] === strides[layer]) last++;
    const perCell = perLayer * (last - layer), side = Math.ceil(opts.input_size / strides[layer]);
    const off = opts.anchor_offset;
    for (let row = 0; row < side; row++) {
      for (let col = 0; col < side; col++) {
        for (let k = 0; k < perCell; k++) out.push((col + off) / side, (row + off) / side);
      }
    }
    layer = last;
  }
  return Float64Array.from(out);
}

const ANCHORS = palmAnchors().map((v) => v * PALM_INPUT);

/** Pixels -> the palm model's float32 [1,192,192,3] tensor in [0, 1] with .geometry (the letterbox's placement). */
export function palmLetterbox(pixels, ops = null, out = undefined) {
  const { width: W, height: H } = pixels, n = PALM_INPUT, side = Math.max(W, H), k = n / side;
  let data;
  if (ops) {
    data = ops.crop(pixels, W / 2, H / 2, side, side, 0, n, n, "zero", 0, 255, out);
  } else {
    const px = sampleRect(pixels, W / 2, H / 2, side, side, 0, n, n, "zero");
    data = new Float32Array(px.length);
    for (let i = 0; i < px.length; i++) data[i] = Math.fround(px[i] / 255);
  }
  const geometry = { dstLeft: ((side - W) / 2) * k, dstTop: ((side - H) / 2) * k, dstW: W * k, dstH: H * k,
    imageWidth: W, imageHeight: H };
  return { data, shape: [1, n, n, 3], geometry };
}

/**
 * Raw outputs (2016 x 18 regressors, 2016 logits) -> palms above minScore in anchor order, image pixels:
 * {box: [x0, y0, x1, y1], keypoints: Float64Array(14), score}.
 */
export function decodePalms(raw, logits, geometry, minScore = PALM_MIN_SCORE) {
  if (ANCHORS.length / 2 !== logits.length || raw.length !== logits.length * PALM_NUM_COORDS) {
    throw new Error(`palm detector: ${raw.length / PALM_NUM_COORDS} boxes for ${ANCHORS.length / 2} anchors`);
  }
  return decodeSsd(raw, logits, ANCHORS, PALM_NUM_COORDS, PALM_SCORE_CLIP, geometry, minScore);
}

/** MediaPipe's RectTransformation (square_long) in image pixels -> {cx, cy, side, angle}. */
export function transformRect(cx, cy, w, h, rotation, opts) {
  const c = Math.cos(rotation), s = Math.sin(rotation);
  const dx = w * opts.shift_x, dy = h * opts.shift_y;
  return { cx: cx + dx * c - dy * s, cy: cy + dx * s + dy * c, side: Math.max(w, h) * opts.scale, angle: rotation };
}

/** A palm -> the hand crop (fingers up in the crop). */
export function roiFromPalm(det) {
  const [x0, y0, x1, y1] = det.box, [a, b] = PALM_ROTATION_KEYPOINTS, k = det.keypoints;
  const ax = k[2 * a], ay = k[2 * a + 1], bx = k[2 * b], by = k[2 * b + 1];
  const rotation = normalizeRadians(HAND_TARGET_ANGLE - Math.atan2(-(by - ay), bx - ax));
  return transformRect((x0 + x1) / 2, (y0 + y1) / 2, x1 - x0, y1 - y0, rotation, PALM_ROI);
}

/** The palm model's outputs for the tensor of palmLetterbox -> palms after NMS, strongest first. */
export function palmsFrom(out, geometry, minScore = PALM_MIN_SCORE, maxPalms = Infinity) {
  return weightedNms(decodePalms(out.Identity.data, out.Identity_1.data, geometry, minScore), PALM_NMS_IOU)
    .slice(0, maxPalms);
}
