// Host adapters: the only code that knows how bytes are fetched and wasm is instantiated on a platform.
// An adapter is a plain object:
//   name                                  "web" | "node" | anything a custom host calls itself
//   validate(bytes) -> boolean | undefined  WebAssembly.validate, or undefined when the host cannot tell
//   instantiate(source, imports) -> Promise<WebAssembly.Instance>   source: URL string, URL, path or bytes
//   readBytes(source) -> Promise<Uint8Array>   a model file by URL or path
// Mini-program hosts (WXWebAssembly.instantiate(path, imports), wx.getFileSystemManager().readFile) implement the
// same four members and are passed as init({host}).

import { WasmrtError } from "./errors.js";

const isNode = typeof process !== "undefined" && !!process.versions?.node && typeof window === "undefined";

function asBytes(x) {
  if (x instanceof Uint8Array) return x;
  if (ArrayBuffer.isView(x)) return new Uint8Array(x.buffer, x.byteOffset, x.byteLength);
  if (x instanceof ArrayBuffer || (typeof SharedArrayBuffer !== "undefined" && x instanceof SharedArrayBuffer)) {
    return new Uint8Array(x);
  }
  return null;
}

async function instantiateBytes(bytes, imports) {
  const { instance } = await WebAssembly.instantiate(bytes, imports);
  return instance;
}

async function fetchOk(url) {
  let res;
  try {
    res = await fetch(url);
  } catch (e) {
    throw new WasmrtError(`cannot fetch ${url}: ${e.message}`, { cause: e });
  }
  if (!res.ok) throw new WasmrtError(`cannot fetch ${url}: HTTP ${res.status} ${res.statusText}`.trim());
  return res;
}

/** Browsers, Web Workers, Deno: fetch + WebAssembly.instantiateStreaming. */
export const webHost = {
  name: "web",
  validate: (bytes) => WebAssembly.validate(bytes),
  async instantiate(source, imports) {
    const bytes = asBytes(source);
    if (bytes) return instantiateBytes(bytes, imports);
    const res = await fetchOk(String(source));
    // Streaming compiles while downloading, but needs the application/wasm MIME type: fall back to bytes.
    if (WebAssembly.instantiateStreaming && res.headers.get("content-type")?.startsWith("application/wasm")) {
      return (await WebAssembly.instantiateStreaming(res, imports)).instance;
    }
    return instantiateBytes(new Uint8Array(await res.arrayBuffer()), imports);
  },
  async readBytes(source) {
    return new Uint8Array(await (await fetchOk(String(source))).arrayBuffer());
  },
};

async function nodeRead(source) {
  const s = String(source);
  if (/^(https?|data|blob):/i.test(s)) return webHost.readBytes(s);
  // dynamic imports keep node: modules out of browser bundles
  const { readFile } = await import(/* webpackIgnore: true */ "node:fs/promises");
  let path = s;
  if (s.startsWith("file:")) path = (await import(/* webpackIgnore: true */ "node:url")).fileURLToPath(s);
  try {
    const buf = await readFile(path);
    return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
  } catch (e) {
    throw new WasmrtError(`cannot read ${path}: ${e.code === "ENOENT" ? "no such file" : e.message}`, { cause: e });
  }
}

/** Node 20+: files by path or file: URL, http(s) by fetch. */
export const nodeHost = {
  name: "node",
  validate: (bytes) => WebAssembly.validate(bytes),
  async instantiate(source, imports) {
    return instantiateBytes(asBytes(source) ?? (await nodeRead(source)), imports);
  },
  readBytes: nodeRead,
};

export function defaultHost() {
  return isNode ? nodeHost : webHost;
}

export { asBytes };
