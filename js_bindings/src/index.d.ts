// Types of the wasmrt package (ES module "wasmrt").

export type Variant = "relaxed" | "simd" | "scalar";
export type DType = "float32" | "float16" | "int8" | "uint8" | "int32" | "int64" | "bool";
/** float16 data is a Float16Array where the host has one, else a Uint16Array of the IEEE binary16 bits. */
export type TypedArray =
  | Float32Array | Float16ArrayLike | Uint16Array | Int8Array | Uint8Array | Uint8ClampedArray | Int32Array
  | BigInt64Array;
/** A Float16Array (Node 24+, recent browsers), typed structurally: no TypeScript lib beyond es2022 is needed. */
export interface Float16ArrayLike extends ArrayBufferView {
  readonly length: number;
  [index: number]: number;
  readonly [Symbol.toStringTag]: "Float16Array";
}

export class WasmrtError extends Error {}
/** The bytes are not a valid .wrt model. */
export class ModelFormatError extends WasmrtError {}
/** A valid model using an op/dtype/attribute this engine cannot run. */
export class UnsupportedOpError extends WasmrtError {}
/** Wrong input name, shape, dtype or data. */
export class InputError extends WasmrtError {}
/** The engine could not allocate memory, or the model needs more than its limit (load option maxMemory). */
export class OutOfMemoryError extends WasmrtError {}
/** A run would take more work than the model's limit (load option maxWork). */
export class ResourceLimitError extends WasmrtError {}
/** A training step's loss or gradient is not finite (lower the learning rate); the weights stay as before it. */
export class TrainingError extends WasmrtError {}
export { ERROR_CODES } from "./error_codes.js"; // generated from python_ref/errors.py

export interface Feature { available: boolean; reason: string }
export interface Features { scalar: Feature; simd: Feature; relaxed: Feature }

/** A platform adapter: how wasm is instantiated and files are read (browsers, Node, mini-programs). */
export interface HostAdapter {
  name: string;
  /** WebAssembly.validate, or undefined when the host cannot tell. */
  validate?(bytes: Uint8Array): boolean | undefined;
  /** Skip probing: what the host is known to support. */
  features?: { simd?: boolean; relaxed?: boolean };
  instantiate(source: string | URL | Uint8Array | ArrayBuffer, imports: WebAssembly.Imports): Promise<WebAssembly.Instance>;
  readBytes(source: string | URL): Promise<Uint8Array>;
  /** Where load({choose: "measure"}) keeps measured choices (absent: measured at every such load). */
  storage?: ChoiceStorage;
}

/** A key-value store of text (Cache Storage or IndexedDB in browsers, a file per key in Node, the mini-program's
 * storage). */
export interface ChoiceStorage {
  get(key: string): Promise<string | null>;
  set(key: string, text: string): Promise<void>;
}
export const webHost: HostAdapter;
export const nodeHost: HostAdapter;
export function defaultHost(): HostAdapter;

export type WasmSource = string | URL | Uint8Array | ArrayBuffer;
export interface InitOptions {
  /** "auto" (default) picks relaxed > simd > scalar by feature probes; naming one forces it (error if unavailable). */
  variant?: Variant | "auto";
  /** Folder (URL or path) holding wasmrt-{relaxed,simd,scalar}.wasm, or one source per variant. */
  wasmPaths?: string | URL | Partial<Record<Variant, WasmSource>>;
  /** The manifest (wasmrt-modules.json, parsed) beside modules built for given models by `wasmrt build --for`, whose
   * folder is wasmPaths: init() picks among the variants it lists (the others count as unavailable, its reason says
   * why) and Runtime.builtFor names the models. A model needing an op such a module lacks is refused at load with an
   * UnsupportedOpError naming the op and those models. */
  modules?: ModulesManifest;
  host?: HostAdapter;
  /** Threads a run of the wasm backend uses: 1 (default), a positive integer, or "auto" (the cores the host
   * reports, at most 8). More than one needs the threaded build (simd or relaxed; not scalar), shared memory and
   * Workers, which pages have only when cross-origin isolated; where threads cannot run the runtime runs on one and
   * its reason says why (Runtime.threads is the count it got). The results are the same bytes for any count. Not a
   * positive integer or "auto": a WasmrtError. */
  threads?: number | "auto";
  /** "wasm" (default); "webgpu": the WGSL kernels on navigator.gpu (an error says why when WebGPU is absent or
   * broken); "auto": where WebGPU works (it runs a test kernel), an AutoRuntime holding both, which keeps each model
   * on the one a short trial finds faster; else wasm (its reason then says why not WebGPU). Both backends implement
   * one contract (backend.d.ts). */
  backend?: "wasm" | "webgpu" | "auto";
}

