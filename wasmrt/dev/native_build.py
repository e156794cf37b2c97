"""The native library's recipe: which C sources, defines and flags make libwasmrt.so for a CPU, and how they are
compiled. One recipe for the two builds that make it:

- `wasmrt build` (wasmrt/dev/build.py): build/native/libwasmrt.so in a checkout, and the libraries the platform
  wheels ship (`wheel=True`: glibc 2.17 pthread symbols, baseline ARMv8-A for aarch64, warnings as errors).
- the package build (setup.py), when pip installs from a checkout or an sdist: wasmrt/engines/lib/libwasmrt.so
  with the C compiler of the machine ($CC, else cc, clang or gcc). Without one, or when it fails, the package still
  installs: the reason is written to libwasmrt.so.unavailable instead, which the native engine reports.

x86-64 gets the scalar, AVX2 and AVX-512 kernels (picked at run time from the CPU), aarch64 the scalar and NEON
ones, any other CPU the scalar kernels. The thread pool (futexes) is built on Linux only; elsewhere the library runs
single-threaded.

Standard library only: setup.py loads this file by path, before numpy or anything else of wasmrt's is installed.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

LIBRARY = "libwasmrt.so"
UNAVAILABLE = LIBRARY + ".unavailable"  # beside where the library would be: why the package build made none
INPUTS = LIBRARY + ".inputs.json"  # beside a checkout's library: the sources it was built from (see record_inputs)

CFLAGS = ("-std=c11", "-O3", "-Wall", "-Wextra", "-Werror", "-ffp-contract=off", "-fno-math-errno")
NATIVE_THREADS = ("-DWRT_THREADS", "-pthread")  # native builds run parallel regions on a pthread pool
# the shared libraries (in the manylinux_2_17 wheels) bind to pthread symbols every glibc since 2.17 has
SHARED_THREADS = (*NATIVE_THREADS, "-DWRT_OLD_GLIBC_SYMBOLS")
SHARED_THREAD_LIBS = ("-Wl,--no-as-needed", "-l:libpthread.so.0", "-Wl,--as-needed")

KERNEL_TARGETS = {"x86_64": ("scalar", "avx2", "avx512"), "aarch64": ("scalar", "neon")}  # other CPUs: scalar
WHEEL_ARCH_FLAGS = {"aarch64": ("-march=armv8-a",)}  # NEON is part of it; the kernels use nothing newer

ENGINE = Path("kernels_wasm", "engine")
GENERATED = Path("kernels_wasm", "generated")
INCLUDE = Path("kernels_wasm", "include")
PROVISIONAL = ENGINE / "test" / "provisional_scalar.c"  # the scalar table before kernels_wasm/gen has made one
# every file a native build reads besides its kernels (a new engine source or header shows up in these)
INPUT_GLOBS = (f"{ENGINE}/*.c", f"{ENGINE}/*.h", f"{ENGINE}/generated/*.h", f"{INCLUDE}/*.h", f"{GENERATED}/*.h")
COMPILERS = ("cc", "clang", "gcc")


class BuildError(Exception):
    """A compile or link step failed: the message says which, in one line; `output` holds the compiler's words."""

    def __init__(self, message: str, output: str = "") -> None:
        super().__init__(message)
        self.output = output


