"""Installs from source, as a user on a platform without a prebuilt wheel gets them: `pip install <checkout>` and
`pip install <sdist>` in fresh venvs outside the repository compile the native library with the machine's C compiler
(setup.py, by wasmrt/dev/native_build.py's recipe) and run a bundled model bit for bit like the checkout's engine
(which tests/test_wheel.py pins to the prebuilt wheel's); with no C compiler on PATH the install succeeds, says so in
one line, the native engine names the reason and the wasm engine runs. And engines never build: a checkout's native
engine only loads what `wasmrt build` made, and says what to run when that is missing or stale.

The venvs take wasmrt's dependencies from this environment (a .pth file naming its site-packages) and pip builds
without isolation, so nothing is downloaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import tarfile
from pathlib import Path

import numpy as np
import pytest

import wasmrt
from wasmrt import paths
from wasmrt.dev import native_build
from wasmrt.dev.package import build_sdist
from wasmrt.engines import native
from wasmrt.errors import WasmrtError
from wasmrt.zoo.bundle import convert_bundled
from wasmrt.zoo.models import BUNDLED

ROOT = Path(__file__).resolve().parent.parent
MODEL = "face_detector"
BUILT = "wasmrt: built the native engine"
NOT_BUILT = "wasmrt: the native engine was not built: "

# Runs in an installed venv: argv = model, input .npy, engine, variants (comma-separated, "" = the engine's choice),
# output .npz; prints where wasmrt came from, the variants that ran, or the error of the first load that failed.
RUN = """
import json, sys
import numpy as np
import wasmrt
from wasmrt.errors import WasmrtError
data, x = open(sys.argv[1], "rb").read(), np.load(sys.argv[2])
result, outs = {"wasmrt": wasmrt.__file__, "ran": []}, {}
for v in sys.argv[4].split(","):
    try:
        m = wasmrt.load(data, engine=sys.argv[3], variant=v or None)
    except WasmrtError as e:
        result["error"] = f"{type(e).__name__}: {e}"
        break
    outs.update({f"{v}/{k}": y for k, y in m.run({m.inputs[0].name: x}).items()})
    result["ran"].append(m.variant)
np.savez(sys.argv[5], **outs)
print(json.dumps(result))
"""


def _env(work: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "WASMRT_"))}
    return {**env, "WASMRT_CACHE_DIR": str(work / "cache"), **extra}


def _site_packages(venv: Path) -> Path:
    (sp,) = venv.glob("lib/python*/site-packages")
    return sp


def _install(venv: Path, target: Path, env: dict[str, str]) -> str:
    """A fresh venv (no pip of its own) that sees this environment's packages, with `target` pip-installed into it
    (verbose: the package build's own lines show); pip's output."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (_site_packages(venv) / "_test_deps.pth").write_text("".join(f"{d}\n" for d in sorted(deps)))
    r = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-v", "--no-deps", "--no-build-isolation",
                        "--ignore-installed", "--no-cache-dir", "--disable-pip-version-check", str(target)],
                       cwd=venv.parent, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
    return r.stdout + r.stderr


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The bundled model (converted now) and an input for it."""
    out = tmp_path_factory.mktemp("model")
    wrt = convert_bundled(BUNDLED[MODEL], out, log=lambda _m: None)
    spec = wasmrt.load(wrt, engine="ref").inputs[0]
    np.save(out / "x.npy", np.random.default_rng(5).uniform(-1, 1, spec.shape).astype(spec.dtype))
    return wrt, out / "x.npy"


@pytest.fixture(scope="module")
def sdist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_sdist(tmp_path_factory.mktemp("sdist"))


@pytest.fixture(scope="module")
def checkout_install(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    where = tmp_path_factory.mktemp("from_checkout")
    # the checkout is built in place: setuptools' build folder goes to the temporary folder, not the checkout
    return where / "venv", _install(where / "venv", ROOT, _env(where, WASMRT_BUILD_BASE=str(where / "setuptools")))


@pytest.fixture(scope="module")
def sdist_install(sdist: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    where = tmp_path_factory.mktemp("from_sdist")
    return where / "venv", _install(where / "venv", sdist, _env(where))


@pytest.fixture(scope="module")
def bare_install(sdist: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The sdist installed with no C compiler to be found: CC unset, PATH a folder without cc, clang or gcc."""
    where = tmp_path_factory.mktemp("no_compiler")
    (where / "bin").mkdir()
    env = _env(where, PATH=str(where / "bin"))
    env.pop("CC", None)
    return where / "venv", _install(where / "venv", sdist, env)


