// The JS trainer in headless Chromium (playwright-core, Debian's Chromium): the page imports the package and
// trainer_case.mjs from this checkout, served by request interception (no server, tools/case_page.mjs); prints the
// case's result.
import { resolve } from "node:path";
import { printCaseResult } from "../../tools/case_page.mjs";

const dir = process.argv[2];
const caseModule = process.argv[3] ?? "trainer_case.mjs";
const root = resolve(new URL("../..", import.meta.url).pathname);
await printCaseResult({ root, dir, title: "trainer" }, (page) => page.evaluate(async (caseModule) => {
  const wasmrt = await import("/js_bindings/src/index.js");
  const { runCase } = await import(`/tests/js/${caseModule}`);
  const get = async (p) => new Uint8Array(await (await fetch(p)).arrayBuffer());
  const c = JSON.parse(new TextDecoder().decode(await get("/case/case.json")));
  const xb = await get("/case/x.bin");
  return runCase(wasmrt, c, await get("/case/model.wrt"), new Float32Array(xb.buffer, xb.byteOffset, xb.byteLength / 4));
}, caseModule));
