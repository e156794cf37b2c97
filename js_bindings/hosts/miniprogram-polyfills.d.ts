// Side effects only: TextDecoder / TextEncoder (UTF-8) and WebAssembly.RuntimeError where the mini-program host lacks
// them.
export {};
