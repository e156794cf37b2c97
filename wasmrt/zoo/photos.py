"""Real photos from registry packages, for calibrating quantized models and measuring their accuracy.

No image hub is reachable, so the photos come from packages that ship them: scikit-image's sample data (installed as
a dev dependency), six group photos with 3-5 faces each from npm `@vladmandic/face-api` (MIT, demo/), Grace Hopper
from the matplotlib wheel, china.jpg and flower.jpg from the scikit-learn wheel and the quokka from the imgaug
wheel. They split into disjoint calibration and evaluation photos; each set is enlarged with seeded random square
crops and mirror images (photos x crops is how many images a figure rests on; reports say both numbers).

    python -m wasmrt.zoo.photos classifier calib 200     # prints the folder of 200 calibration crops (256x256 PNG)
    python -m wasmrt.zoo.photos faces eval 192           # 192x192 face crops (.npy tensors for face_landmark)
    python -m wasmrt.zoo.photos detector calib 200       # square crops of the face photos (PNG, for face_detector)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import tarfile
from pathlib import Path

import numpy as np

from wasmrt.zoo import models
from wasmrt.zoo.models import Package

SKLEARN = "scikit-learn"  # the wheel carries photos and the digits data set (wasmrt/train/digits.py)
models.PACKAGES.update({
    "face-api": Package("npm", "@vladmandic/face-api@1.7.15", "vladmandic-face-api-1.7.15.tgz",
                        "0d77fffeef362ef9c0939cf6c567f3a2e8e177f114fa257a3270cbd2e509b031"),
    "matplotlib": Package("pypi", "matplotlib==3.11.2",
                          "matplotlib-3.11.2-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
                          "07d9b9fa60cd4c393692f50d0bb03123242ddf61c99bb0e95e75feb354e7c1a8",
                          ("--only-binary=:all:", "--python-version", "3.11", "--implementation", "cp", "--abi",
                           "cp311", "--platform", "manylinux2014_x86_64")),
    "scikit-learn": Package("pypi", "scikit-learn==1.9.1",
                            "scikit_learn-1.9.1-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
                            "52a0703bbc07ad27f560fa63fa68e4c54dd735bfbbf65b4dd3c225dc7547b6df",
                            ("--only-binary=:all:", "--python-version", "3.11", "--implementation", "cp", "--abi",
                             "cp311", "--platform", "manylinux_2_28_x86_64")),
    "imgaug": Package("pypi", "imgaug==0.4.0", "imgaug-0.4.0-py2.py3-none-any.whl",
                      "ce61e65b4eb7405fc62c1b0a79d2fa92fd47f763aaecb65152d29243592111f9", ("--only-binary=:all:",)),
    "human": Package("npm", "@vladmandic/human@1.1.10", "vladmandic-human-1.1.10.tgz",
                     "d4538abe2e443f7a15e4f3b59e3d173a2faa68bcdd733541069aa687b2824c11"),
    "opencv-doc": Package("deb", "opencv-doc=4.6.0+dfsg-12", "opencv-doc_4.6.0+dfsg-12_all.deb",
                          "4b12681df35878207ac7097dc66184b2ae552e4bf4ddd2af04a0f03ed0b8682a"),
})
_OPENCV_DOC = "./usr/share/doc/opencv-doc/"
_PACKAGED = {
    **{f"group{i}.jpg": ("face-api", f"package/demo/sample{i}.jpg", "MIT") for i in range(1, 7)},
    "grace_hopper.jpg": ("matplotlib", "matplotlib/mpl-data/sample_data/grace_hopper.jpg", "PSF (matplotlib)"),
    "china.jpg": ("scikit-learn", "sklearn/datasets/images/china.jpg", "CC BY 2.0 (scikit-learn)"),
    "flower.jpg": ("scikit-learn", "sklearn/datasets/images/flower.jpg", "CC BY 2.0 (scikit-learn)"),
    "quokka.jpg": ("imgaug", "imgaug/quokka.jpg", "CC0 (imgaug)"),
    "human_body.jpg": ("human", "package/assets/human-sample-body.jpg", "MIT (@vladmandic/human)"),
    "human_webcam.jpg": ("human", "package/assets/screenshot-webcam.jpg", "MIT (@vladmandic/human)"),
    "human_images.jpg": ("human", "package/assets/screenshot-images.jpg", "MIT (@vladmandic/human)"),
    **{n: ("opencv-doc", _OPENCV_DOC + "examples/data/" + n, "Apache-2.0 (OpenCV samples)")
       for n in ("messi5.jpg", "left06.jpg", "right01.jpg", "right04.jpg")},
    **{f"{n}.jpg": ("opencv-doc", f"{_OPENCV_DOC}opencv4/html/{n}.jpg", "Apache-2.0 (OpenCV documentation)")
       for n in ("Back_Projection1_Source_Image", "Back_Projection_Theory0", "Histogram_Comparison_Source_2",
                 "fileListImage", "handDst", "handSrc", "screen_charuco", "screen_finish",
                 "Template_Matching_Original_Image", "05")},
    "Threshold_inRange_Tutorial_Result_input.jpg": (
        "opencv-doc", _OPENCV_DOC + "opencv4/html/Threshold_inRange_Tutorial_Result_input.jpeg",
        "Apache-2.0 (OpenCV documentation)"),
}
SKIMAGE = ("astronaut", "chelsea", "coffee", "rocket", "motorcycle_left", "motorcycle_right", "hubble_deep_field",
           "retina", "ihc", "brick", "grass", "gravel", "camera", "coins", "moon", "page")

# Disjoint photo sets: calibration never sees an evaluation photo. Classifier evaluation uses natural photos of
# people, animals and objects (what an ImageNet classifier is for); calibration also gets textures, microscopy,
# astronomy and text, which is harder on the ranges, not easier.
CLASSIFIER_CALIB = ("group1.jpg", "group4.jpg", "flower.jpg", "camera", "coins", "brick", "grass", "gravel",
                    "hubble_deep_field", "retina", "ihc", "moon", "page")
CLASSIFIER_EVAL = ("astronaut", "chelsea", "coffee", "rocket", "motorcycle_left", "motorcycle_right", "group2.jpg",
                   "group3.jpg", "group5.jpg", "group6.jpg", "grace_hopper.jpg", "china.jpg", "quokka.jpg")
FACES_CALIB = ("group1.jpg", "group4.jpg")
FACES_EVAL = ("group2.jpg", "group3.jpg", "group5.jpg", "group6.jpg", "astronaut", "grace_hopper.jpg")
SETS = {("classifier", "calib"): CLASSIFIER_CALIB, ("classifier", "eval"): CLASSIFIER_EVAL,
        ("faces", "calib"): FACES_CALIB, ("faces", "eval"): FACES_EVAL,
        ("detector", "calib"): FACES_CALIB, ("detector", "eval"): FACES_EVAL}  # detector: square crops as PNG
# Photos with hands (the hand pipeline's tests against MediaPipe): whole photos, and tiles (photo, row, column) of
# photos whose hands are too small for the palm detector at full size: the 3 x 3 windows of half the photo's width
# and height at quarter steps (hand_tile).
HAND_PHOTOS = ("group2.jpg", "group4.jpg", "group5.jpg", "group6.jpg", "obama.jpg", "human_body.jpg",
               "human_webcam.jpg", "messi5.jpg", "Back_Projection1_Source_Image.jpg", "Back_Projection_Theory0.jpg",
               "Histogram_Comparison_Source_2.jpg", "fileListImage.jpg", "handDst.jpg", "handSrc.jpg",
               "screen_charuco.jpg", "right04.jpg", "Threshold_inRange_Tutorial_Result_input.jpg")
HAND_TILES = (("human_images.jpg", 0, 0), ("human_images.jpg", 1, 2), ("human_images.jpg", 2, 1),
              ("human_images.jpg", 2, 2), ("group2.jpg", 2, 0), ("group4.jpg", 1, 2), ("group4.jpg", 2, 2),
              ("group6.jpg", 2, 2), ("human_body.jpg", 0, 0), ("left06.jpg", 2, 0), ("right01.jpg", 2, 0),
              ("Template_Matching_Original_Image.jpg", 1, 2), ("screen_finish.jpg", 1, 1),
              ("screen_finish.jpg", 2, 1), ("05.jpg", 2, 0))
# Photos with people (the segmentation's tests against MediaPipe)
PEOPLE_PHOTOS = ("astronaut", "group1.jpg", "group2.jpg", "group3.jpg", "group4.jpg", "group5.jpg", "group6.jpg",
                 "grace_hopper.jpg", "obama.jpg", "biden.jpg", "human_body.jpg", "human_webcam.jpg", "messi5.jpg")
CROP_SIZE = 256
FACE_SIZE = 192


def photo(name: str) -> np.ndarray:
    """An HxWx3 uint8 RGB photo by name (a scikit-image sample name, a file name of _PACKAGED, or a photo of the
    face pipeline's tests in models.SOURCE_FILES)."""
    from wasmrt.preprocess import read_image

    if name in models.FACE_PHOTOS:
        return read_image(models.fetch_source(name))
    if name in SKIMAGE:
        import skimage

        (path,) = (Path(skimage.__file__).parent / "data").glob(f"{name}.*")
        return read_image(path)
    pkg, member, _ = _PACKAGED[name]
    dest = models.CACHE / "photos" / name
    if not dest.is_file():
        archive = models.fetch_package(pkg)
        dest.parent.mkdir(parents=True, exist_ok=True)
        if archive.suffix == ".deb":  # one pass over the (large, compressed) package for all its photos
            wanted = {m: n for n, (p, m, _) in _PACKAGED.items() if p == pkg}
            with tarfile.open(fileobj=models._deb_data(archive)) as t:
                for info in t:
                    f = t.extractfile(info) if info.name in wanted else None
                    if f is not None:
                        (dest.parent / wanted[info.name]).write_bytes(f.read())
        else:
            dest.write_bytes(models._extract_member(archive, member))
    return read_image(dest)


def hand_tile(name: str, row: int, col: int) -> np.ndarray:
    """Window (row, col) of the 3 x 3 grid of half-size windows at quarter steps over a photo."""
    img = photo(name)
    h, w = img.shape[:2]
    y0, x0 = row * h // 4, col * w // 4
    return np.ascontiguousarray(img[y0:y0 + h // 2, x0:x0 + w // 2])


def square_crops(img: np.ndarray, count: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """`count` random square crops of an HxWx3 photo (side 50-100% of the short side, half mirrored), resized
    (bilinear) to size x size: [count, size, size, 3] uint8. The calibration crops here and the photo classes of
    wasmrt.train.photo_classes."""
    from PIL import Image

    h, w = img.shape[:2]
    out = np.empty((count, size, size, 3), np.uint8)
    for k in range(count):
        side = int(min(h, w) * rng.uniform(0.5, 1.0))
        top, left = int(rng.integers(0, h - side + 1)), int(rng.integers(0, w - side + 1))
        crop = img[top:top + side, left:left + side]
        if rng.random() < 0.5:
            crop = crop[:, ::-1]
        out[k] = np.asarray(Image.fromarray(np.ascontiguousarray(crop)).resize((size, size), Image.BILINEAR))
    return out


def _detector():
    """The float face detector (python_ref/vision conventions), run natively."""
    from wasmrt.compile.converter import convert
    from wasmrt.engines import load

    m = models.BUNDLED["face_detector"]
    data = convert(models.model_path("face_detector"), preprocess=m.preprocess).data
    return load(data, "native").run


def _face_crops(img: np.ndarray, count: int, rng: np.random.Generator, detect) -> list[np.ndarray]:
    """192x192 landmark-model inputs around every detected face: the detector's Roi jittered in scale (0.9-1.1),
    angle (+-15 degrees) and position (+-5%), half of them on the mirrored photo."""
    from python_ref.vision.detect import detect_faces
    from python_ref.vision.roi import Roi, roi_from_detection, warp_roi

    out = []
    views = [img, np.ascontiguousarray(img[:, ::-1])]
    rois = [[roi_from_detection(d) for d in detect_faces(detect, v)] for v in views]
    faces = [(k, r) for k in (0, 1) for r in rois[k]]
    if not faces:
        return out
    for i in range(count):
        k, r = faces[i % len(faces)]
        jitter = Roi(r.cx + r.side * rng.uniform(-0.05, 0.05), r.cy + r.side * rng.uniform(-0.05, 0.05),
                     r.side * rng.uniform(0.9, 1.1), r.angle + math.radians(rng.uniform(-15, 15)))
        out.append(warp_roi(views[k], jitter, FACE_SIZE))
    return out


def folder(kind: str, split: str, count: int, seed: int = 0) -> Path:
    """A cached folder of `count` images built from the (kind, split) photos: classifier and detector crops as PNG,
    or face crops as .npy tensors [1, 192, 192, 3] in [0, 1]. Spread evenly over the photos."""
    from PIL import Image

    names = SETS[(kind, split)]
    key = json.dumps([kind, split, count, seed, names, CROP_SIZE, FACE_SIZE, _FORMAT])
    out = models.CACHE / "photos" / f"{kind}-{split}-{count}-{hashlib.sha256(key.encode()).hexdigest()[:10]}"
    stamp = out / "manifest.json"
    if stamp.is_file():
        return out
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    detect = _detector() if kind == "faces" else None
    made: dict[str, int] = {}
    per = [count // len(names) + (1 if i < count % len(names) else 0) for i in range(len(names))]
    k = 0
    for name, n in zip(names, per, strict=True):
        img = photo(name)
        items = _face_crops(img, n, rng, detect) if kind == "faces" else square_crops(img, n, CROP_SIZE, rng)
        for item in items:
            if kind != "faces":
                Image.fromarray(item).save(out / f"{k:04d}_{Path(name).stem}.png")
            else:
                np.save(out / f"{k:04d}_{Path(name).stem}.npy", item)
            k += 1
        made[name] = len(items)
    stamp.write_text(json.dumps({"photos": made, "images": k}, indent=1))
    return out


def manifest(path: Path) -> dict:
    return json.loads((path / "manifest.json").read_text())


_FORMAT = 2  # bump when the way crops are made changes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m wasmrt.zoo.photos", description=__doc__.splitlines()[0])
    ap.add_argument("kind", choices=["classifier", "faces", "detector"])
    ap.add_argument("split", choices=["calib", "eval"])
    ap.add_argument("count", type=int)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    path = folder(args.kind, args.split, args.count, args.seed)
    print(path)
    m = manifest(path)
    print(f"{m['images']} images from {len(m['photos'])} photos", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
