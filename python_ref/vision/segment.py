"""Selfie segmentation (MediaPipe's selfie_segmentation and selfie_segmentation_landscape), temporal smoothing and
compositing on raw pixels.

Model choice: "landscape" (256 x 144 input) when the frame's width / height > LANDSCAPE_MIN_ASPECT (4/3, where the
  two input shapes are equally far in log aspect), else "general" (256 x 256); a SelfieSegmenter may also be fixed
  to one model.
Input: the whole frame stretched to the model's input (vision/sample.py: centre (W/2, H/2), size W x H, no
  rotation, zero border), / 255 rounded once to float32.
Mask: the model's [1, h, w, 1] confidence (no activation: it is already a probability) resized to the frame by
  bilinear interpolation with pixel centres aligned (OpenCV's INTER_LINEAR, as MediaPipe's CPU calculator):
  source x = (j + 0.5) * w / W - 0.5, clamped to [0, w - 1] (likewise y), float64, then float32.
Smoothing (MediaPipe's SegmentationSmoothingCalculator, ratio 0.7): with t = new - 0.5, x = t^2,
  u = 1 - min(1, x (c1 + x (c2 + x (c3 + x (c4 + x c5))))) (the new value's uncertainty), the output is
  new + (previous - new) * u * ratio, in float32 arithmetic; the first frame (or a size change) passes unchanged.
Compositing (uint8, exact integers): alpha a = floor(clip(mask, 0, 1) * 255 + 0.5) (NaN: 0);
  out = (fg * a + bg * (255 - a) + 127) // 255 per channel (alpha channels of RGBA frames are kept from the frame).
Background blur: BLUR_PASSES box filters of radius r, each a horizontal then a vertical pass with edge pixels
  replicated, each pass rounding (sum + n // 2) // n with n = 2r + 1 (r <= BLUR_MAX_RADIUS); then composited under
  the person.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from python_ref.vision.constants import (
    BLUR_MAX_RADIUS,
    BLUR_PASSES,
    BLUR_RADIUS,
    LANDSCAPE_MIN_ASPECT,
    SELFIE_MODELS,
    SMOOTHING_POLY,
    SMOOTHING_RATIO,
)
from python_ref.vision.facemesh import ModelRunner
from python_ref.vision.sample import SampleInput, sample_input


def choose_model(width: int, height: int) -> str:
    return "landscape" if width > LANDSCAPE_MIN_ASPECT * height else "general"


def selfie_input(rgb: np.ndarray, model: str, sample: SampleInput = sample_input) -> np.ndarray:
    """float32 [1, h, w, 3] in [0, 1]: the whole frame stretched to the model's input."""
    spec = SELFIE_MODELS[model]
    h, w = np.asarray(rgb).shape[:2]
    return sample(rgb, w / 2, h / 2, w, h, 0.0, spec["width"], spec["height"], "zero", 0.0, 255.0)


