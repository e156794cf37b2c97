// Fill the mini-program projects (wechat/, alipay/) with what they need beside their own pages:
//   - the wasm engine, SIMD128 + scalar, in wasm/ (outside the worker folder, as WeChat requires);
//     --brotli writes .wasm.br instead (WeChat base library 2.14+, Douyin 2.92+)
//   - the models: face_detector.wrt in the main package, face_landmark.wrt in the subpackage landmarks/ and the
//     attention mesh face_landmark_attention.wrt (the page's "refined lips and irises" switch) in attention/ and
//     attention2/ (a model larger than one package is split into parts over several: every package must stay under
//     2 MB); the background page's selfie_segmentation.wrt in selfie/, the gesture page's palm_detection_lite.wrt in
//     palm/ and hand_landmark_lite.wrt in hand/ and hand2/, the teach page's efficientnet_lite0.wrt in features/ ..
//     features10/ (their placeholder pages written here); and lib/models.js describing them
//   - the library: wasmrt's runtime, wasmrt.vision and the mini-program host in workers/facemesh/lib/ (a Worker
//     can only load files of its own folder), the pages' lips.js, tryon-page.js, segment-page.js, teach-page.js and
//     models-io.js in lib/; the web teach page's teach-core.js in both (the worker trains, the page shows classes)
//   - --int8: the int8 face models instead (face_detector_int8.wrt, face_landmark_int8.wrt from wasmrt quantize:
//     `python -m wasmrt.zoo.face_int8` makes them), under the same names in the projects
//   - --wasm DIR: the modules of DIR instead of the full ones: `wasmrt build --for` the face models -o DIR holds
//     only their ops and kernels (about half the bytes); lib/models.js then names the models they were built for
//   node demo/miniprogram/build.mjs [--brotli] [--int8] [--wasm DIR] [--only wechat|alipay]
//     [--target DIR (a built copy, not in place)]
import { copyFileSync, cpSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { brotliCompressSync, constants } from "node:zlib";

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, "..", "..");
const LIB = join(ROOT, "js_bindings");
export const PACKAGE_LIMIT = 2 * 1024 * 1024;
export const PLATFORMS = ["wechat", "alipay"];
// The models kept out of the main package, each over its subpackages (add names to split a larger model over more
// of them): the try-on's landmark models, the background page's selfie model, the gesture page's hand models
// (the lite ones: 1.9 + 2.0 MB), the teach page's feature model (EfficientNet-Lite0, 18.6 MB: ten subpackages).
const FEATURE_PACKAGES = Array.from({ length: 10 }, (_, k) => (k ? `features${k + 1}` : "features"));
const SUBPACKAGE_MODELS = {
  landmark: { file: "face_landmark.wrt", subpackages: ["landmarks"] },
  attention: { file: "face_landmark_attention.wrt", subpackages: ["attention", "attention2"] },
  selfie: { file: "selfie_segmentation.wrt", subpackages: ["selfie"] },
  palm: { file: "palm_detection_lite.wrt", subpackages: ["palm"] },
  hand: { file: "hand_landmark_lite.wrt", subpackages: ["hand", "hand2"] },
  features: { file: "efficientnet_lite0.wrt", subpackages: FEATURE_PACKAGES },
};
// the pages' shared modules, copied into lib/
const PAGE_LIB = ["tryon-page.js", "segment-page.js", "teach-page.js", "models-io.js", "worker-page.js"];
const TEACH_CORE = join(ROOT, "demo", "web", "teach-core.js"); // no imports: the page and the worker load it as is
// a subpackage's one page (a package needs a page): what it carries, per platform's markup
const PART_PAGE = { wechat: "wxml", alipay: "axml" };
// static imports (`import ... from "./x.js"`, `import "./x.js"`, `export ... from "./x.js"`) of a module
const STATIC_IMPORT = /^\s*(?:(?:import|export)\s[^;]*?\bfrom\s*|import\s*)["'](\.{1,2}\/[^"']+)["']/gm;

/** The library files (relative to js_bindings/) a platform's worker needs: what the worker's own files import from
 * its lib/ folder, and everything those import in turn, so the list can never miss a module the code gained. */
function workerLib(platform) {
  const own = [join(HERE, "shared", "worker-main.js"), join(HERE, platform, "workers", "facemesh", "index.js")];
  const todo = own.flatMap((f) => [...readFileSync(f, "utf8").matchAll(STATIC_IMPORT)])
    .map((m) => m[1]).filter((s) => s.startsWith("./lib/")).map((s) => join(LIB, s.slice("./lib/".length)));
  const seen = new Set();
  while (todo.length) {
    const f = todo.pop();
    if (seen.has(f)) continue;
    seen.add(f);
    for (const m of readFileSync(f, "utf8").matchAll(STATIC_IMPORT)) todo.push(join(dirname(f), m[1]));
  }
  return [...seen].map((f) => relative(LIB, f)).sort();
}

function copy(src, dst) {
  mkdirSync(dirname(dst), { recursive: true });
  copyFileSync(src, dst);
}

