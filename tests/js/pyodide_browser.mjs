// Pyodide in Debian's Chromium for tests/test_pyodide_browser.py: opens the demo's
// Pyodide page (demo/web/pyodide.html, served from 127.0.0.1), which installs the wheels with micropip and runs its
// program; then tests/js/pyodide_checks.py in the same interpreter, and the JS face pipeline on the same pixels.
//   node tests/js/pyodide_browser.mjs config.json   -> one line "RESULT {json}" on stdout
// config: {origin, chromium, checks (a file), fixtures (URL prefix), benchCode?}
import { readFileSync } from "node:fs";
import { chromium } from "playwright-core";

const cfg = JSON.parse(readFileSync(process.argv[2], "utf8"));
const browser = await chromium.launch({
  executablePath: cfg.chromium ?? "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"],
});
try {
  const page = await browser.newPage();
  const logs = [];
  page.on("console", (m) => { if (m.type() === "error") logs.push(`console: ${m.text()}`); });
  page.on("pageerror", (e) => logs.push(`pageerror: ${e.message}`));
  page.on("requestfailed", (r) => logs.push(`requestfailed: ${r.url()}`));
  const t0 = Date.now();
  const mark = (what) => console.error(`${what}: ${Date.now() - t0} ms`); // stderr: where the time goes
  await page.goto(`${cfg.origin}/demo/web/pyodide.html`);
  await page.waitForFunction(() => ["done", "error"].includes(document.getElementById("status").dataset.state),
    null, { timeout: 120000, polling: 100 });
  const shown = await page.evaluate(() => ({
    state: document.getElementById("status").dataset.state, status: document.getElementById("status").textContent,
    result: document.getElementById("result").textContent, error: window.pyodidePage.error,
  }));
  mark("page done");
  const result = { page: shown, logs };
  if (shown.state === "done") {
    const out = await page.evaluate(async ({ checks, fixtures }) => {
      const py = window.pyodidePage.py;
      await py.runPythonAsync(checks);
      py.globals.set("FIXTURES", fixtures);
      return py.runPythonAsync(`
import js

async def _read(name):
    r = await js.fetch(FIXTURES + name)
    return (await r.arrayBuffer()).to_bytes()

await checks({"read": _read, "package": "wasmrt", "wasm_paths": None, "model_base": "/models/",
              "model": lambda name: FIXTURES + name + ".wrt"})
`);
    }, { checks: readFileSync(cfg.checks, "utf8"), fixtures: cfg.fixtures });
    Object.assign(result, JSON.parse(out));
    mark("checks done");
    {
      result.jsFaces = await page.evaluate(async ({ fixtures }) => { // the JS pipeline itself on the same pixels
        const wasmrt = await import("wasmrt");
        const vision = await import("wasmrt/vision");
        const rt = await wasmrt.init({ variant: "relaxed" });
        const mesh = await vision.FaceMesh.create(rt, { modelBase: "/models/" });
        const m = (await (await fetch(`${fixtures}manifest.json`)).json()).face;
        const data = new Uint8Array(await (await fetch(fixtures + m.file)).arrayBuffer());
        const { faces } = await mesh.detect({ data, width: m.width, height: m.height, channels: 3 });
        await mesh.release();
        return faces.map((f) => {
          const b = new Uint8Array(f.landmarks.buffer, f.landmarks.byteOffset, f.landmarks.byteLength);
          let s = "";
          for (const v of b) s += String.fromCharCode(v);
          return { score: f.score, b64: btoa(s) };
        });
      }, { fixtures: cfg.fixtures });
    }
  }
  mark("js faces done");
  if (cfg.benchCode && shown.state === "done") { // wasmrt bench --pyodide's code, a few runs: that it runs
    result.bench = JSON.parse(await page.evaluate((code) => window.pyodidePage.py.runPythonAsync(code), cfg.benchCode));
  }
  console.log(`RESULT ${JSON.stringify(result)}`);
} catch (e) {
  console.log(`FAILED ${String(e?.message ?? e).slice(-6000)}`);
  process.exitCode = 1;
} finally {
  await browser.close();
}
