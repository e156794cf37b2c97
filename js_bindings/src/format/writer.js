// The JS writer of .wrt files, for a trainer's export() with a new classifier: decodeModel turns the file into a plain
// tree of its tables (every field the file holds, driven by the generated tables: ./generated.js TABLES, TABLE_REFS
// and OPTIONS), encodeModel writes such a tree back as FlatBuffers bytes. Constant data stays a view of the source
// bytes until it is written. Objects are laid out parent first, children after (FlatBuffers offsets point forward),
// each vtable just before its table; Buffer.data starts 64-byte aligned as the schema's force_align asks.

import { ModelFormatError } from "../errors.js";
import { FILE_IDENTIFIER, OPTIONS, TABLES, TABLE_REFS } from "./generated.js";
import { Reader } from "./reader.js";

const SIZES = { bool: 1, i8: 1, u8: 1, i16: 2, u16: 2, i32: 4, u32: 4, f32: 4, i64: 8, u64: 8, f64: 8 };
const DATA_ALIGNMENT = 64; // Buffer.data (force_align: 64): constant data on a cache line, as wasmrt's writer puts it

/** The fields of a table type: [[name, slot, kind, tableType]] (OPTIONS tables by name, the model tables). */
function fieldsOf(type) {
  const opt = OPTIONS.find((o) => o && o[0] === type);
  if (opt) return opt[1].map(([name, kind], slot) => [name, slot, kind, null]);
  const t = TABLES[type];
  if (!t) throw new TypeError(`no table ${type} in the .wrt schema`);
  return Object.entries(t).map(([name, [slot, kind]]) => [name, slot, kind, TABLE_REFS[type]?.[name] ?? null]);
}

function decodeTable(r, t, type) {
  const out = {};
  for (const [name, slot, kind, ref] of fieldsOf(type)) {
    const what = `${type}.${name}`;
    if (kind === "union") {
      const ut = out[`${name}_type`];
      const p = ut ? r.table(t, [slot], what) : 0;
      if (p) out[name] = decodeTable(r, p, OPTIONS[ut]?.[0] ?? r.fail(`${what}: unknown union type ${ut}`));
    } else if (kind === "table") {
      const p = r.table(t, [slot], what);
      if (p) out[name] = decodeTable(r, p, ref);
    } else if (kind === "[table]") {
      if (r.at(t, slot, what)) out[name] = r.tables(t, [slot], what).map((p) => decodeTable(r, p, ref));
    } else if (kind === "[string]") {
      if (r.at(t, slot, what)) out[name] = r.tables(t, [slot], what).map((p) => r.stringAt(p, what));
    } else if (kind === "[u8]") {
      if (r.at(t, slot, what)) out[name] = r.bytes(t, [slot], what);
    } else if (r.at(t, slot, what)) {
      out[name] = r.get(t, [slot, kind, null], what);
    }
  }
  return out;
}

/** The .wrt file as a tree of plain objects: {version, tensors: [{name, shape, dtype, buffer, ...}], operators:
 * [{type, inputs, outputs, options_type, options, name}], inputs, outputs, buffers: [{data: Uint8Array}], plan,
 * metadata}. Fields absent from the file are absent from the objects. */
export function decodeModel(bytes) {
  const r = new Reader(bytes, ".wrt: ");
  return decodeTable(r, r.root(), "Model");
}

class Out {
  constructor(size) { this.b = new Uint8Array(size); this.v = new DataView(this.b.buffer); this.n = 0; }
  reserve(k) {
    if (this.n + k <= this.b.length) return;
    const b = new Uint8Array(Math.max(2 * this.b.length, this.n + k));
    b.set(this.b.subarray(0, this.n));
    this.b = b;
    this.v = new DataView(b.buffer);
  }
  pad(align, extra = 0) { // zeros until (n + extra) is a multiple of align
    const k = (align - ((this.n + extra) % align)) % align;
    this.reserve(k);
    this.n += k;
  }
  put(kind, pos, value) {
    const v = this.v;
    switch (kind) {
      case "bool": case "u8": v.setUint8(pos, Number(value)); break;
      case "i8": v.setInt8(pos, value); break;
      case "i16": v.setInt16(pos, value, true); break;
      case "u16": v.setUint16(pos, value, true); break;
      case "i32": v.setInt32(pos, value, true); break;
      case "u32": v.setUint32(pos, value, true); break;
      case "f32": v.setFloat32(pos, value, true); break;
      case "f64": v.setFloat64(pos, value, true); break;
      case "i64": case "u64": // two 32-bit halves: no BigInt needed (hosts without it write files too)
        v.setUint32(pos, Number(value) >>> 0, true);
        v.setInt32(pos + 4, Math.floor(Number(value) / 2 ** 32), true);
        break;
      default: throw new TypeError(`not a scalar kind: ${kind}`);
    }
  }
  bytes(data) { this.reserve(data.length); this.b.set(data, this.n); this.n += data.length; }
  patch(at, target) { this.v.setUint32(at, target - at, true); } // a uoffset: forward, relative to itself
}

