"""The try-on page (demo/web/tryon.html) in headless Chromium against python_ref.vision: landmarks within 0.5 px,
lip mask IoU >= 0.95, tracking on the generated clip, a screenshot and per-stage timings in build/artifacts/; and
what a person sees: screenshots taken while the live loop runs (photo, clip, fake camera) show the chosen colour on
python_ref's lip mask."""

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

from wasmrt.dev.modules import TRYON_SETS

ROOT = Path(__file__).resolve().parent.parent
NODE = shutil.which("node")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = vision_fixtures.ARTIFACTS


def _missing() -> str | None:
    if NODE is None or not Path(CHROMIUM).exists():
        return "needs node and Debian's chromium"
    if not (ROOT / "node_modules" / "playwright-core").is_dir():
        return "node_modules is missing: run scripts/setup.sh (npm ci)"
    from wasmrt.dev.demo_server import missing_files

    return missing_files()


pytestmark = pytest.mark.skipif(_missing() is not None, reason=str(_missing()))


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tryon")
    vision_fixtures.write(out)
    return out


def _lm_err(a, b) -> float:
    a, b = np.asarray(a, dtype=np.float64).reshape(-1, 3), np.asarray(b, dtype=np.float64).reshape(-1, 3)
    return float(np.hypot(*(a[:, :2] - b[:, :2]).T).mean())


