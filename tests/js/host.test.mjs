// Host adapters: a mini-program-like host (instantiate by path, no WebAssembly.validate, features declared) must
// slot in through init({host}) without touching the rest of the API.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import * as wasmrt from "wasmrt";
import { checkOutputs, feeds, modelPath } from "./helpers.mjs";

const DIST = new URL("../../js_bindings/dist/", import.meta.url).pathname;

// Shaped like WXWebAssembly: instantiate(path, imports) resolves to an Instance (or {instance} on some versions).
function fakeMiniProgramHost({ features, wrapInstance = false }) {
  const calls = [];
  return {
    calls,
    name: "fake-wx",
    features,
    async instantiate(path, imports) {
      calls.push(path);
      const { instance } = await WebAssembly.instantiate(readFileSync(path), imports);
      return wrapInstance ? { instance } : instance;
    },
    async readBytes(path) { calls.push(path); return new Uint8Array(readFileSync(path)); },
  };
}

test("a host without validate: declared features decide the variant, paths go to the host verbatim", async () => {
  const host = fakeMiniProgramHost({ features: { simd: true, relaxed: false } });
  const rt = await wasmrt.init({ host, wasmPaths: DIST });
  assert.equal(rt.variant, "simd");
  assert.match(rt.reason, /the fake-wx host says SIMD128 is supported/);
  assert.equal(rt.host, "fake-wx");
  assert.equal(host.calls[0], `${DIST}wasmrt-simd.wasm`);
  const m = await rt.load(modelPath("face_detector"));
  checkOutputs(assert, "face_detector", await m.run(feeds("face_detector")), "fake host");
  m.release();
});

test("a host that cannot tell gets the scalar build, and {instance} results are accepted", async () => {
  const host = fakeMiniProgramHost({ features: undefined, wrapInstance: true });
  delete host.features;
  const rt = await wasmrt.init({ host, wasmPaths: DIST });
  assert.equal(rt.variant, "scalar");
  assert.match(rt.reason, /no simd: the fake-wx host cannot validate wasm modules/);
  const m = await rt.load(modelPath("face_detector"));
  checkOutputs(assert, "face_detector", await m.run(feeds("face_detector")), "fake host, scalar");
  m.release();
});
