// A step's labels as class indices, checked the same way by the head's trainer (../trainer.js) and the layers'
// trainer (./chain_trainer.js), on the page and in a Worker (../worker-serve.js drives the same trainers).
import { InputError } from "../errors.js";

/** label (one index or name, or one per sample) as n class indices 0..classes-1; a name is looked up in names.
 * Anything else is an InputError naming the sample. */
export function checkLabels(label, n, classes, names) {
  const labels = (typeof label === "number" || typeof label === "string" ? [label] : Array.from(label ?? []))
    .map((l) => (typeof l === "string" && names.includes(l) ? names.indexOf(l) : l));
  if (!n || n !== labels.length) {
    throw new InputError(`step: ${n} samples and ${labels.length} labels (need the same number, >= 1)`);
  }
  labels.forEach((l, i) => {
    if (!Number.isInteger(l) || l < 0 || l >= classes) {
      throw new InputError(`label ${JSON.stringify(l)} of sample ${i} is not a class index 0..${classes - 1}`
        + (names.length ? ` or a class name (${names.join(", ")})` : ""));
    }
  });
  return labels;
}
