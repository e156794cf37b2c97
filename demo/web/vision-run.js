// The pipelines of the segmentation and hands pages, the same code on the page's thread and in a Worker
// (vision-worker.js): createPipeline(kind, options) loads the engine and the models (the package's own: no
// modelBase, so wasmrt/vision's defaultModelBase()), then frame(pixels) runs one frame and returns what the page
// draws, with per-stage times.
import { init } from "../../js_bindings/src/index.js";
import { HandTracker, SelfieSegmenter } from "../../js_bindings/vision/index.js";


/** Nearest-neighbour copy of RGBA pixels at another size (a background photo fitted to the frame). */
function fit(img, width, height) {
  if (img.width === width && img.height === height) return img;
  const data = new Uint8ClampedArray(width * height * 4);
  for (let y = 0; y < height; y++) {
    const sy = Math.min(img.height - 1, Math.floor(((y + 0.5) * img.height) / height));
    for (let x = 0; x < width; x++) {
      const sx = Math.min(img.width - 1, Math.floor(((x + 0.5) * img.width) / width));
      data.set(img.data.subarray((sy * img.width + sx) * 4, (sy * img.width + sx) * 4 + 4), (y * width + x) * 4);
    }
  }
  return { data, width, height };
}

/**
 * Background replacement: settings {mode: "color" | "image" | "blur", color, image: RGBA pixels, radius}.
 * frame(pixels) -> {pixels (the composited frame, RGBA), model, personShare, ms: {model, post}}: the segmenter
 * makes the mask and composites the frame in one pass (post), and hands the mask back for the person's share.
 */
async function segmentation(rt) {
  const seg = await SelfieSegmenter.create(rt);
  let settings = { mode: "color", color: "#00b140", radius: 8 }, fitted = null;
  return {
    configure(s) { settings = { ...settings, ...s }; fitted = null; },
    reset() { seg.reset(); },
    async frame(pixels) {
      let background = settings.color;
      if (settings.mode === "image" && settings.image) {
        if (!fitted || fitted.width !== pixels.width || fitted.height !== pixels.height) {
          fitted = fit(settings.image, pixels.width, pixels.height);
        }
        background = fitted;
      }
      const { image: out, mask, model, ms } = settings.mode === "blur"
        ? await seg.blurBackground(pixels, { radius: settings.radius, mask: true })
        : await seg.replaceBackground(pixels, background, { mask: true });
      let person = 0;
      for (const v of mask.data) person += v >= 0.5;
      const data = out.data instanceof Uint8ClampedArray ? out.data : new Uint8ClampedArray(out.data.buffer);
      return { pixels: { data, width: out.width, height: out.height }, model, personShare: person / mask.data.length,
        ms: { model: ms.model, post: ms.post } };
    },
  };
}

/** Hand tracking: frame(pixels) -> {hands: [{landmarks, handedness, handednessScore, score, gesture, tracked}],
 * ranDetector, ms: {detector, warp, landmarks}}. */
async function hands(rt, { maxHands = 2 } = {}) {
  const tracker = await HandTracker.create(rt, { maxHands });
  return {
    configure(s) { if ("tracking" in s) { tracker.tracking = !!s.tracking; tracker.reset(); } },
    reset() { tracker.reset(); },
    async frame(pixels) {
      const r = await tracker.detect(pixels);
      return {
        hands: r.hands.map((h) => ({ landmarks: Array.from(h.landmarks), handedness: h.handedness,
          handednessScore: h.handednessScore, score: h.score, gesture: h.gesture, tracked: h.tracked })),
        ranDetector: r.ranDetector,
        ms: { detector: r.ms.detector ?? 0, warp: r.ms.warp ?? 0, landmarks: r.ms.landmarks ?? 0 },
      };
    },
  };
}

export const PIPELINES = { segmentation, hands };

/** kind: "segmentation" or "hands"; options: {variant, maxHands}. */
export async function createPipeline(kind, { variant = "auto", ...options } = {}) {
  if (!(kind in PIPELINES)) throw new RangeError(`unknown pipeline ${JSON.stringify(kind)}`);
  const rt = await init({ variant });
  const pipeline = await PIPELINES[kind](rt, options);
  return Object.assign(pipeline, { info: { variant: rt.variant, reason: rt.reason } });
}
