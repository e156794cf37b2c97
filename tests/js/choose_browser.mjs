// Measured algorithm choices in Chromium: the cache in Cache Storage, then (Cache Storage hidden) in IndexedDB; a
// hostile entry in the store is ignored and measured again. Usage: node tests/js/choose_browser.mjs ROOT MODEL
// RESULT.json [chromium]
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { chromium } from "playwright-core";

const [root, model, resultPath, executablePath = "/usr/bin/chromium"] = process.argv.slice(2);
const MIME = { ".js": "text/javascript", ".html": "text/html", ".wasm": "application/wasm" };

const PAGE = `<!doctype html><meta charset="utf-8"><title>choices</title><link rel="icon" href="data:,"><script type="module">
import * as wasmrt from "/js/src/index.js";
const bytes = new Uint8Array(await (await fetch("/model.wrt")).arrayBuffer());
async function twice(rt) {
  const a = await rt.load(bytes, { choose: "measure" });
  const b = await rt.load(bytes, { choose: "measure" });
  const same = JSON.stringify(a.plan()) === JSON.stringify(b.plan().map((r) => ({ ...r, timesMs: a.plan()[r.op].timesMs })));
  const out = [a.chosenBy, b.chosenBy, same, a.plan().filter((r) => r.candidates.length).length];
  a.release();
  b.release();
  return out;
}
try {
  const rt = await wasmrt.init({ variant: "relaxed" });
  const result = { cacheStorage: await twice(rt) };
  for (const key of await caches.keys()) { // a hostile entry in place of the good one
    const c = await caches.open(key);
    for (const req of await c.keys()) await c.put(req, new Response("{\\"version\\": 1, \\"choices\\": [9]"));
  }
  result.hostile = (await rt.load(bytes, { choose: "measure" })).chosenBy;
  await Promise.all((await caches.keys()).map((k) => caches.delete(k)));
  Object.defineProperty(globalThis, "caches", { value: undefined }); // pages without Cache Storage: IndexedDB
  result.indexedDB = await twice(rt);
  window.result = result;
} catch (e) {
  window.result = { error: String(e.stack || e) };
}
</script>`;

const server = http.createServer((req, res) => {
  const url = new URL(req.url, "http://x");
  if (url.pathname === "/page.html") {
    res.writeHead(200, { "Content-Type": "text/html" }).end(PAGE);
    return;
  }
  const file = url.pathname === "/model.wrt" ? path.resolve(model)
    : url.pathname.startsWith("/js/") ? path.join(root, "js_bindings", url.pathname.slice(4)) : null;
  if (!file || !fs.existsSync(file) || fs.statSync(file).isDirectory()) {
    res.writeHead(404).end();
    return;
  }
  res.writeHead(200, { "Content-Type": MIME[path.extname(file)] ?? "application/octet-stream" });
  fs.createReadStream(file).pipe(res);
});
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const browser = await chromium.launch({ executablePath, headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"] });
let result;
try {
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(`http://127.0.0.1:${server.address().port}/page.html`); // localhost: a secure context
  await page.waitForFunction(() => window.result, null, { timeout: 120000 }).catch((e) => { errors.push(String(e)); });
  result = { ...(await page.evaluate(() => window.result)), pageErrors: errors };
} finally {
  await browser.close();
  server.close();
}
fs.writeFileSync(resultPath, JSON.stringify(result, null, 1));
