// The one reader of .wrt files on the JS side: a small read-only, bounds-checked FlatBuffers reader, driven by the
// tables generated from the op table (./generated.js: field slots, kinds and defaults, op codes, options tables).
// readMetadata gives Model.metadata (what the wasm backend needs beside the C engine, which verifies and runs the
// rest); readWrt gives the whole graph (what the WebGPU backend plans from). A corrupt file is a ModelFormatError,
// never a read past the bytes.

import { ModelFormatError } from "../errors.js";
import { DTYPES } from "../tensor.js";
import { FILE_IDENTIFIER, OP_NAMES, OPTIONS, TABLES } from "./generated.js";

const { Model, Tensor, Operator, Buffer, MemoryPlan, Metadata, Preprocess, KeyValue } = TABLES;
const SIZES = { bool: 1, i8: 1, u8: 1, i16: 2, u16: 2, i32: 4, u32: 4, f32: 4, i64: 8, u64: 8, f64: 8 };
const MAX_METADATA_ITEMS = 1 << 20; // no sane metadata list is longer; bounds a hostile length before we loop

export class Reader {
  /** prefix: what error messages start with; maxItems: the longest vector accepted. */
  constructor(bytes, prefix, maxItems = Infinity) {
    this.b = bytes;
    this.v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.prefix = prefix;
    this.maxItems = maxItems;
    this.utf8 = new TextDecoder("utf-8");
    if (bytes.length < 8 || this.utf8.decode(bytes.subarray(4, 8)) !== FILE_IDENTIFIER) {
      throw new ModelFormatError(`not a .wrt model (missing the ${FILE_IDENTIFIER} file identifier)`);
    }
  }
  fail(message) { throw new ModelFormatError(`${this.prefix}${message}`); }
  check(pos, size, what) {
    if (!(pos >= 0 && size >= 0 && pos + size <= this.b.length)) {
      this.fail(`${what} at byte ${pos} (+${size}) is outside the ${this.b.length}-byte file`);
    }
  }
  u32(pos, what) { this.check(pos, 4, what); return this.v.getUint32(pos, true); }
  root() { return this.u32(0, "root table"); }
  // Position of the value of the field in `slot` of the table at `t`, or 0 when the field is absent.
  at(t, slot, what) {
    this.check(t, 4, what);
    const vt = t - this.v.getInt32(t, true);
    this.check(vt, 4, `${what} vtable`);
    if (4 + 2 * slot + 2 > this.v.getUint16(vt, true)) return 0;
    this.check(vt + 4 + 2 * slot, 2, `${what} vtable`);
    const off = this.v.getUint16(vt + 4 + 2 * slot, true);
    return off ? t + off : 0;
  }
  ref(t, slot, what) { // table, vector or string reference: its position, or 0 when absent
    const p = this.at(t, slot, what);
    return p ? p + this.u32(p, what) : 0;
  }
  vec(t, slot, elemSize, what) { // [position of element 0, count] or null when absent
    const p = this.ref(t, slot, what);
    if (!p) return null;
    const n = this.u32(p, what);
    if (n > this.maxItems) this.fail(`${what} has ${n} items`);
    this.check(p + 4, n * elemSize, what);
    return [p + 4, n];
  }
  scalarAt(p, kind) {
    switch (kind) {
      case "bool": return this.v.getUint8(p) !== 0;
      case "i8": return this.v.getInt8(p);
      case "u8": return this.v.getUint8(p);
      case "i16": return this.v.getInt16(p, true);
      case "u16": return this.v.getUint16(p, true);
      case "i32": return this.v.getInt32(p, true);
      case "u32": return this.v.getUint32(p, true);
      case "f32": return this.v.getFloat32(p, true);
      case "i64": return Number(this.v.getBigInt64(p, true));
      case "u64": return Number(this.v.getBigUint64(p, true));
      case "f64": return this.v.getFloat64(p, true);
      default: throw new TypeError(`not a scalar kind: ${kind}`);
    }
  }
  stringAt(p, what) {
    const n = this.u32(p, what);
    this.check(p + 4, n, what);
    return this.utf8.decode(this.b.subarray(p + 4, p + 4 + n));
  }
  /** The value of field [slot, kind, default] of the table at t: scalars and strings (default when absent: "" for
   * a string), vectors of scalars as arrays (null when absent). */
  get(t, [slot, kind, dflt], what) {
    if (kind === "string") {
      const p = this.ref(t, slot, what);
      return p ? this.stringAt(p, what) : "";
    }
    if (kind[0] === "[") {
      const k = kind.slice(1, -1), size = SIZES[k];
      const v = this.vec(t, slot, size, what);
      return v ? Array.from({ length: v[1] }, (_, i) => this.scalarAt(v[0] + size * i, k)) : null;
    }
    const p = this.at(t, slot, what);
    if (!p) return dflt;
    this.check(p, SIZES[kind], what);
    return this.scalarAt(p, kind);
  }
  /** Element positions of a vector of tables or strings (empty when absent). */
  tables(t, [slot], what) {
    const v = this.vec(t, slot, 4, what);
    return v ? Array.from({ length: v[1] }, (_, k) => v[0] + 4 * k + this.u32(v[0] + 4 * k, what)) : [];
  }
  table(t, [slot], what) { return this.ref(t, slot, what); }
  bytes(t, [slot], what) {
    const v = this.vec(t, slot, 1, what);
    return v ? this.b.subarray(v[0], v[0] + v[1]) : new Uint8Array(0);
  }
}

