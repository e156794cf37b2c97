// An emulated WeChat mini-program (tests/js/miniprogram_emulator.mjs) whose Worker serves wasmrt's worker protocol
// (hosts/miniprogram-worker.js): the app folder made from this checkout, the page side connected with initWorker.
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { initWorker } from "../../js_bindings/src/worker-client.js";
import { MiniProgram } from "./miniprogram_emulator.mjs";

/** {rt, close()}: rt the WorkerRuntime of the mini-program Worker (SIMD128 and scalar modules in its package). */
export async function miniProgramWorker(root) {
  const app = mkdtempSync(join(tmpdir(), "wasmrt-mp-worker-"));
  let mp = null;
  try {
    writeFileSync(join(app, "app.json"), JSON.stringify({ pages: [], workers: "workers" }));
    cpSync(join(root, "js_bindings/src"), join(app, "lib/src"), { recursive: true });
    cpSync(join(root, "js_bindings/hosts"), join(app, "lib/hosts"), { recursive: true });
    mkdirSync(join(app, "wasm"));
    for (const v of ["simd", "scalar"]) cpSync(join(root, `js_bindings/dist/wasmrt-${v}.wasm`), join(app, `wasm/wasmrt-${v}.wasm`));
    mkdirSync(join(app, "workers/wasmrt"), { recursive: true });
    writeFileSync(join(app, "workers/wasmrt/index.js"), 'import { serveMiniProgram } from "../../lib/hosts/miniprogram-worker.js";\n'
      + 'serveMiniProgram({ platform: "wechat" });\n');
    writeFileSync(join(app, "package.json"), JSON.stringify({ type: "module" }));
    mp = new MiniProgram({ platform: "wechat", root: app });
    const rt = await initWorker({ port: mp.api.createWorker("workers/wasmrt/index.js"), wasmDir: "/wasm" });
    return { rt, close() { rt.terminate(); mp.close(); rmSync(app, { recursive: true, force: true }); } };
  } catch (e) {
    mp?.close();
    rmSync(app, { recursive: true, force: true });
    throw e;
  }
}
