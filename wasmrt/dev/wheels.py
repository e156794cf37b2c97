"""`pip wheel` of the checkout with setup.py's staging variables (wasmrt package's platform wheels), and the
pure-Python wheel for Pyodide (`wasmrt package --pure`, also staged by `wasmrt demo` and `wasmrt bench --pyodide`)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from wasmrt import paths
from wasmrt.errors import WasmrtError

Log = Callable[[str], None]


def pip_wheel(env: dict[str, str], out_dir: Path, what: str) -> Path:
    root = paths.require_checkout("wasmrt package")
    with tempfile.TemporaryDirectory() as tmp:
        r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check", "-q",
                            "-w", tmp, str(root)], env={**os.environ, **env}, capture_output=True, text=True)
        if r.returncode != 0:
            raise WasmrtError(f"pip wheel failed for {what}:\n{(r.stdout + r.stderr).strip()[-3000:]}")
        (built,) = Path(tmp).glob("*.whl")
        out_dir.mkdir(parents=True, exist_ok=True)
        dest = out_dir / built.name
        shutil.move(built, dest)
    return dest


def build_pure_wheel(out_dir: Path, log: Log = print) -> Path:
    """out_dir/wasmrt-<version>-py3-none-any.whl: the Python sources only (setup.py's WASMRT_WHEEL_PURE)."""
    work = paths.work_dir() / "wheel" / "pure"
    shutil.rmtree(work, ignore_errors=True)  # a fresh build tree: nothing left by a platform wheel's build
    log("wheel py3-none-any: pip wheel (pure Python, for Pyodide)")
    return pip_wheel({"WASMRT_WHEEL_PURE": "1", "WASMRT_BUILD_BASE": str(work / "setuptools")}, out_dir, "py3-none-any")
