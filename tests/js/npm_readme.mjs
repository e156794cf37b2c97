// Runs the README's JavaScript snippet from an npm project that installed the packed tarball (no repository
// around it), in Node or, through tests/js/npm_page.mjs, in Chromium. Run by tests/test_npm_package.py:
//   node npm_readme.mjs chelsea.rgba:W:H astronaut.rgba:W:H   (cwd: the project; prints one JSON line)
import { readFileSync } from "node:fs";
import * as wasmrt from "wasmrt";
import { FaceMesh } from "wasmrt/vision";

const pixels = (spec) => {
  const [file, w, h] = spec.split(":");
  const b = readFileSync(file);
  return { data: new Uint8ClampedArray(b.buffer, b.byteOffset, b.length), width: +w, height: +h };
};
const { classify, tryOn } = await import(new URL("./readme.mjs", `file://${process.cwd()}/`).href);
const cat = pixels(process.argv[2]), face = pixels(process.argv[3]);
const before = face.data.slice();
const out = { label: await classify(cat), faces: await tryOn(face) };
out.changed = face.data.reduce((n, v, i) => n + (v !== before[i] ? 1 : 0), 0);
const rt = await wasmrt.init();
out.variant = rt.variant;
try {
  await FaceMesh.create(rt, { modelBase: "./no-such-folder/" });
  out.missing = "no error";
} catch (e) {
  out.missing = e.message;
}
console.log(JSON.stringify(out));
