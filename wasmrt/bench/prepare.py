"""Everything a bench run needs for one model, written to one folder: the .wrt, the peers' files, the input and
the python_ref outputs every engine is checked against.

Each peer runs the file its own toolchain makes of the model (peer_files="toolchain", the default): a TFLite source
as it is for LiteRT/LiteRT.js; an ONNX source's PyTorch module converted by litert-torch (LiteRT, LiteRT.js) and
exported by torch.onnx.export (onnxruntime, onnxruntime-web), or the source .onnx itself where no module can be
built. Our exporter (wasmrt/export: the exact graph our engine runs) fills in the rest (TF.js always) and is used
for every peer with peer_files="ours". `Prepared.peer_sources` says what made each file.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from wasmrt import paths
from wasmrt.compile.ir import Graph
from wasmrt.errors import InputError
from wasmrt.export.common import ExportError, load_optimized, random_feeds, random_input, run_reference

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
    peer_sources: dict[str, str] = field(default_factory=dict)  # same keys -> what made the file
    notes: list[str] = field(default_factory=list)
    source: Path | None = None  # the model file converted to .wrt
    ours_tolerance: float | None = None  # cross-check tolerances (None: report.TOLERANCE); int8 rows set both
    peer_tolerance: float | None = None


def resolve(model: str) -> tuple[str, Path, dict[str, tuple[int, ...]]]:
    """(display name, source file, input shapes) for a bundled model name or a model path."""
    from wasmrt.zoo.models import BUNDLED, model_path

    if model in BUNDLED:
        return model, model_path(model), dict(BUNDLED[model].input_shapes)
    p = Path(model)
    if not p.is_file():
        raise InputError(f"{model}: no such model file, and not a bundled model ({', '.join(BUNDLED)})")
    from wasmrt.zoo.models import preset_for

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
        dtype = value.dtype if value.dtype.kind in "iub" else np.dtype(np.float32)
        np.ascontiguousarray(value, dtype.newbyteorder("<")).tofile(out / f)
        specs.append({"name": name, "shape": list(value.shape), "file": f, "dtype": str(dtype)})
    return specs


def prepare(model: str, peers: bool, log: callable, seed: int = 0, peer_files: str = "toolchain") -> Prepared:
    name, src, shapes = resolve(model)
    out = WORK / "models" / name
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    if src.suffix == ".wrt":
        return _prepare_wrt(name, src, out, peers, log, seed)
    from wasmrt.compile.converter import convert

    log(f"{name}: converting {src.name}")
    graph = load_optimized(src, shapes)
    wrt = out / "model.wrt"
    wrt.write_bytes(convert(graph).data)
    feeds = random_feeds(graph, seed)
    log(f"{name}: reference outputs (python_ref)")
    ref = run_reference(graph, feeds)
    prep = Prepared(name, out, wrt, _write_inputs(out, feeds), list(graph.outputs), feeds, ref,
                    _macs(wrt.read_bytes()), graph, source=src)
    if peers:
        if peer_files == "toolchain":
            toolchain_peers(prep, log)
        export_peers(prep, log)
    return prep


def _prepare_wrt(name: str, src: Path, out: Path, peers: bool, log: callable, seed: int) -> Prepared:
    """A .wrt given directly: our engines only, unless the source model it names is next to it."""
    from python_ref import Interpreter

    wrt = out / "model.wrt"
    shutil.copyfile(src, wrt)
    interp = Interpreter(str(wrt))
    rng = np.random.default_rng(seed)
    feeds = {s.name: random_input(rng, s.shape, s.dtype) for s in interp.inputs}
    log(f"{name}: reference outputs (python_ref)")
    ref = interp.run(feeds)
    prep = Prepared(name, out, wrt, _write_inputs(out, feeds), list(ref), feeds, ref, _macs(wrt.read_bytes()))
    if peers:
        source = interp.metadata.get("source") or ""
        cand = [src.parent / source] if source else []
        if cand and cand[0].is_file():
            graph = load_optimized(cand[0], {k: v.shape for k, v in feeds.items()})
            prep.graph = graph
            prep.source = cand[0]
            export_peers(prep, log)
        else:
            prep.notes.append(f"peers skipped: {src.name} names source {source!r}, not found next to it; "
                              "bench the .onnx/.tflite instead")
    return prep


def toolchain_peers(prep: Prepared, log: callable) -> None:
    """The files the peers' own toolchains make of prep.source (see the module doc); a toolchain that cannot
    handle the model leaves that file to our exporter, with a note."""
    from wasmrt.bench.peers import toolchain_files
    from wasmrt.errors import WasmrtError

    src = prep.source
    if src is None:
        return
    if src.suffix == ".tflite":
        prep.peer_files["tflite"] = prep.dir / "source.tflite"
        shutil.copyfile(src, prep.peer_files["tflite"])
        prep.peer_sources["tflite"] = f"the source model {src.name}"
        return
    if src.suffix != ".onnx":
        return
    try:
        tc = toolchain_files(src, log)
    except WasmrtError as e:
        prep.notes.append(f"no PyTorch module for the peers' toolchains ({str(e).splitlines()[-1][:200]}); "
                          f"onnxruntime runs the source {src.name}, LiteRT our exporter's .tflite")
        prep.peer_files["onnx"] = prep.dir / "source.onnx"
        shutil.copyfile(src, prep.peer_files["onnx"])
        prep.peer_sources["onnx"] = f"the source model {src.name}"
        return
    v = tc["versions"]
    for kind, made_by in (("tflite", f"litert-torch {v['litert-torch']} (torch {v['torch']}) from the PyTorch module"),
                          ("onnx", f"torch.onnx.export (torch {v['torch']}, onnx {v['onnx']}) of the PyTorch module")):
        prep.peer_files[kind] = prep.dir / f"toolchain.{kind}"
        shutil.copyfile(tc[kind], prep.peer_files[kind])
        prep.peer_sources[kind] = made_by


def export_peers(prep: Prepared, log: callable) -> None:
    """Write the peers' model files that are still missing with our exporter (the exact graph our engine runs);
    an export that fails leaves that peer out with a note."""
    from wasmrt.export.onnx_export import export_onnx
    from wasmrt.export.tfjs import export_tfjs
    from wasmrt.export.tflite import export_tflite

    assert prep.graph is not None
    log(f"{prep.name}: exporting for the peers (.tflite, .onnx, TF.js)")
    jobs = {"tflite": lambda: export_tflite(prep.graph, prep.dir / "model.tflite") and prep.dir / "model.tflite",
            "onnx": lambda: export_onnx(prep.graph, prep.dir / "model.onnx") and prep.dir / "model.onnx",
            "tfjs": lambda: export_tfjs(prep.graph, prep.dir / "tfjs")}
    for kind, job in jobs.items():
        if kind in prep.peer_files:
            continue
        try:
            prep.peer_files[kind] = job()
            prep.peer_sources[kind] = "wasmrt's exporter (the graph our engine runs)"
        except ExportError as e:
            prep.notes.append(f"{kind} export failed, its peers are left out: {e}")
