"""docs/ops.md, the supported-ops reference, generated (tests/test_docs.py checks that it is up to date).

- The .wrt ops and their attributes come from python_ref/opdefs.py.
- "What it becomes" comes from the importers' registries (wasmrt/compile/onnx/ops.py CONVERTERS,
  tflite_ops.py CONVERTERS, onnx_fold.py for ONNX ops folded at import): the .wrt op names each converter function
  and the module-level helpers it calls write, plus the entry of the name table it was registered through
  (`_converter(*_UNARY)` maps Relu through _UNARY); rules composed of other ONNX ops' rules (onnx/contrib.py,
  onnx/quant.py, factories such as `_qlinear("Conv", ...)`) are credited with those ops' .wrt ops. Where that reading
  lists nothing, the .wrt ops are measured: the importer's output on the onnx package's single-op node tests.
  Layout transposes the importers add around layout-sensitive ops are not listed.
- Which dtypes each engine runs is measured, not declared: every op's first single-op case of tests/test_engine.py
  is rebuilt with each dtype and run on python_ref, the native engine and the wasm engine (SIMD128 build).
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from python_ref import opdefs

ROOT = Path(__file__).resolve().parent.parent
DTYPES = ("float32", "float16", "int32", "int8")
ENGINES = ("ref", "native", "wasm")


# -- what each source op becomes ------------------------------------------------------------------------------------


def _names(module: ModuleType) -> tuple[dict[str, set[str]], dict[str, set[str]], dict[str, dict]]:
    """Per module-level function: the .wrt op names its body mentions, the module functions it calls; and the
    module-level dict literals (name tables)."""
    from python_ref.opdefs import OPS

    tree = ast.parse(inspect.getsource(module))
    literals: dict[str, set[str]] = {}
    calls: dict[str, set[str]] = {}
    tables: dict[str, dict] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            found = {n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and n.value in OPS}
            literals[node.name] = found
            calls[node.name] = {n.func.id for n in ast.walk(node) if isinstance(n, ast.Call)
                                and isinstance(n.func, ast.Name)}
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            with contextlib.suppress(ValueError):  # a table of enum members is not one of op names
                tables[node.targets[0].id] = ast.literal_eval(node.value)
    return literals, calls, tables


def _closure(fn: str, literals: dict[str, set[str]], calls: dict[str, set[str]]) -> set[str]:
    seen, todo, out = set(), [fn], set()
    while todo:
        f = todo.pop()
        if f in seen or f not in literals:
            continue
        seen.add(f)
        out |= literals[f]
        todo += calls[f]
    return out


def _table_ops(value: object) -> set[str]:
    from python_ref.opdefs import OPS

    items = value if isinstance(value, tuple | list) else (value,)
    return {v for v in items if isinstance(v, str) and v in OPS}


def _norm(name: str) -> str:
    return "".join(c for c in name.lower() if c.isalnum()).replace("2d", "")


def becomes(module: ModuleType, registry: dict[str, Callable]) -> dict[str, list[str]]:
    """Source op -> .wrt ops its converter writes (sorted). A function registered for several source ops mentions
    the .wrt ops of all of them: an op that belongs to another member of the group (its table entry, or the same
    name) is left out of this member's list."""
    literals, calls, tables = _names(module)
    entry = {}  # source op -> the name table it was registered through
    for node in ast.parse(inspect.getsource(module)).body:
        if not isinstance(node, ast.FunctionDef):
            continue
        for dec in node.decorator_list:
            if isinstance(dec, ast.Call):
                for arg in dec.args:
                    if isinstance(arg, ast.Starred) and isinstance(arg.value, ast.Name) and arg.value.id in tables:
                        for key in tables[arg.value.id]:
                            entry[key] = tables[arg.value.id]
    groups: dict[str, set[str]] = {}
    for op, fn in registry.items():
        groups.setdefault(fn.__name__, set()).add(op)

    def belongs(wrt: str, src: str) -> bool:
        return wrt in _table_ops(entry[src][src]) if src in entry else _norm(wrt) == _norm(src)

    out = {}
    for op, fn in sorted(registry.items()):
        ops = _closure(fn.__name__, literals, calls) | (_table_ops(entry[op][op]) if op in entry else set())
        others = groups[fn.__name__] - {op}
        out[op] = sorted(w for w in ops if belongs(w, op) or not any(belongs(w, t) for t in others))
    return out


