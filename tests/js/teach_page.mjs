// What a person sees on demo/web/teach.html in headless Chromium: class names typed, photos added per class (files,
// and one snapshot of the fake camera), train pressed; then held-out photos shown, the page's live class read
// (screenshots of the frame with its class banner, and the class probabilities); then save, a page reload, the
// reload button, and the same photos again. tests/test_teach_pages.py judges the results.
//   node tests/js/teach_page.mjs config.json results.json
// config: {origin, chromium, y4m (the fake camera), out (screenshots), variant, classes: [{name, files: [png],
//   snapshots: n}], heldOut: [{name, file}]}
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { launchWithCamera } from "./camera_browser.mjs";

const [configFile, resultsFile] = process.argv.slice(2);
const cfg = JSON.parse(readFileSync(configFile, "utf8"));
const browser = await launchWithCamera(cfg);
const logs = [];
const results = { logs, shots: {} };
const t0 = Date.now();
const mark = (what) => process.stderr.write(`[teach-page] ${what} at ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);

async function shot(page, name) {
  const r = await page.evaluate(() => {
    const b = document.getElementById("view").getBoundingClientRect();
    return { x: b.x, y: b.y, width: b.width, height: b.height };
  });
  const path = join(cfg.out, `teach-${name}.png`);
  await page.screenshot({ path, clip: r });
  await page.screenshot({ path: join(cfg.out, `teach-${name}-page.png`) });
  results.shots[name] = { path, view: await page.evaluate(() => window.teachPage.view()) };
}

/** Show a photo (a file input, as a person picks one) and wait for a new frame classified with it. */
async function classifyFile(page, file) {
  const gen = await page.evaluate(() => window.teachPage.generation);
  await page.setInputFiles("#photo-file", file);
  await page.waitForFunction((g) => window.teachPage.generation > g, gen, { timeout: 60000, polling: 20 });
  // frames counted from here on are the new photo's (a frame of the old source is dropped when it comes back)
  const before = await page.evaluate(() => window.teachPage.frames);
  await page.waitForFunction((n) => window.teachPage.frames >= n + 2 && window.teachPage.prediction, before,
    { timeout: 60000, polling: 50 });
  return page.evaluate(() => ({ ...window.teachPage.prediction, text: document.getElementById("prediction").textContent }));
}

try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  let page = await context.newPage();
  const watch = (p) => {
    p.on("console", (m) => logs.push(`${m.type()}: ${m.text()}`));
    p.on("pageerror", (e) => logs.push(`pageerror: ${e.message}`));
    p.on("requestfailed", (r) => logs.push(`requestfailed: ${r.url()}`));
  };
  watch(page);
  await page.goto(`${cfg.origin}/demo/web/teach.html?variant=${cfg.variant}&source=camera`);
  results.engine = await page.evaluate(() => window.teachPage.ready);
  results.colors = await page.evaluate(() => window.teachPage.colors);
  await page.waitForFunction(() => window.teachPage.frames >= 2, null, { timeout: 60000, polling: 50 });
  mark("ready");
  await shot(page, "camera-untrained");

  // the classes, as a person fills them in: names, photo files, snapshots of the camera
  const rows = page.locator("#classes .class");
  for (let k = 0; k < cfg.classes.length; k++) {
    const c = cfg.classes[k], row = rows.nth(k);
    await row.locator("input.name").fill(c.name);
    if (c.files.length) await row.locator("input.files").setInputFiles(c.files);
    for (let s = 0; s < (c.snapshots ?? 0); s++) await row.locator("button.snap").click();
  }
  await page.waitForFunction((n) => window.teachPage.counts().reduce((a, b) => a + b, 0) === n,
    cfg.classes.reduce((a, c) => a + c.files.length + (c.snapshots ?? 0), 0), { timeout: 60000, polling: 50 });
  results.counts = await page.evaluate(() => window.teachPage.counts());
  mark("photos added");

  const tTrain = Date.now();
  await page.click("#train");
  await page.waitForFunction(() => ["trained", "error"].includes(window.teachPage.status.state), null, { timeout: 120000, polling: 50 });
  results.trainMs = Date.now() - tTrain;
  results.trained = await page.evaluate(() => ({ ...window.teachPage.status, info: document.getElementById("train-info").textContent,
    progress: document.getElementById("progress").value, error: document.getElementById("error").textContent }));
  mark(`trained (${results.trained.text})`);
  if (results.trained.state !== "trained") throw new Error(`training failed: ${results.trained.error}`);

  // the camera, classified live
  const n0 = await page.evaluate(() => window.teachPage.frames);
  await page.waitForFunction((n) => window.teachPage.frames >= n + 3, n0, { timeout: 60000, polling: 50 });
  results.camera = await page.evaluate(() => window.teachPage.prediction);
  await shot(page, "camera-trained");

  results.before = {};
  for (const h of cfg.heldOut) {
    results.before[h.name] = await classifyFile(page, h.file);
    await shot(page, `before-${h.name}`);
  }
  await page.click("#save");
  await page.waitForFunction(() => document.getElementById("store-info").textContent.startsWith("saved"), null,
    { timeout: 60000, polling: 50 });
  results.saved = await page.evaluate(() => document.getElementById("store-info").textContent);
  mark("saved");

  // a reload of the page: nothing trained, until the reload button restores the saved model
  await page.goto(`${cfg.origin}/demo/web/teach.html?variant=${cfg.variant}&source=none`);
  await page.evaluate(() => window.teachPage.ready);
  results.afterPageReload = await page.evaluate(() => ({ ...window.teachPage.status,
    store: document.getElementById("store-info").textContent }));
  await page.click("#reload");
  await page.waitForFunction(() => ["trained", "error"].includes(window.teachPage.status.state), null, { timeout: 60000, polling: 50 });
  results.reloaded = await page.evaluate(() => ({ ...window.teachPage.status,
    names: [...document.querySelectorAll("#classes input.name")].map((e) => e.value) }));
  results.after = {};
  for (const h of cfg.heldOut) {
    results.after[h.name] = await classifyFile(page, h.file);
    await shot(page, `after-${h.name}`);
  }
  mark("reloaded and classified");
  await page.evaluate(() => window.teachPage.stop());
} finally {
  await browser.close();
}
writeFileSync(resultsFile, JSON.stringify(results));
