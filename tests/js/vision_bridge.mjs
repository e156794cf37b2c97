// A runtime-like object whose models run in python_ref through tests/js/vision_bridge.py (see its docstring).
// Same shape as wasmrt's Runtime for FaceMesh: load(path) -> {run(feeds) -> {name: {data, shape}}, release()}.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

export function pythonRuntime(python = process.env.WASMRT_PYTHON ?? "python3") {
  const script = fileURLToPath(new URL("./vision_bridge.py", import.meta.url));
  const proc = spawn(python, [script], { stdio: ["pipe", "pipe", "inherit"] });
  let buf = Buffer.alloc(0);
  const waiting = []; // resolvers, in request order
  let need = null; // {header, bytes} of the answer being read
  proc.stdout.on("data", (chunk) => {
    buf = Buffer.concat([buf, chunk]);
    for (;;) {
      if (!need) {
        const nl = buf.indexOf(10);
        if (nl < 0) return;
        const header = JSON.parse(buf.subarray(0, nl).toString());
        buf = buf.subarray(nl + 1);
        const bytes = header.outputs ? Object.values(header.outputs).reduce((n, s) => n + 4 * s.reduce((a, b) => a * b, 1), 0) : 0;
        need = { header, bytes };
      }
      if (buf.length < need.bytes) return;
      const body = Buffer.from(buf.subarray(0, need.bytes));
      buf = buf.subarray(need.bytes);
      const { header } = need;
      need = null;
      const { resolve, reject } = waiting.shift();
      if (header.error) { reject(new Error(header.error)); continue; }
      const out = {};
      let off = 0;
      for (const [name, shape] of Object.entries(header.outputs)) {
        const n = shape.reduce((a, b) => a * b, 1);
        out[name] = { data: new Float32Array(body.buffer.slice(body.byteOffset + off, body.byteOffset + off + 4 * n)), shape };
        off += 4 * n;
      }
      resolve(out);
    }
  });
  const call = (model, feeds) => new Promise((resolve, reject) => {
    const inputs = {}, parts = [];
    for (const [name, v] of Object.entries(feeds)) {
      inputs[name] = v.shape;
      const f = Float32Array.from(v.data);
      parts.push(Buffer.from(f.buffer));
    }
    waiting.push({ resolve, reject });
    proc.stdin.write(JSON.stringify({ model, inputs }) + "\n");
    for (const p of parts) proc.stdin.write(p);
  });
  return {
    host: "python_ref bridge",
    async load(source) {
      const model = source instanceof URL ? fileURLToPath(source) : String(source);
      return { run: (feeds) => call(model, feeds), release() {} };
    },
    close() { proc.stdin.end(); },
  };
}
