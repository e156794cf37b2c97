// Selfie segmentation (MediaPipe's selfie_segmentation and selfie_segmentation_landscape), temporal smoothing and
// compositing on raw pixels and on a canvas. A port of python_ref/vision/segment.py (its docstring states every
// rule: model choice, input, mask resize, smoothing in float32, 8-bit compositing, box blur).

import {
  BLUR_MAX_RADIUS, BLUR_PASSES, BLUR_RADIUS, LANDSCAPE_MIN_ASPECT, SELFIE_MODELS, SMOOTHING_POLY, SMOOTHING_RATIO,
} from "./constants.js";
import { parseColor } from "./lips.js";
import { MASK_ENGINE, modelInput, opsFor } from "./imgops.js";
import { loadModel, now, pixelsOf } from "./pixels.js";
import { sampleRect } from "./sample.js";

const f32 = Math.fround;

export const chooseModel = (width, height) => (width > LANDSCAPE_MIN_ASPECT * height ? "landscape" : "general");

/** Float32Array(h*w*3) in [0, 1]: the whole frame stretched to the model's input (into `out` if given). */
export function selfieInput(pixels, model, ops = null, out = undefined, placed = null) {
  const spec = SELFIE_MODELS[model], { width: W, height: H } = pixels;
  if (ops) return ops.crop(pixels, W / 2, H / 2, W, H, 0, spec.width, spec.height, "zero", 0, 255, out, placed);
  const px = sampleRect(pixels, W / 2, H / 2, W, H, 0, spec.width, spec.height, "zero");
  const input = out ?? new Float32Array(px.length);
  for (let i = 0; i < px.length; i++) input[i] = f32(px[i] / 255);
  return input;
}

function axis(nSrc, nDst) {
  const i0 = new Int32Array(nDst), i1 = new Int32Array(nDst), f = new Float64Array(nDst);
  for (let j = 0; j < nDst; j++) {
    const s = Math.min(Math.max((j + 0.5) * (nSrc / nDst) - 0.5, 0), nSrc - 1), lo = Math.floor(s);
    i0[j] = lo; i1[j] = Math.min(lo + 1, nSrc - 1); f[j] = s - lo;
  }
  return [i0, i1, f];
}

/** A w x h float mask -> Float32Array(width*height): bilinear, pixel centres aligned, edges clamped. */
export function resizeMask(m, w, h, width, height) {
  const [x0, x1, fx] = axis(w, width), [y0, y1, fy] = axis(h, height);
  const out = new Float32Array(width * height);
  for (let i = 0; i < height; i++) {
    const r0 = y0[i] * w, r1 = y1[i] * w, b = fy[i];
    for (let j = 0; j < width; j++) {
      const a = fx[j];
      const top = m[r0 + x0[j]] * (1 - a) + m[r0 + x1[j]] * a, bottom = m[r1 + x0[j]] * (1 - a) + m[r1 + x1[j]] * a;
      out[i * width + j] = top * (1 - b) + bottom * b;
    }
  }
  return out;
}

const [C1, C2, C3, C4, C5] = SMOOTHING_POLY.map(f32);

/** The smoothing ratio (the previous mask's largest weight; 0: no smoothing) is in [0, 1]. */
export function checkRatio(ratio, who) {
  if (!(ratio >= 0 && ratio <= 1)) throw new RangeError(`${who}: the smoothing ratio must be in [0, 1], got ${ratio}`);
}

/** MediaPipe's uncertainty-weighted blend of this frame's mask with the previous output (float32 arithmetic). */
export function smooth(mask, previous, ratio = SMOOTHING_RATIO) {
  checkRatio(ratio, "smooth");
  if (!previous || ratio <= 0 || previous.length !== mask.length) return Float32Array.from(mask);
  const r = f32(ratio), out = new Float32Array(mask.length);
  for (let i = 0; i < mask.length; i++) {
    const n = f32(mask[i]), t = f32(n - 0.5), x = f32(t * t);
    let p = f32(C4 + f32(x * C5)); // Horner's rule, each step rounded to float32 as numpy does
    p = f32(C3 + f32(x * p));
    p = f32(C2 + f32(x * p));
    p = f32(C1 + f32(x * p));
    p = f32(x * p);
    const u = f32(1 - Math.min(1, p));
    out[i] = f32(n + f32(f32(previous[i] - n) * f32(u * r)));
  }
  return out;
}

