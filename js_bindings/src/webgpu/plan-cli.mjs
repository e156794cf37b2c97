// The WebGPU plan for the Python engine (wasmrt/engines/webgpu_plan.py), from the one planner (plan.js, split.js):
//   node plan-cli.mjs LABEL < model.wrt
// writes one line of JSON {arenaBytes, flops, dispatches: [{kernel, groups, op, flops, uniform: [u32 words]}],
// wasmOps: [[op index, op type, why]], segments: [{first, end, wasm, toWasm, toGpu, outputs}]}, a newline, then the
// packed constants (float32, little-endian). Ops the GPU cannot run are listed, not refused: the caller decides.
//   node plan-cli.mjs --supported
// writes the JSON list of the op types that have WGSL kernels. An error: {"error": {name, message}} and exit code 1.

import { readFileSync } from "node:fs";
import { packParams, plan, SUPPORTED } from "./plan.js";
import { split } from "./split.js";
import { readWrt } from "../format/reader.js";

function main(args) {
  if (args[0] === "--supported") return [JSON.stringify(SUPPORTED)];
  const model = readWrt(new Uint8Array(readFileSync(0)));
  const p = plan(model, args[0] ?? "<model>", true);
  const head = {
    arenaBytes: p.arenaBytes, flops: p.flops,
    dispatches: p.dispatches.map((d) => ({
      kernel: d.kernel, groups: d.groups, op: d.op, flops: d.flops,
      uniform: Array.from(new Uint32Array(packParams(d.kernel, d.params).buffer)),
    })),
    wasmOps: [...p.wasmOps].map(([k, why]) => [k, model.ops[k].op, why]),
    segments: split(model, p.wasmOps),
  };
  return [JSON.stringify(head), new Uint8Array(p.constants.buffer, p.constants.byteOffset, p.constants.byteLength)];
}

try {
  const [head, constants] = main(process.argv.slice(2));
  process.stdout.write(`${head}\n`);
  if (constants) process.stdout.write(constants);
} catch (e) {
  process.stdout.write(`${JSON.stringify({ error: { name: e?.name ?? "Error", message: String(e?.message ?? e) } })}\n`);
  process.exitCode = 1;
}
