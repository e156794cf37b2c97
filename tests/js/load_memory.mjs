// Wasm memory after loading and running a model, against what the engine says the model claimed (run by
// tests/test_load_memory.py), in Node and in a page:
//   node load_memory.mjs OUT.json CHROMIUM|- MODEL.wrt...
// Each case loads the model through the package (the streamed load) in a fresh runtime, runs it once on a fixed
// input, and reports memory.buffer.byteLength, wrt_memory_size + wrt_static_size, and the outputs' bytes compared
// with those of the one-copy load (wrt_load_with_limits on the whole file in linear memory) in another runtime.
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join, normalize, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));
const PKG = resolve(HERE, "..", "..", "js_bindings");
const { CASES, measure } = await import("./load_memory_measure.mjs");
async function inPage(models, executablePath) {
  const { chromium } = await import("playwright-core");
  const ORIGIN = "http://wasmrt.test";
  const TYPES = { js: "text/javascript", mjs: "text/javascript", wasm: "application/wasm" };
  const browser = await chromium.launch({ executablePath, headless: true, args: ["--no-sandbox", "--disable-gpu"] });
  try {
    const page = await browser.newPage();
    await page.route(`${ORIGIN}/**`, (route) => {
      const path = new URL(route.request().url()).pathname;
      // cross-origin isolated, so the threaded build runs too
      const headers = { "Cross-Origin-Opener-Policy": "same-origin", "Cross-Origin-Embedder-Policy": "require-corp" };
      if (path === "/") return route.fulfill({ body: "<!doctype html><title>memory</title>", contentType: "text/html", headers });
      const [root, rest] = path.startsWith("/pkg/") ? [PKG, path.slice(5)]
        : path.startsWith("/model/") ? ["", models[+path.slice(7)]] : [HERE, path.slice(1)];
      try {
        const body = readFileSync(normalize(root ? join(root, rest) : rest));
        route.fulfill({ body, contentType: TYPES[path.split(".").pop()] ?? "application/octet-stream", headers });
      } catch { route.fulfill({ status: 404, body: "", headers }); }
    });
    await page.goto(`${ORIGIN}/`);
    return await page.evaluate(async ({ origin, n, cases }) => {
      const wasmrt = await import(`${origin}/pkg/src/index.js`);
      const { measure } = await import(`${origin}/load_memory_measure.mjs`);
      const results = [];
      for (let k = 0; k < n; k++) {
        const bytes = new Uint8Array(await (await fetch(`${origin}/model/${k}`)).arrayBuffer());
        for (const [variant, threads] of cases) results.push({ model: k, ...(await measure(wasmrt, variant, threads, bytes)) });
      }
      return results;
    }, { origin: ORIGIN, n: models.length, cases: CASES });
  } finally {
    await browser.close();
  }
}

if (typeof process !== "undefined" && process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [outPath, chromiumPath, ...models] = process.argv.slice(2);
  let results;
  if (chromiumPath !== "-") results = await inPage(models, chromiumPath);
  else {
    const wasmrt = await import(join(PKG, "src", "index.js"));
    results = [];
    for (const [k, path] of models.entries()) {
      const bytes = new Uint8Array(readFileSync(path));
      for (const [variant, threads] of CASES) results.push({ model: k, ...(await measure(wasmrt, variant, threads, bytes)) });
    }
  }
  writeFileSync(outPath, JSON.stringify(results));
  process.exit(0); // Worker threads of the threaded runtimes
}
