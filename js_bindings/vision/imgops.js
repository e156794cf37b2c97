// The pipelines' image operations run by the engine: the wrt_img_* functions of kernels_wasm/engine/image.c in the
// runtime's wasm instance (the one the pipeline's models are loaded in), bit for bit the JS ports (sample.js,
// segment.js) and python_ref/vision. engineOps(model) is null where the engine cannot be reached from here (a model
// run by a Worker client, a module without these exports): the pipelines then use the JS ports.

import { errorFromCode, OutOfMemoryError } from "../src/errors.js";
import { BLUR_PASSES, SMOOTHING_POLY } from "./constants.js";

/** A mask's engine (set by SelfieSegmenter.segment), so compositing it runs there too. */
export const MASK_ENGINE = Symbol("wasmrt.vision.maskEngine");

const NAMES = ["wrt_img_crop", "wrt_img_resize_mask", "wrt_img_smooth", "wrt_img_mask_frame", "wrt_img_mask_composite",
  "wrt_img_composite", "wrt_img_box_blur_scratch", "wrt_img_box_blur"];
const cache = new WeakMap();
const u32 = (x) => x >>> 0;
const align = (n) => (n + 63) & ~63;
// a byte array as a Uint8Array: copying between Uint8Array and Uint8ClampedArray goes value by value (clamping),
// between arrays of one type as a block copy (0.05 against 0.4 ms for a 640x512 RGBA frame in Node)
const asBytes = (a) => (a instanceof Uint8Array ? a : new Uint8Array(a.buffer, a.byteOffset, a.byteLength));
// an [r, g, b] background as the engine's compositing takes it: the bytes a Uint8Array holds (as the JS port's)
const colourBytes = (rgb) => Uint8Array.from(rgb.slice(0, 3));

/** The engine operations of the runtime a loaded model lives in, or null. */
export function engineOps(model) {
  const rt = model?._rt, ex = rt?._ex;
  if (!ex || !NAMES.every((n) => typeof ex[n] === "function")) return null;
  let ops = cache.get(rt);
  if (!ops) cache.set(rt, (ops = new EngineOps(rt)));
  return ops;
}

/** A pipeline's option imageOps: "engine" (the model's engine where reachable, else the JS ports) or "js". */
export function opsFor(choice, model, who) {
  if (choice !== "engine" && choice !== "js") {
    throw new RangeError(`${who}: imageOps must be "engine" or "js", got ${JSON.stringify(choice)}`);
  }
  return choice === "engine" ? engineOps(model) : null;
}

/**
 * The frame rows [r0, r1) a crop's bilinear taps can reach (sample.js: y = cy + u sin + v cos with |u| <= |w| / 2,
 * |v| <= |h| / 2; a tap row is floor(y rounded to 1/32) or the next, clamped to the frame): two rows of margin each
 * side for the roundings; the whole frame where the geometry is not finite (the engine refuses it).
 */
export function cropRows(H, cy, w, h, cos, sin) {
  const reach = 0.5 * (Math.abs(w * sin) + Math.abs(h * cos));
  const lo = Math.floor(cy - reach) - 2, hi = Math.floor(cy + reach) + 3;
  if (!Number.isFinite(lo) || !Number.isFinite(hi)) return [0, H];
  const r0 = Math.min(Math.max(lo, 0), H - 1);
  return [r0, Math.max(Math.min(hi, H), r0 + 1)];
}

/**
 * The array a pipeline crops a model's input into (n float32 values, its first input): with the engine's image
 * operations, the model's own input buffer (Model.inputView: the crop writes there and run() copies nothing), else
 * `own[key]`, an array of the pipeline's reused frame after frame (run() copies its input in before it resolves).
 */
export function modelInput(model, n, ops, own, key) {
  let view = null;
  try {
    if (ops && typeof model.inputView === "function") view = model.inputView(0);
  } catch { /* an input without a view (float16): the pipeline's own array */ }
  return view instanceof Float32Array && view.length === n ? view : (own[key] ??= new Float32Array(n));
}