/** wasmrt-modules.json: what `wasmrt build --for` built. */
export interface ModulesManifest {
  /** The model files the modules were built for. */
  readonly models: readonly string[];
  /** Op -> the dtype classes kept ("F32", "QS8", "OTHER", "F32_SPARSE"). */
  readonly ops: Readonly<Record<string, readonly string[]>>;
  /** The kernel families kept (kernels_wasm/gen/families.py). */
  readonly families: readonly string[];
  /** Variant ("relaxed", "simd", "scalar", "relaxed-mt", "simd-mt") -> its module file, size and SHA-256. */
  readonly modules: Readonly<Record<string, { readonly file: string; readonly bytes: number; readonly sha256: string }>>;
}

export interface TensorInfo {
  readonly name: string;
  /** The current shape (for an input sized at run time: the size the model is planned for now). */
  readonly shape: readonly number[];
  readonly dtype: DType;
  /** Inputs sized at run time (a model converted with --dynamic): [min, max] of each dimension. */
  readonly bounds?: readonly (readonly [number, number])[];
}

export interface PreprocessHints {
  layout: "NHWC" | "NCHW";
  color: "RGB" | "BGR";
  mean: number[];
  std: number[];
  resize: "stretch" | "crop" | "letterbox";
  cropFraction: number;
}

export interface Metadata {
  source: string;
  producer: string;
  /** Image preprocessing hints by input index. */
  preprocess: Record<number, PreprocessHints>;
  labels: string[];
  props: Record<string, string>;
}

/** Where an image landed in a tensor (image.toTensor): source box (image pixels) -> content box (tensor pixels). */
export interface Geometry {
  srcTop: number; srcLeft: number; srcH: number; srcW: number;
  dstTop: number; dstLeft: number; dstH: number; dstW: number;
  /** Tensor height and width. */
  outH: number; outW: number;
  imageWidth?: number; imageHeight?: number;
}

export class Tensor<T extends TypedArray = TypedArray> {
  constructor(data: T | ArrayLike<number>, shape: number[]);
  constructor(dtype: DType, data: T | ArrayLike<number>, shape: number[]);
  readonly dtype: DType;
  readonly data: T;
  readonly shape: number[];
  readonly size: number;
  /** Set by image.toTensor. */
  geometry?: Geometry;
}
export const DTYPES: readonly DType[];
/** The binary16 bits of numbers (round to nearest even, as numpy's astype(float16)): float16 data for any host. */
export function toFloat16Bits(values: ArrayLike<number> | Float16ArrayLike): Uint16Array;
/** The values of float16 data (binary16 bits in a Uint16Array, or a Float16Array) as a Float32Array. */
export function fromFloat16Bits(bits: Uint16Array | Float16ArrayLike): Float32Array;

export type Feed = Tensor | TypedArray | number[] | { data: TypedArray | number[]; shape?: number[]; dtype?: DType };
export type Feeds = Record<string, Feed> | Tensor | TypedArray;
export type Outputs = Record<string, Tensor>;

export interface ModelLike {
  readonly inputs: readonly TensorInfo[];
  readonly outputs: readonly TensorInfo[];
  readonly metadata: Metadata;
  readonly labels: string[];
  readonly name: string;
}

