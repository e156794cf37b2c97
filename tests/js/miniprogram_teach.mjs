// The teach-the-camera page of demo/miniprogram (built by build.mjs) on the emulated WeChat and Alipay hosts
// (tests/js/miniprogram_emulator.mjs), driven as a person would: class names typed, photos picked from the album,
// one snapshot of the camera, train; then camera frames of held-out photos, what the canvas shows and the page's
// class; save; the mini-program closed and opened again (same user files and storage), reload, the same frames.
// tests/test_miniprogram_teach.py judges the results.
//   node tests/js/miniprogram_teach.mjs config.json results.json
// config: {out, classes: [{name, photos: [{file, width, height} (RGBA)], snapshots: [...]}], heldOut: [{name, file,
//   width, height}], camera: {file, width, height}}
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { build, packageSizes } from "../../demo/miniprogram/build.mjs";
import { BANNER, CLASS_COLORS } from "../../demo/web/teach-core.js";
import { MiniProgram } from "./miniprogram_emulator.mjs";

const [configFile, resultsFile] = process.argv.slice(2);
const cfg = JSON.parse(readFileSync(configFile, "utf8"));
const image = ({ file, width, height }) => {
  const b = readFileSync(file);
  return { data: new Uint8Array(b.buffer, b.byteOffset, b.length), width, height };
};
const WORK = mkdtempSync(join(tmpdir(), "wasmrt-mp-teach-"));
const t0 = Date.now();
const mark = (what) => process.stderr.write(`[mp-teach] ${what} at ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);

const until = async (pred, what, ms = 120000) => {
  const start = Date.now();
  while (!pred()) {
    if (Date.now() - start > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
};

async function openPage(mp, platform) {
  const page = await mp.open("pages/teach/teach");
  await until(() => page.ctx || page.data.status.startsWith("error"), `${platform}: ready`);
  if (page.data.status !== "ready") throw new Error(`${platform}: ${page.data.status}`);
  return page;
}

const failed = (page) => page.data.status.startsWith("error");

/** One camera frame, classified and shown: the page's class and the canvas' pixels. */
async function classifyFrame(mp, page, img, name) {
  await until(() => !page.busy, "the frame before");
  const before = page.results;
  mp.cameraFrame(img.data, img.width, img.height);
  await until(() => page.results > before || failed(page), "a classified frame");
  if (failed(page)) throw new Error(page.data.status);
  const c = mp.canvases.out;
  const file = join(cfg.out, `${name}.rgba`);
  writeFileSync(file, c.pixels);
  return { ...page.lastResult, text: page.data.prediction, shown: { file, width: c.width, height: c.height } };
}

const tap = (k) => ({ currentTarget: { dataset: { index: k } } });
const results = {};
try {
  for (const platform of ["wechat", "alipay"]) {
    const root = build({ only: [platform], target: join(WORK, platform) })[platform];
    const r = (results[platform] = { sizes: packageSizes(root) });
    const store = { files: new Map(), storage: new Map() }; // the device's: kept when the mini-program closes
    let mp = new MiniProgram({ platform, root, store });
    let page = await openPage(mp, platform);
    mark(`${platform} ready`);
    Object.assign(r, { colors: CLASS_COLORS, banner: BANNER });
    for (let k = 0; k < cfg.classes.length; k++) {
      const c = cfg.classes[k];
      page.onNameInput({ ...tap(k), detail: { value: c.name } });
      mp.pickPhotos(c.photos.map(image));
      await page.onAlbumTap(tap(k));
      for (const s of c.snapshots) {
        const n = page.samples[k].length;
        page.onSnapshotTap(tap(k));
        const img = image(s);
        mp.cameraFrame(img.data, img.width, img.height);
        await until(() => page.samples[k].length > n || failed(page), "a snapshot");
      }
    }
    r.counts = page.data.classes.map((c) => c.count);
    r.names = page.data.classes.map((c) => c.name);
    await page.onTrainTap();
    r.trained = { status: page.data.status, progress: page.data.progress, info: page.data.trainInfo, trained: page.data.trained };
    mark(`${platform} trained (${page.data.status})`);
    if (!page.data.trained) throw new Error(`${platform}: ${page.data.status}`);
    r.camera = await classifyFrame(mp, page, image(cfg.camera), `${platform}-camera`);
    r.before = {};
    for (const h of cfg.heldOut) r.before[h.name] = await classifyFrame(mp, page, image(h), `${platform}-before-${h.name}`);
    await page.onSaveTap();
    r.saved = page.data.storeInfo;
    page.onUnload();
    mp.close();

    // the mini-program opened again: untrained until reload reads the saved model back
    mp = new MiniProgram({ platform, root, store });
    page = await openPage(mp, platform);
    r.reopened = { trained: page.data.trained, store: page.data.storeInfo };
    await page.onReloadTap();
    r.reloaded = { status: page.data.status, trained: page.data.trained, names: page.data.classes.map((c) => c.name) };
    r.after = {};
    for (const h of cfg.heldOut) r.after[h.name] = await classifyFrame(mp, page, image(h), `${platform}-after-${h.name}`);
    page.onUnload();
    mp.close();
    mark(`${platform} done`);
  }
} finally {
  rmSync(WORK, { recursive: true, force: true });
}
writeFileSync(resultsFile, JSON.stringify(results));
process.exit(0); // the emulated hosts' timers
