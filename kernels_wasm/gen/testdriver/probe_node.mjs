// Times drv_run of the kernel driver in V8: node probe_node.mjs driver.wasm image.bin cmd_off ncmd runs
// Prints one line per run: milliseconds.
import { readFileSync } from "node:fs";

const [wasmPath, imagePath, cmdOff, ncmd, runs] = process.argv.slice(2);
const { instance } = await WebAssembly.instantiate(readFileSync(wasmPath), {});
const ex = instance.exports;
const image = readFileSync(imagePath);
const base = ex.drv_base();
new Uint8Array(ex.memory.buffer, base, image.length).set(image);
for (let i = 0; i < Number(runs); i++) {
  const t0 = performance.now();
  const status = ex.drv_run(Number(cmdOff), Number(ncmd));
  const t1 = performance.now();
  if (status !== 0) throw new Error(`drv_run failed: ${status}`);
  console.log((t1 - t0).toFixed(3));
}
