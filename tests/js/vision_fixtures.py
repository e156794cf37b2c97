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

    det = face.detection
    manifest = {
        "models": str(ROOT / "models"),
        "astronaut": {"file": "astronaut.rgba", "width": 512, "height": 512, "mask": "astronaut_mask.u8",
                      "painted": "astronaut_painted.rgba", "paint": PAINT,
                      "detection": {"box": det.box.tolist(), "keypoints": det.keypoints.reshape(-1).tolist(),
                                    "score": det.score},
                      "roi": [face.roi.cx, face.roi.cy, face.roi.side, face.roi.angle],
                      "presence": face.score, "landmarks": face.landmarks.reshape(-1).tolist()},
        "clip": {"frames": CLIP_FRAMES, "size": CLIP_SIZE, "check": list(CLIP_CHECK), "every": "clip_every.f64",
                 "tracked": "clip_tracked.f64", "ranDetector": ran},
    }
    (out / "vision.json").write_text(json.dumps(manifest))
    return manifest


if __name__ == "__main__":
    import sys

    write(Path(sys.argv[1]))
