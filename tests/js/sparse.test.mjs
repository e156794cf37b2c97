// Block-sparse weights in JS: a model pruned to 80% in 1x4 blocks gives python_ref's outputs on every variant,
// whichever kernels run it (the load option `sparse`: the engine's choice, sparse forced, dense forced).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import * as wasmrt from "wasmrt";
import { manifest, maxErr, readArray, variants } from "./helpers.mjs";

const TOL = 2e-5; // the engine's per-op tolerance, relative to max|ref|
const entry = manifest.sparse;

for (const variant of variants()) {
  test(`${variant}: a block-sparse model equals python_ref with sparse auto, always and never`, async () => {
    const rt = await wasmrt.init({ variant });
    const bytes = new Uint8Array(readFileSync(entry.path));
    const feeds = {};
    for (const [k, e] of Object.entries(entry.inputs)) feeds[k] = { data: readArray(e), shape: e.shape };
    for (const sparse of ["auto", "always", "never"]) {
      const m = rt.loadBytes(bytes, { sparse });
      const out = m.runSync(feeds);
      for (const [k, e] of Object.entries(entry.outputs)) {
        const { err, ref } = maxErr(out[k].data, readArray(e));
        assert.ok(err <= TOL * ref + 2e-6, `${variant} sparse=${sparse}: ${k} error ${err} (max |ref| ${ref})`);
      }
      m.release();
    }
    assert.throws(() => rt.loadBytes(bytes, { sparse: "sometimes" }),
      (e) => e instanceof wasmrt.InputError && /sparse must be "auto", "always" or "never"/.test(e.message));
  });
}
