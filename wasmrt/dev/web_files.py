"""The pages and JS binding files an installed package carries (wasmrt/web/): what `wasmrt demo` serves and what the
webgpu engine runs its planner from (js_bindings/src/webgpu/plan-cli.mjs, under Node). Standard library only: setup.py
loads this file by path for source installs, and `wasmrt package` stages the same files for its wheels."""

from __future__ import annotations

import shutil
from pathlib import Path

WEB_JS = ("src", "vision", "hosts")  # the JS binding's folders the pages import
IGNORE = shutil.ignore_patterns("samples", "*.tmp")  # the sample photos come from scikit-image, not the checkout


def copy_web(root: Path, dest: Path) -> None:
    """root/demo/web/ and root/js_bindings/{src,vision,hosts}/ into dest/ (dest is the package's web/ folder)."""
    shutil.copytree(root / "demo" / "web", dest / "demo" / "web", ignore=IGNORE, dirs_exist_ok=True)
    for d in WEB_JS:
        shutil.copytree(root / "js_bindings" / d, dest / "js_bindings" / d, ignore=IGNORE, dirs_exist_ok=True)
    # Node reads these .js files as ES modules: the webgpu engine runs src/webgpu/plan-cli.mjs (its planner)
    (dest / "js_bindings" / "package.json").write_text('{"type": "module"}\n', encoding="utf-8")
