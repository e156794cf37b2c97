// float32 <-> IEEE binary16, rounding to nearest even as numpy's astype(float16) does, independent of Float16Array
// (which not every host has): float16 tensors (tensor.js) and f16 storage on the WebGPU backend.

const F = new Float32Array(1);
const U = new Uint32Array(F.buffer);

/** The binary16 bits of x (round to nearest even; beyond the f16 range: infinity). */
export function f16Bits(x) {
  F[0] = x;
  const b = U[0];
  const sign = (b >>> 16) & 0x8000;
  const exp = (b >>> 23) & 0xff;
  let mant = b & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  const e = exp - 112; // the f16 exponent field
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) { // a subnormal f16, or zero
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let h = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    if (rem > half || (rem === half && (h & 1))) h++;
    return sign | h;
  }
  let h = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (h & 1))) h++; // a carry into the exponent is right (up to infinity)
  return sign | h;
}

/** The value of binary16 bits h. */
export function f16Value(h) {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >>> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 0x1f) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

/** Float32Array -> binary16 bits, padded to an even count (GPU copies move multiples of 4 bytes). */
export function toF16(a) {
  const out = new Uint16Array(a.length + (a.length & 1));
  for (let i = 0; i < a.length; i++) out[i] = f16Bits(a[i]);
  return out;
}

/** The first n binary16 values of an ArrayBuffer, as a Float32Array. */
export function fromF16(buf, n) {
  const h = new Uint16Array(buf, 0, n);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = f16Value(h[i]);
  return out;
}
