"""Lip mask from the landmark rings and natural-looking recolouring.

Rasterization (the same rule in JS): pixel (row i, column j) is inside a polygon when its centre (j + 0.5, i + 0.5)
  is, by the even-odd rule. Per row, with yc = i + 0.5, every edge (p, q) with (p.y > yc) != (q.y > yc) crosses at
  x = p.x + (yc - p.y) * (q.x - p.x) / (q.y - p.y); the crossings are sorted and each pair [xa, xb) fills the
  columns j = ceil(xa - 0.5) .. ceil(xb - 0.5) - 1. Lips = inside(outer ring) and not inside(inner ring).
Feathering: radius r = max(1, floor(FEATHER * mouth width + 0.5)), mouth width = |landmark 291 - landmark 61|;
  the 0/1 mask is box-blurred twice with a (2r + 1)-tap box (taps summed left to right / top to bottom, zeros
  outside the image), rows then columns each time.
Colour (per pixel, float64): sRGB -> linear -> Oklab (L, a, b). The lipstick keeps the lips' lightness texture:
  L' = L + (Lt - Lm) * LIGHTNESS_SHIFT where Lm is the alpha-weighted mean L over the lips and Lt the colour's L,
  and takes the colour's chroma: (a', b') = (at, bt). Back to linear RGB (clamped to [0, 1]), mixed with the original
  in linear light by alpha * intensity, encoded to sRGB, rounded with floor(v * 255 + 0.5).
"""

from __future__ import annotations

import math

import numpy as np

LIPS_OUTER = (61, 146, 91, 181, 84, 17, 314, 405, 321, 375, 291, 409, 270, 269, 267, 0, 37, 39, 40, 185)
LIPS_INNER = (78, 95, 88, 178, 87, 14, 317, 402, 318, 324, 308, 415, 310, 311, 312, 13, 82, 81, 80, 191)
MOUTH_CORNERS = (61, 291)
FEATHER = 0.02
LIGHTNESS_SHIFT = 0.7


def polygon_mask(poly: np.ndarray, h: int, w: int) -> np.ndarray:
    """bool [h, w]: pixel centres inside the polygon (even-odd, the scanline rule of the module docstring)."""
    p = np.asarray(poly, dtype=np.float64)[:, :2]
    q = np.roll(p, -1, axis=0)
    mask = np.zeros((h, w), dtype=bool)
    if len(p) < 3 or not np.all(np.isfinite(p)):
        return mask
    i0 = max(0, math.floor(p[:, 1].min() - 0.5))
    i1 = min(h - 1, math.ceil(p[:, 1].max() - 0.5))
    for i in range(i0, i1 + 1):
        yc = i + 0.5
        cross = (p[:, 1] > yc) != (q[:, 1] > yc)
        a, b = p[cross], q[cross]
        xs = np.sort(a[:, 0] + (yc - a[:, 1]) * (b[:, 0] - a[:, 0]) / (b[:, 1] - a[:, 1]))
        for xa, xb in zip(xs[0::2], xs[1::2], strict=True):
            j0 = max(0, math.ceil(xa - 0.5))
            j1 = min(w, math.ceil(xb - 0.5))
            if j1 > j0:
                mask[i, j0:j1] = True
    return mask


def lip_mask(landmarks: np.ndarray, h: int, w: int) -> np.ndarray:
    lm = np.asarray(landmarks)
    return polygon_mask(lm[list(LIPS_OUTER)], h, w) & ~polygon_mask(lm[list(LIPS_INNER)], h, w)


def _box_blur(a: np.ndarray, r: int, axis: int) -> np.ndarray:
    """out[j] = (in[j - r] + ... + in[j + r]) / (2r + 1), summed left to right, zeros outside."""
    n = a.shape[axis]
    pad = [(0, 0)] * a.ndim
    pad[axis] = (r, r)
    p = np.pad(a, pad)
    acc = np.take(p, np.arange(0, n), axis=axis)
    for k in range(1, 2 * r + 1):
        acc = acc + np.take(p, np.arange(k, k + n), axis=axis)
    return acc / (2 * r + 1)


def feather_radius(landmarks: np.ndarray) -> int:
    a, b = np.asarray(landmarks)[list(MOUTH_CORNERS), :2]
    return max(1, math.floor(FEATHER * math.hypot(*(b - a)) + 0.5))


def feather(mask: np.ndarray, r: int) -> np.ndarray:
    """Soft alpha in [0, 1] from a 0/1 mask: two passes of a (2r + 1) box blur, rows then columns."""
    a = mask.astype(np.float64)
    for _ in range(2):
        a = _box_blur(_box_blur(a, r, 1), r, 0)
    return a