export class EngineOps {
  constructor(rt) {
    this.rt = rt;
    this.ex = rt._ex;
  }

  // One block of wasm memory for a call's buffers (64-byte aligned parts), freed afterwards. fn(pointers, buffer).
  _with(sizes, fn) {
    const rt = this.rt, ex = this.ex;
    rt._usable();
    const offsets = [];
    let total = 0;
    for (const s of sizes) { offsets.push(total); total += align(s); }
    const base = u32(rt._call(() => ex.wrt_alloc(total || 64)));
    if (!base) throw new OutOfMemoryError(`cannot allocate ${total} bytes for an image operation`);
    try {
      return fn(offsets.map((o) => base + o));
    } finally {
      ex.wrt_free(base);
    }
  }

  _check(code) {
    if (code !== 0) throw errorFromCode(code, this.rt._message());
  }

  _bytes(p, n) { return new Uint8Array(this.ex.memory.buffer, p, n); }

  // Copies up to n bytes of data to p; returns how many (the engine checks that count against the shapes).
  _put(p, data, n) {
    const src = data.length <= n ? data : data.subarray(0, n), k = src.length;
    this._bytes(p, k).set(asBytes(src));
    return k;
  }

  // Copies up to n floats to p; returns their bytes.
  _putF32(p, data, n) {
    const src = data.length <= n ? data : data.subarray(0, n);
    new Float32Array(this.ex.memory.buffer, p, src.length).set(src);
    return src.length * 4;
  }

  /**
   * sampleRect (sample.js) with the result normalised (placed: a kept() holding the pixels, as place() leaves it:
   * nothing copied): Float32Array(nW*nH*3) of (v - mean) / div (float64, rounded
   * once to float32), or with mean === null the bytes (Uint8Array). pixels: {data, width, height, channels}.
   */
  crop(pixels, cx, cy, w, h, angle, nW, nH, border, mean, div, out, placed = null) {
    const { data, width: W, height: H } = pixels, C = pixels.channels ?? 4;
    const bytes = W * H * C, asFloat = mean !== null, nOut = nW * nH * 3 * (asFloat ? 4 : 1);
    out ??= asFloat ? new Float32Array(nW * nH * 3) : new Uint8Array(nW * nH * 3);
    const cos = Math.cos(angle), sin = Math.sin(angle);
    // out in this engine's memory (a model's inputView): written there, no copy; its offset taken now, as the
    // allocation below may grow the memory (and detach out): the result is a new view
    const inPlace = out.buffer === this.ex.memory.buffer && out.byteLength === nOut, at = out.byteOffset;
    return this._with([placed ? 0 : bytes, inPlace ? 0 : nOut], ([tmp0, tmp]) => {
      const dst = inPlace ? at : tmp, src = placed ? placed.ptr : tmp0;
      // only the rows the taps can reach are copied (the engine reads no other): a face or a hand is a band of the
      // frame. A frame shorter than its shape is copied whole, for the engine to refuse.
      let have = placed ? placed.bytes : bytes;
      if (!placed) {
        const [r0, r1] = data.length >= bytes ? cropRows(H, cy, w, h, cos, sin) : [0, H], row = W * C;
        if (r1 - r0 === H) have = this._put(src, data, bytes);
        else this._bytes(src + r0 * row, (r1 - r0) * row).set(asBytes(data).subarray(r0 * row, r1 * row));
      }
      this._check(this.rt._call(() => this.ex.wrt_img_crop(src, have, W, H, C, cx, cy, w, h, cos, sin, nW, nH,
        border === "zero" ? 1 : 0, asFloat ? mean : 0, asFloat ? div : 1, dst, nOut, asFloat ? 1 : 0)));
      const view = asFloat ? new Float32Array(this.ex.memory.buffer, dst, nW * nH * 3) : this._bytes(dst, nOut);
      if (inPlace) return view;
      out.set(view);
      return out;
    });
  }

