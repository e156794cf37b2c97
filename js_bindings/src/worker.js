// The worker side of wasmrt/worker in a module Web Worker (self) or a Node worker_threads Worker (parentPort): the
// protocol is ./worker-serve.js; outputs travel back transferred.

import { init } from "./index.js";
import { serve } from "./worker-serve.js";

if (typeof WorkerGlobalScope !== "undefined" && self instanceof WorkerGlobalScope) {
  serve({ onMessage: (fn) => { self.onmessage = (e) => fn(e.data); }, post: (m, t) => self.postMessage(m, t) }, init);
} else {
  const { parentPort } = await import(/* webpackIgnore: true */ "node:worker_threads");
  if (!parentPort) throw new Error("wasmrt's worker.js must run in a Worker");
  serve({ onMessage: (fn) => parentPort.on("message", fn), post: (m, t) => parentPort.postMessage(m, t) }, init);
}
