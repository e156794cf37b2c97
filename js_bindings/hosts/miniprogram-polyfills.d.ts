// Side effects only: TextDecoder (UTF-8) and WebAssembly.RuntimeError where the mini-program host lacks them.
export {};
