// The JS side of tests/test_error_parity.py: load and run every file of a list in the npm package (wasm backend)
// on each variant asked for, and print each outcome as JSON: {variant: {case: [error class name or "ok", message]}}.
//   node tests/js/error_parity.mjs cases.json
// cases.json: {variants: [...], cases: [{name, path, inputs: {name: {file, shape, dtype}}}]}
import { readFileSync } from "node:fs";
import * as wasmrt from "wasmrt";

const TYPED = { float32: Float32Array, int32: Int32Array, int64: BigInt64Array, uint8: Uint8Array, int8: Int8Array,
  bool: Uint8Array };

function feeds(inputs) {
  const out = {};
  for (const [k, e] of Object.entries(inputs)) {
    const buf = readFileSync(e.file), T = TYPED[e.dtype];
    out[k] = { data: new T(buf.buffer, buf.byteOffset, buf.byteLength / T.BYTES_PER_ELEMENT), shape: e.shape };
  }
  return out;
}

function outcome(rt, c) {
  let m;
  try {
    m = rt.loadBytes(new Uint8Array(readFileSync(c.path)));
  } catch (e) {
    return [e.name, e.message];
  }
  try {
    m.runSync(feeds(c.inputs));
    return ["ok", ""];
  } catch (e) {
    return [e.name, e.message];
  } finally {
    m.release();
  }
}

const { variants, cases } = JSON.parse(readFileSync(process.argv[2], "utf8"));
const result = {};
for (const variant of variants) {
  const rt = await wasmrt.init({ variant });
  result[variant] = Object.fromEntries(cases.map((c) => [c.name, outcome(rt, c)]));
  rt.close?.();
}
process.stdout.write(JSON.stringify(result));
