"""Fixtures of the JS vision tests: the astronaut and the test clip as raw RGBA, and the python_ref.vision results
the Node, browser and mini-program tests compare against (one JSON file plus raw arrays)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "build" / "artifacts"
CLIP_FRAMES, CLIP_SIZE = 48, 384
CLIP_CHECK = (0, 5, 17, 31)  # frames whose bytes are compared with the JS generator
PAINT = {"color": "#c2185b", "intensity": 0.8}
LIVE_PAINT = {"color": "#8e24aa", "intensity": 0.8}  # purple: a hue no natural lip has, so a look can tell


def rgba(rgb: np.ndarray) -> np.ndarray:
    out = np.full((*rgb.shape[:2], 4), 255, dtype=np.uint8)
    out[:, :, :3] = rgb[:, :, :3]
    return out


def write(out: Path) -> dict:
    """Write everything into `out`; returns the manifest (also in out/vision.json)."""
    from skimage import data

    from python_ref.vision import FaceMesh, lip_mask, paint_lips
    from python_ref.vision.clip import clip

    out.mkdir(parents=True, exist_ok=True)
    astro = rgba(data.astronaut())
    astro.tofile(out / "astronaut.rgba")
    face = FaceMesh(tracking=False).detect(astro)[0]
    refined = FaceMesh(tracking=False, refine=True).detect(astro)[0]  # the attention mesh: 478 points
    lip_mask(refined.landmarks, 512, 512).astype(np.uint8).tofile(out / "astronaut_refined_mask.u8")
    lip_mask(face.landmarks, 512, 512).astype(np.uint8).tofile(out / "astronaut_mask.u8")
    paint_lips(astro, face, PAINT["color"], PAINT["intensity"]).tofile(out / "astronaut_painted.rgba")

    frames = clip(astro, CLIP_FRAMES, CLIP_SIZE)
    for t in CLIP_CHECK:
        frames[t].tofile(out / f"clip_{t}.rgba")
    every, tracked = FaceMesh(tracking=False), FaceMesh(tracking=True)
    lm_every, lm_tracked, ran = [], [], []
    for f in frames:
        lm_every.append(every.detect(f)[0].landmarks)
        lm_tracked.append(tracked.detect(f)[0].landmarks)
        ran.append(tracked.stats.ran_detector)
    np.asarray(lm_every, dtype=np.float64).tofile(out / "clip_every.f64")
    np.asarray(lm_tracked, dtype=np.float64).tofile(out / "clip_tracked.f64")
    np.stack([lip_mask(lm, CLIP_SIZE, CLIP_SIZE) for lm in lm_every]).astype(np.uint8).tofile(out / "clip_masks.u8")
    np.stack(frames).tofile(out / "clip_frames.rgba")

    det = face.detection
    manifest = {
        "models": str(ROOT / "models"),
        "astronaut": {"file": "astronaut.rgba", "width": 512, "height": 512, "mask": "astronaut_mask.u8",
                      "painted": "astronaut_painted.rgba", "paint": PAINT,
                      "detection": {"box": det.box.tolist(), "keypoints": det.keypoints.reshape(-1).tolist(),
                                    "score": det.score},
                      "roi": [face.roi.cx, face.roi.cy, face.roi.side, face.roi.angle],
                      "presence": face.score, "landmarks": face.landmarks.reshape(-1).tolist(),
                      "refined": {"landmarks": refined.landmarks.reshape(-1).tolist(),
                                  "mask": "astronaut_refined_mask.u8"}},
        "clip": {"frames": CLIP_FRAMES, "size": CLIP_SIZE, "check": list(CLIP_CHECK), "every": "clip_every.f64",
                 "tracked": "clip_tracked.f64", "ranDetector": ran, "masks": "clip_masks.u8",
                 "all": "clip_frames.rgba"},
        "livePaint": LIVE_PAINT,
    }
    (out / "vision.json").write_text(json.dumps(manifest))
    return manifest


# -- what a person sees: is the lipstick on the lips? --------------------------------------------------------------


def _erode(mask: np.ndarray) -> np.ndarray:
    """One pixel off the mask's edge (3x3): what is left is lip for sure, whatever the edge's resampling did."""
    m = np.pad(mask, 1)
    out = mask.copy()
    for dy in (0, 1, 2):
        for dx in (0, 1, 2):
            out &= m[dy:dy + mask.shape[0], dx:dx + mask.shape[1]]
    return out


def lipstick_share(shown: np.ndarray, original: np.ndarray, mask: np.ndarray, color: str) -> float:
    """Share of the lip pixels (python_ref's mask, eroded by one pixel) whose colour moved at least 40% of the way
    from the unpainted frame's towards the lipstick's, in Oklab's (a, b) plane. Painted at intensity 0.8 the inside
    of the lips moves ~80%; an unpainted frame does not move at all."""
    from python_ref.vision.lips import linear_to_oklab, parse_color, srgb_to_linear

    inner = _erode(mask.astype(bool))
    if not inner.any():
        return 0.0
    ab = lambda rgb: linear_to_oklab(srgb_to_linear(rgb[inner][:, :3]))[:, 1:]  # noqa: E731 (sRGB 0..255 in)
    target = linear_to_oklab(srgb_to_linear(np.asarray(parse_color(color)))[None])[0, 1:]
    before = np.linalg.norm(ab(original) - target, axis=1)
    after = np.linalg.norm(ab(shown) - target, axis=1)
    return float((after <= 0.6 * before).mean())


def nearest_frame(shot: np.ndarray, frames: np.ndarray) -> int:
    """Index of the frame (frames [n, h, w, >=3]) that the screenshot (h, w, >=3) shows."""
    a = shot[::4, ::4, :3].astype(np.int32)
    return int(np.argmin([np.abs(f[::4, ::4, :3].astype(np.int32) - a).mean() for f in frames]))


def _yuv420(frames: np.ndarray) -> list[np.ndarray]:
    """sRGB frames [n, h, w, 3] -> Y [n, h, w], Cb and Cr [n, h/2, w/2] (BT.601 studio range, 2x2 chroma mean)."""
    n, h, w, _ = frames.shape
    rgb = frames.astype(np.float64) / 255
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    y = 16 + 65.481 * r + 128.553 * g + 24.966 * b
    cb = 128 - 37.797 * r - 74.203 * g + 112.0 * b
    cr = 128 + 112.0 * r - 93.786 * g - 18.214 * b
    half = lambda c: c.reshape(n, h // 2, 2, w // 2, 2).mean(axis=(2, 4))  # noqa: E731
    return [np.clip(np.floor(c + 0.5), 0, 255).astype(np.uint8) for c in (y, half(cb), half(cr))]


def camera_frames(frames: np.ndarray) -> np.ndarray:
    """The clip as Chromium's fake camera delivers it from write_y4m's file: through 4:2:0 YUV and back (the inverse
    BT.601 transform, chroma repeated over its 2x2 block), so python_ref sees what the page sees to within a level
    or two."""
    luma, cb, cr = (c.astype(np.float64) for c in _yuv420(frames[..., :3]))
    cb, cr = (np.repeat(np.repeat(c, 2, axis=1), 2, axis=2) - 128 for c in (cb, cr))
    luma = (luma - 16) * (255 / 219)
    rgb = np.stack([luma + 1.402 * (255 / 224) * cr,
                    luma - (255 / 224) * (0.344136 * cb + 0.714136 * cr),
                    luma + 1.772 * (255 / 224) * cb], axis=-1)
    return np.clip(np.floor(rgb + 0.5), 0, 255).astype(np.uint8)


def write_y4m(path: Path, frames: np.ndarray, fps: int = 30) -> None:
    """frames [n, h, w, 3] sRGB as a YUV4MPEG2 4:2:0 file (BT.601, studio range): Chromium's fake camera input."""
    n, h, w, _ = frames.shape
    planes = _yuv420(frames)
    with open(path, "wb") as f:
        f.write(f"YUV4MPEG2 W{w} H{h} F{fps}:1 Ip A1:1 C420jpeg\n".encode())
        for k in range(n):
            f.write(b"FRAME\n" + b"".join(p[k].tobytes() for p in planes))


def camera_masks(camera: np.ndarray) -> np.ndarray:
    """python_ref's lip mask of each camera frame, tracked as the page tracks the looping clip: the second time
    round, every frame follows its predecessor."""
    from python_ref.vision import FaceMesh, lip_mask

    mesh = FaceMesh(tracking=True)
    h, w = camera.shape[1:3]
    for f in camera:
        mesh.detect(rgba(f))
    return np.stack([lip_mask(mesh.detect(rgba(f))[0].landmarks, h, w) for f in camera]).astype(np.uint8)


if __name__ == "__main__":
    import sys

    write(Path(sys.argv[1]))
