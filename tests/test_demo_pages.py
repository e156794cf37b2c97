"""What a person sees on the demo pages in headless Chromium: no failed request and no console error or warning on
any page; one source button highlighted at a time; the status line names the engine build in words; the landmark
task draws no mesh on a photo without a face (and does on one with a face); the speed page says MobileNetV2 has
random weights; a try-on that cannot start says why, also after a source is clicked."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NODE = shutil.which("node")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = ROOT / "build" / "artifacts"


def _missing() -> str | None:
    if NODE is None or not Path(CHROMIUM).exists() or not (ROOT / "node_modules" / "playwright-core").is_dir():
        return "needs node, Debian's chromium and node_modules (scripts/setup.sh)"
    from wasmrt.dev.demo_server import missing_files

    return missing_files()


pytestmark = pytest.mark.skipif(_missing() is not None, reason=str(_missing()))


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict:
    from wasmrt.dev.demo_server import DemoServer, copy_samples

    copy_samples()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    d = tmp_path_factory.mktemp("pages")
    with DemoServer(port=0) as server:
        (d / "cfg.json").write_text(json.dumps({"origin": server.origin, "artifacts": str(ARTIFACTS),
                                                "chromium": CHROMIUM}))
        r = subprocess.run([NODE, "tests/js/demo_pages.mjs", str(d / "cfg.json"), str(d / "out.json")], cwd=ROOT,
                           capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    out = json.loads((d / "out.json").read_text())
    (ARTIFACTS / "demo-pages.json").write_text(json.dumps(out, indent=1))
    return out


@pytest.mark.parametrize("page", ["playground", "tryon", "speed"])
def test_no_failed_request_or_console_error(pages: dict, page: str) -> None:
    assert pages[page]["problems"] == [], pages[page]["problems"]


def test_one_source_button_highlighted(pages: dict) -> None:
    assert pages["playground"]["activeWithWebcam"] == ["webcam"]
    assert pages["playground"]["activeAfter"] == ["coffee"]
    assert pages["tryon"]["active"] == ["moving clip"]


def test_status_names_the_build_in_words(pages: dict) -> None:
    assert pages["playground"]["status"].endswith("with the SIMD128 build"), pages["playground"]["status"]
    assert pages["playground"]["variantInfo"].startswith("SIMD128 — requested"), pages["playground"]["variantInfo"]
    assert pages["tryon"]["engineInfo"].startswith("engine: the SIMD128 build"), pages["tryon"]["engineInfo"]


def test_landmark_mesh_only_where_there_is_a_face(pages: dict) -> None:
    no_face, face = pages["playground"]["noFace"], pages["playground"]["face"]
    assert not no_face["summary"]["meshShown"] and no_face["summary"]["presence"] < 0.5, no_face
    assert no_face["text"].startswith("no face in the crop"), no_face["text"]
    assert face["summary"]["meshShown"] and face["summary"]["presence"] > 0.9, face


def test_speed_page_says_random_weights(pages: dict) -> None:
    models = pages["speed"]["models"]
    assert "mobilenet_v2" in models and "random weights" in models, models


def test_tryon_that_cannot_start_names_the_cause(pages: dict) -> None:
    failed = pages["tryonFailed"]
    assert failed["status"] == "stopped by the error below", failed
    assert 'unknown variant "bogus"' in failed["error"] and "TypeError" not in failed["error"], failed
