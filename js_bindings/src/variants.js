// Which engine build to run: relaxed SIMD > SIMD128 > scalar, decided by feature probes, overridable.

import { WasmrtError } from "./errors.js";
import { RELAXED_PROBE, SIMD_PROBE } from "./features.js";

export const VARIANTS = ["relaxed", "simd", "scalar"]; // best first
const VARIANT_WORDS = { relaxed: "relaxed SIMD", simd: "SIMD128", scalar: "scalar (no SIMD)" };

/** A build's name for people: "relaxed SIMD", "SIMD128", "scalar (no SIMD)". */
export function describeVariant(variant) {
  return VARIANT_WORDS[variant] ?? String(variant);
}

function probeSimd(host) {
  const forced = host.features?.simd;
  if (forced !== undefined) return { available: !!forced, reason: `the ${host.name} host says SIMD128 is ${forced ? "" : "not "}supported` };
  const ok = host.validate?.(SIMD_PROBE);
  if (ok === undefined) return { available: false, reason: `the ${host.name} host cannot validate wasm modules` };
  return ok
    ? { available: true, reason: "WebAssembly.validate accepts SIMD128 and bulk memory" }
    : { available: false, reason: "WebAssembly.validate rejects SIMD128 or bulk memory (an old browser or engine)" };
}

function probeRelaxed(host) {
  const forced = host.features?.relaxed;
  if (forced !== undefined) return { available: !!forced, reason: `the ${host.name} host says relaxed SIMD is ${forced ? "" : "not "}supported` };
  const ok = host.validate?.(RELAXED_PROBE);
  if (ok === undefined) return { available: false, reason: `the ${host.name} host cannot validate wasm modules` };
  if (!ok) {
    const node = typeof process !== "undefined" && process.versions?.node;
    return {
      available: false,
      reason: "WebAssembly.validate rejects relaxed SIMD" +
        (node && +node.split(".")[0] < 22 ? ` (Node ${node}: use Node 22+)` : ""),
    };
  }
  // V8 11.x (Node 20 with --experimental-wasm-relaxed-simd) validates it but returns twice the int8 dot product.
  try {
    const got = new WebAssembly.Instance(new WebAssembly.Module(RELAXED_PROBE)).exports.f();
    if (got !== 8) {
      return { available: false, reason: `relaxed SIMD validates but its int8 dot product is wrong here (${got} instead of 8)` };
    }
  } catch (e) {
    return { available: false, reason: `relaxed SIMD validates but the probe failed to run (${e.message})` };
  }
  return { available: true, reason: "WebAssembly.validate accepts relaxed SIMD and its dot product is correct" };
}

/** Probe the host once: {scalar, simd, relaxed} -> {available, reason}. */
export function probe(host) {
  const simd = probeSimd(host);
  const relaxed = simd.available ? probeRelaxed(host) : { available: false, reason: "needs SIMD128: " + simd.reason };
  return { scalar: { available: true, reason: "plain wasm runs everywhere" }, simd, relaxed };
}

/** Pick the variant: the requested one (error if unavailable) or the best available, with the reason. */
export function chooseVariant(features, requested = "auto") {
  if (requested && requested !== "auto") {
    if (!VARIANTS.includes(requested)) {
      throw new WasmrtError(`unknown variant ${JSON.stringify(requested)}; choose one of auto, ${VARIANTS.join(", ")}`);
    }
    const f = features[requested];
    if (!f.available) throw new WasmrtError(`the ${requested} variant is not available on this host: ${f.reason}`);
    return { variant: requested, reason: `requested with init({variant: "${requested}"})` };
  }
  const best = VARIANTS.find((v) => features[v].available);
  const skipped = VARIANTS.slice(0, VARIANTS.indexOf(best)).map((v) => `no ${v}: ${features[v].reason}`);
  return { variant: best, reason: [`${best}: ${features[best].reason}`, ...skipped].join("; ") };
}
