"""WebAssembly modules built for given models: `wasmrt build --for a.wrt b.wrt [-o DIR]`.

Each variant (scalar, simd, relaxed and the threaded ones) is compiled with a generated header, wrt_trim.h, that
keeps only the rows of the op table (op x dtype class) and the kernel families (kernels_wasm/gen/families.py) the
models use; the linker drops every function nothing reaches. A model that needs something such a module lacks is
refused at load with an UnsupportedOpError naming the op and the models the module was built for. The full modules
(wasmrt build) stay for general use.

The folder gets wasmrt-<variant>.wasm and wasmrt-modules.json, the manifest the JS binding reads: the models, the
ops and families the modules hold, each module's size and SHA-256. Same models, same bytes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from python_ref import opdefs
from python_ref.wrt_file import WrtModel, read_wrt
from wasmrt import paths
from wasmrt.dev import build
from wasmrt.errors import WasmrtError

paths.import_generators("wasmrt build --for")
from kernels_wasm.gen import families  # noqa: E402  (the checkout's kernel tables)
from kernels_wasm.gen.kernels import sparse  # noqa: E402

MANIFEST = "wasmrt-modules.json"
# The face try-on's model sets (demo pages): float (with the refined mesh), int8, and the int8 detector with the
# refined mesh (which has no int8 version)
TRYON_SETS = {"face": ("face_detector.wrt", "face_landmark.wrt", "face_landmark_attention.wrt"),
              "face-int8": ("face_detector_int8.wrt", "face_landmark_int8.wrt"),
              "face-int8-refine": ("face_detector_int8.wrt", "face_landmark_attention.wrt")}
TRYON_LIMIT = 120_000  # bytes, each of those sets' modules (relaxed and SIMD128): the pages' and mini-program's budget
CLASSES = ("F32", "QS8", "OTHER", "F32_SPARSE")  # dtype classes of the op table (engine.h WRT_DC_*)
_WEIGHTED = ("CONV_2D", "FULLY_CONNECTED")  # the ops with a block-sparse class
# zero weights from which a dense float layer may run sparse on some target (the lowest break-even of
# sparse.TILES; the engine decides per layer at load, so a module keeps the sparse class from there on)
_SPARSE_FLOOR = min(min(t.min_sparsity, t.u_min_sparsity) for t in sparse.TILES.values())


def op_classes(m: WrtModel, k: int) -> set[str]:
    """The dtype classes op k of m may run in (ops.c dtype_class): several where the engine decides at load."""
    o = m.ops[k]
    x = m.tensors[o.inputs[0]]
    if o.op in opdefs.quant_form(opdefs.Q_INTEGER) or (x.quant is not None and x.dtype.itemsize == 1):
        return {"QS8"}
    if x.dtype != np.float32:
        return {"OTHER"}
    w = m.tensors[o.inputs[1]] if len(o.inputs) > 1 and o.inputs[1] >= 0 else None
    if o.op in _WEIGHTED and w is not None and w.data is not None:
        zeros = float(np.mean(w.data == 0)) if w.data.size else 0.0
        if w.sparse is not None or zeros >= _SPARSE_FLOOR:
            return {"F32", "F32_SPARSE"}  # below the target's break-even the dense path runs
    return {"F32"}


def _scalar_operand(m: WrtModel, o) -> bool:  # type: ignore[no-untyped-def]
    """Whether a binary op may run its kernels' scalar-b form (elementwise.c, qelt.c): an operand broadcast along the
    output's last axis (its last dimension 1, or a scalar). Generous where the engine would merge axes: a kept kernel
    costs bytes, a missing one speed."""
    y = m.tensors[o.outputs[0]]
    if int(np.prod(y.shape)) <= 1:
        return False
    return any(i >= 0 and (len(m.tensors[i].shape) == 0 or m.tensors[i].shape[-1] == 1) for i in o.inputs[:2])


def _patch_gemm(m: WrtModel, o) -> bool:  # type: ignore[no-untyped-def]
    """Whether an int8 convolution may run as a GEMM on gathered patches (qconv.c QC_PATCH): one group, not a 1x1
    stride-1 unpadded layer, a patch of at most QPATCH_K bytes."""
    w, a = m.tensors[o.inputs[1]], o.attrs
    if len(w.shape) != 4 or int(a.get("groups", 1)) != 1:
        return False
    pointwise = (tuple(w.shape[1:3]) == (1, 1) and tuple(a.get("strides", (1, 1))) == (1, 1)
                 and not any(a.get("pads", ())))
    return not pointwise and int(np.prod(w.shape[1:])) <= families.QPATCH_K


def _odd_gemm_rows(m: WrtModel, o) -> bool:  # type: ignore[no-untyped-def]
    """Whether an int8 GEMM (a 1x1 convolution, a fully-connected layer) may end in a lone row for qgemm_row
    (qconv.c qgemm_blocks): an odd number of rows. Every other int8 weighted op counts too, generously."""
    if o.op not in _WEIGHTED:
        return o.op in opdefs.quant_form(opdefs.Q_WEIGHTED)
    y = m.tensors[o.outputs[0]]
    rows = int(np.prod(y.shape[:-1])) if len(y.shape) else 1
    return rows % 2 == 1


def _elementwise(m: WrtModel, k: int) -> bool:
    """A float element-wise op: with the one before it, a chain the engine may run as one pass (elementwise.c)."""
    return ((m.ops[k].op in families.BINARY_OPS.values() or opdefs.OPS[m.ops[k].op].family == opdefs.UNARY)
            and op_classes(m, k) == {"F32"})


def uses(m: WrtModel) -> set[str]:
    """What a model needs of a module: OP:CLASS for each op, and the paths its layers may take (families.py)."""
    out: set[str] = {"dynamic"} if any(m.tensors[i].bounds for i in m.inputs) else set()
    for k, o in enumerate(m.ops):
        classes = op_classes(m, k)
        out |= {f"{o.op}:{c}" for c in classes}
        if k and _elementwise(m, k) and m.ops[k - 1].outputs[0] in o.inputs and _elementwise(m, k - 1):
            out.add("chain")
        a = o.attrs
        if o.op in families.BINARY_OPS.values() and _scalar_operand(m, o):
            out |= {f"{o.op}:{c}:scalar_b" for c in classes}
        if o.op == "CONV_2D" and classes & {"F32", "QS8"}:
            w = m.tensors[o.inputs[1]]
            g = int(a.get("groups", 1))
            if len(w.shape) == 4 and g == w.shape[3] * g == w.shape[0]:  # one input and one output channel per group
                if "F32" in classes:  # conv.c's depthwise path, and the kernel it picks for the filter's taps
                    out |= {"dwconv", families.dwconv_use(int(w.shape[1]) * int(w.shape[2]))}
                elif tuple(w.shape[1:3]) != (3, 3):  # qconv.c's: the int8 kernels for any filter but 3x3
                    out.add("qdwconv:any")
        if o.op == "CONV_2D" and "F32" in classes:
            w = m.tensors[o.inputs[1]]
            g = int(a.get("groups", 1))
            if (len(w.shape) == 4 and tuple(w.shape[1:3]) == (3, 3) and tuple(a.get("strides", (1, 1))) == (1, 1)
                    and tuple(a.get("dilations", (1, 1))) == (1, 1) and g == 1):
                out.add("winograd")  # the planner may pick it for a 3x3 layer
        if o.op in _WEIGHTED and classes == {"QS8"} and m.tensors[o.inputs[1]].sparse is not None:
            out.add("qsparse")
        if o.op == "CONV_2D" and classes == {"QS8"} and _patch_gemm(m, o):
            out.add("qpatch")
        if classes == {"QS8"} and _odd_gemm_rows(m, o):
            out.add("qgemm_row")
    return out


@dataclass(frozen=True)
class Trim:
    """What a module for some models holds."""

    models: tuple[str, ...]  # file names
    keep: dict[str, tuple[str, ...]]  # op -> dtype classes
    families: dict[str, bool]

    @classmethod
    def for_models(cls, paths: Sequence[Path]) -> Trim:
        if not paths:
            raise WasmrtError("wasmrt build --for: name at least one .wrt model")
        u: set[str] = set()
        for p in paths:
            if not Path(p).is_file():
                raise WasmrtError(f"wasmrt build --for: {p} is not a file (name .wrt models, made by wasmrt convert)")
            u |= uses(read_wrt(p))
        keep = {op: tuple(c for c in CLASSES if f"{op}:{c}" in u) for op in sorted(opdefs.OPS)}
        return cls(tuple(sorted({Path(p).name for p in paths})), {k: v for k, v in keep.items() if v},
                   families.kept(u))

    def lean(self) -> Trim:
        """The same without the families that only add speed (families.py speed_only)."""
        fast = {f.name for f in families.all_families() if f.speed_only}
        return replace(self, families={f: on and f not in fast for f, on in self.families.items()})

    def header(self) -> str:
        """wrt_trim.h: the macros engine.h and the generated kernels read (WRT_TRIMMED, WRT_KEEP_*, WRT_KF_*)."""
        names = ", ".join(self.models).replace("\\", "/").replace('"', "'")
        lines = ["/* GENERATED by wasmrt build --for: the ops and kernels of " + names + " */",
                 "#define WRT_TRIMMED 1", f'#define WRT_TRIM_MODELS "{names}"']
        for op in sorted(opdefs.OPS):
            cs = self.keep.get(op, ())
            lines.append(f"#define WRT_KEEP_{op} ({' | '.join(f'WRT_DC_BIT({c})' for c in cs) or '0u'})")
        lines.append("#define WRT_KEEP_ROWS " + ", ".join(f"[OP_{op}] = 1" for op in sorted(self.keep)))
        lines += [f"#define {families.macro(f)} {int(on)}" for f, on in self.families.items()]
        return "\n".join(lines) + "\n"

    def manifest(self, modules: dict[str, Path]) -> dict[str, object]:
        return {"models": list(self.models), "ops": {op: list(cs) for op, cs in self.keep.items()},
                "families": sorted(f for f, on in self.families.items() if on),
                "modules": {v: {"file": p.name, "bytes": p.stat().st_size,
                                "sha256": hashlib.sha256(p.read_bytes()).hexdigest()} for v, p in modules.items()}}


def build_for(models: Sequence[Path], out_dir: Path, variants: Iterable[str] | None = None, force: bool = False,
              limit: int | None = None) -> dict[str, Path]:
    """Build the modules for `models` into out_dir (wasmrt-<variant>.wasm + wasmrt-modules.json); variant -> path.
    limit: refuse any module larger than that many bytes."""
    trim = Trim.for_models([Path(p) for p in models])
    out_dir.mkdir(parents=True, exist_ok=True)
    names = list(variants or build.WASM_VARIANTS)
    arts = {v: build.build_wasm(v, force, trim=trim.header(), out=out_dir / f"wasmrt-{v}.wasm") for v in names}
    if limit is not None and any(a.size > limit for a in arts.values()) and trim.lean() != trim:
        trim = trim.lean()  # every variant without the speed-only families, so that one manifest fits them all
        arts = {v: build.build_wasm(v, force, trim=trim.header(), out=out_dir / f"wasmrt-{v}.wasm") for v in names}
    built: dict[str, Path] = {}
    for v, art in arts.items():
        if limit is not None and art.size > limit:
            raise WasmrtError(f"{art.path.name} built for {', '.join(trim.models)} is {art.size:,} bytes, over the "
                              f"{limit:,}-byte budget")
        built[v] = art.path
    # modules of other variants built earlier for the same models stay listed (--variant builds a few at a time)
    manifest = out_dir / MANIFEST
    try:
        old = json.loads(manifest.read_text())
    except (OSError, ValueError):
        old = {}
    listed = dict(built)
    if {k: old.get(k) for k in ("models", "ops", "families")} == {k: v for k, v in trim.manifest({}).items()
                                                                    if k != "modules"}:
        for v, entry in old.get("modules", {}).items():
            if v not in listed and v in build.WASM_VARIANTS and (out_dir / entry.get("file", "")).is_file():
                listed[v] = out_dir / entry["file"]
    manifest.write_text(json.dumps(trim.manifest(dict(sorted(listed.items()))), indent=1, sort_keys=True) + "\n")
    return built