export class Model implements ModelLike {
  readonly inputs: readonly TensorInfo[];
  readonly outputs: readonly TensorInfo[];
  readonly metadata: Metadata;
  readonly labels: string[];
  readonly name: string;
  readonly released: boolean;
  /** Run the model; outputs are copies, safe to keep. Throws InputError for bad feeds. An input sized at run time
   * may take any shape within its bounds: a new size re-plans the model first (see resize). */
  run(feeds: Feeds): Promise<Outputs>;
  runSync(feeds: Feeds): Outputs;
  /** Input `index`'s buffer in engine memory (its current shape; not float16): fill it and pass this very array to
   * run(), which then does not copy it. A run may use that memory for its own work: fill it before every run.
   * Valid until the engine memory grows (a load, a resize): take one per run. */
  inputView(index?: number): Float32Array | Int8Array | Uint8Array | Int32Array | BigInt64Array;
  /** Some input takes its size at run time. */
  readonly dynamic: boolean;
  /** New sizes for inputs sized at run time (others keep theirs): the engine re-plans (the weights stay). */
  resize(shapes: Record<string, number[]>): void;
  /** Step-by-step runs of a model whose state is an input and an output ({stateOutput: stateInput}; default: the
   * pairs stored in the model). */
  stream(pairs?: Record<string, string>): Stream;
  /** Free the model's engine memory; safe to call twice. */
  release(): void;
  /** Fine-tune the model's classifier (its last fully connected layer) on the engine: see Trainer. */
  trainer(options?: TrainerOptions): Promise<Trainer>;
  /** Train several layers on the engine (train: "all", "last:N" or a layer's name and those after it): see
   * ChainTrainer. */
  trainer(options: LayersTrainerOptions): Promise<ChainTrainer>;
  /** Per op in execution order: candidates, the chosen one, measured times (load option choose). */
  plan(): PlanEntry[];
  /** How the ops' algorithms were chosen: the rules, the deterministic choice, measured now, or from the cache. */
  readonly chosenBy: "rules" | "deterministic" | "measured" | "cache";
}

export class Stream {
  readonly model: Model;
  readonly pairs: Readonly<Record<string, string>>;
  /** The state fed to the next step, by input name (zeros after reset). */
  state: Record<string, Tensor>;
  reset(): void;
  /** One step: the other inputs in, every output back; the new state kept. */
  step(feeds: Feeds): Promise<Outputs>;
  stepSync(feeds: Feeds): Outputs;
}

export type ModelSource = string | URL | ArrayBuffer | ArrayBufferView | Blob;

export interface LoadOptions {
  name?: string;
  /** Bytes the model may claim in all (arena, packed weights, tables, scratch); 0 or absent: 1 GiB. */
  maxMemory?: number;
  /** Estimated work of one run, in multiply-adds; 0 or absent: 2^33. */
  maxWork?: number;
  /** Which kernels run block-sparse weights: "auto" (default: sparse from the build's measured break-even
   * sparsity, dense below it), "always" or "never". For benchmarks; results agree within float tolerance. */
  sparse?: "auto" | "always" | "never";
  /** How each layer's algorithm is chosen among its candidates (docs/choices.md): "rules" (default: the engine's
   * fixed rules), "measure" (timed on this device at the first load, cached by load() in the host's storage;
   * loadBytes measures without a cache) or "deterministic" (the dense path everywhere: the same bytes on any device
   * of a variant and any thread count). */
  choose?: "rules" | "measure" | "deterministic";
  /** Which algorithm runs dense 3x3 stride-1 convolutions: "auto" (default: the build's measured rules), "igemm"
   * (the direct convolution as an indirect GEMM), "wino2" or "wino4" (Winograd F(2x2, 3x3) / F(4x4, 3x3) wherever
   * it applies). For benchmarks; Winograd's results differ from the direct ones within docs/winograd.md's bound. */
  conv?: "auto" | "igemm" | "wino2" | "wino4";
  /** Keep a reference to the file's bytes for model.trainer() (its export() writes the tuned weights into a copy
   * of them); without it the bytes are not kept after the load. */
  trainable?: boolean;
}

/** One op of Model.plan(): its candidates (index 0: the dense path), the chosen index (-1: no alternatives) and,
 * when measured, each candidate's median time in ms (null where not timed). */
export interface PlanEntry {
  readonly op: number;
  readonly type: string;
  readonly name: string;
  readonly kernel: string;
  readonly candidates: readonly string[];
  readonly chosen: number;
  readonly timesMs: readonly (number | null)[] | null;
}

