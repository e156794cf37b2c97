// The load option `conv` (Winograd or the direct convolution for dense 3x3 layers): every choice gives python_ref's
// outputs within its tolerance on every variant (Winograd: python_ref/winograd.py's written bound), the forced
// Winograd really runs (not the direct kernel's bytes), and an unknown value is refused.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import * as wasmrt from "wasmrt";
import { manifest, readArray, variants } from "./helpers.mjs";

const TOL = 2e-5; // the direct kernels' per-op tolerance, relative to max|ref|
const entry = manifest.winograd;

for (const variant of variants()) {
  test(`${variant}: conv auto, igemm, wino2 and wino4 agree with python_ref within their tolerance`, async () => {
    const rt = await wasmrt.init({ variant });
    const bytes = new Uint8Array(readFileSync(entry.path));
    const x = entry.inputs.x;
    const feeds = { x: { data: readArray(x), shape: x.shape } };
    const ref = readArray(entry.outputs.y);
    const refMax = ref.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
    const outs = {};
    for (const conv of ["auto", "igemm", "wino2", "wino4"]) {
      const m = rt.loadBytes(bytes, { conv });
      const y = m.runSync(feeds).y.data;
      m.release();
      let err = 0;
      for (let i = 0; i < ref.length; i++) err = Math.max(err, Math.abs(y[i] - ref[i]));
      const tol = entry.tolerance[conv] ?? (conv === "igemm" ? TOL * refMax + 2e-6 : entry.tolerance.wino4);
      assert.ok(err <= tol, `${variant} conv=${conv}: error ${err} > ${tol}`);
      outs[conv] = y;
    }
    const same = (a, b) => a.every((v, i) => v === b[i]);
    assert.ok(!same(outs.igemm, outs.wino4) && !same(outs.wino2, outs.wino4), "conv did not change the kernel");
    assert.throws(() => rt.loadBytes(bytes, { conv: "fft" }),
      (e) => e instanceof wasmrt.InputError && /conv must be one of "auto", "igemm", "wino2", "wino4"/.test(e.message));
  });
}
