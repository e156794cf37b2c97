"""Source model (ONNX or TFLite) -> graph IR -> passes -> memory plan -> .wrt bytes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from wasmrt.compile.dynamic import DynamicDim, dynamic_graph
from wasmrt.compile.ir import Graph, Metadata, Node, Preprocess, Tensor
from wasmrt.compile.passes import optimize
from wasmrt.compile.planner import MemoryPlan, plan_memory
from wasmrt.compile.qdq import has_qdq, quantize_qdq
from wasmrt.compile.sparsity import sparse_tensors
from wasmrt.compile.writer import write_wrt
from wasmrt.errors import ConversionError, ModelFormatError

MAX_ARENA = 1 << 62  # arena offsets are int64 in the format; engines refuse far smaller arenas themselves


@dataclass
class Converted:
    data: bytes
    graph: Graph
    plan: MemoryPlan
    pass_counts: dict[str, int]


def source_kind(path: Path) -> str:
    """'tflite' or 'onnx', from the file's bytes rather than its name."""
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError as e:
        raise ModelFormatError(f"{path}: cannot read model file: {e.strerror}") from None
    if len(head) >= 8 and head[4:8] == b"TFL3":
        return "tflite"
    if len(head) >= 8 and head[4:8] == b"WRT0":
        return "wrt"
    if head[:1] == b"\x08":  # protobuf field 1 (ir_version), varint: every ONNX ModelProto starts so
        return "onnx"
    if path.suffix.lower() in (".onnx", ".tflite", ".wrt"):
        return path.suffix.lower()[1:]
    raise ModelFormatError(f"{path}: neither an ONNX, a TFLite nor a .wrt model (starts with {head[:8]!r})")


def graph_from_wrt(source: str | Path | bytes) -> Graph:
    """The graph IR of a .wrt model (read and verified by python_ref), to convert or quantize it again."""
    from python_ref.wrt_file import read_wrt

    m = read_wrt(source)
    g = Graph()
    for t in m.tensors:
        g.tensors[t.name] = Tensor(t.name, t.shape, t.dtype, t.data, t.quant)
    names = [t.name for t in m.tensors]
    if len(set(names)) != len(names):
        raise ModelFormatError(f"{source}: tensor names repeat; cannot rebuild the graph")
    g.nodes = [Node(o.op, [names[i] if i >= 0 else "" for i in o.inputs], [names[i] for i in o.outputs],
                    dict(o.attrs), o.name) for o in m.ops]
    g.inputs, g.outputs = [names[i] for i in m.inputs], [names[i] for i in m.outputs]
    md = m.metadata
    g.metadata = Metadata(md["source"], md["producer"],
                          {g.inputs[k]: Preprocess(**p) for k, p in md["preprocess"].items()},
                          list(md["labels"]), dict(md["props"]))
    return g


def load_graph(path: str | Path, input_shapes: dict[str, tuple[int, ...]] | None = None,
               freeze_inputs: dict[str, np.ndarray] | None = None) -> Graph:
    """Import a model file. freeze_inputs (ONNX only): inputs that become constants of the given values."""
    path = Path(path)
    kind = source_kind(path)
    if kind in ("wrt", "tflite") and freeze_inputs:
        raise ConversionError(f"{path}: freezing inputs works on ONNX models only")
    if kind == "wrt":
        return graph_from_wrt(path)
    if kind == "tflite":
        from wasmrt.compile.tflite.importer import import_tflite

        return import_tflite(path, input_shapes=input_shapes)
    from wasmrt.compile.onnx.importer import import_onnx

    return import_onnx(path, input_shapes=input_shapes, freeze_inputs=freeze_inputs)


def convert(src: str | Path | Graph, *, input_shapes: dict[str, tuple[int, ...]] | None = None,
            preprocess: dict[str, Preprocess] | None = None, labels: list[str] | None = None,
            weights: str = "auto", sparse: bool = True, log: Callable[[str], None] | None = None,
            dynamic: list[DynamicDim] | None = None, state: dict[str, str] | None = None,
            observe: Callable[[str, Graph], None] | None = None) -> Converted:
    """Convert a model file (or an already imported graph) to .wrt bytes. weights: how float constants are stored,
    see wrt_writer.stored_constant ("auto" = fp16 where lossless); sparse: store weights whose 1x4 blocks are mostly
    zero block-sparse (wasmrt.compile.sparsity.sparse_tensors).
    dynamic: input dimensions sized at run time, within bounds
    (wasmrt/compile/dynamic.py); input_shapes then gives the size the model is planned for. state: recurrent state pairs
    {output: input} stored in the metadata (wasmrt.Stream). observe(step, graph): called with the graph after the
    import ("import"), after the QDQ rewrite ("quantize_qdq") and after each graph pass that changed it (the pass's
    name, see passes.optimize), to check each step's numerics (tests/test_pass_numerics.py); it must not change the
    graph."""
    say = log or (lambda _msg: None)
    if isinstance(src, Graph):
        if dynamic:
            raise ValueError("dynamic dimensions need the model file (it is imported at several sizes)")
        graph = src
    elif dynamic:
        say(f"importing {Path(src).name} with run-time sizes {[f'{d.input}[{d.axis}]' for d in dynamic]}")
        graph = dynamic_graph(lambda shapes: load_graph(src, shapes), dict(input_shapes or {}), dynamic, say)
    else:
        say(f"importing {Path(src).name}")
        graph = load_graph(src, input_shapes)
    say(f"imported: {len(graph.nodes)} ops, {len(graph.tensors)} tensors")
    if preprocess:
        unknown = set(preprocess) - set(graph.inputs)
        if unknown:
            raise ValueError(f"preprocessing given for unknown inputs {sorted(unknown)}; inputs: {graph.inputs}")
        graph.metadata.preprocess.update(preprocess)
    if labels:
        graph.metadata.labels = list(labels)
    for out, inp in (state or {}).items():
        if out not in graph.outputs or inp not in graph.inputs:
            raise ValueError(f"state {out}={inp}: the model has no output {out!r} or no input {inp!r} "
                             f"(outputs {graph.outputs}, inputs {graph.inputs})")
        graph.metadata.props[f"state.{out}"] = inp
    if observe:
        observe("import", graph)
    if has_qdq(graph):
        say("quantized in QDQ form: turning float ops between QUANTIZE/DEQUANTIZE into int8 ops")
        graph = quantize_qdq(graph)
        if observe:
            observe("quantize_qdq", graph)
    counts = optimize(graph, say, observe=observe)
    say(f"optimized: {len(graph.nodes)} ops")
    plan = plan_memory(graph)
    if plan.arena_size > MAX_ARENA:
        raise ConversionError(f"{graph.metadata.source or 'model'}: the activations need a {plan.arena_size:,}-byte "
                              f"arena; the .wrt format holds at most {MAX_ARENA:,}")
    say(f"memory plan: arena {plan.arena_size} bytes, lower bound {plan.lower_bound}")
    stored_sparse = sparse_tensors(graph, weights) if sparse else set()
    if stored_sparse:
        say(f"block-sparse weights: {len(stored_sparse)} layers (1x4 blocks)")
    return Converted(write_wrt(graph, plan, weights, stored_sparse), graph, plan, counts)
