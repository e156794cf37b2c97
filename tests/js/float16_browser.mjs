// float16 models in Chromium through the npm package (run by tests/test_float16.py):
//   node float16_browser.mjs DIR CHROMIUM
// DIR holds what float16_node.mjs reads and receives what it writes; the page imports the package (js_bindings/,
// found through node_modules/wasmrt next to this script) and DIR from one origin served by playwright's routing.
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const [dir, executablePath] = process.argv.slice(2);
const pkg = join(dirname(fileURLToPath(import.meta.url)), "node_modules", "wasmrt");
const ORIGIN = "http://wasmrt.test";
const TYPES = { js: "text/javascript", mjs: "text/javascript", wasm: "application/wasm", html: "text/html" };
const browser = await chromium.launch({ executablePath, headless: true, args: ["--no-sandbox", "--disable-gpu"] });
try {
  const page = await browser.newPage();
  await page.route(`${ORIGIN}/**`, (route) => {
    const path = new URL(route.request().url()).pathname;
    const [root, rest] = path.startsWith("/pkg/") ? [pkg, path.slice(5)] : [dir, path.slice(1)];
    const file = normalize(join(root, rest));
    if (path === "/") return route.fulfill({ body: "<!doctype html><title>float16</title>", contentType: "text/html" });
    try {
      route.fulfill({ body: readFileSync(file), contentType: TYPES[file.split(".").pop()] ?? "application/octet-stream" });
    } catch { route.fulfill({ status: 404, body: "" }); }
  });
  await page.goto(`${ORIGIN}/`);
  const result = await page.evaluate(async (origin) => {
    const wasmrt = await import(`${origin}/pkg/src/index.js`);
    const get = async (name) => new Uint8Array(await (await fetch(`${origin}/${name}`)).arrayBuffer());
    const view = (b, T) => new T(b.buffer, b.byteOffset, b.byteLength / T.BYTES_PER_ELEMENT);
    const report = { float16Array: typeof Float16Array === "function", variants: {}, files: {} };
    const bytes = await get("model.wrt");
    for (const variant of ["scalar", "simd", "relaxed"]) {
      const rt = await wasmrt.init({ variant, wasmPaths: `${origin}/pkg/dist/` });
      const model = rt.loadBytes(bytes);
      const feeds = {};
      for (const spec of model.inputs) {
        if (spec.dtype === "float16") {
          const bits = view(await get(`${spec.name}.f16`), Uint16Array);
          const data = report.float16Array ? new Float16Array(wasmrt.fromFloat16Bits(bits)) : bits;
          feeds[spec.name] = new wasmrt.Tensor("float16", data, spec.shape);
        } else {
          feeds[spec.name] = new wasmrt.Tensor(spec.dtype, view(await get(`${spec.name}.i64`), BigInt64Array), spec.shape);
        }
      }
      const out = await model.run(feeds);
      const kinds = {};
      for (const [name, t] of Object.entries(out)) {
        kinds[name] = `${t.dtype} ${t.data.constructor.name}`;
        report.files[`${name}.${variant}.f16`] = Array.from(t.data instanceof Uint16Array ? t.data : wasmrt.toFloat16Bits(t.data));
      }
      report.variants[variant] = kinds;
      model.release();
    }
    report.files["rounded.f16"] = Array.from(wasmrt.toFloat16Bits(view(await get("values.f32"), Float32Array)));
    report.widened = Array.from(wasmrt.fromFloat16Bits(new Uint16Array(65536).map((_, i) => i)));
    return report;
  }, ORIGIN);
  for (const [name, bits] of Object.entries(result.files)) {
    writeFileSync(join(dir, name), new Uint8Array(Uint16Array.from(bits).buffer));
  }
  writeFileSync(join(dir, "widened.f32"), new Uint8Array(Float32Array.from(result.widened).buffer));
  delete result.files;
  delete result.widened;
  writeFileSync(join(dir, "report.json"), JSON.stringify(result));
} finally {
  await browser.close();
}
