// Per-layer algorithm choice (docs/choices.md): the engine lists each op's candidates (index 0: the dense path)
// and keeps the measuring procedure's constants and decision (wrt_tune_*, kernels_wasm/engine/choice.c); this file
// loads, times op by op with performance.now (the wasm modules have no clock) and feeds the times back, as
// wasmrt/engines/choose.py does in Python. Measured choices are cached per model digest, engine build and device:
// the digest wasmrt's writer stores in the file (read with its metadata, at no cost), else one computed at load.

import { DIGEST_PREFIX, DIGEST_PROP } from "./format/generated.js";
import { readMetadata } from "./format/reader.js";

export const CHOOSE_MODES = ["rules", "measure", "deterministic"];
const CACHE_VERSION = 1;
const MAX_CACHE_CHARS = 4 << 20; // an entry longer than this is not read
const MAX_CANDIDATES = 4;
const now = () => (typeof performance !== "undefined" ? performance.now() : Date.now());

/** Per op of a loaded model: {op, type, name, kernel, candidates, chosen, timesMs}. */
export function planOf(model) {
  const rt = model._rt, ex = rt._ex, h = model._h;
  const rows = [];
  const n = ex.wrt_num_ops(h);
  for (let i = 0; i < n; i++) {
    const cands = Array.from({ length: ex.wrt_op_num_choices?.(h, i) ?? 0 },
      (_, k) => rt._cstr(ex.wrt_op_choice_name(h, i, k) >>> 0));
    const times = cands.length ? model._choiceTimes?.[i] ?? null : null;
    rows.push({
      op: i, type: rt._cstr(ex.wrt_op_type(h, i) >>> 0), name: rt._cstr(ex.wrt_op_name(h, i) >>> 0),
      kernel: rt._cstr(ex.wrt_op_kernel(h, i) >>> 0), candidates: cands,
      chosen: cands.length ? ex.wrt_op_chosen(h, i) : -1, timesMs: times ? times.slice(0, cands.length) : null,
    });
  }
  return rows;
}

// per op: its candidate count, and the chosen index (-1 without alternatives); two engine calls an op
function countsOf(model) {
  const ex = model._rt._ex, h = model._h;
  return Array.from({ length: ex.wrt_num_ops(h) }, (_, i) => ex.wrt_op_num_choices?.(h, i) ?? 0);
}
const chosenOf = (model) => countsOf(model).map((n, i) => (n >= 2 ? model._rt._ex.wrt_op_chosen(model._h, i) : -1));

/** Time each candidate index on this device and load with the fastest per op (the engine decides). load(choices,
 * force) loads the model with per-op forced indices (and force on every other op). */
export function measure(rt, load, rulesModel = null) {
  const ex = rt._ex;
  const start = now();
  let base = rulesModel ?? load([], -1); // the rules' choice: which ops have candidates, which index the rules take
  const rows = planOf(base);
  const n = rows.length, counts = rows.map((r) => r.candidates.length), rules = rows.map((r) => r.chosen);
  base._chosenBy = "measured";
  if (Math.max(0, ...counts) < 2) return base;
  const [passes, warm, budgetMs] = [0, 1, 2].map((j) => ex.wrt_tune_param(j));
  const ops = counts.flatMap((c, i) => (c >= 2 ? [i] : []));
  ex.wrt_tune_begin(n);
  let timed = false;
  for (let k = 0; k < Math.max(...counts); k++) {
    if (timed && now() - start > budgetMs) break; // the rest keep the rules (wrt_tune_pick without times)
    const same = ops.every((i) => counts[i] <= k || rules[i] === k);
    const model = same ? base : load([], k);
    try {
      for (let p = 0; p < warm + passes; p++) { // the ops with a candidate k, each alone (wrt_tune_param's words)
        for (const i of ops) {
          if (counts[i] <= k) continue;
          const t0 = now();
          model._runOps(i, i + 1);
          if (p >= warm) ex.wrt_tune_time(i, k, now() - t0);
        }
      }
      timed = true;
    } finally {
      if (model !== base) model.release();
    }
  }
  const vector = rules.map((r, i) => (counts[i] >= 2 ? ex.wrt_tune_pick(i, r) : -1));
  const times = {};
  for (const i of ops) {
    times[i] = Array.from({ length: counts[i] }, (_, k) => {
      const t = ex.wrt_tune_median(i, k);
      return t >= 0 ? Math.round(t * 1e6) / 1e6 : null;
    });
  }
  if (vector.some((v, i) => counts[i] >= 2 && v !== rules[i])) {
    base.release();
    base = load(vector, -1);
  }
  base._chosenBy = "measured";
  base._choiceTimes = times;
  return base;
}

