// The try-on Worker of the mini-programs (copied into workers/facemesh/ by build.mjs): the wasm engine and the
// face pipeline run here. Messages (copied, never shared):
//   page -> worker {type: "init", wasmDir, brotli, detector: ArrayBuffer, landmark: ArrayBuffer,
//                   wasmBytes?: {path: ArrayBuffer} (Alipay: for builds whose instantiate only takes bytes)}
//                  {type: "frame", id, width, height, data: ArrayBuffer (RGBA)}
//   worker -> page {type: "ready", variant, reason} | {type: "result", id, faces, ranDetector, ms} | {type: "error", message}
import { initMiniProgram } from "./lib/hosts/miniprogram.js";
import { FaceMesh } from "./lib/vision/facemesh.js";

// Faces as plain arrays and objects: the message format every mini-program host copies faithfully.
const plainFace = (f) => ({
  box: f.box, keypoints: f.keypoints, score: f.score, landmarks: Array.from(f.landmarks), roi: f.roi,
  detection: f.detection && { box: f.detection.box, keypoints: Array.from(f.detection.keypoints), score: f.detection.score },
});

export function startWorker(port, platform) {
  let mesh = null;
  const handlers = {
    async init({ wasmDir, brotli, detector, landmark, wasmBytes }) {
      const rt = await initMiniProgram({ platform, wasmDir, brotli, wasmBytes });
      mesh = new FaceMesh(rt.loadBytes(detector, { name: "face_detector" }), rt.loadBytes(landmark, { name: "face_landmark" }));
      return { type: "ready", variant: rt.variant, reason: rt.reason };
    },
    async frame({ id, width, height, data }) {
      const r = await mesh.detect({ data: new Uint8Array(data), width, height });
      return { type: "result", id, faces: r.faces.map(plainFace), ranDetector: r.ranDetector, ms: r.ms };
    },
    reset() { mesh?.reset(); return { type: "reset" }; },
  };
  port.onMessage(async (msg) => {
    try {
      port.postMessage(await handlers[msg.type](msg));
    } catch (e) {
      port.postMessage({ type: "error", id: msg.id, message: `${e?.name ?? "Error"}: ${e?.message ?? e}` });
    }
  });
}
