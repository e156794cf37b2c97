// Drives demo/web/tryon.html in Debian's Chromium (playwright-core, no browser download) for tests/test_tryon.py:
//   node tests/js/vision_tryon_browser.mjs config.json results.json
// config: {origin, variant, fixtures (dir of tests/js/vision_fixtures.py output), artifacts, perfSeconds}
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { launchWithCamera } from "./camera_browser.mjs";

const [configFile, resultsFile] = process.argv.slice(2);
const cfg = JSON.parse(readFileSync(configFile, "utf8"));
const M = JSON.parse(readFileSync(join(cfg.fixtures, "vision.json"), "utf8"));
const astronautB64 = readFileSync(join(cfg.fixtures, M.astronaut.file)).toString("base64");

const browser = await launchWithCamera(cfg);
const results = { variant: cfg.variant };
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
  const logs = [];
  page.on("console", (m) => logs.push(`${m.type()}: ${m.text()}`));
  page.on("pageerror", (e) => logs.push(`pageerror: ${e.message}`));
  await page.goto(`${cfg.origin}/demo/web/tryon.html?source=none&variant=${cfg.variant}`);
  results.engine = await page.evaluate(() => window.tryon.ready);

  // 1. the astronaut: landmarks, lip mask, the recoloured picture
  results.astronaut = await page.evaluate(async ({ b64, w, h, paint }) => {
    const bin = atob(b64);
    const data = new Uint8ClampedArray(bin.length);
    for (let i = 0; i < bin.length; i++) data[i] = bin.charCodeAt(i);
    window.tryon.setColor(paint.color, paint.intensity);
    await window.tryon.setTracking(false);
    const res = await window.tryon.process({ data, width: w, height: h });
    const face = res.faces[0];
    const mask = face ? window.tryon.vision.lipMask(face.landmarks, w, h) : null;
    return {
      faces: res.faces.length, ms: res.ms, ranDetector: res.ranDetector,
      landmarks: face ? Array.from(face.landmarks) : null, score: face?.score,
      detection: face?.detection,
      mask: mask && { x0: mask.x0, y0: mask.y0, w: mask.w, h: mask.h, data: Array.from(mask.data) },
      canvas: document.getElementById("view").toDataURL("image/png"),
    };
  }, { b64: astronautB64, w: M.astronaut.width, h: M.astronaut.height, paint: M.astronaut.paint });
  const png = results.astronaut.canvas.replace(/^data:image\/png;base64,/, "");
  writeFileSync(join(cfg.artifacts, `tryon-astronaut-${cfg.variant}.png`), Buffer.from(png, "base64"));
  delete results.astronaut.canvas;
  await page.screenshot({ path: join(cfg.artifacts, `tryon-page-${cfg.variant}.png`) });

  // 2. the clip, tracked and detect-every-frame
  results.clip = await page.evaluate(async ({ b64, w, h, n, size }) => {
    const bin = atob(b64);
    const src = { data: new Uint8ClampedArray(bin.length), width: w, height: h };
    for (let i = 0; i < bin.length; i++) src.data[i] = bin.charCodeAt(i);
    const frames = Array.from({ length: n }, (_, t) => window.tryon.vision.clipFrame(src, t, n, size));
    const run = async (tracking) => {
      await window.tryon.setTracking(tracking);
      const out = { landmarks: [], ran: [], ms: [] };
      for (const f of frames) {
        const r = await window.tryon.process({ data: f.data.slice(), width: f.width, height: f.height });
        out.landmarks.push(r.faces[0] ? Array.from(r.faces[0].landmarks) : null);
        out.ran.push(r.ranDetector);
        out.ms.push(r.ms);
      }
      return out;
    };
    return { tracked: await run(true), every: await run(false) };
  }, { b64: astronautB64, w: M.astronaut.width, h: M.astronaut.height, n: M.clip.frames, size: M.clip.size });

  // 3. the live loop on the generated clip: FPS and per-stage milliseconds
  await page.evaluate(async () => { await window.tryon.setTracking(true); await window.tryon.setSource("clip"); });
  await page.waitForTimeout(1500); // warm-up
  await page.evaluate(() => window.tryon.setSource("clip"));
  await page.waitForTimeout((cfg.perfSeconds ?? 6) * 1000);
  results.perf = await page.evaluate(() => window.tryon.stats());
  await page.screenshot({ path: join(cfg.artifacts, `tryon-clip-${cfg.variant}.png`) });
  await page.evaluate(() => window.tryon.stop());

  // 4. the camera path, with Chromium's fake camera (a test pattern: no face, so the detector runs every frame)
  const cam = await browser.newPage({ viewport: { width: 1280, height: 860 } });
  await cam.goto(`${cfg.origin}/demo/web/tryon.html?source=camera&variant=${cfg.variant}`);
  await cam.evaluate(() => window.tryon.ready);
  await cam.waitForTimeout(3000);
  results.camera = await cam.evaluate(() => ({ stats: window.tryon.stats(), note: document.getElementById("source-note").textContent }));

  // 5. the refine option: the attention mesh's 478 landmarks on the astronaut
  const refined = await browser.newPage({ viewport: { width: 1280, height: 860 } });
  await refined.goto(`${cfg.origin}/demo/web/tryon.html?source=none&refine=1&variant=${cfg.variant}`);
  await refined.evaluate(() => window.tryon.ready);
  results.refined = await refined.evaluate(async ({ b64, w, h, paint }) => {
    const bin = atob(b64);
    const data = new Uint8ClampedArray(bin.length);
    for (let i = 0; i < bin.length; i++) data[i] = bin.charCodeAt(i);
    window.tryon.setColor(paint.color, paint.intensity);
    await window.tryon.setTracking(false);
    const res = await window.tryon.process({ data, width: w, height: h });
    return { checked: document.getElementById("refine").checked, faces: res.faces.length,
      landmarks: res.faces[0] ? Array.from(res.faces[0].landmarks) : null,
      canvas: document.getElementById("view").toDataURL("image/png") };
  }, { b64: astronautB64, w: M.astronaut.width, h: M.astronaut.height, paint: M.astronaut.paint });
  // what a person sees with refine on: the canvas alone, and the whole page
  const refinedPng = results.refined.canvas.replace(/^data:image\/png;base64,/, "");
  writeFileSync(join(cfg.artifacts, `tryon-refined-${cfg.variant}.png`), Buffer.from(refinedPng, "base64"));
  delete results.refined.canvas;
  await refined.screenshot({ path: join(cfg.artifacts, `tryon-refined-page-${cfg.variant}.png`) });
  results.logs = logs;
} finally {
  await browser.close();
}
writeFileSync(resultsFile, JSON.stringify(results));
