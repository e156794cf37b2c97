// int8 graphs (tests/qgraphs.py, written by js_fixtures.py) on every variant: bit for bit python_ref's outputs,
// since int8 has one right answer (integer accumulation, fp32 requantization, round half to even).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import * as wasmrt from "wasmrt";
import { manifest, readArray, variants } from "./helpers.mjs";
import { relaxedDotKind, relaxedDotLanes, TABLES } from "./relaxed_dot.mjs";

for (const variant of variants()) {
  test(`${variant}: every int8 graph equals python_ref bit for bit`, async () => {
    const rt = await wasmrt.init({ variant });
    assert.ok(manifest.int8.length > 40);
    // the relaxed module's int8 table follows the host's relaxed dot product (Node on x86: pmaddubsw, saturating)
    if (variant === "relaxed") assert.equal(rt.target, TABLES[relaxedDotKind(await relaxedDotLanes())]);
    for (const c of manifest.int8) {
      const m = rt.loadBytes(new Uint8Array(readFileSync(c.path)));
      const feeds = {};
      for (const [k, e] of Object.entries(c.inputs)) feeds[k] = { data: readArray(e), shape: e.shape };
      const outputs = m.runSync(feeds);
      for (const [k, e] of Object.entries(c.outputs)) {
        assert.equal(outputs[k].dtype, e.dtype, `${c.name}: ${k}`);
        assert.deepEqual(Array.from(outputs[k].data), Array.from(readArray(e)), `${c.name} on ${variant}: ${k}`);
      }
      m.release();
    }
  });
}
