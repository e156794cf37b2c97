// One case of tests/js/hands_parity.mjs in headless Chromium (Debian's, through playwright-core): a page imports
// wasmrt/vision, replays Python's model outputs (hands_replay.mjs) and compares a photo's hands and a landscape
// photo's mask and composite with python_ref's.   node tests/js/hands_browser.mjs FIXTURES_DIR
import { createReadStream, existsSync, statSync } from "node:fs";
import { createServer } from "node:http";
import { extname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const FX = process.argv[2];
const TYPES = { ".js": "text/javascript", ".mjs": "text/javascript", ".json": "application/json", ".html": "text/html" };
const server = createServer((req, res) => {
  const url = decodeURIComponent(new URL(req.url, "http://x").pathname);
  const file = url.startsWith("/fx/") ? join(FX, normalize(url.slice(4))) : join(ROOT, normalize(url));
  if (url === "/") { res.writeHead(200, { "content-type": "text/html" }); res.end("<!doctype html><title>hands</title>"); return; }
  if (!existsSync(file) || !statSync(file).isFile()) { res.writeHead(404); res.end(); return; }
  res.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream" });
  createReadStream(file).pipe(res);
});
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const origin = `http://127.0.0.1:${server.address().port}`;
const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"] });
let result;
try {
  const page = await browser.newPage();
  const logs = [];
  page.on("pageerror", (e) => logs.push(`pageerror: ${e.message}`));
  await page.goto(origin + "/");
  result = await page.evaluate(async () => {
    const V = await import("/js_bindings/vision/index.js");
    const { replayRuntime } = await import("/tests/js/hands_replay.mjs");
    const get = async (f) => new Uint8Array(await (await fetch(`/fx/${f}`)).arrayBuffer());
    const M = await (await fetch("/fx/hands.json")).json();
    const tape = new Float32Array((await get(M.tape)).buffer);
    const photo = async (name) => { const p = M.photos[name]; return { data: new Uint8ClampedArray((await get(p.file)).buffer), width: p.width, height: p.height }; };
    const out = { userAgent: navigator.userAgent };
    // hands
    const hn = M.browser.hands, want = M.hands[hn];
    const tracker = await V.HandTracker.create(replayRuntime(M.tapes[`hands:${hn}`], tape), { modelBase: "/fx/models/", tracking: false });
    const { hands } = await tracker.detect(await photo(hn));
    let diff = 0;
    hands.forEach((h, k) => h.landmarks.forEach((v, i) => { diff = Math.max(diff, Math.abs(v - want[k].landmarks[i])); }));
    out.hands = { found: hands.length, want: want.length, maxDiff: diff, gestures: hands.map((h) => h.gesture),
      wantGestures: want.map((h) => h.gesture), handedness: hands.map((h) => h.handedness),
      wantHandedness: want.map((h) => h.handedness) };
    // segmentation + compositing, drawn on a canvas and read back
    const sn = M.browser.segment, S = M.segments[sn], frame = await photo(sn);
    const seg = await V.SelfieSegmenter.create(replayRuntime(M.tapes[`seg:${sn}`], tape), { modelBase: "/fx/models/", smoothing: 0 });
    const { mask, model } = await seg.segment(frame);
    const pyMask = new Uint8Array((await get(S.mask)).buffer), jsMask = new Uint8Array(mask.data.buffer);
    let maskOff = 0;
    for (let i = 0; i < pyMask.length; i++) maskOff += pyMask[i] !== jsMask[i];
    const canvas = new OffscreenCanvas(frame.width, frame.height), ctx = canvas.getContext("2d");
    V.drawSegmented(ctx, frame, mask, { background: M.background });
    const shown = ctx.getImageData(0, 0, frame.width, frame.height).data, py = await get(S.replaced);
    let pixelOff = 0;
    for (let i = 0; i < py.length; i++) pixelOff += shown[i] !== py[i];
    out.segment = { model, maskBytesOff: maskOff, canvasBytesOff: pixelOff };
    return out;
  });
  result.logs = logs;
} finally {
  await browser.close();
  server.close();
}
console.log(`HANDS_BROWSER ${JSON.stringify(result)}`);
