"""The photos of the teach-the-camera tests (tests/test_teach_pages.py, tests/test_miniprogram_teach.py): crops of
scikit-image's cat, coffee and rocket (public domain), three per class to train on and the centre one held out, and
the judge of what the pages show: which class's colour fills the banner under the frame."""

from __future__ import annotations

from pathlib import Path

import numpy as np

PHOTOS = {"cat": "chelsea", "coffee": "coffee", "rocket": "rocket"}  # the classes, in order; skimage.data names
CAMERA = "tr"  # the rocket's crop the camera shows (a snapshot adds it to its class)


def crops(rgb: np.ndarray) -> dict[str, np.ndarray]:
    """Four 80% crops at the corners (training photos) and the centre one (held out)."""
    h, w = rgb.shape[:2]
    ch, cw = int(0.8 * h), int(0.8 * w)
    at = {"tl": (0, 0), "tr": (0, w - cw), "bl": (h - ch, 0), "br": (h - ch, w - cw),
          "centre": ((h - ch) // 2, (w - cw) // 2)}
    return {k: rgb[y:y + ch, x:x + cw] for k, (y, x) in at.items()}


def photos() -> dict[str, dict[str, np.ndarray]]:
    """class -> crop key -> RGB pixels."""
    from skimage import data

    return {name: crops(getattr(data, photo)()) for name, photo in PHOTOS.items()}


def rgba(rgb: np.ndarray) -> np.ndarray:
    out = np.full((*rgb.shape[:2], 4), 255, dtype=np.uint8)
    out[..., :3] = rgb
    return out


def _rgb(color: str) -> np.ndarray:
    return np.asarray([int(color[i:i + 2], 16) for i in (1, 3, 5)])


def banner_class(shown: np.ndarray, colors: list[str], banner: float) -> int | None:
    """The class whose colour (colors: the page's, in class order) fills the banner (banner: the page's share of the
    frame's height) under the frame shown (RGB or RGBA pixels): most of the banner's pixels within 24 levels of it;
    None when no class's does."""
    h = shown.shape[0]
    band = shown[int(h * (1 - 0.8 * banner)):h - 1, :, :3].astype(np.int32)  # clear of the banner's top edge
    for k, color in enumerate(colors):
        if (np.abs(band - _rgb(color)).max(-1) <= 24).mean() >= 0.6:
            return k
    return None


def paint(shown: np.ndarray, color: str, banner: float) -> np.ndarray:
    """A copy of the frame with the banner area painted (to prove banner_class can tell)."""
    out = shown.copy()
    out[int(shown.shape[0] * (1 - banner)):, :, :3] = _rgb(color)
    return out


def write_photo(path: Path, rgb: np.ndarray) -> Path:
    from PIL import Image

    Image.fromarray(rgb).save(path)
    return path
