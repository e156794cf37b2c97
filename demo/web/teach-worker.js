// The teach page's Worker: the engine, EfficientNet-Lite0 and the training run here, off the page's thread
// (teach-core.js). Messages {id, op, args} -> {id, progress} while training, then {id, ok, result | error}; photos
// and frames arrive as transferred RGBA buffers.
import { toTensor } from "../../js_bindings/src/image.js";
import { init } from "../../js_bindings/src/index.js";
import { Teacher } from "./teach-core.js";

let teacher = null;
const pixels = ({ buffer, width, height }) => ({ data: new Uint8ClampedArray(buffer), width, height });

const ops = {
  async init({ variant = "auto", model = new URL("../../models/efficientnet_lite0.wrt", import.meta.url).href }) {
    const rt = await init({ variant });
    teacher = await Teacher.create(rt, model, toTensor);
    return { variant: rt.variant, reason: rt.reason };
  },
  add: async (img) => teacher.add(pixels(img)),
  remove: ({ id }) => teacher.remove(id),
  train: ({ classes, samples }, progress) => teacher.train(classes, samples, progress),
  classify: (img) => teacher.classify(pixels(img)),
  export: () => { const b = teacher.export(); return [b.buffer, [b.buffer]]; },
  use: ({ bytes }) => teacher.use(bytes),
};

self.onmessage = async ({ data: { id, op, args } }) => {
  try {
    if (op !== "init" && !teacher) throw new Error(`${op}: the model is not loaded (init has not succeeded)`);
    let result = await ops[op](args ?? {}, (progress) => self.postMessage({ id, progress })), transfer = [];
    if (op === "export") [result, transfer] = result;
    self.postMessage({ id, ok: true, result }, transfer);
  } catch (e) {
    self.postMessage({ id, ok: false, error: `${e?.name ?? "Error"}: ${e?.message ?? e}` });
  }
};
