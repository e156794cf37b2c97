// The layers' trainer in headless Chromium (tools/case_page.mjs): the same case (chain_worker_case.mjs) on the page
// and in a module Web Worker (wasmrt/worker), relaxed SIMD on both. Prints {thread, worker} as one JSON line.
//   node tests/js/chain_worker_browser.mjs CASE_DIR      (CASE_DIR: case.json, model.wrt, x.bin)
import { resolve } from "node:path";
import { printCaseResult } from "../../tools/case_page.mjs";

const dir = process.argv[2];
const root = resolve(new URL("../..", import.meta.url).pathname);
await printCaseResult({ root, dir, title: "chain trainer in a Worker" }, (page) => page.evaluate(async () => {
  const wasmrt = await import("/js_bindings/src/index.js");
  const { initWorker } = await import("/js_bindings/src/worker-client.js");
  const { runChainCase } = await import("/tests/js/chain_worker_case.mjs");
  const get = async (p) => new Uint8Array(await (await fetch(p)).arrayBuffer());
  const c = JSON.parse(new TextDecoder().decode(await get("/case/case.json")));
  const bytes = await get("/case/model.wrt");
  const xb = await get("/case/x.bin");
  const x = new Float32Array(xb.buffer, xb.byteOffset, xb.byteLength / 4);
  const n = c.labels.length, size = x.length / n;
  const samples = () => Array.from({ length: n }, (_, i) => x.slice(i * size, (i + 1) * size));
  const rt = await wasmrt.init({ variant: "relaxed" });
  const thread = { variant: rt.variant, ...(await runChainCase(rt, c, bytes, samples())) };
  const w = await initWorker({ variant: "relaxed" });
  try {
    return { thread, worker: { variant: w.variant, ...(await runChainCase(w, c, bytes, samples())) } };
  } finally {
    w.terminate();
  }
}));
