import type {
  ChainTrainer, Features, Feeds, InitOptions, LayersTrainerOptions, LoadOptions, Metadata, ModelLike, ModelSource,
  Outputs, TensorInfo, Trainer, TrainerOptions, Variant,
} from "./index.js";

export interface WorkerInitOptions extends Omit<InitOptions, "host"> {
  /** Where worker.js is served from (default: next to this module). */
  workerUrl?: string | URL;
  /** A mini-program Worker (wx.createWorker(path)) whose script runs hosts/miniprogram-worker.js serveMiniProgram. */
  port?: { postMessage(message: any): void; onMessage(listener: (message: any) => void): void; terminate?(): void };
  /** With port: the code package folder of the .wasm files, as initMiniProgram takes it. */
  wasmDir?: string;
  brotli?: boolean;
  variants?: Variant[];
  wasmBytes?: Record<string, ArrayBuffer>;
}

/** Trainer's API in a worker: the same calls, answered there (each sample's features computed once there, so
 * featureRuns counts the frozen layers' runs in the worker; a sample's data crosses once, a copy transferred);
 * export and weights answer as promises. Errors keep their class (InputError, TrainingError, ...). */
export interface WorkerTrainer
  extends Pick<Trainer, "classes" | "labels" | "features" | "history" | "featureRuns" | "step" | "fit"> {
  export(): Promise<Uint8Array>;
  readonly weights: Promise<{ weight: Float32Array; bias: Float32Array | null }>;
  release(): Promise<void>;
}

/** ChainTrainer's API in a worker (train: "all" | "last:N" | a layer's name): the same calls, answered there by the
 * same trainer; export, weights and predict answer as promises; release() gives its engine memory back there. */
export interface WorkerChainTrainer
  extends Pick<ChainTrainer, "classes" | "labels" | "features" | "history" | "featureRuns" | "step" | "fit"> {
  /** The logits of each sample with the current weights. */
  predict(inputs: Float32Array | Float32Array[]): Promise<Float32Array[]>;
  export(): Promise<Uint8Array>;
  /** The trained tensors' current values by name (copies). */
  readonly weights: Promise<Record<string, Float32Array>>;
  release(): Promise<void>;
}

export interface WorkerModel extends ModelLike {
  readonly inputs: readonly TensorInfo[];
  readonly outputs: readonly TensorInfo[];
  readonly metadata: Metadata;
  /** transfer: hand the inputs' ArrayBuffers to the worker instead of copying them (they become detached). */
  run(feeds: Feeds, options?: { transfer?: boolean }): Promise<Outputs>;
  /** A trainer in the worker (the model loaded with {trainable: true}): of the classifier... */
  trainer(options?: TrainerOptions): Promise<WorkerTrainer>;
  /** ...or of several layers (train: "all" | "last:N" | a layer's name). */
  trainer(options: LayersTrainerOptions): Promise<WorkerChainTrainer>;
  release(): Promise<void>;
}

export interface WorkerRuntime {
  readonly variant: Variant;
  readonly reason: string;
  readonly features: Features;
  readonly host: string;
  load(source: ModelSource, options?: LoadOptions): Promise<WorkerModel>;
  stats(): Promise<{ memoryBytes: number; models: number }>;
  terminate(): void;
}

/** Start a Worker (Web Worker or worker_threads) running wasmrt and initialize it. */
export function initWorker(options?: WorkerInitOptions): Promise<WorkerRuntime>;
