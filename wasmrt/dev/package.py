"""`wasmrt package`: what users install, built from a source checkout into dist/.

    wasmrt package [--wheels x86_64,aarch64] [--pure] [--no-sdist] [--no-npm] [--modules-for A.wrt ...] [-o dist]

- dist/wasmrt-<version>-py3-none-manylinux_2_<N>_<arch>.whl for x86-64 and aarch64: the wasmrt and python_ref
  packages, the native library built for that architecture (x86-64: scalar + AVX2 + AVX-512 kernels picked at run
  time; aarch64: cross-built, baseline ARMv8-A with the NEON kernels), the three wasm modules, and the pages, JS
  binding and sample photos `wasmrt demo` serves. N is the newest glibc symbol version the library references, so
  the manylinux tag is what the library really needs.
- with --pure, dist/wasmrt-<version>-py3-none-any.whl: the pure-Python wheel for Pyodide (micropip), the Python
  sources only and no dependencies there: wasmrt.web runs models on the JS package (docs/pyodide.md).
- dist/wasmrt-<version>.tar.gz: the sdist, for every other platform: the Python sources and the C sources that
  `pip install` compiles into the native library with the machine's C compiler (setup.py; without one the package
  installs with the wasm engine only, and the native engine says why).
- dist/wasmrt-<version>.tgz: `npm pack` of js_bindings/ with the built wasm modules and the models
  wasmrt/vision loads by default (NPM_MODELS: the face models, the lite hand models, both selfie models); with
  --modules-for, also dist/modules/: wasm modules built for those models (`wasmrt build --for`) and their
  manifest, for `init({wasmPaths, modules})` (docs/hosting.md).

The wheels are built by pip (`pip wheel`, setuptools from the registry unless cached) through setup.py's hooks;
the sdist by setuptools' build backend in this environment.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from wasmrt import paths
from wasmrt.dev import native_build
from wasmrt.dev.web_files import copy_web
from wasmrt.dev.wheels import build_pure_wheel, pip_wheel
from wasmrt.errors import WasmrtError

ARCHES = ("x86_64", "aarch64")
# what wasmrt/vision loads by default: FaceMesh (attention mesh for refine), HandTracker (the lite models: 3.9 MB
# against 7.2 MB for the full ones), SelfieSegmenter (both, picked by frame shape)
NPM_MODELS = ("face_detector", "face_landmark", "face_landmark_attention", "palm_detection_lite", "hand_landmark_lite",
              "selfie_segmentation", "selfie_segmentation_landscape")

Log = Callable[[str], None]


def native_library(arch: str) -> Path:
    from wasmrt.dev import build

    if arch == "x86_64":
        if native_build.machine() != "x86_64":
            raise WasmrtError(f"the x86-64 wheel's library is built on x86-64 only (this is {native_build.machine()})")
        return build.build_native().path
    if arch == "aarch64":
        return build.build_aarch64_library().path
    raise WasmrtError(f"unknown architecture {arch!r}; choose from {', '.join(ARCHES)}")


def manylinux_tag(lib: Path, arch: str) -> str:
    """manylinux_2_N_<arch>, N = the newest GLIBC_2.N symbol version the library references."""
    versions = [int(m) for m in re.findall(rb"GLIBC_2\.(\d+)", lib.read_bytes())]
    if not versions:
        raise WasmrtError(f"{lib}: no glibc symbol versions found: is it a Linux shared library?")
    return f"manylinux_2_{max(versions)}_{arch}"


def stage_web(dest: Path) -> None:
    """dest/demo/web/ (with the sample photos) and dest/js_bindings/{src,vision,hosts}/, as `wasmrt demo` serves."""
    from wasmrt.dev.demo_server import copy_samples

    copy_web(paths.require_checkout("wasmrt package"), dest)
    if len(copy_samples(dest / "demo" / "web" / "samples")) < 3:
        raise WasmrtError("the demo's sample photos come from scikit-image: pip install scikit-image")


def build_wheel(arch: str, out_dir: Path, log: Log = print) -> Path:
    paths.require_checkout("wasmrt package")
    lib = native_library(arch)
    plat = manylinux_tag(lib, arch)
    work = paths.work_dir() / "wheel" / arch
    shutil.rmtree(work, ignore_errors=True)
    stage = work / "stage"
    (stage / "engines" / "lib").mkdir(parents=True)
    shutil.copyfile(lib, stage / "engines" / "lib" / "libwasmrt.so")
    stage_web(stage / "web")
    env = {"WASMRT_WHEEL_STAGE": str(stage), "WASMRT_WHEEL_PLATFORM": plat,
           "WASMRT_BUILD_BASE": str(work / "setuptools")}
    log(f"wheel {plat}: pip wheel (native library {lib.stat().st_size:,} bytes)")
    return pip_wheel(env, out_dir, plat)


def build_sdist(out_dir: Path) -> Path:
    """out_dir/wasmrt-<version>.tar.gz, by setuptools' build backend (PEP 517) in this environment; MANIFEST.in adds
    the C sources setup.py compiles."""
    root = paths.require_checkout("wasmrt package")
    out_dir.mkdir(parents=True, exist_ok=True)
    # setuptools keeps every file an earlier build's SOURCES.txt listed: start without one, so that the sdist holds
    # what MANIFEST.in and the package data say now
    (root / "wasmrt.egg-info" / "SOURCES.txt").unlink(missing_ok=True)
    code = "import sys; from setuptools import build_meta; print(build_meta.build_sdist(sys.argv[1]))"
    r = subprocess.run([sys.executable, "-c", code, str(out_dir.resolve())], cwd=root, capture_output=True, text=True)
    if r.returncode != 0:
        raise WasmrtError(f"building the sdist failed:\n{(r.stdout + r.stderr).strip()[-3000:]}")
    return out_dir / r.stdout.strip().splitlines()[-1]


def npm_models(log: Log = print) -> Path:
    """js_bindings/models/ with the models of NPM_MODELS (and nothing else), converted when missing or older than
    models/."""
    from wasmrt.zoo.bundle import convert_bundled
    from wasmrt.zoo.models import BUNDLED

    root = paths.require_checkout("wasmrt package")
    dest = root / "js_bindings" / "models"
    dest.mkdir(exist_ok=True)
    wanted = {BUNDLED[name].wrt for name in NPM_MODELS}
    for stale in dest.iterdir():  # package.json ships the whole folder: exactly NPM_MODELS
        if stale.name not in wanted:
            stale.unlink()
    for name in NPM_MODELS:
        src = paths.models_dir() / BUNDLED[name].wrt
        if not src.is_file():
            convert_bundled(BUNDLED[name], paths.models_dir(), log=log)
        target = dest / src.name
        if not target.is_file() or target.read_bytes() != src.read_bytes():
            shutil.copyfile(src, target)
    return dest


def npm_pack(out_dir: Path, log: Log = print, modules_for: list[Path] | None = None) -> Path:
    from wasmrt.dev import build, modules

    root = paths.require_checkout("wasmrt package")
    for variant in build.WASM_VARIANTS:
        build.build_wasm(variant)
    shipped = root / "js_bindings" / "dist" / "modules"  # only what this pack asked for
    shutil.rmtree(shipped, ignore_errors=True)
    if modules_for:
        modules.build_for(modules_for, shipped)
    npm_models(log)
    npm = shutil.which("npm")
    if npm is None:
        raise WasmrtError("npm is needed to pack the npm package (apt install npm)")
    out_dir.mkdir(parents=True, exist_ok=True)
    r = subprocess.run([npm, "pack", "--silent", "--pack-destination", str(out_dir.resolve())],
                       cwd=root / "js_bindings", capture_output=True, text=True)
    if r.returncode != 0:
        raise WasmrtError(f"npm pack failed:\n{r.stderr.strip()[-2000:]}")
    return out_dir / r.stdout.strip().splitlines()[-1]


def package(arches: list[str], npm: bool, out_dir: Path, log: Log = print, sdist: bool = True,
            modules_for: list[Path] | None = None, pure: bool = False) -> list[Path]:
    built = [build_wheel(a, out_dir, log) for a in arches]
    if pure:
        built.append(build_pure_wheel(out_dir, log))
    if sdist:
        built.append(build_sdist(out_dir))
    if npm:
        built.append(npm_pack(out_dir, log, modules_for))
    for p in built:
        log(f"{p.stat().st_size:>12,d} bytes  {p}")
    return built


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--wheels", default=",".join(ARCHES),
                   help=f"architectures of the platform wheels, comma-separated (default: {','.join(ARCHES)}; "
                        "'' for none)")
    p.add_argument("--pure", action="store_true",
                   help="also build the pure-Python wheel (py3-none-any) that micropip installs in Pyodide")
    p.add_argument("--no-sdist", action="store_true", help="skip the sdist")
    p.add_argument("--no-npm", action="store_true", help="skip the npm tarball")
    p.add_argument("--modules-for", nargs="+", metavar="MODEL.wrt", default=None,
                   help="also ship, in the npm tarball's dist/modules/, wasm modules holding only the ops these models "
                        "need (wasmrt build --for) and their manifest")
    p.add_argument("-o", "--output", default=None, help="output folder (default: dist/ in the checkout)")


def run(args: argparse.Namespace) -> int:
    arches = [a.strip() for a in args.wheels.split(",") if a.strip()]
    bad = [a for a in arches if a not in ARCHES]
    if bad:
        raise WasmrtError(f"unknown architecture {bad[0]!r}; choose from {', '.join(ARCHES)}")
    root = paths.require_checkout("wasmrt package")
    package(arches, not args.no_npm, Path(args.output) if args.output else root / "dist", sdist=not args.no_sdist,
            pure=args.pure, modules_for=[Path(m) for m in args.modules_for] if args.modules_for else None)
    return 0
