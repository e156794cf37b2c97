"""Adding a CPU element-wise op: its declaration in python_ref/opdefs.py, its reference (python_ref/ops.py KERNELS)
and its vector kernel (kernels_wasm/gen/kernels/eltwise.py UNARY) are all it takes; every table follows.

The test declares a dummy op, SQUARE (y = x * x, code 99, family UNARY, int8 as a LOOKUP table, floats only), in a
fresh interpreter (`python tests/test_new_op.py OUT`), exactly as a new line in opdefs.py would be seen: before any
module that reads the op table is imported. There it asks every table that groups ops whether SQUARE is in it (the
C op tables and the kernel op codes, the schema and the JS reader's tables, python_ref's shape rule, dtype and int8
rules, the quantizer's sets, the engine fuzzer's seeds, the docs table) and writes the generated C files; the test
then compiles the C engine with them and runs a SQUARE model against python_ref. `--hand-kept` runs the same
checks with the tables as they were written by hand before they were generated (and the committed C header): each
check must then fail, so none of them can pass by construction.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
OP, CODE = "SQUARE", 99

TABLES = ("C op tables (wrt_ops.h)", "kernel op codes (wrt_eltwise.h)", "schema", "JS format tables", "docs table",
          "engine fuzzer seeds", "int8 rules (qrules)", "quantizer sets", "shape rule", "floats only",
          "quantized as a LOOKUP")
# what the tables held when each was written by hand (before they were generated from opdefs)
HAND_TABULATED = {"LEAKY_RELU", "HARD_SWISH", "HARD_SIGMOID", "SIGMOID", "TANH", "EXP", "SQRT", "ABS", "NEG"}
HAND_SEEDS = ("RELU", "LEAKY_RELU", "HARD_SWISH", "SIGMOID", "TANH", "EXP", "SQRT", "ABS", "NEG")
HAND_UNARY_RULES = ("RELU", "LEAKY_RELU", "HARD_SWISH", "HARD_SIGMOID", "SIGMOID", "TANH", "EXP", "SQRT", "ABS",
                    "NEG", "ERF", "LOG", "FLOOR", "CEIL")
HAND_FLOAT_ONLY = {"CONV_2D", "CONV_TRANSPOSE_2D", "FULLY_CONNECTED", "POW", "PRELU", "LEAKY_RELU", "HARD_SWISH",
                   "HARD_SIGMOID", "SIGMOID", "TANH", "EXP", "SQRT", "MAX_POOL_2D", "AVERAGE_POOL_2D", "MEAN",
                   "SOFTMAX", "RESIZE", "LAYER_NORM", "GELU", "ERF", "LOG", "FLOOR", "CEIL", "LSTM", "GRU", "RNN",
                   "LANDMARKS_TO_TRANSFORM_MATRIX", "TRANSFORM_TENSOR_BILINEAR", "TRANSFORM_LANDMARKS"}


# -- in the fresh interpreter ------------------------------------------------------------------------------------


def declare() -> None:
    """The three hand-written parts of the new op."""
    from python_ref import opdefs

    opdefs._op(OP, CODE, ("x",), doc="x * x", family=opdefs.UNARY, quant=opdefs.Q_TABLE, float_only=True)
    d = opdefs._DEFS[-1]
    opdefs.OPS[d.name], opdefs.BY_CODE[d.code] = d, d  # (opdefs builds both from _DEFS when it is imported)

    # the reference: one more entry of python_ref/ops.py KERNELS (which checks at import that every op has one)
    import python_ref

    src = (ROOT / "python_ref" / "ops.py").read_text()
    head = "KERNELS: dict[str, _Kernel] = {\n"
    assert head in src
    ops = types.ModuleType("python_ref.ops")
    ops.__file__ = str(ROOT / "python_ref" / "ops.py")
    sys.modules["python_ref.ops"] = python_ref.ops = ops
    exec(compile(src.replace(head, head + f'    "{OP}": _unary(lambda x: x * x),\n'), ops.__file__, "exec"),
         ops.__dict__)

    from kernels_wasm.gen.kernels import eltwise  # the vector kernel, for every target

    eltwise.UNARY[OP.lower()] = ((), 0, eltwise._one(lambda i, x: i.mul(x, x)))


def hand_kept() -> None:
    """The tables as they were kept by hand (what the checks must catch)."""
    from python_ref import qrules, shapes
    from wasmrt.compile import quantizer
    from wasmrt.fuzz import seeds

    qrules.TABULATED = quantizer.TABULATED = set(HAND_TABULATED)
    quantizer.QUANTIZABLE = quantizer.WEIGHTED | quantizer.SHARED | quantizer.ARITHMETIC | quantizer.TABULATED
    shapes._FLOAT_ONLY = set(HAND_FLOAT_ONLY)
    shapes._RULES = {k: v for k, v in shapes._RULES.items() if k != OP}
    seeds.OPS = {k: v for k, v in seeds.OPS.items() if k in HAND_SEEDS or seeds.OPS[k].family != seeds.UNARY}
    assert set(HAND_UNARY_RULES) <= shapes.family(shapes.UNARY)


def tables(c_header: str | None = None) -> dict[str, bool]:
    """Every table that groups ops: does it hold SQUARE, as what it is? c_header: the C op tables to look at
    (default: what tools/gen_c_tables.py generates now)."""
    from kernels_wasm.gen.kernels import eltwise
    from python_ref import qrules, shapes
    from python_ref.quant import QuantParams
    from tools import gen_c_tables, gen_js_tables, gen_schema
    from wasmrt.compile import quantizer
    from wasmrt.compile.ir import Graph
    from wasmrt.fuzz import seeds

    sys.path.insert(0, str(ROOT / "tests"))
    import ops_reference

    f32, i32 = np.dtype(np.float32), np.dtype(np.int32)
    header = gen_c_tables.header_text() if c_header is None else c_header
    found: dict[str, bool] = {
        "C op tables (wrt_ops.h)": f"  OP_{OP} = {CODE}," in header and re.search(
            rf'\[OP_{OP}\] = {{"{OP}", {CODE}, 1, 1, 0, 1, 0, OPTIONS_NONE, 0, WRT_FAMILY_UNARY, WRT_QUANT_TABLE, 0, '
            rf'WRT_UN_{OP}}}', header) is not None,
        "kernel op codes (wrt_eltwise.h)": f"WRT_UN_{OP} = " in eltwise.header(),
        "schema": f"  {OP} = {CODE}" in gen_schema.schema_text(),
        "JS format tables": f'  {CODE}: "{OP}",' in gen_js_tables.format_module_text(gen_schema.schema_text(), 1),
        "docs table": any(line.startswith(f"| {OP} | x | – |") and line.endswith("| int8 as a LOOKUP table |")
                          for line in ops_reference.op_table({})),
        "engine fuzzer seeds": OP in seeds.op_graphs(),
        "int8 rules (qrules)": OP in qrules.TABULATED and OP not in qrules.QUANTIZED_OPS,
        "quantizer sets": OP in quantizer.TABULATED and OP in quantizer.QUANTIZABLE and OP not in quantizer.FIXED,
    }
    try:
        found["shape rule"] = shapes.infer(OP, [((2, 3), f32)], {}) == [((2, 3), f32)]
    except (ValueError, KeyError):
        found["shape rule"] = False
    try:
        shapes.infer(OP, [((2, 3), i32)], {})
        found["floats only"] = False
    except (ValueError, KeyError) as e:
        found["floats only"] = "is not a floating-point type" in str(e)
    # the quantizer makes it a LOOKUP of its own table
    try:
        g = Graph()
        (y,) = g.add_node(OP, [g.add_input("x", (4,))], name="sq", outputs=["y"])
        g.outputs.append(y)
        q, plan = quantizer.quantize_graph(g, {"x": (-2.0, 2.0), "y": (0.0, 4.0)})
        lookup = [n for n in q.nodes if n.op == "LOOKUP"]
        table = q.tensors[lookup[0].inputs[1]].data if lookup else None
        qx, qy = quantizer.qm.params_for_range(-2.0, 2.0), quantizer.qm.params_for_range(0.0, 4.0)
        assert (qx, qy) == (QuantParams.make(4 / 255, -1), QuantParams.make(4 / 255, -128))
        want = quantizer.qm.quantize(np.square(quantizer.qm.dequantize(np.arange(-128, 128).astype(np.int8), qx)),
                                     qy, np.int8)
        found["quantized as a LOOKUP"] = plan.decisions == {"sq": "int8"} and table is not None and \
            np.array_equal(table, want)
    except Exception:  # a hand-kept set refuses the op: a finding, not an error
        found["quantized as a LOOKUP"] = False
    return found


def main(out: Path, stale: bool) -> None:
    declare()
    from kernels_wasm.gen.emit import generate_target
    from kernels_wasm.gen.isa import TARGETS
    from kernels_wasm.gen.kernels import eltwise
    from tools import gen_c_tables

    header = None
    if stale:
        hand_kept()
        header = (ROOT / gen_c_tables.C_HEADER_PATH).read_text()
    out.mkdir(parents=True, exist_ok=True)
    (out / "tables.json").write_text(json.dumps(tables(header)))
    if not stale:
        (out / "wrt_ops.h").write_text(gen_c_tables.header_text())
        (out / eltwise.HEADER).write_text(eltwise.header())
        (out / "scalar.c").write_text(generate_target(TARGETS["scalar"]))
        # a SQUARE model and its python_ref outputs, for the C engine
        from python_ref import Interpreter
        from wasmrt.compile.converter import convert
        from wasmrt.compile.ir import Graph

        g = Graph()
        (y,) = g.add_node(OP, [g.add_input("x", (3, 7))], name="sq", outputs=["y"])
        g.outputs.append(y)
        data = convert(g).data
        x = np.linspace(-3.5, 3.25, 21, dtype=np.float32).reshape(3, 7)
        (out / "square.wrt").write_bytes(data)
        (out / "x.bin").write_bytes(x.tobytes())
        (out / "ref.bin").write_bytes(Interpreter(data).run({"x": x})["y"].tobytes())


# -- the tests ---------------------------------------------------------------------------------------------------


def _fresh(out: Path, *flags: str) -> dict[str, Any]:
    r = subprocess.run([sys.executable, __file__, str(out), *flags], cwd=ROOT, capture_output=True, text=True,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr[-4000:]
    return json.loads((out / "tables.json").read_text())


@pytest.fixture(scope="module")
def declared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("new_op")
    return out, _fresh(out)


def test_every_table_picks_up_a_new_elementwise_op(declared: tuple[Path, dict[str, Any]]) -> None:
    _, found = declared
    assert found == {k: True for k in TABLES}, [k for k, v in found.items() if not v]


def test_hand_kept_tables_would_be_caught(tmp_path: Path) -> None:
    """The same checks over the tables as they were written by hand, and the committed C header: each fails."""
    found = _fresh(tmp_path, "--hand-kept")
    generated_anyway = {"kernel op codes (wrt_eltwise.h)", "schema", "JS format tables", "docs table"}
    assert {k for k, v in found.items() if not v} == set(found) - generated_anyway


def test_the_c_engine_runs_the_new_op_with_no_c_edit(declared: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    """The engine's C sources as they are, with the generated files of the new op: SQUARE is verified, its shape
    inferred, dispatched to its vector kernel and computed as python_ref computes it."""
    from wasmrt.dev import build

    cc = shutil.which("gcc") or shutil.which("clang-19")
    if cc is None:
        pytest.skip("no C compiler (gcc or clang-19)")
    out, _ = declared
    kw = tmp_path / "kernels_wasm"
    shutil.copytree(build.ENGINE, kw / "engine", ignore=shutil.ignore_patterns("*.md"))
    shutil.copytree(build.INCLUDE, kw / "include")
    (kw / "generated").mkdir()
    for header in build.GENERATED.glob("*.h"):  # the committed headers the new op does not change
        shutil.copy(header, kw / "generated" / header.name)
    shutil.copy(out / "wrt_ops.h", kw / "engine" / "generated" / "wrt_ops.h")
    for name in ("wrt_eltwise.h", "scalar.c"):
        shutil.copy(out / name, kw / "generated" / name)
    driver = tmp_path / "wrt_driver"
    r = subprocess.run([cc, *build.CFLAGS[:1], "-O1", *build.CFLAGS[2:], "-I", str(kw / "include"),
                        *map(str, sorted((kw / "engine").glob("*.c"))), str(kw / "generated" / "scalar.c"),
                        str(kw / "engine" / "test" / "driver.c"), "-o", str(driver), "-lm"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-4000:]
    run = subprocess.run([str(driver), "run", str(out / "square.wrt"), str(tmp_path), str(out / "x.bin")],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    got = np.frombuffer((tmp_path / "out0.bin").read_bytes(), np.float32)
    want = np.frombuffer((out / "ref.bin").read_bytes(), np.float32)
    x = np.frombuffer((out / "x.bin").read_bytes(), np.float32)
    np.testing.assert_array_equal(want, x * x)
    np.testing.assert_array_equal(got, want)


if __name__ == "__main__":
    main(Path(sys.argv[1]), "--hand-kept" in sys.argv[2:])
