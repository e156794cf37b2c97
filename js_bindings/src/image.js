// Image -> input tensor following the model's Preprocess hints: a line-by-line port of wasmrt/preprocess.py
// (read its docstring for the recipe). All arithmetic is float64 with one rounding to float32 at the end, in the
// same order as numpy, so the result is bit-identical to the Python reference for the same RGB pixels.

import { InputError } from "./errors.js";
import { Tensor } from "./tensor.js";

const R = (x) => Math.floor(x + 0.5); // round half up, as the reference's _round_half_up

/** Geometry of step 1: which source box lands in which box of the tensor (all in pixels). */
export function plan(imageH, imageW, pre, outH, outW) {
  const [h, w, oh, ow] = [imageH, imageW, outH, outW];
  const resize = pre.resize || "stretch";
  const geom = (srcTop, srcLeft, srcH, srcW, dstTop, dstLeft, dstH, dstW) =>
    ({ srcTop, srcLeft, srcH, srcW, dstTop, dstLeft, dstH, dstW, outH: oh, outW: ow });
  if (resize === "stretch") return geom(0, 0, h, w, 0, 0, oh, ow);
  if (resize === "crop") {
    const f = pre.cropFraction ?? 1;
    if (!(f > 0 && f <= 1)) throw new InputError(`crop_fraction must be in (0, 1], got ${f}`);
    let baseH, baseW;
    if (w * oh >= h * ow) [baseH, baseW] = [h, (h * ow) / oh];
    else [baseH, baseW] = [(w * oh) / ow, w];
    const ch = Math.min(Math.max(R(baseH * f), 1), h);
    const cw = Math.min(Math.max(R(baseW * f), 1), w);
    return geom(Math.floor((h - ch) / 2), Math.floor((w - cw) / 2), ch, cw, 0, 0, oh, ow);
  }
  if (resize === "letterbox") {
    const s = Math.min(ow / w, oh / h);
    const ch = Math.min(Math.max(R(h * s), 1), oh);
    const cw = Math.min(Math.max(R(w * s), 1), ow);
    return geom(0, 0, h, w, Math.floor((oh - ch) / 2), Math.floor((ow - cw) / 2), ch, cw);
  }
  throw new InputError(`unknown resize mode ${JSON.stringify(resize)}; expected stretch, crop or letterbox`);
}

/** Map a tensor pixel coordinate (0 = left/top edge) back to image pixels. */
export function toSource(g, x, y) {
  return [g.srcLeft + ((x - g.dstLeft) * g.srcW) / g.dstW, g.srcTop + ((y - g.dstTop) * g.srcH) / g.dstH];
}

function axisWeights(nIn, nOut) {
  const i0 = new Int32Array(nOut), i1 = new Int32Array(nOut), f = new Float64Array(nOut);
  const scale = nIn / nOut;
  for (let i = 0; i < nOut; i++) {
    const src = Math.min(Math.max((i + 0.5) * scale - 0.5, 0), nIn - 1);
    i0[i] = Math.floor(src);
    i1[i] = Math.min(i0[i] + 1, nIn - 1);
    f[i] = src - i0[i];
  }
  return { i0, i1, f };
}

/**
 * The pure part: pixels {data, width, height, channels?} (RGBA like ImageData, or RGB) -> float32 Tensor of
 * `shape` (batch 1). `pre`: {layout, color, mean, std, resize, cropFraction}. The tensor carries its geometry.
 */
