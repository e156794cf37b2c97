"""A short, deterministic test clip: a still image moving and rotating slowly (the JS demo makes the same frames).

Frame t of n (size x size RGBA, uint8): with p = 2 pi t / n,
  angle = ROTATE * sin(p) (radians), scale = 1 + ZOOM * sin(2 p), shift = (SHIFT_X * sin(p), SHIFT_Y * sin(2 p))
  in output pixels. Output pixel centre (X, Y) = (j + 0.5, i + 0.5) comes from the source point
  d = (X - size / 2 - shift_x, Y - size / 2 - shift_y),
  x = W / 2 + (d.x * cos(angle) + d.y * sin(angle)) / scale * (W / size),
  y = H / 2 + (-d.x * sin(angle) + d.y * cos(angle)) / scale * (H / size)
  (the image is turned by +angle, y down), sampled like roi.warp_roi (bilinear at (x - 0.5, y - 0.5), indices
  clamped to the image) and rounded with floor(v + 0.5); alpha is 255.
"""

from __future__ import annotations

import math

import numpy as np

ROTATE = math.radians(12.0)
ZOOM = 0.08
SHIFT_X, SHIFT_Y = 24.0, 12.0


def clip_params(t: int, n: int) -> tuple[float, float, float, float]:
    p = 2 * math.pi * t / n
    return ROTATE * math.sin(p), 1 + ZOOM * math.sin(2 * p), SHIFT_X * math.sin(p), SHIFT_Y * math.sin(2 * p)


def clip_frame(rgb: np.ndarray, t: int, n: int, size: int = 384) -> np.ndarray:
    img = np.asarray(rgb)[:, :, :3].astype(np.float64)
    h, w = img.shape[:2]
    angle, scale, sx, sy = clip_params(t, n)
    c, s = math.cos(angle), math.sin(angle)
    g = np.arange(size, dtype=np.float64) + 0.5
    X, Y = np.meshgrid(g, g)
    dx, dy = X - size / 2 - sx, Y - size / 2 - sy
    x = w / 2 + (dx * c + dy * s) / scale * (w / size)
    y = h / 2 + (-dx * s + dy * c) / scale * (h / size)
    xs, ys = x - 0.5, y - 0.5
    x0, y0 = np.floor(xs), np.floor(ys)
    fx, fy = (xs - x0)[..., None], (ys - y0)[..., None]
    c0, c1 = np.clip(x0, 0, w - 1).astype(np.int64), np.clip(x0 + 1, 0, w - 1).astype(np.int64)
    r0, r1 = np.clip(y0, 0, h - 1).astype(np.int64), np.clip(y0 + 1, 0, h - 1).astype(np.int64)
    top = img[r0, c0] + (img[r0, c1] - img[r0, c0]) * fx
    bottom = img[r1, c0] + (img[r1, c1] - img[r1, c0]) * fx
    out = np.full((size, size, 4), 255, dtype=np.uint8)
    out[:, :, :3] = np.floor(top + (bottom - top) * fy + 0.5).astype(np.uint8)
    return out


def clip(rgb: np.ndarray, n: int = 48, size: int = 384) -> list[np.ndarray]:
    return [clip_frame(rgb, t, n, size) for t in range(n)]
