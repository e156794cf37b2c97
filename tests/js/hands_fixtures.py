"""Fixtures of the JS hand and segmentation tests: photos as raw RGBA, python_ref.vision's results through
wasmrt.vision (native engine), and every model call those pipelines made (input checksum, outputs) so the JS
pipelines can be fed exactly the model outputs Python got: any difference is then in the pipeline code (letterbox,
anchors, NMS, crops, landmarks, tracking, gestures, masks, compositing), and a crop or input that is not
bit-identical stops the replay (its checksum differs).

    python tests/js/hands_fixtures.py OUT_DIR   (writes OUT_DIR/hands.json and the raw arrays it names)
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import numpy as np

from wasmrt.zoo import photos

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# The photos of tests/test_vision_mediapipe.py (wasmrt/zoo/photos.py): HAND_PHOTOS and the HAND_TILES windows
# ("name@rc"), PEOPLE_PHOTOS for segmentation (both models: the frame's shape picks one).
HAND_TILE_NAMES = tuple(f"{n}@{r}{c}" for n, r, c in photos.HAND_TILES)
HAND_NAMES = (*photos.HAND_PHOTOS, *HAND_TILE_NAMES)
SEG_NAMES = photos.PEOPLE_PHOTOS
FILE_SEGMENTS = ("grace_hopper.jpg", "messi5.jpg")  # kept as files (the browser case); the others by SHA-256
CLIP_PHOTO, CLIP_FRAMES, CLIP_SIZE = "Back_Projection_Theory0.jpg", 24, 256
CLIP2_FRAMES = 6  # the clip's first frames with max_hands=2
LITE_PHOTO = "human_webcam.jpg"  # the lite palm and landmark models (lite: true)
SMOOTH_FRAMES = 3  # segmentation with smoothing over the first frames of the astronaut clip
GESTURE_SETS = 3000
BACKGROUND = [0, 177, 64]
ENGINE_VARIANT = "simd"  # the wasm build both wasmtime (Python) and Node run: no relaxed ops, so the same floats
ENGINE_HANDS, ENGINE_SEG = ("group2.jpg", "screen_charuco.jpg"), ("astronaut", "messi5.jpg")
BROWSER_HANDS, BROWSER_SEG = "screen_charuco.jpg", "messi5.jpg"  # the headless Chromium case


def checksum(a: np.ndarray) -> int:
    """Sum of the float32 input's 32-bit words mod 2^32 (tests/js/hands_replay.mjs computes the same)."""
    return int(np.ascontiguousarray(a, np.float32).view(np.uint32).astype(np.uint64).sum() % (1 << 32))


class Recorder:
    """A model runner that records each call (input checksum, outputs) into a shared tape."""

    def __init__(self, name: str, run, tape: list, blob: list) -> None:
        self.name, self.inner, self.tape, self.blob = name, run, tape, blob

    def __call__(self, feeds: dict) -> dict:
        out = self.inner(feeds)
        (x,) = feeds.values()
        entry = {"model": self.name, "input": checksum(x), "outputs": {}}
        for k, v in out.items():
            a = np.ascontiguousarray(v, np.float32).reshape(-1)
            entry["outputs"][k] = [sum(len(b) for b in self.blob), a.size]
            self.blob.append(a)
        self.tape.append(entry)
        return out


def rgba(rgb: np.ndarray) -> np.ndarray:
    out = np.full((*rgb.shape[:2], 4), 255, dtype=np.uint8)
    out[:, :, :3] = rgb[:, :, :3]
    return out


def hand_json(h) -> dict:
    return {"landmarks": h.landmarks.reshape(-1).tolist(), "world": h.world.reshape(-1).tolist(),
            "handedness": h.handedness, "handednessScore": h.handedness_score, "score": h.score,
            "gesture": h.gesture, "tracked": h.tracked, "roi": [h.roi.cx, h.roi.cy, h.roi.side, h.roi.angle],
            "detection": None if h.detection is None else {
                "box": h.detection.box.tolist(), "keypoints": h.detection.keypoints.reshape(-1).tolist(),
                "score": h.detection.score}}


def gesture_sets(n: int) -> tuple[np.ndarray, np.ndarray, list]:
    """Random landmark sets (image [n, 21, 3], world [n, 21, 3]) and python_ref's gesture of each."""
    from python_ref.vision.gestures import gesture

    rng = np.random.default_rng(43)
    world = rng.uniform(-0.08, 0.08, (n, 21, 3))
    image = rng.uniform(0, 400, (n, 21, 3))
    return image, world, [gesture(image[k], world[k]) for k in range(n)]