const maskData = (mask) => (ArrayBuffer.isView(mask) ? mask : mask?.data);
// the engine a mask was made by (imgops.js EngineOps), or null
const maskEngine = (mask) => (mask && !ArrayBuffer.isView(mask) ? mask[MASK_ENGINE] ?? null : null);

/** 8-bit alpha of a mask value: floor(clip(m, 0, 1) * 255 + 0.5); NaN: 0 (background). */
export const alpha8 = (m) => Math.floor((m > 0 ? (m < 1 ? m : 1) : 0) * 255 + 0.5);

// options.out: the bytes to write the result into (the frame's channels, its size; the frame's own data composites in
// place), so a frame loop need not allocate a frame's worth of memory each time
function outOf(out, fg, who) {
  if (out === undefined || out === null) return null;
  const n = fg.width * fg.height * fg.channels;
  if (!(out instanceof Uint8Array || out instanceof Uint8ClampedArray) || out.length !== n) {
    throw new RangeError(`${who}: options.out must be a Uint8Array or Uint8ClampedArray of ${n} bytes (the frame's ` +
      `${fg.width}x${fg.height}x${fg.channels}), got ${out?.constructor?.name ?? typeof out} of ${out?.length}`);
  }
  return out;
}

/**
 * The frame where the mask says person, the background elsewhere: a new {data, width, height, channels} (the
 * frame's byte type and channels; an RGBA frame keeps its alpha), or with options.out that array as its data.
 * background: an image of the frame's size.
 */
export function composite(frame, mask, background, { out } = {}) {
  const fg = pixelsOf(frame, "composite"), bg = pixelsOf(background, "composite"), m = maskData(mask);
  if (bg.width !== fg.width || bg.height !== fg.height || !m || m.length !== fg.width * fg.height) {
    throw new RangeError(`composite: frame ${fg.width}x${fg.height}, mask of ${m?.length} values and background ` +
      `${bg.width}x${bg.height} differ in size`);
  }
  const into = outOf(out, fg, "composite"), ops = maskEngine(mask);
  if (ops) return ops.composite(fg, m, bg, into);
  const C = fg.channels, B = bg.channels, data = into ?? new fg.data.constructor(fg.width * fg.height * C);
  for (let p = 0; p < m.length; p++) {
    const a = alpha8(m[p]);
    for (let k = 0; k < 3; k++) data[p * C + k] = Math.floor((fg.data[p * C + k] * a + bg.data[p * B + k] * (255 - a) + 127) / 255);
    if (C === 4) data[p * C + 3] = fg.data[p * C + 3];
  }
  return { data, width: fg.width, height: fg.height, channels: C };
}

// options.out of segment() / options.mask of replaceBackground(): a Float32Array of the frame's size, or undefined
function maskOutOf(m, W, H, who, name) {
  if (m !== undefined && !(m instanceof Float32Array && m.length === W * H)) {
    throw new RangeError(`SelfieSegmenter.${who}: options.${name} must be a Float32Array of ${W * H} values (the ` +
      `frame's ${W}x${H}), got ${m?.constructor?.name ?? typeof m} of ${m?.length}`);
  }
  return m;
}

const isColour = (background) => Array.isArray(background) || typeof background === "string";

/** background: an image of the frame's size, an [r, g, b] colour or a "#rrggbb" string. options.out: as composite's. */
export function replaceBackground(frame, mask, background, options = {}) {
  if (isColour(background)) {
    const fg = pixelsOf(frame, "replaceBackground"), rgb = parseColor(background), ops = maskEngine(mask);
    if (ops && maskData(mask)?.length === fg.width * fg.height) {
      return ops.composite(fg, maskData(mask), rgb, outOf(options.out, fg, "replaceBackground"));
    }
    const data = new Uint8Array(fg.width * fg.height * 3);
    for (let p = 0; p < data.length; p += 3) { data[p] = rgb[0]; data[p + 1] = rgb[1]; data[p + 2] = rgb[2]; }
    background = { data, width: fg.width, height: fg.height, channels: 3 };
  }
  return composite(frame, mask, background, options);
}

