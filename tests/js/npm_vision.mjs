// HandTracker and SelfieSegmenter from an npm project that installed the packed tarball, with no model options:
// the models come from the package's own models/ folder. Run by tests/test_npm_package.py:
//   node npm_vision.mjs hand.rgba:W:H person.rgba:W:H   (cwd: the project; prints one JSON line)
import { readFileSync } from "node:fs";
import * as wasmrt from "wasmrt";
import { HandTracker, SelfieSegmenter } from "wasmrt/vision";

const pixels = (spec) => {
  const [file, w, h] = spec.split(":");
  const b = readFileSync(file);
  return { data: new Uint8ClampedArray(b.buffer, b.byteOffset, b.length), width: +w, height: +h };
};
const hand = pixels(process.argv[2]), person = pixels(process.argv[3]);
const rt = await wasmrt.init();
const tracker = await HandTracker.create(rt, { maxHands: 1 });
const { hands } = await tracker.detect(hand);
const seg = await SelfieSegmenter.create(rt);
const { mask, model } = await seg.segment(person);
let inside = 0;
for (const v of mask.data) inside += v >= 0.5;
console.log(JSON.stringify({
  hands: hands.length, gesture: hands[0]?.gesture ?? null, landmarks: hands[0]?.landmarks.length ?? 0,
  model, maskSize: [mask.width, mask.height], personShare: inside / mask.data.length,
}));
