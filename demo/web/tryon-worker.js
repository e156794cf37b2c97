// The try-on's Worker: the wasm engine and the whole face pipeline (FaceMesh) run here, off the page's thread.
// Messages {id, op, args} -> {id, ok, result | error}; frames arrive as transferred RGBA buffers and go back with
// the result, so the page can reuse them.
import { init } from "../../js_bindings/src/index.js";
import { FaceMesh } from "../../js_bindings/vision/index.js";

let rt = null, mesh = null;

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
    refine = false, int8 = false }) {
    rt = await init({ variant, ...(await builtFor(int8 ? (refine ? "face-int8-refine" : "face-int8") : "face")) });
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
    return { variant: rt.variant, reason: rt.reason, int8, builtFor: rt.builtFor };
  },
  async frame({ buffer, width, height }) {
    const r = await mesh.detect({ data: new Uint8ClampedArray(buffer), width, height });
    return [{ faces: r.faces, ranDetector: r.ranDetector, ms: r.ms, buffer }, [buffer]];
  },
  tracking({ on }) {
    mesh.tracking = !!on;
    mesh.reset();
  },
  reset() { mesh.reset(); },
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
