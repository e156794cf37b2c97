"""The mini-programs (demo/miniprogram): the real page and worker on emulated WeChat/Alipay hosts in Node
(tests/js/miniprogram_emulation.mjs), and the 2 MB package limit."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "js"))
import vision_fixtures

ROOT = Path(__file__).resolve().parent.parent
NODE = shutil.which("node")
LIMIT = 2 * 1024 * 1024


def _missing() -> str | None:
    if NODE is None:
        return "needs node"
    from wasmrt.dev.demo_server import missing_files

    return missing_files()


pytestmark = pytest.mark.skipif(_missing() is not None, reason=str(_missing()))


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("mp")
    vision_fixtures.write(out)
    return out


def package_sizes(app: Path) -> dict[str, int]:
    """Bytes per package: each subpackage root, and the main package (everything else)."""
    conf = json.loads((app / "app.json").read_text())
    subs = [s["root"] for s in conf.get("subpackages", conf.get("subPackages", []))]
    sizes = {"main": 0, **dict.fromkeys(subs, 0)}
    for f in app.rglob("*"):
        if f.is_file():
            top = f.relative_to(app).parts[0]
            sizes[top if top in subs else "main"] += f.stat().st_size
    return sizes


@pytest.fixture(scope="module")
def int8_models() -> None:
    from wasmrt.zoo import face_int8

    face_int8.make()  # a minute when missing; the files stay in models/


@pytest.mark.parametrize(("brotli", "int8"), [(False, False), (True, False), (False, True)])
def test_every_package_is_under_2_mb(tmp_path: Path, brotli: bool, int8: bool, request: pytest.FixtureRequest) -> None:
    if int8:
        request.getfixturevalue("int8_models")
    args = [NODE, "demo/miniprogram/build.mjs", "--target", str(tmp_path)] + (["--brotli"] if brotli else [])
    args += ["--int8"] if int8 else []
    subprocess.run(args, cwd=ROOT, check=True, capture_output=True, timeout=120)
    report = {}
    for platform in ("wechat", "alipay"):
        app = tmp_path / platform
        sizes = package_sizes(app)
        report[platform] = sizes
        assert all(v < LIMIT for v in sizes.values()), sizes
        wasm = sorted(p.relative_to(app).as_posix() for p in app.rglob("*.wasm*"))
        assert wasm and not any(p.startswith("workers/") for p in wasm), wasm  # .wasm outside the worker folder
    vision_fixtures.ARTIFACTS.mkdir(parents=True, exist_ok=True)
    name = f"miniprogram-sizes{'-br' if brotli else ''}{'-int8' if int8 else ''}.json"
    (vision_fixtures.ARTIFACTS / name).write_text(json.dumps(report, indent=1))


def test_packages_with_the_modules_built_for_the_face_models(tmp_path: Path) -> None:
    """build.mjs --wasm: the packages ship the modules `wasmrt build --for` made for the float face set (the
    mini-program's detector, landmark and attention models; at most 120,000 bytes each, tests/test_modules.py) and
    lib/models.js names the models they were built for."""
    from wasmrt.dev.modules import MANIFEST, TRYON_SETS, build_for

    models = TRYON_SETS["face"]
    folder = ROOT / "build" / "modules" / "face"
    build_for([ROOT / "models" / m for m in models], folder, ("simd", "scalar"))
    subprocess.run([NODE, "demo/miniprogram/build.mjs", "--target", str(tmp_path), "--wasm", str(folder)], cwd=ROOT,
                   check=True, capture_output=True, timeout=120)
    assert json.loads((folder / MANIFEST).read_text())["models"] == sorted(models)
    for platform in ("wechat", "alipay"):
        app = tmp_path / platform
        for v in ("simd", "scalar"):
            shipped = (app / "wasm" / f"wasmrt-{v}.wasm").read_bytes()
            assert shipped == (folder / f"wasmrt-{v}.wasm").read_bytes(), (platform, v)
        assert (app / "wasm" / "wasmrt-simd.wasm").stat().st_size <= 120_000
        text = (app / "lib" / "models.js").read_text()
        manifest = json.loads(text[text.index("{"):text.rindex("}") + 1])
        assert manifest["wasmBuiltFor"] == sorted(models), manifest
        assert all(v < LIMIT for v in package_sizes(app).values())


def test_miniprogram_pages_on_emulated_hosts(fixtures: Path, int8_models: None) -> None:
    env = {**os.environ, "VISION_FIXTURES": str(fixtures), "VISION_INT8": "1"}
    r = subprocess.run([NODE, "--test", "--test-reporter=spec", "tests/js/miniprogram_emulation.mjs"], cwd=ROOT,
                       env=env, capture_output=True, text=True, timeout=900)
    reports = [json.loads(line.split(" ", 1)[1]) for line in r.stdout.splitlines()
               if line.startswith("VISION_REPORT ")]
    vision_fixtures.ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (vision_fixtures.ARTIFACTS / "miniprogram-emulation.json").write_text(json.dumps(reports, indent=1))
    assert r.returncode == 0, f"{r.stdout[-10000:]}\n{r.stderr[-3000:]}"
    kinds = {e["kind"] for e in reports}
    assert {"miniprogram-astronaut", "miniprogram-clip", "miniprogram-fallback", "miniprogram-alipay",
            "miniprogram-live", "miniprogram-refine", "miniprogram-int8"} <= kinds
    _check_live_samples(fixtures)
    _check_refined_view(fixtures, next(e for e in reports if e["kind"] == "miniprogram-refine"))


def _check_refined_view(fixtures: Path, report: dict) -> None:
    """With the refine switch on, the canvas shows the chosen colour on the lips of python_ref's attention mesh;
    the view is kept as build/artifacts/miniprogram-refined.png."""
    import numpy as np
    from PIL import Image

    m = json.loads((fixtures / "vision.json").read_text())
    w, h = report["width"], report["height"]
    shown = np.fromfile(fixtures / "mp-refined.rgba", np.uint8).reshape(h, w, 4)
    Image.fromarray(shown).save(vision_fixtures.ARTIFACTS / "miniprogram-refined.png")
    astro = np.fromfile(fixtures / m["astronaut"]["file"], np.uint8).reshape(h, w, 4)
    mask = np.fromfile(fixtures / m["astronaut"]["refined"]["mask"], np.uint8).reshape(h, w)
    share = vision_fixtures.lipstick_share(shown, astro, mask, m["livePaint"]["color"])
    outside = np.abs(shown[..., :3].astype(int) - astro[..., :3]).max(axis=2)[_grow(mask.astype(bool), 6) == 0]
    summary = {**report, "lipstickShare": share, "changedOutsideLips": int((outside > 0).sum())}
    (vision_fixtures.ARTIFACTS / "miniprogram-refined.json").write_text(json.dumps(summary, indent=1))
    assert share >= 0.9 and summary["changedOutsideLips"] == 0, summary


def _grow(mask, r: int):
    """The mask dilated by r pixels (a square): the lips and the soft edge the painter blends into."""
    import numpy as np

    out = np.zeros_like(mask)
    for dy in range(-r, r + 1):
        for dx in range(-r, r + 1):
            out |= np.roll(np.roll(mask, dy, 0), dx, 1)
    return out


def _check_live_samples(fixtures: Path) -> None:
    """The page's canvas during the live camera loop shows the chosen colour on python_ref's lip mask in >= 95% of
    the samples."""
    import numpy as np

    m = json.loads((fixtures / "vision.json").read_text())
    n, size = m["clip"]["frames"], m["clip"]["size"]
    frames = np.fromfile(fixtures / m["clip"]["all"], np.uint8).reshape(n, size, size, 4)
    masks = np.fromfile(fixtures / m["clip"]["masks"], np.uint8).reshape(n, size, size)
    shares = []
    for s in json.loads((fixtures / "mp-live" / "samples.json").read_text()):
        rgba = np.fromfile(fixtures / "mp-live" / s["file"], np.uint8).reshape(s["height"], s["width"], 4)
        k = vision_fixtures.nearest_frame(rgba, frames)
        shares.append(vision_fixtures.lipstick_share(rgba, frames[k], masks[k], m["livePaint"]["color"]))
    seen = float(np.mean([s >= 0.6 for s in shares]))
    summary = {"frames": len(shares), "withLipstick": seen, "shares": [round(s, 3) for s in shares]}
    (vision_fixtures.ARTIFACTS / "miniprogram-live.json").write_text(json.dumps(summary, indent=1))
    assert seen >= 0.95, summary
