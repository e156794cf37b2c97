// The frozen layers' output for one sample, computed by the engine: shared by the new head's trainer (../trainer.js)
// and the layers' trainer (./chain_trainer.js), which cache it per sample.
import { ERROR_CODES, errorFromCode, InputError, WasmrtError } from "../errors.js";

const u32 = (p) => p >>> 0;

/** The sample itself once it is a Float32Array of the model input's size; an InputError otherwise. */
export function checkedSample(model, input) {
  const spec = model.inputs[0];
  const n = spec.shape.reduce((a, d) => a * d, 1);
  if (!(input instanceof Float32Array) || input.length !== n) {
    throw new InputError(`a sample is a Float32Array of ${n} values (input '${spec.name}' ${JSON.stringify(spec.shape)})`);
  }
  return input;
}

/** The model's ops before `end` run on one sample; a copy of the `size` values of tensor `feature` they leave. */
export function frozenOutput(model, input, end, feature, size) {
  const rt = model._rt, ex = rt._ex;
  checkedSample(model, input);
  return rt._call(() => {
    new Float32Array(ex.memory.buffer, u32(ex.wrt_input_ptr(model._h, 0)), input.length).set(input);
    const code = ex.wrt_run_ops(model._h, 0, end);
    if (code !== ERROR_CODES.OK) throw errorFromCode(code, rt._message());
    const p = u32(ex.wrt_tensor_data(model._h, feature));
    if (!p) throw new WasmrtError("the engine kept no feature tensor");
    return new Float32Array(ex.memory.buffer, p, size).slice();
  });
}
