// Shared by the Node tests: the fixtures pytest wrote (models, inputs, python_ref outputs) and comparisons.
import { appendFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import * as wasmrt from "wasmrt";

export const FIXTURES = process.env.WASMRT_JS_FIXTURES;
if (!FIXTURES) throw new Error("WASMRT_JS_FIXTURES is not set: run these tests through pytest (tests/test_js_node.py)");
export const manifest = JSON.parse(readFileSync(join(FIXTURES, "manifest.json"), "utf8"));

const TYPED = { float32: Float32Array, int32: Int32Array, uint8: Uint8Array, int8: Int8Array };
export function readArray(entry) {
  const buf = readFileSync(join(FIXTURES, entry.file));
  const T = TYPED[entry.dtype ?? "float32"];
  return new T(buf.buffer, buf.byteOffset, buf.byteLength / T.BYTES_PER_ELEMENT);
}

/** The variants to test: WASMRT_VARIANTS (comma list) or every one this host can run. */
export function variants() {
  if (process.env.WASMRT_VARIANTS) return process.env.WASMRT_VARIANTS.split(",");
  const f = wasmrt.probe(wasmrt.defaultHost());
  return wasmrt.VARIANTS.filter((v) => f[v].available);
}

/** max |a - b| and max |b| */
export function maxErr(a, b) {
  let err = 0, ref = 0;
  for (let i = 0; i < b.length; i++) {
    err = Math.max(err, Math.abs(a[i] - b[i]));
    ref = Math.max(ref, Math.abs(b[i]));
  }
  return { err, ref };
}

export const REL_TOL = manifest.rel_tol;

export function modelPath(name) { return manifest.models[name].path; }

/** Feeds of the model's fixed input. */
export function feeds(name) {
  const out = {};
  for (const [k, e] of Object.entries(manifest.models[name].inputs)) out[k] = { data: readArray(e), shape: e.shape };
  return out;
}

/** Check outputs against python_ref; returns {outputName: relative error} for the report. */
export function checkOutputs(assert, name, outputs, label) {
  const errs = {};
  for (const [k, e] of Object.entries(manifest.models[name].outputs)) {
    assert.ok(outputs[k], `${label}: output ${k} missing`);
    assert.deepEqual(outputs[k].shape, e.shape, `${label}: output ${k} shape`);
    const { err, ref } = maxErr(outputs[k].data, readArray(e));
    errs[k] = err / (ref || 1);
    assert.ok(err <= REL_TOL * ref + 1e-30, `${label}: ${k} max error ${err} > ${REL_TOL} x max|ref| ${ref}`);
  }
  return errs;
}

/** Measurements for the pytest report (errors, timings): JSON lines appended to WASMRT_JS_REPORT. */
export function report(kind, data) {
  if (process.env.WASMRT_JS_REPORT) {
    appendFileSync(process.env.WASMRT_JS_REPORT, JSON.stringify({ kind, node: process.versions.node, ...data }) + "\n");
  }
}
