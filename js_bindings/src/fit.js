// Trainer.fit, shared by the trainer on this thread (./trainer.js), its worker client (./worker-client.js) and the
// layers' trainer (./train/chain_trainer.js): epochs over the batches, one step() each, progress after every step.

/** Epochs over batches ([{input, label}, ...]) with trainer.step; onProgress({epoch, step, steps, loss}) after each
 * step. Returns the mean loss of each epoch (weighted by the batches' sizes). */
export async function fitBatches(trainer, batches, { epochs = 1, onProgress } = {}) {
  const list = Array.from(batches);
  const out = [];
  for (let e = 0; e < epochs; e++) {
    let total = 0, count = 0;
    for (let s = 0; s < list.length; s++) {
      const { loss } = await trainer.step(list[s]);
      const n = list[s].input instanceof Float32Array ? 1 : list[s].input.length;
      total += loss * n;
      count += n;
      onProgress?.({ epoch: e + 1, step: s + 1, steps: list.length, loss });
    }
    out.push(total / count);
  }
  return out;
}
