// Pyodide in Node for tests/test_pyodide_node.py: npm's pyodide, micropip from its wheel, the wasmrt wheel installed
// by micropip from Pyodide's file system, then tests/js/pyodide_checks.py; also the JS face, hand and segmentation
// pipelines on the same pixels, for comparison.
//   node tests/js/pyodide_node.mjs config.json  -> one line "RESULT {json}" on stdout
// config: {pyodide, micropip, wheel, checks, fixtures, models, package, wasmPaths}
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { pathToFileURL } from "node:url";

const cfg = JSON.parse(readFileSync(process.argv[2], "utf8"));
try {
  const { loadPyodide } = await import(pathToFileURL(`${cfg.pyodide}/pyodide.mjs`).href);
  const py = await loadPyodide({ indexURL: `${cfg.pyodide}/` });
  py.unpackArchive(new Uint8Array(readFileSync(cfg.micropip)), "wheel");
  const wheel = `/tmp/${basename(cfg.wheel)}`;
  py.FS.writeFile(wheel, new Uint8Array(readFileSync(cfg.wheel)));
  py.FS.mkdir("/fixtures");
  py.FS.mount(py.FS.filesystems.NODEFS, { root: cfg.fixtures }, "/fixtures"); // a path in Pyodide's file system
  py.globals.set("CFG", py.toPy(cfg));
  await py.runPythonAsync(`import micropip\nawait micropip.install("emfs:${wheel}")`);
  await py.runPythonAsync(readFileSync(cfg.checks, "utf8"));
  const out = await py.runPythonAsync(`
async def _read(name):
    with open("/fixtures/" + name, "rb") as f:
        return f.read()

await checks({"read": _read, "package": CFG["package"], "wasm_paths": CFG["wasmPaths"], "model_base": CFG["models"],
              "model": lambda name: "/fixtures/" + name + ".wrt"})
`);
  const result = JSON.parse(out);
  { // the JS pipeline itself on the same pixels
    const wasmrt = await import(pathToFileURL(`${cfg.package}/src/index.js`).href);
    const vision = await import(pathToFileURL(`${cfg.package}/vision/index.js`).href);
    const rt = await wasmrt.init({ variant: "relaxed", wasmPaths: cfg.wasmPaths });
    const mesh = await vision.FaceMesh.create(rt, { modelBase: cfg.models });
    const m = JSON.parse(readFileSync(`${cfg.fixtures}/manifest.json`, "utf8")).face;
    const data = new Uint8Array(readFileSync(`${cfg.fixtures}/${m.file}`));
    const { faces } = await mesh.detect({ data, width: m.width, height: m.height, channels: 3 });
    result.jsFaces = faces.map((f) => ({ score: f.score, b64: Buffer.from(f.landmarks.buffer, f.landmarks.byteOffset,
      f.landmarks.byteLength).toString("base64") }));
    await mesh.release();
    const sha = (a) => createHash("sha256").update(Buffer.from(a.buffer, a.byteOffset, a.byteLength)).digest("hex");
    const b64 = (a) => Buffer.from(a.buffer, a.byteOffset, a.byteLength).toString("base64");
    const errorOf = async (p) => { try { await p(); return null; } catch (e) { return [e.name, e.message]; } };
    const h = JSON.parse(readFileSync(`${cfg.fixtures}/manifest.json`, "utf8")).hand;
    if (h) {
      const tracker = await vision.HandTracker.create(rt, { modelBase: cfg.models, lite: true, maxHands: 2 });
      const frame = { data: new Uint8Array(readFileSync(`${cfg.fixtures}/${h.file}`)), width: h.width, height: h.height };
      const { hands } = await tracker.detect(frame);
      result.jsHands = hands.map((x) => ({ handedness: x.handedness, gesture: x.gesture, score: x.score,
        b64: b64(x.landmarks), world: b64(x.worldLandmarks) }));
      result.jsBadFrame = await errorOf(() => tracker.detect({ data: new Uint8Array(12), width: 10, height: 10 }));
      await tracker.release();
    }
    const seg = await vision.SelfieSegmenter.create(rt, { modelBase: cfg.models });
    const { mask, model } = await seg.segment({ data, width: m.width, height: m.height, channels: 3 });
    const frame = { data, width: m.width, height: m.height, channels: 3 };
    result.jsSegment = { model, mask: sha(mask.data), replaced: sha(vision.replaceBackground(frame, mask, [0, 177, 64]).data),
      blurred: sha(vision.blurBackground(frame, mask, { radius: 8 }).data) };
    await seg.release();
  }
  console.log(`RESULT ${JSON.stringify(result)}`);
} catch (e) {
  // a Python traceback or a JS error, without Node printing the minified line it came from
  console.log(`FAILED ${String(e?.message ?? e).slice(-6000)}`);
  process.exitCode = 1;
}
