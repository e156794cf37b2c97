"""wasmrt.vision (js_bindings/vision) on Node against python_ref.vision: tests/js/vision_parity.mjs."""

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

pytestmark = pytest.mark.skipif(
    NODE is None or not (ROOT / "models" / "face_landmark.wrt").exists(),
    reason="needs node and the bundled models (python -m wasmrt.zoo.bundle)")


@pytest.fixture(scope="session")
def vision_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("vision")
    vision_fixtures.write(out)
    return out


def read_reports(stdout: str, prefix: str = "VISION_REPORT ") -> list[dict]:
    return [json.loads(line[len(prefix):]) for line in stdout.splitlines() if line.startswith(prefix)]


def test_js_vision_matches_python(vision_dir: Path) -> None:
    env = {**os.environ, "VISION_FIXTURES": str(vision_dir), "WASMRT_PYTHON": sys.executable}
    r = subprocess.run([NODE, "--test", "--test-reporter=spec", "tests/js/vision_parity.mjs"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=900)
    reports = read_reports(r.stdout)
    vision_fixtures.ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (vision_fixtures.ARTIFACTS / "vision-node.json").write_text(json.dumps(reports, indent=1))
    assert r.returncode == 0, f"{r.stdout[-8000:]}\n{r.stderr[-3000:]}"
    kinds = {e["kind"] for e in reports}
    assert {"clip-bytes", "paint-parity", "bridge-astronaut", "bridge-tracking"} <= kinds


def test_vision_and_miniprogram_types_check() -> None:
    """js_bindings/vision/index.d.ts and hosts/miniprogram.d.ts describe the documented usage (tsc --noEmit)."""
    tsc = ROOT / "node_modules" / ".bin" / "tsc"
    if not tsc.exists():
        pytest.skip("typescript is not installed (npm ci)")
    r = subprocess.run([str(tsc), "-p", "tests/js/vision-tsconfig.json"], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
