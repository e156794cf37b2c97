// Per-op timing for `wasmrt bench --profile`: node profile_runner.mjs JOB.json RESULT.json
// Each op is a one-op .wrt; inputs are set once and only the engine's wrt_run export is timed, so the numbers are
// the kernels' own time, comparable to the native side (which times wrt_run through the C API).
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [jobPath, resultPath] = process.argv.slice(2);
const job = JSON.parse(fs.readFileSync(jobPath, "utf8"));
const wasmrt = await import(pathToFileURL(job.wasmrt_module).href);
const result = {};
for (const variant of job.variants) {
  const rt = await wasmrt.init({ variant, wasmPaths: job.wasmrt_wasm_dir });
  const ex = rt._ex; // the engine's exports: timing wrt_run alone needs the raw call
  result[variant] = {};
  for (const op of job.ops) {
    const model = rt.loadBytes(fs.readFileSync(path.join(job.dir, op.model)));
    const feeds = {};
    model.inputs.forEach((spec, i) => {
      const b = fs.readFileSync(path.join(job.dir, op.inputs[i]));
      feeds[spec.name] = { data: new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4), shape: spec.shape };
    });
    model.runSync(feeds); // sets the inputs, warms up
    let t0 = performance.now();
    ex.wrt_run(model._h);
    const first = performance.now() - t0;
    const reps = Math.min(job.max_reps, Math.max(job.min_reps, Math.floor(job.target_ms / Math.max(first, 1e-3))));
    const times = [];
    for (let r = 0; r < reps; r++) {
      t0 = performance.now();
      ex.wrt_run(model._h);
      times.push(performance.now() - t0);
    }
    times.sort((a, b) => a - b);
    result[variant][op.index] = times[times.length >> 1];
    model.release();
  }
  process.stderr.write(`@progress ${JSON.stringify({ stage: "profile", variant })}\n`);
}
fs.writeFileSync(resultPath, JSON.stringify(result));