  /** resizeMask (segment.js): Float32Array(width*height). */
  resizeMask(m, w, h, width, height) {
    const nIn = w * h * 4, nOut = width * height * 4;
    return this._with([nIn, nOut], ([src, dst]) => {
      const have = this._putF32(src, m, w * h);
      this._check(this.rt._call(() => this.ex.wrt_img_resize_mask(src, have, w, h, dst, nOut, width, height)));
      return new Float32Array(this.ex.memory.buffer, dst, width * height).slice();
    });
  }

  /** smooth (segment.js): a new Float32Array. */
  smooth(mask, previous, ratio) {
    const n = mask.length, usePrev = previous && ratio > 0 && previous.length === n;
    return this._with([n * 4, usePrev ? n * 4 : 0], ([m, p]) => {
      const mem = this.ex.memory.buffer;
      new Float32Array(mem, m, n).set(mask);
      if (usePrev) new Float32Array(mem, p, n).set(previous);
      this._check(this.rt._call(() => this.ex.wrt_img_smooth(m, usePrev ? p : 0, m, n, ratio, ...SMOOTHING_POLY)));
      return new Float32Array(this.ex.memory.buffer, m, n).slice();
    });
  }

  /** A buffer that stays in engine memory from call to call (a segmenter's previous mask, its frame): size(bytes)
   * makes it that large (a new one loses its content: valid false); free() gives its memory back. */
  kept() {
    const rt = this.rt, ex = this.ex;
    return {
      ptr: 0, bytes: 0, valid: false,
      size(bytes) {
        if (this.bytes === bytes) return;
        this.free();
        const p = u32(rt._call(() => ex.wrt_alloc(bytes)));
        if (!p) throw new OutOfMemoryError(`cannot allocate ${bytes} bytes for a segmenter's buffer`);
        Object.assign(this, { ptr: p, bytes });
      },
      free() {
        if (this.ptr) ex.wrt_free(this.ptr);
        Object.assign(this, { ptr: 0, bytes: 0, valid: false });
      },
    };
  }

  /** Copies the pixels' bytes ({data, width, height, channels}) into kept buffer k, for crop() and maskComposite(). */
  place(k, pixels) {
    const bytes = pixels.width * pixels.height * pixels.channels;
    k.size(bytes);
    k.valid = this._put(k.ptr, pixels.data, bytes) === bytes;
  }

  /** resizeMask then smooth (a segmenter's frame) in one visit to wasm memory: Float32Array(width*height), or `out`.
   * previous: the previous mask (a Float32Array, or a kept(), which then receives this frame's mask); `out` may
   * be `previous` (that is read first). */
  maskFrame(small, w, h, width, height, previous, ratio, out = undefined) {
    const n = width * height, nIn = w * h * 4, kept = previous && !(previous instanceof Float32Array) ? previous : null;
    kept?.size(n * 4);
    const usePrev = kept ? kept.valid && ratio > 0 : previous && ratio > 0 && previous.length === n;
    return this._with([nIn, kept ? 0 : n * 4, usePrev && !kept ? n * 4 : 0], ([src, dst, p]) => {
      const have = this._putF32(src, small, w * h);
      if (usePrev && !kept) this._putF32(p, previous, n);
      const into = kept ? kept.ptr : dst; // the engine reads each previous value before it writes that value
      if (kept) kept.valid = false; // until the call has written it
      this._check(this.rt._call(() => this.ex.wrt_img_mask_frame(src, have, w, h, usePrev ? (kept ? kept.ptr : p) : 0,
        into, n * 4, width, height, ratio, ...SMOOTHING_POLY)));
      if (kept) kept.valid = true;
      const view = new Float32Array(this.ex.memory.buffer, into, n);
      if (!out) return view.slice();
      out.set(view);
      return out;
    });
  }

