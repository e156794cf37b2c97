// For tests/test_webgpu.py: the JS backend's float32 <-> binary16 conversion (f16 storage) on given values.
//   node webgpu_f16.mjs values.f32 bits.u16 all.f32
// values.f32: float32 values -> bits.u16: their binary16 bits (toF16); all.f32: f16Value of every 16-bit pattern.
import { readFileSync, writeFileSync } from "node:fs";
import { fromF16, toF16 } from "../../js_bindings/src/f16.js";

const [valuesFile, bitsFile, allFile] = process.argv.slice(2);
const raw = readFileSync(valuesFile);
const values = new Float32Array(raw.buffer, raw.byteOffset, raw.byteLength / 4);
writeFileSync(bitsFile, toF16(values).subarray(0, values.length));
const every = new Uint16Array(65536).map((_, i) => i);
writeFileSync(allFile, fromF16(every.buffer, 65536));
