"""Where wasmrt finds its own files and keeps its caches: in a source checkout, and installed.

A source checkout (kernels_wasm/engine/ and js_bindings/ beside this package) builds the engine from source into
build/ (`wasmrt build`), keeps converted models in models/ and serves the pages from demo/ and js_bindings/. An
installed package (a wheel, or `pip install` of a checkout or an sdist, which compiles the native library) carries
all of that inside the package: the native library in wasmrt/engines/lib/, the wasm modules in wasmrt/engines/dist/
(committed, so a checkout reads them there too), the pages and the JS binding in wasmrt/web/.

Caches (model files fetched from registry packages, bench peers) live in the user cache directory in both cases,
never inside the package: $WASMRT_CACHE_DIR, else $XDG_CACHE_HOME/wasmrt, else ~/.cache/wasmrt. Files a user asked
for (converted demo models, bench results) go to the checkout's models/ and build/, or, installed, to the cache too.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
SHIPPED_WASM = PACKAGE / "engines" / "dist"  # wasmrt-{scalar,simd,relaxed}.wasm, in the checkout too
SHIPPED_NATIVE = PACKAGE / "engines" / "lib" / "libwasmrt.so"  # installed packages (wheel or source install)
SHIPPED_WEB = PACKAGE / "web"  # installed packages: demo/web/ and js_bindings/{src,vision,hosts}/


def checkout() -> Path | None:
    """The repository root when running from a source checkout (an editable install counts), else None."""
    root = PACKAGE.parent
    if (root / "kernels_wasm" / "engine").is_dir() and (root / "js_bindings" / "src").is_dir():
        return root
    return None


def require_checkout(what: str) -> Path:
    from wasmrt.errors import WasmrtError

    root = checkout()
    if root is None:
        raise WasmrtError(f"{what} needs a source checkout of wasmrt; the installed package ships the engine "
                          "prebuilt (native library and wasm modules)")
    return root


def import_generators(what: str) -> None:
    """Make the kernel generators (kernels_wasm/, in the checkout, not installed with the package) importable."""
    root = str(require_checkout(what))
    if root not in sys.path:
        sys.path.insert(0, root)


def cache_dir() -> Path:
    """The user cache directory: $WASMRT_CACHE_DIR, else $XDG_CACHE_HOME/wasmrt, else ~/.cache/wasmrt."""
    env = os.environ.get("WASMRT_CACHE_DIR")
    if env:
        return Path(env).expanduser().resolve()
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache"  # the XDG spec ignores relative paths
    return base / "wasmrt"


def sources_dir() -> Path:
    """Registry packages and the model files taken from them (WASMRT_MODEL_CACHE overrides this one folder)."""
    env = os.environ.get("WASMRT_MODEL_CACHE")
    return Path(env).expanduser().resolve() if env else cache_dir() / "sources"


def models_dir() -> Path:
    """Converted bundled models (.wrt) that the demo serves: the checkout's models/, or in the cache."""
    root = checkout()
    return root / "models" if root else cache_dir() / "models"


def work_dir() -> Path:
    """Build products and results: the checkout's build/, or in the cache."""
    root = checkout()
    return root / "build" if root else cache_dir() / "work"


def web_root() -> Path:
    """The folder holding demo/web/ and js_bindings/ with the layout the pages' relative imports expect."""
    return checkout() or SHIPPED_WEB


def js_bindings(root: Path | None = None) -> Path:
    """The npm package's folder: of the checkout at `root`, else of this installation."""
    return (root or web_root()) / "js_bindings"


def wasm_dir(root: Path | None = None) -> Path:
    """The wasm modules, in the package (committed in a checkout, where `wasmrt build` refreshes them); those of the
    checkout at `root` when given."""
    return root / SHIPPED_WASM.relative_to(PACKAGE.parent) if root else SHIPPED_WASM


def native_library(root: Path | None = None) -> Path:
    """The native library: where `wasmrt build` leaves it in the checkout at `root` (default: this checkout), else
    the installed package's."""
    root = root or checkout()
    return root / "build" / "native" / "libwasmrt.so" if root else SHIPPED_NATIVE


def samples_dir() -> Path:
    """The demo's sample photos (copied from scikit-image): inside demo/web/ of a checkout, else in the cache."""
    root = checkout()
    return root / "demo" / "web" / "samples" if root else cache_dir() / "samples"