/** target: build into target/<platform>/ (a copy of the project) instead of in place. Returns the app folders. */
export function build({ brotli = false, int8 = false, only = PLATFORMS, models = join(ROOT, "models"), dist = join(LIB, "dist"),
  target } = {}) {
  // --int8: the int8 detector and landmark model (the attention mesh has no int8 version and stays float), under
  // the float files' names in the projects
  const source = (file) => join(models, int8 ? file.replace("face_detector.wrt", "face_detector_int8.wrt")
    .replace("face_landmark.wrt", "face_landmark_int8.wrt") : file);
  const detector = source("face_detector.wrt");
  const split = Object.values(SUBPACKAGE_MODELS).map((m) => source(m.file));
  for (const f of [detector, ...split, join(dist, "wasmrt-simd.wasm"), join(dist, "wasmrt-scalar.wasm")]) {
    try { statSync(f); } catch {
      throw new Error(`${f} is missing: run \`wasmrt build\` and \`python -m wasmrt.zoo.bundle\`` +
        (int8 ? " (and `python -m wasmrt.zoo.face_int8` for the int8 face models)" : ""));
    }
  }
  const parts = Object.entries(SUBPACKAGE_MODELS).map(([key, m]) => {
    const bytes = readFileSync(source(m.file)), partSize = Math.ceil(bytes.length / m.subpackages.length);
    if (partSize > PACKAGE_LIMIT - 64 * 1024) {
      throw new Error(`${m.file} (${bytes.length} bytes) does not fit ${m.subpackages.length} subpackages of 2 MB`);
    }
    return { key, ...m, bytes, partSize };
  });
  const apps = {};
  for (const platform of only) {
    let app = join(HERE, platform);
    if (target) {
      cpSync(app, join(target, platform), { recursive: true });
      app = join(target, platform);
    }
    apps[platform] = app;
    const subpackages = parts.flatMap((m) => m.subpackages);
    for (const d of ["wasm", "models", "lib", "workers/facemesh/lib", ...subpackages.map((s) => `${s}/data`)]) {
      rmSync(join(app, d), { recursive: true, force: true });
    }
    mkdirSync(join(app, "wasm"), { recursive: true });
    for (const v of ["simd", "scalar"]) {
      const bytes = readFileSync(join(dist, `wasmrt-${v}.wasm`));
      if (brotli) {
        const br = brotliCompressSync(bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } });
        writeFileSync(join(app, "wasm", `wasmrt-${v}.wasm.br`), br);
      } else {
        writeFileSync(join(app, "wasm", `wasmrt-${v}.wasm`), bytes);
      }
    }
    copy(detector, join(app, "models", "face_detector.wrt"));
    const manifest = { wasmDir: "/wasm", brotli, int8, detector: "/models/face_detector.wrt" };
    // modules built for given models (wasmrt build --for) say which in their manifest
    const built = join(dist, "wasmrt-modules.json");
    try { manifest.wasmBuiltFor = JSON.parse(readFileSync(built, "utf8")).models; } catch { /* the full modules */ }
    for (const m of parts) {
      for (const s of m.subpackages) { // the placeholder page, where the project has none of its own
        const page = join(app, s, "pages", "part", "part");
        try { statSync(`${page}.js`); } catch {
          mkdirSync(dirname(page), { recursive: true });
          writeFileSync(`${page}.js`, "Page({});\n");
          writeFileSync(`${page}.json`, "{}\n");
          writeFileSync(`${page}.${PART_PAGE[platform]}`, `<view>model data: this subpackage carries part of ${m.file}</view>\n`);
        }
      }
      const files = m.subpackages.map((s, k) => {
        const rel = `${s}/data/${m.file}.${k}`;
        mkdirSync(join(app, s, "data"), { recursive: true });
        writeFileSync(join(app, rel), m.bytes.subarray(k * m.partSize, (k + 1) * m.partSize));
        return `/${rel}`;
      });
      manifest[m.key] = { file: m.file, parts: files, bytes: m.bytes.length, subpackages: m.subpackages };
    }
    for (const f of workerLib(platform)) copy(join(LIB, f), join(app, "workers/facemesh/lib", f));
    copy(join(HERE, "shared", "worker-main.js"), join(app, "workers/facemesh/worker-main.js"));
    copy(TEACH_CORE, join(app, "workers/facemesh/teach-core.js"));
    copy(TEACH_CORE, join(app, "lib", "teach-core.js"));
    copy(join(LIB, "vision", "lips.js"), join(app, "lib", "lips.js"));
    for (const f of PAGE_LIB) copy(join(HERE, "shared", f), join(app, "lib", f));
    writeFileSync(join(app, "lib", "models.js"),
      `// Written by demo/miniprogram/build.mjs.\nexport const MODELS = ${JSON.stringify(manifest, null, 2)};\n`);
  }
  return apps;
}

/** Bytes per package of a built project: the main package and each subpackage. */
export function packageSizes(app) {
  const subpackages = Object.values(SUBPACKAGE_MODELS).flatMap((m) => m.subpackages);
  const sizes = { main: 0, ...Object.fromEntries(subpackages.map((s) => [s, 0])) };
  const walk = (dir, top) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name), pkg = top ?? (subpackages.includes(e.name) ? e.name : "main");
      if (e.isDirectory()) walk(p, pkg);
      else sizes[pkg] += statSync(p).size;
    }
  };
  walk(app, undefined);
  return sizes;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const args = process.argv.slice(2);
  const opt = (name) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
  const int8 = args.includes("--int8");
  const apps = build({ brotli: args.includes("--brotli"), int8, only: opt("--only") ? [opt("--only")] : PLATFORMS,
    target: opt("--target"), ...(opt("--wasm") ? { dist: opt("--wasm") } : {}) });
  console.log(`mini-programs built (${args.includes("--brotli") ? "brotli wasm" : "plain wasm"}, ` +
    `${int8 ? "int8" : "float"} face models):`);
  for (const [platform, app] of Object.entries(apps)) {
    const sizes = packageSizes(app);
    console.log(`  ${platform}: ${app}  ` +
      Object.entries(sizes).map(([k, v]) => `${k} ${(v / 1024 / 1024).toFixed(2)} MB`).join(", "));
  }
}