def becomes_composed(module: ModuleType, registry: dict[str, Callable], onnx_map: dict[str, list[str]]
                     ) -> dict[str, list[str]]:
    """Like becomes() for rules composed of ONNX ops' rules (onnx/contrib.py): the .wrt ops a rule writes itself and
    those of the ONNX ops whose names (keys of onnx_map) its code mentions."""
    own = becomes(module, registry)
    mentioned, calls = {}, {}
    for node in ast.parse(inspect.getsource(module)).body:
        if isinstance(node, ast.FunctionDef):
            mentioned[node.name] = {n.value for n in ast.walk(node) if isinstance(n, ast.Constant)
                                    and isinstance(n.value, str) and n.value in onnx_map}
            calls[node.name] = {n.func.id for n in ast.walk(node) if isinstance(n, ast.Call)
                                and isinstance(n.func, ast.Name)}
    # rules made by a factory at module level (`"QLinearConv": _qlinear("Conv", ...)`): the ONNX ops named in the
    # factory's arguments, and what the factory's own code writes and names
    literals, wrt_calls, _ = _names(module)
    made: dict[str, set[str]] = {}
    for node in ast.walk(ast.parse(inspect.getsource(module))):
        pairs = []
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            pairs = [(t.slice, node.value) for t in node.targets if isinstance(t, ast.Subscript)]
        elif isinstance(node, ast.Dict):
            pairs = [(k, v) for k, v in zip(node.keys, node.values, strict=True) if isinstance(v, ast.Call)]
        for key, call in pairs:
            if isinstance(key, ast.Constant) and key.value in registry and isinstance(call.func, ast.Name):
                named = {a.value for a in call.args if isinstance(a, ast.Constant) and a.value in onnx_map}
                made[key.value] = ({w for n in named | _closure(call.func.id, mentioned, calls) for w in onnx_map[n]}
                                   | _closure(call.func.id, literals, wrt_calls))
    return {op: sorted(set(own[op]).union(*(onnx_map[n] for n in _closure(fn.__name__, mentioned, calls)),
                                          made.get(op, set())))
            for op, fn in registry.items()}


def _test_inputs(model: Path, m: Any) -> list[tuple[str, np.ndarray]]:
    """A node test's inputs (its first data set), by graph input name."""
    import onnx

    files = sorted((model.parent / "test_data_set_0").glob("input_*.pb"), key=lambda f: int(f.stem[6:]))
    return [(i.name, onnx.numpy_helper.to_array(onnx.TensorProto.FromString(f.read_bytes())))
            for i, f in zip(m.graph.input, files, strict=False)]


def measured_onnx(ops: set[str]) -> dict[str, list[str]]:
    """The .wrt ops the importer writes for each of `ops` on the onnx package's own node tests that use it (where
    the reading of the converter's code lists none: rules that expand into other rules through closures)."""
    import onnx
    import onnx.backend.test

    from wasmrt.compile.converter import convert
    from wasmrt.compile.ir import Graph
    from wasmrt.compile.onnx.importer import import_onnx

    data = Path(onnx.backend.test.__file__).parent / "data" / "node"
    out: dict[str, set[str]] = {}
    for model in sorted(data.glob("*/model.onnx")):
        m = onnx.load(str(model), load_external_data=False)
        used = {n.op_type for n in m.graph.node} & ops
        if not used or any(n.op_type not in ops for n in m.graph.node):
            continue  # a case of several ops would credit one with the others' .wrt ops
        try:
            graph = convert(str(model)).graph
        except Exception:  # a refused form, or one that needs an input fixed (Upsample's scales): fix them
            try:
                graph = convert(import_onnx(m, freeze_inputs=dict(_test_inputs(model, m)[1:]))).graph
            except Exception:  # a refused form of the op: its other cases say what it becomes
                continue
        assert isinstance(graph, Graph)
        copies = {id(n) for n in graph.nodes if n.op == "RESHAPE" and n.inputs[0] in graph.inputs
                  and n.outputs[0] in graph.outputs}  # an output that is an input is written by a copy
        for op in used:
            out.setdefault(op, set()).update(n.op for n in graph.nodes if id(n) not in copies)
    return {op: sorted(v) for op, v in out.items()}


