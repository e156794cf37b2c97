// Modules built for given models, through the package in Node (run by tests/test_modules.py):
//   node modules_node.mjs FOLDER VARIANT MODEL.wrt... -- OTHER.wrt
// Loads each MODEL on the folder's module (init({wasmPaths, modules})) and on the full one, runs both on a fixed
// input and compares the output bytes; then loads OTHER, which needs an op the folder's module lacks, and reports
// the error. Prints one JSON object.
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const PKG = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..", "js_bindings");
const wasmrt = await import(join(PKG, "src", "index.js"));
const [folder, variant, ...rest] = process.argv.slice(2);
const cut = rest.indexOf("--");
const models = rest.slice(0, cut), others = rest.slice(cut + 1);
const modules = JSON.parse(readFileSync(join(folder, "wasmrt-modules.json"), "utf8"));
const trimmed = await wasmrt.init({ variant, wasmPaths: folder + "/", modules });
const full = await wasmrt.init({ variant });

function run(rt, bytes) {
  const model = rt.loadBytes(bytes);
  const feeds = {};
  for (const s of model.inputs) {
    const n = s.shape.reduce((a, b) => a * b, 1), x = new Float32Array(n);
    for (let i = 0; i < n; i++) x[i] = ((i * 7919) % 255) / 127.5 - 1;
    feeds[s.name] = x;
  }
  const out = model.runSync(feeds);
  const bytesOut = model.outputs.map((o) => new Uint8Array(out[o.name].data.buffer.slice(0)));
  model.release();
  return bytesOut;
}

const same = {};
for (const m of models) {
  const bytes = new Uint8Array(readFileSync(m));
  const a = run(trimmed, bytes), b = run(full, bytes);
  same[m] = a.length === b.length && a.every((o, i) => o.length === b[i].length && o.every((v, j) => v === b[i][j]));
}
const refused = {};
for (const m of others) {
  try {
    trimmed.loadBytes(new Uint8Array(readFileSync(m)));
    refused[m] = null;
  } catch (e) {
    refused[m] = { name: e.constructor.name, message: e.message };
  }
}
// the module still runs the models it was built for after a refusal
const after = run(trimmed, new Uint8Array(readFileSync(models[0]))).length > 0;
console.log(JSON.stringify({ variant: trimmed.variant, builtFor: trimmed.builtFor, fullBuiltFor: full.builtFor,
  reason: trimmed.reason, same, refused, after }));
