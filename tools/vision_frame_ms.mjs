// Per-frame time of the vision pipelines, model time against the work outside the models, with the image operations
// in the engine (imageOps "engine") and in JS ("js"). One thread. Runs in Node, or in headless Chromium with
// --chromium (through playwright-core).
//   node --expose-gc tools/vision_frame_ms.mjs FRAMES_DIR [--chromium | --cpu] [--variant relaxed] [--runs 30]
// FRAMES_DIR: tools/vision_frame_ms.py writes it (raw RGBA frames and frames.json).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

import { measure } from "./vision_frame_measure.mjs";

const ROOT = fileURLToPath(new URL("../", import.meta.url));

{
  const dir = process.argv[2], args = process.argv.slice(3);
  const variant = args.includes("--variant") ? args[args.indexOf("--variant") + 1] : "relaxed";
  const runs = args.includes("--runs") ? +args[args.indexOf("--runs") + 1] : 30;
  const frames = JSON.parse(readFileSync(join(dir, "frames.json"), "utf8"));
  let result;
  if (args.includes("--chromium")) {
    const { createServer } = await import("node:http");
    const { chromium } = await import("playwright-core");
    const { existsSync, statSync, createReadStream } = await import("node:fs");
    const { extname, normalize } = await import("node:path");
    const TYPES = { ".js": "text/javascript", ".mjs": "text/javascript", ".json": "application/json", ".wasm": "application/wasm" };
    const server = createServer((req, res) => {
      const url = decodeURIComponent(new URL(req.url, "http://x").pathname);
      const file = url.startsWith("/fx/") ? join(dir, normalize(url.slice(4))) : join(ROOT, normalize(url));
      if (url === "/") { res.writeHead(200, { "content-type": "text/html" }); res.end("<!doctype html><title>v</title>"); return; }
      if (!existsSync(file) || !statSync(file).isFile()) { res.writeHead(404); res.end(); return; }
      res.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream" });
      createReadStream(file).pipe(res);
    });
    await new Promise((r) => server.listen(0, "127.0.0.1", r));
    const origin = `http://127.0.0.1:${server.address().port}`;
    const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", headless: true,
      args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--js-flags=--expose-gc"] });
    try {
      const page = await browser.newPage();
      await page.goto(origin + "/");
      result = await page.evaluate(async ({ frames, variant, runs }) => {
        const { measure } = await import("/tools/vision_frame_measure.mjs");
        const V = await import("/js_bindings/vision/index.js"), W = await import("/js_bindings/src/index.js");
        const load = async (f) => new Uint8Array(await (await fetch(f.startsWith("/") ? f : `/fx/${f}`)).arrayBuffer());
        return measure({ V, W, load, frames, variant, wasmPaths: "/wasmrt/engines/dist/", models: "/models", runs });
      }, { frames, variant, runs });
      result.host = "chromium";
    } finally {
      await browser.close();
      server.close();
    }
  } else {
    const V = await import("../js_bindings/vision/index.js"), W = await import("../js_bindings/src/index.js");
    const load = async (f) => new Uint8Array(readFileSync(f.startsWith("/") ? join(ROOT, f) : join(dir, f)));
    const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
    result = await measure({ V, W, load, frames, variant, wasmPaths: join(ROOT, "wasmrt/engines/dist/"),
      models: "/models", runs, ...(args.includes("--cpu") ? { clock: cpu } : {}) });
    result.host = `node ${process.version}`;
    result.clock = args.includes("--cpu") ? "process CPU time" : "wall clock";
  }
  console.log(`VISION_FRAME_MS ${JSON.stringify(result)}`);
}
