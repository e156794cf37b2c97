"""Platform-wheel hooks for setuptools (the project's metadata is in pyproject.toml).

`wasmrt package` (wasmrt/dev/package.py) stages what a platform wheel carries beyond the Python sources (the native
library, the pages and the JS binding `wasmrt demo` serves, the demo's sample photos) in a folder laid out like the
wasmrt package and names it in WASMRT_WHEEL_STAGE, with the wheel's platform tag in WASMRT_WHEEL_PLATFORM. Without
them (pip install -e ., a plain pip wheel) this builds the pure-Python package.
"""

import os
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_py import build_py


class BuildPy(build_py):
    def run(self) -> None:
        super().run()
        stage = os.environ.get("WASMRT_WHEEL_STAGE")
        if stage and not self.editable_mode:
            shutil.copytree(stage, Path(self.build_lib) / "wasmrt", dirs_exist_ok=True)


class BdistWheel(bdist_wheel):
    def finalize_options(self) -> None:
        if os.environ.get("WASMRT_WHEEL_PLATFORM"):  # a native library inside: a platlib (non-pure) wheel
            self.distribution.has_ext_modules = lambda: True
        super().finalize_options()

    def get_tag(self) -> tuple[str, str, str]:
        plat = os.environ.get("WASMRT_WHEEL_PLATFORM")
        return ("py3", "none", plat) if plat else super().get_tag()  # ctypes, not a CPython extension


setup(
    cmdclass={"build_py": BuildPy, "bdist_wheel": BdistWheel},
    # never ./build/ itself: that is where the engine's own artefacts live
    options={"build": {"build_base": os.environ.get("WASMRT_BUILD_BASE", "build/setuptools")}},
)
