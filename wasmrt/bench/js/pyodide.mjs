// `wasmrt bench --pyodide` (wasmrt/bench/pyodide.py): opens the demo's Pyodide page in Debian's Chromium, waits for
// its program, then runs the Python timing code the job gives in the page's interpreter.
//   node wasmrt/bench/js/pyodide.mjs job.json result.json      job: {url, chromium, code}; result: the code's JSON
import { readFileSync, writeFileSync } from "node:fs";
import { chromium } from "playwright-core";

const job = JSON.parse(readFileSync(process.argv[2], "utf8"));
const browser = await chromium.launch({
  executablePath: job.chromium, headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"],
});
try {
  const page = await browser.newPage();
  page.on("console", (m) => console.error(m.text()));
  await page.goto(job.url);
  await page.waitForFunction(() => ["done", "error"].includes(document.getElementById("status").dataset.state),
    null, { timeout: 120000, polling: 100 });
  const error = await page.evaluate(() => window.pyodidePage.error);
  if (error) throw new Error(`the Pyodide page failed: ${error}`);
  const out = await page.evaluate((code) => window.pyodidePage.py.runPythonAsync(code), job.code);
  writeFileSync(process.argv[3], out);
} catch (e) {
  console.error(String(e?.message ?? e).slice(-4000));
  process.exitCode = 1;
} finally {
  await browser.close();
}
