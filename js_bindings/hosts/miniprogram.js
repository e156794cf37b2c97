// Host adapters for mini-programs: WeChat (WXWebAssembly, wx), Alipay (MYWebAssembly, my), Douyin (TTWebAssembly, tt).
// What differs from browsers (docs/miniprograms.md):
//   - instantiate(path, imports) takes a path inside the code package only (".wasm", or brotli ".wasm.br"):
//     no URL, no bytes (Alipay's typings declare bytes: tried after the path); resolves to an Instance or
//     {instance} depending on version: both are accepted.
//   - no validate/compile: the variant is picked by trying to instantiate SIMD, then scalar.
//   - files come from the file-system manager: readFile({filePath, success}) / readFileSync(path) -> ArrayBuffer.
//   - one Worker, no threads, no SharedArrayBuffer.
// Usage in a mini-program Worker (see demo/miniprogram):
//   import "wasmrt/hosts/miniprogram-polyfills.js";
//   const rt = await initMiniProgram({ platform: "wechat", wasmDir: "/wasm" });
//   const model = rt.loadBytes(arrayBufferFromThePage);

import { WasmrtError } from "../src/errors.js";
import { Runtime } from "../src/runtime.js";

/** Platform name -> names of its globals. */
export const PLATFORMS = {
  wechat: { wasm: "WXWebAssembly", api: "wx" },
  alipay: { wasm: "MYWebAssembly", api: "my" },
  douyin: { wasm: "TTWebAssembly", api: "tt" },
};

/** The platform whose WebAssembly stand-in exists here, or null. */
export function detectPlatform(g = globalThis) {
  for (const [name, { wasm }] of Object.entries(PLATFORMS)) if (typeof g[wasm] !== "undefined") return name;
  return null;
}

const isBytes = (x) => x instanceof ArrayBuffer || ArrayBuffer.isView(x);
const toArrayBuffer = (x) => (x instanceof ArrayBuffer ? x
  : x.buffer.slice(x.byteOffset, x.byteOffset + x.byteLength));
const instanceOf = (r) => (r && r.exports ? r : r?.instance);

function fsReadBytes(fs, path) {
  if (!fs) return Promise.reject(new WasmrtError(`cannot read ${path}: no file-system manager on this host`));
  return new Promise((resolve, reject) => {
    const fail = (e) => reject(new WasmrtError(`cannot read ${path}: ${e?.errMsg ?? e?.errorMessage ?? e?.message ?? e}`));
    if (typeof fs.readFile === "function") {
      fs.readFile({ filePath: path, success: (res) => resolve(new Uint8Array(res.data)), fail });
      return;
    }
    try { resolve(new Uint8Array(fs.readFileSync(path))); } catch (e) { fail(e); }
  });
}

/** The platform's key-value storage (getStorageSync, setStorageSync; Alipay's take {key, data}) for measured
 * choices; none without. */
function storageOf(api, alipay) {
  if (typeof api?.getStorageSync !== "function" || typeof api?.setStorageSync !== "function") return undefined;
  return {
    async get(key) {
      const v = alipay ? api.getStorageSync({ key }) : api.getStorageSync(key);
      const text = v && typeof v === "object" && "data" in v ? v.data : v;
      return typeof text === "string" && text ? text : null;
    },
    async set(key, text) {
      if (alipay) api.setStorageSync({ key, data: text });
      else api.setStorageSync(key, text);
    },
  };
}

/**
 * A wasmrt host adapter for a mini-program. options: platform ("wechat" | "alipay" | "douyin"), or wasm (the
 * XXWebAssembly object) and fs (a file-system manager); name; bytesFallback (default: Alipay) with wasmBytes
 * ({path: ArrayBuffer}, e.g. read by the page when the Worker has no file-system manager).
 */
export function miniProgramHost(options = {}) {
  const platform = options.platform ?? detectPlatform();
  const names = PLATFORMS[platform] ?? {};
  const wasm = options.wasm ?? globalThis[names.wasm];
  if (!wasm || typeof wasm.instantiate !== "function") {
    throw new WasmrtError(`no ${names.wasm ?? "mini-program WebAssembly"} here: a WeChat, Alipay or Douyin ` +
      "mini-program Worker is needed (WeChat base library 2.15+, Alipay 2.9.7+)");
  }
  const fs = options.fs ?? globalThis[names.api]?.getFileSystemManager?.();
  const bytesFallback = options.bytesFallback ?? platform === "alipay";
  return {
    name: options.name ?? platform ?? "miniprogram",
    // No validate on these hosts: report nothing, initMiniProgram tries instantiation instead.
    features: { relaxed: false },
    async instantiate(source, imports) {
      if (typeof source !== "string") {
        throw new WasmrtError(`${names.wasm}.instantiate takes a code package path (like "/wasm/wasmrt-simd.wasm"), ` +
          `not ${isBytes(source) ? "bytes" : source?.constructor?.name ?? typeof source}`);
      }
      if (/^[a-z][a-z0-9+.-]*:/i.test(source)) {
        throw new WasmrtError(`${names.wasm}.instantiate cannot load ${source}: only paths inside the code package`);
      }
      try {
        return instanceOf(await wasm.instantiate(source, imports));
      } catch (e) {
        if (!bytesFallback || source.endsWith(".br")) throw e;
        // Alipay builds whose instantiate only takes bytes (as its npm typings declare)
        const given = options.wasmBytes?.[source];
        const bytes = given ? new Uint8Array(given) : await fsReadBytes(fs, source);
        return instanceOf(await wasm.instantiate(toArrayBuffer(bytes), imports));
      }
    },
    readBytes: (source) => fsReadBytes(fs, String(source)),
    storage: storageOf(options.api ?? globalThis[names.api], platform === "alipay"),
  };
}

/**
 * Start the engine in a mini-program Worker: tries each variant (default SIMD, then scalar) from
 * `${wasmDir}/wasmrt-${variant}.wasm` (+ ".br" with brotli: true) and returns a wasmrt Runtime.
 * Options also go to miniProgramHost (platform, wasm, fs, wasmBytes, bytesFallback).
 */
export async function initMiniProgram(options = {}) {
  const host = options.host ?? miniProgramHost(options);
  const wasmDir = (options.wasmDir ?? "/wasm").replace(/\/$/, "");
  const variants = options.variants ?? ["simd", "scalar"];
  const imports = { env: {} }; // the engine is freestanding (as in index.js)
  const failed = [];
  for (const variant of variants) {
    const path = `${wasmDir}/wasmrt-${variant}.wasm${options.brotli ? ".br" : ""}`;
    let instance;
    try {
      instance = await host.instantiate(path, imports);
    } catch (e) {
      failed.push(`${variant}: ${e?.message ?? e}`);
      continue;
    }
    const features = {
      scalar: { available: true, reason: "plain wasm runs everywhere" },
      simd: variant === "simd" ? { available: true, reason: `${path} instantiated` }
        : { available: false, reason: failed.find((f) => f.startsWith("simd")) ?? "not tried" },
      relaxed: { available: false, reason: "not tried on mini-programs (no validate to probe it safely)" },
    };
    const reason = [`${variant}: instantiated ${path} on ${host.name}`, ...failed.map((f) => `no ${f}`)].join("; ");
    return new Runtime(instance, { variant, reason, features, host });
  }
  throw new WasmrtError(`cannot instantiate the engine on ${host.name}: ${failed.join("; ")}`);
}