export class Runtime {
  readonly backend: "wasm";
  readonly variant: Variant;
  /** Why this variant was picked, and why better ones were not. */
  readonly reason: string;
  readonly features: Features;
  readonly host: string;
  /** Threads a run uses: what init({threads}) asked for, or fewer where threads cannot run (reason says why). */
  readonly threads: number;
  /** The models the module was built for (init({modules})), or null for the full module. */
  readonly builtFor: readonly string[] | null;
  /** Bytes of wasm linear memory (grows as needed, never shrinks; released models' memory is reused). */
  readonly memoryBytes: number;
  readonly target: string;
  /** Options: maxMemory (bytes the model may claim; default 1 GiB) and maxWork (estimated multiply-adds of one run;
   * default 2^33) are checked before anything large is allocated; 0 means the default. */
  load(source: ModelSource, options?: LoadOptions & { host?: HostAdapter }): Promise<Model>;
  loadBytes(bytes: ArrayBuffer | ArrayBufferView, options?: LoadOptions): Model;
  /** Stop the engine's Worker threads (a runtime with threads > 1 keeps them until then; with one thread there are
   * none). The runtime and its models are unusable afterwards: load and run throw a WasmrtError. */
  close(): void;
}

/** A tensor kept in GPU memory (run(feeds, {outputs: "gpu"}) on the WebGPU backend): feed it to another model of
 * the same runtime to chain models without a round trip through the CPU. */
export interface GpuTensor {
  readonly dtype: DType;
  readonly shape: readonly number[];
  /** The tensor's own GPUBuffer (STORAGE | COPY_SRC | COPY_DST); null once destroyed. */
  readonly buffer: unknown;
  /** Bytes on the GPU, and the element format there (the model's storage). */
  readonly byteLength: number;
  readonly storage: "f32" | "f16";
  readonly destroyed: boolean;
  /** Copy to the CPU. */
  read(): Promise<Tensor>;
  /** Free the buffer (models do not free the tensors they gave). */
  destroy(): void;
}

export type GpuFeeds = Feeds | Record<string, Feed | GpuTensor> | GpuTensor;

/** One run of consecutive ops on the wasm engine in a WebGPU model loaded with {fallback: "wasm"}: ops [first, end),
 * each with its index, type, name and why the GPU cannot run it, and the tensors crossing (names): read back from
 * the GPU before the segment (toWasm), uploaded to the GPU after it for later GPU ops (toGpu), graph outputs it
 * computes (outputs). */
export interface WebGPUFallbackSegment {
  readonly first: number;
  readonly end: number;
  readonly ops: readonly { index: number; type: string; name: string; reason: string }[];
  readonly toWasm: readonly string[];
  readonly toGpu: readonly string[];
  readonly outputs: readonly string[];
}

/** A model on the WebGPU backend: the same run() API; outputs are read back to the CPU, or kept on the GPU with
 * {outputs: "gpu"}. Inputs may be GpuTensors of the same runtime. */
export interface WebGPUModel extends ModelLike {
  readonly backend: "webgpu";
  /** How activations and weights are stored on the GPU (arithmetic is f32 either way). */
  readonly storage: "f32" | "f16";
  readonly released: boolean;
  /** Compute dispatches per run, and floating-point operations of its convolutions and dense layers. */
  readonly dispatches: number;
  readonly flops: number;
  /** The ops that run on the wasm engine (load option fallback: "wasm"), with the boundaries; empty when every op
   * runs on the GPU. */
  readonly fallback: readonly WebGPUFallbackSegment[];
  run(feeds: GpuFeeds, options?: { outputs?: "cpu" }): Promise<Outputs>;
  run(feeds: GpuFeeds, options: { outputs: "gpu" }): Promise<Record<string, GpuTensor>>;
  release(): void;
}

/** The WebGPU backend (init({backend: "webgpu"}), or "auto" where WebGPU works). An op without a WGSL kernel is an
 * UnsupportedOpError at load that names it, unless the load option fallback is "wasm": such ops then run on the
 * wasm engine (loaded beside, the same file), the tensors crossing copied at each boundary and listed in
 * model.fallback (graph inputs and outputs must then be float32). */
