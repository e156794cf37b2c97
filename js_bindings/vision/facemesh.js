// FaceMesh: BlazeFace detector + 468-point landmark model (or the 478-point attention mesh), tracking from the previous frame's landmarks so the
// detector runs only when tracking is lost. The per-frame rules are those of python_ref/vision/facemesh.py.

import { decode, DETECTOR_INPUT, letterbox, sigmoid, weightedNms } from "./detect.js";
import { OUTPUTS, PRESENCE, refineLandmarks } from "./refine.js";
import { modelInput, opsFor } from "./imgops.js";
import { LANDMARK_INPUT, mapLandmarks, roiFromDetection, roiFromLandmarks, roiIsSane, warpRoi } from "./roi.js";

// Landmark-derived keypoints in the detector's order: eyes (two corners), nose tip, mouth (13, 14), ears.
const KEYPOINT_LANDMARKS = [[33, 133], [263, 362], [1], [13, 14], [234], [454]];
const now = () => globalThis.performance?.now?.() ?? Date.now();

// This module has no module-URL lookup, so mini-program builds copy it as is: FaceMesh.create takes the models'
// location as an option; vision/index.js's FaceMesh adds the default (the package's own models/ folder).

function faceFromLandmarks(lm, score, roi, detection) {
  let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
  for (let i = 0; i < lm.length; i += 3) {
    x0 = Math.min(x0, lm[i]); x1 = Math.max(x1, lm[i]);
    y0 = Math.min(y0, lm[i + 1]); y1 = Math.max(y1, lm[i + 1]);
  }
  const keypoints = KEYPOINT_LANDMARKS.map((ix) => {
    let x = 0, y = 0;
    for (const k of ix) { x += lm[3 * k]; y += lm[3 * k + 1]; }
    return [x / ix.length, y / ix.length];
  });
  return {
    box: { xMin: x0, yMin: y0, xMax: x1, yMax: y1, width: x1 - x0, height: y1 - y0 },
    keypoints,
    score,
    landmarks: Float32Array.from(lm),
    roi,
    detection: detection
      ? { box: detection.box.slice(), keypoints: Array.from(detection.keypoints), score: detection.score }
      : null,
  };
}

function pixelsOf(image) {
  if (!image || !ArrayBuffer.isView(image.data) || !(image.width > 0 && image.height > 0)) {
    throw new TypeError("FaceMesh.detect needs ImageData or {data: RGBA bytes, width, height}");
  }
  const channels = image.channels ?? (image.data.length === image.width * image.height * 3 ? 3 : 4);
  if (image.data.length < image.width * image.height * channels) {
    throw new TypeError(`expected ${image.width}x${image.height}x${channels} bytes, got ${image.data.length}`);
  }
  return { data: image.data, width: image.width, height: image.height, channels };
}

export class FaceMesh {
  /**
   * Load the detector and landmark models into a runtime (wasmrt.init() or initWorker()).
   * options: modelBase (folder URL or path holding face_detector.wrt and face_landmark.wrt, or
   * face_landmark_attention.wrt with refine) or detectorModel and landmarkModel (URL, path or bytes each), maxFaces (1),
   * minDetectionScore (0.5), minPresence (0.5), tracking (true), refine (false: with true, the attention mesh gives 478
   * landmarks with refined lips and irises).
   */
  static async create(rt, options = {}) {
    const base = options.modelBase;
    if (!base && !(options.detectorModel && options.landmarkModel)) {
      throw new TypeError("FaceMesh.create needs options.modelBase (the folder holding face_detector.wrt and " +
        "face_landmark.wrt) or both options.detectorModel and options.landmarkModel");
    }
    const at = (name) => (typeof base === "string" ? base.replace(/\/?$/, "/") + name : new URL(name, base));
    const load = async (given, file, name) => {
      const source = given ?? at(file);
      try {
        return await rt.load(source, { name });
      } catch (e) {
        const where = typeof source === "string" || source instanceof URL ? ` from ${source}` : "";
        e.message = `FaceMesh: cannot load ${file}${where}: ${e.message}. The npm package ships the face models in ` +
          "its models/ folder: serve that folder with the package, or say where they are with " +
          "FaceMesh.create(rt, {modelBase}) (or {detectorModel, landmarkModel})";
        throw e;
      }
    };
    const [detector, landmarker] = await Promise.all([
      load(options.detectorModel, "face_detector.wrt", "face_detector"),
      options.refine ? load(options.landmarkModel, "face_landmark_attention.wrt", "face_landmark_attention")
        : load(options.landmarkModel, "face_landmark.wrt", "face_landmark"),
    ]);
    return new this(detector, landmarker, options);
  }

  /** detector, landmarker: loaded models (anything with async run(feeds) -> {name: {data}}). */
  constructor(detector, landmarker,
    { maxFaces = 1, minDetectionScore = 0.5, minPresence = 0.5, tracking = true, refine = false, imageOps = "engine" } = {}) {
    Object.assign(this, { detector, landmarker, maxFaces, minDetectionScore, minPresence, tracking, refine });
    /** The engine's image operations (crops), or null: the JS ports (imageOps "js", or no engine reachable). */
    this.ops = opsFor(imageOps, landmarker, "FaceMesh");
    this.tracked = []; // Rois for the next frame
    // the models' input arrays where they are not the models' own buffers (imgops.js modelInput)
    this._inputs = {};
  }

