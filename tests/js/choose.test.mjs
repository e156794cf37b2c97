// Per-layer algorithm choice in JS: the load option `choose` (rules, deterministic, measure), model.plan(), the
// cache of measured choices in the host's storage (Node: a file per key) and hostile entries in it. No assert
// depends on how fast anything runs.
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import * as wasmrt from "wasmrt";
import { miniProgramHost } from "wasmrt/hosts/miniprogram";
import { manifest, maxErr, readArray } from "./helpers.mjs";

const TOL = 2e-5;
const entry = manifest.sparse; // pruned to 80% in 1x4 blocks: its 1x1 convolution and dense layer are sparse or dense

function feedsOf() {
  const feeds = {};
  for (const [k, e] of Object.entries(entry.inputs)) feeds[k] = { data: readArray(e), shape: e.shape };
  return feeds;
}

function checkOutputs(model, what) {
  const out = model.runSync(feedsOf());
  for (const [k, e] of Object.entries(entry.outputs)) {
    const { err, ref } = maxErr(out[k].data, readArray(e));
    assert.ok(err <= TOL * ref + 2e-6, `${what}: ${k} error ${err}`);
  }
}

const withChoices = (model) => model.plan().filter((r) => r.candidates.length);

test("plan() lists each op's candidates; rules by default, deterministic takes the dense path", async () => {
  const rt = await wasmrt.init({ variant: "simd" });
  const bytes = new Uint8Array(readFileSync(entry.path));
  const rules = rt.loadBytes(bytes);
  assert.equal(rules.chosenBy, "rules");
  const plan = rules.plan();
  assert.deepEqual(plan.map((r) => r.op), plan.map((_, i) => i));
  const rows = withChoices(rules);
  assert.ok(rows.length >= 2, "the sparse 1x1 convolution and dense layer have candidates");
  for (const r of rows) {
    assert.ok(r.candidates.includes("sparse") && ["dense", "igemm"].includes(r.candidates[0]), r.candidates.join());
    assert.ok(r.chosen >= 0 && r.chosen < r.candidates.length && r.timesMs === null);
  }
  checkOutputs(rules, "rules");
  const det = rt.loadBytes(bytes, { choose: "deterministic" });
  assert.equal(det.chosenBy, "deterministic");
  assert.ok(withChoices(det).every((r) => r.chosen === 0));
  const a = det.runSync(feedsOf()), b = det.runSync(feedsOf());
  for (const k of Object.keys(a)) assert.deepEqual(a[k].data, b[k].data);
  checkOutputs(det, "deterministic");
  assert.throws(() => rt.loadBytes(bytes, { choose: "fastest" }),
    (e) => e instanceof wasmrt.InputError && /choose must be "rules", "measure" or "deterministic"/.test(e.message));
});

test("measure: timed once, cached in a file, reused; hostile entries are ignored and measured again", async () => {
  process.env.WASMRT_CACHE_DIR = mkdtempSync(join(tmpdir(), "wasmrt-choices-"));
  const dir = join(process.env.WASMRT_CACHE_DIR, "choices");
  const rt = await wasmrt.init({ variant: "simd" });
  const m = await rt.load(entry.path, { choose: "measure" });
  assert.equal(m.chosenBy, "measured");
  for (const r of withChoices(m)) assert.equal(r.timesMs.length, r.candidates.length);
  checkOutputs(m, "measured");
  const files = readdirSync(dir);
  assert.equal(files.length, 1);
  const again = await rt.load(entry.path, { choose: "measure" });
  assert.equal(again.chosenBy, "cache");
  assert.deepEqual(withChoices(again), withChoices(m));
  const good = JSON.parse(readFileSync(join(dir, files[0]), "utf8"));
  const hostile = [
    "{\"version\": 1, \"choices\": [", "[]", "null", "[".repeat(100000),
    JSON.stringify({ ...good, version: 2 }),
    JSON.stringify({ ...good, choices: good.choices.slice(1), counts: good.counts.slice(1) }),
    JSON.stringify({ ...good, choices: good.choices.map((c, i) => (good.counts[i] >= 2 ? 5 : c)) }),
    JSON.stringify({ ...good, choices: good.choices.map((c) => String(c)) }),
    JSON.stringify({ ...good, times: { 0: "fast" } }),
    JSON.stringify({ ...good, pad: "x".repeat(5 << 20) }),
  ];
  for (const text of hostile) {
    writeFileSync(join(dir, files[0]), text);
    const h = await rt.load(entry.path, { choose: "measure" });
    assert.equal(h.chosenBy, "measured", text.slice(0, 60));
    checkOutputs(h, "after a hostile entry");
  }
});

