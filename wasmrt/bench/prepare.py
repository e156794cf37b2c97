"""Everything a bench run needs for one model, written to one folder: the .wrt, the peers' files, the input and
the python_ref outputs every engine is checked against.

All engines run the same graph: the source model imported and optimized by our converter, then written as .wrt
(ours), .tflite (LiteRT, LiteRT.js), .onnx (onnxruntime, onnxruntime-web) and a TF.js graph model.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from wasmrt import paths
from wasmrt.errors import InputError
from wasmrt.export.common import ExportError, load_optimized, random_feeds, run_reference
from wasmrt.ir import Graph

WORK = paths.work_dir() / "bench"


@dataclass
class Prepared:
    name: str
    dir: Path
    wrt: Path
    inputs: list[dict]  # {"name", "shape", "file"} (raw little-endian float32 in dir)
    outputs: list[str]
    feeds: dict[str, np.ndarray]
    reference: dict[str, np.ndarray]
    macs: int
    graph: Graph | None = None
    peer_files: dict[str, Path] = field(default_factory=dict)  # "tflite" | "onnx" | "tfjs" -> file
    notes: list[str] = field(default_factory=list)


def resolve(model: str) -> tuple[str, Path, dict[str, tuple[int, ...]]]:
    """(display name, source file, input shapes) for a bundled model name or a model path."""
    from wasmrt.models import BUNDLED, model_path

    if model in BUNDLED:
        return model, model_path(model), dict(BUNDLED[model].input_shapes)
    p = Path(model)
    if not p.is_file():
        raise InputError(f"{model}: no such model file, and not a bundled model ({', '.join(BUNDLED)})")
    from wasmrt.models import preset_for

    preset = preset_for(p.name)
    return p.stem, p, dict(preset.input_shapes) if preset else {}


def _macs(wrt: bytes) -> int:
    from python_ref.wrt_file import read_wrt
    from wasmrt.report import macs

    return macs(read_wrt(wrt, "model.wrt"))


def _write_inputs(out: Path, feeds: dict[str, np.ndarray]) -> list[dict]:
    specs = []
    for k, (name, value) in enumerate(feeds.items()):
        f = f"input{k}.bin"
        np.ascontiguousarray(value, np.float32).tofile(out / f)
        specs.append({"name": name, "shape": list(value.shape), "file": f})
    return specs


def prepare(model: str, peers: bool, log: callable, seed: int = 0) -> Prepared:
    name, src, shapes = resolve(model)
    out = WORK / "models" / name
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    if src.suffix == ".wrt":
        return _prepare_wrt(name, src, out, peers, log, seed)
    from wasmrt.converter import convert

    log(f"{name}: converting {src.name}")
    graph = load_optimized(src, shapes)
    wrt = out / "model.wrt"
    wrt.write_bytes(convert(graph).data)
    feeds = random_feeds(graph, seed)
    log(f"{name}: reference outputs (python_ref)")
    ref = run_reference(graph, feeds)
    prep = Prepared(name, out, wrt, _write_inputs(out, feeds), list(graph.outputs), feeds, ref,
                    _macs(wrt.read_bytes()), graph)
    if peers:
        export_peers(prep, log)
    return prep


def _prepare_wrt(name: str, src: Path, out: Path, peers: bool, log: callable, seed: int) -> Prepared:
    """A .wrt given directly: our engines only, unless the source model it names is next to it."""
    from python_ref import Interpreter

    wrt = out / "model.wrt"
    shutil.copyfile(src, wrt)
    interp = Interpreter(str(wrt))
    rng = np.random.default_rng(seed)
    feeds = {s.name: rng.uniform(-1.0, 1.0, s.shape).astype(s.dtype) for s in interp.inputs}
    log(f"{name}: reference outputs (python_ref)")
    ref = interp.run(feeds)
    prep = Prepared(name, out, wrt, _write_inputs(out, feeds), list(ref), feeds, ref, _macs(wrt.read_bytes()))
    if peers:
        source = interp.metadata.get("source") or ""
        cand = [src.parent / source] if source else []
        if cand and cand[0].is_file():
            graph = load_optimized(cand[0], {k: v.shape for k, v in feeds.items()})
            prep.graph = graph
            export_peers(prep, log)
        else:
            prep.notes.append(f"peers skipped: {src.name} names source {source!r}, not found next to it; "
                              "bench the .onnx/.tflite instead")
    return prep


def export_peers(prep: Prepared, log: callable) -> None:
    """Write the peers' model files; an export that fails leaves that peer out with a note."""
    from wasmrt.export.onnx_export import export_onnx
    from wasmrt.export.tfjs import export_tfjs
    from wasmrt.export.tflite import export_tflite

    assert prep.graph is not None
    log(f"{prep.name}: exporting for the peers (.tflite, .onnx, TF.js)")
    jobs = {"tflite": lambda: export_tflite(prep.graph, prep.dir / "model.tflite") and prep.dir / "model.tflite",
            "onnx": lambda: export_onnx(prep.graph, prep.dir / "model.onnx") and prep.dir / "model.onnx",
            "tfjs": lambda: export_tfjs(prep.graph, prep.dir / "tfjs")}
    for kind, job in jobs.items():
        try:
            prep.peer_files[kind] = job()
        except ExportError as e:
            prep.notes.append(f"{kind} export failed, its peers are left out: {e}")