def machine() -> str:
    """This CPU's architecture in the recipe's names (x86_64, aarch64, or what the platform calls it)."""
    m = platform.machine().lower()
    return {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64"}.get(m, m)


@dataclass(frozen=True)
class Recipe:
    root: Path  # the source tree: a checkout or an unpacked sdist
    arch: str
    sources: tuple[Path, ...]
    compile_flags: tuple[str, ...]
    link_flags: tuple[str, ...]
    notes: tuple[str, ...]  # kernels left out, stand-ins used


def kernels(root: Path, arch: str) -> tuple[list[Path], list[str], list[str]]:
    """(kernel sources, their -D defines, notes) for a CPU: a target whose generated file is missing is left out
    (the scalar one is replaced by the provisional table)."""
    srcs, defs, notes = [], [], []
    for t in KERNEL_TARGETS.get(arch, ("scalar",)):
        gen = root / GENERATED / f"{t}.c"
        if gen.is_file():
            srcs.append(gen)
            if t != "scalar":
                defs.append(f"-DWRT_HAVE_{t.upper()}")
        elif t == "scalar":
            srcs.append(root / PROVISIONAL)
            notes.append(f"{GENERATED}/scalar.c is missing: using the provisional scalar table")
        else:
            notes.append(f"{GENERATED}/{t}.c is missing: the {t} path is not built")
    return srcs, defs, notes


def recipe(root: Path, arch: str | None = None, *, wheel: bool = False, system: str | None = None) -> Recipe:
    """The library for `arch` (default: this machine's) on `system` (default: this one's sys.platform).
    wheel=True: the libraries the platform wheels ship (manylinux); else a library for this machine, built with
    whatever compiler it has (warnings are not errors there: a newer compiler may warn about new things)."""
    arch = arch or machine()
    system = system or sys.platform
    ksrcs, kdefs, notes = kernels(root, arch)
    if wheel:
        cflags, threads, libs = CFLAGS, SHARED_THREADS, SHARED_THREAD_LIBS
    else:
        cflags, libs = tuple(f for f in CFLAGS if f != "-Werror"), ()
        threads = NATIVE_THREADS if system.startswith("linux") else ()
    flags = (*cflags, *threads, *(WHEEL_ARCH_FLAGS.get(arch, ()) if wheel else ()), "-fPIC", "-fvisibility=hidden",
             *kdefs, "-I", str(root / INCLUDE))
    return Recipe(root, arch, (*sorted((root / ENGINE).glob("*.c")), *ksrcs), flags, ("-lm", *libs), tuple(notes))


def _run(cmd: Sequence[str], what: str) -> None:
    r = subprocess.run(list(cmd), capture_output=True, text=True)
    if r.returncode != 0:
        output = (r.stderr + r.stdout).strip()
        first = next((ln for ln in output.splitlines() if "error" in ln), output.splitlines()[0] if output else "")
        raise BuildError(f"{what} failed (exit {r.returncode}): {first.strip()}",
                         f"$ {shlex.join(cmd)}\n{output}")


def compile_library(r: Recipe, cc: Sequence[str], out: Path, jobs: int | None = None) -> None:
    """Compile every source to an object (in parallel, the largest first), then link them into `out`."""
    with tempfile.TemporaryDirectory() as d:
        objs = [Path(d) / f"{i}_{src.stem}.o" for i, src in enumerate(r.sources)]
        cmds = [[*cc, *r.compile_flags, "-c", str(src), "-o", str(obj)] for src, obj in zip(r.sources, objs,
                                                                                              strict=True)]
        order = sorted(range(len(cmds)), key=lambda i: -r.sources[i].stat().st_size)
        with ThreadPoolExecutor(max(1, jobs or os.cpu_count() or 1)) as pool:
            for _ in pool.map(lambda i: _run(cmds[i], f"compiling {r.sources[i].name}"), order):
                pass  # the first failure raises here
        _run([*cc, *r.compile_flags, "-shared", *map(str, objs), *r.link_flags, "-o", str(out)], f"linking {out.name}")


def find_compiler() -> list[str] | None:
    """The command of this machine's C compiler: $CC (which may carry arguments), else cc, clang or gcc on PATH."""
    env = os.environ.get("CC", "").strip()
    if env:
        argv = shlex.split(env)
        return argv if shutil.which(argv[0]) else None
    for name in COMPILERS:
        if shutil.which(name):
            return [name]
    return None


def record_inputs(r: Recipe, out: Path) -> Path:
    """Beside `out`: the globs of the files a build reads and the SHA-256 of each file it read, so the native engine
    can tell a checkout's library built from other sources (wasmrt/engines/native.py reads it)."""
    files = {*r.sources, *(p for g in INPUT_GLOBS for p in r.root.glob(g))}
    record = {"globs": list(INPUT_GLOBS),
              "files": {p.relative_to(r.root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
                        for p in sorted(files)}}
    path = out.with_name(INPUTS)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")  # a reader never sees half a file
    tmp.write_text(json.dumps(record, indent=1) + "\n")
    tmp.replace(path)
    return path


def build_for_install(root: Path, lib_dir: Path, log: Callable[[str], None] = print) -> Path | None:
    """The package build's step: lib_dir/libwasmrt.so compiled with this machine's compiler, or, without a compiler
    or when it fails, lib_dir/libwasmrt.so.unavailable saying why (None then). WASMRT_REQUIRE_NATIVE=1 turns that
    case into an error, for builds that must have the native engine."""
    out, note = lib_dir / LIBRARY, lib_dir / UNAVAILABLE
    lib_dir.mkdir(parents=True, exist_ok=True)
    for stale in (out, note):
        stale.unlink(missing_ok=True)
    cc, details = find_compiler(), ""
    if cc is None:
        cc_env = os.environ.get("CC", "").strip()
        reason = (f"the C compiler CC={cc_env} was not found" if cc_env else
                  f"no C compiler was found ($CC unset, none of {', '.join(COMPILERS)} on PATH)")
    else:
        r = recipe(root)
        try:
            compile_library(r, cc, out)
        except (BuildError, OSError) as e:
            out.unlink(missing_ok=True)
            reason, details = f"the C compiler failed: {shlex.join(cc)}: {e}", getattr(e, "output", "")
        else:
            kernels_built = ", ".join(s.stem for s in r.sources if s.parent == root / GENERATED) or "provisional"
            log(f"wasmrt: built the native engine ({r.arch}, kernels {kernels_built}) with {' '.join(cc)}")
            return out
    if os.environ.get("WASMRT_REQUIRE_NATIVE") == "1":
        raise BuildError(f"WASMRT_REQUIRE_NATIVE=1 and the native engine cannot be built: {reason}")
    note.write_text(f"{reason}\n" + (f"\n{details}\n" if details else ""))  # the first line is the reason
    log(f"wasmrt: the native engine was not built: {reason}; the wasm engine works (engine=\"wasm\")")
    return None
