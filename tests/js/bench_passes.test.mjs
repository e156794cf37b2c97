// The wasm hosts' bench loop (wasmrt/bench/js/engines.mjs): each pass loads its engines afresh, the creation starting
// with another engine each pass (the one created first in a process runs slower: bench README), and every engine
// keeps one timed run per round of every pass.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { isAbsolute, join } from "node:path";
import { test } from "node:test";
import * as wasmrt from "wasmrt";
import { runJob } from "../../wasmrt/bench/js/engines.mjs";
import { FIXTURES, manifest, modelPath, variants } from "./helpers.mjs";

test("each bench pass creates its engines starting with another, and releases them", async () => {
  const name = Object.keys(manifest.models)[0];
  const model = manifest.models[name];
  const vs = variants().slice(0, 2);
  if (vs.length < 2) vs.push(vs[0]);
  const engines = vs.map((v, i) => ({ id: `e${i}-${v}`, kind: "wasmrt", variant: v, model: modelPath(name) }));
  const job = {
    engines, passes: 3, rounds: 2, warmup: 1, outputs: Object.keys(model.outputs),
    inputs: Object.entries(model.inputs).map(([k, e]) => ({ name: k, shape: e.shape, file: e.file, dtype: e.dtype })),
  };
  const readBytes = async (p) => new Uint8Array(readFileSync(isAbsolute(p) ? p : join(FIXTURES, p)));
  const loads = [];
  const results = await runJob(job, { wasmrt }, readBytes, (p) => p.stage === "load" && loads.push(p.engine));
  const [a, b] = engines.map((e) => e.id);
  assert.deepEqual(loads, [a, b, b, a, a, b]);
  for (const e of engines) {
    const r = results[e.id];
    assert.equal(r.error, undefined, r.error);
    assert.equal(r.times_ms.length, 6, "2 rounds x 3 passes");
    assert.ok(r.times_ms.every((t) => t > 0) && r.outputs.length === job.outputs.length);
  }
});
