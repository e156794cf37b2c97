// The measurement of tests/js/load_memory.mjs, shared by Node and the page (no Node imports here).
// every variant; the threaded build with two threads (a Worker's stack comes on top of the model's memory)
export const CASES = [["scalar", 1], ["simd", 1], ["relaxed", 1], ["simd", 2]];

function fixedInput(n) {
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = ((i * 7919) % 255) / 127.5 - 1;
  return a;
}

// the outputs after the whole-file load, through the C API (the path every host used before)
function runWholeFile(ex, bytes) {
  const u32 = (p) => p >>> 0;
  const err = u32(ex.wrt_alloc(4)), ptr = u32(ex.wrt_alloc(bytes.length));
  new Uint8Array(ex.memory.buffer, ptr, bytes.length).set(bytes);
  const h = u32(ex.wrt_load_with_limits(ptr, bytes.length, 0, 0, err));
  ex.wrt_free(ptr);
  if (!h) throw new Error("the whole-file load failed");
  for (let i = 0; i < ex.wrt_num_inputs(h); i++) {
    const n = ex.wrt_tensor_bytes(h, 0, i) / 4;
    new Float32Array(ex.memory.buffer, u32(ex.wrt_input_ptr(h, i)), n).set(fixedInput(n));
  }
  if (ex.wrt_run(h)) throw new Error("run failed");
  const outs = [];
  for (let i = 0; i < ex.wrt_num_outputs(h); i++) {
    outs.push(new Uint8Array(ex.memory.buffer, u32(ex.wrt_output_ptr(h, i)), ex.wrt_tensor_bytes(h, 1, i)).slice());
  }
  return { outs, memory: ex.memory.buffer.byteLength, claimed: ex.wrt_memory_size(h) + ex.wrt_static_size() };
}

export async function measure(wasmrt, variant, threads, bytes) {
  const rt = await wasmrt.init({ variant, threads });
  const model = rt.loadBytes(bytes);
  const feeds = {};
  for (const spec of model.inputs) feeds[spec.name] = fixedInput(spec.shape.reduce((a, b) => a * b, 1));
  const out = model.runSync(feeds);
  const ex = rt._ex;
  const memory = ex.memory.buffer.byteLength, claimed = ex.wrt_memory_size(model._h) + ex.wrt_static_size();
  const outs = model.outputs.map((o) => new Uint8Array(out[o.name].data.buffer.slice(0)));
  model.release();
  rt.close?.();
  const rt0 = await wasmrt.init({ variant, threads });
  const whole = runWholeFile(rt0._ex, bytes);
  rt0.close?.();
  const same = outs.length === whole.outs.length && outs.every((o, i) => o.length === whole.outs[i].length
    && o.every((v, j) => v === whole.outs[i][j]));
  return { variant, threads: rt.threads, memory, claimed, ratio: memory / claimed,
    wholeFileRatio: whole.memory / whole.claimed, same };
}

