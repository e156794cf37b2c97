import type {
  Features, Feeds, InitOptions, LoadOptions, Metadata, ModelLike, ModelSource, Outputs, TensorInfo, Variant,
} from "./index.js";

export interface WorkerInitOptions extends Omit<InitOptions, "host"> {
  /** Where worker.js is served from (default: next to this module). */
  workerUrl?: string | URL;
}

export interface WorkerModel extends ModelLike {
  readonly inputs: readonly TensorInfo[];
  readonly outputs: readonly TensorInfo[];
  readonly metadata: Metadata;
  /** transfer: hand the inputs' ArrayBuffers to the worker instead of copying them (they become detached). */
  run(feeds: Feeds, options?: { transfer?: boolean }): Promise<Outputs>;
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