def _text(node: ast.expr) -> str:
    """An error message's source as a reader sees it: literal parts kept, computed parts as '…'."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "…" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _text(node.left) + _text(node.right)
    return "…"


def refusals(registry: dict[str, Callable]) -> list[tuple[list[str], list[str]]]:
    """(source ops of one converter function, the details of the unsupported-form errors it and the module helpers
    it calls raise: `ctx.unsupported(node, detail)`), per converter function that has any."""
    groups: dict[Callable, list[str]] = {}
    for op, fn in registry.items():
        groups.setdefault(fn, []).append(op)
    out = []
    for fn, ops in groups.items():
        module = sys.modules[fn.__module__]
        _, calls, _ = _names(module)
        texts = {n.name: [_text(c.args[1]) for c in ast.walk(n) if isinstance(c, ast.Call)
                          and isinstance(c.func, ast.Attribute) and c.func.attr == "unsupported" and len(c.args) > 1]
                 for n in ast.parse(inspect.getsource(module)).body if isinstance(n, ast.FunctionDef)}
        seen, todo, found = set(), [fn.__name__], []
        while todo:
            f = todo.pop(0)
            if f in seen or f not in texts:
                continue
            seen.add(f)
            found += [t for t in texts[f] if t not in found and t != "…"]  # a bare "…" passes another error on
            todo += sorted(calls[f])
        if found:
            out.append((sorted(ops, key=str.lower), found))
    return sorted(out, key=lambda r: r[0][0].lower())


def _refusal_table(registry: dict[str, Callable]) -> list[str]:
    lines = ["| ops | refused forms (the error names the node and this detail; … is filled in from the model) |",
             "|---|---|"]
    for ops, found in refusals(registry):
        cells = "; ".join(t.replace("|", "\\|") for t in found)
        lines.append(f"| {', '.join(ops)} | {cells} |")
    return lines


# -- which dtypes each engine runs ----------------------------------------------------------------------------------


def _with_dtype(graph, dtype: np.dtype):
    """The single-op graph again with every float tensor in `dtype` (index tensors keep theirs)."""
    from wasmrt.compile.ir import Graph

    g = Graph()
    cast = lambda a: a.astype(dtype) if a.dtype.kind == "f" else a  # noqa: E731
    for name in graph.inputs:
        t = graph.tensors[name]
        g.add_input(name, t.shape, dtype if t.dtype.kind == "f" else t.dtype)
    for name, t in graph.tensors.items():
        if t.data is not None:
            g.tensors[name] = type(t)(name, t.shape, cast(t.data).dtype, cast(t.data))
    for n in graph.nodes:
        g.add_node(n.op, n.inputs, n.attrs, n.name, n.outputs)
    g.outputs = list(graph.outputs)
    return g


def _runs(data: bytes, engine: str, feeds: dict[str, np.ndarray]) -> bool:
    from python_ref import Interpreter
    from wasmrt.engines import load

    try:
        model = Interpreter(data) if engine == "ref" else load(data, engine, "simd" if engine == "wasm" else None)
        model.run(feeds)
        return True
    except Exception:  # any refusal (unsupported dtype, shape rule) means "does not run it"
        return False


def dtype_support() -> dict[str, dict[str, list[str]]]:
    """op -> engine -> dtypes it runs, measured on the op's first case of tests/test_engine.py."""
    from wasmrt.compile.converter import convert

    sys.path.insert(0, str(ROOT / "tests"))
    import test_engine

    first: dict[str, str] = {}
    for name, build in test_engine.CASES.items():
        graph, _ = build(np.random.default_rng(0))
        if len(graph.nodes) == 1:
            first.setdefault(graph.nodes[0].op, name)
    out: dict[str, dict[str, list[str]]] = {}
    for op, name in sorted(first.items()):
        graph, feeds = test_engine.CASES[name](np.random.default_rng(0))
        out[op] = {e: [] for e in ENGINES}
        for dt in DTYPES:
            try:
                data = convert(_with_dtype(graph, np.dtype(dt))).data
            except Exception:  # the shape rules refuse the dtype: no engine runs it
                continue
            cast = {k: (v * 10 if dt.startswith("int") else v).astype(dt) for k, v in feeds.items()}
            for e in ENGINES:
                if _runs(data, e, cast):
                    out[op][e].append(dt)
    return out


