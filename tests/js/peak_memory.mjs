// Peak process memory (resident set, maxRSS) of Node loading and running one model through the package, against a
// bare Node that only imported it (docs/dev/bench-journal.md, "Peak memory in Node"). One case per process:
//   node peak_memory.mjs bare
//   node peak_memory.mjs MODEL.wrt [variant]
// Prints one JSON line: {model, variant, maxRSS (bytes), rss, wasmMemory}.
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const PKG = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..", "js_bindings");
const wasmrt = await import(join(PKG, "src", "index.js"));
const [what = "bare", variant = "relaxed"] = process.argv.slice(2);
let wasmMemory = 0;
if (what !== "bare") {
  const rt = await wasmrt.init({ variant });
  const model = rt.loadBytes(new Uint8Array(readFileSync(what)));
  const feeds = {};
  for (const s of model.inputs) {
    const n = s.shape.reduce((a, b) => a * b, 1), x = new Float32Array(n);
    for (let i = 0; i < n; i++) x[i] = ((i * 7919) % 255) / 127.5 - 1;
    feeds[s.name] = x;
  }
  model.runSync(feeds);
  wasmMemory = rt._ex.memory.buffer.byteLength;
}
globalThis.gc?.();
console.log(JSON.stringify({ model: what, variant, maxRSS: process.resourceUsage().maxRSS * 1024,
  rss: process.memoryUsage().rss, wasmMemory }));
