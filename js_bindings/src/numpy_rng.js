// numpy's default_rng(seed).uniform(low, high, n), bit for bit: SeedSequence -> PCG64 (XSL-RR 128/64) -> doubles of
// 53 bits. A new classifier's initial weights are drawn this way in Python (wasmrt/train/trainer.py new_head), so JS,
// Python and PyTorch can start from the same weights given the same seed. BigInt arithmetic: a few thousand draws
// per head, run once.

const M32 = 0xffffffff;
const mul32 = (a, b) => Math.imul(a, b) >>> 0;
// SeedSequence's hash constants (numpy/random/bit_generator.pyx)
const INIT_A = 0x43b0d7e5, MULT_A = 0x931e8875, INIT_B = 0x8b51f9dd, MULT_B = 0x58f38ded;
const MIX_MULT_L = 0xca01f9dd, MIX_MULT_R = 0x4973f715, XSHIFT = 16, POOL = 4;
const MASK64 = (1n << 64n) - 1n, MASK128 = (1n << 128n) - 1n;
const PCG_MULT = 0x2360ed051fc65da44385df649fccf645n; // PCG's default 128-bit multiplier

function seedState(seed) {
  if (!Number.isSafeInteger(seed) || seed < 0) throw new RangeError(`seed must be a non-negative integer, got ${seed}`);
  const entropy = [];
  for (let v = BigInt(seed); ; v >>= 32n) { entropy.push(Number(v & 0xffffffffn)); if (v <= M32) break; }
  let h = INIT_A;
  const hashmix = (value) => {
    let v = (value ^ h) >>> 0;
    h = mul32(h, MULT_A);
    v = mul32(v, h);
    return (v ^ (v >>> XSHIFT)) >>> 0;
  };
  const mix = (x, y) => { const r = (mul32(MIX_MULT_L, x) - mul32(MIX_MULT_R, y)) >>> 0; return (r ^ (r >>> XSHIFT)) >>> 0; };
  const pool = Array.from({ length: POOL }, (_, i) => hashmix(i < entropy.length ? entropy[i] : 0));
  for (let s = 0; s < POOL; s++) for (let d = 0; d < POOL; d++) if (s !== d) pool[d] = mix(pool[d], hashmix(pool[s]));
  for (let s = POOL; s < entropy.length; s++) for (let d = 0; d < POOL; d++) pool[d] = mix(pool[d], hashmix(entropy[s]));
  // generate_state(4, uint64): 8 words of 32 bits, little-endian pairs
  let hb = INIT_B;
  const words = Array.from({ length: 8 }, (_, i) => {
    let v = (pool[i % POOL] ^ hb) >>> 0;
    hb = mul32(hb, MULT_B);
    v = mul32(v, hb);
    return BigInt((v ^ (v >>> XSHIFT)) >>> 0);
  });
  return [0, 1, 2, 3].map((k) => words[2 * k] | (words[2 * k + 1] << 32n));
}

/** numpy.random.default_rng(seed): next64() gives PCG64's 64-bit outputs, uniform(low, high, n) numpy's doubles. */
export class NumpyRng {
  constructor(seed = 0) {
    const [s0, s1, i0, i1] = seedState(seed);
    this.inc = ((((i0 << 64n) | i1) << 1n) | 1n) & MASK128;
    this.state = 0n;
    this._step();
    this.state = (this.state + ((s0 << 64n) | s1)) & MASK128;
    this._step();
  }
  _step() { this.state = (this.state * PCG_MULT + this.inc) & MASK128; }
  next64() {
    this._step();
    const s = this.state, rot = s >> 122n;
    const x = ((s >> 64n) ^ s) & MASK64;
    return ((x >> rot) | (x << ((64n - rot) & 63n))) & MASK64;
  }
  nextDouble() { return Number(this.next64() >> 11n) * (1.0 / 9007199254740992.0); }
  /** n doubles uniform in [low, high), as Generator.uniform draws them (low + (high - low) * u). */
  uniform(low, high, n) {
    const out = new Float64Array(n), range = high - low;
    for (let k = 0; k < n; k++) out[k] = low + range * this.nextDouble();
    return out;
  }
}
