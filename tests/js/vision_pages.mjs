// What a person sees on demo/web/segment.html or hands.html while the live loop runs, the pipeline in a Worker and
// on the page's thread: screenshots of the displayed canvas for each source (the photo, the clip made from it,
// Chromium's fake camera fed with that clip as a .y4m file). tests/test_vision_pages.py judges them.
//   node tests/js/vision_pages.mjs config.json results.json
// config: {origin, chromium, y4m, out, page ("segment" | "hands"), variant, runs: [{worker, sources}], samples,
//   intervalMs, settings (the page's configure() before the sources, e.g. a background colour)}
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { launchWithCamera } from "./camera_browser.mjs";

const [configFile, resultsFile] = process.argv.slice(2);
const cfg = JSON.parse(readFileSync(configFile, "utf8"));

const browser = await launchWithCamera(cfg);
const results = { runs: [] };
try {
  for (const run of cfg.runs) {
    const logs = [];
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on("console", (m) => logs.push(`${m.type()}: ${m.text()}`));
    page.on("pageerror", (e) => logs.push(`pageerror: ${e.message}`));
    page.on("requestfailed", (r) => logs.push(`requestfailed: ${r.url()}`));
    await page.goto(`${cfg.origin}/demo/web/${cfg.page}.html?source=none&variant=${cfg.variant}&worker=${run.worker ? 1 : 0}`);
    const engine = await page.evaluate(() => window.visionPage.ready);
    if (cfg.settings) await page.evaluate((s) => window.visionPage.configure(s), cfg.settings);
    const sources = {};
    for (const source of run.sources) {
      await page.evaluate((s) => window.visionPage.setSource(s), source);
      await page.waitForFunction(() => window.visionPage.stats().frames >= 4, null, { timeout: 120000, polling: 50 });
      const view = await page.evaluate(() => {
        const c = document.getElementById("view"), r = c.getBoundingClientRect();
        return { x: r.x, y: r.y, width: r.width, height: r.height, canvasWidth: c.width, canvasHeight: c.height,
          mirror: c.classList.contains("mirror"), note: document.getElementById("source-note").textContent };
      });
      const shots = [], texts = [];
      for (let k = 0; k < cfg.samples; k++) {
        const path = join(cfg.out, `${cfg.page}-${run.worker ? "worker" : "page"}-${source}-${String(k).padStart(2, "0")}.png`);
        await page.screenshot({ path, clip: { x: view.x, y: view.y, width: view.width, height: view.height } });
        shots.push(path);
        texts.push(await page.evaluate(() => document.getElementById("hands-list")?.textContent ?? ""));
        await page.waitForTimeout(cfg.intervalMs);
      }
      await page.screenshot({ path: join(cfg.out, `${cfg.page}-${run.worker ? "worker" : "page"}-${source}-page.png`) });
      sources[source] = { view, shots, texts, stats: await page.evaluate(() => window.visionPage.stats()) };
      process.stderr.write(`[vision-pages] ${cfg.page} ${run.worker ? "worker" : "page"} ${source}: ${shots.length} screenshots\n`);
    }
    await page.evaluate(() => window.visionPage.stop());
    results.runs.push({ worker: run.worker, engine, sources, logs });
    await page.close();
  }
} finally {
  await browser.close();
}
writeFileSync(resultsFile, JSON.stringify(results));
