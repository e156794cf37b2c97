// Typed errors. The C engine reports a code plus a message naming the problem; we keep its text verbatim.

export class WasmrtError extends Error {
  constructor(message, options) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The bytes are not a valid .wrt model (corrupt, truncated, wrong file, unknown format version). */
export class ModelFormatError extends WasmrtError {}

/** A valid model that uses an op, dtype or attribute this engine cannot run. */
export class UnsupportedOpError extends WasmrtError {}

/** Wrong input name, shape, dtype or data given to run() (or to image.toTensor). */
export class InputError extends WasmrtError {}

/** The engine could not allocate memory: wasm linear memory cannot grow further, or the model needs more than its
 * memory limit (load option maxMemory). */
export class OutOfMemoryError extends WasmrtError {}

/** A run of the model would take more work than its limit allows (load option maxWork). */
export class ResourceLimitError extends WasmrtError {}

// Codes of kernels_wasm/engine/wasmrt.h
export const ERROR_CODES = Object.freeze({ OK: 0, FORMAT: 1, UNSUPPORTED: 2, NOMEM: 3, INPUT: 4, LIMIT: 5 });

const BY_CODE = {
  [ERROR_CODES.FORMAT]: ModelFormatError,
  [ERROR_CODES.UNSUPPORTED]: UnsupportedOpError,
  [ERROR_CODES.NOMEM]: OutOfMemoryError,
  [ERROR_CODES.INPUT]: InputError,
  [ERROR_CODES.LIMIT]: ResourceLimitError,
};

/** The error class for an engine error code (WasmrtError for codes we do not know). */
export function errorFromCode(code, message) {
  const Cls = BY_CODE[code] ?? WasmrtError;
  return new Cls(message || `engine error code ${code}`);
}

// Error classes by name, so a Worker can send an error as {name, message} and the caller gets the same class back.
export const ERROR_CLASSES = {
  WasmrtError, ModelFormatError, UnsupportedOpError, InputError, OutOfMemoryError, ResourceLimitError,
};
