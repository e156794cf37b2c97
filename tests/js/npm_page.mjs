// Opens a plain page (import map, no bundler) of an npm project that installed the packed tarball, in Debian's
// Chromium: the page runs the README's snippet on two photos and leaves its results in window.result.
//   node npm_page.mjs URL results.json   (run by tests/test_npm_package.py; tests/test_breadth_browser.py too)
import { writeFileSync } from "node:fs";
import { chromium } from "playwright-core";

const [url, resultsFile] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"],
});
const logs = [];
let result;
try {
  const page = await browser.newPage();
  page.on("console", (m) => logs.push(`${m.type()}: ${m.text()}`));
  page.on("pageerror", (e) => logs.push(`pageerror: ${e.message}`));
  page.on("response", (r) => { if (r.status() >= 400) logs.push(`HTTP ${r.status()}: ${r.url()}`); });
  await page.goto(url);
  await page.waitForFunction(() => window.result, null, { timeout: 120000, polling: 100 });
  result = await page.evaluate(() => window.result);
} finally {
  await browser.close();
}
writeFileSync(resultsFile, JSON.stringify({ ...result, logs }));
