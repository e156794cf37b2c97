// Drives the playground page in Debian's Chromium with playwright-core (no browser download) for pytest:
//   node tests/js/browser.mjs jobs.json results.json
// jobs.json: {origin, artifacts, jobs: [{id, params, steps?}]}; each job opens the page with URL parameters, waits
// for the run, keeps a screenshot and reads back the tensors. `steps` scripts the error-path job.
import { readFileSync, writeFileSync } from "node:fs";
import { chromium } from "playwright-core";

const [jobsFile, resultsFile] = process.argv.slice(2);
const { origin, artifacts, jobs, chromium: executablePath = "/usr/bin/chromium" } = JSON.parse(readFileSync(jobsFile, "utf8"));

const browser = await chromium.launch({
  executablePath,
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
    // the webcam job: Chromium's synthetic camera, permission granted without a prompt
    "--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream"],
});

const STATE = () => document.getElementById("status").dataset.state;

async function waitState(page, states, timeout) {
  await page.waitForFunction((s) => s.includes(document.getElementById("status").dataset.state), states, { timeout, polling: 50 });
  return page.evaluate(STATE);
}

async function snapshot(page, id) {
  const path = `${artifacts}/${id}.png`;
  await page.screenshot({ path, fullPage: true });
  return page.evaluate(({ path }) => {
    const pg = window.playground, last = pg.state.last;
    const err = document.getElementById("error");
    return {
      screenshot: path,
      state: document.getElementById("status").dataset.state,
      status: document.getElementById("status").textContent,
      error: err.hidden ? null : err.textContent,
      errorName: err.hidden ? null : err.dataset.errorName,
      variantInfo: document.getElementById("variant-info").textContent,
      timingsShown: Object.fromEntries(["t-variant", "t-load", "t-first", "t-median"].map((k) => [k, document.getElementById(k).textContent])),
      resultText: document.getElementById("result").innerText,
      last: last && { model: last.model, kind: last.kind, image: last.image, variant: last.variant, worker: last.worker, summary: last.summary, timings: last.timings },
      inputs: pg.tensors("inputs"),
      outputs: pg.tensors("outputs"),
    };
  }, { path });
}

const results = [];
const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
for (const job of jobs) {
  const page = await context.newPage();
  const logs = [];
  page.on("console", (m) => { if (m.type() === "error" || m.type() === "warning") logs.push(`${m.type()}: ${m.text()}`); });
  page.on("pageerror", (e) => logs.push(`pageerror: ${e.message}`));
  const t0 = Date.now();
  const entry = { id: job.id, params: job.params, logs, snapshots: [] };
  try {
    await page.goto(`${origin}/demo/web/?${new URLSearchParams(job.params)}`);
    entry.crossOriginIsolated = await page.evaluate(() => self.crossOriginIsolated);
    await waitState(page, ["done", "error"], job.timeout ?? 120000);
    entry.snapshots.push(await snapshot(page, job.id));
    for (const [k, step] of (job.steps ?? []).entries()) {
      if (step.upload) {
        await page.setInputFiles(step.upload.selector, { name: step.upload.name, mimeType: "application/octet-stream",
          buffer: Buffer.from(step.upload.b64, "base64") });
      }
      if (step.click) await page.click(step.click);
      if (step.waitFor) await page.waitForFunction(step.waitFor, null, { timeout: 120000, polling: 50 });
      else await page.waitForFunction((s) => document.getElementById("status").dataset.state === s, step.until, { timeout: 120000, polling: 50 });
      entry.snapshots.push(await snapshot(page, `${job.id}-${k + 1}`));
    }
  } catch (e) {
    entry.failure = String(e?.stack ?? e);
    try { await page.screenshot({ path: `${artifacts}/${job.id}-failure.png`, fullPage: true }); } catch {}
  }
  entry.seconds = (Date.now() - t0) / 1000;
  results.push(entry);
  await page.close();
  process.stderr.write(`[browser] ${job.id}: ${entry.failure ? "FAILED" : "ok"} in ${entry.seconds.toFixed(1)} s\n`);
}
const version = browser.version();
await browser.close();
writeFileSync(resultsFile, JSON.stringify({ chromium: version, results }));
