// The solutions of `wasmrt bench --vision` as an application runs them, frame by frame: shared by the page
// (vision.mjs) and its Workers (vision_worker.mjs), so a solution is the same code on either thread.

// A loaded model whose runs are timed: every run adds (name, ms) to `sink.runs`; with sink.keepInputs it keeps a copy
// of its feeds in sink.feeds, so the model alone and LiteRT.js can run the same input tensor (a copy, taken before the
// run: the pipelines crop into the model's own input buffer, which the run may reuse and the next frame overwrites),
// the copy's time in sink.bookkeeping (and per model in sink.booked).
function timed(model, name, sink) {
  sink.models[name] = model;
  const kept = {};
  return {
    async run(feeds) {
      if (sink.keepInputs) {
        const t = performance.now();
        sink.feeds[name] = Object.fromEntries(Object.entries(feeds).map(([k, { data, shape }]) => {
          const copy = kept[k]?.length === data.length ? kept[k] : (kept[k] = new data.constructor(data.length));
          copy.set(data);
          return [k, { data: copy, shape }];
        }));
        const ms = performance.now() - t;
        sink.bookkeeping = (sink.bookkeeping ?? 0) + ms;
        (sink.booked ??= {})[name] = (sink.booked[name] ?? 0) + ms;
      }
      const t0 = performance.now();
      const out = await model.run(feeds);
      sink.runs.push([name, performance.now() - t0]);
      return out;
    },
    release: () => model.release(),
    _rt: model._rt, // the runtime, so the pipelines run their image operations in its engine (vision/imgops.js)
    inputView: (i) => model.inputView(i), // and crop into the model's input buffer, as with the model itself
  };
}

/**
 * One frame of each solution (face, segment, hands: maxHands 2, hand: maxHands 1) on runtime rt, each a function
 * returning what it found; only those in `want` are loaded. sink: {runs, feeds, models} (timed models) and, per
 * frame, parts (where the work outside the models goes: the pipelines' own ms, and what the frame draws) and
 * ranDetector.
 */
export async function pipelines(vision, rt, bytes, frame, sink, want = ["face", "segment", "hands", "hand"]) {
  const m = (name) => timed(rt.loadBytes(bytes[name].wrt, { name }), name, sink);
  const has = (k) => want.includes(k);
  const face = has("face") ? new vision.FaceMesh(m("face_detector"), m("face_landmark"), { maxFaces: 1 }) : null;
  const seg = has("segment")
    ? new vision.SelfieSegmenter({ [vision.chooseModel(frame.width, frame.height)]: m("selfie") }) : null;
  let hands = null, hand = null;
  if (has("hands") || has("hand")) {
    const palm = m("palm_detector"), landmarks = m("hand_landmark");
    if (has("hands")) hands = new vision.HandTracker(palm, landmarks, { maxHands: 2 }); // MediaPipe's default
    if (has("hand")) hand = new vision.HandTracker(palm, landmarks, { maxHands: 1 }); // the detector when lost
  }
  // the output frames, reused frame after frame as an application's canvas buffers: the try-on's (the photo copied
  // in first: the try-on recolours in place), the composited
  const canvas = new Uint8ClampedArray(frame.data.length), composited = new Uint8ClampedArray(frame.data.length);
  const green = [0, 177, 64];
  async function handFrame(tracker, image) {
    const r = await tracker.detect(image);
    sink.ranDetector = r.ranDetector;
    const detector = sink.runs.reduce((a, [n, ms]) => a + (n === "palm_detector" ? ms : 0), 0);
    // palm: letterbox, decoding, NMS (less the bench's copy of the detector's input)
    sink.parts = { crop: r.ms.warp ?? 0, palm: (r.ms.detector ?? 0) - detector - (sink.booked?.palm_detector ?? 0) };
    return r.hands.length;
  }
  return {
    async face(image = frame) {
      const { faces, ranDetector, ms } = await face.detect(image);
      // a fresh copy of the photo to recolour, as a camera application gets each frame from its canvas: the bench's
      // own work (it keeps the photo unchanged for the next frame), booked outside the frame
      const tc = performance.now();
      canvas.set(image.data);
      const t0 = performance.now();
      sink.bookkeeping = (sink.bookkeeping ?? 0) + (t0 - tc);
      if (faces[0]) vision.recolorLips({ data: canvas, width: image.width, height: image.height }, faces[0]);
      sink.ranDetector = ranDetector;
      sink.parts = { crop: ms.warp ?? 0, lips: performance.now() - t0 };
      return faces.length;
    },
    async segment(image = frame) {
      // segmented and composited in one call, as an application replacing the background each frame
      const { ms } = await seg.replaceBackground(image, green, { out: composited });
      const model = sink.runs.reduce((a, [, t]) => a + t, 0);
      // input: the frame stretched to the model's input; mask: resized to the frame, smoothed and composited
      sink.parts = { input: ms.model - model - (sink.booked?.selfie ?? 0), mask: ms.post };
      return 1;
    },
    hands: (image = frame) => handFrame(hands, image),
    hand: (image = frame) => handFrame(hand, image),
    async release() {
      await face?.release();
      await seg?.release();
      await (hands ?? hand)?.release(); // the two trackers share their models
    },
  };
}