/** A cache entry's shape (anything else, from a hostile or stale store, is ignored and measured again). */
export function validEntry(e) {
  if (!e || typeof e !== "object" || e.version !== CACHE_VERSION) return false;
  const { choices, counts, times } = e;
  if (!Array.isArray(choices) || !Array.isArray(counts) || !times || typeof times !== "object" || Array.isArray(times)) return false;
  if (choices.length !== counts.length || counts.length > 1 << 20) return false;
  for (let i = 0; i < counts.length; i++) {
    const c = choices[i], n = counts[i];
    if (!Number.isInteger(c) || !Number.isInteger(n) || n < 0 || n > MAX_CANDIDATES) return false;
    if (n < 2 ? c !== -1 : c < -1 || c >= n) return false;
  }
  for (const [key, row] of Object.entries(times)) {
    if (!/^\d+$/.test(key) || +key >= counts.length || !Array.isArray(row) || row.length !== counts[+key]) return false;
    if (!row.every((t) => t === null || (typeof t === "number" && t >= 0 && t < 1e9))) return false;
  }
  return true;
}

export function parseEntry(text) {
  if (typeof text !== "string" || text.length > MAX_CACHE_CHARS) return null;
  try {
    const e = JSON.parse(text);
    return validEntry(e) ? e : null;
  } catch {
    return null;
  }
}

function entryOf(model) {
  const counts = countsOf(model);
  return { version: CACHE_VERSION, counts, choices: chosenOf(model), times: model._choiceTimes ?? {} };
}

/** SHA-256 hex of the bytes where the host has WebCrypto, else a 64-bit FNV-1a (mini-programs). */
async function digest(bytes) {
  const subtle = globalThis.crypto?.subtle;
  if (subtle) {
    try {
      const h = new Uint8Array(await subtle.digest("SHA-256", bytes));
      return Array.from(h, (b) => b.toString(16).padStart(2, "0")).join("");
    } catch { /* insecure contexts: below */ }
  }
  return fnv64(bytes);
}

/** FNV-1a 64 of the bytes, "fnv" + 16 hex digits; synchronous (WebCrypto's digest is a trip to another thread). */
function fnv64(bytes) {
  let lo = 0x84222325, hi = 0xcbf29ce4;
  for (let i = 0; i < bytes.length; i++) { // FNV-1a 64 in two 32-bit halves
    lo = (lo ^ bytes[i]) >>> 0; // unsigned: ^ gives a signed int32
    const l = lo * 0x1b3, m = hi * 0x1b3 + lo * 256 + Math.floor(l / 0x100000000); // exact below 2^53
    lo = l >>> 0;
    hi = m >>> 0;
  }
  return `fnv${hi.toString(16).padStart(8, "0")}${lo.toString(16).padStart(8, "0")}`;
}

export { digest as digestForTests };

/** The writer's content digest stored in the file, or null (absent, left as zeros, or the file is unreadable: its
 * load then says why). */
export function storedDigest(bytes) {
  let v;
  try { v = readMetadata(bytes).props[DIGEST_PROP]; } catch { return null; }
  const hex = typeof v === "string" && v.startsWith(DIGEST_PREFIX) ? v.slice(DIGEST_PREFIX.length) : "";
  return /^[0-9a-f]{64}$/.test(hex) && /[^0]/.test(hex) ? v : null;
}

