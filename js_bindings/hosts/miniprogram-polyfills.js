// What wasmrt's runtime needs and mini-program JS engines may lack; import this first in a mini-program Worker.
// Only fills gaps: nothing is replaced where the host already has it.

// UTF-8 only (model metadata and engine messages); enough for runtime.js and format/reader.js.
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

const g = globalThis;
if (typeof g.TextDecoder === "undefined") g.TextDecoder = Utf8Decoder;
// runtime.js tells engine traps apart with `instanceof WebAssembly.RuntimeError`; hosts that only have
// WXWebAssembly / MYWebAssembly / TTWebAssembly get a stand-in holding their RuntimeError (or a plain class).
if (typeof g.WebAssembly === "undefined") {
  const api = g.WXWebAssembly ?? g.MYWebAssembly ?? g.TTWebAssembly;
  g.WebAssembly = { RuntimeError: api?.RuntimeError ?? class RuntimeError extends Error {} };
}
