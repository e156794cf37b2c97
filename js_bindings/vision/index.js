// wasmrt/vision: the AR face pipeline on top of the wasmrt runtime.
//   import { FaceMesh, paintLips } from "wasmrt/vision";
//   const face = await FaceMesh.create(rt);                  // the face models of the package's models/ folder
//   const { faces } = await face.detect(imageData);          // ImageData or {data: RGBA bytes, width, height}
//   paintLips(ctx, faces[0], { color: "#c2185b", intensity: 0.6 });
// The same pipeline in numpy is python_ref/vision (the oracle these modules are tested against).

import { FaceMesh as FaceMeshCore } from "./facemesh.js";

/** Where FaceMesh.create loads face_detector.wrt and face_landmark.wrt from by default: the package's models/. */
export function defaultModelBase() {
  return new URL("../models/", import.meta.url);
}

/** FaceMesh whose create() defaults options.modelBase to defaultModelBase(). */
export class FaceMesh extends FaceMeshCore {
  static create(rt, options = {}) {
    const defaulted = options.modelBase || (options.detectorModel && options.landmarkModel)
      ? options : { ...options, modelBase: defaultModelBase() };
    return super.create(rt, defaulted);
  }
}

export { decode, DETECTOR_INPUT, iou, letterbox, ssdAnchors, weightedNms } from "./detect.js";
export { LANDMARK_INPUT, mapLandmarks, roiFromDetection, roiFromLandmarks, roiIsSane, warpRoi } from "./roi.js";
export {
  featherRadius, LIPS_INNER, LIPS_OUTER, lipAlpha, lipMask, lipRegion, paintLips, parseColor, recolor, recolorLips,
} from "./lips.js";
export { clipFrame, clipParams } from "./clip.js";
export { LEFT_EYE, LIPS, refineLandmarks, RIGHT_EYE } from "./refine.js";
export { sampleRect } from "./sample.js";
