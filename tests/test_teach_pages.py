"""What a person sees on the teach-the-camera page (demo/web/teach.html) in headless Chromium, with real photos
(scikit-image's cat, coffee and rocket; crops of each): three classes named, four photos each (files, and one
snapshot of the fake camera showing a rocket), trained in the page's Worker; then:
- the page says it is trained, and the live camera frame shows the rocket's class;
- a held-out crop of each photo, shown as the page's photo, gets its class: in the side panel's text, and on the
  screenshot, the banner under the frame in that class's colour;
- after save, a reload of the page and the reload button, the same photos get the same class with the same
  probabilities (within 1e-6).
The screenshots go to build/artifacts/teach-*.png."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent / "js"))
import teach_fixtures
import vision_fixtures
from teach_fixtures import PHOTOS

ROOT = Path(__file__).resolve().parent.parent
NODE = shutil.which("node")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = vision_fixtures.ARTIFACTS
CAMERA_SIZE = (320, 240)


def _missing() -> str | None:
    if NODE is None or not Path(CHROMIUM).exists() or not (ROOT / "node_modules" / "playwright-core").is_dir():
        return "needs node, Debian's chromium and node_modules (scripts/setup.sh)"
    from wasmrt.dev.demo_server import missing_files

    return missing_files()


pytestmark = pytest.mark.skipif(_missing() is not None, reason=str(_missing()))


def teach_inputs(out: Path) -> dict:
    """The photos as PNG files, the rocket's camera crop as the fake camera (a still .y4m), the page's classes."""
    from PIL import Image

    classes, held_out = [], []
    for k, (name, parts) in enumerate(teach_fixtures.photos().items()):
        files = []
        for key, img in parts.items():
            path = str(teach_fixtures.write_photo(out / f"{name}-{key}.png", img))
            if key == "centre":
                held_out.append({"name": name, "file": path, "index": k})
            elif not (name == "rocket" and key == teach_fixtures.CAMERA):
                files.append(path)
        classes.append({"name": name, "files": files, "snapshots": 1 if name == "rocket" else 0})
    rocket = teach_fixtures.photos()["rocket"][teach_fixtures.CAMERA]
    camera = np.asarray(Image.fromarray(rocket).resize(CAMERA_SIZE, Image.Resampling.BILINEAR))
    vision_fixtures.write_y4m(out / "camera.y4m", np.stack([camera] * 4))
    return {"classes": classes, "heldOut": held_out, "y4m": str(out / "camera.y4m")}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    from wasmrt.dev.demo_server import DemoServer, copy_samples

    copy_samples()
    tmp = tmp_path_factory.mktemp("teach-page")
    inputs = teach_inputs(tmp)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    cfg, res = tmp / "config.json", tmp / "results.json"
    with DemoServer(port=0) as server:
        cfg.write_text(json.dumps({"origin": server.origin, "chromium": CHROMIUM, "out": str(ARTIFACTS),
                                   "variant": "simd", **inputs}))
        r = subprocess.run([NODE, "tests/js/teach_page.mjs", str(cfg), str(res)], cwd=ROOT, capture_output=True,
                           text=True, timeout=300)
    assert r.returncode == 0, f"{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
    out = json.loads(res.read_text())
    (ARTIFACTS / "teach-page.json").write_text(json.dumps(out, indent=1))
    return out


def banner_class(run: dict, shot: str) -> int | None:
    """The class whose colour fills the banner under the frame on a screenshot of the page's canvas."""
    from PIL import Image

    got = run["shots"][shot]
    shown = np.asarray(Image.open(got["path"]).convert("RGB"))
    return teach_fixtures.banner_class(shown, run["colors"], got["view"]["banner"])


def test_page_trains_on_the_photos(run: dict) -> None:
    assert not [m for m in run["logs"] if m.startswith(("pageerror", "requestfailed", "error"))], run["logs"]
    assert run["counts"] == [4, 4, 4], run["counts"]  # four corner crops each (the rocket's fourth: a snapshot)
    t = run["trained"]
    assert t["state"] == "trained" and t["text"] == "trained: 3 classes, 12 photos", t
    assert t["progress"] == 1 and "epochs in" in t["info"], t


def test_live_camera_shows_its_class(run: dict) -> None:
    assert run["camera"]["label"] == "rocket", run["camera"]
    assert banner_class(run, "camera-trained") == list(PHOTOS).index("rocket")
    assert banner_class(run, "camera-untrained") is None  # no class before training


@pytest.mark.parametrize("name", list(PHOTOS))
def test_held_out_photo_gets_its_class_and_reloads_the_same(run: dict, name: str) -> None:
    k = list(PHOTOS).index(name)
    before, after = run["before"][name], run["after"][name]
    assert before["label"] == name and before["index"] == k and before["text"].startswith(name), before
    assert banner_class(run, f"before-{name}") == k
    assert run["reloaded"]["state"] == "trained" and run["reloaded"]["names"] == list(PHOTOS), run["reloaded"]
    assert after["label"] == name and banner_class(run, f"after-{name}") == k
    np.testing.assert_allclose(after["probs"], before["probs"], rtol=0, atol=1e-6)


def test_page_reload_starts_untrained_and_offers_the_saved_model(run: dict) -> None:
    assert run["saved"].startswith("saved on this device: cat, coffee, rocket"), run["saved"]
    r = run["afterPageReload"]
    assert r["state"] == "ready" and "reload puts it back" in r["store"], r


def test_banner_check_tells_the_classes_apart(run: dict) -> None:
    """The banner check names no class on the untrained frame, and another class for another colour."""
    from PIL import Image

    shot = run["shots"]["before-cat"]
    shown = np.asarray(Image.open(shot["path"]).convert("RGB"))
    banner = shot["view"]["banner"]
    assert teach_fixtures.banner_class(shown, run["colors"], banner) == 0
    painted = teach_fixtures.paint(shown, run["colors"][2], banner)
    assert teach_fixtures.banner_class(painted, run["colors"], banner) == 2
    assert banner_class(run, "camera-untrained") is None
