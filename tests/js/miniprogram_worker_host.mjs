// The Worker side of the mini-program emulator (tests/js/miniprogram_emulator.mjs), in a worker_threads thread so
// that messages are copied by structured clone, as the hosts do. It installs what a mini-program Worker has
// (worker.onMessage/postMessage and XXWebAssembly with path-only instantiate), removes what it lacks
// (WebAssembly, TextDecoder, URL, fetch, performance, ...) and then loads the project's worker script.
import { existsSync, readFileSync } from "node:fs";
import { join, normalize } from "node:path";
import { pathToFileURL } from "node:url";
import { parentPort, workerData } from "node:worker_threads";
import { brotliDecompressSync } from "node:zlib";

const { root, entry, workerDir, wasmName, device } = workerData;
const RealWasm = WebAssembly;

// LEB128 reader over a wasm binary, enough to find v128 locals (what a SIMD-less engine cannot compile).
function usesSimd(bytes) {
  let p = 8;
  const u32 = () => { let r = 0, s = 0, b; do { b = bytes[p++]; r |= (b & 0x7f) << s; s += 7; } while (b & 0x80); return r >>> 0; };
  while (p < bytes.length) {
    const id = bytes[p++], size = u32(), end = p + size;
    if (id === 1) { // types: v128 in a signature
      for (let n = u32(), i = 0; i < n; i++) {
        p++; // 0x60
        for (let k = 0; k < 2; k++) for (let m = u32(), j = 0; j < m; j++) if (bytes[p++] === 0x7b) return true;
      }
    }
    if (id === 10) { // code: v128 locals
      for (let n = u32(), i = 0; i < n; i++) {
        const bodySize = u32(), bodyEnd = p + bodySize;
        for (let m = u32(), j = 0; j < m; j++) { u32(); if (bytes[p++] === 0x7b) return true; }
        p = bodyEnd;
      }
    }
    p = end;
  }
  return false;
}

function packagePath(path) {
  const rel = normalize(path.replace(/^\/+/, ""));
  if (rel.startsWith("..")) throw new Error(`${wasmName}.instantiate: ${path} is outside the code package`);
  return rel;
}

const wasmApi = {
  async instantiate(path, imports) {
    if (device.instantiate === "bytes") { // Alipay builds following the npm typings: bytes only
      if (!(path instanceof ArrayBuffer || ArrayBuffer.isView(path))) throw new TypeError(`${wasmName}.instantiate: expected an ArrayBuffer`);
      return RealWasm.instantiate(path, imports).then((r) => r.instance);
    }
    if (typeof path !== "string") throw new TypeError(`${wasmName}.instantiate: the first argument must be a path in the code package, got ${Object.prototype.toString.call(path)}`);
    if (/^[a-z][a-z0-9+.-]*:/i.test(path)) throw new Error(`${wasmName}.instantiate: ${path}: only code package paths are supported`);
    const rel = packagePath(path);
    if (!/\.wasm(\.br)?$/.test(rel)) throw new Error(`${wasmName}.instantiate: ${path} is not a .wasm or .wasm.br file`);
    if (rel.endsWith(".br") && !device.brotli) throw new Error(`${wasmName}.instantiate: .wasm.br needs a newer base library`);
    if (rel.startsWith(workerDir + "/")) throw new Error(`${wasmName}.instantiate: ${path}: the .wasm must not be in the worker folder`);
    const file = join(root, rel);
    if (!existsSync(file)) throw new Error(`${wasmName}.instantiate: ${path}: no such file in the code package`);
    let bytes = new Uint8Array(readFileSync(file));
    if (rel.endsWith(".br")) bytes = new Uint8Array(brotliDecompressSync(bytes));
    if (!device.simd && usesSimd(bytes)) throw new Error(`${wasmName}.instantiate: CompileError: invalid value type 'v128' (no SIMD on this device)`);
    const module = await RealWasm.compile(bytes);
    if (device.ios && RealWasm.Module.exports(module).some((e) => e.kind === "global")) {
      throw new Error(`${wasmName}.instantiate: exporting a Global is not supported on iOS`);
    }
    const instance = await RealWasm.instantiate(module, imports);
    return device.instantiateResult === "object" ? { instance, module } : instance;
  },
  Memory: RealWasm.Memory, Table: RealWasm.Table, Global: RealWasm.Global,
};
globalThis[wasmName] = wasmApi;

// Messages that arrive before the script registered its listener wait for it (the script loads asynchronously).
const listeners = [], early = [];
parentPort.on("message", (m) => { if (!listeners.length) early.push(m); for (const fn of listeners) fn(m); });
globalThis.worker = {
  onMessage(fn) { listeners.push(fn); for (const m of early.splice(0)) fn(m); },
  postMessage(m) { parentPort.postMessage(m); },
};

for (const k of ["WebAssembly", "TextDecoder", "TextEncoder", "URL", "URLSearchParams", "fetch", "performance",
  "structuredClone", "Blob", "navigator", "Request", "Response", "FinalizationRegistry", "OffscreenCanvas"]) {
  delete globalThis[k];
}
await import(pathToFileURL(join(root, entry)).href);
