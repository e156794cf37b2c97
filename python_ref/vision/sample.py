"""Sampling a rotated rectangle of an image into a model input, exactly as MediaPipe's ImageToTensorCalculator does
on the CPU (OpenCV warpPerspective, INTER_LINEAR, on 8-bit pixels), so the face pipeline reproduces MediaPipe's
landmarks to a few thousandths of a pixel.

The rectangle (centre (cx, cy), size w x h, rotation `angle` radians, y down) maps to the n_w x n_h output by its
corners: output pixel (row i, column j) takes the image at
    p = centre + R(angle) @ ((j / n_w - 0.5) * w, (i / n_h - 0.5) * h)
(the rectangle's corner point j / n_w, not the pixel centre), where image pixel (row r, column c) holds its value at
the point (c, r). Positions are rounded to 1/32 pixel (round half to even), X = rint(32 p); the four neighbours
X >> 5, (X >> 5) + 1 blend with integer weights (32 - fx)(32 - fy)*32, ... (fx = X & 31, they sum to 2^15) and the
sum is rounded to 8 bits: (sum + 2^14) >> 15. Neighbours outside the image are the nearest edge pixel (replicate)
or 0 (zero border).
A model input is then (v - mean) / div per byte v, in float64, rounded once to float32 (sample_input).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

# sample_input's signature: the pipelines take any implementation of it (the engine's, wasmrt.vision.imgops)
SampleInput = Callable[[np.ndarray, float, float, float, float, float, int, int, str, float, float], np.ndarray]


def sample_rect(rgb: np.ndarray, cx: float, cy: float, w: float, h: float, angle: float, n_w: int, n_h: int,
                border: str = "replicate") -> np.ndarray:
    """uint8 [n_h, n_w, 3] from an HxWx3 (or x4) uint8 image."""
    img = np.asarray(rgb)[:, :, :3].astype(np.int64)
    ih, iw = img.shape[:2]
    c, s = math.cos(angle), math.sin(angle)
    u = (np.arange(n_w, dtype=np.float64) / n_w - 0.5) * w
    v = (np.arange(n_h, dtype=np.float64) / n_h - 0.5) * h
    uu, vv = np.meshgrid(u, v)
    px, py = cx + uu * c - vv * s, cy + uu * s + vv * c
    xq, yq = np.rint(px * 32).astype(np.int64), np.rint(py * 32).astype(np.int64)
    x0, y0, fx, fy = xq >> 5, yq >> 5, xq & 31, yq & 31
    acc = np.zeros((n_h, n_w, 3), np.int64)
    for dy, wy in ((0, 32 - fy), (1, fy)):
        for dx, wx in ((0, 32 - fx), (1, fx)):
            r, col = y0 + dy, x0 + dx
            pix = img[np.clip(r, 0, ih - 1), np.clip(col, 0, iw - 1)]
            if border == "zero":
                pix = pix * ((r >= 0) & (r < ih) & (col >= 0) & (col < iw))[..., None]
            acc += pix * (wx * wy * 32)[..., None]
    return ((acc + (1 << 14)) >> 15).clip(0, 255).astype(np.uint8)


def sample_input(rgb: np.ndarray, cx: float, cy: float, w: float, h: float, angle: float, n_w: int, n_h: int,
                 border: str, mean: float, div: float) -> np.ndarray:
    """float32 [1, n_h, n_w, 3]: sample_rect's bytes normalised as the models take them ([0, 1]: mean 0, div 255)."""
    px = sample_rect(rgb, cx, cy, w, h, angle, n_w, n_h, border)
    return ((px.astype(np.float64) - mean) / div).astype(np.float32)[None]
