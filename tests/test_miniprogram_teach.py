"""The mini-programs' teach-the-camera page (demo/miniprogram, pages/teach) on the emulated WeChat and Alipay hosts
(tests/js/miniprogram_teach.mjs), with real photos (scikit-image's cat, coffee and rocket: crops from the album, one
snapshot of the camera), judged by what the canvas shows and the page says: trained; the camera frame and each
held-out photo in their class (the banner under the frame in the class's colour, the class named); after save, the
mini-program closed and opened again and reload, the same classes with the same probabilities (within 1e-6). And
the packages: under 2 MB each with the feature model in subpackages, 30 MB in all."""

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
PLATFORMS = ("wechat", "alipay")
PACKAGE_LIMIT, TOTAL_LIMIT = 2 * 1024 * 1024, 30 * 1024 * 1024


def _missing() -> str | None:
    if NODE is None:
        return "needs node"
    from wasmrt.dev.demo_server import missing_files

    return missing_files()


pytestmark = pytest.mark.skipif(_missing() is not None, reason=str(_missing()))


def _raw(path: Path, rgb: np.ndarray) -> dict:
    teach_fixtures.rgba(rgb).tofile(path)
    return {"file": str(path), "width": rgb.shape[1], "height": rgb.shape[0]}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    tmp = tmp_path_factory.mktemp("mp-teach")
    classes, held_out = [], []
    for name, parts in teach_fixtures.photos().items():
        photos, snapshots = [], []
        for key, img in parts.items():
            entry = _raw(tmp / f"{name}-{key}.rgba", img)
            if key == "centre":
                held_out.append({"name": name, **entry})
            elif name == "rocket" and key == teach_fixtures.CAMERA:
                snapshots.append(entry)  # the camera shows it when snapshot is tapped
            else:
                photos.append(entry)
        classes.append({"name": name, "photos": photos, "snapshots": snapshots})
    camera = classes[2]["snapshots"][0]
    cfg, res = tmp / "config.json", tmp / "results.json"
    cfg.write_text(json.dumps({"out": str(tmp), "classes": classes, "heldOut": held_out, "camera": camera}))
    r = subprocess.run([NODE, "tests/js/miniprogram_teach.mjs", str(cfg), str(res)], cwd=ROOT, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, f"{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
    out = json.loads(res.read_text())
    vision_fixtures.ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (vision_fixtures.ARTIFACTS / "miniprogram-teach.json").write_text(json.dumps(out, indent=1))
    return out


def _shown(entry: dict) -> np.ndarray:
    s = entry["shown"]
    return np.fromfile(s["file"], np.uint8).reshape(s["height"], s["width"], 4)


def _banner(got: dict, entry: dict) -> int | None:
    return teach_fixtures.banner_class(_shown(entry), got["colors"], got["banner"])


@pytest.mark.parametrize("platform", PLATFORMS)
def test_page_trains_and_shows_the_camera_class(run: dict, platform: str) -> None:
    from PIL import Image

    got = run[platform]
    assert got["counts"] == [4, 4, 4] and got["names"] == list(PHOTOS), got  # the rocket's fourth: a snapshot
    assert got["trained"]["trained"] and got["trained"]["status"] == "trained: 3 classes, 12 photos", got["trained"]
    assert got["trained"]["progress"] == 100, got["trained"]
    Image.fromarray(_shown(got["camera"])).save(vision_fixtures.ARTIFACTS / f"miniprogram-teach-{platform}.png")
    assert got["camera"]["label"] == "rocket" and got["camera"]["text"].startswith("rocket"), got["camera"]
    assert _banner(got, got["camera"]) == list(PHOTOS).index("rocket")


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", list(PHOTOS))
def test_held_out_photo_gets_its_class_and_reloads_the_same(run: dict, platform: str, name: str) -> None:
    got = run[platform]
    k = list(PHOTOS).index(name)
    before, after = got["before"][name], got["after"][name]
    assert before["label"] == name and before["text"].startswith(name) and _banner(got, before) == k, before
    assert not got["reopened"]["trained"] and "reload puts it back" in got["reopened"]["store"], got["reopened"]
    assert got["reloaded"]["trained"] and got["reloaded"]["names"] == list(PHOTOS), got["reloaded"]
    assert after["label"] == name and _banner(got, after) == k, after
    np.testing.assert_allclose(after["probs"], before["probs"], rtol=0, atol=1e-6)


def test_banner_check_tells_the_classes_apart(run: dict) -> None:
    got = run["wechat"]
    shown, colors, banner = _shown(got["before"]["cat"]), got["colors"], got["banner"]
    assert teach_fixtures.banner_class(shown, colors, banner) == 0
    assert teach_fixtures.banner_class(teach_fixtures.paint(shown, colors[1], banner), colors, banner) == 1
    plain = teach_fixtures.rgba(teach_fixtures.photos()["cat"]["centre"])
    assert teach_fixtures.banner_class(plain, colors, banner) is None


@pytest.mark.parametrize("platform", PLATFORMS)
def test_packages_hold_the_feature_model_within_the_limits(run: dict, platform: str) -> None:
    sizes = run[platform]["sizes"]
    features = {k: v for k, v in sizes.items() if k.startswith("features")}
    assert len(features) == 10 and sum(features.values()) >= 18_000_000, sizes
    assert all(v < PACKAGE_LIMIT for v in sizes.values()), sizes
    assert sum(sizes.values()) < TOTAL_LIMIT, sizes
