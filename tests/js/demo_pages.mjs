// Opens each page `wasmrt demo` serves in Debian's Chromium and reports what a person (and the console) would see:
// failed requests, console errors and warnings, the status line, the highlighted source buttons; for the playground
// also the landmark task on a photo without a face. Run by tests/test_demo_pages.py:
//   node tests/js/demo_pages.mjs config.json results.json    config: {origin, artifacts, chromium}
import { readFileSync, writeFileSync } from "node:fs";
import { launchWithCamera } from "./camera_browser.mjs";

const [configFile, resultsFile] = process.argv.slice(2);
const cfg = JSON.parse(readFileSync(configFile, "utf8"));
const browser = await launchWithCamera(cfg);
const results = {};
const active = (sel) => [...document.querySelectorAll(sel)].filter((b) => b.classList.contains("active")).map((b) => b.textContent);

async function open(name, path, ready) {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const problems = [];
  page.on("console", (m) => { if (m.type() === "error" || m.type() === "warning") problems.push(`console ${m.type()}: ${m.text()}`); });
  page.on("pageerror", (e) => problems.push(`pageerror: ${e.message}`));
  page.on("response", (r) => { if (r.status() >= 400) problems.push(`HTTP ${r.status()}: ${r.url()}`); });
  page.on("requestfailed", (r) => problems.push(`failed: ${r.url()} ${r.failure()?.errorText}`));
  await page.goto(cfg.origin + path);
  await page.waitForFunction(ready, null, { timeout: 120000, polling: 100 });
  results[name] = { problems };
  return page;
}

try {
  // the playground: the classifier on the cat, then the webcam, then the landmark model on a photo without a face
  let page = await open("playground", "/demo/web/?variant=simd", () => ["done", "error"].includes(document.getElementById("status").dataset.state));
  const pg = results.playground;
  pg.status = await page.evaluate(() => document.getElementById("status").textContent);
  pg.variantInfo = await page.evaluate(() => document.getElementById("variant-info").textContent);
  await page.click("#webcam");
  await page.waitForFunction(() => window.playground.state.webcam, null, { timeout: 30000 });
  pg.activeWithWebcam = await page.evaluate(active, "#samples button");
  await page.click("#webcam"); // stop
  await page.evaluate(async () => { await window.playground.selectModel("face_landmark"); await window.playground.selectSample("coffee.png"); await window.playground.run(); });
  pg.activeAfter = await page.evaluate(active, "#samples button");
  pg.noFace = await page.evaluate(() => ({ summary: window.playground.state.last.summary, text: document.getElementById("result").textContent }));
  await page.screenshot({ path: `${cfg.artifacts}/demo-playground-noface.png` });
  await page.evaluate(async () => { await window.playground.selectSample("astronaut.png"); await window.playground.run(); });
  pg.face = await page.evaluate(() => ({ summary: window.playground.state.last.summary, text: document.getElementById("result").textContent }));
  await page.close();

  // the try-on on the photo, then the clip: one source highlighted
  page = await open("tryon", "/demo/web/tryon.html?source=astronaut&variant=simd", () => window.tryon?.stats().frames > 3);
  await page.click('#sources button[data-source="clip"]');
  await page.waitForTimeout(500);
  results.tryon.active = await page.evaluate(active, "#sources button");
  results.tryon.engineInfo = await page.evaluate(() => document.getElementById("engine-info").textContent);
  await page.screenshot({ path: `${cfg.artifacts}/demo-tryon.png` });
  await page.close();

  // the try-on when its engine cannot start (a variant that does not exist), and a source clicked after that: the
  // page names the cause and keeps naming it
  page = await open("tryonFailed", "/demo/web/tryon.html?variant=bogus&source=astronaut",
    () => document.getElementById("status").dataset.state === "error");
  await page.click('#sources button[data-source="astronaut"]');
  await page.waitForTimeout(500);
  results.tryonFailed.status = await page.evaluate(() => document.getElementById("status").textContent);
  results.tryonFailed.error = await page.evaluate(() => document.getElementById("error").textContent);
  await page.screenshot({ path: `${cfg.artifacts}/demo-tryon-failed.png` });
  await page.close();

  // the speed page, loaded (not run)
  page = await open("speed", "/demo/web/speed.html", () => document.querySelectorAll("#models input").length > 0);
  results.speed.models = await page.evaluate(() => document.getElementById("models").textContent);
  await page.close();
} finally {
  await browser.close();
}
writeFileSync(resultsFile, JSON.stringify(results));
