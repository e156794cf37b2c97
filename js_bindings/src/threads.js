// Threads for the engine: the shared memory, and the Workers that run parallel regions on it. Used by init() when
// it is asked for more than one thread; everything here falls back to one thread and says why.

const STACK_BYTES = 256 * 1024; // as the main thread's (-z stack-size in wasmrt/dev/build.py)
const MAX_PAGES = 32768; // 2 GiB: the threaded modules' declared maximum (THREADS_MAX_MEMORY)
const isNode = typeof process !== "undefined" && !!process.versions?.node && typeof window === "undefined";

/** Why threads cannot run here (null when they can), for the host and the chosen variant. */
export function threadsUnavailable(host, variant) {
  if (host.name !== "web" && host.name !== "node") return `the ${host.name} host has no shared memory`;
  if (variant === "scalar") return "the scalar build has no threaded variant";
  if (!isNode && globalThis.crossOriginIsolated !== true) {
    return "the page is not cross-origin isolated (serve it with Cross-Origin-Opener-Policy: same-origin and " +
      "Cross-Origin-Embedder-Policy: require-corp)";
  }
  if (typeof SharedArrayBuffer === "undefined") return "SharedArrayBuffer is not available";
  if (!isNode && typeof Worker === "undefined") return "this context cannot start Workers";
  return null;
}

/** The number of threads "auto" means here: the cores the host reports, at most 8. */
export function autoThreads() {
  const cores = isNode ? (globalThis.navigator?.hardwareConcurrency ?? 1) : (navigator.hardwareConcurrency ?? 1);
  return Math.max(1, Math.min(8, cores));
}

/** A shared memory for a threaded module. */
export function sharedMemory() {
  return new WebAssembly.Memory({ initial: 64, maximum: MAX_PAGES, shared: true });
}

async function spawn() {
  const url = new URL("./thread-worker.js", import.meta.url);
  if (isNode) {
    const { Worker } = await import(/* webpackIgnore: true */ "node:worker_threads");
    const w = new Worker(url);
    w.unref(); // a blocked engine thread must not keep Node alive
    return { post: (m) => w.postMessage(m), once: (fn) => w.once("message", fn), onError: (fn) => w.once("error", fn),
      terminate: () => w.terminate() };
  }
  const w = new Worker(url, { type: "module" });
  return {
    post: (m) => w.postMessage(m),
    once: (fn) => w.addEventListener("message", (e) => fn(e.data), { once: true }),
    onError: (fn) => w.addEventListener("error", (e) => fn(new Error(e.message || `cannot start ${url}`)), { once: true }),
    terminate: () => w.terminate(),
  };
}

/** Start n - 1 engine threads for `instance` (its module and shared memory); resolves to their handles. */
export async function startThreads(module, memory, exports, n) {
  const threads = [];
  for (let i = 1; i < n; i++) {
    const stack = exports.wrt_alloc(STACK_BYTES) >>> 0;
    if (!stack) break;
    const t = await spawn();
    const ready = new Promise((resolve, reject) => {
      t.once(resolve);
      t.onError(reject);
    });
    t.post({ module, memory, stackTop: stack + STACK_BYTES });
    try {
      await ready;
    } catch (e) {
      t.terminate();
      threads.forEach((w) => w.terminate());
      throw e;
    }
    threads.push(t);
  }
  return threads;
}
