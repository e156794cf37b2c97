// float16 models on Node through the npm package (run by tests/test_float16.py): node float16_node.mjs DIR.
// DIR holds model.wrt, one <input>.f16 file of binary16 bits per float16 input (int64 inputs as <input>.i64) and
// values.f32 (float32 numbers to round); it receives <output>.<variant>.f16 for every variant and rounded.f16.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as wasmrt from "wasmrt";

const dir = process.argv[2];
const report = { float16Array: typeof Float16Array === "function", variants: {} };
const bytes = readFileSync(join(dir, "model.wrt"));
const view = (b, T) => new T(b.buffer, b.byteOffset, b.byteLength / T.BYTES_PER_ELEMENT);
for (const variant of ["scalar", "simd", "relaxed"]) {
  let rt;
  try { rt = await wasmrt.init({ variant }); } catch { continue; } // relaxed needs Node 22+
  const model = rt.loadBytes(bytes);
  const feeds = {};
  for (const spec of model.inputs) {
    if (spec.dtype === "float16") {
      const bits = view(readFileSync(join(dir, `${spec.name}.f16`)), Uint16Array).slice();
      // on a host with Float16Array, feed one (its values are the bits' values); else the bits themselves
      const data = report.float16Array ? new Float16Array(wasmrt.fromFloat16Bits(bits)) : bits;
      feeds[spec.name] = new wasmrt.Tensor("float16", data, spec.shape);
    } else {
      feeds[spec.name] = new wasmrt.Tensor(spec.dtype, view(readFileSync(join(dir, `${spec.name}.i64`)), BigInt64Array).slice(), spec.shape);
    }
  }
  const out = await model.run(feeds);
  const kinds = {};
  for (const [name, t] of Object.entries(out)) {
    kinds[name] = `${t.dtype} ${t.data.constructor.name}`;
    const bits = t.data instanceof Uint16Array ? t.data : wasmrt.toFloat16Bits(t.data);
    writeFileSync(join(dir, `${name}.${variant}.f16`), new Uint8Array(bits.buffer, bits.byteOffset, bits.byteLength));
  }
  report.variants[variant] = kinds;
  model.release();
}
const values = view(readFileSync(join(dir, "values.f32")), Float32Array);
const rounded = wasmrt.toFloat16Bits(values);
writeFileSync(join(dir, "rounded.f16"), new Uint8Array(rounded.buffer));
const all = new Uint16Array(65536).map((_, i) => i);
writeFileSync(join(dir, "widened.f32"), new Uint8Array(wasmrt.fromFloat16Bits(all).buffer));
writeFileSync(join(dir, "report.json"), JSON.stringify(report));