function checkBlur(radius, passes, who) {
  if (!(Number.isInteger(radius) && radius >= 0 && radius <= BLUR_MAX_RADIUS && Number.isInteger(passes) && passes >= 0)) {
    throw new RangeError(`${who}: radius must be an integer 0..${BLUR_MAX_RADIUS} and passes >= 0, got ${radius} and ${passes}`);
  }
}

/** passes box filters of the given radius (horizontal then vertical, edges replicated, rounded): RGB bytes. */
export function boxBlur(frame, radius = BLUR_RADIUS, passes = BLUR_PASSES, ops = null) {
  checkBlur(radius, passes, "boxBlur");
  if (ops) return ops.boxBlur(pixelsOf(frame, "boxBlur"), radius, passes);
  const { data, width: W, height: H, channels: C } = pixelsOf(frame, "boxBlur");
  let img = new Int32Array(W * H * 3);
  for (let p = 0; p < W * H; p++) for (let k = 0; k < 3; k++) img[3 * p + k] = data[p * C + k];
  if (radius >= 1) {
    const n = 2 * radius + 1, half = Math.floor(n / 2);
    const pass = (src, len, count, step, lineStep) => { // one direction: `count` lines of `len` pixels
      const dst = new Int32Array(src.length);
      for (let line = 0; line < count; line++) {
        const base = line * lineStep;
        for (let k = 0; k < 3; k++) {
          const o = base + k;
          let s = 0;
          for (let i = -radius; i <= radius; i++) s += src[o + (i < 0 ? 0 : i >= len ? len - 1 : i) * step];
          for (let i = 0; i < len; i++) {
            dst[o + i * step] = ((s + half) / n) | 0; // s >= 0: truncation is the floor
            const add = i + radius + 1, sub = i - radius;
            s += src[o + (add < len ? add : len - 1) * step] - src[o + (sub > 0 ? sub : 0) * step];
          }
        }
      }
      return dst;
    };
    for (let t = 0; t < passes; t++) {
      img = pass(img, W, H, 3, 3 * W); // along rows
      img = pass(img, H, W, 3 * W, 3); // along columns
    }
  }
  return { data: Uint8Array.from(img), width: W, height: H, channels: 3 };
}

/** The background box-blurred (options.radius, default BLUR_RADIUS), the person kept. options.out: as composite's. */
export function blurBackground(frame, mask, { radius = BLUR_RADIUS, out } = {}) {
  return composite(frame, mask, boxBlur(frame, radius, BLUR_PASSES, maskEngine(mask)), { out });
}

/**
 * Canvas helper: draws the composited frame on a 2-D context (ctx.putImageData at 0, 0). options: background (image,
 * colour) or blur: true with radius.
 */
export function drawSegmented(ctx, frame, mask, { background = [0, 0, 0], blur = false, radius = BLUR_RADIUS } = {}) {
  const out = blur ? blurBackground(frame, mask, { radius }) : replaceBackground(frame, mask, background);
  const rgba = new Uint8ClampedArray(out.width * out.height * 4);
  for (let p = 0; p < out.width * out.height; p++) {
    for (let k = 0; k < 3; k++) rgba[4 * p + k] = out.data[p * out.channels + k];
    rgba[4 * p + 3] = out.channels === 4 ? out.data[4 * p + 3] : 255;
  }
  const image = typeof ImageData === "function" ? new ImageData(rgba, out.width, out.height)
    : { data: rgba, width: out.width, height: out.height };
  ctx.putImageData(image, 0, 0);
  return out;
}

