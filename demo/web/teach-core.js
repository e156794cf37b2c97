// The teach-the-camera flow on one engine, shared by the web page's Worker (teach-worker.js) and the mini-programs'
// Worker (demo/miniprogram/build.mjs copies this file): photos of each class in, a new head with one output per
// class trained on the feature model's frozen layers (model.trainer({head: {classes}, train: "head"})), then live
// classification with the tuned model; the tuned model out as .wrt bytes, and back in after a reload.
// No imports: each host passes its engine and its image.toTensor.

/** How many classes a person may name, and how the head trains: 20 full-batch Adam steps (the features are computed
 * once per photo, then a step takes milliseconds); a gentle rate, so the confidence shown stays below 100% for
 * photos unlike the ones taught. */
export const TEACH = { minClasses: 2, maxClasses: 5, epochs: 20, optimizer: "adam", lr: 0.001 };

/** One colour per class, in order: the pages show each class (its photos, its bar, the banner under the frame) in
 * its colour. */
export const CLASS_COLORS = ["#e53935", "#1e88e5", "#43a047", "#fb8c00", "#8e24aa"];
/** The class's banner under a classified frame: its share of the frame's height. */
export const BANNER = 0.14;

/** A model output as class probabilities: a softmax of logits, or the output itself where it is one already. */
export function probabilities(values) {
  const v = Array.from(values, Number);
  const sum = v.reduce((a, x) => a + x, 0);
  if (v.every((x) => x >= 0 && x <= 1) && Math.abs(sum - 1) < 1e-5) return v;
  const top = Math.max(...v);
  const e = v.map((x) => Math.exp(x - top));
  const total = e.reduce((a, x) => a + x, 0);
  return e.map((x) => x / total);
}

/** Class names as a person typed them: trimmed; 2-5 of them, none empty, no two alike (a RangeError says which). */
export function checkClasses(names) {
  const classes = Array.from(names ?? [], (n) => String(n).trim());
  if (classes.length < TEACH.minClasses || classes.length > TEACH.maxClasses) {
    throw new RangeError(`name ${TEACH.minClasses} to ${TEACH.maxClasses} classes (got ${classes.length})`);
  }
  const empty = classes.findIndex((n) => !n);
  if (empty >= 0) throw new RangeError(`class ${empty + 1} has no name`);
  const twice = classes.find((n, i) => classes.indexOf(n) !== i);
  if (twice !== undefined) throw new RangeError(`two classes are named "${twice}"`);
  return classes;
}

export class Teacher {
  /** rt: an initialised engine; source: the feature model (URL, path or bytes); toTensor: image.toTensor. */
  static async create(rt, source, toTensor) {
    const base = await rt.load(source, { trainable: true, name: "features" });
    return new Teacher(rt, base, toTensor);
  }

  constructor(rt, base, toTensor) {
    this.rt = rt;
    this.base = base;
    this.toTensor = toTensor;
    this.samples = new Map(); // id -> the photo's input tensor (the trainer caches its features by this object)
    this.nextId = 1;
    this.model = null; // the tuned model
    this.tuned = null; // its .wrt bytes
  }

  /** A photo (RGBA pixels) as a training sample; returns its id. */
  async add(pixels) {
    const x = await this.toTensor(pixels, this.base);
    const id = this.nextId++;
    this.samples.set(id, x.data);
    return id;
  }

  remove(id) { this.samples.delete(id); }

  /**
   * Train a new head: classes (2-5 names), samples [{id, label (class index)}], every class with a photo.
   * onProgress({epoch, epochs, loss}) after each epoch. Returns {classes, losses, ms}; the tuned model is then in use.
   */
  async train(classNames, samples, onProgress) {
    const classes = checkClasses(classNames);
    const counts = classes.map((_, k) => samples.filter((s) => s.label === k).length);
    const none = counts.findIndex((n) => n === 0);
    if (none >= 0) throw new RangeError(`class "${classes[none]}" has no photo yet: add one or more`);
    const input = samples.map(({ id }) => {
      const x = this.samples.get(id);
      if (!x) throw new RangeError(`no sample ${id}`);
      return x;
    });
    const label = samples.map((s) => s.label);
    const t0 = Date.now();
    const trainer = await this.base.trainer({ head: { classes }, train: "head", optimizer: TEACH.optimizer, lr: TEACH.lr });
    const losses = await trainer.fit([{ input, label }], {
      epochs: TEACH.epochs,
      onProgress: ({ epoch, loss }) => onProgress?.({ epoch, epochs: TEACH.epochs, loss }),
    });
    await this.use(trainer.export());
    return { classes, losses, counts, ms: Date.now() - t0 };
  }

  /** Put a tuned model (.wrt bytes, from train() or storage) in use; returns {labels}. */
  async use(bytes) {
    const copy = new Uint8Array(bytes).slice();
    const model = await this.rt.load(copy, { name: "tuned" });
    if (!model.labels?.length) { model.release(); throw new RangeError("the stored model has no class names"); }
    this.model?.release();
    this.model = model;
    this.tuned = copy;
    return { labels: model.labels };
  }

  /** The tuned model's class of a frame: {index, label, confidence, probs, ms}. */
  async classify(pixels) {
    if (!this.model) throw new RangeError("train the model (or reload a saved one) first");
    const t0 = Date.now();
    const x = await this.toTensor(pixels, this.model);
    const out = await this.model.run({ [this.model.inputs[0].name]: x });
    const probs = probabilities(Object.values(out)[0].data);
    const index = probs.indexOf(Math.max(...probs));
    return { index, label: this.model.labels[index], confidence: probs[index], probs, ms: Date.now() - t0 };
  }

  /** The tuned model's .wrt bytes (a copy). */
  export() {
    if (!this.tuned) throw new RangeError("nothing to save: train the model first");
    return this.tuned.slice();
  }
}