def lip_alpha(landmarks: np.ndarray, h: int, w: int) -> np.ndarray:
    return feather(lip_mask(landmarks, h, w), feather_radius(landmarks))


def parse_color(color: str | tuple[int, int, int]) -> tuple[int, int, int]:
    if isinstance(color, str):
        s = color.lstrip("#")
        if len(s) == 3:
            s = "".join(ch * 2 for ch in s)
        if len(s) != 6:
            raise ValueError(f"expected a colour like '#c2185b', got {color!r}")
        return int(s[0:2], 16), int(s[2:4], 16), int(s[4:6], 16)
    r, g, b = color
    return int(r), int(g), int(b)


def srgb_to_linear(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64) / 255.0
    return np.where(v <= 0.04045, v / 12.92, ((v + 0.055) / 1.055) ** 2.4)


def linear_to_srgb8(v: np.ndarray) -> np.ndarray:
    v = np.clip(v, 0.0, 1.0)
    s = np.where(v <= 0.0031308, v * 12.92, 1.055 * v ** (1 / 2.4) - 0.055)
    return np.floor(s * 255.0 + 0.5).astype(np.uint8)


def linear_to_oklab(rgb: np.ndarray) -> np.ndarray:
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    lc = np.cbrt(0.4122214708 * r + 0.5363325363 * g + 0.0514459929 * b)
    mc = np.cbrt(0.2119034982 * r + 0.6806995451 * g + 0.1073969566 * b)
    sc = np.cbrt(0.0883024619 * r + 0.2817188376 * g + 0.6299787005 * b)
    return np.stack([0.2104542553 * lc + 0.7936177850 * mc - 0.0040720468 * sc,
                     1.9779984951 * lc - 2.4285922050 * mc + 0.4505937099 * sc,
                     0.0259040371 * lc + 0.7827717662 * mc - 0.8086757660 * sc], axis=-1)


def oklab_to_linear(lab: np.ndarray) -> np.ndarray:
    L, a, b = lab[..., 0], lab[..., 1], lab[..., 2]
    lc = L + 0.3963377774 * a + 0.2158037573 * b
    mc = L - 0.1055613458 * a - 0.0638541728 * b
    sc = L - 0.0894841775 * a - 1.2914855480 * b
    lc, mc, sc = lc * lc * lc, mc * mc * mc, sc * sc * sc
    return np.stack([4.0767416621 * lc - 3.3077115913 * mc + 0.2309699292 * sc,
                     -1.2684380046 * lc + 2.6097574011 * mc - 0.3413193450 * sc,
                     -0.0041960863 * lc - 0.7034186147 * mc + 1.7076147010 * sc], axis=-1)


def recolor(rgb: np.ndarray, alpha: np.ndarray, color: str | tuple[int, int, int], intensity: float) -> np.ndarray:
    """Blend the colour into an HxWx3 (or x4) uint8 image where alpha > 0; returns a new image."""
    out = np.array(rgb, dtype=np.uint8, copy=True)
    sel = alpha > 0
    wsum = float(alpha[sel].sum())
    if wsum <= 0 or intensity <= 0:
        return out
    lin = srgb_to_linear(out[sel][:, :3])
    lab = linear_to_oklab(lin)
    target = linear_to_oklab(srgb_to_linear(np.array(parse_color(color), dtype=np.float64)))
    lm = float((alpha[sel] * lab[:, 0]).sum()) / wsum
    new = np.empty_like(lab)
    new[:, 0] = lab[:, 0] + (target[0] - lm) * LIGHTNESS_SHIFT
    new[:, 1], new[:, 2] = target[1], target[2]
    painted = np.clip(oklab_to_linear(new), 0.0, 1.0)
    k = (alpha[sel] * min(float(intensity), 1.0))[:, None]
    mixed = lin + (painted - lin) * k
    pix = out[sel]
    pix[:, :3] = linear_to_srgb8(mixed)
    out[sel] = pix
    return out


def paint_lips(rgb: np.ndarray, face, color: str | tuple[int, int, int] = "#c2185b",
               intensity: float = 0.6) -> np.ndarray:
    """The try-on: recolour the lips of `face` (a Face or a [468, 3] landmark array)."""
    lm = getattr(face, "landmarks", face)
    h, w = np.asarray(rgb).shape[:2]
    return recolor(rgb, lip_alpha(lm, h, w), color, intensity)
