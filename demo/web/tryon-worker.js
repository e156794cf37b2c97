// The try-on's Worker: the wasm engine and the whole face pipeline (FaceMesh) run here, off the page's thread.
// Messages {id, op, args} -> {id, ok, result | error}; frames arrive as transferred RGBA buffers and go back with
// the result, so the page can reuse them.
import { init } from "../../js_bindings/src/index.js";
import { FaceMesh, HandTracker } from "../../js_bindings/vision/index.js";

let rt = null, mesh = null, hands = null; // hands: with gestures, a hand tracked beside the face

// The modules built for the face models (wasmrt build --for, which the demo server runs: about half the full
// modules' bytes), or the full ones where the server has none
async function builtFor(set) {
  const folder = new URL(`../../face-wasm/${set}/`, import.meta.url);
  try {
    const r = await fetch(new URL("wasmrt-modules.json", folder));
    return r.ok ? { wasmPaths: folder.href, modules: await r.json() } : {};
  } catch {
    return {};
  }
}

const ops = {
  async init({ variant = "auto", modelBase = new URL("../../models/", import.meta.url).href, tracking = true,
    refine = false, int8 = false, gestures = false }) {
    // the modules built for the face models lack ops of the hand models: the full modules with gestures
    const modules = gestures ? {} : await builtFor(int8 ? (refine ? "face-int8-refine" : "face-int8") : "face");
    rt = await init({ variant, ...modules });
    // refine: the attention mesh, 478 points (float: it has no int8 version); int8: the models `wasmrt quantize`
    // made of face_detector and face_landmark (wasmrt/zoo/face_int8.py)
    const models = int8 ? {
      detectorModel: new URL("face_detector_int8.wrt", modelBase).href,
      landmarkModel: refine ? undefined : new URL("face_landmark_int8.wrt", modelBase).href,
    } : {};
    try {
      mesh = await FaceMesh.create(rt, { modelBase, tracking, refine, ...models });
    } catch (e) {
      if (int8) e.message += " (the int8 face models are made by `wasmrt demo --int8` or `python -m wasmrt.zoo.face_int8`)";
      throw e;
    }
    hands = gestures ? await HandTracker.create(rt, { maxHands: 1 }) : null; // the package's lite hand models
    return { variant: rt.variant, reason: rt.reason, int8, gestures, builtFor: rt.builtFor };
  },
  async frame({ buffer, width, height }) {
    const pixels = { data: new Uint8ClampedArray(buffer), width, height };
    const r = await mesh.detect(pixels);
    const h = hands ? await hands.detect(pixels) : null;
    const ms = { ...r.ms, ...(h ? { hands: h.ms.total } : {}) };
    const found = h ? h.hands.map((x) => ({ gesture: x.gesture, handedness: x.handedness })) : [];
    return [{ faces: r.faces, hands: found, ranDetector: r.ranDetector, ms, buffer }, [buffer]];
  },
  tracking({ on }) {
    mesh.tracking = !!on;
    mesh.reset();
  },
  reset() { mesh.reset(); hands?.reset(); },
};

self.onmessage = async ({ data: { id, op, args } }) => {
  try {
    if (op !== "init" && !mesh) throw new Error(`${op}: the face models are not loaded (init has not succeeded)`);
    let result = await ops[op](args ?? {}), transfer = [];
    if (op === "frame") [result, transfer] = result;
    self.postMessage({ id, ok: true, result }, transfer);
  } catch (e) {
    self.postMessage({ id, ok: false, error: `${e?.name ?? "Error"}: ${e?.message ?? e}` });
  }
};
