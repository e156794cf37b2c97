"""The hand and segmentation pipelines (wasmrt.vision on each engine) against MediaPipe's own Python solutions
(mediapipe==0.10.21, in .venv-mediapipe) on real photos from registry packages (wasmrt/zoo/photos.py says which).

MediaPipe's outputs are cached on disk (the model cache's oracle/ folder), keyed by the image bytes, the oracle
tool's text and its arguments, so only the first run on a machine pays for MediaPipe.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

from python_ref.vision.constants import MASK_THRESHOLD
from python_ref.vision.sample import sample_rect
from wasmrt.zoo import models, photos

ROOT = Path(__file__).resolve().parent.parent
MEDIAPIPE_PYTHON = ROOT / ".venv-mediapipe" / "bin" / "python"
TOOL = ROOT / "tools" / "mediapipe_hands.py"
ORACLE = models.CACHE / "oracle"
HAND_IMAGES = [*photos.HAND_PHOTOS, *(f"{n}@{r}{c}" for n, r, c in photos.HAND_TILES)]
MAX_MEAN_PX = 1.0  # the acceptance bound on the mean landmark distance to MediaPipe's
# mean |z| difference (z in the scale of x): 0.97 px on obama.jpg, 1.93 px with the lite model on the inRange
# tutorial's photo (its x, y: 0.22 px), under 0.35 px elsewhere
MAX_Z_PX = 2.0
# largest world landmark difference (metres): 0.8 mm on obama.jpg and the inRange photo, under 0.5 mm elsewhere
MAX_WORLD_M = 0.002
# The lite landmark model on obama.jpg's hand (arms crossed, wrist hidden, presence 0.53-0.78): its landmarks move by
# pixels when the crop moves by a tenth of a pixel, and they are 4.2 px (mean) from MediaPipe's; the full model
# there is 0.43 px away. Same hand and handedness are still required; the distance is printed, not bounded.
LITE_UNSTABLE = frozenset({"obama.jpg"})


def image(name: str) -> np.ndarray:
    try:
        if "@" in name:
            base, rc = name.split("@")
            return photos.hand_tile(base, int(rc[0]), int(rc[1]))
        return photos.photo(name)
    except Exception as e:  # offline without a cache
        pytest.skip(f"photo {name} not available ({e})")


def _oracle(args: list[str], images: dict[str, np.ndarray]) -> dict[str, object]:
    """Run the MediaPipe tool once over the images that are not cached yet; {name: its JSON output}."""
    if not MEDIAPIPE_PYTHON.is_file():
        pytest.skip("MediaPipe's Python package is not installed (.venv-mediapipe: run scripts/setup.sh)")
    ORACLE.mkdir(parents=True, exist_ok=True)
    tool = hashlib.sha256(TOOL.read_bytes() + json.dumps(args).encode()).hexdigest()
    keys = {n: hashlib.sha256(tool.encode() + str(a.shape).encode() + a.tobytes()).hexdigest()[:32]
            for n, a in images.items()}
    todo = [n for n in images if not (ORACLE / f"{keys[n]}.json").is_file()]
    if todo:
        with tempfile.TemporaryDirectory() as tmp:
            paths = {}
            for n in todo:
                paths[n] = str(Path(tmp) / f"{keys[n]}.npy")
                np.save(paths[n], images[n])
            extra = ["--out", str(ORACLE)] if args[0] == "selfie" else []
            r = subprocess.run([str(MEDIAPIPE_PYTHON), str(TOOL), *args, *extra, *paths.values()],
                               capture_output=True, text=True, timeout=900)
            assert r.returncode == 0, r.stderr[-2000:]
            out = json.loads(r.stdout.strip().splitlines()[-1])
            for n in todo:
                (ORACLE / f"{keys[n]}.json").write_text(json.dumps(out[paths[n]]))
    return {n: json.loads((ORACLE / f"{keys[n]}.json").read_text()) for n in images}


@functools.cache
def mediapipe_hands(lite: bool) -> dict[str, list[dict]]:
    return _oracle(["hands", *(["--lite"] if lite else []), "--max-hands", "2"],
                   {n: image(n) for n in HAND_IMAGES})


@functools.cache
def mediapipe_masks(model: int) -> dict[str, np.ndarray]:
    out = _oracle(["selfie", "--model", str(model)], {n: image(n) for n in photos.PEOPLE_PHOTOS})
    return {n: np.load(ORACLE / Path(str(f)).name) for n, f in out.items()}


@functools.cache
def tracker(engine: str, lite: bool, tracking: bool = False, max_hands: int = 2):
    from wasmrt.vision import HandTracker

    try:
        return HandTracker(engine, lite=lite, tracking=tracking, max_hands=max_hands)
    except Exception as e:  # offline without the models
        pytest.skip(f"hand models not available ({e})")


def compare_hands(engine: str, lite: bool, names: list[str], unstable: frozenset[str] = frozenset()) -> list[float]:
    """Per hand: the mean landmark distance to MediaPipe's; asserts the same hands in the same order, the same
    handedness and (except on the unstable photos) the bound."""
    oracle = mediapipe_hands(lite)
    ht = tracker(engine, lite)
    means = []
    for n in names:
        ours, theirs = ht.detect(image(n)), oracle[n]
        assert len(ours) == len(theirs), f"{n}: {len(ours)} hands, MediaPipe {len(theirs)}"
        for k, (h, o) in enumerate(zip(ours, theirs, strict=True)):
            d = np.linalg.norm(h.landmarks[:, :2] - np.array(o["landmarks"])[:, :2], axis=1)
            world = np.abs(h.world - np.array(o["world"])).max()
            dz = np.abs(h.landmarks[:, 2] - np.array(o["landmarks"])[:, 2]).mean()
            print(f"{n} hand {k} ({h.handedness} {h.handedness_score:.3f}, {h.gesture}) {engine}: mean {d.mean():.4f} "
                  f"px, max {d.max():.4f} px; z mean {dz:.4f} px; world max {world * 1000:.3f} mm")
            assert h.handedness == o["handedness"], f"{n} hand {k}"
            if n in unstable:
                continue
            assert h.handedness_score == pytest.approx(o["score"], abs=0.02)
            assert d.mean() < MAX_MEAN_PX, f"{n} hand {k}: {d.mean():.3f} px"
            assert dz < MAX_Z_PX and world < MAX_WORLD_M, f"{n} hand {k}: z {dz:.3f} px, world {world * 1000:.3f} mm"
            means.append(float(d.mean()))
    return means


def distinct_photos(names: list[str]) -> set[str]:
    """The photos behind image names: a tile ("photo@rc") counts as its photo."""
    return {n.split("@")[0] for n in names}


def test_distinct_photos_counts_tiles_once():
    assert distinct_photos(["a.jpg", "a.jpg@00", "b.jpg@12", "b.jpg@22"]) == {"a.jpg", "b.jpg"}


def test_photo_set_has_20_photos_with_hands():
    """The acceptance asks for at least 20 distinct real photos with hands where MediaPipe finds them (tiles of one
    photo count once)."""
    oracle = mediapipe_hands(False)
    with_hands = [n for n in HAND_IMAGES if oracle[n]]
    assert len(distinct_photos(with_hands)) >= 20, sorted(distinct_photos(with_hands))
    assert sum(len(oracle[n]) for n in HAND_IMAGES) >= 30


@pytest.mark.slow
@pytest.mark.parametrize("lite", [False, True], ids=["full", "lite"])
@pytest.mark.parametrize("engine", ["native", "wasm"])
def test_hands_match_mediapipe(engine: str, lite: bool) -> None:
    # lite: the whole photos only; on the tiles its palm scores sit at the threshold (group6.jpg@22: 0.525 against
    # MediaPipe's 0.528 for a second, spurious hand), so which side they fall is arithmetic noise
    names = list(photos.HAND_PHOTOS) if lite else HAND_IMAGES
    means = compare_hands(engine, lite, names, LITE_UNSTABLE if lite else frozenset())
    print(f"{engine} {'lite' if lite else 'full'}: {len(means)} hands, mean of means {np.mean(means):.4f} px, "
          f"worst {max(means):.4f} px")


@pytest.mark.slow
def test_hands_match_mediapipe_on_python_ref() -> None:
    """The numpy specification itself (slow: a few photos)."""
    compare_hands("ref", False, ["group4.jpg", "group5.jpg", "handSrc.jpg", "human_body.jpg"])


def clip_frames(base: np.ndarray, cx: float, cy: float, side: float, count: int = 40, size: int = 384
                ) -> list[np.ndarray]:
    """A clip made from one photo: a square window about (cx, cy) that drifts (up to 8% of its side), turns (up to
    +-25 degrees) and zooms (0.8-1.25x) smoothly from frame to frame, sampled to size x size."""
    frames = []
    for t in range(count):
        a = 2 * math.pi * t / count
        x = cx + 0.08 * side * math.sin(a)
        y = cy + 0.06 * side * math.sin(2 * a)
        zoom = 1.25 ** math.sin(a + 1.0)
        frames.append(sample_rect(base, x, y, side / zoom, side / zoom, math.radians(25) * math.sin(a), size, size))
    return frames


@pytest.mark.slow
@pytest.mark.parametrize("name", ["handSrc.jpg", "Back_Projection_Theory0.jpg", "human_webcam.jpg", "group5.jpg",
                                  "screen_charuco.jpg", "Threshold_inRange_Tutorial_Result_input.jpg",
                                  "05.jpg@20"])
def test_tracking_keeps_the_hand(name: str) -> None:
    """A clip about the photo's first hand (a window 2.5x the hand's landmark box), one hand (max_hands=1): after the
    first frame the palm detector runs only when tracking lost the hand; tracking must keep it without the detector
    on >= 90% of the frames, and the hand must be found on every frame."""
    photo = image(name)
    first = tracker("native", False).detect(photo)[0].landmarks[:, :2]
    (x0, y0), (x1, y1) = first.min(axis=0), first.max(axis=0)
    frames = clip_frames(photo, (x0 + x1) / 2, (y0 + y1) / 2, 2.5 * max(x1 - x0, y1 - y0))
    ht = tracker("native", False, tracking=True, max_hands=1)
    ht.reset()
    tracked = found = 0
    for f in frames:
        hands = ht.detect(f)
        found += len(hands) == 1
        tracked += len(hands) == 1 and hands[0].tracked and not ht.stats.ran_detector
    print(f"{name}: found on {found}/{len(frames)} frames, tracked without detection on {tracked}/{len(frames) - 1}")
    assert found == len(frames)
    assert tracked >= 0.9 * (len(frames) - 1)


def _iou(a: np.ndarray, b: np.ndarray) -> float:
    x, y = a >= MASK_THRESHOLD, b >= MASK_THRESHOLD
    return float((x & y).sum() / max((x | y).sum(), 1))


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["native", "wasm", "ref"])
@pytest.mark.parametrize("model", ["general", "landscape"])
def test_segmentation_matches_mediapipe(engine: str, model: str) -> None:
    from wasmrt.vision import SelfieSegmenter

    oracle = mediapipe_masks(0 if model == "general" else 1)
    seg = SelfieSegmenter(engine, model=model, smoothing=0.0)
    names = photos.PEOPLE_PHOTOS if engine != "ref" else photos.PEOPLE_PHOTOS[:3]
    for n in names:
        mask = seg.segment(image(n))
        iou = _iou(mask, oracle[n])
        print(f"{n} {model} {engine}: IoU {iou:.5f}, max |diff| {np.abs(mask - oracle[n]).max():.4f}")
        assert iou >= 0.99, n


@pytest.mark.slow
@pytest.mark.parametrize(("name", "want"), [("human_webcam.jpg", "victory"), ("Back_Projection_Theory0.jpg",
                                            "open_palm"), ("Back_Projection1_Source_Image.jpg", "open_palm"),
                                           ("screen_charuco.jpg", "closed_fist")])
def test_gestures_on_real_hands(name: str, want: str) -> None:
    """Photos whose one hand plainly makes a gesture (a V sign, a spread hand, a fist gripping a board)."""
    hands = tracker("native", False).detect(image(name))
    assert [h.gesture for h in hands] == [want]


@pytest.mark.slow
def test_redetection_after_the_hand_leaves() -> None:
    """Tracking ends when the hand leaves (presence drops) and the palm detector finds it again when it returns;
    with max_hands=2 and one hand the detector runs on every frame (as MediaPipe), with max_hands=1 only when lost."""
    frame = image("Back_Projection_Theory0.jpg")
    blank = np.full_like(frame, 127)
    ht = tracker("native", False, tracking=True, max_hands=1)
    ht.reset()
    seen = []
    for f in (frame, frame, blank, blank, frame, frame):
        hands = ht.detect(f)
        seen.append((len(hands), ht.stats.ran_detector, bool(hands) and hands[0].tracked))
    assert seen == [(1, True, False), (1, False, True), (0, False, False), (0, True, False), (1, True, False),
                    (1, False, True)]
    two = tracker("native", False, tracking=True, max_hands=2)
    two.reset()
    for _ in range(3):
        hands = two.detect(frame)
        assert len(hands) == 1 and two.stats.ran_detector
    assert hands[0].tracked  # the tracked crop replaced the palm's (IoU > 0.5)


@pytest.mark.slow
def test_background_replaced_where_the_mask_says() -> None:
    """On a real photo: where the smoothed mask's 8-bit alpha is 255 / 0 the person's pixels stay and the background
    becomes the colour; the blurred background keeps the person too. Smoothing over a still clip
    converges to the single-frame mask where the model is sure."""
    from wasmrt.vision import SelfieSegmenter, blur_background, replace_background

    frame = image("grace_hopper.jpg")
    seg = SelfieSegmenter("native")
    first = seg.segment(frame)
    for _ in range(3):
        mask = seg.segment(frame)
    sure = (first <= 0.01) | (first >= 0.99)
    assert sure.mean() > 0.5 and np.abs(mask - first)[sure].max() < 0.01
    out = replace_background(frame, mask, (0, 177, 64))
    person, back = mask >= 254.5 / 255, mask < 0.5 / 255
    assert person.mean() > 0.2 and back.mean() > 0.1
    np.testing.assert_array_equal(out[person], frame[person])
    np.testing.assert_array_equal(out[back], np.broadcast_to(np.array([0, 177, 64], np.uint8), out[back].shape))
    blurred = blur_background(frame, mask)
    np.testing.assert_array_equal(blurred[person], frame[person])
    assert np.abs(blurred[back].astype(int) - frame[back]).mean() > 1  # the background did change


@pytest.mark.parametrize("engine", ["native", "wasm"])
def test_segmenter_composites_its_frames_as_segment_then_replace(engine: str) -> None:
    """SelfieSegmenter.replace_background / blur_background (the mask made and the frame composited in one engine
    pass) give segment() then replace_background / blur_background's bytes frame after frame on a real photo, RGB
    and RGBA, the mask kept for the next frame's smoothing."""
    from wasmrt.vision import SelfieSegmenter, blur_background, replace_background

    rgb = image("grace_hopper.jpg")
    rgba = np.concatenate([rgb, np.full((*rgb.shape[:2], 1), 200, np.uint8)], axis=2)
    for frame in (rgb, rgba):
        fused, plain = SelfieSegmenter(engine), SelfieSegmenter(engine)
        for t, background in enumerate([(0, 177, 64), frame[::-1].copy(), None]):
            shifted = np.roll(frame, 5 * t, axis=1)  # the frames differ, as a camera's
            got = fused.blur_background(shifted, 6) if background is None else \
                fused.replace_background(shifted, background)
            mask = plain.segment(shifted)
            want = blur_background(shifted, mask, 6) if background is None else \
                replace_background(shifted, mask, background)
            np.testing.assert_array_equal(got, want, f"frame {t}")
            assert fused.previous is not None and fused.previous.tobytes() == mask.tobytes()