@pytest.fixture(scope="module")
def browser_run(fixtures: Path) -> dict:
    from wasmrt.dev.demo_server import DemoServer, build_tryon_modules, copy_samples

    copy_samples()
    build_tryon_modules()  # the page loads the modules built for its face models (as `wasmrt demo` builds them)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    cfg = fixtures / "browser.json"
    res = fixtures / "browser-results.json"
    with DemoServer(port=0) as server:
        cfg.write_text(json.dumps({"origin": server.origin, "variant": "simd", "fixtures": str(fixtures),
                                   "artifacts": str(ARTIFACTS), "chromium": CHROMIUM, "perfSeconds": 6}))
        r = subprocess.run([NODE, "tests/js/vision_tryon_browser.mjs", str(cfg), str(res)], cwd=ROOT,
                           capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
    return json.loads(res.read_text())


def test_browser_landmarks_and_lip_mask_match_python(browser_run: dict, fixtures: Path) -> None:
    m = json.loads((fixtures / "vision.json").read_text())
    a = browser_run["astronaut"]
    assert a["faces"] == 1 and a["ranDetector"]
    err = _lm_err(a["landmarks"], m["astronaut"]["landmarks"])
    py_mask = np.fromfile(fixtures / m["astronaut"]["mask"], dtype=np.uint8).reshape(512, 512).astype(bool)
    js_mask = np.zeros_like(py_mask)
    mk = a["mask"]
    js_mask[mk["y0"]:mk["y0"] + mk["h"], mk["x0"]:mk["x0"] + mk["w"]] = np.asarray(mk["data"]).reshape(mk["h"], mk["w"])
    iou = float((js_mask & py_mask).sum() / (js_mask | py_mask).sum())
    summary = {"meanPx": err, "iou": iou, "maskPixels": int(js_mask.sum()), "ms": a["ms"],
               "engine": browser_run["engine"]}
    (ARTIFACTS / "tryon-astronaut.json").write_text(json.dumps(summary, indent=1))
    assert err < 0.5 and iou >= 0.95, summary
    assert (ARTIFACTS / "tryon-astronaut-simd.png").stat().st_size > 10_000
    # on the module built for the float face models (at most 120,000 bytes: tests/test_modules.py)
    assert browser_run["engine"]["builtFor"] == sorted(TRYON_SETS["face"]), browser_run["engine"]


def test_browser_refine_option_gives_the_attention_mesh(browser_run: dict, fixtures: Path) -> None:
    """tryon.html?refine=1: 478 landmarks (refined lips and irises) within 0.5 px of python_ref's attention mesh,
    and the canvas a person sees carries the lipstick on the refined lips (python_ref's mask from those landmarks)."""
    from PIL import Image

    m = json.loads((fixtures / "vision.json").read_text())
    r = browser_run["refined"]
    want = np.asarray(m["astronaut"]["refined"]["landmarks"])
    assert r["checked"] and r["faces"] == 1 and len(r["landmarks"]) == 478 * 3 == want.size
    err = _lm_err(r["landmarks"], want)
    astro = np.fromfile(fixtures / m["astronaut"]["file"], dtype=np.uint8).reshape(512, 512, 4)
    mask = np.fromfile(fixtures / m["astronaut"]["refined"]["mask"], dtype=np.uint8).reshape(512, 512)
    shown = np.asarray(Image.open(ARTIFACTS / "tryon-refined-simd.png").convert("RGBA"))
    share = vision_fixtures.lipstick_share(shown, astro, mask, m["astronaut"]["paint"]["color"])
    summary = {"meanPx": err, "lipstickShare": share}
    (ARTIFACTS / "tryon-refined.json").write_text(json.dumps(summary, indent=1))
    assert err < 0.5 and share >= 0.9, summary
    assert (ARTIFACTS / "tryon-refined-page-simd.png").stat().st_size > 10_000


def test_browser_tracking_on_the_clip(browser_run: dict, fixtures: Path) -> None:
    m = json.loads((fixtures / "vision.json").read_text())
    c = browser_run["clip"]
    n = m["clip"]["frames"]
    assert all(x is not None for x in c["tracked"]["landmarks"] + c["every"]["landmarks"])
    fraction = sum(c["tracked"]["ran"]) / n
    vs_every = float(np.mean([_lm_err(a, b) for a, b in zip(c["tracked"]["landmarks"], c["every"]["landmarks"],
                                                            strict=True)]))
    py_every = np.fromfile(fixtures / m["clip"]["every"], dtype=np.float64).reshape(n, -1)
    vs_python = float(np.mean([_lm_err(a, b) for a, b in zip(c["every"]["landmarks"], py_every, strict=True)]))
    summary = {"detectorFraction": fraction, "meanPxTrackedVsEveryFrame": vs_every,
               "meanPxEveryFrameVsPython": vs_python}
    (ARTIFACTS / "tryon-tracking.json").write_text(json.dumps(summary, indent=1))
    assert fraction < 0.2 and vs_every < 1.0 and vs_python < 0.5, summary


def test_browser_live_loop_reports_fps_and_stages(browser_run: dict) -> None:
    p = browser_run["perf"]
    (ARTIFACTS / "tryon-perf.json").write_text(json.dumps(p, indent=1))
    assert p["frames"] > 10 and p["fps"] > 1, p
    for k in ("warp", "landmarks", "paint", "frame"):
        assert p[k] >= 0, p


def test_browser_camera_source_runs(browser_run: dict) -> None:
    cam = browser_run["camera"]
    assert "camera" in cam["note"] and cam["stats"]["frames"] > 5, cam
    assert cam["stats"]["detectorRuns"] == 1.0, cam  # the fake camera shows no face: the detector runs every frame


# -- what a person sees during the live loop -------------------------------------------------------------------------

LIVE_SAMPLES, LIVE_INTERVAL_MS = 40, 70


def _live(fixtures: Path, name: str, int8: bool = False, sources: tuple[str, ...] = ("astronaut", "clip", "camera"),
          samples: int = 0) -> dict:
    """Screenshots of the displayed canvas while the live loop runs, per source (tests/js/tryon_live.mjs)."""
    from wasmrt.dev.demo_server import DemoServer, build_tryon_modules, copy_samples

    build_tryon_modules()
    m = json.loads((fixtures / "vision.json").read_text())
    frames = np.fromfile(fixtures / m["clip"]["all"], np.uint8).reshape(m["clip"]["frames"], m["clip"]["size"],
                                                                          m["clip"]["size"], 4)
    y4m = fixtures / "camera.y4m"  # the fake camera's input: the clip, looped
    if not y4m.exists():
        vision_fixtures.write_y4m(y4m, frames[..., :3])
    copy_samples()
    shots = fixtures / name
    shots.mkdir(exist_ok=True)
    cfg, res = fixtures / f"{name}.json", fixtures / f"{name}-results.json"
    with DemoServer(port=0) as server:
        cfg.write_text(json.dumps({"origin": server.origin, "variant": "simd", "chromium": CHROMIUM, "y4m": str(y4m),
                                   "out": str(shots), "paint": m["livePaint"], "samples": samples or LIVE_SAMPLES,
                                   "intervalMs": LIVE_INTERVAL_MS, "sources": list(sources), "int8": int8}))
        r = subprocess.run([NODE, "tests/js/tryon_live.mjs", str(cfg), str(res)], cwd=ROOT, capture_output=True,
                           text=True, timeout=600)
    assert r.returncode == 0, f"{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
    camera = vision_fixtures.camera_frames(frames)
    return {**json.loads(res.read_text()), "frames": frames, "manifest": m, "camera": camera,
            "cameraMasks": vision_fixtures.camera_masks(camera)}


@pytest.fixture(scope="module")
def live_run(fixtures: Path) -> dict:
    return _live(fixtures, "live")


@pytest.fixture(scope="module")
def live_int8_run(fixtures: Path) -> dict:
    """The same with tryon.html?int8=1: the face models `wasmrt quantize` made (wasmrt/zoo/face_int8.py)."""
    from wasmrt.zoo import face_int8

    face_int8.make()  # a minute when missing; the files stay in models/
    return _live(fixtures, "live-int8", int8=True, sources=("astronaut", "clip"), samples=20)


def _displayed(path: str, view: dict) -> np.ndarray:
    """The screenshot as canvas pixels: scaled back to the canvas' size, un-mirrored."""
    from PIL import Image

    img = Image.open(path).convert("RGB").resize((view["canvasWidth"], view["canvasHeight"]), Image.Resampling.BOX)
    rgb = np.asarray(img)
    return rgb[:, ::-1] if view["mirror"] else rgb


def _lipstick_shares(run: dict, fixtures: Path, source: str) -> dict:
    """At least 95% of the frames a person sees carry the chosen colour on python_ref's lip mask."""
    m, frames = run["manifest"], run["frames"]
    view = run["sources"][source]
    color = m["livePaint"]["color"]
    if source == "astronaut":
        candidates = np.fromfile(fixtures / m["astronaut"]["file"], np.uint8).reshape(1, 512, 512, 4)
        masks = [np.fromfile(fixtures / m["astronaut"]["mask"], np.uint8).reshape(512, 512)]
    elif source == "clip":
        candidates = frames
        masks = list(np.fromfile(fixtures / m["clip"]["masks"], np.uint8).reshape(frames.shape[:3]))
    else:  # the same clip as the fake camera delivers it, with python_ref's masks on those very pixels
        candidates, masks = run["camera"], list(run["cameraMasks"])
    shares = []
    for path in view["shots"]:
        rgb = _displayed(path, view["view"])
        k = vision_fixtures.nearest_frame(rgb, candidates)
        shares.append(vision_fixtures.lipstick_share(rgb, candidates[k], masks[k], color))
    seen = float(np.mean([s >= 0.6 for s in shares]))
    return {"source": source, "frames": len(shares), "withLipstick": seen, "shares": [round(s, 3) for s in shares],
            "view": view["view"], "stats": view["stats"]}


@pytest.mark.parametrize("source", ["astronaut", "clip", "camera"])
def test_live_view_shows_the_lipstick(live_run: dict, fixtures: Path, source: str) -> None:
    """At least 95% of the frames a person sees carry the chosen colour on python_ref's lip mask."""
    summary = _lipstick_shares(live_run, fixtures, source)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / f"tryon-live-{source}.json").write_text(json.dumps(summary, indent=1))
    shots = live_run["sources"][source]["shots"]
    shutil.copyfile(shots[len(shots) // 2], ARTIFACTS / f"tryon-live-{source}.png")
    assert summary["withLipstick"] >= 0.95, summary


@pytest.mark.parametrize("source", ["astronaut", "clip"])
def test_live_view_with_int8_models_shows_the_lipstick(live_int8_run: dict, fixtures: Path, source: str) -> None:
    """tryon.html?int8=1 runs the int8 face models, and what a person sees still carries the colour on python_ref's
    (float) lip mask in 95% of the frames."""
    assert live_int8_run["engine"]["int8"] is True, live_int8_run["engine"]
    assert live_int8_run["engine"]["builtFor"] == sorted(TRYON_SETS["face-int8"]), live_int8_run["engine"]
    summary = _lipstick_shares(live_int8_run, fixtures, source)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / f"tryon-live-int8-{source}.json").write_text(json.dumps(summary, indent=1))
    shots = live_int8_run["sources"][source]["shots"]
    shutil.copyfile(shots[len(shots) // 2], ARTIFACTS / f"tryon-live-int8-{source}.png")
    assert summary["withLipstick"] >= 0.95, summary
