"""Hand tracking as MediaPipe Hands does it: palm detection, the rotated hand crop, 21 landmarks (image and 3-D
world), handedness, and tracking from frame to frame.

Landmark model: the crop (a vision/roi.py Roi: centre, side, rotation) sampled into 224 x 224 by vision/sample.py
  (edge pixels replicated), / 255 rounded once to float32. Outputs: 21 x (x, y, z) in crop pixels, mapped back as
  the face's (roi.map_landmarks: z scaled like x), then z / HAND_NORMALIZE_Z (0.4, MediaPipe's normalize_z);
  hand presence (a probability); handedness (the probability p of "Left", as MediaPipe's label map says: the label
  is "Left" when p > 0.5, else "Right", with score max(p, 1 - p); MediaPipe assumes a mirrored, selfie-camera
  image); world landmarks (metres, origin at the hand's centre) turned by the crop's rotation about z.
Crop from landmarks (HandLandmarkLandmarksToRoi, in image pixels): rotation = normalize(pi / 2 - atan2(-(y1 - y0),
  x1 - x0)) with (x0, y0) the wrist and (x1, y1) = ((index + ring) / 2 + middle) / 2 of the three MCPs; the
  landmarks HAND_ROI_LANDMARKS, taken relative to their axis-aligned box centre and turned by -rotation, give a box
  (w, h) whose centre is turned back; then RectTransformation: shift (0, -0.1) of (w, h) turned, side 2 max(w, h).
Per frame (hand_landmark_tracking_cpu):
  1. Crops tracked from the previous frame (only when tracking). When there are fewer than max_hands of them, the
     palm detector runs and its first max_hands palms give crops (palm.py).
  2. Association: the palm crops first, then each tracked crop removes every crop already listed whose axis-aligned
     box (rotation ignored) has IoU > 0.5 with its own, and is appended.
  3. The landmark model runs on each crop in that order; a hand is kept when presence >= min_presence.
  4. The kept hands' landmark crops are the next frame's tracked crops.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from python_ref.vision.constants import (
    HAND_INPUT,
    HAND_MIN_PRESENCE,
    HAND_NORMALIZE_Z,
    HAND_OUTPUTS,
    HAND_ROI_LANDMARKS,
    HAND_ROTATION_LANDMARKS,
    HAND_TARGET_ANGLE,
    HANDEDNESS_LABELS,
    LANDMARK_ROI,
    MAX_HANDS,
    PALM_MIN_SCORE,
    TRACK_IOU,
)
from python_ref.vision.detect import Detection, iou
from python_ref.vision.facemesh import ModelRunner
from python_ref.vision.gestures import gesture
from python_ref.vision.palm import detect_palms, normalize_radians, roi_from_palm, transform_rect
from python_ref.vision.roi import Roi, map_landmarks, warp_roi
from python_ref.vision.sample import SampleInput, sample_input


@dataclass
class Hand:
    landmarks: np.ndarray  # [21, 3] image pixels (z in the scale of x)
    world: np.ndarray  # [21, 3] metres, about the hand's centre
    handedness: str  # "Left" | "Right" (as seen in a mirrored, selfie image)
    handedness_score: float
    score: float  # hand presence
    roi: Roi  # the crop the landmarks came from
    tracked: bool  # the crop came from the previous frame's landmarks (no detection for this hand)
    gesture: str | None = None
    detection: Detection | None = None


@dataclass
class FrameStats:
    ran_detector: bool = False
    ms: dict[str, float] = field(default_factory=dict)


def roi_from_hand_landmarks(lm: np.ndarray) -> Roi:
    """landmarks [21, >=2] in image pixels -> the crop for the next frame."""
    p = np.asarray(lm, dtype=np.float64)[:, :2]
    k = HAND_ROTATION_LANDMARKS
    x0, y0 = p[k["wrist"]]
    x1, y1 = ((p[k["index"]] + p[k["ring"]]) / 2 + p[k["middle"]]) / 2
    rotation = normalize_radians(HAND_TARGET_ANGLE - math.atan2(-(y1 - y0), x1 - x0))
    sub = p[HAND_ROI_LANDMARKS]
    ac = (sub.min(axis=0) + sub.max(axis=0)) / 2
    c, s = math.cos(-rotation), math.sin(-rotation)
    q = sub - ac
    px, py = q[:, 0] * c - q[:, 1] * s, q[:, 0] * s + q[:, 1] * c
    pcx, pcy = (px.min() + px.max()) / 2, (py.min() + py.max()) / 2
    cr, sr = math.cos(rotation), math.sin(rotation)
    cx, cy = pcx * cr - pcy * sr + ac[0], pcx * sr + pcy * cr + ac[1]
    return transform_rect(cx, cy, px.max() - px.min(), py.max() - py.min(), rotation, LANDMARK_ROI)


def axis_box(roi: Roi) -> np.ndarray:
    h = roi.side / 2
    return np.array([roi.cx - h, roi.cy - h, roi.cx + h, roi.cy + h])


def associate(palm_rois: list[Roi], tracked: list[Roi], threshold: float = TRACK_IOU) -> list[tuple[Roi, bool]]:
    """MediaPipe's AssociationNormRect: (crop, came from tracking), palm crops first."""
    out = [(r, False) for r in palm_rois]
    for t in tracked:
        out = [(r, k) for r, k in out if iou(axis_box(r), axis_box(t)) <= threshold]
        out.append((t, True))
    return out


