// The measurement of tools/vision_frame_ms.mjs, the same code in Node and in a page: per-frame time of each pipeline
// (median of `runs` frames after 3 warm-up frames), the models' run() time within it, and the rest (outside the
// models), with the image operations in the engine ("engine") and in JS ("js"). clock: milliseconds (wall clock by
// default; the Node driver's --cpu gives the process's CPU time, steadier on a loaded machine).

/** The measurement, the same code in Node and in the page. load(file) -> bytes; V: wasmrt/vision; W: wasmrt. */
const BLOCK = 10;
const WARM_UP = 20;

export async function measure({ V, W, load, frames, variant, wasmPaths, models, runs, clock = () => performance.now() }) {
  const rt = await W.init({ variant, wasmPaths });
  const timed = (model, acc) => ({ // a model whose run() time adds to acc.ms
    _rt: model._rt,
    async run(feeds) { const t = clock(); const r = await model.run(feeds); acc.ms += clock() - t; return r; },
    release: () => model.release?.(),
  });
  const modelOf = async (f) => rt.loadBytes(await load(`${models}/${f}`), { name: f });
  const frame = async (name) => { const f = frames[name]; return { data: new Uint8ClampedArray(await load(f.file)), width: f.width, height: f.height }; };
  const median = (a) => { const s = [...a].sort((x, y) => x - y); return s[s.length >> 1]; };
  const out = { variant: rt.variant, target: rt.target };
  const solutions = {
    async hands(ops, acc) {
      const t = new V.HandTracker(timed(await modelOf("palm_detection_full.wrt"), acc),
        timed(await modelOf("hand_landmark_full.wrt"), acc), { maxHands: 1, imageOps: ops });
      const img = await frame("hand");
      await t.detect(img); // finds the hand; later frames track it
      return async () => { const r = await t.detect(img); if (!r.hands.length) throw new Error("hand lost"); };
    },
    async segmentation(ops, acc) {
      const s = new V.SelfieSegmenter({ general: timed(await modelOf("selfie_segmentation.wrt"), acc),
        landscape: timed(await modelOf("selfie_segmentation_landscape.wrt"), acc) }, { imageOps: ops });
      const img = await frame("person");
      return async () => { const { mask } = await s.segment(img); V.replaceBackground(img, mask, [0, 177, 64]); };
    },
    async facemesh(ops, acc) {
      const f = new V.FaceMesh(timed(await modelOf("face_detector.wrt"), acc),
        timed(await modelOf("face_landmark.wrt"), acc), { imageOps: ops });
      const img = await frame("face");
      await f.detect(img);
      return async () => { const r = await f.detect(img); if (!r.faces.length) throw new Error("face lost"); };
    },
  };
  for (const [name, make] of Object.entries(solutions)) {
    // both configurations built side by side and timed in alternating blocks of BLOCK frames, so the machine's load
    // falls on both (frame by frame, the JS ports' garbage would be collected in the other configuration's frames)
    const kinds = ["engine", "js"], acc = {}, step = {}, total = {}, model = {};
    for (const ops of kinds) {
      acc[ops] = { ms: 0 };
      step[ops] = await make(ops, acc[ops]);
      total[ops] = [];
      model[ops] = [];
    }
    // the engine's code tiers up (V8 compiles hot wasm functions again, in the background) during the first frames
    for (const ops of kinds) for (let i = 0; i < WARM_UP; i++) await step[ops]();
    for (let block = 0; block * BLOCK < runs; block++) {
      for (const ops of block % 2 ? [...kinds].reverse() : kinds) {
        globalThis.gc?.(); // the previous block's garbage collected now, not in this block's frames (--expose-gc)
        for (let i = 0; i < 3; i++) await step[ops](); // warm-up
        for (let i = 0; i < BLOCK; i++) {
          acc[ops].ms = 0;
          const t = clock();
          await step[ops]();
          total[ops].push(clock() - t);
          model[ops].push(acc[ops].ms);
        }
      }
    }
    for (const ops of kinds) {
      const tm = median(total[ops]), mm = median(model[ops]);
      const outside = total[ops].map((t, k) => t - model[ops][k]);
      out[`${name}/${ops}`] = { total: +tm.toFixed(2), model: +mm.toFixed(2), outside: +median(outside).toFixed(2),
        outsideShare: +(median(outside) / tm).toFixed(3) };
    }
  }
  return out;
}

