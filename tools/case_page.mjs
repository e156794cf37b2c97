// One case in headless Chromium (Debian's chromium through playwright-core, no download): a blank page at ORIGIN
// whose requests this script answers by request interception (no server, no port): /case/<file> from the case
// folder, any other path from the checkout. Shared by tools/transfer_chromium.mjs and tests/js/trainer_browser.mjs.
import { readFileSync } from "node:fs";
import { extname, join } from "node:path";
import { chromium } from "playwright-core";

const ORIGIN = "http://wasmrt.test";
const TYPES = { ".js": "text/javascript", ".mjs": "text/javascript", ".wasm": "application/wasm", ".html": "text/html" };

/** run(page) on the blank page (titled `title`) serving `root` and the case folder `dir`; its result with the
 * browser's userAgent added, printed as one JSON line. The browser closes however run ends. */
export async function printCaseResult({ root, dir, title }, run) {
  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"] });
  try {
    const page = await browser.newPage();
    await page.route(`${ORIGIN}/**`, (route) => {
      const path = new URL(route.request().url()).pathname;
      if (path === "/") return route.fulfill({ contentType: "text/html", body: `<!doctype html><title>${title}</title>` });
      const file = path.startsWith("/case/") ? join(dir, path.slice(6)) : join(root, path);
      try {
        return route.fulfill({ contentType: TYPES[extname(file)] ?? "application/octet-stream", body: readFileSync(file) });
      } catch { return route.fulfill({ status: 404, body: "" }); }
    });
    await page.goto(`${ORIGIN}/`);
    const out = await run(page);
    out.userAgent = await page.evaluate(() => navigator.userAgent);
    console.log(JSON.stringify(out));
  } finally {
    await browser.close();
  }
}
