"""Generated documentation is up to date: docs/ops.md (tests/ops_reference.py). A stale page fails with the
command that rewrites it; tests/test_compatibility.py does the same for docs/models.md."""

from __future__ import annotations

import difflib
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def check_or_update(path: Path, text: str, test: str = __file__) -> None:
    """Compare a generated page with the committed one; WASMRT_UPDATE_DOCS=1 writes it instead. test: the test
    file that generates it (for the message)."""
    if os.environ.get("WASMRT_UPDATE_DOCS"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return
    old = path.read_text() if path.is_file() else ""
    if old != text:
        diff = "".join(difflib.unified_diff(old.splitlines(True), text.splitlines(True), str(path), "generated", n=1))
        raise AssertionError(f"{path.relative_to(ROOT)} is stale; rewrite it with WASMRT_UPDATE_DOCS=1 "
                             f"pytest {Path(test).relative_to(ROOT)}:\n{diff[:6000]}")


def test_ops_reference_is_up_to_date() -> None:
    import ops_reference

    check_or_update(ROOT / "docs" / "ops.md", ops_reference.render())


def test_one_version_everywhere() -> None:
    """pyproject, the Python package, the npm package and its JS export, and the CHANGELOG's latest entry agree."""
    import json
    import re
    import tomllib

    import wasmrt

    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    js = re.search(r'export const version = "([^"]+)"', (ROOT / "js_bindings" / "src" / "index.js").read_text())
    changelog = re.search(r"^## (\S+)", (ROOT / "CHANGELOG.md").read_text(), re.M)
    found = {"wasmrt.__version__": wasmrt.__version__,
             "js_bindings/package.json": json.loads((ROOT / "js_bindings" / "package.json").read_text())["version"],
             "js_bindings/src/index.js": js and js.group(1), "CHANGELOG.md": changelog and changelog.group(1)}
    assert all(v == version for v in found.values()), (version, found)
    assert (ROOT / "LICENSE").read_text().strip().startswith("Apache License")
