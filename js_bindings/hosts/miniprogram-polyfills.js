// What wasmrt's runtime needs and mini-program JS engines may lack; import this first in a mini-program Worker.
// Only fills gaps: nothing is replaced where the host already has it.

// UTF-8 only (model metadata and engine messages); enough for runtime.js and format/reader.js / writer.js.
class Utf8Decoder {
  constructor(label = "utf-8") {
    if (!/^utf-?8$/i.test(label)) throw new RangeError(`this TextDecoder only decodes UTF-8, not ${label}`);
  }
  decode(input) {
    if (input === undefined) return "";
    const b = ArrayBuffer.isView(input) ? new Uint8Array(input.buffer, input.byteOffset, input.byteLength) : new Uint8Array(input);
    let out = "";
    for (let i = 0; i < b.length;) {
      const c = b[i++];
      let cp = 0xfffd;
      if (c < 0x80) cp = c;
      else if (c >= 0xc2 && c < 0xe0 && i < b.length) cp = ((c & 0x1f) << 6) | (b[i++] & 0x3f);
      else if (c >= 0xe0 && c < 0xf0 && i + 1 < b.length) { cp = ((c & 0x0f) << 12) | ((b[i] & 0x3f) << 6) | (b[i + 1] & 0x3f); i += 2; }
      else if (c >= 0xf0 && c < 0xf5 && i + 2 < b.length) {
        cp = ((c & 0x07) << 18) | ((b[i] & 0x3f) << 12) | ((b[i + 1] & 0x3f) << 6) | (b[i + 2] & 0x3f);
        i += 3;
      }
      out += String.fromCodePoint(cp);
    }
    return out;
  }
}

// A trainer's export() writes names and labels into a new .wrt (format/writer.js).
class Utf8Encoder {
  get encoding() { return "utf-8"; }
  encode(s = "") {
    const out = [];
    for (const ch of String(s)) {
      const cp = ch.codePointAt(0);
      if (cp < 0x80) out.push(cp);
      else if (cp < 0x800) out.push(0xc0 | (cp >> 6), 0x80 | (cp & 0x3f));
      else if (cp < 0x10000) out.push(0xe0 | (cp >> 12), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f));
      else out.push(0xf0 | (cp >> 18), 0x80 | ((cp >> 12) & 0x3f), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f));
    }
    return Uint8Array.from(out);
  }
}

const g = globalThis;
if (typeof g.TextDecoder === "undefined") g.TextDecoder = Utf8Decoder;
if (typeof g.TextEncoder === "undefined") g.TextEncoder = Utf8Encoder;
// runtime.js tells engine traps apart with `instanceof WebAssembly.RuntimeError`; hosts that only have
// WXWebAssembly / MYWebAssembly / TTWebAssembly get a stand-in holding their RuntimeError (or a plain class).
if (typeof g.WebAssembly === "undefined") {
  const api = g.WXWebAssembly ?? g.MYWebAssembly ?? g.TTWebAssembly;
  g.WebAssembly = { RuntimeError: api?.RuntimeError ?? class RuntimeError extends Error {} };
}
