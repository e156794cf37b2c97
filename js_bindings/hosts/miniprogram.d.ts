// Types of wasmrt/hosts/miniprogram.js: host adapters for WeChat, Alipay and Douyin mini-programs.
import type { HostAdapter, Runtime } from "../src/index.js";

export type Platform = "wechat" | "alipay" | "douyin";
export const PLATFORMS: Record<Platform, { wasm: string; api: string }>;

/** XXWebAssembly: instantiate(path, imports) with a code package path only; no validate/compile. */
export interface MiniProgramWasm {
  instantiate(path: string | ArrayBuffer, imports: WebAssembly.Imports): Promise<WebAssembly.Instance | { instance: WebAssembly.Instance }>;
}
export interface FileSystemManager {
  readFile?(o: { filePath: string; encoding?: string; success?(res: { data: ArrayBuffer }): void; fail?(e: { errMsg: string }): void }): void;
  readFileSync?(filePath: string, encoding?: string): ArrayBuffer | string;
}
export interface MiniProgramHostOptions {
  platform?: Platform;
  wasm?: MiniProgramWasm;
  fs?: FileSystemManager | null;
  /** The platform's API object (wx, my, tt; default: the global one): its getStorageSync/setStorageSync keep the
   * measured algorithm choices of load({choose: "measure"}). */
  api?: { getStorageSync(key: any): any; setStorageSync(key: any, data?: any): void };
  name?: string;
  /** After a failed path instantiate, instantiate bytes (default: Alipay, whose typings declare bytes). */
  bytesFallback?: boolean;
  /** Bytes of the .wasm files by path, for the bytes fallback when the Worker has no file-system manager. */
  wasmBytes?: Record<string, ArrayBuffer>;
}
export interface InitMiniProgramOptions extends MiniProgramHostOptions {
  host?: HostAdapter;
  /** Code package folder of wasmrt-simd.wasm and wasmrt-scalar.wasm (default "/wasm"; outside the worker folder). */
  wasmDir?: string;
  /** Use the brotli files (.wasm.br; WeChat base library 2.14+). */
  brotli?: boolean;
  /** Tried in order (default ["simd", "scalar"]). */
  variants?: ("simd" | "scalar")[];
}
export function detectPlatform(g?: object): Platform | null;
export function miniProgramHost(options?: MiniProgramHostOptions): HostAdapter;
export function initMiniProgram(options?: InitMiniProgramOptions): Promise<Runtime>;
