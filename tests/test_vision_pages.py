"""What a person sees on the background replacement page (demo/web/segment.html) and the hands page
(demo/web/hands.html), the pipeline in a Worker and on the page's thread, in headless Chromium: screenshots of the
displayed canvas while the live loop runs (photo, the clip made from it, the fake camera fed with that clip) judged
against python_ref.vision on the same pixels (native engine):
- segmentation: where python_ref's mask is sure of the person, the frame's pixels; where it is sure of the
  background, the chosen colour;
- hands: pixels along every bone of python_ref's landmarks changed (the skeleton is drawn on the hand), pixels away
  from the hand untouched, and the gesture named in the side panel.
Per-frame timings (the pages' own table) go to build/artifacts/vision-pages-*.json."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent / "js"))
import vision_fixtures

ROOT = Path(__file__).resolve().parent.parent
NODE = shutil.which("node")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = vision_fixtures.ARTIFACTS
BACKGROUND = (255, 0, 255)  # magenta: no photo's person has it, so a replaced pixel is unmistakable
SAMPLES, INTERVAL_MS = 5, 150
RUNS = [{"worker": True, "sources": ["photo", "clip", "camera"]}, {"worker": False, "sources": ["photo", "clip"]}]
CASES = [(run["worker"], source) for run in RUNS for source in run["sources"]]
IDS = [f"{'worker' if w else 'page'}-{s}" for w, s in CASES]


def _missing() -> str | None:
    if NODE is None or not Path(CHROMIUM).exists():
        return "needs node and Debian's chromium"
    if not (ROOT / "node_modules" / "playwright-core").is_dir():
        return "node_modules is missing: run scripts/setup.sh (npm ci)"
    from wasmrt.dev.demo_server import missing_files

    return missing_files()


pytestmark = pytest.mark.skipif(_missing() is not None, reason=str(_missing()))


def _photo(name: str) -> np.ndarray:
    """A sample the page shows, as RGBA (decoded by PIL: the browser's decoder may differ by a level)."""
    from PIL import Image

    from wasmrt.dev.demo_server import SAMPLES_DIR, copy_samples

    copy_samples()
    return np.asarray(Image.open(SAMPLES_DIR / name).convert("RGBA"))


def _candidates(photo: np.ndarray) -> dict[str, np.ndarray]:
    """The frames each source can show: the photo, the clip's frames (the JS clipFrame's bytes) and the same clip
    as the fake camera delivers it."""
    from python_ref.vision.clip import clip

    frames = np.stack(clip(photo, vision_fixtures.CLIP_FRAMES, vision_fixtures.CLIP_SIZE))
    return {"photo": photo[None], "clip": frames, "camera": vision_fixtures.camera_frames(frames)}


def _run_pages(tmp: Path, page: str, photo: np.ndarray, settings: dict | None = None) -> dict:
    from wasmrt.dev.demo_server import DemoServer

    clip = _candidates(photo)["clip"]
    y4m, shots = tmp / f"{page}.y4m", tmp / page
    vision_fixtures.write_y4m(y4m, clip[..., :3])
    shots.mkdir(exist_ok=True)
    cfg, res = tmp / f"{page}.json", tmp / f"{page}-results.json"
    with DemoServer(port=0) as server:
        cfg.write_text(json.dumps({"origin": server.origin, "chromium": CHROMIUM, "y4m": str(y4m), "out": str(shots),
                                   "page": page, "variant": "simd", "runs": RUNS, "samples": SAMPLES,
                                   "intervalMs": INTERVAL_MS, "settings": settings}))
        r = subprocess.run([NODE, "tests/js/vision_pages.mjs", str(cfg), str(res)], cwd=ROOT, capture_output=True,
                           text=True, timeout=900)
    assert r.returncode == 0, f"{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
    out = json.loads(res.read_text())
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    timings = {("worker" if run["worker"] else "page"): {s: v["stats"] for s, v in run["sources"].items()}
               for run in out["runs"]}
    (ARTIFACTS / f"vision-pages-{page}.json").write_text(json.dumps(
        {"engine": out["runs"][0]["engine"], "timings": timings}, indent=1))
    return out


def _source(run: dict, worker: bool, source: str) -> dict:
    (r,) = [x for x in run["runs"] if x["worker"] == worker]
    assert r["engine"]["where"] == ("worker" if worker else "page"), r["engine"]
    assert not [m for m in r["logs"] if m.startswith(("pageerror", "requestfailed", "error"))], r["logs"]
    return r["sources"][source]


def _displayed(path: str, view: dict) -> np.ndarray:
    """The screenshot as canvas pixels: scaled back to the canvas' size, un-mirrored."""
    from PIL import Image

    img = Image.open(path).convert("RGB").resize((view["canvasWidth"], view["canvasHeight"]), Image.Resampling.BOX)
    rgb = np.asarray(img).astype(np.int32)
    return rgb[:, ::-1] if view["mirror"] else rgb


def _keep(page: str, worker: bool, source: str, got: dict, summary: dict) -> None:
    """The case's summary and a screenshot in build/artifacts/ (to look at)."""
    name = f"vision-pages-{page}-{IDS[CASES.index((worker, source))]}"
    (ARTIFACTS / f"{name}.json").write_text(json.dumps(summary, indent=1))
    shutil.copyfile(got["shots"][len(got["shots"]) // 2], ARTIFACTS / f"{name}.png")


# -- background replacement ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def segment_run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    from wasmrt.vision import SelfieSegmenter

    photo = _photo("astronaut.png")
    seg = SelfieSegmenter("native", smoothing=0)  # each frame's own mask: the page's smoothed one agrees where sure
    candidates = _candidates(photo)
    masks = {k: np.stack([seg.segment(f) for f in v]) for k, v in candidates.items()}
    settings = {"mode": "color", "color": "#{:02x}{:02x}{:02x}".format(*BACKGROUND)}
    run = _run_pages(tmp_path_factory.mktemp("segment-page"), "segment", photo, settings)
    return {"run": run, "candidates": candidates, "masks": masks}


def background_shares(shown: np.ndarray, frame: np.ndarray, mask: np.ndarray) -> tuple[float, float]:
    """(share of sure-person pixels showing the frame, share of sure-background pixels showing BACKGROUND)."""
    person, background = mask >= 0.9, mask <= 0.1
    kept = np.abs(shown - frame[..., :3].astype(np.int32)).mean(-1) <= 16
    replaced = np.abs(shown - np.asarray(BACKGROUND)).mean(-1) <= 16
    return float(kept[person].mean()), float(replaced[background].mean())


@pytest.mark.parametrize(("worker", "source"), CASES, ids=IDS)
def test_segmentation_page_replaces_the_background_where_the_mask_says(segment_run: dict, worker: bool,
                                                                        source: str) -> None:
    got = _source(segment_run["run"], worker, source)
    frames, masks = segment_run["candidates"][source], segment_run["masks"][source]
    expected = np.where(masks[..., None] >= 0.5, frames[..., :3], np.asarray(BACKGROUND, np.uint8))
    shares = []
    for path in got["shots"]:
        shown = _displayed(path, got["view"])
        k = vision_fixtures.nearest_frame(shown, expected)
        shares.append(background_shares(shown, frames[k], masks[k]))
    summary = {"shares": shares, "stats": got["stats"], "view": got["view"]}
    _keep("segment", worker, source, got, summary)
    need = 0.97 if source == "photo" else 0.9  # a moving frame's smoothed mask lags a little at the edges
    assert all(p >= need and b >= need for p, b in shares), summary
    assert got["stats"]["frames"] >= 4 and got["stats"]["model"] > 0, got["stats"]


def test_background_check_fails_on_an_unreplaced_frame(segment_run: dict) -> None:
    """The check above cannot pass on the camera's own pixels or on a frame painted all over."""
    frame, mask = segment_run["candidates"]["photo"][0], segment_run["masks"]["photo"][0]
    _, replaced = background_shares(frame[..., :3].astype(np.int32), frame, mask)
    kept, _ = background_shares(np.broadcast_to(np.asarray(BACKGROUND), frame[..., :3].shape), frame, mask)
    assert replaced < 0.1 and kept < 0.1


# -- hands -------------------------------------------------------------------------------------------------------------


def _hands(frames: np.ndarray) -> list[list[np.ndarray]]:
    """python_ref's landmarks [21, 2] of each hand in each frame (lite models, as the page), tracked as the page
    tracks the looping clip: the second time round, every frame follows its predecessor."""
    from wasmrt.vision import HandTracker

    tracker = HandTracker("native", lite=True, max_hands=2)
    for f in frames[-1:]:
        tracker.detect(f[..., :3])
    return [[h.landmarks[:, :2] for h in tracker.detect(f[..., :3])] for f in frames]


@pytest.fixture(scope="module")
def hands_run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    photo = _photo("hand.jpg")
    candidates = _candidates(photo)
    landmarks = {k: _hands(v) for k, v in candidates.items()}
    run = _run_pages(tmp_path_factory.mktemp("hands-page"), "hands", photo)
    return {"run": run, "candidates": candidates, "landmarks": landmarks}


def skeleton_shares(shown: np.ndarray, frame: np.ndarray, hands: list[np.ndarray]) -> tuple[float, float]:
    """(share of points along the bones where the shown frame differs from the frame, share of pixels 16+ pixels
    away from every bone that equal the frame)."""
    from PIL import Image, ImageDraw

    from python_ref.vision.constants import HAND_CONNECTIONS

    diff = np.abs(shown - frame[..., :3].astype(np.int32)).sum(-1)
    h, w = diff.shape
    near = Image.new("L", (w, h))
    draw = ImageDraw.Draw(near)
    on, total = 0, 0
    for lm in hands:
        for a, b in HAND_CONNECTIONS:
            draw.line([tuple(lm[a]), tuple(lm[b])], fill=255, width=33)
            for t in (0.25, 0.5, 0.75):
                x, y = (lm[a] + t * (lm[b] - lm[a])).round().astype(int)
                if 2 <= x < w - 2 and 2 <= y < h - 2:  # within 2 pixels: a moving hand's tracked landmarks differ
                    total += 1                          # by a pixel or two between the page and python_ref
                    on += int(diff[y - 2:y + 3, x - 2:x + 3].max() > 90)
        for x, y in lm:
            draw.ellipse([x - 16, y - 16, x + 16, y + 16], fill=255)
    away = np.asarray(near) == 0
    return on / max(total, 1), float((diff[away] <= 30).mean())


@pytest.mark.parametrize(("worker", "source"), CASES, ids=IDS)
def test_hands_page_draws_the_skeleton_on_the_hand(hands_run: dict, worker: bool, source: str) -> None:
    got = _source(hands_run["run"], worker, source)
    frames = hands_run["candidates"][source]
    shares = []
    for path in got["shots"]:
        shown = _displayed(path, got["view"])
        k = vision_fixtures.nearest_frame(shown, frames)
        hands = hands_run["landmarks"][source][k]
        assert len(hands) == 1, f"python_ref finds {len(hands)} hands in frame {k}"
        shares.append(skeleton_shares(shown, frames[k], hands))
    summary = {"shares": shares, "texts": got["texts"], "stats": got["stats"], "view": got["view"]}
    _keep("hands", worker, source, got, summary)
    on = [x for x, _ in shares]  # a moving hand: the page tracks the frames it gets, python_ref every frame
    assert min(on) >= (0.9 if source == "photo" else 0.8) and np.mean(on) >= 0.9, summary
    assert all(away >= 0.97 for _, away in shares), summary
    assert sum("open palm" in t for t in got["texts"]) >= len(got["texts"]) - 1, summary  # the gesture is named
    assert got["stats"]["frames"] >= 4 and got["stats"]["landmarks"] > 0, got["stats"]


def test_skeleton_check_fails_without_a_skeleton(hands_run: dict) -> None:
    """The check above cannot pass on the bare frame, nor on a skeleton drawn somewhere else."""
    from PIL import Image, ImageDraw

    from python_ref.vision.constants import HAND_CONNECTIONS

    frame = hands_run["candidates"]["clip"][0]
    hands = hands_run["landmarks"]["clip"][0]
    bare = frame[..., :3].astype(np.int32)
    assert skeleton_shares(bare, frame, hands)[0] < 0.1
    elsewhere = Image.fromarray(frame[..., :3].copy())
    draw = ImageDraw.Draw(elsewhere)
    for a, b in HAND_CONNECTIONS:  # the right skeleton 60 pixels too low
        draw.line([tuple(hands[0][a] + (0, 60)), tuple(hands[0][b] + (0, 60))], fill=(0, 230, 118), width=3)
    on, away = skeleton_shares(np.asarray(elsewhere).astype(np.int32), frame, hands)
    assert on < 0.5, (on, away)
