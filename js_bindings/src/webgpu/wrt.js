// The part of a .wrt file the WebGPU backend needs: tensors (shape, dtype, arena offset, constant data widened to
// float32), operators with their options, inputs/outputs and the arena size. Field numbers follow schema/wrt.fbs.
// Bounds-checked: a corrupt file is a ModelFormatError, never a read past the bytes.

import { ModelFormatError } from "../errors.js";
import { DTYPES } from "../tensor.js";

const OP_NAMES = {
  1: "CONV_2D", 2: "CONV_TRANSPOSE_2D", 3: "FULLY_CONNECTED", 4: "MATMUL", 10: "ADD", 11: "SUB", 12: "MUL",
  13: "DIV", 14: "MAXIMUM", 15: "MINIMUM", 16: "POW", 17: "PRELU", 20: "RELU", 21: "CLIP", 22: "LEAKY_RELU",
  23: "HARD_SWISH", 24: "HARD_SIGMOID", 25: "SIGMOID", 26: "TANH", 27: "EXP", 28: "SQRT", 29: "ABS", 30: "NEG",
  40: "MAX_POOL_2D", 41: "AVERAGE_POOL_2D", 42: "MEAN", 43: "REDUCE_MAX", 44: "REDUCE_SUM", 45: "SOFTMAX",
  50: "RESHAPE", 51: "TRANSPOSE", 52: "CONCATENATION", 53: "SLICE", 54: "PAD", 55: "RESIZE", 56: "DEPTH_TO_SPACE",
  57: "GATHER", 100: "QUANTIZE", 101: "DEQUANTIZE", 102: "LOOKUP",
};

// Options tables in union order (type 1 = the first); each field: [name, kind, default]
const INF = Infinity;
const ACT = [["act_min", "f32", -INF], ["act_max", "f32", INF]];
const OPTIONS = [
  [["strides", "ints", [1, 1]], ["dilations", "ints", [1, 1]], ["pads", "ints", [0, 0, 0, 0]], ["groups", "i32", 1], ...ACT],
  [["strides", "ints", [1, 1]], ["dilations", "ints", [1, 1]], ["pads", "ints", [0, 0, 0, 0]], ["groups", "i32", 1],
    ["output_padding", "ints", [0, 0]], ...ACT],
  ACT, ACT,
  [["min", "f32", -INF], ["max", "f32", INF]],
  [["alpha", "f32", 0.01]],
  [["alpha", "f32", 0.2], ["beta", "f32", 0.5]],
  [["kernel", "ints", [1, 1]], ["strides", "ints", [1, 1]], ["dilations", "ints", [1, 1]], ["pads", "ints", [0, 0, 0, 0]],
    ["ceil_mode", "bool", false], ["count_include_pad", "bool", false], ...ACT],
  [["axes", "ints", []], ["keepdims", "bool", true]],
  [["axis", "i32", -1]],
  [["shape", "ints", []]],
  [["perm", "ints", []]],
  [["axis", "i32", 0], ...ACT],
  [["starts", "ints", []], ["ends", "ints", []], ["steps", "ints", []]],
  [["pads", "ints", []], ["mode", "u8", 0], ["value", "f32", 0]],
  [["size", "ints", [0, 0]], ["scales", "floats", [0, 0]], ["mode", "u8", 1], ["coord", "u8", 0], ["nearest", "u8", 0]],
  [["block", "i32", 2], ["mode", "u8", 0]],
  [["axis", "i32", 0]],
  [["dtype", "u8", 0]],
];