def _axis(n_src: int, n_dst: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    s = (np.arange(n_dst, dtype=np.float64) + 0.5) * (n_src / n_dst) - 0.5
    s = np.clip(s, 0, n_src - 1)
    i0 = np.floor(s).astype(np.int64)
    i1 = np.minimum(i0 + 1, n_src - 1)
    return i0, i1, s - i0


def resize_mask(mask: np.ndarray, width: int, height: int) -> np.ndarray:
    """[h, w] float -> [height, width] float32, bilinear with pixel centres aligned, edges clamped."""
    m = np.asarray(mask, dtype=np.float64)
    x0, x1, fx = _axis(m.shape[1], width)
    y0, y1, fy = _axis(m.shape[0], height)
    top = m[y0][:, x0] * (1 - fx) + m[y0][:, x1] * fx
    bottom = m[y1][:, x0] * (1 - fx) + m[y1][:, x1] * fx
    return (top * (1 - fy)[:, None] + bottom * fy[:, None]).astype(np.float32)


def check_ratio(ratio: float, who: str) -> None:
    if not 0 <= ratio <= 1:  # NaN too
        raise ValueError(f"{who}: the smoothing ratio must be in [0, 1], got {ratio}")


def smooth(new: np.ndarray, previous: np.ndarray | None, ratio: float = SMOOTHING_RATIO) -> np.ndarray:
    """MediaPipe's uncertainty-weighted blend of this frame's mask with the previous output; ratio in [0, 1] (the
    previous mask's largest weight; 0: no smoothing)."""
    check_ratio(ratio, "smooth")
    n = np.asarray(new, dtype=np.float32)
    if previous is None or ratio <= 0 or np.shape(previous) != n.shape:
        return n.copy()
    c1, c2, c3, c4, c5 = (np.float32(c) for c in SMOOTHING_POLY)
    t = n - np.float32(0.5)
    x = t * t
    u = np.float32(1) - np.minimum(np.float32(1), x * (c1 + x * (c2 + x * (c3 + x * (c4 + x * c5)))))
    return n + (np.asarray(previous, np.float32) - n) * (u * np.float32(ratio))


def mask_frame(mask: np.ndarray, width: int, height: int, previous: np.ndarray | None,
               ratio: float = SMOOTHING_RATIO) -> np.ndarray:
    """A segmenter's frame: the model's mask resized to the frame, then smoothed with the previous one."""
    return smooth(resize_mask(mask, width, height), previous, ratio)


def alpha8(mask: np.ndarray) -> np.ndarray:
    """NaN (a broken mask) is background."""
    m = np.nan_to_num(np.asarray(mask, np.float64), nan=0.0)
    return np.floor(np.clip(m, 0, 1) * 255 + 0.5).astype(np.int64)


def composite(frame: np.ndarray, mask: np.ndarray, background: np.ndarray) -> np.ndarray:
    """The frame where the mask says person, the background elsewhere (uint8, the frame's shape)."""
    fg = np.asarray(frame)
    bg = np.asarray(background)
    if fg.dtype != np.uint8 or bg.dtype != np.uint8:
        raise ValueError("composite: frame and background must be uint8")
    if bg.shape[:2] != fg.shape[:2] or np.shape(mask) != fg.shape[:2]:
        raise ValueError(f"composite: frame {fg.shape}, mask {np.shape(mask)} and background {bg.shape} "
                         "differ in size")
    a = alpha8(mask)[..., None]
    out = fg.copy()
    out[..., :3] = ((fg[..., :3].astype(np.int64) * a + bg[..., :3].astype(np.int64) * (255 - a) + 127) // 255)
    return out


def replace_background(frame: np.ndarray, mask: np.ndarray, background: np.ndarray | tuple[int, int, int]
                       ) -> np.ndarray:
    """background: an image of the frame's size, or an (r, g, b) colour."""
    fg = np.asarray(frame)
    if isinstance(background, tuple | list):
        bg = np.empty_like(fg)
        bg[..., :3] = np.asarray(background, np.uint8)
        if fg.shape[2] == 4:
            bg[..., 3] = 255
        background = bg
    return composite(fg, mask, np.asarray(background))


def box_blur(rgb: np.ndarray, radius: int = BLUR_RADIUS, passes: int = BLUR_PASSES) -> np.ndarray:
    if not 0 <= radius <= BLUR_MAX_RADIUS or passes < 0:
        raise ValueError(f"box_blur: radius must be 0..{BLUR_MAX_RADIUS} and passes >= 0, got {radius} and {passes}")
    img = np.asarray(rgb)[..., :3].astype(np.int64)
    if radius < 1:
        return np.asarray(rgb)[..., :3].copy()
    n = 2 * radius + 1
    for _ in range(passes):
        for axis in (1, 0):
            pad = [(0, 0)] * 3
            pad[axis] = (radius, radius)
            p = np.pad(img, pad, mode="edge")
            c = np.cumsum(p, axis=axis)
            c = np.concatenate([np.zeros_like(np.take(c, [0], axis=axis)), c], axis=axis)
            size = img.shape[axis]
            s = np.take(c, np.arange(n, n + size), axis=axis) - np.take(c, np.arange(size), axis=axis)
            img = (s + n // 2) // n
    return img.astype(np.uint8)


def blur_background(frame: np.ndarray, mask: np.ndarray, radius: int = BLUR_RADIUS) -> np.ndarray:
    return composite(frame, mask, blurred(frame, radius, box_blur))


def blurred(frame: np.ndarray, radius: int, blur: Any) -> np.ndarray:
    """The frame with its colour channels blur(frame, radius)'s (box_blur, or an engine's): blur_background's
    background."""
    bg = np.array(frame, copy=True)
    bg[..., :3] = blur(bg, radius)
    return bg


def mask_composite(mask: np.ndarray, previous: np.ndarray | None, ratio: float, frame: np.ndarray,
                   background: np.ndarray | tuple[int, int, int]) -> tuple[np.ndarray, np.ndarray]:
    """A segmenter's frame composited: (mask_frame at the frame's size, replace_background by that mask)."""
    fg = np.asarray(frame)
    m = mask_frame(mask, fg.shape[1], fg.shape[0], previous, ratio)
    return m, replace_background(fg, m, background)


class SelfieSegmenter:
    """Confidence mask at frame size, smoothed over frames. runners: {"general": run, "landscape": run} (the
    models one needs); model: "auto" (by frame shape), "general" or "landscape"."""

    def __init__(self, runners: dict[str, ModelRunner], *, model: str = "auto", smoothing: float = SMOOTHING_RATIO,
                 ops: Any = None) -> None:
        """ops: the image operations (sample_input, mask_frame, mask_composite, box_blur) of an engine
        (wasmrt.vision.imgops); None: python_ref's."""
        self.ops = ops if ops is not None else SimpleNamespace(sample_input=sample_input, mask_frame=mask_frame,
                                                               mask_composite=mask_composite, box_blur=box_blur)
        if model not in ("auto", *SELFIE_MODELS):
            raise ValueError(f"SelfieSegmenter: model must be auto, general or landscape, got {model!r}")
        check_ratio(smoothing, "SelfieSegmenter")
        self.runners, self.model, self.smoothing = runners, model, smoothing
        self.previous: np.ndarray | None = None

    def reset(self) -> None:
        self.previous = None

    def raw_mask(self, rgb: np.ndarray) -> tuple[np.ndarray, str]:
        """The model's mask (its input size) and which model ran."""
        h, w = rgb.shape[:2]
        model = choose_model(w, h) if self.model == "auto" else self.model
        if model not in self.runners:
            raise ValueError(f"SelfieSegmenter: no runner for the {model} model")
        out = self.runners[model]({"input_1": selfie_input(rgb, model, self.ops.sample_input)})
        spec = SELFIE_MODELS[model]
        return np.asarray(out[spec["output"]], np.float32).reshape(spec["height"], spec["width"]), model

    def segment(self, image: np.ndarray) -> np.ndarray:
        """[H, W] float32 person confidence in [0, 1]."""
        rgb = _frame(image, "segment")
        small, _ = self.raw_mask(rgb)
        mask = self.ops.mask_frame(small, rgb.shape[1], rgb.shape[0], self.previous, self.smoothing)
        self.previous = mask.copy()  # its own: what the caller does with the mask does not change the next one
        return mask

    def replace_background(self, image: np.ndarray, background: np.ndarray | tuple[int, int, int]) -> np.ndarray:
        """segment() then replace_background by its mask, in one engine pass (the mask is then self.previous)."""
        rgb = _frame(image, "replace_background")
        small, _ = self.raw_mask(rgb)
        self.previous, out = self.ops.mask_composite(small, self.previous, self.smoothing, rgb, background)
        return out

    def blur_background(self, image: np.ndarray, radius: int = BLUR_RADIUS) -> np.ndarray:
        """segment() then blur_background by its mask."""
        rgb = _frame(image, "blur_background")
        return self.replace_background(rgb, blurred(rgb, radius, self.ops.box_blur))


def _frame(image: np.ndarray, who: str) -> np.ndarray:
    rgb = np.asarray(image)
    if rgb.ndim != 3 or rgb.shape[2] not in (3, 4) or rgb.dtype != np.uint8 or 0 in rgb.shape:
        raise ValueError(f"SelfieSegmenter.{who}: expected an HxWx3 (or x4) uint8 image (not empty), got "
                         f"{rgb.dtype} {rgb.shape}")
    return rgb
