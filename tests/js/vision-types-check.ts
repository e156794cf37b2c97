import * as wasmrt from "wasmrt";
import { defaultModelBase, FaceMesh, paintLips } from "wasmrt/vision";
async function main() {
  const rt = await wasmrt.init();
  const face = await FaceMesh.create(rt, { modelBase: defaultModelBase() });
  const img = { data: new Uint8ClampedArray(4), width: 1, height: 1 };
  const { faces, ms } = await face.detect(img);
  const c = document.createElement("canvas").getContext("2d")!;
  paintLips(c, faces[0], { color: "#c2185b", intensity: 0.6 });
  const lm: Float32Array = faces[0].landmarks;
  console.log(ms.total, lm.length);
}
main();

import { initMiniProgram } from "wasmrt/hosts/miniprogram";
import * as vision from "wasmrt/vision";
async function mini() {
  const rt = await initMiniProgram({ platform: "wechat", wasmDir: "/wasm", brotli: true });
  const mesh = new vision.FaceMesh(rt.loadBytes(new ArrayBuffer(8)), rt.loadBytes(new ArrayBuffer(8)), { tracking: true });
  const pixels = { data: new Uint8Array(16), width: 2, height: 2 };
  const { faces } = await mesh.detect(pixels);
  vision.recolorLips(pixels, faces[0], { color: [194, 24, 91], intensity: 0.5 });
}
mini();

import { blurBackground, drawSegmented, HAND_CONNECTIONS, HandTracker, replaceBackground, SelfieSegmenter } from "wasmrt/vision";
async function handsAndSegmentation() {
  const rt = await wasmrt.init();
  const frame = { data: new Uint8ClampedArray(16), width: 2, height: 2 };
  const seg = await SelfieSegmenter.create(rt);
  const { mask, model } = await seg.segment(frame);
  const m: "general" | "landscape" = model;
  const out = replaceBackground(frame, mask, [0, 177, 64]);
  const soft = blurBackground(frame, mask, { radius: 8 });
  const reused = new Uint8ClampedArray(frame.data.length); // one output buffer, frame after frame
  await seg.segment(frame, { out: new Float32Array(4) });
  replaceBackground(frame, mask, "#00b140", { out: reused });
  blurBackground(frame, mask, { radius: 4, out: reused });
  const fused = await seg.replaceBackground(frame, "#00b140", { out: reused, mask: true });
  const image: Uint8Array | Uint8ClampedArray = fused.image.data;
  const kept: Float32Array | undefined = fused.mask?.data;
  await seg.blurBackground(frame, { radius: 4, mask: new Float32Array(4) });
  drawSegmented(document.createElement("canvas").getContext("2d")!, frame, mask, { background: "#00b140" });
  const tracker = await HandTracker.create(rt, { maxHands: 2 });
  const { hands, ranDetector } = await tracker.detect(frame);
  for (const h of hands) {
    const g: string | null = h.gesture;
    const side: "Left" | "Right" = h.handedness;
    const x: number = h.landmarks[3 * HAND_CONNECTIONS[0][1]];
    console.log(g, side, x, h.worldLandmarks.length, h.score, ranDetector);
  }
  console.log(m, out.channels, soft.data.length);
}
handsAndSegmentation();
