"""Face detection with the BlazeFace short-range model: letterbox, anchors, decoding, weighted NMS.

Letterbox (MediaPipe's): the image rectangle [0, W] x [0, H] grown to a square of side S = max(W, H) about its
  centre, sampled into 128 x 128 by vision/sample.py with a zero border; value (v - 127.5) / 127.5 rounded once to
  float32. The content is left = (S - W) / 2 * 128 / S, top likewise, cw = W * 128 / S, ch = H * 128 / S tensor pixels.
Anchors: a 16x16 grid with 2 anchors per cell (stride 8), then an 8x8 grid with 6 per cell (stride 16), in the
  order row, column, anchor; centre ((col + 0.5) / n, (row + 0.5) / n) in units of the 128-pixel input.
Decoding (tensor pixels): centre = (r[0], r[1]) + 128 * anchor, size = (r[2], r[3]), keypoint k =
  (r[4 + 2k], r[5 + 2k]) + 128 * anchor; then to image pixels x = (xt - left) * W / cw, y = (yt - top) * H / ch.
  Score = sigmoid(clip(logit, -100, 100)); detections with score >= min_score are kept.
Weighted NMS: sort by score, descending (ties: lower anchor index first). Repeatedly take the first remaining
  detection; the cluster is every remaining detection whose IoU with it is > iou_threshold (itself included);
  the output box and keypoints are the score-weighted means over the cluster, the score is the first one's;
  the cluster leaves the list.
Keypoints: 0 right eye, 1 left eye, 2 nose tip, 3 mouth centre, 4 right ear, 5 left ear (the subject's right).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from python_ref.vision.sample import SampleInput, sample_input

INPUT_SIZE = 128
ANCHOR_LAYERS = ((16, 2), (8, 6))  # (grid side, anchors per cell)


@dataclass(frozen=True)
class Letterbox:
    """Where the image sits in the detector input: content box (tensor pixels) of a W x H image."""

    left: float
    top: float
    content_w: float
    content_h: float
    image_w: int
    image_h: int

    def to_image(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return ((x - self.left) * self.image_w / self.content_w, (y - self.top) * self.image_h / self.content_h)


@dataclass
class Detection:
    """A face found by the detector, in image pixels. box = (x_min, y_min, x_max, y_max); keypoints [6, 2]."""

    box: np.ndarray
    keypoints: np.ndarray
    score: float


def letterbox(rgb: np.ndarray, size: int = INPUT_SIZE, sample: SampleInput = sample_input
              ) -> tuple[np.ndarray, Letterbox]:
    """HxWx3 (or x4, alpha ignored) uint8 -> float32 [1, size, size, 3] in [-1, 1], and the placement."""
    h, w = np.asarray(rgb).shape[:2]
    side = max(w, h)
    tensor = sample(rgb, w / 2, h / 2, side, side, 0.0, size, size, "zero", 127.5, 127.5)
    k = size / side
    return tensor, Letterbox((side - w) / 2 * k, (side - h) / 2 * k, w * k, h * k, w, h)


def ssd_anchors() -> np.ndarray:
    """[896, 2] anchor centres (x, y) in units of the detector input side."""
    out = []
    for n, per_cell in ANCHOR_LAYERS:
        for row in range(n):
            for col in range(n):
                out.extend([((col + 0.5) / n, (row + 0.5) / n)] * per_cell)
    return np.asarray(out, dtype=np.float64)


def decode_ssd(raw: np.ndarray, logits: np.ndarray, anchors: np.ndarray, coords: int, clip: float, lb: Letterbox,
               min_score: float) -> list[Detection]:
    """An SSD detector's outputs -> detections above min_score, in anchor order, image pixels. Each row of `coords`
    regressors holds the box centre and size, then keypoint (x, y) pairs, offsets from its anchor (anchors: [N, 2]
    in detector-input pixels); scores are the sigmoid of the logits clipped to +-clip."""
    r = np.asarray(raw, dtype=np.float64).reshape(-1, coords)
    z = np.clip(np.asarray(logits, dtype=np.float64).reshape(-1), -clip, clip)
    scores = 1.0 / (1.0 + np.exp(-z))
    sx, sy = lb.image_w / lb.content_w, lb.image_h / lb.content_h
    dets = []
    for i in np.nonzero(scores >= min_score)[0]:
        cx, cy = lb.to_image(r[i, 0] + anchors[i, 0], r[i, 1] + anchors[i, 1])
        hw, hh = r[i, 2] * sx / 2, r[i, 3] * sy / 2
        kx, ky = lb.to_image(r[i, 4::2] + anchors[i, 0], r[i, 5::2] + anchors[i, 1])
        dets.append(Detection(np.array([cx - hw, cy - hh, cx + hw, cy + hh]), np.stack([kx, ky], axis=1),
                              float(scores[i])))
    return dets


def decode(regressors: np.ndarray, logits: np.ndarray, lb: Letterbox, min_score: float = 0.5) -> list[Detection]:
    """Raw outputs [1, 896, 16] and [1, 896, 1] -> detections above min_score, in anchor order, image pixels."""
    return decode_ssd(regressors, logits, ssd_anchors() * INPUT_SIZE, 16, 100.0, lb, min_score)


def iou(a: np.ndarray, b: np.ndarray) -> float:
    """Intersection over union of two (x_min, y_min, x_max, y_max) boxes; 0 when the union is empty."""
    iw = min(a[2], b[2]) - max(a[0], b[0])
    ih = min(a[3], b[3]) - max(a[1], b[1])
    if iw <= 0 or ih <= 0:
        return 0.0
    inter = iw * ih
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return float(inter / union) if union > 0 else 0.0


def weighted_nms(dets: list[Detection], iou_threshold: float = 0.3) -> list[Detection]:
    """Blend overlapping detections (score-weighted), strongest first."""
    remaining = sorted(range(len(dets)), key=lambda k: -dets[k].score)  # stable: ties keep anchor order
    out = []
    while remaining:
        first = dets[remaining[0]]
        cluster, rest = [], []
        for k in remaining:
            (cluster if k == remaining[0] or iou(first.box, dets[k].box) > iou_threshold else rest).append(k)
        w = np.array([dets[k].score for k in cluster])
        box = sum(dets[k].box * dets[k].score for k in cluster) / w.sum()
        kps = sum(dets[k].keypoints * dets[k].score for k in cluster) / w.sum()
        out.append(Detection(box, kps, first.score))
        remaining = rest
    return out


def detect_faces(run, rgb: np.ndarray, min_score: float = 0.5, iou_threshold: float = 0.3,
                 sample: SampleInput = sample_input) -> list[Detection]:
    """run(feeds) -> outputs is the detector model; returns the faces after NMS, strongest first."""
    tensor, lb = letterbox(rgb, sample=sample)
    out = run({"input": tensor})
    return weighted_nms(decode(out["regressors"], out["classificators"], lb, min_score), iou_threshold)