/** The cache key: model digest (model: the file's stored digest, or its bytes to hash), engine build (package
 * version, variant, target, threads), device. With the stored digest it is computed at once, without WebCrypto. */
export async function cacheKey(rt, model, version, device) {
  if (typeof model === "string") return storedKey(rt, model, version, device);
  const text = [await digest(model), version, rt.variant, rt.target, `threads=${rt.threads}`, device].join("\n");
  return `wasmrt-choices-v${CACHE_VERSION}-${(await digest(new TextEncoder().encode(text))).slice(0, 40)}`;
}

// the file's own digest (its first 128 bits) and an FNV-1a 64 of the rest of the key
function storedKey(rt, model, version, device) {
  const rest = new TextEncoder().encode([version, rt.variant, rt.target, `threads=${rt.threads}`, device].join("\n"));
  return `wasmrt-choices-v${CACHE_VERSION}-${model.slice(DIGEST_PREFIX.length, DIGEST_PREFIX.length + 32)}-${fnv64(rest)}`;
}

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

function cached(model, entry) {
  model._chosenBy = "cache";
  model._choiceTimes = entry.times;
  return model;
}

async function readEntry(store, key) {
  try { return parseEntry(await store?.get(key)); } catch { return null; }
}

async function measureAndStore(rt, load, rules, store, key) {
  const model = measure(rt, load, rules);
  try { await store?.set(key, JSON.stringify(entryOf(model))); } catch { /* a cache that cannot be written */ }
  return model;
}

/** load() with {choose: "measure"}: a cached choice when the store has one that fits, else measured and stored.
 * With the writer's digest in the file, the key costs nothing and a cached choice is forced at the one load, before
 * the weights are packed; it counts only if the engine's candidates and choices then match it. */
export async function loadMeasured(rt, bytes, loadFrom, store, version, device) {
  const stored = storedDigest(bytes);
  if (!stored) return loadMeasuredHashing(rt, bytes, loadFrom, store, version, device);
  const key = storedKey(rt, stored, version, device);
  const entry = await readEntry(store, key);
  // every load below runs without an await between them: they read the same bytes, the caller's, not a copy
  const load = (choices, force) => loadFrom(bytes, choices, force);
  if (entry) {
    let model = null;
    try { model = load(entry.choices, -1); } catch { model = null; } // a vector the engine refuses: measured again
    if (model && same(countsOf(model), entry.counts) && same(chosenOf(model), entry.choices)) return cached(model, entry);
    model?.release();
  }
  const rules = load([], -1);
  // a model without alternatives has nothing to measure: its entry says so, as Python's does
  return measureAndStore(rt, load, rules, store, key);
}

/** A file without the writer's digest: the rules' load first, so a model without alternatives (most) costs nothing
 * more, not even its digest; then the digest, and a second load where the cached choice differs from the rules'. */
async function loadMeasuredHashing(rt, bytes, loadFrom, store, version, device) {
  const rules = loadFrom(bytes, [], -1);
  const counts = countsOf(rules);
  if (Math.max(0, ...counts) < 2) {
    rules._chosenBy = "measured";
    return rules;
  }
  const copy = bytes.slice(); // loaded again after awaits, during which the caller may change its buffer
  const load = (choices, force) => loadFrom(copy, choices, force);
  const key = await cacheKey(rt, copy, version, device);
  const entry = await readEntry(store, key);
  if (entry && same(entry.counts, counts)) {
    const fits = same(chosenOf(rules), entry.choices);
    const model = fits ? rules : load(entry.choices, -1);
    if (fits || (same(countsOf(model), counts) && same(chosenOf(model), entry.choices))) {
      if (model !== rules) rules.release();
      return cached(model, entry);
    }
    model.release(); // it does not fit this model or engine
  }
  return measureAndStore(rt, load, rules, store, key);
}