def handedness(p: float) -> tuple[str, float]:
    return (HANDEDNESS_LABELS[0], p) if p > 0.5 else (HANDEDNESS_LABELS[1], 1.0 - p)


def map_world(raw: np.ndarray, roi: Roi) -> np.ndarray:
    w = np.asarray(raw, dtype=np.float64).reshape(-1, 3)
    c, s = math.cos(roi.angle), math.sin(roi.angle)
    return np.stack([w[:, 0] * c - w[:, 1] * s, w[:, 0] * s + w[:, 1] * c, w[:, 2]], axis=1)


def models_dir() -> Path:
    return Path(__file__).resolve().parents[2] / "models"


class HandTracker:
    """The hand pipeline on any model runner (run(feeds) -> outputs by name): the palm detector and the landmarker."""

    def __init__(self, detector: ModelRunner, landmarker: ModelRunner, *, max_hands: int = MAX_HANDS,
                 min_detection_score: float = PALM_MIN_SCORE, min_presence: float = HAND_MIN_PRESENCE,
                 tracking: bool = True, ops: Any = None) -> None:
        """ops: the image operations (sample_input) of an engine (wasmrt.vision.imgops); None: python_ref's."""
        if max_hands < 1:
            raise ValueError(f"max_hands must be >= 1, got {max_hands}")
        self.detector, self.landmarker = detector, landmarker
        self.max_hands, self.min_detection_score, self.min_presence = max_hands, min_detection_score, min_presence
        self.tracking = tracking
        self.sample: SampleInput = ops.sample_input if ops is not None else sample_input
        self.tracked: list[Roi] = []
        self.stats = FrameStats()

    def reset(self) -> None:
        self.tracked = []

    def landmarks(self, rgb: np.ndarray, roi: Roi) -> tuple[np.ndarray, np.ndarray, float, float]:
        """(landmarks [21, 3] image pixels, world [21, 3], presence, P(Left)) for one crop."""
        t0 = time.perf_counter()
        tensor = warp_roi(rgb, roi, HAND_INPUT, self.sample)
        t1 = time.perf_counter()
        out = self.landmarker({"input_1": tensor})
        ms = self.stats.ms
        ms["warp"] = ms.get("warp", 0.0) + (t1 - t0) * 1e3
        ms["landmarks"] = ms.get("landmarks", 0.0) + (time.perf_counter() - t1) * 1e3
        lm = map_landmarks(out[HAND_OUTPUTS["landmarks"]], roi, HAND_INPUT)
        lm[:, 2] /= HAND_NORMALIZE_Z
        world = map_world(out[HAND_OUTPUTS["world"]], roi)
        presence = float(np.asarray(out[HAND_OUTPUTS["presence"]]).reshape(-1)[0])
        left = float(np.asarray(out[HAND_OUTPUTS["handedness"]]).reshape(-1)[0])
        return lm, world, presence, left

    def detect(self, image: np.ndarray) -> list[Hand]:
        rgb = np.asarray(image)
        if rgb.ndim != 3 or rgb.shape[2] not in (3, 4) or rgb.dtype != np.uint8 or 0 in rgb.shape:
            raise ValueError(f"HandTracker.detect: expected an HxWx3 (or x4) uint8 image (not empty), got {rgb.dtype} "
                             f"{rgb.shape}")
        self.stats = FrameStats()
        tracked = self.tracked if self.tracking else []
        palms: list[Detection] = []
        if len(tracked) < self.max_hands:
            t0 = time.perf_counter()
            palms = detect_palms(self.detector, rgb, self.min_detection_score, self.max_hands, self.sample)
            self.stats.ran_detector = True
            self.stats.ms["detector"] = (time.perf_counter() - t0) * 1e3
        palm_rois = [roi_from_palm(d) for d in palms]
        hands = []
        for roi, from_track in associate(palm_rois, tracked):
            lm, world, presence, left = self.landmarks(rgb, roi)
            if presence < self.min_presence:
                continue
            label, score = handedness(left)
            det = None if from_track else palms[palm_rois.index(roi)]
            hands.append(Hand(lm, world, label, score, presence, roi, from_track, gesture(lm, world), det))
        self.tracked = [roi_from_hand_landmarks(h.landmarks) for h in hands] if self.tracking else []
        return hands
