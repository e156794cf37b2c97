// A tiny read-only, bounds-checked FlatBuffers reader for the part of a .wrt file the JS side needs:
// Model.metadata (preprocessing hints, labels, props). The C engine verifies and runs everything else.
// Field numbers follow schema/wrt.fbs (Model: version 0 .. metadata 7; Metadata: source 0 .. props 4).

import { ModelFormatError } from "./errors.js";

const MAX_ITEMS = 1 << 20; // no sane metadata list is longer; bounds a hostile length before we loop

class Reader {
  constructor(bytes) {
    this.b = bytes;
    this.v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.utf8 = new TextDecoder("utf-8");
  }
  check(pos, size, what) {
    if (!(pos >= 0 && size >= 0 && pos + size <= this.b.length)) {
      throw new ModelFormatError(`metadata: ${what} at byte ${pos} (+${size}) is outside the ${this.b.length}-byte file`);
    }
  }
  u32(pos, what) { this.check(pos, 4, what); return this.v.getUint32(pos, true); }
  // Position of field `i`'s value inside the table at `t`, or 0 when the field is absent.
  field(t, i, what) {
    this.check(t, 4, what);
    const vt = t - this.v.getInt32(t, true);
    this.check(vt, 4, `${what} vtable`);
    const vtSize = this.v.getUint16(vt, true);
    if (4 + 2 * i + 2 > vtSize) return 0;
    this.check(vt + 4 + 2 * i, 2, `${what} vtable`);
    const off = this.v.getUint16(vt + 4 + 2 * i, true);
    return off ? t + off : 0;
  }
  ref(t, i, what) { // table, vector or string reference
    const p = this.field(t, i, what);
    return p ? p + this.u32(p, what) : 0;
  }
  vector(t, i, elemSize, what) {
    const p = this.ref(t, i, what);
    if (!p) return null;
    const n = this.u32(p, what);
    if (n > MAX_ITEMS) throw new ModelFormatError(`metadata: ${what} has ${n} items`);
    this.check(p + 4, n * elemSize, what);
    return { start: p + 4, n };
  }
  stringAt(p, what) {
    const n = this.u32(p, what);
    this.check(p + 4, n, what);
    return this.utf8.decode(this.b.subarray(p + 4, p + 4 + n));
  }
  string(t, i, what) { const p = this.ref(t, i, what); return p ? this.stringAt(p, what) : ""; }
  tables(t, i, what) { // vector of tables (or strings): element positions
    const vec = this.vector(t, i, 4, what);
    if (!vec) return [];
    const out = [];
    for (let k = 0; k < vec.n; k++) out.push(vec.start + 4 * k + this.u32(vec.start + 4 * k, what));
    return out;
  }
  floats(t, i, what) {
    const vec = this.vector(t, i, 4, what);
    const out = [];
    for (let k = 0; vec && k < vec.n; k++) out.push(this.v.getFloat32(vec.start + 4 * k, true));
    return out;
  }
  scalar(t, i, kind, dflt, what) {
    const p = this.field(t, i, what);
    if (!p) return dflt;
    this.check(p, 4, what);
    return kind === "f32" ? this.v.getFloat32(p, true) : this.v.getInt32(p, true);
  }
}

/**
 * Read Model.metadata from .wrt bytes: {source, producer, preprocess: {inputIndex: hints}, labels, props}.
 * Hints use the names of wasmrt/preprocess.py: {layout, color, mean, std, resize, cropFraction}.
 */
export function readMetadata(bytes) {
  const r = new Reader(bytes);
  if (bytes.length < 8 || r.utf8.decode(bytes.subarray(4, 8)) !== "WRT0") {
    throw new ModelFormatError("not a .wrt model (missing the WRT0 file identifier)");
  }
  const root = r.u32(0, "root table");
  const md = r.ref(root, 7, "Model.metadata");
  const out = { source: "", producer: "", preprocess: {}, labels: [], props: {} };
  if (!md) return out;
  out.source = r.string(md, 0, "Metadata.source");
  out.producer = r.string(md, 1, "Metadata.producer");
  for (const p of r.tables(md, 2, "Metadata.preprocess")) {
    const input = r.scalar(p, 0, "i32", 0, "Preprocess.input");
    out.preprocess[input] = {
      layout: r.string(p, 1, "Preprocess.layout"),
      color: r.string(p, 2, "Preprocess.color"),
      mean: r.floats(p, 3, "Preprocess.mean"),
      std: r.floats(p, 4, "Preprocess.std"),
      resize: r.string(p, 5, "Preprocess.resize"),
      cropFraction: r.scalar(p, 6, "f32", 1.0, "Preprocess.crop_fraction"),
    };
  }
  out.labels = r.tables(md, 3, "Metadata.labels").map((p) => r.stringAt(p, "Metadata.labels"));
  for (const kv of r.tables(md, 4, "Metadata.props")) {
    out.props[r.string(kv, 0, "KeyValue.key")] = r.string(kv, 1, "KeyValue.value");
  }
  return out;
}
