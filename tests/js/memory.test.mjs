// Memory: 1000 load/run/release cycles must not grow wasm memory after the first (it never shrinks, so any
// leak shows as growth), and shape/model changes must not break the allocator.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import * as wasmrt from "wasmrt";
import { checkOutputs, feeds, modelPath, report, variants } from "./helpers.mjs";

const CYCLES = +(process.env.WASMRT_CYCLES ?? 1000);

for (const variant of variants()) {
  test(`${variant}: ${CYCLES} load/run/release cycles without memory growth after the first`, async () => {
    const rt = await wasmrt.init({ variant });
    const bytes = new Uint8Array(readFileSync(modelPath("face_detector")));
    const input = feeds("face_detector");
    let afterFirst = 0;
    const t0 = performance.now();
    for (let i = 0; i < CYCLES; i++) {
      const m = rt.loadBytes(bytes);
      const out = m.runSync(input);
      if (i === 0) checkOutputs(assert, "face_detector", out, "cycle 0");
      m.release();
      if (i === 0) afterFirst = rt.memoryBytes;
      else if (rt.memoryBytes !== afterFirst) assert.fail(`memory grew from ${afterFirst} to ${rt.memoryBytes} bytes at cycle ${i}`);
    }
    report("node-cycles", { variant, cycles: CYCLES, memoryBytes: afterFirst, msPerCycle: (performance.now() - t0) / CYCLES });
  });
}

test("interleaved models of different sizes reuse memory too", async () => {
  const rt = await wasmrt.init({ variant: variants()[0] });
  const names = ["selfie_segmentation", "face_detector", "face_landmark"];
  const bytes = names.map((n) => new Uint8Array(readFileSync(modelPath(n))));
  let high = 0;
  for (let round = 0; round < 5; round++) {
    const ms = bytes.map((b) => rt.loadBytes(b));
    ms.forEach((m, i) => m.runSync(feeds(names[i])));
    ms.reverse().forEach((m) => m.release());
    if (round === 0) high = rt.memoryBytes;
    assert.equal(rt.memoryBytes, high, `round ${round}`);
  }
});
