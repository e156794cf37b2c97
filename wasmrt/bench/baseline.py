"""`wasmrt bench --baseline DIR`: an earlier build, DIR a checkout of it where `wasmrt build` ran, timed beside this
one. Its wasm modules run with its own JS binding (a binding expects the exports of the modules built with it, and
a newer one refuses older modules), its native library where DIR has one (the checkout layout of wasmrt.paths)."""

from __future__ import annotations

from pathlib import Path

from wasmrt import paths
from wasmrt.errors import InputError


def checkout(folder: str) -> Path:
    """DIR resolved, once it holds a JS binding and wasm modules; else an error saying what is missing."""
    root = Path(folder).resolve()
    if not root.is_dir():
        raise InputError(f"--baseline {folder}: no such folder")
    for need in (binding_module(root), paths.wasm_dir(root)):
        if not need.exists():
            raise InputError(f"--baseline {folder}: no {need.relative_to(root)}; give a checkout of the earlier "
                             "build (git worktree add DIR COMMIT) where `wasmrt build --only wasm` ran")
    return root


def binding_module(root: Path) -> Path:
    return paths.js_bindings(root) / "src" / "index.js"