def write(out: Path) -> dict:
    from python_ref.vision.clip import clip
    from python_ref.vision.constants import SELFIE_MODELS
    from python_ref.vision.hands import HandTracker as RefHands
    from python_ref.vision.segment import SelfieSegmenter as RefSeg
    from python_ref.vision.segment import blur_background, replace_background
    from wasmrt.vision import HandTracker, SelfieSegmenter, model_bytes, runner

    out.mkdir(parents=True, exist_ok=True)
    (out / "models").mkdir(exist_ok=True)
    sources = {f"{m}_{k}": f"{m}_{k}.tflite" for m in ("palm_detection", "hand_landmark") for k in ("full", "lite")}
    sources = {
        **sources,
               **{Path(s["source"]).stem: s["source"] for s in SELFIE_MODELS.values()}}
    for stem, src in sources.items():
        (out / "models" / f"{stem}.wrt").write_bytes(model_bytes(src))
    run = {stem: runner(src, "native") for stem, src in sources.items()}
    tapes: dict[str, list] = {}
    blob: list[np.ndarray] = []

    def tape(key: str) -> list:
        return tapes.setdefault(key, [])

    def hands(key: str, kind: str = "full", **options) -> RefHands:
        t = tape(key)
        return RefHands(Recorder(f"palm_detection_{kind}", run[f"palm_detection_{kind}"], t, blob),
                        Recorder(f"hand_landmark_{kind}", run[f"hand_landmark_{kind}"], t, blob), **options)

    def seg(key: str, **options) -> RefSeg:
        t = tape(key)
        return RefSeg({m: Recorder(Path(s["source"]).stem, run[Path(s["source"]).stem], t, blob)
                       for m, s in SELFIE_MODELS.items()}, **options)

    manifest: dict = {"models": str(out / "models"), "background": BACKGROUND, "photos": {}, "hands": {},
                      "segments": {}}

    def save(name: str, img: np.ndarray) -> None:
        if name not in manifest["photos"]:
            file = name.replace(".", "_") + ".rgba"
            rgba(img).tofile(out / file)
            manifest["photos"][name] = {"file": file, "width": img.shape[1], "height": img.shape[0]}

    def image(name: str) -> np.ndarray:
        if "@" in name:
            base, rc = name.split("@")
            return photos.hand_tile(base, int(rc[0]), int(rc[1]))
        return photos.photo(name)

    for name in HAND_NAMES:
        img = image(name)
        save(name, img)
        found = hands(f"hands:{name}", tracking=False, max_hands=2).detect(img)
        manifest["hands"][name] = [hand_json(h) for h in found]

    for name in SEG_NAMES:
        img = photos.photo(name)
        save(name, img)
        mask = seg(f"seg:{name}", smoothing=0.0).segment(img)
        arrays = {"mask": mask.astype(np.float32), "replaced": replace_background(rgba(img), mask, tuple(BACKGROUND)),
                  "blurred": blur_background(rgba(img), mask)}
        entry = manifest["segments"][name] = {"sha256": {k: hashlib.sha256(a.tobytes()).hexdigest()
                                                         for k, a in arrays.items()}}
        if name in FILE_SEGMENTS:
            for k, a in arrays.items():
                entry[k] = f"{name.replace('.', '_')}_{k}.{'f32' if k == 'mask' else 'rgba'}"
                a.tofile(out / entry[k])

    # tracking on a clip (one hand: the detector runs only when tracking is lost)
    frames = clip(photos.photo(CLIP_PHOTO), CLIP_FRAMES, CLIP_SIZE)
    np.stack(frames).tofile(out / "hand_clip.rgba")
    ht = hands("clip", tracking=True, max_hands=1)
    per_frame = []
    for f in frames:
        found = ht.detect(f)
        per_frame.append({"ranDetector": ht.stats.ran_detector, "hands": [hand_json(h) for h in found]})
    # max_hands=2 with one hand: the detector runs every frame and the tracked crop replaces the palm's (association)
    two = hands("clip2", tracking=True, max_hands=2)
    per_frame2 = []
    for f in frames[:CLIP2_FRAMES]:
        found = two.detect(f)
        per_frame2.append({"ranDetector": two.stats.ran_detector, "hands": [hand_json(h) for h in found]})
    manifest["clip"] = {"file": "hand_clip.rgba", "frames": CLIP_FRAMES, "size": CLIP_SIZE, "results": per_frame,
                        "twoHands": per_frame2}
    lite = photos.photo(LITE_PHOTO)
    save(LITE_PHOTO, lite)
    manifest["lite"] = {"photo": LITE_PHOTO,
                        "hands": [hand_json(h) for h in hands("lite", "lite", tracking=False).detect(lite)]}

    # smoothing over frames: the astronaut clip's first frames
    astro = rgba(photos.photo("astronaut"))
    sm = seg("smooth")
    smoothed = [sm.segment(f) for f in clip(astro, 48, 384)[:SMOOTH_FRAMES]]
    np.stack(clip(astro, 48, 384)[:SMOOTH_FRAMES]).tofile(out / "smooth_frames.rgba")
    np.stack(smoothed).astype(np.float32).tofile(out / "smooth_masks.f32")
    manifest["smooth"] = {"frames": "smooth_frames.rgba", "masks": "smooth_masks.f32", "n": SMOOTH_FRAMES,
                          "size": 384}

    image, world, names = gesture_sets(GESTURE_SETS)
    image.astype(np.float64).tofile(out / "gesture_image.f64")
    world.astype(np.float64).tofile(out / "gesture_world.f64")
    manifest["gestures"] = {"n": GESTURE_SETS, "image": "gesture_image.f64", "world": "gesture_world.f64",
                            "names": names}
    # the same engine build on both sides: Python's wasm engine (wasmtime) here, js_bindings/dist's in Node
    eh = HandTracker("wasm", variant=ENGINE_VARIANT, tracking=False, max_hands=2)
    es = SelfieSegmenter("wasm", variant=ENGINE_VARIANT, smoothing=0.0)
    manifest["engine"] = {"variant": ENGINE_VARIANT, "hands": {}, "segments": {}}
    for name in ENGINE_HANDS:
        manifest["engine"]["hands"][name] = [hand_json(h) for h in eh.detect(photos.photo(name))]
    for name in ENGINE_SEG:
        file = name.replace(".", "_") + f"_{ENGINE_VARIANT}_mask.f32"
        es.segment(photos.photo(name)).astype(np.float32).tofile(out / file)
        manifest["engine"]["segments"][name] = file
    manifest["browser"] = {"hands": BROWSER_HANDS, "segment": BROWSER_SEG}

    np.concatenate(blob).astype(np.float32).tofile(out / "tape.f32")
    manifest["tapes"] = tapes
    manifest["tape"] = "tape.f32"
    (out / "hands.json").write_text(json.dumps(manifest))
    return manifest


if __name__ == "__main__":
    write(Path(sys.argv[1]))