# -- the page ---------------------------------------------------------------------------------------------------------

# python_ref/opdefs.py OpDef.quant -> the int8 column
INT8_FORMS = {"": "float only", opdefs.Q_WEIGHTED: "int8, int8 weights per output channel, int32 bias",
              opdefs.Q_MOVES: "int8, the input's parameters", opdefs.Q_SELECTS: "int8", opdefs.Q_ARITHMETIC: "int8",
              opdefs.Q_TABLE: "int8 as a LOOKUP table", opdefs.Q_INTEGER: "integer"}


def op_table(support: dict[str, dict[str, list[str]]]) -> list[str]:
    """The table of .wrt ops: one row per op of python_ref/opdefs.py, the dtypes each engine runs (`support`,
    measured by dtype_support) and the op's declared int8 form."""
    lines = ["| op | inputs | attributes | ref | native | wasm | int8 |", "|---|---|---|---|---|---|---|"]
    for name, d in opdefs.OPS.items():
        attrs = ", ".join(a.name for a in d.attrs) or "–"
        row = support.get(name)
        cells = [", ".join(row[e]) or "none" for e in ENGINES] if row else ["(no test case)"] * 3
        lines.append(f"| {name} | {', '.join(d.inputs)} | {attrs} | " + " | ".join(cells)
                     + f" | {INT8_FORMS[d.quant]} |")
    return lines


