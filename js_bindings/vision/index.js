// wasmrt/vision: the AR face pipeline on top of the wasmrt runtime.
//   import { FaceMesh, paintLips } from "wasmrt/vision";
//   const face = await FaceMesh.create(rt);                  // the face models of the package's models/ folder
//   const { faces } = await face.detect(imageData);          // ImageData or {data: RGBA bytes, width, height}
//   paintLips(ctx, faces[0], { color: "#c2185b", intensity: 0.6 });
//   const hands = await HandTracker.create(rt, { maxHands: 2 });  // palm_detection_lite.wrt, hand_landmark_lite.wrt
//   const { hands: found } = await hands.detect(frame);      // 21 landmarks, handedness, gesture; tracked
//   const seg = await SelfieSegmenter.create(rt);            // selfie_segmentation(_landscape).wrt, by frame shape
//   const { image } = await seg.replaceBackground(frame, "#00b140");  // or seg.blurBackground(frame, { radius: 8 })
//   const { mask } = await seg.segment(frame);               // person confidence at frame size, smoothed
//   const out = replaceBackground(frame, mask, "#00b140");   // or blurBackground(frame, mask, { radius: 8 })
// The same pipelines in numpy is python_ref/vision (the oracle these modules are tested against).

import { FaceMesh as FaceMeshCore } from "./facemesh.js";
import { HandTracker as HandTrackerCore } from "./hands.js";
import { SelfieSegmenter as SelfieSegmenterCore } from "./segment.js";

/** Where FaceMesh, HandTracker and SelfieSegmenter load their models from by default: the package's models/. */
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

const withBase = (options, given) => (options.modelBase || given ? options : { ...options, modelBase: defaultModelBase() });

/** HandTracker whose create() defaults options.modelBase to defaultModelBase(), and there to the lite models (the
 * ones the package ships; lite: false for the full ones from a modelBase holding them). */
export class HandTracker extends HandTrackerCore {
  static create(rt, options = {}) {
    const given = options.palmModel && options.landmarkModel;
    const defaulted = options.modelBase || given ? options : { lite: true, ...options, modelBase: defaultModelBase() };
    return super.create(rt, defaulted);
  }
}

/** SelfieSegmenter whose create() defaults options.modelBase to defaultModelBase(). */
export class SelfieSegmenter extends SelfieSegmenterCore {
  static create(rt, options = {}) {
    const m = options.model ?? "auto";
    const given = (m === "auto" || m === "general" ? options.generalModel : true)
      && (m === "auto" || m === "landscape" ? options.landscapeModel : true);
    return super.create(rt, withBase(options, given));
  }
}

export * from "./constants.js";
export { direction, fingerStates, gesture } from "./gestures.js";
export { associate, handedness, mapWorld, roiFromHandLandmarks } from "./hands.js";
export { decodePalms, normalizeRadians, palmAnchors, palmLetterbox, palmsFrom, roiFromPalm, transformRect } from "./palm.js";
export {
  alpha8, blurBackground, boxBlur, chooseModel, composite, drawSegmented, replaceBackground, resizeMask, selfieInput,
  smooth,
} from "./segment.js";
export { decode, DETECTOR_INPUT, iou, letterbox, ssdAnchors, weightedNms } from "./detect.js";
export { LANDMARK_INPUT, mapLandmarks, roiFromDetection, roiFromLandmarks, roiIsSane, warpRoi } from "./roi.js";
export {
  featherRadius, LIPS_INNER, LIPS_OUTER, lipAlpha, lipMask, lipRegion, paintLips, parseColor, recolor, recolorLips,
} from "./lips.js";
export { clipFrame, clipParams } from "./clip.js";
export { LEFT_EYE, LIPS, refineLandmarks, RIGHT_EYE } from "./refine.js";
export { sampleRect } from "./sample.js";
