"""The rotated square region the landmark model sees, and the exact warp into its 192x192 input.

A Roi is (cx, cy, side, angle) in image pixels; angle (radians) is the direction of the face's eye line in the image
(y down), so the crop's x axis runs from the subject's right eye to the left eye. With c = cos(angle),
s = sin(angle), a crop point (u, v) in [-0.5, 0.5]^2 lies at image point
    x = cx + side * (u * c - v * s),   y = cy + side * (u * s + v * c).

From a detection: centre = box centre, side = 1.5 * max(box width, box height),
  angle = atan2(ky1 - ky0, kx1 - kx0) from keypoints 0 (right eye) and 1 (left eye).
From landmarks (tracking): angle = atan2(y263 - y33, x263 - x33) (outer eye corners); the landmarks are turned by
  -angle about the origin; with their bounding box there (u0..u1, v0..v1), side = 1.5 * LANDMARK_SCALE *
  max(u1 - u0, v1 - v0) and the centre ((u0 + u1) / 2, (v0 + v1) / 2 + LANDMARK_SHIFT * side) is turned back.

Warp: the Roi's square sampled into n x n by vision/sample.py (MediaPipe's ImageToTensor: output pixel (i, j) at
  u = j / n - 0.5, v = i / n - 0.5, 8-bit bilinear, edge pixels replicated), then / 255 rounded once to float32.
Landmarks out: crop pixels (lx, ly, lz) -> u = lx / n - 0.5, v = ly / n - 0.5 mapped as above; z = lz * side / n.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from python_ref.vision.detect import Detection
from python_ref.vision.sample import SampleInput, sample_input

LANDMARK_INPUT = 192
DETECTION_SCALE = 1.5
# The landmark box is taller than the detector's box (it reaches the forehead): these two constants make the tracked
# crop match the detector's crop (side ratio, downward shift of the centre as a fraction of the side), measured on
# the astronaut, so tracked and detected frames give nearly the same landmarks.
LANDMARK_SCALE = 0.92
LANDMARK_SHIFT = 0.025
EYE_OUTER = (33, 263)  # subject's right, left outer eye corners


@dataclass(frozen=True)
class Roi:
    cx: float
    cy: float
    side: float
    angle: float

    def to_image(self, u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        c, s = math.cos(self.angle), math.sin(self.angle)
        return self.cx + self.side * (u * c - v * s), self.cy + self.side * (u * s + v * c)


def roi_from_detection(det: Detection) -> Roi:
    x0, y0, x1, y1 = (float(v) for v in det.box)
    (ax, ay), (bx, by) = det.keypoints[0], det.keypoints[1]
    side = DETECTION_SCALE * max(x1 - x0, y1 - y0)
    return Roi((x0 + x1) / 2, (y0 + y1) / 2, side, math.atan2(float(by - ay), float(bx - ax)))


def roi_from_landmarks(landmarks: np.ndarray) -> Roi:
    """landmarks [468, 3] in image pixels -> the crop for the next frame."""
    (ax, ay), (bx, by) = landmarks[EYE_OUTER[0], :2], landmarks[EYE_OUTER[1], :2]
    angle = math.atan2(float(by - ay), float(bx - ax))
    c, s = math.cos(angle), math.sin(angle)
    x, y = landmarks[:, 0].astype(np.float64), landmarks[:, 1].astype(np.float64)
    ru, rv = x * c + y * s, -x * s + y * c  # turned by -angle
    u0, u1, v0, v1 = ru.min(), ru.max(), rv.min(), rv.max()
    side = DETECTION_SCALE * LANDMARK_SCALE * max(u1 - u0, v1 - v0)
    mu, mv = (u0 + u1) / 2, (v0 + v1) / 2 + LANDMARK_SHIFT * side
    return Roi(float(mu * c - mv * s), float(mu * s + mv * c), float(side), angle)


def roi_is_sane(roi: Roi, previous: Roi | None, width: int, height: int) -> bool:
    """Tracking is trusted only while the crop stays plausible: centre in the image, a usable size, and (given the
    previous crop) no jump of more than half a crop or a size change beyond 2x."""
    if not all(math.isfinite(v) for v in (roi.cx, roi.cy, roi.side, roi.angle)):
        return False
    if not (0 <= roi.cx <= width and 0 <= roi.cy <= height):
        return False
    if not 16 <= roi.side <= 4 * max(width, height):
        return False
    if previous is not None:
        if not 0.5 <= roi.side / previous.side <= 2.0:
            return False
        if math.hypot(roi.cx - previous.cx, roi.cy - previous.cy) > 0.5 * previous.side:
            return False
    return True


def warp_roi(rgb: np.ndarray, roi: Roi, n: int = LANDMARK_INPUT, sample: SampleInput = sample_input) -> np.ndarray:
    """The landmark model's input: float32 [1, n, n, 3] in [0, 1]."""
    return sample(rgb, roi.cx, roi.cy, roi.side, roi.side, roi.angle, n, n, "replicate", 0.0, 255.0)


def map_landmarks(raw: np.ndarray, roi: Roi, n: int = LANDMARK_INPUT) -> np.ndarray:
    """Model output (1404 values, crop pixels) -> [468, 3] float64: x, y in image pixels, z in the same scale."""
    p = np.asarray(raw, dtype=np.float64).reshape(-1, 3)
    x, y = roi.to_image(p[:, 0] / n - 0.5, p[:, 1] / n - 0.5)
    return np.stack([x, y, p[:, 2] * roi.side / n], axis=1)
