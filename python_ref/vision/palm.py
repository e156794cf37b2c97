"""Palm detection (MediaPipe's palm_detection_full / _lite): letterbox, SSD anchors, decoding, weighted NMS, and the
palm -> hand crop.

Letterbox: as vision/detect.py's, at PALM_INPUT (192): the image grown to a square about its centre, sampled by
  vision/sample.py with a zero border, but v / 255 (the palm models take [0, 1]), rounded once to float32.
Anchors (MediaPipe's SsdAnchorsCalculator, options in constants.PALM_ANCHORS): layers that share a stride share one
  feature map of side ceil(input / stride); each layer puts, per cell, one anchor per aspect ratio plus one for the
  interpolated scale; with fixed_anchor_size every anchor is 1 x 1, so only the count matters: stride 8 -> 24 x 24
  cells x 2, stride 16 (3 layers) -> 12 x 12 x 6; 2016 anchors in the order layer group, row, column, anchor,
  centre ((col + offset) / side, (row + offset) / side).
Decoding (TensorsToDetections, reverse_output_order): row r of [2016, 18] in input pixels; centre
  (r[0], r[1]) + 192 * anchor, size (r[2], r[3]); keypoint k = (r[4 + 2k], r[5 + 2k]) + 192 * anchor; then to
  image pixels through the letterbox. Score = sigmoid(clip(logit, -100, 100)); kept when >= min_score.
NMS: vision/detect.py's weighted_nms at IoU 0.3 (MediaPipe's WEIGHTED algorithm); then the first max_hands.
Hand crop (DetectionsToRects + RectTransformation, in image pixels): the box's centre and size (w, h);
  rotation = normalize(pi / 2 - atan2(-(y2 - y0), x2 - x0)) from keypoint 0 (wrist) to keypoint 2 (middle MCP);
  the centre moves by (w * shift_x, h * shift_y) turned by the rotation; side = scale * max(w, h) (square_long).
  normalize(a) = a - 2 pi floor((a + pi) / (2 pi)).
"""

from __future__ import annotations

import math

import numpy as np

from python_ref.vision.constants import (
    HAND_TARGET_ANGLE,
    PALM_ANCHORS,
    PALM_INPUT,
    PALM_MIN_SCORE,
    PALM_NMS_IOU,
    PALM_NUM_COORDS,
    PALM_ROI,
    PALM_ROTATION_KEYPOINTS,
    PALM_SCORE_CLIP,
)
from python_ref.vision.detect import Detection, Letterbox, decode_ssd, weighted_nms
from python_ref.vision.roi import Roi
from python_ref.vision.sample import SampleInput, sample_input


def normalize_radians(a: float) -> float:
    return a - 2 * math.pi * math.floor((a + math.pi) / (2 * math.pi))


def ssd_anchors(opts: dict = PALM_ANCHORS) -> np.ndarray:
    """[n, 2] anchor centres (x, y) in units of the input side (fixed-size anchors: their size is 1)."""
    strides = opts["strides"]
    per_layer = len(opts["aspect_ratios"]) + (1 if opts["interpolated_scale_aspect_ratio"] > 0 else 0)
    out = []
    layer = 0
    while layer < opts["num_layers"]:
        last = layer
        while last < opts["num_layers"] and strides[last] == strides[layer]:
            last += 1
        per_cell = per_layer * (last - layer)
        side = math.ceil(opts["input_size"] / strides[layer])
        off = opts["anchor_offset"]
        for row in range(side):
            for col in range(side):
                out.extend([((col + off) / side, (row + off) / side)] * per_cell)
        layer = last
    return np.asarray(out, dtype=np.float64)


def decode_palms(raw: np.ndarray, logits: np.ndarray, lb: Letterbox, min_score: float = PALM_MIN_SCORE
                 ) -> list[Detection]:
    """Raw outputs [1, 2016, 18] and [1, 2016, 1] -> palms above min_score, in anchor order, image pixels."""
    anchors = ssd_anchors() * PALM_INPUT
    if len(anchors) * PALM_NUM_COORDS != np.size(raw):
        raise ValueError(f"palm detector: {np.size(raw) // PALM_NUM_COORDS} boxes for {len(anchors)} anchors")
    return decode_ssd(raw, logits, anchors, PALM_NUM_COORDS, PALM_SCORE_CLIP, lb, min_score)


def palm_letterbox(rgb: np.ndarray, sample: SampleInput = sample_input) -> tuple[np.ndarray, Letterbox]:
    """HxWx3 (or x4) uint8 -> float32 [1, 192, 192, 3] in [0, 1], and the placement."""
    h, w = np.asarray(rgb).shape[:2]
    side = max(w, h)
    k = PALM_INPUT / side
    tensor = sample(rgb, w / 2, h / 2, side, side, 0.0, PALM_INPUT, PALM_INPUT, "zero", 0.0, 255.0)
    return tensor, Letterbox((side - w) / 2 * k, (side - h) / 2 * k, w * k, h * k, w, h)


def detect_palms(run, rgb: np.ndarray, min_score: float = PALM_MIN_SCORE, max_palms: int | None = None,
                 sample: SampleInput = sample_input) -> list[Detection]:
    """run(feeds) -> outputs is the palm model; the palms after NMS, strongest first (at most max_palms)."""
    tensor, lb = palm_letterbox(rgb, sample)
    out = run({"input_1": tensor})
    palms = weighted_nms(decode_palms(out["Identity"], out["Identity_1"], lb, min_score), PALM_NMS_IOU)
    return palms if max_palms is None else palms[:max_palms]


def transform_rect(cx: float, cy: float, w: float, h: float, rotation: float, opts: dict) -> Roi:
    """MediaPipe's RectTransformation (square_long) in image pixels."""
    c, s = math.cos(rotation), math.sin(rotation)
    dx, dy = w * opts["shift_x"], h * opts["shift_y"]
    return Roi(cx + dx * c - dy * s, cy + dx * s + dy * c, max(w, h) * opts["scale"], rotation)


def roi_from_palm(det: Detection) -> Roi:
    x0, y0, x1, y1 = (float(v) for v in det.box)
    a, b = PALM_ROTATION_KEYPOINTS
    (ax, ay), (bx, by) = det.keypoints[a], det.keypoints[b]
    rotation = normalize_radians(HAND_TARGET_ANGLE - math.atan2(-(float(by) - float(ay)), float(bx) - float(ax)))
    return transform_rect((x0 + x1) / 2, (y0 + y1) / 2, x1 - x0, y1 - y0, rotation, PALM_ROI)
