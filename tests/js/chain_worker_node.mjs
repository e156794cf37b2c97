// The layers' trainer through the worker client, in Node: the same case (chain_worker_case.mjs) on this thread, in
// a worker_threads Worker (wasmrt/worker) and in an emulated WeChat mini-program Worker (miniprogram_worker_app.mjs),
// SIMD128 everywhere (the mini-program hosts have no relaxed SIMD). Prints the three results as one JSON line.
//   node tests/js/chain_worker_node.mjs CASE_DIR      (CASE_DIR: case.json, model.wrt, x.bin)
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import * as wasmrt from "../../js_bindings/src/index.js";
import { initWorker } from "../../js_bindings/src/worker-client.js";
import { runChainCase } from "./chain_worker_case.mjs";
import { miniProgramWorker } from "./miniprogram_worker_app.mjs";

const dir = process.argv[2];
const root = resolve(new URL("../..", import.meta.url).pathname);
const c = JSON.parse(readFileSync(`${dir}/case.json`, "utf8"));
const bytes = new Uint8Array(readFileSync(`${dir}/model.wrt`));
const xb = readFileSync(`${dir}/x.bin`);
const x = new Float32Array(xb.buffer.slice(xb.byteOffset, xb.byteOffset + xb.byteLength));
const n = c.labels.length, size = x.length / n;
const samples = () => Array.from({ length: n }, (_, i) => x.slice(i * size, (i + 1) * size));

const result = {};
const rt = await wasmrt.init({ variant: "simd" });
result.thread = { variant: rt.variant, ...(await runChainCase(rt, c, bytes, samples())) };
const w = await initWorker({ variant: "simd" });
try {
  result.worker = { variant: w.variant, ...(await runChainCase(w, c, bytes, samples())) };
} finally {
  w.terminate();
}
const mp = await miniProgramWorker(root);
try {
  result.miniprogram = { variant: mp.rt.variant, host: mp.rt.host, ...(await runChainCase(mp.rt, c, bytes, samples())) };
} finally {
  mp.close();
}
process.stdout.write(`${JSON.stringify(result)}\n`, () => process.exit(0)); // a pipe: exit once written
