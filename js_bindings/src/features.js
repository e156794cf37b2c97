// Feature probes: tiny hand-assembled wasm modules, checked with WebAssembly.validate (and, for relaxed SIMD,
// run once, because V8 11.x (Node 20) validates relaxed SIMD behind a flag but computes the int8 dot product wrong).

const SIMD = 0xfd; // SIMD opcode prefix

function leb(n) {
  const out = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n) b |= 0x80;
    out.push(b);
  } while (n);
  return out;
}

const v128 = (byte) => [SIMD, 0x0c, ...new Array(16).fill(byte)]; // v128.const with 16 equal bytes
const op = (code) => [SIMD, ...leb(code)];
const section = (id, bytes) => [id, ...leb(bytes.length), ...bytes];

// A module exporting one function "f" of type [] -> [i32] with the given body (no locals), and an empty memory.
function moduleWith(body) {
  const code = [0x00, ...body, 0x0b]; // no locals, body, end
  return new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, [0x01, 0x60, 0x00, 0x01, 0x7f]), // one type: [] -> [i32]
    ...section(3, [0x01, 0x00]), // one function of type 0
    ...section(5, [0x01, 0x00, 0x00]), // one memory of 0 pages
    ...section(7, [0x01, 0x01, 0x66, 0x00, 0x00]), // export "f" = function 0
    ...section(10, [0x01, ...leb(code.length), ...code]),
  ]);
}

const EXTRACT_LANE_I32 = [SIMD, 0x1b, 0x00]; // i32x4.extract_lane 0

// The SIMD builds also use bulk memory: memory.fill of 0 bytes at 0.
const MEMORY_FILL = [0x41, 0x00, 0x41, 0x00, 0x41, 0x00, 0xfc, 0x0b, 0x00];

// SIMD128 (and bulk memory): i32x4.add of two constants, lane 0.
export const SIMD_PROBE = moduleWith([...MEMORY_FILL, ...v128(1), ...v128(2), ...op(0xae), ...EXTRACT_LANE_I32]);

// Relaxed SIMD: f32x4.relaxed_madd (validated only) and i32x4.relaxed_dot_i8x16_i7x16_add_s(1s, 2s, 0)[0],
// which is 4 * 1 * 2 = 8 on a correct host.
export const RELAXED_PROBE = moduleWith([
  ...v128(0), ...v128(0), ...v128(0), ...op(0x105), 0x1a, // madd, drop
  ...v128(1), ...v128(2), ...v128(0), ...op(0x113), ...EXTRACT_LANE_I32,
]);
