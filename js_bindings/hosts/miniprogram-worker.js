// wasmrt's worker protocol in a mini-program Worker, for the page's initWorker({port: wx.createWorker(path)})
// (src/worker-client.js): the same load / run / trainer calls as a Web Worker, on the mini-program engine.
//   // workers/wasmrt/index.js (the Worker script; the .wasm files outside the workers folder)
//   import { serveMiniProgram } from "wasmrt/hosts/miniprogram-worker.js";
//   serveMiniProgram({ platform: "wechat" });
//   // the page
//   const rt = await initWorker({ port: wx.createWorker("workers/wasmrt/index.js"), wasmDir: "/wasm" });

import "./miniprogram-polyfills.js";
import { initMiniProgram } from "./miniprogram.js";
import { serve } from "../src/worker-serve.js";

/** Answer the page's wasmrt calls in this Worker. options: those of initMiniProgram (platform, wasm, fs,
 * bytesFallback), which the page's init options (wasmDir, brotli, variants, wasmBytes) complete; worker: the
 * Worker's global (default: globalThis.worker). */
export function serveMiniProgram(options = {}) {
  const w = options.worker ?? globalThis.worker;
  if (!w || typeof w.onMessage !== "function") throw new Error("serveMiniProgram: not in a mini-program Worker");
  const { worker: _, ...base } = options;
  serve({ onMessage: (fn) => w.onMessage(fn), post: (m) => w.postMessage(m) },
    (initOptions) => initMiniProgram({ ...base, ...initOptions }));
}