/**
 * Read Model.metadata from .wrt bytes: {source, producer, preprocess: {inputIndex: hints}, labels, props}.
 * Hints use the names of wasmrt/preprocess.py: {layout, color, mean, std, resize, cropFraction}.
 */
export function readMetadata(bytes) {
  const r = new Reader(bytes, "metadata: ", MAX_METADATA_ITEMS);
  const md = r.table(r.root(), Model.metadata, "Model.metadata");
  const out = { source: "", producer: "", preprocess: {}, labels: [], props: {} };
  if (!md) return out;
  out.source = r.get(md, Metadata.source, "Metadata.source");
  out.producer = r.get(md, Metadata.producer, "Metadata.producer");
  for (const p of r.tables(md, Metadata.preprocess, "Metadata.preprocess")) {
    out.preprocess[r.get(p, Preprocess.input, "Preprocess.input")] = {
      layout: r.get(p, Preprocess.layout, "Preprocess.layout"),
      color: r.get(p, Preprocess.color, "Preprocess.color"),
      mean: r.get(p, Preprocess.mean, "Preprocess.mean") ?? [],
      std: r.get(p, Preprocess.std, "Preprocess.std") ?? [],
      resize: r.get(p, Preprocess.resize, "Preprocess.resize"),
      cropFraction: r.get(p, Preprocess.crop_fraction, "Preprocess.crop_fraction"),
    };
  }
  out.labels = r.tables(md, Metadata.labels, "Metadata.labels").map((p) => r.stringAt(p, "Metadata.labels"));
  for (const kv of r.tables(md, Metadata.props, "Metadata.props")) {
    out.props[r.get(kv, KeyValue.key, "KeyValue.key")] = r.get(kv, KeyValue.value, "KeyValue.value");
  }
  return out;
}

function halfToFloat(h) {
  const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

/** Constant data as float32 (FLOAT16 widened), or null for another dtype (the WebGPU planner refuses those ops). */
function constantData(bytes, dtype, n) {
  if (dtype === "float32" && bytes.length === 4 * n) return new Float32Array(bytes.slice().buffer);
  if (dtype === "float16" && bytes.length === 2 * n) {
    const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    return Float32Array.from({ length: n }, (_, k) => halfToFloat(dv.getUint16(2 * k, true)));
  }
  return null;
}

/** {tensors: [{name, shape, dtype, size, arenaOffset, isConst, data}], ops: [{op, inputs, outputs, attrs, name}],
 * inputs, outputs, arenaSize} of a .wrt file. */
export function readWrt(bytes) {
  const r = new Reader(bytes, ".wrt: ");
  const root = r.root();
  const buffers = r.tables(root, Model.buffers, "buffers").map((b) => r.bytes(b, Buffer.data, "buffer data"));
  const tensors = r.tables(root, Model.tensors, "tensors").map((t, k) => {
    const shape = r.get(t, Tensor.shape, `tensor ${k} shape`) ?? [];
    const dtype = DTYPES[r.get(t, Tensor.dtype, `tensor ${k} dtype`)] ?? "unknown";
    const buf = r.get(t, Tensor.buffer, `tensor ${k} buffer`);
    if (buf >= Math.max(buffers.length, 1)) r.fail(`tensor ${k} names buffer ${buf}`);
    const n = shape.reduce((a, d) => a * d, 1);
    const isConst = buf > 0 && buffers[buf].length > 0;
    const data = isConst ? constantData(buffers[buf], dtype, n) : null;
    return { // float16 constants are widened to float32 here, as python_ref's reader does
      name: r.get(t, Tensor.name, `tensor ${k} name`), shape, dtype: data ? "float32" : dtype, size: n,
      arenaOffset: r.get(t, Tensor.arena_offset, `tensor ${k} arena_offset`), isConst, data,
      // where the constant's bytes are in the file (-1: none): a trainer writes tuned weights there
      dataOffset: isConst ? buffers[buf].byteOffset - r.b.byteOffset : -1, dataBytes: isConst ? buffers[buf].length : 0,
    };
  });
  const ops = r.tables(root, Model.operators, "operators").map((o, k) => {
    const code = r.get(o, Operator.type, `operator ${k} type`);
    const ot = r.get(o, Operator.options_type, `operator ${k} options type`);
    const attrs = {};
    const opt = ot ? r.table(o, Operator.options, `operator ${k} options`) : 0;
    (OPTIONS[ot]?.[1] ?? []).forEach(([name, kind, dflt], slot) => {
      attrs[name] = opt ? r.get(opt, [slot, kind, dflt], `operator ${k} option ${name}`) ?? dflt : dflt;
    });
    const check = (list) => list.map((i) => {
      if (i >= tensors.length) r.fail(`operator ${k} names tensor ${i} of ${tensors.length}`);
      return i;
    });
    return {
      op: OP_NAMES[code] ?? `op#${code}`, attrs, name: r.get(o, Operator.name, `operator ${k} name`),
      inputs: check(r.get(o, Operator.inputs, `operator ${k} inputs`) ?? []),
      outputs: check(r.get(o, Operator.outputs, `operator ${k} outputs`) ?? []),
    };
  });
  const plan = r.table(root, Model.plan, "memory plan");
  const io = (field, what) => (r.get(root, field, what) ?? []).map((t) => {
    if (t < 0 || t >= tensors.length) r.fail(`${what} names tensor ${t}`);
    return t;
  });
  return {
    tensors, ops, inputs: io(Model.inputs, "inputs"), outputs: io(Model.outputs, "outputs"),
    arenaSize: plan ? r.get(plan, MemoryPlan.arena_size, "arena size") : 0,
  };
}
