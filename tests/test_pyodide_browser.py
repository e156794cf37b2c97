"""wasmrt in Pyodide in headless Chromium: the demo's Pyodide page (demo/web/pyodide.html, served from 127.0.0.1 as
`wasmrt demo` serves it) installs micropip and the pure-Python wheel `wasmrt package --pure` built outside the
repository, runs its program (EfficientNet-Lite0 on the cat photo); then, in the same interpreter,
tests/js/pyodide_checks.py: the models match python_ref within 1e-5 (by URL and from bytes), every hostile-catalogue
file gives CPython's error class, the face mesh gives the JS pipeline's landmarks. One browser and one Pyodide start
for the module (tests/js/pyodide_browser.mjs)."""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent / "js"))
import js_fixtures
import pyodide_fixtures as fx

from wasmrt.dev import pyodide_files

ROOT = fx.ROOT
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("pyodide-cases")
    return out, fx.write_cases(out)


def run_page(tmp: Path, fixtures: Path, wheel: Path) -> dict:
    """The page, the checks and a short run of `wasmrt bench --pyodide`'s code in Chromium."""
    from wasmrt.bench import pyodide as bench
    from wasmrt.dev.demo_server import DemoServer, copy_samples

    copy_samples()
    wheels = pyodide_files.stage_wheels(tmp / "wheels", wheel)
    routes = {"/pyodide/": pyodide_files.pyodide_dir(), "/pyodide-wheels/": wheels, "/pyodide-fixtures/": fixtures}
    cfg = tmp / "config.json"
    with DemoServer(port=0, extra_routes=routes) as server:
        cfg.write_text(json.dumps({"origin": server.origin, "chromium": CHROMIUM, "fixtures": "/pyodide-fixtures/",
                                   "checks": str(ROOT / "tests" / "js" / "pyodide_checks.py"),
                                   "benchCode": bench.code(["face_detector"], "relaxed", rounds=3, warmup=1,
                                                           passes=2)}))
        r = subprocess.run([str(fx.NODE22), str(ROOT / "tests" / "js" / "pyodide_browser.mjs"), str(cfg)], cwd=ROOT,
                           capture_output=True, text=True, timeout=600)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith(("RESULT ", "FAILED "))]
    assert r.returncode == 0 and lines and lines[-1].startswith("RESULT "), (r.stdout[-6000:], r.stderr[-3000:])
    return json.loads(lines[-1][len("RESULT "):])


@pytest.fixture(scope="module")
def result(cases: tuple[Path, dict], tmp_path_factory: pytest.TempPathFactory) -> dict:
    why = fx.missing() or js_fixtures.missing_prerequisites()
    if why:
        pytest.skip(why)
    if not Path(CHROMIUM).exists():
        pytest.skip("chromium is not installed (apt-get install chromium)")
    tmp = tmp_path_factory.mktemp("pyodide-browser")
    return run_page(tmp, cases[0], fx.build_wheel(tmp / "dist"))


def floats(b64: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(b64), "<f4")


def test_the_page_runs_its_python_program(result: dict) -> None:
    page = result["page"]
    assert page["state"] == "done", page
    assert re.match(r"^tiger cat \(score [\d.]+\), on the relaxed build$", page["result"]), page["result"]
    assert result["logs"] == [], result["logs"]
    assert result["numpy_imported"] is False


@pytest.mark.parametrize("model", list(fx.MODELS))
def test_models_match_python_ref(result: dict, cases: tuple[Path, dict], model: str) -> None:
    fixtures, manifest = cases
    got = result["models"][model]
    for k, want_entry in manifest["models"][model]["outputs"].items():
        want = np.fromfile(fixtures / want_entry["file"], "<f4")
        out = got["outputs"][k]
        assert out["shape"] == want_entry["shape"]
        err = float(np.abs(floats(out["b64"]) - want).max()) / float(np.abs(want).max())
        assert err <= fx.REL_TOL, f"{model} {k}: {err:.2e} x max|ref|"


def test_errors_are_cpythons_classes(result: dict, cases: tuple[Path, dict]) -> None:
    _, manifest = cases
    for c in manifest["hostile"]:
        name, message = result["hostile"][c["name"]]
        assert name == c["cpython"], f"{c['name']}: Pyodide {name} ({message}), CPython {c['cpython']}"
        if c["expect"] != "ok":
            assert re.search(c["expect"], message), f"{c['name']}: {message!r}"
    assert result["bad_inputs"]["shape"][0] == "InputError"
    assert all(e and e[0] == "UnavailableError" for e in result["cpython_only"].values()), result["cpython_only"]


def test_face_mesh_gives_the_js_pipelines_landmarks(result: dict) -> None:
    (face,) = result["faces"]
    (js_face,) = result["jsFaces"]
    x0, y0, x1, y1 = face["box"]
    assert 150 < x0 < x1 < 300 and 50 < y0 < y1 < 200, face["box"]
    np.testing.assert_array_equal(floats(face["b64"]), floats(js_face["b64"]))


def test_hands_mask_and_composites_run_in_the_page(result: dict, cases: tuple[Path, dict]) -> None:
    """The hand and segmentation pipelines from Python in Chromium (Node's test compares them with JS's bytes)."""
    seg = result["segment"]
    assert seg["model"] == "general" and seg["replaced"] == seg["replaced_hex"]
    assert seg["bad"][0] == "TypeError"
    if cases[1]["hand"] is not None:
        assert result["hands"] and result["hands"][0]["shape"] == [21, 3], result["hands"]
        assert result["bad_frames"]["short"][0] == "TypeError"


def test_the_bench_code_runs_in_the_page(result: dict) -> None:
    """`wasmrt bench --pyodide`'s timing code, 3 runs: its table (no speed is asserted: timings are not tests)."""
    from wasmrt.bench import pyodide as bench

    rows = result["bench"]["results"]
    assert [(r["model"], r["pass"]) for r in rows] == [("face_detector", 1), ("face_detector", 2)]
    assert all(r["python_ms"] > 0 and r["js_ms"] > 0 for r in rows)
    assert "face_detector" in bench.table(result["bench"]).splitlines()[2]
