// The teach pages' shared flow (demo/web/teach-core.js) without an engine: the class names a person may give, the
// probabilities shown, and a training request the page must refuse before any work (a class without a photo).
// The whole flow on the engine runs in tests/test_teach_pages.py and tests/test_miniprogram_teach.py.
import assert from "node:assert/strict";
import { test } from "node:test";
import { checkClasses, probabilities, TEACH, Teacher } from "../../demo/web/teach-core.js";

test("teach: class names are trimmed; too few, too many, unnamed or repeated ones say which", () => {
  assert.deepEqual(checkClasses([" mug ", "plant"]), ["mug", "plant"]);
  assert.throws(() => checkClasses(["mug"]), /name 2 to 5 classes \(got 1\)/);
  assert.throws(() => checkClasses(Array.from({ length: TEACH.maxClasses + 1 }, (_, k) => `c${k}`)), /got 6/);
  assert.throws(() => checkClasses(["mug", "  "]), /class 2 has no name/);
  assert.throws(() => checkClasses(["mug", "plant", "mug "]), /two classes are named "mug"/);
});

test("teach: logits become probabilities; a distribution stays as it is", () => {
  const p = probabilities(new Float32Array([2, 0, -1]));
  assert.ok(Math.abs(p.reduce((a, b) => a + b, 0) - 1) < 1e-12);
  assert.ok(p[0] > p[1] && p[1] > p[2]);
  assert.ok(Math.abs(p[0] / p[1] - Math.exp(2)) < 1e-9);
  assert.deepEqual(probabilities([0.25, 0.75]), [0.25, 0.75]);
  assert.deepEqual(probabilities([1000, 1000]), [0.5, 0.5]); // no overflow
});

test("teach: a class without a photo, or an unknown sample, is refused before the trainer runs", async () => {
  const base = { trainer: () => assert.fail("the trainer must not start") };
  const t = new Teacher({}, base, null);
  t.samples.set(1, new Float32Array(4));
  await assert.rejects(t.train(["mug", "plant"], [{ id: 1, label: 0 }]), /class "plant" has no photo yet/);
  await assert.rejects(t.train(["mug", "plant"], [{ id: 1, label: 0 }, { id: 7, label: 1 }]), /no sample 7/);
  await assert.rejects(t.classify({}), /train the model \(or reload a saved one\) first/);
  assert.throws(() => t.export(), /nothing to save/);
});
