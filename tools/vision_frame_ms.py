"""Frames for tools/vision_frame_ms.mjs: raw RGBA photos (a hand, a person, a face) and frames.json.

    python tools/vision_frame_ms.py OUT_DIR && node tools/vision_frame_ms.mjs OUT_DIR [--chromium]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from wasmrt.zoo import photos

FRAMES = {"hand": "handSrc.jpg", "person": "human_webcam.jpg", "face": "astronaut"}
MAX_WIDTH = 640  # a camera frame's width: larger photos are scaled down


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    manifest = {}
    for key, name in FRAMES.items():
        rgb = photos.photo(name)
        if rgb.shape[1] > MAX_WIDTH:
            from PIL import Image

            h = round(rgb.shape[0] * MAX_WIDTH / rgb.shape[1])
            rgb = np.asarray(Image.fromarray(rgb).resize((MAX_WIDTH, h), Image.BILINEAR))
        rgba = np.concatenate([rgb, np.full((*rgb.shape[:2], 1), 255, np.uint8)], axis=2)
        (out / f"{key}.rgba").write_bytes(np.ascontiguousarray(rgba).tobytes())
        manifest[key] = {"file": f"{key}.rgba", "width": rgb.shape[1], "height": rgb.shape[0], "photo": name}
    (out / "frames.json").write_text(json.dumps(manifest, indent=1))
    print(json.dumps(manifest))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
