// Compiled with `tsc --noEmit` by tests/test_js_node.py: the README's usage must type-check against the .d.ts files.
import * as wasmrt from "wasmrt";
import { initWorker, type WorkerChainTrainer } from "wasmrt/worker";
import { serveMiniProgram } from "wasmrt/hosts/miniprogram-worker";

async function main(img: HTMLImageElement): Promise<string> {
  const rt: wasmrt.Runtime = await wasmrt.init({ variant: "auto", wasmPaths: "/static/wasm/" });
  const why: string = rt.reason;
  const v: wasmrt.Variant = rt.variant;
  const model = await rt.load("models/efficientnet_lite0.wrt");
  const shapes: readonly number[][] = model.inputs.map((t) => [...t.shape]);
  const x = await wasmrt.image.toTensor(img, model, { input: 0 });
  const out = await model.run({ input: x });
  const out2 = await model.run({ input: { data: new Float32Array(3 * 224 * 224), shape: [1, 3, 224, 224] } });
  const logits = out.logits.data as Float32Array;
  const g: wasmrt.Geometry | undefined = x.geometry;
  const plan: wasmrt.PlanEntry[] = model.plan();
  const chosen: string[] = plan.filter((r) => r.chosen >= 0).map((r) => `${r.name}: ${r.candidates[r.chosen]}`);
  const by: "rules" | "deterministic" | "measured" | "cache" = model.chosenBy;
  const measured = await rt.load("models/mobilenet_v2.wrt", { choose: "measure" });
  const ms: (number | null)[] | undefined = measured.plan()[0]?.timesMs?.slice();
  model.release();
  try {
    await rt.load(new Uint8Array(8));
  } catch (e) {
    if (e instanceof wasmrt.ModelFormatError) return e.message;
  }
  const w = await initWorker({ variant: "simd" });
  const wm = await w.load(new Blob([]), { conv: "igemm" });
  const direct = rt.loadBytes(new Uint8Array(8), { conv: "wino4", sparse: "auto" });
  direct.release();
  const wo: wasmrt.Outputs = await wm.run(new Float32Array(4), { transfer: true });
  await wm.release();
  w.terminate();
  const host: wasmrt.HostAdapter = {
    name: "wx", features: { simd: true },
    instantiate: async (src, imports) => (await WebAssembly.instantiate(new Uint8Array(0), imports)).instance,
    readBytes: async () => new Uint8Array(0),
    storage: { get: async (key: string) => localStorage.getItem(key), set: async (key, text) => localStorage.setItem(key, text) },
  };
  await wasmrt.init({ host, wasmPaths: { simd: "/wasm/wasmrt-simd.wasm" } });
  return `${why} ${v} ${shapes} ${logits[0]} ${g?.srcW} ${out2} ${wo}`;
}
// The WebGPU backend (README: init({backend})).
async function gpuMain(): Promise<string> {
  const gpu: wasmrt.WebGPURuntime = await wasmrt.init({ backend: "webgpu" });
  const gm = await gpu.load("models/selfie_segmentation.wrt");
  const gout: Record<string, wasmrt.Tensor> = await gm.run({ input_1: new Float32Array(256 * 256 * 3) });
  const kept: Record<string, wasmrt.GpuTensor> = await gm.run(new Float32Array(256 * 256 * 3), { outputs: "gpu" });
  const first = Object.values(kept)[0];
  const back: wasmrt.Tensor = await first.read();
  await gm.run({ input_1: first });
  first.destroy();
  const fb = await gpu.load("models/ppocr_rec.wrt", { fallback: "wasm" });
  const crossing: string[] = fb.fallback.flatMap((s) => [...s.toWasm, ...s.toGpu]);
  const onWasm: string[] = fb.fallback.flatMap((s) => s.ops.map((o) => `${o.index} ${o.type} ${o.name}: ${o.reason}`));
  fb.release();
  const picked = await wasmrt.init({ backend: "auto" });
  const which: "wasm" | "auto" = picked.backend;
  if (picked.backend === "auto") {
    const chosen = await picked.load("models/face_detector.wrt");
    const why: string = `${chosen.choice.backend}: ${chosen.choice.reason} ${chosen.choice.ms.wasm ?? ""}`;
    chosen.release();
    const onGpu: wasmrt.WebGPURuntime = picked.webgpu;
    return `${why} ${onGpu.adapter}`;
  }
  gm.release();
  return `${which} ${gpu.reason} ${gm.dispatches} ${Object.keys(gout)} ${back.shape} ${crossing} ${onWasm}`;
}
// float16 models (docs/js-api.md "float16 models"): bits on any host, a Float16Array where there is one.
async function float16Main(model: wasmrt.Model): Promise<number> {
  const bits: Uint16Array = wasmrt.toFloat16Bits([0.5, -1, 2]);
  const out = await model.run({ x: new wasmrt.Tensor("float16", bits, [1, 3]) });
  const values: Float32Array = wasmrt.fromFloat16Bits(out.y.data as Uint16Array);
  return values[0];
}
// A new head trained in the page (docs/training.md): labels by name, the tuned model reloaded.
async function newHeadMain(rt: wasmrt.Runtime, photos: Float32Array[]): Promise<string[]> {
  const model = await rt.load("models/efficientnet_lite0.wrt", { trainable: true });
  const t = await model.trainer({ head: { classes: ["mug", "plant", "lamp"], seed: 1 }, train: "head" });
  const { loss } = await t.step({ input: photos, label: ["mug", 2, "lamp"] });
  await t.fit([{ input: photos[0], label: "plant" }], { epochs: 2, onProgress: ({ epoch }) => epoch });
  const tuned = await rt.load(t.export());
  return [...tuned.labels, ...t.labels, String(loss + t.classes)];
}
// The same trainer through a worker: a Web Worker, or a mini-program Worker serving the protocol.
async function workerHeadMain(photos: Float32Array[], mpWorker: { postMessage(m: any): void;
  onMessage(fn: (m: any) => void): void }): Promise<number> {
  const w = await initWorker({ port: mpWorker, wasmDir: "/wasm" });
  const model = await w.load("models/efficientnet_lite0.wrt", { trainable: true });
  const t = await model.trainer({ head: { classes: ["mug", "plant"] } });
  const losses: number[] = await t.fit([{ input: photos, label: ["mug", "plant"] }], { epochs: 3 });
  const bytes: Uint8Array = await t.export();
  const { weight } = await t.weights;
  await t.release();
  serveMiniProgram({ platform: "wechat" });
  return losses[0] + bytes.length + weight[0] + t.featureRuns;
}
// Several layers trained in a worker: the same ChainTrainer calls, answered with promises.
async function workerChainMain(x: Float32Array[], labels: number[]): Promise<number> {
  const w = await initWorker({ variant: "simd" });
  const model = await w.load("digits.wrt", { trainable: true });
  const t: WorkerChainTrainer = await model.trainer({ train: "last:2", optimizer: "sgd", lr: 0.05 });
  await t.fit([{ input: x, label: labels }], { epochs: 2, onProgress: ({ step, loss }) => step + loss });
  const logits: Float32Array[] = await t.predict(x);
  const weights: Record<string, Float32Array> = await t.weights;
  const bytes: Uint8Array = await t.export();
  await t.release();
  return logits[0][0] + Object.keys(weights).length + bytes.length + t.featureRuns + t.labels.length;
}
// Training several layers (docs/training.md "On the engines"): train "all" / "last:N" gives a ChainTrainer.
async function trainMain(model: wasmrt.Model, x: Float32Array[], labels: number[]): Promise<Uint8Array> {
  const t: wasmrt.ChainTrainer = await model.trainer({ train: "last:2", optimizer: "adam", lr: 0.003 });
  const losses: number[] = await t.fit([{ input: x, label: labels }], { epochs: 2 });
  const logits: Float32Array[] = t.predict(x);
  const w: Float32Array | undefined = t.weights["fc0.weight"];
  const head: wasmrt.Trainer = await model.trainer({ train: "head" });
  const { loss } = await head.step({ input: x[0], label: 0 });
  t.release();
  return losses.length + logits.length + (w?.length ?? 0) + loss > 0 ? t.export() : head.export();
}
export { float16Main, gpuMain, main, newHeadMain, trainMain, workerChainMain, workerHeadMain };
