// Hand tracking as MediaPipe Hands does it: palm detection, the rotated hand crop, 21 landmarks (image and 3-D
// world), handedness and tracking from frame to frame. A port of python_ref/vision/hands.py (its docstring states
// the per-frame rules); constants from the generated constants.js.

import {
  HAND_INPUT, HAND_MIN_PRESENCE, HAND_NORMALIZE_Z, HAND_OUTPUTS, HAND_ROI_LANDMARKS, HAND_ROTATION_LANDMARKS,
  HAND_TARGET_ANGLE, HANDEDNESS_LABELS, LANDMARK_ROI, MAX_HANDS, PALM_INPUT, PALM_MIN_SCORE, TRACK_IOU,
} from "./constants.js";
import { iou } from "./detect.js";
import { gesture } from "./gestures.js";
import { normalizeRadians, palmLetterbox, palmsFrom, roiFromPalm, transformRect } from "./palm.js";
import { loadModel, now, pixelsOf } from "./pixels.js";
import { modelInput, opsFor } from "./imgops.js";
import { mapLandmarks, warpRoi } from "./roi.js";

/** Landmarks (21*3 numbers, image pixels) -> the crop for the next frame: {cx, cy, side, angle}. */
export function roiFromHandLandmarks(lm) {
  const k = HAND_ROTATION_LANDMARKS, X = (i) => lm[3 * i], Y = (i) => lm[3 * i + 1];
  const x0 = X(k.wrist), y0 = Y(k.wrist);
  const x1 = ((X(k.index) + X(k.ring)) / 2 + X(k.middle)) / 2, y1 = ((Y(k.index) + Y(k.ring)) / 2 + Y(k.middle)) / 2;
  const rotation = normalizeRadians(HAND_TARGET_ANGLE - Math.atan2(-(y1 - y0), x1 - x0));
  let mx0 = Infinity, mx1 = -Infinity, my0 = Infinity, my1 = -Infinity;
  for (const i of HAND_ROI_LANDMARKS) {
    mx0 = Math.min(mx0, X(i)); mx1 = Math.max(mx1, X(i)); my0 = Math.min(my0, Y(i)); my1 = Math.max(my1, Y(i));
  }
  const acx = (mx0 + mx1) / 2, acy = (my0 + my1) / 2;
  const c = Math.cos(-rotation), s = Math.sin(-rotation);
  let px0 = Infinity, px1 = -Infinity, py0 = Infinity, py1 = -Infinity;
  for (const i of HAND_ROI_LANDMARKS) {
    const qx = X(i) - acx, qy = Y(i) - acy, px = qx * c - qy * s, py = qx * s + qy * c;
    px0 = Math.min(px0, px); px1 = Math.max(px1, px); py0 = Math.min(py0, py); py1 = Math.max(py1, py);
  }
  const pcx = (px0 + px1) / 2, pcy = (py0 + py1) / 2, cr = Math.cos(rotation), sr = Math.sin(rotation);
  return transformRect(pcx * cr - pcy * sr + acx, pcx * sr + pcy * cr + acy, px1 - px0, py1 - py0, rotation,
    LANDMARK_ROI);
}

const axisBox = (r) => [r.cx - r.side / 2, r.cy - r.side / 2, r.cx + r.side / 2, r.cy + r.side / 2];

/** MediaPipe's AssociationNormRect: [{roi, tracked, palm}] with the palm crops first. */
export function associate(palmRois, tracked, threshold = TRACK_IOU) {
  let out = palmRois.map((roi, palm) => ({ roi, tracked: false, palm }));
  for (const t of tracked) {
    out = out.filter((e) => iou(axisBox(e.roi), axisBox(t)) <= threshold);
    out.push({ roi: t, tracked: true, palm: -1 });
  }
  return out;
}

/** The model's P("Left") -> [label, score]. */
export const handedness = (p) => (p > 0.5 ? [HANDEDNESS_LABELS[0], p] : [HANDEDNESS_LABELS[1], 1 - p]);

/** World landmarks (21*3, metres) turned by the crop's rotation about z. */
export function mapWorld(raw, roi) {
  const c = Math.cos(roi.angle), s = Math.sin(roi.angle), out = new Float64Array(raw.length);
  for (let i = 0; i < raw.length; i += 3) {
    out[i] = raw[i] * c - raw[i + 1] * s;
    out[i + 1] = raw[i] * s + raw[i + 1] * c;
    out[i + 2] = raw[i + 2];
  }
  return out;
}

export class HandTracker {
  /**
   * Load the palm detector and the hand landmark model into a runtime. options: modelBase (folder holding
   * palm_detection_full.wrt and hand_landmark_full.wrt, or the _lite ones with lite: true) or palmModel and
   * landmarkModel (URL, path or bytes each); maxHands (2), minDetectionScore (0.5), minPresence (0.5), tracking (true).
   */
  static async create(rt, options = {}) {
    const base = options.modelBase, kind = options.lite ? "lite" : "full";
    if (!base && !(options.palmModel && options.landmarkModel)) {
      throw new TypeError(`HandTracker.create needs options.modelBase (the folder holding palm_detection_${kind}.wrt ` +
        `and hand_landmark_${kind}.wrt) or both options.palmModel and options.landmarkModel`);
    }
    const [detector, landmarker] = await Promise.all([
      loadModel(rt, options.palmModel, base, `palm_detection_${kind}.wrt`, "HandTracker"),
      loadModel(rt, options.landmarkModel, base, `hand_landmark_${kind}.wrt`, "HandTracker"),
    ]);
    return new this(detector, landmarker, options);
  }

