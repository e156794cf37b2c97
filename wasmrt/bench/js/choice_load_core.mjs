// The load cost of choose: "measure" (docs/choices.md), run in Node or a page: per model and pass, a plain rules load,
// the first measured load (the cache emptied by clear()), the cached second load, and the rules load again,
// interleaved in that order so drift on a shared machine falls on all of them; and a load forced to the cached plan
// without the cache (samePlan: what the cached load costs without its key, lookup and checks). Times in ms, from the
// bytes in memory.
const now = () => performance.now();

export async function loadCosts(wasmrt, models, clear, passes = 3) {
  const rt = await wasmrt.init({ variant: "relaxed" });
  const out = [];
  for (let p = 0; p < passes; p++) {
    for (const { name, bytes } of models) {
      const row = { pass: p + 1, model: name };
      let plan = [];
      const time = async (key, options) => {
        const t0 = now();
        const m = await rt.load(bytes, options);
        row[key] = now() - t0;
        row[`${key}By`] = m.chosenBy;
        plan = m.plan().map((r) => (r.candidates.length >= 2 ? r.chosen : -1));
        m.release();
      };
      const samePlan = () => {
        const t0 = now();
        rt._loadForced(bytes, {}, plan, -1).release(); // the engine's load alone, forced to the cached plan
        row.samePlan = now() - t0;
      };
      await time("rules", {});
      await clear();
      await time("measured", { choose: "measure" });
      await time("cached", { choose: "measure" });
      samePlan();
      await time("rulesAgain", {});
      await time("cachedAgain", { choose: "measure" });
      out.push(row);
    }
  }
  return out;
}
