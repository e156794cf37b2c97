// The JS WebGPU plan of each .wrt given, for tests/test_webgpu.py to compare with the Python engine's plan:
//   node webgpu_plan.mjs a.wrt b.wrt ... -> JSON {file: {dispatches: [[kernel, groups, params hex]], constants: sha256}}
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { packParams, plan } from "../../js_bindings/src/webgpu/plan.js";
import { readWrt } from "../../js_bindings/src/webgpu/wrt.js";

const out = {};
for (const file of process.argv.slice(2)) {
  const p = plan(readWrt(new Uint8Array(readFileSync(file))), file);
  out[file] = {
    dispatches: p.dispatches.map((d) => [d.kernel, d.groups, Buffer.from(packParams(d.kernel, d.params)).toString("hex")]),
    constants: createHash("sha256").update(new Uint8Array(p.constants.buffer)).digest("hex"),
    arena: p.arenaBytes,
  };
}
process.stdout.write(JSON.stringify(out));
