// What each kind of model needs around it: how to make its input, how to read and draw its outputs.
// Kinds are recognized from the model itself (labels, output shapes), so a dropped .wrt of a known kind works too.

import * as wasmrt from "wasmrt";
import * as blazeface from "./blazeface.js";
import { cropRotated, landmarksToImage, LIPS_INNER, LIPS_OUTER, roiFromFace } from "./landmarks.js";

const size = (shape) => shape.reduce((a, b) => a * b, 1);
const MIN_PRESENCE = 0.5; // below this the landmark model says there is no face in the crop: no mesh is drawn

export function kindOf(model) {
  const outs = model.outputs;
  if (model.labels.length && outs.some((o) => size(o.shape) === model.labels.length)) return "classifier";
  if (outs.some((o) => o.shape.at(-2) === 896 && o.shape.at(-1) === 16)) return "face_detector";
  if (outs.some((o) => size(o.shape) === 1404)) return "face_landmark";
  const inp = model.inputs[0]?.shape ?? [];
  if (outs.length === 1 && outs[0].shape.length === 4 && outs[0].shape[1] === inp[1] && outs[0].shape.at(-1) === 1) {
    return "segmentation";
  }
  return "generic";
}

function byShape(outputs, test) {
  return Object.values(outputs).find((t) => test(t.shape));
}

// -- classifier -----------------------------------------------------------------------------------------------

export function topK(logits, labels, k = 5) {
  let max = -Infinity;
  for (const v of logits) max = Math.max(max, v);
  let sum = 0;
  for (const v of logits) sum += Math.exp(v - max);
  const idx = Array.from(logits.keys()).sort((a, b) => logits[b] - logits[a]).slice(0, k);
  return idx.map((i) => ({ index: i, label: labels[i] ?? `#${i}`, logit: logits[i], p: Math.exp(logits[i] - max) / sum }));
}

// -- the tasks -------------------------------------------------------------------------------------------------

/**
 * Make the model's input from `pixels`, run, and return {summary, draw(ctx), inputs, outputs}. `helpers.detector`
 * gives a face detector model for the landmark pipeline.
 */
export async function runTask(kind, model, pixels, helpers) {
  if (kind === "face_landmark") return runLandmarks(model, pixels, helpers);
  const input = await wasmrt.image.toTensor(pixels, model);
  const { outputs, ms } = await helpers.timedRun(model, { [model.inputs[0].name]: input });
  const res = { inputs: { [model.inputs[0].name]: input }, outputs, ms };
  if (kind === "classifier") {
    const logits = byShape(outputs, (s) => size(s) === model.labels.length).data;
    const top = topK(logits, model.labels);
    return { ...res, summary: { top }, draw: () => {} };
  }
  if (kind === "face_detector") {
    const faces = detect(outputs, input.geometry);
    return { ...res, summary: { faces }, draw: (ctx) => drawFaces(ctx, faces) };
  }
  if (kind === "segmentation") {
    const mask = Object.values(outputs)[0];
    return { ...res, summary: { maskMean: mean(mask.data) }, draw: (ctx) => drawMask(ctx, mask, input.geometry) };
  }
  return { ...res, summary: {}, draw: () => {} };
}

const mean = (a) => a.reduce((s, v) => s + v, 0) / a.length;

function detect(outputs, geometry) {
  const reg = byShape(outputs, (s) => s.at(-1) === 16).data;
  const cls = byShape(outputs, (s) => s.at(-1) === 1).data;
  // normalized 128x128 tensor coordinates -> image pixels through the letterbox geometry
  const toImg = (x, y) => wasmrt.image.toSource(geometry, x * geometry.outW, y * geometry.outH);
  return blazeface.decode(reg, cls).map((f) => {
    const [x0, y0] = toImg(f.x0, f.y0), [x1, y1] = toImg(f.x1, f.y1);
    return { score: f.score, x0, y0, x1, y1, keypoints: f.keypoints.map(([x, y]) => toImg(x, y)) };
  });
}

