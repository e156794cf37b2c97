// BlazeFace (MediaPipe short-range face detector) output decoding: 896 anchors, sigmoid scores, weighted NMS.
// Conventions from the model's documentation (docs/dev/face-pipeline.md); coordinates are normalized to the 128x128 input.

const INPUT = 128;

/** Anchor centres: a 16x16 grid with 2 anchors per cell, then an 8x8 grid with 6 (row, column, anchor order). */
export function anchors() {
  const out = [];
  for (const [grid, perCell] of [[16, 2], [8, 6]]) {
    for (let y = 0; y < grid; y++) {
      for (let x = 0; x < grid; x++) {
        for (let k = 0; k < perCell; k++) out.push([(x + 0.5) / grid, (y + 0.5) / grid]);
      }
    }
  }
  return out; // 896
}

const ANCHORS = anchors();
const sigmoid = (z) => 1 / (1 + Math.exp(-Math.min(Math.max(z, -100), 100)));

function iou(a, b) {
  const w = Math.min(a.x1, b.x1) - Math.max(a.x0, b.x0);
  const h = Math.min(a.y1, b.y1) - Math.max(a.y0, b.y0);
  if (w <= 0 || h <= 0) return 0;
  const inter = w * h;
  return inter / ((a.x1 - a.x0) * (a.y1 - a.y0) + (b.x1 - b.x0) * (b.y1 - b.y0) - inter);
}

/**
 * regressors [1,896,16] and classificators [1,896,1] -> faces [{score, x0, y0, x1, y1, keypoints: [[x, y] x 6]}]
 * in normalized input coordinates, after weighted non-max suppression.
 */
export function decode(regressors, scores, { threshold = 0.5, iouThreshold = 0.3 } = {}) {
  const cands = [];
  for (let i = 0; i < ANCHORS.length; i++) {
    const score = sigmoid(scores[i]);
    if (score <= threshold) continue;
    const r = regressors.subarray(i * 16, i * 16 + 16);
    const [ax, ay] = ANCHORS[i];
    const cx = r[0] / INPUT + ax, cy = r[1] / INPUT + ay, w = r[2] / INPUT, h = r[3] / INPUT;
    const keypoints = [];
    for (let k = 0; k < 6; k++) keypoints.push([r[4 + 2 * k] / INPUT + ax, r[5 + 2 * k] / INPUT + ay]);
    cands.push({ score, x0: cx - w / 2, y0: cy - h / 2, x1: cx + w / 2, y1: cy + h / 2, keypoints });
  }
  cands.sort((a, b) => b.score - a.score);
  const faces = [];
  while (cands.length) {
    const top = cands[0];
    const group = cands.filter((c) => iou(top, c) > iouThreshold);
    const rest = cands.filter((c) => iou(top, c) <= iouThreshold);
    // weighted NMS: average the overlapping boxes (and keypoints) by score, keep the top score
    const total = group.reduce((s, c) => s + c.score, 0);
    const avg = (f) => group.reduce((s, c) => s + f(c) * c.score, 0) / total;
    faces.push({
      score: top.score,
      x0: avg((c) => c.x0), y0: avg((c) => c.y0), x1: avg((c) => c.x1), y1: avg((c) => c.y1),
      keypoints: top.keypoints.map((_, k) => [avg((c) => c.keypoints[k][0]), avg((c) => c.keypoints[k][1])]),
    });
    cands.splice(0, cands.length, ...rest);
  }
  return faces;
}

export const KEYPOINT_NAMES = ["right eye", "left eye", "nose tip", "mouth", "right ear", "left ear"];
