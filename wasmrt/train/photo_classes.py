"""A small labelled set of real photos for transfer learning (docs/training.md, tools/transfer_acceptance.py).

Three classes of photos that registry packages ship (wasmrt.zoo.photos fetches them): hands (OpenCV's documentation,
Debian opencv-doc), chessboards (OpenCV's calibration samples and documentation) and portraits (matplotlib's Grace
Hopper, face_recognition's test portraits, scikit-image's astronaut, @vladmandic/human's webcam screenshot). The split
is by photo: a test photo is never seen in training, not even cropped. Each photo gives seeded random square crops
(side 50-100% of its short side, half of them mirrored), resized to the model's input size: the samples.

    python -m wasmrt.train.photo_classes          # lists the classes, photos and sample counts
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np

CLASSES = ("hand", "chessboard", "portrait")
# class -> (training photos, test photos); names as wasmrt.zoo.photos.photo takes them
PHOTOS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "hand": (("handSrc.jpg", "handDst.jpg", "Back_Projection1_Source_Image.jpg"),
             ("Back_Projection_Theory0.jpg", "Histogram_Comparison_Source_2.jpg")),
    "chessboard": (("left06.jpg", "screen_charuco.jpg", "fileListImage.jpg"),
                   ("right04.jpg", "screen_finish.jpg")),
    "portrait": (("grace_hopper.jpg", "obama.jpg", "biden.jpg"),
                 ("astronaut", "human_webcam.jpg")),
}
TRAIN_CROPS = 32  # samples per training photo
TEST_CROPS = 24   # samples per test photo


@dataclass
class Split:
    images: np.ndarray      # [N, size, size, 3] uint8 RGB crops
    labels: np.ndarray      # [N] class indices into CLASSES
    photos: list[str]       # the photo each sample was cut from


def split(which: str, size: int, per_photo: int | None = None, photos_per_class: int | None = None,
          seed: int = 0) -> Split:
    """The "train" or "test" samples at size x size: every class's photos of that split (the first
    `photos_per_class` of them when given), `per_photo` crops each (default TRAIN_CROPS / TEST_CROPS)."""
    from wasmrt.zoo import photos

    if which not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {which!r}")
    per = per_photo or (TRAIN_CROPS if which == "train" else TEST_CROPS)
    rng = np.random.default_rng([seed, 0 if which == "train" else 1])
    images, labels, names = [], [], []
    for c, name in enumerate(CLASSES):
        chosen = PHOTOS[name][0 if which == "train" else 1][:photos_per_class]
        for p in chosen:
            images.append(photos.square_crops(photos.photo(p), per, size, rng))
            labels += [c] * per
            names += [p] * per
    return Split(np.concatenate(images), np.array(labels, np.int64), names)


def to_input(images: np.ndarray, layout: str) -> np.ndarray:
    """uint8 crops [N, H, W, 3] as EfficientNet-Lite's float input: (pixel - 127) / 128 (exact in float32), in the
    model's layout ("NCHW" or "NHWC")."""
    x = (images.astype(np.float32) - np.float32(127)) / np.float32(128)
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2) if layout == "NCHW" else x)


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args(argv)
    for name in CLASSES:
        train, test = PHOTOS[name]
        print(f"{name}: train {', '.join(train)} ({len(train) * TRAIN_CROPS} samples); "
              f"test {', '.join(test)} ({len(test) * TEST_CROPS} samples)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