def render() -> str:
    from wasmrt.compile.onnx import contrib as onnx_contrib
    from wasmrt.compile.onnx import fold as onnx_fold
    from wasmrt.compile.onnx import ops as onnx_ops
    from wasmrt.compile.onnx import quant as onnx_quant
    from wasmrt.compile.onnx.importer import CONSTANT_ONLY_OPS, SUPPORTED_OPS
    from wasmrt.compile.tflite import ops as tflite_ops

    support = dtype_support()
    lines = ["# Supported ops", "",
             "Generated by tests/ops_reference.py from python_ref/opdefs.py and the importers; do not edit "
             "(`WASMRT_UPDATE_DOCS=1 pytest tests/test_docs.py` rewrites it).", "",
             "## The .wrt ops, and the dtypes each engine runs", "",
             "Measured: each op's single-op test case rebuilt with every float tensor in the dtype and run by "
             "python_ref (`ref`), the C engine natively (`native`) and as wasm (`wasm`); index inputs keep their "
             "int32. Float weights may be stored as float16 in any case (`--weights`): engines widen them at load.",
             "The int8 column is the op's declared int8 form (python_ref/opdefs.py): what `wasmrt quantize` makes of "
             "it and what a reader accepts for it.", "", *op_table(support)]

    lines += ["", "## ONNX", "",
              "ONNX ops converted for runtime inputs, and the .wrt ops they become (`Constant`, `Shape` and `Size` "
              "become constants). Any op whose inputs are all constant is evaluated at import time.", "",
              "| ONNX op | becomes (the .wrt ops its converter can write) |", "|---|---|"]
    onnx_map = becomes(onnx_ops, onnx_ops.CONVERTERS)
    # the quantization rules write .wrt ops themselves or expand into other ONNX ops' rules (dynamic quantization)
    onnx_map |= becomes_composed(onnx_quant, onnx_quant.CONVERTERS, onnx_map)
    contrib_rules = {op: fn for op, fn in onnx_contrib.CONVERTERS.items() if fn.__module__ == onnx_contrib.__name__}
    contrib_map = becomes_composed(onnx_contrib, contrib_rules, onnx_map)
    onnx_map |= {op: contrib_map[op] for op in onnx_contrib.DEFAULT_DOMAIN}
    onnx_map |= measured_onnx({op for op in SUPPORTED_OPS if not onnx_map.get(op) and op in onnx_map})
    for op in sorted(SUPPORTED_OPS, key=str.lower):
        got = onnx_map.get(op)
        what = ", ".join(got) if got else ("nothing: its input passes through" if op in onnx_map
                                           else "a constant, at import")
        lines.append(f"| {op} | {what} |")
    lines += ["", "ONNX ops evaluated only when all their inputs are constant (shape arithmetic and the like): "
              + ", ".join(sorted(CONSTANT_ONLY_OPS & set(onnx_fold.FOLDERS), key=str.lower)) + ".", ""]
    from wasmrt.compile.onnx import control as onnx_control

    lines += ["### ONNX forms that are refused", "",
              "Attribute values and input forms a converter does not support fail at import with an "
              "UnsupportedOpError naming the file, the op, the node and the detail below. Other forms follow the ONNX "
              "operator spec, with float16 and float64 tensors computed in float32 (tests/test_onnx_semantics.py "
              "checks the breadth ops' forms against onnxruntime; tests/onnx_known_deviations.txt lists the ONNX "
              "conformance cases that differ, and why). Inputs a converter needs constant (weights, shapes, axes, "
              "pads, ...) are refused the same way when the model computes them at run time. Ops not in the table "
              "above are refused by name.",
              "", *_refusal_table({**onnx_ops.CONVERTERS, **onnx_quant.CONVERTERS, **onnx_control.CONVERTERS}), ""]
    lines += ["### onnxruntime's fused com.microsoft ops", "",
              "What onnxruntime's transformers optimizer and its graph optimizer (saved at ORT_ENABLE_EXTENDED) "
              "write, composed of .wrt ops with onnxruntime's semantics (wasmrt/compile/onnx/contrib.py; "
              "tests/test_onnx_contrib.py checks them against onnxruntime). Its quantization ops are in the table "
              "above.", "", "| com.microsoft op | becomes (the .wrt ops its converter can write) |", "|---|---|"]
    for op in sorted(onnx_contrib.CONVERTERS, key=str.lower):
        what = (f"as ONNX's {op}: " + ", ".join(onnx_map[op])) if op in onnx_contrib.SAME_AS_ONNX \
            else ", ".join(contrib_map[op])
        lines.append(f"| {op} | {what} |")
    lines += ["", *_refusal_table(contrib_rules), ""]

    lines += ["## TFLite", "",
              "TFLite builtins (and the MediaPipe custom op `Convolution2DTransposeBias`) and the .wrt ops they "
              "become; ops whose inputs are all constant (fp16 weights behind DEQUANTIZE, weight transposes) are "
              "folded at import.", "", "| TFLite op | becomes (the .wrt ops its converter can write) |", "|---|---|"]
    from wasmrt.compile.tflite import importer as tflite_import
    from wasmrt.compile.tflite import recurrent as tflite_recurrent

    tflite_map: dict[str, list[str]] = {}
    for module in (tflite_ops, tflite_recurrent):  # each handler analysed in the module that defines it
        tflite_map.update(becomes(module, module.CONVERTERS))
    for op, got in sorted(tflite_map.items()):
        lines.append(f"| {op} | {', '.join(got) if got else 'folded at import (constants only)'} |")
    lines += ["", "### TFLite forms that are refused", "",
              "As for ONNX: an UnsupportedOpError naming the file, the op, the node and the detail.", "",
              *_refusal_table(tflite_import.CONVERTERS)]
    return "\n".join(lines) + "\n"
