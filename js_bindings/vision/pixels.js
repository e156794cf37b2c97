// Frames the hand and segmentation pipelines accept: ImageData or {data: RGBA (or RGB) bytes, width, height}.

/** -> {data, width, height, channels}; a clear error (naming `who`) for anything else. */
export function pixelsOf(image, who) {
  if (!image || !ArrayBuffer.isView(image.data) || !(image.width > 0 && image.height > 0)) {
    throw new TypeError(`${who} needs ImageData or {data: RGBA bytes, width, height} (not empty)`);
  }
  const channels = image.channels ?? (image.data.length === image.width * image.height * 3 ? 3 : 4);
  if (channels !== 3 && channels !== 4) throw new TypeError(`${who}: channels must be 3 or 4, got ${channels}`);
  if (image.data.length < image.width * image.height * channels) {
    throw new TypeError(`${who}: expected ${image.width}x${image.height}x${channels} bytes, got ${image.data.length}`);
  }
  return { data: image.data, width: image.width, height: image.height, channels };
}

export const now = () => globalThis.performance?.now?.() ?? Date.now();

/** A model file's location under a base folder (URL or path string). */
export const modelAt = (base, name) => (typeof base === "string" ? base.replace(/\/?$/, "/") + name : new URL(name, base));

/** rt.load with an error that says which file and how to point at the models. */
export async function loadModel(rt, given, base, file, who) {
  const source = given ?? modelAt(base, file);
  try {
    return await rt.load(source, { name: file.replace(/\.wrt$/, "") });
  } catch (e) {
    const where = typeof source === "string" || source instanceof URL ? ` from ${source}` : "";
    e.message = `${who}: cannot load ${file}${where}: ${e.message}. Say where the models are with ` +
      `${who}.create(rt, {modelBase}) (the folder holding ${file})`;
    throw e;
  }
}