  /** Forget tracked faces: the next frame runs the detector. */
  reset() { this.tracked = []; }

  /** Detector alone: [{box: [x0, y0, x1, y1], keypoints: Float64Array(12), score}] after NMS, image pixels. */
  async detectFaces(image, ms = {}) {
    const pixels = pixelsOf(image);
    const t0 = now();
    const tensor = letterbox(pixels, this.ops,
      this.ops ? modelInput(this.detector, DETECTOR_INPUT * DETECTOR_INPUT * 3, this.ops, this._inputs, "detector") : undefined);
    const t1 = now();
    const out = await this.detector.run({ input: { data: tensor.data, shape: tensor.shape } });
    const t2 = now();
    const dets = weightedNms(decode(out.regressors.data, out.classificators.data, tensor.geometry, this.minDetectionScore));
    ms.detectorPre = (ms.detectorPre ?? 0) + (t1 - t0);
    ms.detector = (ms.detector ?? 0) + (t2 - t1);
    ms.detectorPost = (ms.detectorPost ?? 0) + (now() - t2);
    return dets;
  }

  /** Landmarks (Float64Array(468*3), refined: 478*3; image pixels) and presence score for one crop. */
  async landmarksIn(image, roi, ms = {}) {
    const pixels = pixelsOf(image);
    const t0 = now();
    const n = LANDMARK_INPUT * LANDMARK_INPUT * 3;
    const crop = warpRoi(pixels, roi, LANDMARK_INPUT, modelInput(this.landmarker, n, this.ops, this._inputs, "landmarks"),
      this.ops);
    const t1 = now();
    const out = await this.landmarker.run({ input_1: { data: crop, shape: [1, LANDMARK_INPUT, LANDMARK_INPUT, 3] } });
    const t2 = now();
    let presence, lm;
    if (this.refine) { // every region mapped to the image, then merged (refine.js)
      presence = sigmoid(out[PRESENCE].data[0]);
      const [mesh, ...regions] = OUTPUTS.map((k, i) => {
        const raw = out[k].data;
        if (i === 0) return mapLandmarks(raw, roi);
        const xyz = new Float64Array((raw.length / 2) * 3);
        for (let p = 0; p < raw.length / 2; p++) { xyz[3 * p] = raw[2 * p]; xyz[3 * p + 1] = raw[2 * p + 1]; }
        const m = mapLandmarks(xyz, roi), xy = new Float64Array(raw.length);
        for (let p = 0; p < raw.length / 2; p++) { xy[2 * p] = m[3 * p]; xy[2 * p + 1] = m[3 * p + 1]; }
        return xy;
      });
      lm = refineLandmarks(mesh, ...regions);
    } else {
      presence = sigmoid(out.conv2d_31.data[0]);
      lm = mapLandmarks(out.conv2d_21.data, roi);
    }
    ms.warp = (ms.warp ?? 0) + (t1 - t0);
    ms.landmarks = (ms.landmarks ?? 0) + (t2 - t1);
    ms.landmarksPost = (ms.landmarksPost ?? 0) + (now() - t2);
    return { landmarks: lm, presence };
  }

  /**
   * One frame: {faces, ranDetector, ms}. faces: [{box, keypoints, score, landmarks, roi, detection}];
   * landmarks = Float32Array(468*3) (x, y image pixels, z); box/keypoints come from the landmarks; score is the
   * landmark model's face presence; detection is the detector's output when it ran for this face on this frame.
   */
  async detect(image) {
    const pixels = pixelsOf(image);
    const { width: w, height: h } = pixels;
    const ms = {};
    const t0 = now();
    const faces = [], full = []; // full: float64 landmarks of each face, for tracking
    const keep = (lm, presence, roi, det) => { faces.push(faceFromLandmarks(lm, presence, roi, det)); full.push(lm); };
    for (const roi of this.tracking ? this.tracked : []) {
      const { landmarks, presence } = await this.landmarksIn(pixels, roi, ms);
      if (presence >= this.minPresence && roiIsSane(roiFromLandmarks(landmarks), roi, w, h)) {
        keep(landmarks, presence, roi, null);
      }
    }
    let ranDetector = false;
    if (faces.length < this.maxFaces) {
      ranDetector = true;
      for (const det of await this.detectFaces(pixels, ms)) {
        if (faces.length >= this.maxFaces) break;
        const cx = (det.box[0] + det.box[2]) / 2, cy = (det.box[1] + det.box[3]) / 2;
        if (faces.some((f) => f.box.xMin <= cx && cx <= f.box.xMax && f.box.yMin <= cy && cy <= f.box.yMax)) continue;
        const roi = roiFromDetection(det);
        const { landmarks, presence } = await this.landmarksIn(pixels, roi, ms);
        if (presence >= this.minPresence) keep(landmarks, presence, roi, det);
      }
    }
    this.tracked = this.tracking ? full.map(roiFromLandmarks) : [];
    ms.total = now() - t0;
    return { faces, ranDetector, ms };
  }

  /** Release both models' engine memory. */
  async release() {
    await this.detector.release?.();
    await this.landmarker.release?.();
  }
}
