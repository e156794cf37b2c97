// One thread of a threaded wasmrt runtime (init({threads})): a Worker (page or Node worker_threads) that
// instantiates the engine module on the runtime's shared memory, takes its own stack, says it is ready and then
// runs parallel regions forever inside wrt_worker_run (the runtime terminates it with close()).

function start({ module, memory, stackTop }, post) {
  const instance = new WebAssembly.Instance(module, { env: { memory } });
  instance.exports.__stack_pointer.value = stackTop; // the main thread's stack is another part of the memory
  post({ ready: true });
  instance.exports.wrt_worker_run(); // never returns
}

if (typeof self !== "undefined" && typeof self.postMessage === "function" && typeof window === "undefined") {
  self.onmessage = (e) => start(e.data, (m) => self.postMessage(m));
} else {
  const { parentPort } = await import(/* webpackIgnore: true */ "node:worker_threads");
  parentPort.once("message", (msg) => start(msg, (m) => parentPort.postMessage(m)));
}