export class SelfieSegmenter {
  /**
   * Load the selfie models into a runtime. options: modelBase (folder holding selfie_segmentation.wrt and
   * selfie_segmentation_landscape.wrt) or generalModel / landscapeModel (URL, path or bytes); model ("auto": by frame
   * shape, "general" or "landscape": only that one is loaded); smoothing (the previous mask's weight, 0.7; 0: off).
   */
  static async create(rt, options = {}) {
    const model = options.model ?? "auto";
    if (model !== "auto" && !(model in SELFIE_MODELS)) {
      throw new RangeError(`SelfieSegmenter: model must be auto, general or landscape, got ${JSON.stringify(model)}`);
    }
    const names = model === "auto" ? Object.keys(SELFIE_MODELS) : [model];
    const given = { general: options.generalModel, landscape: options.landscapeModel };
    if (!options.modelBase && names.some((n) => !given[n])) {
      throw new TypeError("SelfieSegmenter.create needs options.modelBase (the folder holding selfie_segmentation.wrt " +
        "and selfie_segmentation_landscape.wrt) or the models themselves (generalModel, landscapeModel)");
    }
    const file = (n) => SELFIE_MODELS[n].source.replace(/\.tflite$/, ".wrt");
    const loaded = await Promise.all(names.map((n) => loadModel(rt, given[n], options.modelBase, file(n), "SelfieSegmenter")));
    return new this(Object.fromEntries(names.map((n, i) => [n, loaded[i]])), options);
  }

  /** runners: {general?, landscape?}: loaded models (async run(feeds) -> {name: {data}}; run() reads its input before
   * it resolves: the input array is reused by the next frame). */
  constructor(runners, { model = "auto", smoothing = SMOOTHING_RATIO, imageOps = "engine" } = {}) {
    checkRatio(smoothing, "SelfieSegmenter");
    Object.assign(this, { runners, model, smoothing });
    /** The engine's image operations (input, mask resize, smoothing; the mask carries it to the compositing), or
     * null: the JS ports (imageOps "js", or no engine reachable). */
    this.ops = opsFor(imageOps, Object.values(runners)[0], "SelfieSegmenter");
    this.previous = null; // the JS ports' previous mask; the engine's stays in its memory (kept)
    this._kept = this.ops?.kept() ?? null; // the previous mask
    this._frame = this.ops?.kept() ?? null; // the frame, from its crop to its compositing
    this._placing = false; // while a call uses _frame
    this._inputs = {};
  }

  /** Forget the previous mask (a new scene). */
  reset() {
    this.previous = null;
    if (this._kept) this._kept.valid = false;
  }

  /** The model's mask at its input size: {data: Float32Array, width, height, model}. placed: the engine's copy of
   * the image (EngineOps.place), read instead of the image's bytes. */
  async rawMask(image, placed = null) {
    const pixels = pixelsOf(image, "SelfieSegmenter.rawMask");
    const model = this.model === "auto" ? chooseModel(pixels.width, pixels.height) : this.model;
    const runner = this.runners[model];
    if (!runner) throw new Error(`SelfieSegmenter: no ${model} model loaded`);
    const spec = SELFIE_MODELS[model];
    // the engine's crop writes into the model's own input buffer, or one array per model reused frame after frame
    const input = this.ops ? modelInput(runner, spec.width * spec.height * 3, this.ops, this._inputs, model) : undefined;
    const x = selfieInput(pixels, model, this.ops, input, placed);
    const out = await runner.run({ input_1: { data: x, shape: [1, spec.height, spec.width, 3] } });
    return { data: out[spec.output].data, width: spec.width, height: spec.height, model };
  }

