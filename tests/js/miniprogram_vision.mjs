// The background replacement page and the gesture try-on page of demo/miniprogram (built by build.mjs) on the
// emulated WeChat and Alipay hosts (tests/js/miniprogram_emulator.mjs): camera frames in, what the page's canvas
// shows out (raw RGBA files that tests/test_miniprogram_vision.py judges against python_ref).
//   node tests/js/miniprogram_vision.mjs config.json results.json
// config: {out, person: {file, width, height} (RGBA), hand: {file, width, height}, handFrames, background, wasm
//   (optional: a folder of modules built for the pages' models, build.mjs --wasm)}
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";

import { build } from "../../demo/miniprogram/build.mjs";
import { clipFrame } from "../../js_bindings/vision/index.js";
import { MiniProgram, moduleGraph } from "./miniprogram_emulator.mjs";

const [configFile, resultsFile] = process.argv.slice(2);
const cfg = JSON.parse(readFileSync(configFile, "utf8"));
const image = ({ file, width, height }) => {
  const b = readFileSync(file);
  return { data: new Uint8Array(b.buffer, b.byteOffset, b.length), width, height };
};
const PERSON = image(cfg.person), HAND = image(cfg.hand);
const WORK = mkdtempSync(join(tmpdir(), "wasmrt-mp-vision-"));

const until = async (pred, what, ms = 120000) => {
  const t0 = Date.now();
  while (!pred()) {
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
};

async function openPage(platform, root, path) {
  const mp = new MiniProgram({ platform, root });
  const page = await mp.open(path);
  await until(() => page.ctx || page.data.status.startsWith("error"), `${platform} ${path}: ready`);
  if (page.data.status !== "ready") throw new Error(`${platform} ${path}: ${page.data.status}`);
  const run = async (frame) => {
    const before = page.results;
    mp.cameraFrame(frame.data, frame.width, frame.height);
    await until(() => page.results > before || page.data.status.startsWith("error"), `${platform} ${path}: a result`);
    if (page.data.status.startsWith("error")) throw new Error(`${platform} ${path}: ${page.data.status}`);
    return page.lastResult;
  };
  return { mp, page, run };
}

function saveCanvas(mp, name) {
  const c = mp.canvases.out;
  const file = join(cfg.out, `${name}.rgba`);
  writeFileSync(file, c.pixels);
  return { file, width: c.width, height: c.height };
}

const results = {};
try {
  for (const platform of ["wechat", "alipay"]) {
    const root = build({ only: [platform], target: join(WORK, platform), ...(cfg.wasm ? { dist: cfg.wasm } : {}) })[platform];
    const r = (results[platform] = {});
    // the new pages' code uses only what a mini-program has (no import.meta, no dynamic import, no bare imports)
    r.scanned = [];
    for (const p of ["pages/segment/segment.js", "pages/gesture/gesture.js"]) {
      for (const { file, src, deps } of moduleGraph(join(root, p))) {
        const code = src.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
        if (/import\.meta|\bimport\s*\(|require\s*\(/.test(code)) throw new Error(`${platform} ${relative(root, file)}: import.meta, import() or require`);
        for (const d of deps) if (!d.startsWith(".")) throw new Error(`${platform} ${relative(root, file)}: bare import ${d}`);
        r.scanned.push(relative(root, file));
      }
    }

    // background replacement: the page's colour control, then a few frames of the person (smoothing settles)
    {
      const { mp, page, run } = await openPage(platform, root, "pages/segment/segment");
      page.onColorTap({ currentTarget: { dataset: { color: cfg.background } } });
      let last;
      for (let k = 0; k < 3; k++) last = await run(PERSON);
      r.segment = { shown: saveCanvas(mp, `${platform}-segment`), model: last.model, personShare: last.personShare,
        stats: page.data.stages, variant: page.data.variant };
      page.onUnload();
      mp.close();
    }

    // the gesture try-on: lipstick in the first colour; an open palm (a clip of the hand photo) changes it once,
    // however long it is held; the face again shows the next colour
    {
      const { mp, page, run } = await openPage(platform, root, "pages/gesture/gesture");
      page.onIntensityChange({ detail: { value: 80 } });
      const first = page.data.color;
      for (let k = 0; k < 2; k++) await run(PERSON);
      const before = saveCanvas(mp, `${platform}-gesture-before`);
      const seen = [];
      for (let k = 0; k < cfg.handFrames; k++) {
        const res = await run(clipFrame(HAND, k, 48, 384));
        seen.push(res.hands.map((h) => h.gesture));
      }
      const during = page.data.color;
      for (let k = 0; k < 2; k++) await run(PERSON);
      const after = saveCanvas(mp, `${platform}-gesture-after`);
      r.gesture = { first, during, afterColor: page.data.color, colors: page.data.colors, seen, before, after,
        shownGesture: page.data.gesture, actions: page.data.actions, stats: page.data.stages };
      page.onUnload();
      mp.close();
    }
    process.stderr.write(`[mp-vision] ${platform} done\n`);
  }
} finally {
  rmSync(WORK, { recursive: true, force: true });
}
writeFileSync(resultsFile, JSON.stringify(results));
process.exit(0); // the emulated hosts' timers
