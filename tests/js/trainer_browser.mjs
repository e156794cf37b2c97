// The JS trainer in headless Chromium (playwright-core, Debian's Chromium): the page imports the package and
// trainer_case.mjs from this checkout, served by request interception (no server); prints the case's result.
import { readFileSync } from "node:fs";
import { extname, join, resolve } from "node:path";
import { chromium } from "playwright-core";

const dir = process.argv[2];
const caseModule = process.argv[3] ?? "trainer_case.mjs";
const root = resolve(new URL("../..", import.meta.url).pathname);
const ORIGIN = "http://wasmrt.test";
const TYPES = { ".js": "text/javascript", ".mjs": "text/javascript", ".wasm": "application/wasm", ".html": "text/html" };
const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"] });
try {
  const page = await browser.newPage();
  await page.route(`${ORIGIN}/**`, (route) => {
    const path = new URL(route.request().url()).pathname;
    if (path === "/") return route.fulfill({ contentType: "text/html", body: "<!doctype html><title>trainer</title>" });
    const file = path.startsWith("/case/") ? join(dir, path.slice(6)) : join(root, path);
    try {
      return route.fulfill({ contentType: TYPES[extname(file)] ?? "application/octet-stream", body: readFileSync(file) });
    } catch { return route.fulfill({ status: 404, body: "" }); }
  });
  await page.goto(`${ORIGIN}/`);
  const out = await page.evaluate(async (caseModule) => {
    const wasmrt = await import("/js_bindings/src/index.js");
    const { runCase } = await import(`/tests/js/${caseModule}`);
    const get = async (p) => new Uint8Array(await (await fetch(p)).arrayBuffer());
    const c = JSON.parse(new TextDecoder().decode(await get("/case/case.json")));
    const xb = await get("/case/x.bin");
    return runCase(wasmrt, c, await get("/case/model.wrt"), new Float32Array(xb.buffer, xb.byteOffset, xb.byteLength / 4));
  }, caseModule);
  out.userAgent = await page.evaluate(() => navigator.userAgent);
  console.log(JSON.stringify(out));
} finally {
  await browser.close();
}