export function pixelsToTensor(pixels, pre, shape) {
  const { data, width: W, height: H } = pixels;
  const C = pixels.channels ?? (data.length === W * H * 3 ? 3 : 4);
  if (!(C === 3 || C === 4) || data.length < W * H * C || !(W > 0 && H > 0)) {
    throw new InputError(`expected ${W}x${H} RGBA or RGB pixels, got ${data.length} values`);
  }
  if (shape.length !== 4 || shape[0] !== 1) throw new InputError(`expected a [1, ...] 4-D image input, got [${shape}]`);
  const nchw = pre.layout === "NCHW";
  if (!nchw && pre.layout !== "NHWC") throw new InputError(`unknown layout ${JSON.stringify(pre.layout)}`);
  const [oh, ow, channels] = nchw ? [shape[2], shape[3], shape[1]] : [shape[1], shape[2], shape[3]];
  if (channels !== 3 || pre.mean?.length !== 3 || pre.std?.length !== 3) {
    throw new InputError(`expected 3 channels and 3 mean/std values, got [${shape}], ${pre.mean}, ${pre.std}`);
  }
  const color = pre.color || "RGB";
  if (color !== "RGB" && color !== "BGR") throw new InputError(`unknown colour order ${JSON.stringify(color)}`);
  const g = plan(H, W, pre, oh, ow);

  const wx = axisWeights(g.srcW, g.dstW), wy = axisWeights(g.srcH, g.dstH);
  const rows = new Map(); // source row -> horizontally resized row (dstW x 3), computed on demand
  const row = (y) => {
    let r = rows.get(y);
    if (r) return r;
    r = new Float64Array(g.dstW * 3);
    const base = (g.srcTop + y) * W + g.srcLeft;
    for (let j = 0; j < g.dstW; j++) {
      const pa = (base + wx.i0[j]) * C, pb = (base + wx.i1[j]) * C, fx = wx.f[j];
      for (let c = 0; c < 3; c++) {
        const a = data[pa + c], b = data[pb + c];
        r[j * 3 + c] = a + (b - a) * fx;
      }
    }
    rows.set(y, r);
    return r;
  };

  const out = new Float32Array(oh * ow * 3);
  const src = color === "BGR" ? [2, 1, 0] : [0, 1, 2]; // model channel k reads canvas channel src[k]
  const put = nchw ? (y, x, k, v) => { out[(k * oh + y) * ow + x] = v; } : (y, x, k, v) => { out[(y * ow + x) * 3 + k] = v; };
  for (let y = 0; y < oh; y++) {
    const iy = y - g.dstTop;
    const inside = iy >= 0 && iy < g.dstH;
    const top = inside ? row(wy.i0[iy]) : null, bottom = inside ? row(wy.i1[iy]) : null, fy = inside ? wy.f[iy] : 0;
    if (inside) for (const y0 of rows.keys()) { if (y0 < wy.i0[iy]) rows.delete(y0); else break; } // rows move forward
    for (let x = 0; x < ow; x++) {
      const ix = x - g.dstLeft;
      const content = inside && ix >= 0 && ix < g.dstW;
      for (let k = 0; k < 3; k++) {
        let v = 0; // letterbox border: a black pixel before normalization
        if (content) {
          const c = src[k], t = top[ix * 3 + c];
          v = t + (bottom[ix * 3 + c] - t) * fy;
        }
        put(y, x, k, (v - pre.mean[k]) / pre.std[k]);
      }
    }
  }
  const t = new Tensor("float32", out, shape.slice());
  t.geometry = { ...g, imageWidth: W, imageHeight: H };
  return t;
}

// -- pixel sources -------------------------------------------------------------------------------------------

function canvas2d(w, h) {
  const c = typeof OffscreenCanvas !== "undefined" ? new OffscreenCanvas(w, h) : Object.assign(document.createElement("canvas"), { width: w, height: h });
  return c.getContext("2d", { willReadFrequently: true });
}

function sizeOfSource(s) {
  const w = s.naturalWidth || s.videoWidth || s.displayWidth || s.codedWidth || s.width;
  const h = s.naturalHeight || s.videoHeight || s.displayHeight || s.codedHeight || s.height;
  return [w, h];
}

/**
 * RGBA pixels of an image source: ImageData or {data, width, height}, a canvas (2d), an ImageBitmap, <img>, <video>,
 * VideoFrame, or a Blob/File (decoded without colour management, so PNG pixels are exactly the file's).
 */
export async function getPixels(source) {
  if (source && ArrayBuffer.isView(source.data) && source.width > 0 && source.height > 0) return source;
  if (typeof Blob !== "undefined" && source instanceof Blob) {
    if (typeof createImageBitmap !== "function") throw new InputError("decoding an image Blob needs createImageBitmap");
    const bmp = await createImageBitmap(source, { colorSpaceConversion: "none", premultiplyAlpha: "none" });
    try { return getPixels(bmp); } finally { bmp.close?.(); }
  }
  const ctx2d = source?.getContext?.("2d", { willReadFrequently: true });
  if (ctx2d) return ctx2d.getImageData(0, 0, source.width, source.height);
  const [w, h] = source ? sizeOfSource(source) : [0, 0];
  if (!(w > 0 && h > 0)) {
    throw new InputError("image.toTensor needs ImageData, a canvas, an ImageBitmap, an <img>/<video> with content, a Blob, " +
      `or {data, width, height}; got ${source?.constructor?.name ?? source}`);
  }
  const ctx = canvas2d(w, h);
  ctx.drawImage(source, 0, 0, w, h);
  return ctx.getImageData(0, 0, w, h);
}

/**
 * image -> wasmrt.Tensor for one of model's inputs, using the preprocessing hints stored in the model.
 * options.input: input name or index (default 0); options.preprocess: hints overriding the model's.
 * The result has .geometry (where the image landed) to map outputs back to image pixels.
 */
export async function toTensor(source, model, options = {}) {
  const k = typeof options.input === "string" ? model.inputs.findIndex((t) => t.name === options.input) : (options.input ?? 0);
  const spec = model.inputs[k];
  if (!spec) throw new InputError(`the model has no input ${JSON.stringify(options.input)}`);
  const pre = options.preprocess ?? model.metadata?.preprocess?.[k];
  if (!pre) {
    throw new InputError(`the model has no preprocessing hints for input '${spec.name}'; pass options.preprocess ` +
      "({layout, color, mean, std, resize, cropFraction})");
  }
  if (spec.dtype !== "float32") throw new InputError(`input '${spec.name}' is ${spec.dtype}; images make float32 tensors`);
  return pixelsToTensor(await getPixels(source), pre, [...spec.shape]);
}
