// Types of wasmrt/hosts/miniprogram-worker.js: wasmrt's worker protocol served in a mini-program Worker.
import type { MiniProgramHostOptions } from "./miniprogram.js";

export interface ServeMiniProgramOptions extends MiniProgramHostOptions {
  /** The Worker's global (default: globalThis.worker). */
  worker?: { onMessage(listener: (message: any) => void): void; postMessage(message: any): void };
}

/** Answer the page's initWorker({port}) calls (load, run, trainer) in this mini-program Worker. */
export function serveMiniProgram(options?: ServeMiniProgramOptions): void;
