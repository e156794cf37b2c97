"""What Python in a page needs beside the JS package (checkout only): npm's pyodide (package.json's devDependency),
the micropip wheel its npm package lacks (fetched from PyPI into the user cache), and the pure-Python wasmrt wheel
(`wasmrt package --pure`). `wasmrt demo` serves them for demo/web/pyodide.html; the Pyodide tests use them too.

    python -m wasmrt.dev.pyodide_files fetch     # the micropip wheel (scripts/setup.sh)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from wasmrt import paths
from wasmrt.errors import WasmrtError

WHEELS_JSON = "wheels.json"  # {"micropip": file name, "wasmrt": file name}: what the page installs


def pyodide_dir() -> Path:
    """npm's pyodide: $WASMRT_PYODIDE_DIR, else the checkout's node_modules/pyodide."""
    env = os.environ.get("WASMRT_PYODIDE_DIR")
    if env:
        return Path(env)
    return paths.require_checkout("Pyodide's files") / "node_modules" / "pyodide"


def wheels_cache() -> Path:
    """Where fetch() keeps the micropip wheel: $WASMRT_PYODIDE_WHEELS, else the user cache's pyodide/."""
    env = os.environ.get("WASMRT_PYODIDE_WHEELS")
    return Path(env) if env else paths.cache_dir() / "pyodide"


def lock() -> dict:
    return json.loads((pyodide_dir() / "pyodide-lock.json").read_text())


def micropip_wheel() -> Path:
    return wheels_cache() / lock()["packages"]["micropip"]["file_name"]


def missing() -> str | None:
    """Why Python in a page cannot start here (None when it can)."""
    if not (pyodide_dir() / "pyodide.mjs").is_file():
        return f"npm's pyodide is missing ({pyodide_dir()}): run scripts/setup.sh (npm ci)"
    if not micropip_wheel().is_file():
        return f"{micropip_wheel()} is missing: python -m wasmrt.dev.pyodide_files fetch (scripts/setup.sh)"
    return None


def fetch() -> Path:
    """The micropip wheel of pyodide's lock file, from PyPI (pure Python: any platform's pip downloads it)."""
    if micropip_wheel().is_file():
        return micropip_wheel()
    info, pkg = lock()["info"], lock()["packages"]["micropip"]
    py = ".".join(info["python"].split(".")[:2])
    wheels_cache().mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                    "--python-version", py, "-d", str(wheels_cache()), f"micropip=={pkg['version']}"], check=True)
    return micropip_wheel()


def stage_wheels(dest: Path, wasmrt_wheel: Path | None = None, log=print) -> Path:
    """dest/ with the micropip wheel, the wasmrt wheel (built by `wasmrt package --pure` unless given) and
    wheels.json naming them: what demo/web/pyodide.html installs."""
    why = missing()
    if why:
        raise WasmrtError(why)
    dest.mkdir(parents=True, exist_ok=True)
    if wasmrt_wheel is None:
        from wasmrt.dev.wheels import build_pure_wheel

        for old in dest.glob("wasmrt-*.whl"):
            old.unlink()
        wasmrt_wheel = build_pure_wheel(dest, log)
    elif wasmrt_wheel.parent.resolve() != dest.resolve():
        shutil.copyfile(wasmrt_wheel, dest / wasmrt_wheel.name)
    shutil.copyfile(micropip_wheel(), dest / micropip_wheel().name)
    (dest / WHEELS_JSON).write_text(json.dumps({"micropip": micropip_wheel().name, "wasmrt": wasmrt_wheel.name}))
    return dest


if __name__ == "__main__":
    if sys.argv[1:] != ["fetch"]:
        sys.exit("usage: python -m wasmrt.dev.pyodide_files fetch")
    print(fetch())
