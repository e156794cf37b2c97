"""The package build's native step (the project's metadata is in pyproject.toml).

`pip install <checkout>`, `pip install <sdist>` and `pip wheel` of either compile the native library with this
machine's C compiler ($CC, else cc, clang or gcc) from the C sources in kernels_wasm/ (an sdist carries them, a
wheel does not) into wasmrt/engines/lib/libwasmrt.so, by the recipe `wasmrt build` uses (wasmrt/dev/native_build.py).
Without a compiler, or when it fails, the package still installs with its wasm engine: one line says so, and
wasmrt/engines/lib/libwasmrt.so.unavailable holds the reason, which `wasmrt.load(..., engine="native")` reports.
WASMRT_REQUIRE_NATIVE=1 makes that an error instead. Such a wheel is tagged for its platform (py3-none-<platform>).

`wasmrt package` (wasmrt/dev/package.py) builds the wheels it publishes differently: it stages what a platform wheel
carries beyond the Python sources (the native library it built, the pages and the JS binding `wasmrt demo` serves,
the demo's sample photos) in a folder laid out like the wasmrt package, names it in WASMRT_WHEEL_STAGE, and names the
wheel's platform tag in WASMRT_WHEEL_PLATFORM. An editable install (pip install -e .) builds nothing: it runs from
the checkout, whose native library `wasmrt build` makes.
"""

import importlib.util
import os
import shutil
import sys
from pathlib import Path
from types import ModuleType

from setuptools import setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


def dev_module(stem: str) -> ModuleType:
    """wasmrt/dev/<stem>.py, loaded by path: importing wasmrt would need its dependencies (numpy, ...)."""
    name = f"_wasmrt_{stem}"
    spec = importlib.util.spec_from_file_location(name, ROOT / "wasmrt" / "dev" / f"{stem}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


NATIVE = dev_module("native_build")
WEB = dev_module("web_files")
PURE = os.environ.get("WASMRT_WHEEL_PURE") == "1"


class BuildPy(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        lib_dir = Path(self.build_lib) / "wasmrt" / "engines" / "lib"
        if PURE:  # what runs in Pyodide: the Python sources, no engine files (the JS package brings its own)
            shutil.rmtree(lib_dir, ignore_errors=True)
            shutil.rmtree(Path(self.build_lib) / "wasmrt" / "engines" / "dist", ignore_errors=True)
            return
        stage = os.environ.get("WASMRT_WHEEL_STAGE")
        if stage:
            shutil.copytree(stage, Path(self.build_lib) / "wasmrt", dirs_exist_ok=True)
            (lib_dir / NATIVE.UNAVAILABLE).unlink(missing_ok=True)  # left there by an earlier source build
        else:
            NATIVE.build_for_install(ROOT, lib_dir)
            if (ROOT / "js_bindings").is_dir():  # the pages and the JS planner of the webgpu engine, as wheels have
                WEB.copy_web(ROOT, Path(self.build_lib) / "wasmrt" / "web")


class BdistWheel(bdist_wheel):
    def finalize_options(self) -> None:
        if PURE:
            super().finalize_options()
            return
        # a native library inside (or the reason there is none, for this platform): a platlib (non-pure) wheel
        self.distribution.has_ext_modules = lambda: True
        super().finalize_options()

    def get_tag(self) -> tuple[str, str, str]:
        if PURE:
            return ("py3", "none", "any")
        plat = os.environ.get("WASMRT_WHEEL_PLATFORM") or super().get_tag()[2]
        return ("py3", "none", plat)  # ctypes, not a CPython extension: any Python 3 on this platform


setup(
    cmdclass={"build_py": BuildPy, "bdist_wheel": BdistWheel},
    # never ./build/ itself: that is where the engine's own artefacts live
    options={"build": {"build_base": os.environ.get("WASMRT_BUILD_BASE", "build/setuptools")}},
)
