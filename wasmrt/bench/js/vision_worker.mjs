// A Worker of `wasmrt bench --vision`: some of the solutions (vision_pipelines.mjs) on a one-thread runtime of its
// own, so the page's Workers run the solutions of a frame at the same time. Messages {id, op, args} -> {id, ok,
// result | error}: init {want, bytes: {name: {wrt}}, width, height, variant, wasmPaths}; frame {buffer} (the frame's
// RGBA bytes, transferred) -> {ms: {solution: ms}, found: {solution: n}}; release.
import { pipelines } from "./vision_pipelines.mjs";

let rt = null, pl = null, want = [], size = null;
const sink = { runs: [], feeds: {}, models: {} };

const ops = {
  async init(a) {
    const { init } = await import("/wasmrt/src/index.js");
    const vision = await import("/wasmrt/vision/index.js");
    rt = await init({ variant: a.variant, threads: 1, wasmPaths: a.wasmPaths });
    want = a.want;
    size = { width: a.width, height: a.height };
    const frame = { data: new Uint8ClampedArray(a.width * a.height * 4), ...size };
    pl = await pipelines(vision, rt, a.bytes, frame, sink, want);
    return { variant: rt.variant };
  },
  async frame({ buffer }) {
    const image = { data: new Uint8ClampedArray(buffer), ...size }, ms = {}, found = {};
    for (const s of want) {
      sink.runs = [];
      const t0 = performance.now();
      found[s] = await pl[s](image);
      ms[s] = performance.now() - t0;
    }
    return { ms, found };
  },
  async release() {
    await pl?.release();
    rt?.close?.();
  },
};

self.onmessage = async ({ data: { id, op, args } }) => {
  try {
    self.postMessage({ id, ok: true, result: await ops[op](args) });
  } catch (e) {
    self.postMessage({ id, ok: false, error: `${e?.name ?? "Error"}: ${e?.message ?? e}\n${e?.stack ?? ""}` });
  }
};
