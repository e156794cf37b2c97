// Tensors: a typed array plus a shape. Dtype names follow numpy; codes follow the .wrt DType enum.

import { InputError } from "./errors.js";
import { f16Bits, f16Value } from "./f16.js";

export const DTYPES = ["float32", "float16", "int8", "uint8", "int32", "int64", "bool"]; // index = .wrt code

// float16 tensors hold a Float16Array where the host has one (Node 24+, recent browsers), else a Uint16Array of the
// IEEE binary16 bits (toFloat16Bits / fromFloat16Bits convert). Either is accepted as a float16 input.
const Float16 = globalThis.Float16Array;
const ARRAY_OF = {
  float32: Float32Array, float16: Float16 ?? Uint16Array, int8: Int8Array, uint8: Uint8Array,
  int32: Int32Array, int64: BigInt64Array, bool: Uint8Array,
};

export const BYTES_PER_ELEMENT = Object.fromEntries(DTYPES.map((d) => [d, ARRAY_OF[d].BYTES_PER_ELEMENT]));

/** The binary16 bits of numbers, rounded to nearest even as numpy's astype(float16) does (a Uint16Array). */
export function toFloat16Bits(values) {
  if (Float16 && values instanceof Float16) return new Uint16Array(values.buffer, values.byteOffset, values.length).slice();
  const out = new Uint16Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = f16Bits(values[i]);
  return out;
}

/** The values of binary16 bits (a Uint16Array, or a float16 tensor's data of either kind) as a Float32Array. */
export function fromFloat16Bits(bits) {
  if (Float16 && bits instanceof Float16) return Float32Array.from(bits);
  const out = new Float32Array(bits.length);
  for (let i = 0; i < bits.length; i++) out[i] = f16Value(bits[i]);
  return out;
}

/** float16 data as the raw bits (a Uint16Array view of a Float16Array, or the Uint16Array itself). */
export function float16BitsView(data) {
  return data instanceof Uint16Array ? data : new Uint16Array(data.buffer, data.byteOffset, data.length);
}

/** float16 bits (Uint16Array) as this host's float16 array: a Float16Array over the same bytes where there is one. */
export function float16FromBits(bits) {
  return Float16 ? new Float16(bits.buffer, bits.byteOffset, bits.length) : bits;
}

export function arrayTypeOf(dtype) {
  const T = ARRAY_OF[dtype];
  if (!T) throw new InputError(`unknown dtype ${JSON.stringify(dtype)}; expected one of ${DTYPES.join(", ")}`);
  return T;
}

/** The dtype a typed array holds (Uint8Array -> "uint8", Uint8ClampedArray counts as uint8). */
export function dtypeOfArray(a) {
  if (a instanceof Float32Array) return "float32";
  if (a instanceof Int8Array) return "int8";
  if (a instanceof Uint8Array || a instanceof Uint8ClampedArray) return "uint8";
  if (a instanceof Int32Array) return "int32";
  if (a instanceof BigInt64Array) return "int64";
  if (a instanceof Uint16Array || (Float16 && a instanceof Float16)) return "float16";
  return null;
}

export const sizeOf = (shape) => shape.reduce((n, d) => n * d, 1);

export class Tensor {
  /**
   * new Tensor(data, shape) or new Tensor(dtype, data, shape); data may be a typed array or a plain array
   * (converted to the dtype's typed array).
   */
  constructor(a, b, c) {
    let dtype, data, shape;
    if (typeof a === "string") [dtype, data, shape] = [a, b, c];
    else [data, shape] = [a, b];
    if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0)) {
      throw new InputError(`a tensor shape must be an array of non-negative integers, got ${JSON.stringify(shape)}`);
    }
    dtype ??= dtypeOfArray(data) ?? "float32";
    const T = arrayTypeOf(dtype);
    const f16bits = dtype === "float16" && data instanceof Uint16Array; // bits, on any host
    if (!(data instanceof T) && !(dtype === "uint8" && data instanceof Uint8ClampedArray) && !f16bits) {
      if (ArrayBuffer.isView(data) || !data?.[Symbol.iterator]) {
        throw new InputError(`a ${dtype} tensor needs a ${T.name} (or a plain array), got ${data?.constructor?.name}`);
      }
      data = dtype === "float16" ? float16FromBits(toFloat16Bits(Array.from(data))) : T.from(data);
    }
    if (data.length !== sizeOf(shape)) {
      throw new InputError(`tensor data has ${data.length} elements but shape [${shape}] needs ${sizeOf(shape)}`);
    }
    this.dtype = dtype;
    this.data = data;
    this.shape = shape.slice();
  }

  get size() { return this.data.length; }
}
