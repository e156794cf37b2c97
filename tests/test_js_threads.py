"""Threads in headless Chromium (tests/js/threads_browser.mjs): a cross-origin-isolated page runs the threaded build
on 2 threads, on the page and through the Worker API, with the same bytes as one thread; the same page without
isolation falls back to one thread and says why. (Node: tests/js/threads.test.mjs, through test_js_node.py.)"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "js"))
import js_fixtures as support

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def test_threads_in_chromium(tmp_path: Path) -> None:
    why = support.missing_prerequisites()
    if why:
        pytest.skip(why)
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed: run scripts/setup.sh as root")
    out = tmp_path / "threads.json"
    r = subprocess.run([str(support.NODE22), str(support.ROOT / "tests" / "js" / "threads_browser.mjs"),
                        str(support.ROOT), str(support.ROOT / "models" / "face_landmark.wrt"), str(out), CHROMIUM],
                       cwd=support.ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads(out.read_text())
    iso, plain = res["iso"], res["plain"]
    assert "error" not in iso and "error" not in plain, res
    assert iso["isolated"] is True and plain["isolated"] is False
    assert iso["threads"] == 2 and iso["identical"], iso
    assert iso["workerThreads"] == 2 and iso["workerIdentical"], iso
    assert plain["threads"] == 1 and plain["identical"], plain
    assert "not cross-origin isolated" in plain["reason"] and "Cross-Origin-Opener-Policy" in plain["reason"]
    assert plain["workerThreads"] == 1 and plain["workerIdentical"], plain
    assert not iso["pageErrors"] and not plain["pageErrors"], res
