// Load cost of choose: "measure" in Node and headless Chromium (choice_load_core.mjs):
//   node choice_load.mjs ROOT [--chromium PATH] [--passes N] MODEL.wrt...
// ROOT: the checkout (its js_bindings/ is loaded). Node keeps the cache in a fresh WASMRT_CACHE_DIR, Chromium in
// Cache Storage (the page is served cross-origin isolated, as in production). Prints one JSON row per model and pass.
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";

import { loadCosts } from "./choice_load_core.mjs";

const args = process.argv.slice(2);
const root = path.resolve(args.shift());
const opt = (name, def) => {
  const i = args.indexOf(name);
  return i < 0 ? def : args.splice(i, 2)[1];
};
const chromiumPath = opt("--chromium", null);
const passes = Number(opt("--passes", 3));
const files = args.map((f) => path.resolve(f));

async function inNode() {
  process.env.WASMRT_CACHE_DIR = fs.mkdtempSync(path.join(os.tmpdir(), "wasmrt-choice-load-"));
  const wasmrt = await import(pathToFileURL(path.join(root, "js_bindings/src/index.js")).href);
  const models = files.map((f) => ({ name: path.basename(f), bytes: new Uint8Array(fs.readFileSync(f)) }));
  const clear = async () => fs.rmSync(path.join(process.env.WASMRT_CACHE_DIR, "choices"), { recursive: true, force: true });
  return loadCosts(wasmrt, models, clear, passes);
}

async function inChromium() {
  const { chromium } = await import(pathToFileURL(path.join(root, "node_modules/playwright-core/index.mjs")).href);
  const here = path.dirname(new URL(import.meta.url).pathname);
  const page = `<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><script type="module">
import * as wasmrt from "/js/src/index.js";
import { loadCosts } from "/bench/choice_load_core.mjs";
const names = ${JSON.stringify(files.map((f) => path.basename(f)))};
const models = [];
for (const [i, name] of names.entries()) models.push({ name, bytes: new Uint8Array(await (await fetch("/model/" + i)).arrayBuffer()) });
const clear = async () => { for (const k of await caches.keys()) await caches.delete(k); };
try { window.result = await loadCosts(wasmrt, models, clear, ${passes}); } catch (e) { window.result = { error: String(e.stack || e) }; }
</script>`;
  const MIME = { ".js": "text/javascript", ".mjs": "text/javascript", ".wasm": "application/wasm" };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, "http://x");
    const headers = { "Cross-Origin-Opener-Policy": "same-origin", "Cross-Origin-Embedder-Policy": "require-corp",
      "Cache-Control": "no-store" };
    if (url.pathname === "/page.html") return res.writeHead(200, { ...headers, "Content-Type": "text/html" }).end(page);
    const file = url.pathname.startsWith("/model/") ? files[Number(url.pathname.slice(7))]
      : url.pathname.startsWith("/js/") ? path.join(root, "js_bindings", url.pathname.slice(4))
        : url.pathname.startsWith("/bench/") ? path.join(here, url.pathname.slice(7)) : null;
    if (!file || !fs.existsSync(file) || fs.statSync(file).isDirectory()) return res.writeHead(404).end();
    res.writeHead(200, { ...headers, "Content-Type": MIME[path.extname(file)] ?? "application/octet-stream" });
    fs.createReadStream(file).pipe(res);
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const browser = await chromium.launch({ executablePath: chromiumPath, headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"] });
  try {
    const p = await browser.newPage();
    await p.goto(`http://127.0.0.1:${server.address().port}/page.html`);
    await p.waitForFunction(() => window.result !== undefined, null, { timeout: 600000 });
    return await p.evaluate(() => window.result);
  } finally {
    await browser.close();
    server.close();
  }
}

const rows = chromiumPath ? await inChromium() : await inNode();
for (const r of Array.isArray(rows) ? rows : [rows]) console.log(JSON.stringify(r));