class Reader {
  constructor(bytes) {
    this.b = bytes;
    this.v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  check(pos, size, what) {
    if (!(pos >= 0 && size >= 0 && pos + size <= this.b.length)) {
      throw new ModelFormatError(`.wrt: ${what} at byte ${pos} (+${size}) is outside the ${this.b.length}-byte file`);
    }
  }
  u32(p, what) { this.check(p, 4, what); return this.v.getUint32(p, true); }
  field(t, i, what) {
    this.check(t, 4, what);
    const vt = t - this.v.getInt32(t, true);
    this.check(vt, 4, `${what} vtable`);
    if (4 + 2 * i + 2 > this.v.getUint16(vt, true)) return 0;
    this.check(vt + 4 + 2 * i, 2, `${what} vtable`);
    const off = this.v.getUint16(vt + 4 + 2 * i, true);
    return off ? t + off : 0;
  }
  ref(t, i, what) { const p = this.field(t, i, what); return p ? p + this.u32(p, what) : 0; }
  scalar(t, i, kind, dflt, what) {
    const p = this.field(t, i, what);
    if (!p) return dflt;
    const size = { f32: 4, i32: 4, u32: 4, u16: 2, u8: 1, bool: 1, i64: 8 }[kind];
    this.check(p, size, what);
    switch (kind) {
      case "f32": return this.v.getFloat32(p, true);
      case "i32": return this.v.getInt32(p, true);
      case "u32": return this.v.getUint32(p, true);
      case "u16": return this.v.getUint16(p, true);
      case "u8": return this.v.getUint8(p);
      case "bool": return this.v.getUint8(p) !== 0;
      default: return Number(this.v.getBigInt64(p, true));
    }
  }
  vec(t, i, size, what) { // [position of element 0, count] or null
    const p = this.ref(t, i, what);
    if (!p) return null;
    const n = this.u32(p, what);
    this.check(p + 4, n * size, what);
    return [p + 4, n];
  }
  ints(t, i, what) {
    const v = this.vec(t, i, 4, what);
    return v ? Array.from({ length: v[1] }, (_, k) => this.v.getInt32(v[0] + 4 * k, true)) : null;
  }
  floats(t, i, what) {
    const v = this.vec(t, i, 4, what);
    return v ? Array.from({ length: v[1] }, (_, k) => this.v.getFloat32(v[0] + 4 * k, true)) : null;
  }
  tables(t, i, what) {
    const v = this.vec(t, i, 4, what);
    return v ? Array.from({ length: v[1] }, (_, k) => v[0] + 4 * k + this.u32(v[0] + 4 * k, what)) : [];
  }
  str(t, i, what) {
    const v = this.vec(t, i, 1, what);
    return v ? new TextDecoder().decode(this.b.subarray(v[0], v[0] + v[1])) : "";
  }
}

function halfToFloat(h) {
  const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * INF;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

/** Constant data as float32 (FLOAT16 widened), or null for another dtype (the planner refuses those ops). */
function constantData(bytes, dtype, n) {
  if (dtype === "float32" && bytes.length === 4 * n) return new Float32Array(bytes.slice().buffer);
  if (dtype === "float16" && bytes.length === 2 * n) {
    const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    return Float32Array.from({ length: n }, (_, k) => halfToFloat(dv.getUint16(2 * k, true)));
  }
  return null;
}

/** {tensors: [{name, shape, dtype, arenaOffset, data}], ops: [{op, inputs, outputs, attrs, name}], inputs,
 * outputs, arenaSize} of a .wrt file. */
export function readWrt(bytes) {
  const r = new Reader(bytes);
  if (bytes.length < 8 || new TextDecoder().decode(bytes.subarray(4, 8)) !== "WRT0") {
    throw new ModelFormatError("not a .wrt model (no WRT0 identifier)");
  }
  const root = r.u32(0, "root");
  const buffers = r.tables(root, 5, "buffers").map((b) => {
    const v = r.vec(b, 0, 1, "buffer data");
    return v ? bytes.subarray(v[0], v[0] + v[1]) : new Uint8Array(0);
  });
  const tensors = r.tables(root, 1, "tensors").map((t, k) => {
    const shape = r.ints(t, 1, `tensor ${k} shape`) ?? [];
    const dtype = DTYPES[r.scalar(t, 2, "u8", 0, `tensor ${k} dtype`)] ?? "unknown";
    const buf = r.scalar(t, 3, "u32", 0, `tensor ${k} buffer`);
    if (buf >= Math.max(buffers.length, 1)) throw new ModelFormatError(`.wrt: tensor ${k} names buffer ${buf}`);
    const n = shape.reduce((a, d) => a * d, 1);
    const isConst = buf > 0 && buffers[buf].length > 0;
    const data = isConst ? constantData(buffers[buf], dtype, n) : null;
    return { // float16 constants are widened to float32 here, as python_ref's reader does
      name: r.str(t, 0, `tensor ${k} name`), shape, dtype: data ? "float32" : dtype, size: n,
      arenaOffset: r.scalar(t, 4, "i64", -1, `tensor ${k} arena_offset`), isConst, data,
    };
  });
  const ops = r.tables(root, 2, "operators").map((o, k) => {
    const code = r.scalar(o, 0, "u16", 0, `operator ${k} type`);
    const ot = r.scalar(o, 3, "u8", 0, `operator ${k} options type`);
    const attrs = {};
    const opt = ot ? r.ref(o, 4, `operator ${k} options`) : 0;
    (OPTIONS[ot - 1] ?? []).forEach(([name, kind, dflt], i) => {
      const what = `operator ${k} option ${name}`;
      if (!opt) attrs[name] = dflt;
      else if (kind === "ints") attrs[name] = r.ints(opt, i, what) ?? dflt;
      else if (kind === "floats") attrs[name] = r.floats(opt, i, what) ?? dflt;
      else attrs[name] = r.scalar(opt, i, kind, dflt, what);
    });
    const check = (list) => list.map((i) => {
      if (i >= tensors.length) throw new ModelFormatError(`.wrt: operator ${k} names tensor ${i} of ${tensors.length}`);
      return i;
    });
    return {
      op: OP_NAMES[code] ?? `op#${code}`, attrs, name: r.str(o, 5, `operator ${k} name`),
      inputs: check(r.ints(o, 1, `operator ${k} inputs`) ?? []), outputs: check(r.ints(o, 2, `operator ${k} outputs`) ?? []),
    };
  });
  const plan = r.ref(root, 6, "memory plan");
  const io = (i, what) => (r.ints(root, i, what) ?? []).map((t) => {
    if (t < 0 || t >= tensors.length) throw new ModelFormatError(`.wrt: ${what} names tensor ${t}`);
    return t;
  });
  return {
    tensors, ops, inputs: io(3, "inputs"), outputs: io(4, "outputs"),
    arenaSize: plan ? r.scalar(plan, 0, "i64", 0, "arena size") : 0,
  };
}
