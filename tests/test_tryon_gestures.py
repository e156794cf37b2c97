"""The try-on page with gestures (demo/web/tryon.html?gestures=1; the face and hand pipelines in its Worker), in
headless Chromium: what a person sees changes colour after an open palm. The astronaut, a six-frame clip of an open
palm, the astronaut again: the colour moves to the next swatch once (however long the palm is held), and the lips on
the canvas carry the first colour before and the next one after (python_ref's lip mask)."""

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
from test_miniprogram_vision import _nearer
from test_vision_pages import _displayed, _missing

ROOT = Path(__file__).resolve().parent.parent
NODE = shutil.which("node")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
HAND_FRAMES, INTENSITY = 6, 0.8

pytestmark = pytest.mark.skipif(_missing() is not None, reason=str(_missing()))


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    from wasmrt.dev.demo_server import DemoServer, copy_samples

    copy_samples()
    tmp = tmp_path_factory.mktemp("tryon-gestures")
    cfg, res = tmp / "config.json", tmp / "results.json"
    with DemoServer(port=0) as server:
        cfg.write_text(json.dumps({"origin": server.origin, "chromium": CHROMIUM, "variant": "simd", "out": str(tmp),
                                   "intensity": INTENSITY, "handFrames": HAND_FRAMES}))
        r = subprocess.run([NODE, "tests/js/tryon_gestures.mjs", str(cfg), str(res)], cwd=ROOT, capture_output=True,
                           text=True, timeout=600)
    assert r.returncode == 0, f"{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
    return json.loads(res.read_text())


def test_open_palm_changes_the_lipstick_a_person_sees(run: dict) -> None:
    from PIL import Image
    from skimage import data

    from python_ref.vision import FaceMesh, lip_mask

    assert run["engine"]["gestures"] is True and not [m for m in run["logs"] if "error" in m.lower()], run["logs"]
    person = vision_fixtures.rgba(data.astronaut())
    mask = lip_mask(FaceMesh(tracking=False).detect(person)[0].landmarks, 512, 512)
    first, swatches = run["first"], run["swatches"]
    nxt = swatches[(swatches.index(first) + 1) % len(swatches)]
    shown = {k: _displayed(run[k]["path"], {**run[k], "mirror": False}) for k in ("before", "after")}
    summary = {"palm": run["palm"], "person1": run["person1"], "person2": run["person2"], "panel": run["panel"],
               "share-before": vision_fixtures.lipstick_share(shown["before"], person, mask, first),
               "share-after": vision_fixtures.lipstick_share(shown["after"], person, mask, nxt),
               "nearer": {k: _nearer(v, mask, first, nxt) for k, v in shown.items()}}
    vision_fixtures.ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (vision_fixtures.ARTIFACTS / "tryon-gestures.json").write_text(json.dumps(summary, indent=1))
    Image.fromarray(np.concatenate([shown["before"], shown["after"]], axis=1).astype(np.uint8)).save(
        vision_fixtures.ARTIFACTS / "tryon-gestures.png")
    assert all(p["hands"] == ["open_palm"] and p["color"] == nxt for p in run["palm"]), summary  # changed once
    assert all(p["faces"] == 1 and p["color"] == first for p in run["person1"]), summary
    assert all(p["faces"] == 1 and p["color"] == nxt for p in run["person2"]), summary
    assert "open palm" in run["palm"][-1]["shown"], summary
    assert summary["share-before"] >= 0.9 and summary["share-after"] >= 0.9, summary
    assert summary["nearer"] == {"before": first, "after": nxt}, summary
