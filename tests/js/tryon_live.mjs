// What a person sees on demo/web/tryon.html while the live loop runs: screenshots of the displayed canvas, taken
// at intervals for each source (the photo, the generated clip, Chromium's fake camera fed with the clip as a .y4m
// file). tests/test_tryon.py judges them against python_ref's lip masks.
//   node tests/js/tryon_live.mjs config.json results.json
// config: {origin, variant, chromium, y4m, out (folder for the PNGs), paint: {color, intensity}, samples, intervalMs,
//   sources (default: photo, clip, camera), int8 (the page's int8 face models)}
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { launchWithCamera } from "./camera_browser.mjs";

const [configFile, resultsFile] = process.argv.slice(2);
const cfg = JSON.parse(readFileSync(configFile, "utf8"));

const browser = await launchWithCamera(cfg);
const results = { sources: {}, logs: [] };
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.on("console", (m) => results.logs.push(`${m.type()}: ${m.text()}`));
  page.on("pageerror", (e) => results.logs.push(`pageerror: ${e.message}`));
  await page.goto(`${cfg.origin}/demo/web/tryon.html?source=none&variant=${cfg.variant}${cfg.int8 ? "&int8=1" : ""}`);
  results.engine = await page.evaluate(() => window.tryon.ready);
  await page.evaluate(({ color, intensity }) => window.tryon.setColor(color, intensity), cfg.paint);
  for (const source of cfg.sources ?? ["astronaut", "clip", "camera"]) {
    await page.evaluate((s) => window.tryon.setSource(s), source);
    await page.waitForFunction(() => window.tryon.stats().frames >= 5, null, { timeout: 60000, polling: 50 });
    const view = await page.evaluate(() => {
      const c = document.getElementById("view"), r = c.getBoundingClientRect();
      return { x: r.x, y: r.y, width: r.width, height: r.height, canvasWidth: c.width, canvasHeight: c.height,
        mirror: c.classList.contains("mirror"), note: document.getElementById("source-note").textContent };
    });
    const shots = [];
    for (let k = 0; k < cfg.samples; k++) {
      const path = join(cfg.out, `${source}-${String(k).padStart(3, "0")}.png`);
      await page.screenshot({ path, clip: { x: view.x, y: view.y, width: view.width, height: view.height } });
      shots.push(path);
      await page.waitForTimeout(cfg.intervalMs);
    }
    await page.screenshot({ path: join(cfg.out, `page-${source}.png`) });
    results.sources[source] = { view, shots, stats: await page.evaluate(() => window.tryon.stats()) };
    process.stderr.write(`[tryon-live] ${source}: ${shots.length} screenshots\n`);
  }
  await page.evaluate(() => window.tryon.stop());
} finally {
  await browser.close();
}
writeFileSync(resultsFile, JSON.stringify(results));
