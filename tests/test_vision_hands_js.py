"""wasmrt/vision's HandTracker and SelfieSegmenter (js_bindings/vision) against python_ref.vision: in Node
(tests/js/hands_parity.mjs) and one case in headless Chromium (tests/js/hands_browser.mjs), each fed the model outputs
Python's pipelines got on the native engine (tests/js/hands_fixtures.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "js"))
import hands_fixtures

ROOT = Path(__file__).resolve().parent.parent
NODE = shutil.which("node")
CHROMIUM = Path("/usr/bin/chromium")

pytestmark = pytest.mark.skipif(NODE is None, reason="needs node")


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("hands")
    try:
        hands_fixtures.write(out)
    except OSError as e:  # offline without the model and photo caches
        pytest.skip(f"models or photos not available ({e})")
    return out


def reports(stdout: str) -> list[dict]:
    return [json.loads(line[len("HANDS_REPORT "):]) for line in stdout.splitlines() if line.startswith("HANDS_REPORT ")]


def test_js_hands_and_segmentation_match_python(fixtures: Path) -> None:
    env = {**os.environ, "HANDS_FIXTURES": str(fixtures)}
    r = subprocess.run([NODE, "--test", "--test-reporter=spec", "tests/js/hands_parity.mjs"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"{r.stdout[-8000:]}\n{r.stderr[-3000:]}"
    got = reports(r.stdout)
    assert {e["kind"] for e in got} == {"photo", "clip", "gestures", "segment", "engine-hands", "engine-segment"}
    assert {e["model"] for e in got if e["kind"] == "segment"} == {"general", "landscape"}
    want = json.loads((fixtures / "hands.json").read_text())
    photos = [e for e in got if e["kind"] == "photo"]
    assert len(photos) == len(want["hands"]) >= 20  # every photo of the MediaPipe comparison
    assert sum(e["hands"] for e in photos) == sum(len(h) for h in want["hands"].values()) >= 20
    assert {e["name"] for e in got if e["kind"] == "segment"} == set(want["segments"])


@pytest.mark.skipif(not CHROMIUM.exists() or not (ROOT / "node_modules" / "playwright-core").exists(),
                    reason="needs /usr/bin/chromium and playwright-core")
def test_js_hands_and_segmentation_in_chromium(fixtures: Path) -> None:
    """A photo's hands and a landscape photo's mask, drawn on a canvas, in headless Chromium equal Python's."""
    r = subprocess.run([NODE, "tests/js/hands_browser.mjs", str(fixtures)], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    line = [s for s in r.stdout.splitlines() if s.startswith("HANDS_BROWSER ")][-1]
    got = json.loads(line[len("HANDS_BROWSER "):])
    assert not got["logs"], got["logs"]
    h = got["hands"]
    assert h["found"] == h["want"] >= 1 and h["maxDiff"] < 1e-9
    assert h["gestures"] == h["wantGestures"] and h["handedness"] == h["wantHandedness"]
    assert got["segment"] == {"model": "landscape", "maskBytesOff": 0, "canvasBytesOff": 0}