export interface WebGPURuntime {
  readonly backend: "webgpu";
  /** The adapter, and why WebGPU was picked. */
  readonly reason: string;
  readonly adapter: string;
  /** The host adapter's name (model files given as URLs or paths are read through it). */
  readonly host: string;
  /** storage "f16": activations and weights as f16 on the GPU (adapters with the shader-f16 feature; an error
   * says so otherwise), half the memory traffic, about 3 significant digits. */
  load(source: ModelSource, options?: { name?: string; host?: HostAdapter; storage?: "f32" | "f16";
    fallback?: "wasm" | null }): Promise<WebGPUModel>;
  loadBytes(bytes: Uint8Array, options?: { name?: string; storage?: "f32" | "f16"; fallback?: "wasm" | null }):
    Promise<WebGPUModel>;
}

/** Which backend init({backend: "auto"}) kept a model on, and why: the trial's median times (ms a run) or the
 * reason there was no trial (asked, remembered, WebGPU cannot run the model, the trial run failed). */
export interface BackendChoice {
  readonly backend: "wasm" | "webgpu";
  readonly reason: string;
  readonly ms: { readonly wasm?: number; readonly webgpu?: number };
}

/** init({backend: "auto"}) where WebGPU works: both runtimes; each load runs a short trial on zeros of the model's
 * inputs and keeps the model on the faster (remembered per file, adapter and variant; localStorage where present). */
export interface AutoRuntime {
  readonly backend: "auto";
  readonly reason: string;
  readonly host: string;
  readonly wasm: Runtime;
  readonly webgpu: WebGPURuntime;
  load(source: ModelSource, options?: LoadOptions & { host?: HostAdapter; backend?: "wasm" | "webgpu" }):
    Promise<(Model | WebGPUModel) & { readonly choice: BackendChoice }>;
  loadBytes(bytes: Uint8Array, options?: LoadOptions & { backend?: "wasm" | "webgpu" }):
    Promise<(Model | WebGPUModel) & { readonly choice: BackendChoice }>;
}

/** Instantiate the engine (one wasm memory; load any number of models into it), or the WebGPU backend. */
export function init(options: InitOptions & { backend: "webgpu" }): Promise<WebGPURuntime>;
export function init(options: InitOptions & { backend: "auto" }): Promise<Runtime | AutoRuntime>;
export function init(options?: InitOptions): Promise<Runtime>;
export function probe(host: HostAdapter): Features;
export function readMetadata(bytes: Uint8Array): Metadata;
export const VARIANTS: readonly Variant[];
/** A build's name for people: "relaxed SIMD", "SIMD128", "scalar (no SIMD)". */
export function describeVariant(variant: Variant): string;
export const version: string;

export namespace image {
  interface Pixels { data: ArrayLike<number> & ArrayBufferView; width: number; height: number; channels?: 3 | 4 }
  type ImageSource =
    | Pixels | ImageData | ImageBitmap | HTMLImageElement | HTMLVideoElement | HTMLCanvasElement | OffscreenCanvas
    | VideoFrame | Blob;
  interface ToTensorOptions { input?: string | number; preprocess?: PreprocessHints }
  /** Image -> float32 tensor for a model input, using the model's preprocessing hints (bit-exact with Python). */
  function toTensor(source: ImageSource, model: ModelLike, options?: ToTensorOptions): Promise<Tensor<Float32Array>>;
  function pixelsToTensor(pixels: Pixels, pre: PreprocessHints, shape: number[]): Tensor<Float32Array>;
  /** RGBA pixels of any image source (Blobs are decoded without colour management). */
  function getPixels(source: ImageSource): Promise<Pixels>;
  function plan(imageH: number, imageW: number, pre: PreprocessHints, outH: number, outW: number): Geometry;
  /** Tensor pixel coordinate -> image pixel coordinate. */
  function toSource(g: Geometry, x: number, y: number): [number, number];
}


/** A new classifier: replaces the model's last trainable layer (and what follows it) by a fully connected layer
 * with one output per class, on the features that layer read; the class names become the model's labels. */
export interface NewHead {
  /** At least two distinct class names. */
  classes: string[];
  /** Initial weights drawn as Python's wasmrt.train(head=..., seed=) draws them (numpy's default_rng). Default 0. */
  seed?: number;
  /** Or the initial weights given: [classes * features] (row-major [classes, features]) and [classes]. */
  weight?: ArrayLike<number>;
  bias?: ArrayLike<number>;
}

