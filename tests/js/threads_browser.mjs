// Threads in Chromium: the same page served cross-origin isolated (/iso/) and not (/plain/); on each it inits
// wasmrt with 2 threads (on the page and through the Worker API), runs a bundled model and compares the bytes with
// a one-thread run. Usage: node tests/js/threads_browser.mjs ROOT MODEL RESULT.json [chromium]
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { chromium } from "playwright-core";

const [root, model, resultPath, executablePath = "/usr/bin/chromium"] = process.argv.slice(2);
const MIME = { ".js": "text/javascript", ".mjs": "text/javascript", ".html": "text/html", ".wasm": "application/wasm" };

const PAGE = `<!doctype html><meta charset="utf-8"><title>threads</title><link rel="icon" href="data:,"><script type="module">
import * as wasmrt from "/js/src/index.js";
import { initWorker } from "/js/src/worker-client.js";
const bytes = new Uint8Array(await (await fetch("/model.wrt")).arrayBuffer());
const hash = (out) => Object.values(out).map((t) => Array.from(new Uint8Array(t.data.buffer)).join(",")).join("|");
async function run(rt) {
  const m = await rt.load(bytes.slice());
  const x = new Float32Array(m.inputs[0].shape.reduce((a, b) => a * b));
  for (let i = 0; i < x.length; i++) x[i] = Math.sin(i * 0.37);
  const out = await m.run({ [m.inputs[0].name]: { data: x, shape: m.inputs[0].shape } });
  await m.release();
  return hash(out);
}
try {
  const one = await wasmrt.init({ variant: "relaxed" });
  const two = await wasmrt.init({ variant: "relaxed", threads: 2 });
  const w = await initWorker({ variant: "relaxed", threads: 2 });
  const ref = await run(one);
  window.result = { isolated: crossOriginIsolated, threads: two.threads, reason: two.reason,
    identical: (await run(two)) === ref, workerThreads: w.threads, workerReason: w.reason,
    workerIdentical: (await run(w)) === ref };
  two.close();
  w.terminate();
} catch (e) {
  window.result = { error: String(e.stack || e) };
}
</script>`;

const server = http.createServer((req, res) => {
  const url = new URL(req.url, "http://x");
  // isolation is decided by the document's headers; scripts (Workers included) carry them everywhere
  const coi = { "Cross-Origin-Opener-Policy": "same-origin", "Cross-Origin-Embedder-Policy": "require-corp",
    "Cross-Origin-Resource-Policy": "same-origin" };
  if (url.pathname.endsWith("/page.html")) {
    res.writeHead(200, { "Content-Type": "text/html", ...(url.pathname.startsWith("/iso/") ? coi : {}) }).end(PAGE);
    return;
  }
  const file = url.pathname === "/model.wrt" ? path.resolve(model)
    : url.pathname.startsWith("/js/") ? path.join(root, "js_bindings", url.pathname.slice(4)) : null;
  if (!file || !fs.existsSync(file) || fs.statSync(file).isDirectory()) {
    process.stderr.write(`404 ${url.pathname}\n`);
    res.writeHead(404).end();
    return;
  }
  res.writeHead(200, { "Content-Type": MIME[path.extname(file)] ?? "application/octet-stream", ...coi });
  fs.createReadStream(file).pipe(res);
});
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const origin = `http://127.0.0.1:${server.address().port}`;
const browser = await chromium.launch({ executablePath, headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"] });
const results = {};
try {
  for (const kind of ["iso", "plain"]) {
    const page = await browser.newPage();
    const errors = [];
    page.on("pageerror", (e) => errors.push(e.message));
    page.on("console", (m) => process.stderr.write(`[${kind}] ${m.text()}\n`));
    page.on("response", (r) => { if (r.status() >= 400) errors.push(`HTTP ${r.status()} ${r.url()}`); });
    await page.goto(`${origin}/${kind}/page.html`);
    await page.waitForFunction(() => window.result, null, { timeout: 60000 }).catch((e) => { errors.push(String(e)); });
    results[kind] = { ...(await page.evaluate(() => window.result)), pageErrors: errors };
    await page.close();
  }
} finally {
  await browser.close();
  server.close();
}
fs.writeFileSync(resultPath, JSON.stringify(results, null, 1));
