"""The mini-programs' background replacement page and gesture try-on page (demo/miniprogram) on the emulated WeChat
and Alipay hosts (tests/js/miniprogram_vision.mjs), judged by what their canvas shows: the background replaced where
python_ref's mask says; the lipstick changing colour after an open palm (once, however long it is held). And the
2 MB limit for every package of the project that holds the face, hand and segmentation pages."""

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
LIMIT = 2 * 1024 * 1024
BACKGROUND = (255, 0, 255)
HAND_FRAMES = 6
PLATFORMS = ("wechat", "alipay")


def _missing() -> str | None:
    if NODE is None:
        return "needs node"
    from wasmrt.dev.demo_server import missing_files

    return missing_files()


pytestmark = pytest.mark.skipif(_missing() is not None, reason=str(_missing()))


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    from PIL import Image

    from wasmrt.dev.demo_server import SAMPLES_DIR, copy_samples

    tmp = tmp_path_factory.mktemp("mp-vision")
    copy_samples()
    inputs = {}
    for key, name in (("person", "astronaut.png"), ("hand", "hand.jpg")):
        img = np.asarray(Image.open(SAMPLES_DIR / name).convert("RGBA"))
        img.tofile(tmp / f"{key}.rgba")
        inputs[key] = {"file": str(tmp / f"{key}.rgba"), "width": img.shape[1], "height": img.shape[0], "pixels": img}
    cfg, res = tmp / "config.json", tmp / "results.json"
    cfg.write_text(json.dumps({"out": str(tmp), "handFrames": HAND_FRAMES,
                               "background": "#{:02x}{:02x}{:02x}".format(*BACKGROUND),
                               **{k: {x: v[x] for x in ("file", "width", "height")} for k, v in inputs.items()}}))
    r = subprocess.run([NODE, "tests/js/miniprogram_vision.mjs", str(cfg), str(res)], cwd=ROOT, capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 0, f"{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
    return {"results": json.loads(res.read_text()), "person": inputs["person"]["pixels"]}


def _shown(entry: dict) -> np.ndarray:
    return np.fromfile(entry["file"], np.uint8).reshape(entry["height"], entry["width"], 4)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_background_page_replaces_the_background_where_the_mask_says(run: dict, platform: str) -> None:
    from PIL import Image

    from wasmrt.vision import SelfieSegmenter

    got = run["results"][platform]["segment"]
    person = run["person"]
    mask = SelfieSegmenter("native", model="general", smoothing=0).segment(person)
    shown = _shown(got["shown"])
    sure_person, sure_background = mask >= 0.9, mask <= 0.1
    kept = (np.abs(shown[..., :3].astype(int) - person[..., :3]).mean(-1) <= 8)[sure_person].mean()
    replaced = (np.abs(shown[..., :3].astype(int) - np.asarray(BACKGROUND)).mean(-1) <= 8)[sure_background].mean()
    summary = {"kept": float(kept), "replaced": float(replaced), "model": got["model"], "stats": got["stats"],
               "variant": got["variant"]}
    vision_fixtures.ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (vision_fixtures.ARTIFACTS / f"miniprogram-segment-{platform}.json").write_text(json.dumps(summary, indent=1))
    Image.fromarray(shown).save(vision_fixtures.ARTIFACTS / f"miniprogram-segment-{platform}.png")
    assert got["model"] == "general" and kept >= 0.98 and replaced >= 0.98, summary


@pytest.fixture(scope="module")
def lip_mask() -> np.ndarray:
    from skimage import data

    from python_ref.vision import FaceMesh
    from python_ref.vision import lip_mask as mask_of

    face = FaceMesh(tracking=False).detect(vision_fixtures.rgba(data.astronaut()))[0]
    return mask_of(face.landmarks, 512, 512)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_gesture_page_changes_the_lipstick_after_an_open_palm(run: dict, lip_mask: np.ndarray, platform: str) -> None:
    """An open palm shown after the face: the lipstick takes the next colour, once (the palm is held for six frames);
    the canvas shows the first colour on python_ref's lips before and the next one after."""
    from PIL import Image

    got = run["results"][platform]["gesture"]
    colors, person = got["colors"], run["person"]
    nxt = colors[(colors.index(got["first"]) + 1) % len(colors)]
    before, after = _shown(got["before"]), _shown(got["after"])
    shares = {"before-first": vision_fixtures.lipstick_share(before, person, lip_mask, got["first"]),
              "after-next": vision_fixtures.lipstick_share(after, person, lip_mask, nxt),
              "after-first": vision_fixtures.lipstick_share(after, person, lip_mask, got["first"])}
    # the two colours are both reds: which one the lips are nearer to (Oklab a, b) tells them apart
    nearer = {"before": _nearer(before, lip_mask, got["first"], nxt),
              "after": _nearer(after, lip_mask, got["first"], nxt)}
    summary = {**{k: got[k] for k in ("first", "during", "afterColor", "seen", "shownGesture", "actions", "stats")},
               "shares": shares, "nearer": nearer}
    (vision_fixtures.ARTIFACTS / f"miniprogram-gesture-{platform}.json").write_text(json.dumps(summary, indent=1))
    Image.fromarray(np.concatenate([before, after], axis=1)).save(
        vision_fixtures.ARTIFACTS / f"miniprogram-gesture-{platform}.png")
    assert all(g == ["open_palm"] for g in got["seen"]), summary
    assert got["during"] == got["afterColor"] == nxt != got["first"], summary
    assert shares["before-first"] >= 0.9 and shares["after-next"] >= 0.9, summary
    assert nearer == {"before": got["first"], "after": nxt}, summary
    assert "open palm: next colour" in got["actions"], summary


def _nearer(shown: np.ndarray, mask: np.ndarray, a: str, b: str) -> str:
    """Which of two colours the mean lip colour (python_ref's mask) is nearer to in Oklab's (a, b) plane."""
    from python_ref.vision.lips import linear_to_oklab, parse_color, srgb_to_linear

    lips = linear_to_oklab(srgb_to_linear(shown[mask.astype(bool)][:, :3]))[:, 1:].mean(0)
    ab = {c: linear_to_oklab(srgb_to_linear(np.asarray(parse_color(c)))[None])[0, 1:] for c in (a, b)}
    return min((a, b), key=lambda c: float(np.linalg.norm(lips - ab[c])))


def test_lipstick_check_tells_the_colours_apart(run: dict, lip_mask: np.ndarray) -> None:
    """The colour checks above fail on the unpainted frame and on another colour, and tell the two reds apart."""
    got = run["results"]["wechat"]["gesture"]
    person, before, after = run["person"], _shown(got["before"]), _shown(got["after"])
    assert vision_fixtures.lipstick_share(person, person, lip_mask, got["afterColor"]) < 0.1
    assert vision_fixtures.lipstick_share(after, person, lip_mask, "#00ff00") < 0.5
    assert _nearer(before, lip_mask, got["first"], got["afterColor"]) != _nearer(after, lip_mask, got["first"],
                                                                                  got["afterColor"])


def _package_sizes(app: Path) -> dict[str, int]:
    conf = json.loads((app / "app.json").read_text())
    subs = [s["root"] for s in conf.get("subpackages", conf.get("subPackages", []))]
    sizes = {"main": 0, **dict.fromkeys(subs, 0)}
    for f in app.rglob("*"):
        if f.is_file():
            top = f.relative_to(app).parts[0]
            sizes[top if top in subs else "main"] += f.stat().st_size
    return sizes


@pytest.mark.parametrize("brotli", [False, True])
def test_project_with_face_hand_and_segmentation_pages_fits_2_mb_packages(tmp_path: Path, brotli: bool) -> None:
    subprocess.run([NODE, "demo/miniprogram/build.mjs", "--target", str(tmp_path)] + (["--brotli"] if brotli else []),
                   cwd=ROOT, check=True, capture_output=True, timeout=120)
    report = {}
    for platform in PLATFORMS:
        app = tmp_path / platform
        pages = json.loads((app / "app.json").read_text())["pages"]
        assert {"pages/tryon/tryon", "pages/segment/segment", "pages/gesture/gesture"} <= set(pages)
        sizes = report[platform] = _package_sizes(app)
        assert {"selfie", "palm", "hand", "hand2", "landmarks"} <= set(sizes), sizes
        for model in ("selfie_segmentation.wrt", "palm_detection_lite.wrt", "hand_landmark_lite.wrt"):
            assert list(app.glob(f"*/data/{model}.*")), model  # in subpackages, not in the main package
        assert all(v < LIMIT for v in sizes.values()), sizes
    (vision_fixtures.ARTIFACTS / f"miniprogram-vision-sizes{'-br' if brotli else ''}.json").write_text(
        json.dumps(report, indent=1))
