// Chromium host of `wasmrt bench`: node chromium_driver.mjs JOB.json RESULT.json
// Serves the peers folder this script sits in (/peers/: node_modules and this folder), the job folder (/job/), our
// JS binding (/wasmrt/) and its wasm modules (/wasmrt/dist/), and a baseline build's (/baseline/, /baseline/dist/) cross-origin
// isolated (COOP/COEP, so timers are precise and wasm runs as in a production page), opens page.html in headless
// Chromium through playwright-core (Debian's browser, no download) and runs the job there.
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { chromium } from "playwright-core";

import { waitMs } from "./procstat.mjs";

const [jobPath, resultPath] = process.argv.slice(2);
const job = JSON.parse(fs.readFileSync(jobPath, "utf8"));
const here = path.dirname(new URL(import.meta.url).pathname);
const roots = { "/peers/": path.resolve(here, ".."), "/job/": path.dirname(path.resolve(jobPath)),
  "/wasmrt/dist/": job.wasmrt_wasm_dir, "/wasmrt/": job.wasmrt_root,
  "/baseline/dist/": job.baseline_wasm_dir, "/baseline/": job.baseline_root }; // first matching prefix wins
const MIME = { ".js": "text/javascript", ".mjs": "text/javascript", ".html": "text/html", ".json": "application/json",
  ".wasm": "application/wasm", ".bin": "application/octet-stream" };

const server = http.createServer((req, res) => {
  const url = new URL(req.url, "http://x");
  const prefix = Object.keys(roots).find((p) => url.pathname.startsWith(p));
  const file = prefix && roots[prefix] && path.join(roots[prefix], decodeURIComponent(url.pathname.slice(prefix.length)));
  if (!file || !file.startsWith(roots[prefix]) || !fs.existsSync(file) || fs.statSync(file).isDirectory()) {
    res.writeHead(404).end();
    return;
  }
  res.writeHead(200, {
    "Content-Type": MIME[path.extname(file)] ?? "application/octet-stream",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Embedder-Policy": "require-corp",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cache-Control": "no-store",
  });
  fs.createReadStream(file).pipe(res);
});
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const origin = `http://127.0.0.1:${server.address().port}`;

// CPU time of a process's main thread, in ms: /proc/PID/schedstat starts with the nanoseconds it has run.
function threadCpuMs(pid) {
  try {
    return Number(fs.readFileSync(`/proc/${pid}/schedstat`, "utf8").split(" ")[0]) / 1e6;
  } catch {
    return -1;
  }
}

// The renderer of our page: of this browser's renderers (they carry our --user-data-dir), the one whose main
// thread runs while the page spins. null where /proc is not there (the bench then has the wall clock only). Another
// renderer can be busy at the same time (one took 56 ms of a 150 ms spin, against the page's 126; where another
// renderer won, every run of the page read 0 ms of CPU), so the same renderer must stand out in two spins
// in a row; a spin that other work on the machine starves of CPU finds none, so it is tried again a few times.
async function rendererPid(page) {
  for (let attempt = 0; attempt < 5; attempt++) {
    const pid = await spinningRenderer(page);
    if (pid && pid === (await spinningRenderer(page))) return pid;
  }
  process.stderr.write("note: the page's renderer was not found in /proc: wall clock only\n");
  return null;
}

async function spinningRenderer(page) {
  let pids = [];
  try {
    pids = fs.readdirSync("/proc").filter((p) => /^\d+$/.test(p)).filter((p) => {
      try {
        const cmd = fs.readFileSync(`/proc/${p}/cmdline`, "utf8");
        return cmd.includes("--type=renderer") && cmd.includes(userDataDir);
      } catch {
        return false;
      }
    });
  } catch {
    return null;
  }
  const before = pids.map(threadCpuMs);
  await page.evaluate(() => { const t = performance.now(); while (performance.now() - t < 150); });
  const ran = pids.map((p, i) => threadCpuMs(p) - before[i]);
  const best = ran.indexOf(Math.max(...ran));
  const rival = Math.max(0, ...ran.filter((_, i) => i !== best));
  return best >= 0 && ran[best] > 75 && rival < ran[best] / 2 ? Number(pids[best]) : null;
}

const userDataDir = fs.mkdtempSync(path.join(path.dirname(path.resolve(resultPath)), "chromium-profile-"));
const context = await chromium.launchPersistentContext(userDataDir, {
  executablePath: job.chromium ?? "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", ...(job.chromium_args ?? [])], // e.g. WebGL on SwiftShader
});
let result;
try {
  const page = await context.newPage();
  page.on("console", (m) => process.stderr.write(`${m.text()}\n`));
  page.on("pageerror", (e) => process.stderr.write(`pageerror: ${e.message}\n`));
  await page.goto(`${origin}/peers/${path.basename(here)}/page.html`);
  await page.waitForFunction(() => typeof globalThis.runBench === "function", null, { timeout: 60000 });
  const pid = await rendererPid(page);
  await page.exposeFunction("wasmrtWaitMs", () => (pid ? waitMs(pid) : -1));
  await page.exposeFunction("wasmrtProgress", (line) => { process.stderr.write(`@progress ${line}\n`); });
  result = await page.evaluate((j) => globalThis.runBench(j), job);
  result.host.version = context.browser()?.version() ?? "";
} finally {
  await context.close();
  server.close();
  fs.rmSync(userDataDir, { recursive: true, force: true });
}
fs.writeFileSync(resultPath, JSON.stringify(result));
