// A training case written by the Python tests (case.json, model.wrt, x.bin in one folder): the case's settings, the
// model's bytes, and the samples (x.bin cut into one Float32Array per label).
import { readFileSync } from "node:fs";

export function readTrainCase(dir) {
  const c = JSON.parse(readFileSync(`${dir}/case.json`, "utf8"));
  const bytes = new Uint8Array(readFileSync(`${dir}/model.wrt`));
  const xb = readFileSync(`${dir}/x.bin`);
  const x = new Float32Array(xb.buffer.slice(xb.byteOffset, xb.byteOffset + xb.byteLength));
  const n = c.labels.length, size = x.length / n;
  const samples = () => Array.from({ length: n }, (_, i) => x.slice(i * size, (i + 1) * size));
  return { c, bytes, samples };
}
