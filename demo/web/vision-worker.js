// The Worker of the segmentation and hands pages: the same pipeline as on the page (vision-run.js), off the page's
// thread. Messages {id, op, args} -> {id, ok, result | error}; a frame's RGBA buffer is transferred both ways.
import { createPipeline } from "./vision-run.js";

let pipeline = null;

const ops = {
  async init({ kind, options }) {
    pipeline = await createPipeline(kind, options);
    return pipeline.info;
  },
  async frame({ buffer, width, height }) {
    const r = await pipeline.frame({ data: new Uint8ClampedArray(buffer), width, height });
    if (!r.pixels) return [{ ...r, buffer }, [buffer]];
    const out = r.pixels.data.buffer;
    return [{ ...r, pixels: { buffer: out, width: r.pixels.width, height: r.pixels.height } }, [out]];
  },
  configure(settings) { pipeline.configure(settings); },
  reset() { pipeline.reset(); },
};

self.onmessage = async ({ data: { id, op, args } }) => {
  try {
    if (op !== "init" && !pipeline) throw new Error(`${op}: the models are not loaded (init has not succeeded)`);
    let result = await ops[op](args ?? {}), transfer = [];
    if (op === "frame") [result, transfer] = result;
    self.postMessage({ id, ok: true, result }, transfer);
  } catch (e) {
    self.postMessage({ id, ok: false, error: `${e?.name ?? "Error"}: ${e?.message ?? e}` });
  }
};