function writeString(o, s) {
  const data = new TextEncoder().encode(s);
  o.pad(4);
  const pos = o.n;
  o.reserve(4);
  o.put("u32", pos, data.length);
  o.n += 4;
  o.bytes(data);
  o.bytes([0]);
  return pos;
}

function writeScalars(o, kind, values) {
  const size = SIZES[kind];
  o.pad(kind === "u8" ? DATA_ALIGNMENT : Math.max(4, size), 4); // the elements aligned, their count just before
  const pos = o.n;
  o.reserve(4 + size * values.length);
  o.put("u32", pos, values.length);
  o.n += 4;
  if (values instanceof Uint8Array) o.bytes(values);
  else for (const x of values) { o.put(kind, o.n, x); o.n += size; }
  return pos;
}

function writeList(o, items, writeItem) { // a vector of tables or strings: the offsets, then each item
  o.pad(4);
  const pos = o.n;
  o.reserve(4 + 4 * items.length);
  o.put("u32", pos, items.length);
  o.n += 4 + 4 * items.length;
  items.forEach((item, k) => o.patch(pos + 4 + 4 * k, writeItem(item)));
  return pos;
}

function writeTable(o, obj, type) {
  const fields = fieldsOf(type).filter(([name]) => obj[name] !== undefined && obj[name] !== null);
  const inline = fields.map(([name, slot, kind, ref]) => {
    const size = SIZES[kind] ?? 4; // scalars in place; anything else a 4-byte offset
    return { name, slot, kind, ref, size };
  }).sort((a, b) => b.size - a.size || a.slot - b.slot);
  let end = 4; // after the soffset to the vtable
  for (const f of inline) { end = Math.ceil(end / f.size) * f.size; f.at = end; end += f.size; }
  const slots = fields.length ? Math.max(...fields.map(([, slot]) => slot)) + 1 : 0;
  o.pad(2);
  const vt = o.n, vtSize = 4 + 2 * slots;
  o.reserve(vtSize);
  o.put("u16", vt, vtSize);
  o.put("u16", vt + 2, end);
  for (let s = 0; s < slots; s++) o.put("u16", vt + 4 + 2 * s, inline.find((f) => f.slot === s)?.at ?? 0);
  o.n += vtSize;
  o.pad(8);
  const t = o.n;
  o.reserve(end);
  o.b.fill(0, t, t + end);
  o.put("i32", t, t - vt);
  o.n += end;
  const later = [];
  for (const f of inline) {
    if (SIZES[f.kind]) o.put(f.kind, t + f.at, obj[f.name]);
    else later.push(f);
  }
  for (const f of later) {
    const v = obj[f.name], at = t + f.at;
    let pos;
    if (f.kind === "string") pos = writeString(o, v);
    else if (f.kind === "table") pos = writeTable(o, v, f.ref);
    else if (f.kind === "union") pos = writeTable(o, v, OPTIONS[obj[`${f.name}_type`]][0]);
    else if (f.kind === "[table]") pos = writeList(o, v, (x) => writeTable(o, x, f.ref));
    else if (f.kind === "[string]") pos = writeList(o, v, (x) => writeString(o, x));
    else pos = writeScalars(o, f.kind.slice(1, -1), v);
    o.patch(at, pos);
  }
  return t;
}

/** A model tree (decodeModel's form) as .wrt bytes. */
export function encodeModel(model) {
  if (!model || typeof model !== "object") throw new ModelFormatError("encodeModel: a model tree is needed");
  const data = (model.buffers ?? []).reduce((a, b) => a + (b.data?.length ?? 0) + DATA_ALIGNMENT, 0);
  const o = new Out(data + (1 << 16));
  o.n = 8; // the root offset, then the file identifier
  const root = writeTable(o, model, "Model");
  o.patch(0, root);
  o.b.set(new TextEncoder().encode(FILE_IDENTIFIER), 4);
  return o.b.slice(0, o.n);
}