async function runLandmarks(model, pixels, helpers) {
  const spec = model.inputs[0];
  const n = spec.shape[1]; // NHWC square crop (192)
  let roi = null, faces = [];
  const detector = await helpers.detector();
  if (detector) {
    const det = await wasmrt.image.toTensor(pixels, detector);
    faces = detect(await detector.run(det), det.geometry);
    if (faces.length) roi = roiFromFace(faces[0]);
  }
  // No face (or no detector): the whole image, centred, unrotated
  roi ??= { cx: pixels.width / 2, cy: pixels.height / 2, side: Math.max(pixels.width, pixels.height), angle: 0 };
  const crop = cropRotated(pixels, roi, n);
  const input = wasmrt.image.pixelsToTensor(crop, model.metadata.preprocess[0], [...spec.shape]);
  const { outputs, ms } = await helpers.timedRun(model, { [spec.name]: input });
  const pts = landmarksToImage(byShape(outputs, (s) => size(s) === 1404).data, roi, n);
  const presence = byShape(outputs, (s) => size(s) === 1);
  const score = presence ? 1 / (1 + Math.exp(-presence.data[0])) : null;
  const meshShown = score === null || score >= MIN_PRESENCE;
  return {
    inputs: { [spec.name]: input }, outputs, ms,
    summary: { landmarks: pts.length, presence: score, faceFound: !!faces.length, meshShown, minPresence: MIN_PRESENCE },
    draw: (ctx) => (meshShown ? drawLandmarks(ctx, pts, roi) : drawCrop(ctx, roi)),
  };
}

// -- drawing ---------------------------------------------------------------------------------------------------

function drawFaces(ctx, faces) {
  const lw = Math.max(2, ctx.canvas.width / 250);
  ctx.lineWidth = lw;
  for (const f of faces) {
    ctx.strokeStyle = "#00e676";
    ctx.strokeRect(f.x0, f.y0, f.x1 - f.x0, f.y1 - f.y0);
    ctx.fillStyle = "#ff1744";
    for (const [x, y] of f.keypoints) {
      ctx.beginPath();
      ctx.arc(x, y, lw * 1.6, 0, 2 * Math.PI);
      ctx.fill();
    }
    ctx.fillStyle = "#00e676";
    ctx.font = `${lw * 7}px sans-serif`;
    ctx.fillText(f.score.toFixed(2), f.x0, f.y0 - lw * 2);
  }
}

function drawCrop(ctx, roi) { // the crop the model saw
  const r = Math.max(1, ctx.canvas.width / 400);
  ctx.save();
  ctx.translate(roi.cx, roi.cy);
  ctx.rotate(roi.angle);
  ctx.strokeStyle = "rgba(255,255,0,0.7)";
  ctx.lineWidth = r;
  ctx.strokeRect(-roi.side / 2, -roi.side / 2, roi.side, roi.side);
  ctx.restore();
}

function drawLandmarks(ctx, pts, roi) {
  const r = Math.max(1, ctx.canvas.width / 400);
  ctx.fillStyle = "#00e5ff";
  for (const [x, y] of pts) ctx.fillRect(x - r / 2, y - r / 2, r, r);
  for (const ring of [LIPS_OUTER, LIPS_INNER]) {
    if (pts.length < 468) break;
    ctx.strokeStyle = "#ff4081";
    ctx.lineWidth = r;
    ctx.beginPath();
    ring.forEach((i, k) => (k ? ctx.lineTo(...pts[i]) : ctx.moveTo(...pts[i])));
    ctx.closePath();
    ctx.stroke();
  }
  drawCrop(ctx, roi);
}

function drawMask(ctx, mask, g) {
  const [h, w] = [mask.shape[1], mask.shape[2]];
  const img = new ImageData(w, h);
  for (let i = 0; i < w * h; i++) {
    const m = Math.min(Math.max(mask.data[i], 0), 1);
    img.data.set([124, 77, 255, Math.round(m * 160)], i * 4);
  }
  const c = new OffscreenCanvas(w, h);
  c.getContext("2d").putImageData(img, 0, 0);
  // the mask covers the content box of the input: map it back onto the image's source box
  const kx = w / g.outW, ky = h / g.outH; // mask pixels per tensor pixel
  ctx.imageSmoothingEnabled = true;
  ctx.drawImage(c, g.dstLeft * kx, g.dstTop * ky, g.dstW * kx, g.dstH * ky, g.srcLeft, g.srcTop, g.srcW, g.srcH);
}
