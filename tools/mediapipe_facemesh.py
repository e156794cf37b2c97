"""MediaPipe's own FaceMesh (mediapipe==0.10.21, refine_landmarks as asked) on images, as JSON on stdout: the oracle
of the face pipeline's tests. Runs in the separate .venv-mediapipe (scripts/setup.sh makes it: mediapipe pins numpy
below 2).

    .venv-mediapipe/bin/python tools/mediapipe_facemesh.py [--refine] image.npy [...]

Prints {"<file>": [[x, y, z], ...] in image pixels (x * width, y * height, z * width), or null without a face}.
"""

from __future__ import annotations

import argparse
import json

import mediapipe as mp
import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--refine", action="store_true", help="the attention mesh: 478 landmarks")
    ap.add_argument("images", nargs="+", help="HxWx3 uint8 RGB arrays (.npy)")
    args = ap.parse_args()
    out = {}
    for path in args.images:
        img = np.load(path)
        h, w = img.shape[:2]
        with mp.solutions.face_mesh.FaceMesh(static_image_mode=True, refine_landmarks=args.refine,
                                             max_num_faces=1) as fm:
            r = fm.process(img)
        faces = r.multi_face_landmarks
        out[path] = [[p.x * w, p.y * h, p.z * w] for p in faces[0].landmark] if faces else None
    print(json.dumps(out))


if __name__ == "__main__":
    main()
