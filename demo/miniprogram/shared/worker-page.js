// What the mini-programs' camera pages (try-on, background, teach) share: the Worker they start with their models,
// the type="2d" canvas they draw on and the camera whose frames they take, and the page lifecycle that starts and
// stops them. Each page keeps its own start() (which models, what it shows once ready) and onWorkerMessage, which
// hands "ready" to onReadyMsg and an error before the canvas exists to onInitError.
import { MODELS } from "./models.js";

const WORKER = "workers/facemesh/index.js";

/** onReady/onUnload of a page whose start() opens the Worker and the camera: spread into the page object. */
export const workerPageLifecycle = Object.freeze({
  onReady() {
    this.ready = this.start().catch((e) => this.setData({ status: `error: ${e.message}` }));
  },

  onUnload() {
    this.listener?.stop?.();
    this.worker?.terminate();
  },
});

/** Start the page's Worker with `init` (its models and wasm bytes) and the wasm folder; resolves to its "ready" message. */
export function openWorker(page, api, init) {
  page.worker = api.createWorker(WORKER);
  page.worker.onMessage((msg) => page.onWorkerMessage(msg));
  const ready = new Promise((resolve, reject) => { page.onReadyMsg = resolve; page.onInitError = reject; });
  page.worker.postMessage({ type: "init", wasmDir: MODELS.wasmDir, brotli: MODELS.brotli, ...init });
  return ready;
}

/** The page's #out canvas and its 2d context, then the camera's frames into page.onCameraFrame. */
export async function openCamera(page, api) {
  page.canvas = await new Promise((resolve) => api.createSelectorQuery().select("#out").node().exec((res) => resolve(res[0].node)));
  page.ctx = page.canvas.getContext("2d");
  page.listener = api.createCameraContext().onCameraFrame((frame) => page.onCameraFrame(frame));
  page.listener.start();
}
