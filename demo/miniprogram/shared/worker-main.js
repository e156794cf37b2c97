// The Worker of the mini-programs (copied into workers/facemesh/ by build.mjs): the wasm engine and the pipelines
// of the pages run here (one Worker at a time: each page starts its own with the models it needs). Messages
// (copied, never shared):
//   page -> worker {type: "init", wasmDir, brotli, wasmBytes?: {path: ArrayBuffer} (Alipay: for builds whose
//                   instantiate only takes bytes), and the models as ArrayBuffers: detector + landmark (the face
//                   mesh), palm + hand (hand tracking and gestures), selfie (background replacement)}
//                  {type: "frame", id, width, height, data: ArrayBuffer (RGBA)}: faces and / or hands
//                  {type: "segment", id, width, height, data, background: {mode: "color" | "blur", color, radius}}
//                  {type: "landmarks", refine, landmark: ArrayBuffer} (another landmark model: with refine, the
//                   attention mesh: 478 points with refined lips and irises)
//                  {type: "teach", id, op, args}: the teach page (teach-core.js, with the feature model given to init
//                   as features: ArrayBuffer): op "add" {width, height, data} -> sample id, "remove" {id}, "train"
//                   {classes, samples: [{id, label}]}, "classify" {width, height, data}, "export" -> ArrayBuffer,
//                   "use" {bytes}
//   worker -> page {type: "ready", variant, reason} | {type: "result", id, faces, hands, ranDetector, ms}
//                  | {type: "segmented", id, width, height, data: ArrayBuffer (RGBA), model, personShare, ms}
//                  | {type: "landmarks", refine, points} | {type: "error", message}
//                  | {type: "teach", id, ok, result | error}, before a train's {type: "teachProgress", id, progress}
import { initMiniProgram } from "./lib/hosts/miniprogram.js";
import { toTensor } from "./lib/src/image.js";
import { FaceMesh } from "./lib/vision/facemesh.js";
import { HandTracker } from "./lib/vision/hands.js";
import { SelfieSegmenter } from "./lib/vision/segment.js";
import { Teacher } from "./teach-core.js";

// Faces as plain arrays and objects: the message format every mini-program host copies faithfully.
const plainFace = (f) => ({
  box: f.box, keypoints: f.keypoints, score: f.score, landmarks: Array.from(f.landmarks), roi: f.roi,
  detection: f.detection && { box: f.detection.box, keypoints: Array.from(f.detection.keypoints), score: f.detection.score },
});

const plainHand = (h) => ({
  landmarks: Array.from(h.landmarks), handedness: h.handedness, handednessScore: h.handednessScore, score: h.score,
  gesture: h.gesture, tracked: h.tracked,
});

export function startWorker(port, platform) {
  let rt = null, mesh = null, hands = null, segmenter = null, inFlight = Promise.resolve(); // inFlight: the frame being detected
  let teacher = null;
  const pixels = ({ width, height, data }) => ({ data: new Uint8Array(data), width, height });
  const teach = {
    add: (a) => teacher.add(pixels(a)),
    remove: ({ id }) => teacher.remove(id),
    train: ({ classes, samples }, progress) => teacher.train(classes, samples, progress),
    classify: (a) => teacher.classify(pixels(a)),
    export: () => teacher.export().buffer,
    use: ({ bytes }) => teacher.use(bytes),
  };
  const handlers = {
    async init({ wasmDir, brotli, detector, landmark, palm, hand, selfie, features, wasmBytes }) {
      rt = await initMiniProgram({ platform, wasmDir, brotli, wasmBytes });
      if (features) teacher = await Teacher.create(rt, features, toTensor);
      if (detector && landmark) {
        mesh = new FaceMesh(rt.loadBytes(detector, { name: "face_detector" }), rt.loadBytes(landmark, { name: "face_landmark" }));
      }
      if (palm && hand) {
        hands = new HandTracker(rt.loadBytes(palm, { name: "palm_detection_lite" }),
          rt.loadBytes(hand, { name: "hand_landmark_lite" }), { maxHands: 1 });
      }
      // the general model only: camera frames are portrait or 4:3 (the landscape model is for wider frames)
      if (selfie) segmenter = new SelfieSegmenter({ general: rt.loadBytes(selfie, { name: "selfie_segmentation" }) }, { model: "general" });
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
      const pixels = { data: new Uint8Array(data), width, height };
      const detecting = mesh ? mesh.detect(pixels) : Promise.resolve({ faces: [], ranDetector: false, ms: {} });
      inFlight = detecting.catch(() => {});
      const r = await detecting;
      const h = hands ? await hands.detect(pixels) : null;
      const ms = { ...r.ms, ...(h ? { palm: h.ms.detector ?? 0, handWarp: h.ms.warp ?? 0, hand: h.ms.landmarks ?? 0 } : {}) };
      return { type: "result", id, faces: r.faces.map(plainFace), hands: h ? h.hands.map(plainHand) : [],
        ranDetector: r.ranDetector, ms };
    },
    async segment({ id, width, height, data, background = {} }) {
      const frame = { data: new Uint8Array(data), width, height };
      // the mask made and the frame composited in one call; the mask handed back for the person's share
      const { image: out, mask, model, ms } = background.mode === "blur"
        ? await segmenter.blurBackground(frame, { radius: background.radius ?? 8, mask: true })
        : await segmenter.replaceBackground(frame, background.color ?? "#00b140", { mask: true });
      let person = 0;
      for (const v of mask.data) person += v >= 0.5;
      const bytes = new Uint8Array(out.data.buffer, out.data.byteOffset, out.data.length).slice().buffer;
      return { type: "segmented", id, width, height, data: bytes, model, personShare: person / mask.data.length, ms };
    },
    async teach({ id, op, args }) { // errors answer the request (the page shows them), not the whole page
      try {
        if (!teacher || !(op in teach)) throw new Error(`teach ${op}: ${teacher ? "no such step" : "no feature model (init)"}`);
        const result = await teach[op](args ?? {}, (progress) => port.postMessage({ type: "teachProgress", id, progress }));
        return { type: "teach", id, ok: true, result };
      } catch (e) {
        return { type: "teach", id, ok: false, error: `${e?.name ?? "Error"}: ${e?.message ?? e}` };
      }
    },
    reset() { mesh?.reset(); hands?.reset(); segmenter?.reset(); return { type: "reset" }; },
  };
  port.onMessage(async (msg) => {
    try {
      port.postMessage(await handlers[msg.type](msg));
    } catch (e) {
      port.postMessage({ type: "error", id: msg.id, message: `${e?.name ?? "Error"}: ${e?.message ?? e}` });
    }
  });
}
