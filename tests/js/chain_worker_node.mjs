// The layers' trainer through the worker client, in Node: the same case (chain_worker_case.mjs) on this thread, in
// a worker_threads Worker (wasmrt/worker) and in an emulated WeChat mini-program Worker (miniprogram_worker_app.mjs),
// SIMD128 everywhere (the mini-program hosts have no relaxed SIMD). Prints the three results as one JSON line.
//   node tests/js/chain_worker_node.mjs CASE_DIR      (CASE_DIR: case.json, model.wrt, x.bin)
import { resolve } from "node:path";
import * as wasmrt from "../../js_bindings/src/index.js";
import { initWorker } from "../../js_bindings/src/worker-client.js";
import { runChainCase } from "./chain_worker_case.mjs";
import { miniProgramWorker } from "./miniprogram_worker_app.mjs";
import { readTrainCase } from "./train_case.mjs";

const dir = process.argv[2];
const root = resolve(new URL("../..", import.meta.url).pathname);
const { c, bytes, samples } = readTrainCase(dir);

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
