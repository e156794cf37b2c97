// The JS trainer in Node (tests/test_js_trainer.py writes the case into a folder): prints trainer_case's result.
import { readFileSync } from "node:fs";
import * as wasmrt from "../../js_bindings/src/index.js";

const dir = process.argv[2];
const { runCase } = await import(`./${process.argv[3] ?? "trainer_case.mjs"}`);
const c = JSON.parse(readFileSync(`${dir}/case.json`, "utf8"));
const b = readFileSync(`${dir}/x.bin`);
const x = new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
console.log(JSON.stringify(await runCase(wasmrt, c, new Uint8Array(readFileSync(`${dir}/model.wrt`)), x)));