def _run_in(venv: Path, model: tuple[Path, Path], engine: str, variants: list[str], work: Path) \
        -> tuple[dict, dict[str, np.ndarray]]:
    work.mkdir(exist_ok=True)
    out = work / f"{engine}.npz"
    r = subprocess.run([str(venv / "bin" / "python"), "-c", RUN, str(model[0]), str(model[1]), engine,
                        ",".join(variants), str(out)], cwd=work, env=_env(work), capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    with np.load(out) as z:
        return json.loads(r.stdout), {k: z[k] for k in z.files}


def _checkout_outputs(model: tuple[Path, Path], engine: str, variants: list[str]) \
        -> tuple[list[str], dict[str, np.ndarray]]:
    data, x = model[0].read_bytes(), np.load(model[1])
    ran, outs = [], {}
    for v in variants:
        m = wasmrt.load(data, engine=engine, variant=v or None)
        outs.update({f"{v}/{k}": y for k, y in m.run({m.inputs[0].name: x}).items()})
        ran.append(m.variant)
    return ran, outs


def _native_variants(model: tuple[Path, Path]) -> list[str]:
    """The engine's own choice and every variant this CPU runs."""
    native.library()  # the checkout's library loads (built, and from these sources), or this says what to run
    ok = [""]
    for v in native.VARIANTS:
        try:
            wasmrt.load(model[0], engine="native", variant=v)
        except WasmrtError:
            continue
        ok.append(v)
    return ok


def _same_bytes(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> None:
    assert got.keys() == want.keys() and want
    for k, y in want.items():
        assert got[k].dtype == y.dtype and got[k].shape == y.shape and got[k].tobytes() == y.tobytes(), k


# -- the sdist ----------------------------------------------------------------------------------------------------


def test_sdist_carries_what_the_native_build_reads(sdist: Path) -> None:
    with tarfile.open(sdist) as t:
        names = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
    for arch in ("x86_64", "aarch64", "riscv64"):  # every CPU the recipe knows, and one it builds portably
        r = native_build.recipe(ROOT, arch)
        needed = {*r.sources, *(p for g in native_build.INPUT_GLOBS for p in ROOT.glob(g))}
        missing = sorted({p.relative_to(ROOT).as_posix() for p in needed} - names)
        assert not missing, (arch, missing)
    assert {"setup.py", "pyproject.toml", "MANIFEST.in", "wasmrt/dev/native_build.py",
            "wasmrt/engines/dist/wasmrt-simd.wasm"} <= names
    assert "js_bindings/src/webgpu/plan-cli.mjs" in names and "demo/web/index.html" in names  # wasmrt/web/
    assert not any(n.startswith(("tests/", "build/", "node_modules/", "js_bindings/dist/")) for n in names), names


# -- installs with a compiler ---------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("source", ["checkout", "sdist"])
def test_source_install_runs_like_the_checkout(source: str, request: pytest.FixtureRequest,
                                               model: tuple[Path, Path], tmp_path: Path) -> None:
    if native_build.find_compiler() is None:
        pytest.skip("needs a C compiler ($CC, cc, clang or gcc)")
    venv, log = request.getfixturevalue(f"{source}_install")
    built = [ln for ln in log.splitlines() if ln.strip().startswith("wasmrt: ")]
    assert len(built) == 1 and built[0].strip().startswith(BUILT), built  # one line, from the package build
    sp = _site_packages(venv)
    lib = sp / "wasmrt" / "engines" / "lib" / native_build.LIBRARY
    assert lib.read_bytes()[:4] == b"\x7fELF"
    assert not lib.with_name(native_build.UNAVAILABLE).exists()
    web = sp / "wasmrt" / "web"  # the pages `wasmrt demo` serves and the webgpu engine's planner, as wheels carry them
    assert (web / "js_bindings" / "src" / "webgpu" / "plan-cli.mjs").is_file() and (web / "demo" / "web" /
                                                                                    "index.html").is_file()
    assert not [p for p in sp.rglob("*") if p.suffix in (".c", ".h")] and not (sp / "kernels_wasm").exists()
    (wheel_info,) = sp.glob("wasmrt-*.dist-info/WHEEL")
    assert "Root-Is-Purelib: false" in wheel_info.read_text()
    assert "Tag: py3-none-linux_" in wheel_info.read_text(), wheel_info.read_text()  # a platform wheel, any Python 3

    variants = _native_variants(model)
    result, got = _run_in(venv, model, "native", variants, tmp_path / "work")
    assert Path(result["wasmrt"]).is_relative_to(sp), result  # the installed package, not the checkout
    assert "error" not in result, result
    ran, want = _checkout_outputs(model, "native", variants)
    assert result["ran"] == ran, (result["ran"], ran)
    _same_bytes(got, want)


# -- an install without a compiler ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_install_without_a_compiler_runs_wasm_and_says_why_not_native(bare_install: tuple[Path, str],
                                                                      model: tuple[Path, Path],
                                                                      tmp_path: Path) -> None:
    venv, log = bare_install
    lines = [ln.strip() for ln in log.splitlines() if ln.strip().startswith("wasmrt: ")]
    assert len(lines) == 1 and lines[0].startswith(NOT_BUILT + "no C compiler was found"), lines
    lib_dir = _site_packages(venv) / "wasmrt" / "engines" / "lib"
    assert not (lib_dir / native_build.LIBRARY).exists()
    reason = (lib_dir / native_build.UNAVAILABLE).read_text().splitlines()[0]
    assert reason.startswith("no C compiler was found ($CC unset, none of cc, clang, gcc on PATH)"), reason

    result, _ = _run_in(venv, model, "native", [""], tmp_path / "work")
    assert result["error"].startswith("WasmrtError: the native engine was not built when wasmrt was installed: "
                                      + reason), result
    assert 'engine="wasm"' in result["error"] and "install a C compiler" in result["error"], result
    result, got = _run_in(venv, model, "wasm", [""], tmp_path / "work")
    assert "error" not in result, result
    _same_bytes(got, _checkout_outputs(model, "wasm", [""])[1])

    # the CLI's automatic choice passes over the native engine, and says why
    r = subprocess.run([str(venv / "bin" / "wasmrt"), "run", str(model[0]), "--input", f"{_input_name(model)}="
                        f"{model[1]}", "-o", str(tmp_path / "out")], cwd=tmp_path, env=_env(tmp_path),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "on the wasm engine" in r.stdout and "no C compiler was found" in r.stdout, r.stdout


def _input_name(model: tuple[Path, Path]) -> str:
    return wasmrt.load(model[0], engine="ref").inputs[0].name


# -- the package build's step, without pip ------------------------------------------------------------------------


def test_a_failing_compiler_is_recorded_not_fatal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "bin" / "failing-cc"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'x.c:1:1: error: this compiler refuses' >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setenv("CC", f"{fake} -O2")
    lines: list[str] = []
    assert native_build.build_for_install(ROOT, tmp_path / "lib", log=lines.append) is None
    note = (tmp_path / "lib" / native_build.UNAVAILABLE).read_text()
    assert note.startswith(f"the C compiler failed: {fake} -O2: compiling ") and "(exit 3)" in note.splitlines()[0]
    assert "x.c:1:1: error: this compiler refuses" in note.splitlines()[0], note
    assert not (tmp_path / "lib" / native_build.LIBRARY).exists()
    assert lines == [f"{NOT_BUILT}{note.splitlines()[0]}; the wasm engine works (engine=\"wasm\")"], lines

    monkeypatch.setenv("CC", str(tmp_path / "bin" / "no-such-cc"))
    assert native_build.build_for_install(ROOT, tmp_path / "lib", log=lines.append) is None
    assert (tmp_path / "lib" / native_build.UNAVAILABLE).read_text().startswith(
        f"the C compiler CC={tmp_path / 'bin' / 'no-such-cc'} was not found")

    monkeypatch.setenv("WASMRT_REQUIRE_NATIVE", "1")  # a build that must have the native engine fails instead
    with pytest.raises(native_build.BuildError, match="WASMRT_REQUIRE_NATIVE=1 and the native engine cannot be built"):
        native_build.build_for_install(ROOT, tmp_path / "lib", log=lines.append)


def test_recipe_per_cpu_and_system() -> None:
    x86 = native_build.recipe(ROOT, "x86_64", system="linux")
    assert [p.name for p in x86.sources[-3:]] == ["scalar.c", "avx2.c", "avx512.c"]
    assert {"-DWRT_HAVE_AVX2", "-DWRT_HAVE_AVX512", "-DWRT_THREADS"} <= set(x86.compile_flags)
    assert "-Werror" not in x86.compile_flags and "-DWRT_OLD_GLIBC_SYMBOLS" not in x86.compile_flags
    arm = native_build.recipe(ROOT, "aarch64", system="darwin")  # no futexes there: single-threaded
    assert [p.name for p in arm.sources[-2:]] == ["scalar.c", "neon.c"] and "-DWRT_HAVE_NEON" in arm.compile_flags
    assert "-DWRT_THREADS" not in arm.compile_flags and "-pthread" not in arm.compile_flags
    other = native_build.recipe(ROOT, "riscv64", system="linux")
    assert other.sources[-1].name == "scalar.c" and not [f for f in other.compile_flags if f.startswith("-DWRT_HAVE")]
    wheel = native_build.recipe(ROOT, "aarch64", wheel=True, system="linux")
    assert {"-Werror", "-DWRT_OLD_GLIBC_SYMBOLS", "-march=armv8-a"} <= set(wheel.compile_flags)
    assert "-l:libpthread.so.0" in wheel.link_flags


# -- engines never build: what a checkout's native engine says ------------------------------------------------------


def _fake_checkout(root: Path) -> Path:
    """A tree with the layout a native build reads, its library and the record `wasmrt build` writes beside it."""
    for rel, text in (("kernels_wasm/engine/a.c", "int a;\n"), ("kernels_wasm/engine/a.h", "#define A\n"),
                      ("kernels_wasm/generated/scalar.c", "int s;\n"), ("kernels_wasm/include/k.h", "#define K\n")):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    lib = root / "build" / "native" / native_build.LIBRARY
    lib.parent.mkdir(parents=True)
    lib.write_bytes(b"\x7fELF")
    native_build.record_inputs(native_build.recipe(root, "riscv64"), lib)
    return lib


def test_checkout_engine_names_a_missing_or_stale_library(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lib = _fake_checkout(tmp_path)
    monkeypatch.setattr(paths, "checkout", lambda: tmp_path)
    monkeypatch.setattr(native, "library_path", lambda: lib)
    assert native.unavailable_reason() is None
    fix = f"run `wasmrt build --only native` in {tmp_path}"

    (tmp_path / "kernels_wasm/engine/a.c").write_text("int a2;\n")  # an edited source
    reason = native.unavailable_reason()
    assert reason == (f"the native library build/native/libwasmrt.so was built from other C sources "
                      f"(kernels_wasm/engine/a.c): {fix} (loading an engine never compiles C)"), reason
    (tmp_path / "kernels_wasm/engine/a.c").write_text("int a;\n")
    assert native.unavailable_reason() is None  # the same bytes again: up to date, whatever the file times say

    (tmp_path / "kernels_wasm/generated/wrt_new.h").write_text("\n")  # a new header, and an edited kernel file
    (tmp_path / "kernels_wasm/generated/scalar.c").write_text("int s2;\n")
    assert "(kernels_wasm/generated/scalar.c and 1 more)" in (native.unavailable_reason() or "")
    lib.with_name(native_build.INPUTS).unlink()
    assert "(no record of the sources it was built from)" in (native.unavailable_reason() or "")
    lib.unlink()
    assert native.unavailable_reason() == f"the native library build/native/libwasmrt.so is not built: {fix} " \
                                          "(loading an engine never compiles C)"
    monkeypatch.setattr(native, "_lib", None)
    with pytest.raises(WasmrtError, match="is not built: run `wasmrt build --only native`"):
        native.library()


def test_installed_engine_names_the_reason_it_was_not_built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lib = tmp_path / "wasmrt" / "engines" / "lib" / native_build.LIBRARY
    lib.parent.mkdir(parents=True)
    monkeypatch.setattr(paths, "checkout", lambda: None)
    monkeypatch.setattr(native, "library_path", lambda: lib)
    assert native.unavailable_reason() == (
        f"the native library is missing from the installed package ({lib}): reinstall wasmrt; the wasm engine runs "
        'without it (engine="wasm"); for the native engine install a C compiler (gcc or clang) and reinstall wasmrt '
        "from source (pip install --force-reinstall --no-cache-dir <checkout or sdist>)")
    lib.with_name(native_build.UNAVAILABLE).write_text("no C compiler was found (...)\n\ndetails\n")
    reason = native.unavailable_reason() or ""
    note = lib.with_name(native_build.UNAVAILABLE)
    assert reason.startswith("the native engine was not built when wasmrt was installed: no C compiler was found "
                             f"(...) (the compiler's words: {note}); the wasm engine runs"), reason
    note.write_text("no C compiler was found (...)\n")
    assert (native.unavailable_reason() or "").startswith("the native engine was not built when wasmrt was installed: "
                                                          "no C compiler was found (...); the wasm engine runs")
    lib.write_bytes(b"\x7fELF")
    assert native.unavailable_reason() is None