  /** detector, landmarker: loaded models (anything with async run(feeds) -> {name: {data}}). */
  constructor(detector, landmarker, { maxHands = MAX_HANDS, minDetectionScore = PALM_MIN_SCORE,
    minPresence = HAND_MIN_PRESENCE, tracking = true, imageOps = "engine" } = {}) {
    if (!(Number.isInteger(maxHands) && maxHands >= 1)) throw new RangeError(`maxHands must be >= 1, got ${maxHands}`);
    Object.assign(this, { detector, landmarker, maxHands, minDetectionScore, minPresence, tracking });
    /** The engine's image operations (crops), or null: the JS ports (imageOps "js", or no engine reachable). */
    this.ops = opsFor(imageOps, landmarker, "HandTracker");
    this.tracked = [];
    // the models' input arrays where they are not the models' own buffers (imgops.js modelInput)
    this._inputs = {};
  }

  /** Forget tracked hands: the next frame runs the palm detector. */
  reset() { this.tracked = []; }

  /** Palm detector alone: [{box, keypoints: Float64Array(14), score}] after NMS, strongest first, image pixels. */
  async detectPalms(image, ms = {}) {
    const pixels = pixelsOf(image, "HandTracker.detectPalms");
    const t0 = now();
    const tensor = palmLetterbox(pixels, this.ops,
      this.ops ? modelInput(this.detector, PALM_INPUT * PALM_INPUT * 3, this.ops, this._inputs, "palm") : undefined);
    const out = await this.detector.run({ input_1: { data: tensor.data, shape: tensor.shape } });
    const palms = palmsFrom(out, tensor.geometry, this.minDetectionScore, this.maxHands);
    ms.detector = (ms.detector ?? 0) + (now() - t0);
    return palms;
  }

  /** One crop: {landmarks, worldLandmarks (Float64Array(63) each), presence, left (P("Left"))}. */
  async landmarksIn(image, roi, ms = {}) {
    const pixels = pixelsOf(image, "HandTracker.landmarksIn");
    const t0 = now();
    const n = HAND_INPUT * HAND_INPUT * 3;
    const crop = warpRoi(pixels, roi, HAND_INPUT, modelInput(this.landmarker, n, this.ops, this._inputs, "landmarks"),
      this.ops);
    const t1 = now();
    const out = await this.landmarker.run({ input_1: { data: crop, shape: [1, HAND_INPUT, HAND_INPUT, 3] } });
    ms.warp = (ms.warp ?? 0) + (t1 - t0);
    ms.landmarks = (ms.landmarks ?? 0) + (now() - t1);
    const landmarks = mapLandmarks(out[HAND_OUTPUTS.landmarks].data, roi, HAND_INPUT);
    for (let i = 2; i < landmarks.length; i += 3) landmarks[i] /= HAND_NORMALIZE_Z;
    return { landmarks, worldLandmarks: mapWorld(out[HAND_OUTPUTS.world].data, roi),
      presence: out[HAND_OUTPUTS.presence].data[0], left: out[HAND_OUTPUTS.handedness].data[0] };
  }

  /**
   * One frame: {hands, ranDetector, ms}. hands: [{landmarks, worldLandmarks, handedness, handednessScore, score,
   * gesture, roi, tracked, detection}] (landmarks: Float64Array(63), x, y image pixels, z in the scale of x).
   */
  async detect(image) {
    const pixels = pixelsOf(image, "HandTracker.detect");
    const ms = {}, t0 = now();
    const tracked = this.tracking ? this.tracked : [];
    let palms = [], ranDetector = false;
    if (tracked.length < this.maxHands) {
      palms = await this.detectPalms(pixels, ms);
      ranDetector = true;
    }
    const hands = [];
    for (const { roi, tracked: fromTrack, palm } of associate(palms.map(roiFromPalm), tracked)) {
      const { landmarks, worldLandmarks, presence, left } = await this.landmarksIn(pixels, roi, ms);
      if (presence < this.minPresence) continue;
      const [label, hScore] = handedness(left);
      hands.push({ landmarks, worldLandmarks, handedness: label, handednessScore: hScore, score: presence,
        gesture: gesture(landmarks, worldLandmarks), roi, tracked: fromTrack,
        detection: fromTrack ? null : palms[palm] });
    }
    this.tracked = this.tracking ? hands.map((h) => roiFromHandLandmarks(h.landmarks)) : [];
    ms.total = now() - t0;
    return { hands, ranDetector, ms };
  }

  /** Release both models' engine memory. */
  async release() {
    await this.detector.release?.();
    await this.landmarker.release?.();
  }
}
