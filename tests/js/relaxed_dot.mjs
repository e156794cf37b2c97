// What this JS host's i32x4.relaxed_dot_i8x16_i7x16_add_s computes, measured by a module of its own on the bytes of
// the engine's probe (kernels_wasm/engine/target.c; tests/test_engine.py RDOT_*), and the int8 kernel table the relaxed
// module should then pick: "usdot" (second operand unsigned, exact: x86 VNNI), "sdot" (signed, exact: aarch64) or
// "other" (saturating pmaddubsw, or anything else).
const A = [127, 127, 127, 127, -128, -128, -128, -128, 127, -128, 5, -7, 100, -100, 1, 0];
const B = [0xff, 0xff, 0xff, 0xff, 0xff, 0x80, 0xff, 0x80, 0x80, 0x7f, 0x90, 0x01, 0xc8, 0xc8, 0x00, 0xff];
const C = [1, -2, 3, -4];
export const TABLES = { usdot: "wasm_relaxed_usdot", sdot: "wasm_relaxed_sdot", other: "wasm_relaxed" };

// (module (memory (export "m") 1) (func (export "f")
//   (v128.store (i32.const 48) (i32x4.relaxed_dot_i8x16_i7x16_add_s (v128.load (i32.const 0))
//     (v128.load (i32.const 16)) (v128.load (i32.const 32))))))
const MODULE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
  0x01, 0x04, 0x01, 0x60, 0x00, 0x00,
  0x03, 0x02, 0x01, 0x00,
  0x05, 0x03, 0x01, 0x00, 0x01,
  0x07, 0x09, 0x02, 0x01, 0x6d, 0x02, 0x00, 0x01, 0x66, 0x00, 0x00,
  0x0a, 0x1f, 0x01, 0x1d, 0x00,
  0x41, 0x30,
  0x41, 0x00, 0xfd, 0x00, 0x04, 0x00,
  0x41, 0x10, 0xfd, 0x00, 0x04, 0x00,
  0x41, 0x20, 0xfd, 0x00, 0x04, 0x00,
  0xfd, 0x93, 0x02,
  0xfd, 0x0b, 0x04, 0x00,
  0x0b,
]);

/** The four lanes the host computes. */
export async function relaxedDotLanes() {
  const { instance } = await WebAssembly.instantiate(MODULE);
  const mem = instance.exports.m.buffer;
  new Int8Array(mem, 0, 16).set(A);
  new Uint8Array(mem, 16, 16).set(B);
  new Int32Array(mem, 32, 4).set(C);
  instance.exports.f();
  return Array.from(new Int32Array(mem, 48, 4));
}

/** "usdot", "sdot" or "other" for those lanes. */
export function relaxedDotKind(lanes) {
  const dot = (signedB) => C.map((c, l) => {
    let s = c;
    for (let j = 4 * l; j < 4 * l + 4; j++) s += A[j] * (signedB && B[j] > 127 ? B[j] - 256 : B[j]);
    return s;
  });
  const same = (x) => x.every((v, i) => v === lanes[i]);
  return same(dot(false)) ? "usdot" : same(dot(true)) ? "sdot" : "other";
}
