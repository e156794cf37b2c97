"""The try-on's int8 face models: face_detector_int8.wrt and face_landmark_int8.wrt, made by `wasmrt quantize` on
calibration photos from registry packages (wasmrt.zoo.photos), and how far they are from the float models.

    python -m wasmrt.zoo.face_int8 [--out DIR] [--force]     # makes the two files (if missing), measures them into
                                                         # build/face_int8.json

The detector calibrates on square crops of the calibration group photos (its preprocessing hints letterbox them to
128x128), the landmark model on 192x192 face crops of the same photos; the figures come from the evaluation photos,
which calibration never sees: the landmark model's mean distance to the float model's 468 points (x, y in pixels
of the 192x192 crop) and the detector's faces against the float detector's. `wasmrt demo --int8` and
`node demo/miniprogram/build.mjs --int8` use the files.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from wasmrt import paths
from wasmrt.zoo import photos
from wasmrt.zoo.models import BUNDLED, model_path

MODELS = {"face_detector": "face_detector_int8.wrt", "face_landmark": "face_landmark_int8.wrt"}
CALIB = {"face_detector": ("detector", 200), "face_landmark": ("faces", 100)}  # photos.folder kind, samples
# The detector's face scores: its logits span about +-100 (background anchors are very sure), so one int8 step of
# that range is 1.6 logits and scores near the 0.5 threshold would come out as 0.5 or 0.83. The two small score
# heads (2 and 6 output channels) stay float on int8 inputs; the box regressors are int8.
SKIP = {"face_detector": "classificator_8,classificator_16,reshape,reshape_2,classificators"}
EVAL_FACES = 200
LANDMARKS = "conv2d_21"  # face_landmark's output: 468 x (x, y, z) in crop pixels
PRESENCE = "conv2d_31"  # its face-presence logit: the pipeline keeps tracking while sigmoid > 0.5


def missing(out_dir: Path | None = None) -> list[str]:
    out_dir = out_dir or paths.models_dir()
    return [f for f in MODELS.values() if not (out_dir / f).is_file()]


def make(out_dir: Path | None = None, force: bool = False, log=print) -> dict[str, Path]:
    """Quantize both face models with `wasmrt quantize`'s pipeline (its defaults) into out_dir."""
    from wasmrt.quantize.pipeline import quantize_file
    from wasmrt.zoo.models import quantize_preset

    out_dir = out_dir or paths.models_dir()
    made = {}
    for name, wrt in MODELS.items():
        out = out_dir / wrt
        made[name] = out
        if out.is_file() and not force:
            continue
        kind, n = CALIB[name]
        calib = photos.folder(kind, "calib", n)
        src, skip = model_path(name), set(SKIP.get(name, "").split(",")) - {""}
        log(f"face_int8: wasmrt quantize {src} -o {out} --calib {calib} --samples {n}"
            + (f" --skip {SKIP[name]}" if skip else ""))
        q = quantize_file(src, calib, samples=n, skip=skip, preset=quantize_preset(src.name))
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(q.data)
    return made


def _runner(src: Path | bytes):
    from wasmrt.engines import load

    return load(src.read_bytes() if isinstance(src, Path) else src, "native").run


def _float_runner(name: str):
    from wasmrt.compile.converter import convert

    return _runner(convert(model_path(name), preprocess=BUNDLED[name].preprocess, weights="fp32").data)


def landmark_error(int8: Path, n_eval: int = EVAL_FACES) -> dict:
    """Mean distance of the 468 landmarks (x, y in 192x192 crop pixels) to the float model's, on evaluation faces;
    how often the face-presence decision (logit > 0) agrees."""
    from wasmrt.quantize import calibrate

    folder = photos.folder("faces", "eval", n_eval)
    f, q = _float_runner("face_landmark"), _runner(int8)
    dist, same = [], []
    for path in calibrate.sample_files(folder):
        x = {"input_1": np.load(path).astype(np.float32)}
        a, b = f(x), q(x)
        pa, pb = a[LANDMARKS].reshape(468, 3)[:, :2], b[LANDMARKS].reshape(468, 3)[:, :2]
        dist.append(float(np.linalg.norm(pa - pb, axis=1).mean()))
        same.append(bool((a[PRESENCE].item() > 0) == (b[PRESENCE].item() > 0)))
    m = photos.manifest(folder)
    return {"faces": len(dist), "photos": len(m["photos"]), "mean_px": float(np.mean(dist)),
            "p95_face_px": float(np.percentile(dist, 95)), "worst_face_px": float(np.max(dist)),
            "presence_agreement": float(np.mean(same))}


def detector_agreement(int8: Path) -> dict:
    """Faces the int8 detector finds on the evaluation photos against the float detector's: how many match one of
    its boxes (IoU >= 0.5), their mean IoU and mean keypoint distance in units of the float box's width."""
    from python_ref.vision.detect import detect_faces, iou

    f, q = _float_runner("face_detector"), _runner(int8)
    found_f = found_q = matched = 0
    ious, kp = [], []
    for name in photos.FACES_EVAL:
        img = photos.photo(name)
        a, b = detect_faces(f, img), detect_faces(q, img)
        found_f, found_q = found_f + len(a), found_q + len(b)
        for d in a:
            best = max(b, key=lambda e, d=d: iou(d.box, e.box), default=None)
            if best is not None and iou(d.box, best.box) >= 0.5:
                matched += 1
                ious.append(iou(d.box, best.box))
                kp.append(float(np.linalg.norm(d.keypoints - best.keypoints, axis=1).mean() / (d.box[2] - d.box[0])))
    return {"photos": len(photos.FACES_EVAL), "faces_float": found_f, "faces_int8": found_q, "matched": matched,
            "mean_iou": float(np.mean(ious)) if ious else 0.0,
            "mean_keypoint_distance_box_widths": float(np.mean(kp)) if kp else 0.0}


def measure(out_dir: Path | None = None) -> dict:
    out_dir = out_dir or paths.models_dir()
    sizes = {}
    for name, wrt in MODELS.items():
        fp = out_dir / BUNDLED[name].wrt
        sizes[name] = {"int8_bytes": (out_dir / wrt).stat().st_size,
                       "shipped_float_bytes": fp.stat().st_size if fp.is_file() else None}
    return {"sizes": sizes, "face_landmark": landmark_error(out_dir / MODELS["face_landmark"]),
            "face_detector": detector_agreement(out_dir / MODELS["face_detector"])}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m wasmrt.zoo.face_int8", description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(paths.models_dir()), help="models folder (default: %(default)s)")
    ap.add_argument("--force", action="store_true", help="quantize again even when the files exist")
    ap.add_argument("--no-measure", action="store_true", help="only make the files")
    ap.add_argument("--json", default="build/face_int8.json", help="where the figures go (default: %(default)s)")
    args = ap.parse_args(argv)
    out = Path(args.out)
    t0 = time.perf_counter()
    make(out, force=args.force)
    if not args.no_measure:
        result = measure(out)
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(result, indent=1))
        print(json.dumps(result, indent=1))
    print(f"face_int8: done in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