test("the writer's digest keys the cache: a cached choice is forced at the one load, the file is not hashed", async () => {
  const { storedDigest } = await import("../../js_bindings/src/choose.js");
  const seen = new Map();
  const host = { ...wasmrt.defaultHost(), storage: { async get(k) { return seen.get(k) ?? null; }, async set(k, v) { seen.set(k, v); } } };
  const rt = await wasmrt.init({ variant: "simd" });
  const bytes = new Uint8Array(readFileSync(entry.path));
  const digest = storedDigest(bytes);
  assert.match(digest, /^sha256:[0-9a-f]{64}$/);
  assert.equal((await rt.load(bytes, { choose: "measure", host })).chosenBy, "measured");
  const [[key, text]] = [...seen];
  const e = JSON.parse(text);
  const rules = rt.loadBytes(bytes).plan();
  const i = rules.findIndex((r) => r.candidates.length >= 2);
  e.choices[i] = 1 - rules[i].chosen; // a choice the rules would not make: a second load cannot hide
  seen.set(key, JSON.stringify(e));
  const loads = [];
  const loadForced = rt._loadForced;
  rt._loadForced = function (...args) { loads.push(args[2]); return loadForced.apply(this, args); };
  const subtle = globalThis.crypto.subtle, realDigest = subtle.digest;
  subtle.digest = function (alg, data) {
    if (data.byteLength >= bytes.length) throw new Error("hashed the file");
    return realDigest.call(subtle, alg, data);
  };
  try {
    const m = await rt.load(bytes, { choose: "measure", host });
    assert.equal(m.chosenBy, "cache");
    assert.equal(loads.length, 1);
    assert.equal(m.plan()[i].chosen, e.choices[i]);
    checkOutputs(m, "cached");
  } finally {
    subtle.digest = realDigest;
    rt._loadForced = loadForced;
  }
  // a file claiming that digest whose layers differ: the entry does not fit, measured again
  const other = JSON.parse(text);
  other.counts = other.counts.map(() => 0);
  other.choices = other.choices.map(() => -1);
  seen.set(key, JSON.stringify(other));
  assert.equal((await rt.load(bytes, { choose: "measure", host })).chosenBy, "measured");
  // an older file (the digest's digits as zeros) is hashed for its key
  const old = bytes.slice();
  const at = Buffer.from(old).indexOf(digest);
  old.set(new TextEncoder().encode("0".repeat(64)), at + 7);
  assert.equal(storedDigest(old), null);
  assert.equal((await rt.load(old, { choose: "measure", host })).chosenBy, "measured");
  assert.equal((await rt.load(old, { choose: "measure", host })).chosenBy, "cache");
  assert.equal(seen.size, 2);
});

test("a host's storage keeps the entries; values of any type from it are ignored", async () => {
  const seen = new Map();
  let bad = null;
  const storage = { async get(k) { return bad ?? seen.get(k) ?? null; }, async set(k, v) { seen.set(k, v); } };
  const host = { ...wasmrt.defaultHost(), storage };
  const rt = await wasmrt.init({ variant: "scalar" });
  const bytes = new Uint8Array(readFileSync(entry.path));
  assert.equal((await rt.load(bytes, { choose: "measure", host })).chosenBy, "measured");
  assert.equal(seen.size, 1);
  assert.equal((await rt.load(bytes, { choose: "measure", host })).chosenBy, "cache");
  for (bad of [42, { version: 1 }, ["x"], "x".repeat(5 << 20)]) {
    assert.equal((await rt.load(bytes, { choose: "measure", host })).chosenBy, "measured");
  }
  bad = null;
  storage.get = async () => { throw new Error("storage unavailable"); };
  assert.equal((await rt.load(bytes, { choose: "measure", host })).chosenBy, "measured");
});

test("mini-program hosts keep the entries in the platform's storage (Alipay's calls take objects)", async () => {
  const wasm = { instantiate: async () => ({}) };
  const kv = new Map();
  const wx = { getStorageSync: (k) => kv.get(k) ?? "", setStorageSync: (k, v) => kv.set(k, v) };
  const host = miniProgramHost({ platform: "wechat", wasm, fs: null, api: wx });
  assert.equal(await host.storage.get("a"), null);
  await host.storage.set("a", "{}");
  assert.equal(await host.storage.get("a"), "{}");
  const my = { getStorageSync: ({ key }) => ({ data: kv.get(key) }), setStorageSync: ({ key, data }) => kv.set(key, data) };
  const alipay = miniProgramHost({ platform: "alipay", wasm, fs: null, api: my });
  await alipay.storage.set("b", "[1]");
  assert.equal(await alipay.storage.get("b"), "[1]");
  assert.equal(miniProgramHost({ platform: "wechat", wasm, fs: null, api: {} }).storage, undefined);
});

test("cache keys: SHA-256 where WebCrypto is, FNV-1a 64 elsewhere (mini-programs)", async () => {
  const { cacheKey } = await import("../../js_bindings/src/choose.js");
  const rt = { variant: "simd", target: "wasm_simd128", threads: 1 };
  const a = new TextEncoder().encode("a");
  const k1 = await cacheKey(rt, a, "0.1.0", "dev");
  assert.equal(k1, await cacheKey(rt, a, "0.1.0", "dev"));
  assert.notEqual(k1, await cacheKey(rt, new TextEncoder().encode("b"), "0.1.0", "dev"));
  assert.notEqual(k1, await cacheKey({ ...rt, threads: 2 }, a, "0.1.0", "dev"));
  const stored = `sha256:${"ab".repeat(32)}`; // the writer's digest: the key without hashing the file
  const s1 = await cacheKey(rt, stored, "0.1.0", "dev");
  assert.match(s1, /^wasmrt-choices-v1-(ab){16}-fnv[0-9a-f]{16}$/);
  assert.notEqual(s1, await cacheKey({ ...rt, threads: 2 }, stored, "0.1.0", "dev"));
  assert.notEqual(s1, await cacheKey(rt, stored, "0.1.0", "other device"));
  const saved = Object.getOwnPropertyDescriptor(globalThis, "crypto");
  Object.defineProperty(globalThis, "crypto", { value: {}, configurable: true });
  try {
    const k2 = await cacheKey(rt, a, "0.1.0", "dev");
    assert.ok(k2.startsWith("wasmrt-choices-v1-fnv") && k2 !== k1, k2);
    // the FNV-1a 64 test vector of "a" (0xaf63dc4c8601ec8c) is the model part of the key
    const { digestForTests } = await import("../../js_bindings/src/choose.js");
    assert.equal(await digestForTests(a), "fnvaf63dc4c8601ec8c");
    assert.equal(await digestForTests(new TextEncoder().encode("foobar")), "fnv85944171f73967e8");
  } finally {
    Object.defineProperty(globalThis, "crypto", saved);
  }
});
