"""Reference of MediaPipe's attention face mesh ops (face_landmark_with_attention.tflite's custom ops
Landmarks2TransformMatrix v2, TransformTensorBilinear v1/v2 and TransformLandmarks v1/v2), in float64."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

F64 = np.float64


def _rotation(r: float) -> np.ndarray:
    return np.array([[math.cos(r), -math.sin(r)], [math.sin(r), math.cos(r)]])


def transform_matrix(landmarks: np.ndarray, a: dict[str, Any]) -> np.ndarray:
    """The [4, 4] matrix taking crop pixels (x, y, 0, 1) to landmark coordinates."""
    pts = landmarks.reshape(-1, 3).astype(F64)
    left, right = (pts[int(i), :2] for i in a["rotation_idx"])
    rot = float(a["target_rotation"]) - math.atan2(right[1] - left[1], right[0] - left[0])
    sub = pts[[int(i) for i in a["subset"]], :2] @ _rotation(rot).T  # the subset in the rotated frame
    lo, hi = sub.min(axis=0), sub.max(axis=0)
    cx, cy = _rotation(-rot) @ ((lo + hi) / 2)
    (oh, ow), (sx, sy) = (int(v) for v in a["size"]), (float(v) for v in a["scales"])
    t = np.eye(4)
    t[:2, 3] = cx, cy
    r = np.eye(4)
    r[:2, :2] = _rotation(-rot)
    s = np.diag([sx * (hi[0] - lo[0]) / ow, sy * (hi[1] - lo[1]) / oh, 1.0, 1.0])
    shift = np.eye(4)
    shift[:2, 3] = -ow / 2.0, -oh / 2.0
    return t @ r @ s @ shift


def _landmarks_to_transform_matrix(xs: list[np.ndarray | None], a: dict[str, Any]) -> np.ndarray:
    return transform_matrix(xs[0][0], a)[None].astype(xs[0].dtype)


def _transform_tensor_bilinear(xs: list[np.ndarray | None], a: dict[str, Any]) -> np.ndarray:
    x, m = xs[0][0].astype(F64), xs[1].reshape(4, 4).astype(F64)
    h, w, _ = x.shape
    oh, ow = (int(v) for v in a["size"])
    rows = m[:2].copy()
    if not a["align_corners"]:  # v2: sample pixel centres (T -> S * T * A with half-pixel shifts)
        rows[:, 3] += rows[:, 0] * 0.5 + rows[:, 1] * 0.5 - 0.5
    oy, ox = np.meshgrid(np.arange(oh, dtype=F64), np.arange(ow, dtype=F64), indexing="ij")
    tx = rows[0, 0] * ox + rows[0, 1] * oy + rows[0, 3]
    ty = rows[1, 0] * ox + rows[1, 1] * oy + rows[1, 3]
    inside = (tx >= 0) & (tx <= w - 1) & (ty >= 0) & (ty <= h - 1)
    x0, y0 = np.floor(tx), np.floor(ty)
    fx, fy = (tx - x0)[..., None], (ty - y0)[..., None]
    pad = np.zeros((h + 1, w + 1, x.shape[2]))  # the neighbour past the last row/column reads 0
    pad[:h, :w] = x
    xi, yi = np.clip(x0, 0, w - 1).astype(np.int64), np.clip(y0, 0, h - 1).astype(np.int64)
    top = (1 - fx) * pad[yi, xi] + fx * pad[yi, xi + 1]
    bottom = (1 - fx) * pad[yi + 1, xi] + fx * pad[yi + 1, xi + 1]
    y = np.where(inside[..., None], fy * bottom + (1 - fy) * top, 0.0)
    return y[None].astype(xs[0].dtype)


def _transform_landmarks(xs: list[np.ndarray | None], a: dict[str, Any]) -> np.ndarray:
    x, m = xs[0], xs[1].reshape(4, 4).astype(F64)
    dims = int(a["dimensions"])
    pts = x.reshape(-1, dims).astype(F64)
    scale = float(a["scale"])
    y = pts.copy()
    y[:, 0] = m[0, 0] * pts[:, 0] + m[0, 1] * pts[:, 1] + m[0, 3] * scale
    y[:, 1] = m[1, 0] * pts[:, 0] + m[1, 1] * pts[:, 1] + m[1, 3] * scale
    return y.reshape(x.shape).astype(x.dtype)


KERNELS: dict[str, Callable[[list[np.ndarray | None], dict[str, Any]], np.ndarray]] = {
    "LANDMARKS_TO_TRANSFORM_MATRIX": _landmarks_to_transform_matrix,
    "TRANSFORM_TENSOR_BILINEAR": _transform_tensor_bilinear,
    "TRANSFORM_LANDMARKS": _transform_landmarks,
}