  /**
   * maskFrame into `kept` (the previous mask, then this frame's), and in the same pass the frame (fg's pixels,
   * place()d in `frame`) composited by it over bg: an [r, g, b] colour, an image of the frame's size, or
   * {blur: radius} (the frame box-blurred here). A new image as composite's, or `out` as its data; maskOut: a
   * Float32Array of the frame's size that receives the mask (else it never leaves the engine).
   */
  maskComposite(small, w, h, kept, ratio, frame, fg, bg, out = null, maskOut = null) {
    const W = fg.width, H = fg.height, n = W * H, fb = n * fg.channels, ex = this.ex;
    const colour = Array.isArray(bg), blur = !colour && "blur" in bg;
    const bc = colour ? 0 : blur ? 3 : bg.channels, bb = colour ? 3 : n * bc;
    const scratch = blur ? u32(ex.wrt_img_box_blur_scratch(W, H)) : 0;
    kept.size(n * 4);
    const usePrev = kept.valid && ratio > 0;
    return this._with([w * h * 4, bb, fb, scratch], ([src, b, o, s]) => {
      const have = this._putF32(src, small, w * h);
      if (blur) {
        this._check(this.rt._call(() => ex.wrt_img_box_blur(frame.ptr, frame.bytes, fg.channels, W, H, bg.blur,
          BLUR_PASSES, b, bb, s, scratch)));
      } else {
        this._put(b, colour ? colourBytes(bg) : bg.data, bb);
      }
      kept.valid = false; // until the call has written it
      this._check(this.rt._call(() => ex.wrt_img_mask_composite(src, have, w, h, usePrev ? kept.ptr : 0, kept.ptr,
        n * 4, W, H, ratio, ...SMOOTHING_POLY, frame.ptr, frame.bytes, fg.channels, b, bb, bc, o, fb)));
      kept.valid = true;
      if (maskOut) maskOut.set(new Float32Array(ex.memory.buffer, kept.ptr, n));
      const data = out ?? new fg.data.constructor(fb);
      asBytes(data).set(this._bytes(o, fb));
      return { data, width: W, height: H, channels: fg.channels };
    });
  }

  /**
   * composite (segment.js) on {data, width, height, channels} images: a new image with the frame's byte type.
   * bg: an image, or [r, g, b] (3 bytes: the engine blends with the colour, no background image). out: the bytes
   * to write the result into (checked by the caller), else a new array.
   */
  composite(fg, m, bg, out = null) {
    const W = fg.width, H = fg.height, n = W * H, fb = n * fg.channels, colour = Array.isArray(bg);
    const bc = colour ? 0 : bg.channels, bb = colour ? 3 : n * bc;
    return this._with([fb, n * 4, bb, fb], ([f, mk, b, o]) => {
      const hf = this._put(f, fg.data, fb), hm = this._putF32(mk, m, n);
      const hb = this._put(b, colour ? colourBytes(bg) : bg.data, bb);
      this._check(this.rt._call(() => this.ex.wrt_img_composite(f, hf, fg.channels, mk, hm, b, hb, bc, W, H, o, fb)));
      const data = out ?? new fg.data.constructor(fb);
      asBytes(data).set(this._bytes(o, fb));
      return { data, width: W, height: H, channels: fg.channels };
    });
  }

  /** boxBlur (segment.js): {data: Uint8Array RGB, width, height, channels: 3}. */
  boxBlur(frame, radius, passes) {
    const { data, width: W, height: H, channels: C } = frame, n = W * H, bytes = n * C;
    const scratch = u32(this.ex.wrt_img_box_blur_scratch(W, H));
    return this._with([bytes, n * 3, scratch], ([f, o, s]) => {
      const have = this._put(f, data, bytes);
      this._check(this.rt._call(() => this.ex.wrt_img_box_blur(f, have, C, W, H, radius, passes, o, n * 3, s,
        scratch)));
      return { data: this._bytes(o, n * 3).slice(), width: W, height: H, channels: 3 };
    });
  }
}
