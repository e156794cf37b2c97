"""MediaPipe's own Hands and SelfieSegmentation (mediapipe==0.10.21) on images, as JSON on stdout: the oracle of the
hand and segmentation pipelines' tests. Runs in the separate .venv-mediapipe (scripts/setup.sh makes it).

    .venv-mediapipe/bin/python tools/mediapipe_hands.py hands [--lite] [--max-hands N] image.npy [...]
    .venv-mediapipe/bin/python tools/mediapipe_hands.py selfie --model 0|1 --out DIR image.npy [...]

hands prints {"<file>": [{"landmarks": [[x, y, z], ...] (image pixels, z * width), "world": [[x, y, z], ...],
"handedness": "Left" | "Right", "score": s}, ...]} in MediaPipe's order (static image mode).
selfie writes DIR/<stem>.npy (the float32 mask at image size) and prints {"<file>": "<mask file>"}.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import mediapipe as mp
import numpy as np


def hands(paths: list[str], lite: bool, max_hands: int) -> dict:
    out = {}
    for path in paths:
        img = np.load(path)
        h, w = img.shape[:2]
        with mp.solutions.hands.Hands(static_image_mode=True, max_num_hands=max_hands,
                                      model_complexity=0 if lite else 1) as hs:
            r = hs.process(img)
        found = []
        for lm, world, cls in zip(r.multi_hand_landmarks or [], r.multi_hand_world_landmarks or [],
                                  r.multi_handedness or [], strict=True):
            c = cls.classification[0]
            found.append({"landmarks": [[p.x * w, p.y * h, p.z * w] for p in lm.landmark],
                          "world": [[p.x, p.y, p.z] for p in world.landmark],
                          "handedness": c.label, "score": c.score})
        out[path] = found
    return out


def selfie(paths: list[str], model: int, dest: Path) -> dict:
    out = {}
    with mp.solutions.selfie_segmentation.SelfieSegmentation(model_selection=model) as seg:
        for path in paths:
            mask = seg.process(np.load(path)).segmentation_mask
            f = dest / f"{Path(path).stem}.m{model}.npy"
            np.save(f, mask.astype(np.float32))
            out[path] = str(f)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("what", choices=["hands", "selfie"])
    ap.add_argument("--lite", action="store_true", help="hands: the lite models (model_complexity=0)")
    ap.add_argument("--max-hands", type=int, default=2)
    ap.add_argument("--model", type=int, default=0, help="selfie: 0 general (256x256), 1 landscape (256x144)")
    ap.add_argument("--out", type=Path, help="selfie: folder for the masks")
    ap.add_argument("images", nargs="+", help="HxWx3 uint8 RGB arrays (.npy)")
    args = ap.parse_args()
    if args.what == "hands":
        print(json.dumps(hands(args.images, args.lite, args.max_hands)))
    else:
        print(json.dumps(selfie(args.images, args.model, args.out)))


if __name__ == "__main__":
    main()
