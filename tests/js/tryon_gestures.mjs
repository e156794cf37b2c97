// The try-on page with gestures (demo/web/tryon.html?gestures=1) in headless Chromium: the astronaut, then a clip
// of an open palm, then the astronaut again, each frame through the page's own frame path (window.tryon.process:
// the Worker, then the canvas); screenshots of the canvas before and after. tests/test_tryon_gestures.py judges them.
//   node tests/js/tryon_gestures.mjs config.json results.json
// config: {origin, chromium, variant, out, intensity, handFrames}
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";

const [configFile, resultsFile] = process.argv.slice(2);
const cfg = JSON.parse(readFileSync(configFile, "utf8"));
const browser = await chromium.launch({ executablePath: cfg.chromium ?? "/usr/bin/chromium", headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking"] });
const logs = [];
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.on("console", (m) => logs.push(`${m.type()}: ${m.text()}`));
  page.on("pageerror", (e) => logs.push(`pageerror: ${e.message}`));
  await page.goto(`${cfg.origin}/demo/web/tryon.html?source=none&gestures=1&variant=${cfg.variant}`);
  const engine = await page.evaluate(() => window.tryon.ready);
  const shot = async (name) => {
    const r = await page.evaluate(() => {
      const c = document.getElementById("view"), b = c.getBoundingClientRect();
      return { x: b.x, y: b.y, width: b.width, height: b.height, canvasWidth: c.width, canvasHeight: c.height };
    });
    const path = join(cfg.out, `${name}.png`);
    await page.screenshot({ path, clip: { x: r.x, y: r.y, width: r.width, height: r.height } });
    return { path, ...r };
  };
  const run = (what, k = 0) => page.evaluate(async ({ what, k, n }) => {
    const { getPixels } = await import("/js_bindings/src/image.js");
    const file = what === "person" ? "astronaut.png" : "hand.jpg";
    window.__photos ??= {};
    window.__photos[file] ??= await getPixels(await (await fetch(`/demo/web/samples/${file}`)).blob());
    const img = what === "person" ? window.__photos[file] : window.tryon.vision.clipFrame(window.__photos[file], k, n, 384);
    const r = await window.tryon.process(img);
    return { faces: r.faces.length, hands: r.hands.map((h) => h.gesture), color: window.tryon.color,
      shown: document.getElementById("gesture").textContent };
  }, { what, k, n: 48 });
  await page.evaluate((i) => window.tryon.setColor(window.tryon.swatches[0], i), cfg.intensity);
  const first = await page.evaluate(() => window.tryon.color);
  const person1 = [await run("person"), await run("person")];
  const before = await shot("tryon-gestures-before");
  const palm = [];
  for (let k = 0; k < cfg.handFrames; k++) palm.push(await run("hand", k));
  const person2 = [await run("person"), await run("person")];
  const after = await shot("tryon-gestures-after");
  const panel = await page.evaluate(() => ({ hands: document.getElementById("s-hands").textContent,
    label: document.querySelector("label:has(#gestures)").textContent.trim() }));
  writeFileSync(resultsFile, JSON.stringify({ engine, first, person1, palm, person2, before, after, panel,
    swatches: await page.evaluate(() => window.tryon.swatches), logs }));
} finally {
  await browser.close();
}
