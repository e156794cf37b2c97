// Host adapters: the only code that knows how bytes are fetched and wasm is instantiated on a platform.
// An adapter is a plain object:
//   name                                  "web" | "node" | anything a custom host calls itself
//   validate(bytes) -> boolean | undefined  WebAssembly.validate, or undefined when the host cannot tell
//   instantiate(source, imports) -> Promise<WebAssembly.Instance>   source: URL string, URL, path or bytes
//   readBytes(source) -> Promise<Uint8Array>   a model file by URL or path
//   storage (optional)                    {get(key) -> Promise<string | null>, set(key, text) -> Promise<void>}: where
//                                         load({choose: "measure"}) keeps measured choices (none: measured each load)
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

const CACHE_NAME = "wasmrt-choices";

/** Cache Storage where the page has it (secure contexts), else IndexedDB, else nothing. */
const webStorage = {
  async get(key) {
    if (globalThis.caches) {
      const res = await (await caches.open(CACHE_NAME)).match(`/${key}`);
      return res ? res.text() : null;
    }
    return idb("readonly", (s) => s.get(key));
  },
  async set(key, text) {
    if (globalThis.caches) {
      await (await caches.open(CACHE_NAME)).put(`/${key}`, new Response(text));
      return;
    }
    await idb("readwrite", (s) => s.put(text, key));
  },
};

function idb(mode, op) {
  if (!globalThis.indexedDB) return Promise.resolve(null);
  return new Promise((resolve, reject) => {
    const open = indexedDB.open(CACHE_NAME, 1);
    open.onupgradeneeded = () => open.result.createObjectStore("choices");
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
      const req = op(open.result.transaction("choices", mode).objectStore("choices"));
      req.onsuccess = () => { open.result.close(); resolve(typeof req.result === "string" ? req.result : null); };
      req.onerror = () => { open.result.close(); reject(req.error); };
    };
  });
}

/** Node: a file per key in $WASMRT_CACHE_DIR, else $XDG_CACHE_HOME/wasmrt, else ~/.cache/wasmrt (choices/). */
const nodeStorage = {
  async dir() {
    const path = await import(/* webpackIgnore: true */ "node:path");
    const os = await import(/* webpackIgnore: true */ "node:os");
    const env = process.env;
    const base = env.WASMRT_CACHE_DIR || path.join(env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache"), "wasmrt");
    return path.join(base, "choices");
  },
  async get(key) {
    const fs = await import(/* webpackIgnore: true */ "node:fs/promises");
    const file = `${await this.dir()}/${key}.json`;
    try {
      if ((await fs.stat(file)).size > 4 << 20) return null;
      return await fs.readFile(file, "utf8");
    } catch {
      return null;
    }
  },
  async set(key, text) {
    const fs = await import(/* webpackIgnore: true */ "node:fs/promises");
    const dir = await this.dir();
    await fs.mkdir(dir, { recursive: true });
    const tmp = `${dir}/${key}.${process.pid}.tmp`;
    await fs.writeFile(tmp, text);
    await fs.rename(tmp, `${dir}/${key}.json`);
  },
};

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
  storage: webStorage,
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
  storage: nodeStorage,
};

export function defaultHost() {
  return isNode ? nodeHost : webHost;
}

export { asBytes };
