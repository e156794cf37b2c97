"""Image -> input tensor, following a model's `Preprocess` hints. The reference the JS binding reproduces.

The whole recipe, in order (all arithmetic in float64, one rounding to float32 at the very end, so a JS port that
computes with plain numbers and stores into a Float32Array gets the same bits):

1. Geometry (`plan`). The output is `out_h x out_w` (from the input shape and layout). With R(x) = floor(x + 0.5):
   - "stretch": the whole image is resized to the whole output (aspect ratio not kept).
   - "crop": take the largest centred region of the image with the output's aspect ratio, scale its sides by
     `crop_fraction` (crop_h = R(base_h * f), crop_w = R(base_w * f), at least 1), top = (h - crop_h) // 2,
     left = (w - crop_w) // 2; resize that region to the whole output. For a 224x224 output and f = 0.875 this is the
     usual "centre crop 87.5% of the short side".
   - "letterbox": scale s = min(out_w / w, out_h / h); content = R(w * s) x R(h * s) (at least 1, at most the
     output), placed at left = (out_w - content_w) // 2, top = (out_h - content_h) // 2. The border is filled with
     black pixels (value 0 *before* normalization, i.e. (0 - mean) / std), as MediaPipe's image-to-tensor does.
2. Bilinear resize of the source region to the content box, half-pixel centres, no antialiasing (as OpenCV
   INTER_LINEAR and TF half_pixel_centers). Per axis, for output index i: src = (i + 0.5) * (n_in / n_out) - 0.5,
   clamped to [0, n_in - 1]; i0 = floor(src), i1 = min(i0 + 1, n_in - 1), f = src - i0. Horizontal pass first:
   row = a + (b - a) * fx, then vertical: v = top + (bottom - top) * fy.
3. Colour: RGB input; "BGR" reverses the channel order. mean/std are in the model's channel order.
4. Normalize: (v - mean[c]) / std[c], then cast to float32, then transpose to the input's layout (NHWC or NCHW).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from wasmrt.compile.ir import Preprocess

RESIZE_MODES = ("stretch", "crop", "letterbox")


def _round_half_up(x: float) -> int:
    return math.floor(x + 0.5)  # not round(): Python rounds halves to even, JS Math.round rounds them up


@dataclass(frozen=True)
class Geometry:
    """Where the image lands in the tensor: source box (in image pixels) -> content box (in tensor pixels)."""

    src_top: int
    src_left: int
    src_h: int
    src_w: int
    dst_top: int
    dst_left: int
    dst_h: int
    dst_w: int

    def to_source(self, x: float, y: float) -> tuple[float, float]:
        """Map a continuous tensor coordinate (pixels, 0 = left/top edge) back to image pixels."""
        return (self.src_left + (x - self.dst_left) * self.src_w / self.dst_w,
                self.src_top + (y - self.dst_top) * self.src_h / self.dst_h)


def input_hw(pre: Preprocess, shape: tuple[int, ...]) -> tuple[int, int]:
    """Height and width of a 4-D image input of the given layout."""
    if len(shape) != 4:
        raise ValueError(f"expected a 4-D image input shape, got {shape}")
    if pre.layout == "NCHW":
        return shape[2], shape[3]
    if pre.layout == "NHWC":
        return shape[1], shape[2]
    raise ValueError(f"unknown layout {pre.layout!r}")


def plan(image_hw: tuple[int, int], pre: Preprocess, out_hw: tuple[int, int]) -> Geometry:
    """The geometry of step 1 of the module docstring."""
    h, w = image_hw
    oh, ow = out_hw
    if pre.resize == "stretch":
        return Geometry(0, 0, h, w, 0, 0, oh, ow)
    if pre.resize == "crop":
        if not 0.0 < pre.crop_fraction <= 1.0:
            raise ValueError(f"crop_fraction must be in (0, 1], got {pre.crop_fraction}")
        if w * oh >= h * ow:  # image wider than the output: the height limits the base region
            base_h, base_w = float(h), h * ow / oh
        else:
            base_h, base_w = w * oh / ow, float(w)
        ch = min(max(_round_half_up(base_h * pre.crop_fraction), 1), h)
        cw = min(max(_round_half_up(base_w * pre.crop_fraction), 1), w)
        return Geometry((h - ch) // 2, (w - cw) // 2, ch, cw, 0, 0, oh, ow)
    if pre.resize == "letterbox":
        s = min(ow / w, oh / h)
        ch = min(max(_round_half_up(h * s), 1), oh)
        cw = min(max(_round_half_up(w * s), 1), ow)
        return Geometry(0, 0, h, w, (oh - ch) // 2, (ow - cw) // 2, ch, cw)
    raise ValueError(f"unknown resize mode {pre.resize!r}; expected one of {RESIZE_MODES}")


def _axis_weights(n_in: int, n_out: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    src = (np.arange(n_out, dtype=np.float64) + 0.5) * (n_in / n_out) - 0.5
    src = np.clip(src, 0.0, n_in - 1)
    i0 = np.floor(src).astype(np.int64)
    i1 = np.minimum(i0 + 1, n_in - 1)
    return i0, i1, src - i0


def resize_bilinear(image: np.ndarray, out_h: int, out_w: int) -> np.ndarray:
    """Half-pixel bilinear resize of an HxWxC array, in float64 (step 2 of the module docstring)."""
    img = np.asarray(image, dtype=np.float64)
    x0, x1, fx = _axis_weights(img.shape[1], out_w)
    a, b = img[:, x0], img[:, x1]
    rows = a + (b - a) * fx[None, :, None]
    y0, y1, fy = _axis_weights(img.shape[0], out_h)
    top, bottom = rows[y0], rows[y1]
    return top + (bottom - top) * fy[:, None, None]


def _as_rgb(image: np.ndarray) -> np.ndarray:
    """Accept HxWx3 RGB, HxWx4 RGBA (alpha ignored, as with canvas ImageData) or HxW grey, all uint8."""
    img = np.asarray(image)
    if img.dtype != np.uint8:
        raise TypeError(f"expected a uint8 image, got {img.dtype}")
    if img.ndim == 2:
        return np.repeat(img[:, :, None], 3, axis=2)
    if img.ndim == 3 and img.shape[2] in (3, 4):
        return img[:, :, :3]
    raise ValueError(f"expected an HxWx3 RGB image, got shape {img.shape}")


def image_to_tensor(image: np.ndarray, pre: Preprocess, shape: tuple[int, ...]) -> np.ndarray:
    """Turn a uint8 RGB image into a float32 tensor of `shape` (batch 1) following the hints in `pre`."""
    img = _as_rgb(image)
    shape = tuple(int(d) for d in shape)
    if shape[0] != 1:
        raise ValueError(f"only batch 1 is supported, got shape {shape}")
    channels = shape[1] if pre.layout == "NCHW" else shape[3]
    if channels != 3 or len(pre.mean) != 3 or len(pre.std) != 3:
        raise ValueError(f"expected 3 channels and 3 mean/std values, got {shape}, {pre.mean}, {pre.std}")
    if pre.color not in ("RGB", "BGR"):
        raise ValueError(f"unknown colour order {pre.color!r}")
    out_h, out_w = input_hw(pre, shape)
    g = plan(img.shape[:2], pre, (out_h, out_w))

    canvas = np.zeros((out_h, out_w, 3), dtype=np.float64)  # letterbox border: black pixels
    region = img[g.src_top:g.src_top + g.src_h, g.src_left:g.src_left + g.src_w]
    canvas[g.dst_top:g.dst_top + g.dst_h, g.dst_left:g.dst_left + g.dst_w] = resize_bilinear(region, g.dst_h, g.dst_w)
    if pre.color == "BGR":
        canvas = canvas[:, :, ::-1]
    mean = np.asarray(pre.mean, dtype=np.float64)
    std = np.asarray(pre.std, dtype=np.float64)
    tensor = ((canvas - mean) / std).astype(np.float32)
    if pre.layout == "NCHW":
        tensor = tensor.transpose(2, 0, 1)
    return np.ascontiguousarray(tensor[None])


# -- (de)serialization, as stored in model metadata --------------------------------------------------------------


def to_dict(pre: Preprocess) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(pre).items()}


def from_dict(d: dict[str, Any]) -> Preprocess:
    known = set(Preprocess.__dataclass_fields__)
    kwargs = {k: tuple(v) if isinstance(v, list) else v for k, v in d.items() if k in known}
    return Preprocess(**kwargs)


def read_image(path: str | Path) -> np.ndarray:
    """An image file as HxWx3 uint8 RGB (alpha dropped, grey expanded)."""
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - Pillow comes with the package's dependencies
        raise ImportError("reading images needs Pillow: pip install pillow") from None
    try:
        with Image.open(path) as im:
            return np.asarray(im.convert("RGB"))
    except OSError as e:
        raise ValueError(f"{path}: cannot read image ({e})") from None
