// Tensors: a typed array plus a shape. Dtype names follow numpy; codes follow the .wrt DType enum.

import { InputError } from "./errors.js";

export const DTYPES = ["float32", "float16", "int8", "uint8", "int32", "int64", "bool"]; // index = .wrt code

// float16 has no typed array everywhere yet: its raw bits travel as a Uint16Array.
const ARRAY_OF = {
  float32: Float32Array, float16: Uint16Array, int8: Int8Array, uint8: Uint8Array,
  int32: Int32Array, int64: BigInt64Array, bool: Uint8Array,
};

export const BYTES_PER_ELEMENT = Object.fromEntries(DTYPES.map((d) => [d, ARRAY_OF[d].BYTES_PER_ELEMENT]));

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
  if (a instanceof Uint16Array) return "float16";
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
    if (!(data instanceof T) && !(dtype === "uint8" && data instanceof Uint8ClampedArray)) {
      if (ArrayBuffer.isView(data) || !data?.[Symbol.iterator]) {
        throw new InputError(`a ${dtype} tensor needs a ${T.name} (or a plain array), got ${data?.constructor?.name}`);
      }
      data = T.from(data);
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