  /**
   * One frame: {mask: {data: Float32Array (person confidence), width, height}, model, ms}, smoothed over frames.
   * options.out: a Float32Array of the frame's width x height that receives the mask (it is then mask.data), e.g. the
   * same one frame after frame, instead of a new array each frame.
   */
  async segment(image, { out } = {}) {
    const pixels = pixelsOf(image, "SelfieSegmenter.segment"), t0 = now();
    const { width: W, height: H } = pixels;
    maskOutOf(out, W, H, "segment", "out");
    const small = await this.rawMask(pixels);
    const t1 = now();
    const ops = this.ops;
    const data = ops ? ops.maskFrame(small.data, small.width, small.height, W, H, this._kept, this.smoothing, out)
      : smooth(resizeMask(small.data, small.width, small.height, W, H), this.previous, this.smoothing);
    if (out && data !== out) out.set(data);
    // the JS ports keep their own copy of the mask to smooth the next frame with (the engine keeps its in its
    // memory): what the caller does with the mask it got does not change the next one
    if (!ops) {
      if (this.previous?.length !== data.length) this.previous = new Float32Array(data.length);
      this.previous.set(data);
    }
    const mask = { data: out ?? data, width: W, height: H };
    if (ops) Object.defineProperty(mask, MASK_ENGINE, { value: ops }); // replaceBackground / blurBackground use it
    return { mask, model: small.model, ms: { model: t1 - t0, post: now() - t1, total: now() - t0 } };
  }

  /**
   * One frame segmented (as segment()) and composited over `background` (replaceBackground's: an image of the
   * frame's size, an [r, g, b] colour or a "#rrggbb" string): {image, mask, model, ms}, the same bytes as
   * segment() then replaceBackground(). With the engine the frame crosses into it once and the mask stays there,
   * each row composited as it is made. options.mask: a Float32Array of the frame's width x height that receives the
   * mask, or true for a new one (else mask is null); options.out: as replaceBackground's.
   */
  async replaceBackground(image, background, options = {}) {
    return this._composited(image, { background }, options, "replaceBackground");
  }

  /** One frame segmented and its background box-blurred (options.radius, default BLUR_RADIUS): as
   * replaceBackground() (segment() then blurBackground()). */
  async blurBackground(image, options = {}) {
    const radius = options.radius ?? BLUR_RADIUS;
    checkBlur(radius, BLUR_PASSES, "SelfieSegmenter.blurBackground");
    return this._composited(image, { radius }, options, "blurBackground");
  }

  async _composited(image, { background, radius }, { out, mask: want } = {}, who) {
    const pixels = pixelsOf(image, `SelfieSegmenter.${who}`), t0 = now(), { width: W, height: H } = pixels;
    const maskOut = maskOutOf(want === true ? new Float32Array(W * H) : want || undefined, W, H, who, "mask");
    const into = outOf(out, pixels, `SelfieSegmenter.${who}`);
    const bg = background === undefined ? { blur: radius } : isColour(background) ? parseColor(background)
      : pixelsOf(background, `SelfieSegmenter.${who}`);
    if (bg.width !== undefined && (bg.width !== W || bg.height !== H)) {
      throw new RangeError(`SelfieSegmenter.${who}: frame ${W}x${H} and background ${bg.width}x${bg.height} differ ` +
        "in size");
    }
    const ops = this.ops;
    if (!ops) { // the JS ports: segment() then the compositing
      const { mask, model, ms } = await this.segment(pixels, { out: maskOut });
      const t1 = now(), how = { out: into ?? undefined };
      const result = background === undefined ? blurBackground(pixels, mask, { radius, ...how })
        : replaceBackground(pixels, mask, background, how);
      return { image: result, mask: maskOut ? mask : null, model,
        ms: { ...ms, post: ms.post + now() - t1, total: now() - t0 } };
    }
    // the frame's engine copy, read by the crop and the compositing: a call made while another awaits its model
    // gets one of its own
    const own = this._placing, frame = own ? ops.kept() : this._frame;
    this._placing = true;
    try {
      ops.place(frame, pixels);
      const small = await this.rawMask(pixels, frame);
      const t1 = now();
      const result = ops.maskComposite(small.data, small.width, small.height, this._kept, this.smoothing, frame,
        pixels, bg, into, maskOut);
      return { image: result, mask: maskOut ? { data: maskOut, width: W, height: H } : null, model: small.model,
        ms: { model: t1 - t0, post: now() - t1, total: now() - t0 } };
    } finally {
      if (own) frame.free();
      else this._placing = false;
    }
  }

  async release() {
    this._kept?.free();
    this._frame?.free();
    for (const r of Object.values(this.runners)) await r.release?.();
  }
}