export interface TrainerOptions {
  /** What trains: "head" (the classifier; other layers run once per sample, their features cached). */
  train?: "head";
  /** Train a new classifier for these classes instead of the model's own. */
  head?: NewHead;
  /** "adam" (default, lr 0.001) or "sgd" (momentum, default lr 0.01). */
  optimizer?: "sgd" | "adam";
  lr?: number;
  momentum?: number;
  /** L2 regularisation added to the gradient (PyTorch's weight_decay). */
  weightDecay?: number;
}

export interface LayersTrainerOptions {
  /** "all" (every convolution and fully connected layer), "last:N" (the last N of them), or a layer's name (it and
   * the trainable layers after it). */
  train: "all" | `last:${number}` | (string & {});
  optimizer?: "sgd" | "adam";
  lr?: number;
  momentum?: number;
  weightDecay?: number;
}

export interface TrainBatch {
  /** One sample (the model input's size, float32) or one per sample. */
  input: Float32Array | Float32Array[];
  /** The class of each sample: its index, or its name (Trainer.labels). */
  label: number | string | (number | string)[];
}

/** fit's options: how many epochs (default 1), and a callback after every step. */
export interface FitOptions {
  epochs?: number;
  onProgress?: (p: { epoch: number; step: number; steps: number; loss: number }) => void;
}

/** Training on the engine, python_ref/train's rules (docs/training.md). */
export class Trainer {
  /** The number of classes. */
  readonly classes: number;
  /** Class names (a label may be given by name): the new head's classes, or the model's labels; else empty. */
  readonly labels: string[];
  readonly features: number;
  /** The loss of every step so far. */
  readonly history: number[];
  /** How many times the frozen layers ran (once per distinct sample: features are cached by sample). */
  readonly featureRuns: number;
  /** One step: softmax cross-entropy, backward, optimizer. InputError for a bad label, TrainingError for a loss
   * that is not finite (the weights stay as they were). */
  step(batch: TrainBatch): Promise<{ loss: number }>;
  /** Epochs over the batches; returns each epoch's mean loss. */
  fit(batches: Iterable<TrainBatch>, options?: FitOptions): Promise<number[]>;
  /** The frozen layers' output for one sample. */
  featuresOf(input: Float32Array): Float32Array;
  /** The tuned model's .wrt bytes (with a new head: the rewritten model, its labels the classes): runtime.load(tuned)
   * runs it on every engine. */
  export(): Uint8Array;
  readonly weights: { weight: Float32Array; bias: Float32Array | null };
}

/** Training several layers on the wasm engine (model.trainer({train: "all" | "last:N"})): fully connected layers,
 * convolutions (grouped and depthwise too), max and average pooling and the activations RELU, CLIP, SIGMOID, TANH,
 * HARD_SWISH between them; another op in the trained part is an UnsupportedOpError naming it. */
export class ChainTrainer {
  /** Outputs of the last trained layer (the logits). */
  readonly classes: number;
  /** Class names (a label may be given by name): the model's labels when it has one per class; else empty. */
  readonly labels: string[];
  /** Values per sample the first trained layer reads. */
  readonly features: number;
  readonly history: number[];
  /** How many times the frozen layers ran (once per distinct sample: features are cached by sample). */
  readonly featureRuns: number;
  step(batch: TrainBatch): Promise<{ loss: number }>;
  fit(batches: Iterable<TrainBatch>, options?: FitOptions): Promise<number[]>;
  /** The logits of each sample with the current weights. */
  predict(inputs: Float32Array | Float32Array[]): Float32Array[];
  /** The frozen layers' output for one sample (the sample itself for train: "all"). */
  featuresOf(input: Float32Array): Float32Array;
  /** The tuned model's .wrt bytes; a TrainingError when a trained value is no longer finite. */
  export(): Uint8Array;
  /** The trained tensors' current values by name (copies). */
  readonly weights: Record<string, Float32Array>;
  /** Give the module memory of the parameters and work buffers back. */
  release(): void;
}
