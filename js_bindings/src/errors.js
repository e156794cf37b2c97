// Typed errors. The C engine reports a code plus a message naming the problem; we keep its text verbatim.

import { ERROR_CLASS_OF_CODE } from "./error_codes.js";

export { ERROR_CODES } from "./error_codes.js";

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

/** Training went wrong on valid inputs: the loss or a gradient stopped being finite (the weights stay as they were
 * before the step; lower the learning rate). */
export class TrainingError extends WasmrtError {}

/** The error class for an engine error code (WasmrtError for codes we do not know), with the engine's message. The
 * map is generated from python_ref/errors.py (./error_codes.js), which the Python engines follow too. */
export function errorFromCode(code, message) {
  const Cls = ERROR_CLASSES[ERROR_CLASS_OF_CODE[code]] ?? WasmrtError;
  return new Cls(message || `engine error code ${code}`);
}

// Error classes by name, so a Worker can send an error as {name, message} and the caller gets the same class back.
export const ERROR_CLASSES = {
  WasmrtError, ModelFormatError, UnsupportedOpError, InputError, OutOfMemoryError, ResourceLimitError, TrainingError,
};
