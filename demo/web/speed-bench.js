// The timing loop of the speed page, as `wasmrt bench` defines it: one run = copy the inputs in + run + read the
// outputs (Model.runSync does all three); warm-up first, then rounds in which every engine runs once, the order
// rotated by one each round so no engine always runs right after another one cooled the caches.

export const median = (a) => {
  const s = [...a].sort((x, y) => x - y), m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** GFLOP/s of a run taking `ms` milliseconds: 2 FLOPs per multiply-accumulate. */
export const gflops = (macs, ms) => (2 * macs) / (ms * 1e6);

// Random inputs in [-1, 1] from a fixed seed (mulberry32), so every build sees the same numbers.
export function randomFeeds(model, seed = 1) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const feeds = {};
  for (const t of model.inputs) {
    const data = new Float32Array(t.shape.reduce((n, d) => n * d, 1));
    for (let i = 0; i < data.length; i++) data[i] = next() * 2 - 1;
    feeds[t.name] = { data, shape: t.shape };
  }
  return feeds;
}

// Let the page paint the progress between runs (outside the timed region).
const yieldToPage = () => new Promise((resolve) => setTimeout(resolve, 0));

/**
 * engines: [{id, model}] (wasmrt Models of the same graph); returns {id: times_ms[]}.
 * progress(done, total) is called after every run.
 */
export async function timeEngines(engines, feeds, { warmup, rounds }, progress = () => {}) {
  const times = Object.fromEntries(engines.map((e) => [e.id, []]));
  const total = engines.length * (warmup + rounds);
  let done = 0;
  for (let w = 0; w < warmup; w++) {
    for (const e of engines) {
      e.model.runSync(feeds);
      progress(++done, total);
      await yieldToPage();
    }
  }
  for (let r = 0; r < rounds; r++) {
    for (let k = 0; k < engines.length; k++) {
      const e = engines[(k + r) % engines.length];
      const t0 = performance.now();
      e.model.runSync(feeds);
      times[e.id].push(performance.now() - t0);
      progress(++done, total);
      await yieldToPage();
    }
  }
  return times;
}
