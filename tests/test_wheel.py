"""The wheels as a user gets them. `wasmrt package` builds both platform wheels; the x86-64 one is installed into a
fresh venv in a temporary folder outside the repository, where convert, inspect and run on every engine give the
repository's outputs bit for bit, `wasmrt bench` and `wasmrt demo` work, and nothing is written into site-packages;
the aarch64 wheel's library runs a real model under qemu. (pip takes the dependencies from the registry, through
its cache.)"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path

import numpy as np
import pytest

from wasmrt import paths
from wasmrt.dev.package import ARCHES, build_wheel
from wasmrt.zoo import models

ROOT = Path(__file__).resolve().parent.parent
MODEL = "face_detection_short_range.tflite"
ELF_MACHINE = {"x86_64": 62, "aarch64": 183}


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("dist")
    return {arch: build_wheel(arch, out, log=lambda _m: None) for arch in ARCHES}


@pytest.fixture(scope="module")
def venv(wheels: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, timeout=120)
    r = subprocess.run([str(where / "bin" / "pip"), "install", "-q", "--disable-pip-version-check",
                        str(wheels["x86_64"])], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return where


def _site_packages(venv: Path) -> Path:
    (sp,) = venv.glob("lib/python*/site-packages")
    return sp


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}


def _env(work: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "WASMRT_"))}
    return {**env, "WASMRT_CACHE_DIR": str(work / "cache"), **extra}


def test_wheels_hold_the_engine_and_only_our_packages(wheels: dict[str, Path]) -> None:
    for arch, whl in wheels.items():
        assert whl.name.startswith("wasmrt-") and whl.name.endswith(f"-py3-none-manylinux_2_17_{arch}.whl"), whl
        with zipfile.ZipFile(whl) as z:
            names = z.namelist()
            tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
            assert tops == {"wasmrt", "python_ref"}, tops  # no top-level `build`, no kernels_wasm
            assert not [n for n in names if n.endswith((".c", ".h", ".unavailable"))], "C sources in a wheel"
            lib = z.read("wasmrt/engines/lib/libwasmrt.so")
            assert lib[:4] == b"\x7fELF" and int.from_bytes(lib[18:20], "little") == ELF_MACHINE[arch], arch
            for v in ("scalar", "simd", "relaxed"):
                assert z.read(f"wasmrt/engines/dist/wasmrt-{v}.wasm")[:4] == b"\0asm"
            for f in ("web/demo/web/index.html", "web/demo/web/tryon.html", "web/demo/web/speed.html",
                      "web/demo/web/samples/astronaut.png", "web/js_bindings/src/index.js",
                      "web/js_bindings/vision/index.js", "web/js_bindings/package.json",
                      "web/js_bindings/src/webgpu/kernels.js", "web/js_bindings/src/webgpu/plan-cli.mjs"):
                assert f"wasmrt/{f}" in names, f
            meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
            assert "Requires-Dist: wasmtime" in z.read(meta).decode()
            lic = next(n for n in names if n.endswith(".dist-info/licenses/LICENSE"))
            assert z.read(lic) == (ROOT / "LICENSE").read_bytes()
        print(f"{whl.name}: {whl.stat().st_size:,} bytes")


def test_installed_wheel_converts_and_runs_like_the_repository(venv: Path, tmp_path: Path) -> None:
    import wasmrt
    from wasmrt.compile.converter import convert
    from wasmrt.zoo.models import preset_for

    work = tmp_path / "work"
    work.mkdir()
    shutil.copyfile(models.model_path(MODEL), work / MODEL)
    x = np.random.default_rng(3).uniform(-1, 1, (1, 128, 128, 3)).astype(np.float32)
    np.save(work / "x.npy", x)
    before = _snapshot(_site_packages(venv))
    bin_ = venv / "bin"

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        r = subprocess.run([str(bin_ / "wasmrt"), *args], cwd=work, env=_env(work), capture_output=True, text=True,
                           timeout=300)
        assert r.returncode == 0, f"wasmrt {' '.join(args)}:\n{r.stdout}\n{r.stderr}"
        return r

    cli("convert", MODEL, "-o", "fd.wrt")
    preset = preset_for(MODEL)
    ours = convert(work / MODEL, input_shapes=preset.input_shapes, preprocess=preset.preprocess).data
    assert (work / "fd.wrt").read_bytes() == ours  # the same converter, the same bytes
    assert "inputs:\n  input  [1,128,128,3] float32" in cli("inspect", "fd.wrt").stdout
    for engine in ("ref", "native", "wasm"):
        out = cli("run", "fd.wrt", "--engine", engine, "--input", "input=x.npy", "-o", f"out_{engine}").stdout
        assert f"on the {engine} engine" in out
        want = wasmrt.load(ours, engine=engine).run({"input": x})
        for name, value in want.items():
            assert np.array_equal(np.load(work / f"out_{engine}" / f"{name}.npy"), value), (engine, name)
    assert "on the native engine (" in cli("run", "fd.wrt").stdout  # auto: the fastest engine here
    # the webgpu engine's planner and kernels (the JS binding's, run by Node) come with the wheel: the same plan
    from wasmrt.engines.webgpu_plan import kernel_table, plan

    code = ("from wasmrt.engines.webgpu_plan import plan, kernel_table; p = plan(open('fd.wrt', 'rb')"
            ".read()); print(len(p.dispatches), len(kernel_table()['kernels']), p.constants.nbytes)")
    r = subprocess.run([str(bin_ / "python"), "-c", code], cwd=work, env=_env(work), capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    want = plan(ours)
    assert r.stdout.split() == [str(len(want.dispatches)), str(len(kernel_table()["kernels"])),
                                str(want.constants.nbytes)], r.stdout
    assert cli("--version").stdout.strip() == f"wasmrt {wasmrt.__version__}"
    assert _snapshot(_site_packages(venv)) == before, "the installed package changed while being used"
    assert not (work / "cache").exists() or not any((work / "cache").rglob("*.so"))


def test_installed_wheel_benches_and_serves_the_demo(venv: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    shutil.copyfile(models.model_path(MODEL), work / MODEL)
    before = _snapshot(_site_packages(venv))
    r = subprocess.run([str(venv / "bin" / "wasmrt"), "bench", MODEL, "--hosts", "native", "--rounds", "2",
                        "--warmup", "0", "--no-chart", "-o", "bench.json"], cwd=work, env=_env(work),
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    rows = json.loads((work / "bench.json").read_text())["rows"]
    assert any(row["engine"].startswith("wasmrt") and row["host"] == "native" for row in rows), rows
    assert not (work / "cache" / "peers").exists()  # peers are installed with --peers only

    url_file = work / "url"
    proc = subprocess.Popen([str(venv / "bin" / "wasmrt"), "demo", "--no-build", "--port", "0", "--url-file",
                             str(url_file)], cwd=work, env=_env(work), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(200):
            if url_file.exists() and url_file.read_text().strip():
                break
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.1)
        page = url_file.read_text().strip()
        origin = page.removesuffix("/demo/web/")

        def get(path: str) -> tuple[int, bytes]:
            with urllib.request.urlopen(origin + path, timeout=10) as res:
                return res.status, res.read()

        status, body = get("/demo/web/")
        assert status == 200 and b"model playground" in body
        status, body = get("/js_bindings/dist/wasmrt-simd.wasm")
        assert status == 200 and body[:4] == b"\0asm"
        for path in ("/demo/web/tryon.html", "/demo/web/speed.html", "/js_bindings/src/index.js",
                     "/js_bindings/vision/index.js", "/demo/web/samples/chelsea.png"):
            assert get(path)[0] == 200, path
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    for path in ("/demo/web/", "/demo/web/tryon.html", "/demo/web/speed.html"):
        assert f"{origin}{path}\n" in out, out
    assert _snapshot(_site_packages(venv)) == before


def test_aarch64_wheel_library_runs_a_model_under_qemu(wheels: dict[str, Path], tmp_path: Path) -> None:
    """The aarch64 wheel's libwasmrt.so, linked into the C test driver, on an emulated Cortex-A53 (ARMv8.0)."""
    if not (shutil.which("qemu-aarch64") and shutil.which("aarch64-linux-gnu-gcc")):
        pytest.skip("needs qemu-user and gcc-aarch64-linux-gnu")
    from python_ref import Interpreter
    from wasmrt.compile.converter import convert

    with zipfile.ZipFile(wheels["aarch64"]) as z:
        (tmp_path / "libwasmrt.so").write_bytes(z.read("wasmrt/engines/lib/libwasmrt.so"))
    engine = paths.require_checkout("this test") / "kernels_wasm" / "engine"
    driver = tmp_path / "driver"
    subprocess.run(["aarch64-linux-gnu-gcc", "-O1", str(engine / "test" / "driver.c"), "-I", str(engine),
                    "-L", str(tmp_path), "-lwasmrt", "-Wl,-rpath,$ORIGIN", "-o", str(driver)], check=True,
                   timeout=120)
    data = convert(models.model_path(MODEL)).data
    (tmp_path / "m.wrt").write_bytes(data)
    x = np.random.default_rng(4).uniform(-1, 1, (1, 128, 128, 3)).astype(np.float32)
    x.tofile(tmp_path / "in0.bin")
    r = subprocess.run(["qemu-aarch64", "-cpu", "cortex-a53", "-L", "/usr/aarch64-linux-gnu", str(driver), "run",
                        str(tmp_path / "m.wrt"), str(tmp_path), str(tmp_path / "in0.bin")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "neon", r.stdout
    spec = Interpreter(data)
    ref = spec.run({"input": x})
    for k, s in enumerate(spec.outputs):
        got = np.fromfile(tmp_path / f"out{k}.bin", s.dtype).reshape(s.shape)
        err = np.abs(got - ref[s.name]).max() / np.abs(ref[s.name]).max()
        assert err < 1e-4, (s.name, err)
