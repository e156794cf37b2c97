// The try-on Worker of the mini-programs (copied into workers/facemesh/ by build.mjs): the wasm engine and the
// face pipeline run here. Messages (copied, never shared):
//   page -> worker {type: "init", wasmDir, brotli, detector: ArrayBuffer, landmark: ArrayBuffer,
//                   wasmBytes?: {path: ArrayBuffer} (Alipay: for builds whose instantiate only takes bytes)}
//                  {type: "frame", id, width, height, data: ArrayBuffer (RGBA)}
//                  {type: "landmarks", refine, landmark: ArrayBuffer} (another landmark model: with refine, the
//                   attention mesh: 478 points with refined lips and irises)
//   worker -> page {type: "ready", variant, reason} | {type: "result", id, faces, ranDetector, ms}
//                  | {type: "landmarks", refine, points} | {type: "error", message}
import { initMiniProgram } from "./lib/hosts/miniprogram.js";
import { FaceMesh } from "./lib/vision/facemesh.js";

// Faces as plain arrays and objects: the message format every mini-program host copies faithfully.
const plainFace = (f) => ({
  box: f.box, keypoints: f.keypoints, score: f.score, landmarks: Array.from(f.landmarks), roi: f.roi,
  detection: f.detection && { box: f.detection.box, keypoints: Array.from(f.detection.keypoints), score: f.detection.score },
});

export function startWorker(port, platform) {
  let rt = null, mesh = null, inFlight = Promise.resolve(); // inFlight: the frame being detected, if any
  const handlers = {
    async init({ wasmDir, brotli, detector, landmark, wasmBytes }) {
      rt = await initMiniProgram({ platform, wasmDir, brotli, wasmBytes });
      mesh = new FaceMesh(rt.loadBytes(detector, { name: "face_detector" }), rt.loadBytes(landmark, { name: "face_landmark" }));
      return { type: "ready", variant: rt.variant, reason: rt.reason };
    },
    async landmarks({ refine, landmark }) {
      const name = refine ? "face_landmark_attention" : "face_landmark";
      let model;
      try {
        model = rt.loadBytes(landmark, { name });
      } catch (e) {
        e.message = `${name}.wrt: ${e.message}`; // the face mesh in use stays
        throw e;
      }
      const old = mesh;
      mesh = new FaceMesh(old.detector, model, { refine: !!refine });
      await inFlight; // a frame still running on the old landmark model finishes first
      await old.landmarker.release();
      return { type: "landmarks", refine: !!refine, points: refine ? 478 : 468 };
    },
    async frame({ id, width, height, data }) {
      const detecting = mesh.detect({ data: new Uint8Array(data), width, height });
      inFlight = detecting.catch(() => {});
      const r = await detecting;
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
