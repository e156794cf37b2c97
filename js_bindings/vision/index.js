// wasmrt.vision: the AR face pipeline on top of the wasmrt runtime.
//   const face = await wasmrt.vision.FaceMesh.create(rt);
//   const { faces } = await face.detect(imageData);          // ImageData or {data: RGBA bytes, width, height}
//   wasmrt.vision.paintLips(ctx, faces[0], { color: "#c2185b", intensity: 0.6 });
// The same pipeline in numpy is python_ref/vision (the oracle these modules are tested against).

import { defaults } from "./facemesh.js";

/** Default model files: the repository's models/ folder next to js_bindings/ (as `wasmrt demo` serves it). */
export const DEFAULT_MODEL_BASE = new URL("../../models/", import.meta.url);
defaults.modelBase = DEFAULT_MODEL_BASE;

export { FaceMesh } from "./facemesh.js";
export { decode, DETECTOR_INPUT, iou, letterbox, ssdAnchors, weightedNms } from "./detect.js";
export { LANDMARK_INPUT, mapLandmarks, roiFromDetection, roiFromLandmarks, roiIsSane, warpRoi } from "./roi.js";
export {
  featherRadius, LIPS_INNER, LIPS_OUTER, lipAlpha, lipMask, lipRegion, paintLips, parseColor, recolor, recolorLips,
} from "./lips.js";
export { clipFrame, clipParams } from "./clip.js";
export { LEFT_EYE, LIPS, refineLandmarks, RIGHT_EYE } from "./refine.js";
export { sampleRect } from "./sample.js";
