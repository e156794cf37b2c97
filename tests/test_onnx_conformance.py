"""ONNX backend conformance: every node test case shipped with onnx (onnx/backend/test/data/node/test_*) whose
model uses a single op type the importer claims (onnx_import.SUPPORTED_OPS) is imported, run with python_ref
and compared with the expected outputs. Ops the importer only evaluates at import time (CONSTANT_ONLY_OPS:
Equal, Where, Range, ConstantOfShape, ...) are checked too, with every input frozen.

Inputs that are not float32 (shape, axes, pads, indices tensors) and inputs the importer needs constant
(onnx_ops.CONSTANT_INPUTS, e.g. conv weights) are frozen into the graph with freeze_inputs.

Known deviations live in tests/onnx_known_deviations.txt (`test_name  reason`): a listed case that fails is an
xfail, an unlisted failure fails the test, and a listed case that passes fails too, so the list stays honest.
`python tests/test_onnx_conformance.py` prints every failing case with its error (to review the list).

Tolerance: float outputs must satisfy max|ours - expected| <= tol * max(1, max|expected|), tol from TOLERANCE
(python_ref computes in float64 and rounds once, the expected data comes from onnx's numpy reference), or from
CASE_TOLERANCE where the expected data itself is rounded; integer and boolean outputs must match exactly.
"""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from wasmrt.compile.onnx.importer import CONSTANT_INPUTS, CONSTANT_ONLY_OPS, SUPPORTED_OPS, import_onnx
from wasmrt.errors import WasmrtError

NODE_DIR = Path(onnx.__file__).parent / "backend" / "test" / "data" / "node"
DEVIATIONS_FILE = Path(__file__).with_name("onnx_known_deviations.txt")

DEFAULT_TOL = 1e-5
TOLERANCE = {
    "Pow": 1e-4,  # x**y of values up to ~1e2 in float32
    "Exp": 1e-5,
    "ConvTranspose": 1e-5,
    "Resize": 1e-5,  # coordinates are computed in float32, like onnxruntime
}
# Cases whose expected data is less precise than the computation.
CASE_TOLERANCE = {
    "test_averagepool_2d_ceil_last_window_starts_on_pad": 1e-4,  # expected values are rounded to 4 decimals
}


# -- the cases -----------------------------------------------------------------------------------------------------
@cache
def cases() -> list[str]:
    """Names of node test cases whose model uses exactly one op type, a supported or constant-only one."""
    names = []
    for d in sorted(NODE_DIR.glob("test_*")):
        model = onnx.load(d / "model.onnx", load_external_data=False)
        ops_used = {n.op_type for n in model.graph.node}
        if len(ops_used) == 1 and ops_used <= SUPPORTED_OPS | CONSTANT_ONLY_OPS:
            names.append(d.name)
    return names


@cache
def known_deviations() -> dict[str, str]:
    out: dict[str, str] = {}
    for line in DEVIATIONS_FILE.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, reason = line.partition(" ")
            out[name] = reason.strip()
    return out


def _load_pb(path: Path) -> np.ndarray:
    t = onnx.TensorProto()
    t.ParseFromString(path.read_bytes())
    if not t.dims and not t.raw_data and not t.float_data and not t.int64_data and not t.int32_data and \
            not t.string_data and not t.double_data and t.data_type == 0:
        raise TypeError(f"{path.name} is not a tensor (sequence or optional value)")
    return numpy_helper.to_array(t)


def _frozen_inputs(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> set[str]:
    """Graph inputs to turn into constants: non-float ones, those the op needs constant, all for constant-only ops."""
    need: set[str] = set()
    for node in model.graph.node:
        if node.op_type in CONSTANT_ONLY_OPS:
            need.update(node.input)
        for i in CONSTANT_INPUTS.get(node.op_type, ()):
            if i < len(node.input) and node.input[i]:
                need.add(node.input[i])
    return {n for n, a in feeds.items() if n in need or a.dtype.kind != "f"}


def _compare(name: str, ours: np.ndarray, expected: np.ndarray, tol: float) -> str | None:
    ours = np.asarray(ours)
    if ours.shape != expected.shape:
        return f"output {name}: shape {ours.shape}, expected {expected.shape}"
    if expected.dtype.kind not in "fc":
        if not np.array_equal(ours.astype(expected.dtype), expected):
            return f"output {name}: values differ (exact comparison for {expected.dtype})"
        return None
    if expected.size == 0:
        return None
    exp64, ours64 = expected.astype(np.float64), ours.astype(np.float64)
    if not np.array_equal(np.isnan(exp64), np.isnan(ours64)):
        return f"output {name}: NaN positions differ"
    mask = ~np.isnan(exp64)
    if not np.array_equal(exp64[mask & np.isinf(exp64)], ours64[mask & np.isinf(exp64)]):
        return f"output {name}: infinities differ"
    finite = mask & np.isfinite(exp64)
    err = float(np.abs(ours64[finite] - exp64[finite]).max(initial=0.0))
    scale = max(1.0, float(np.abs(exp64[finite]).max(initial=0.0)))
    if err > tol * scale:
        return f"output {name}: max error {err:.3g} > {tol:g} * {scale:.3g}"
    return None


def run_case(case: str) -> str | None:
    """None if the case passes, else why it fails."""
    d = NODE_DIR / case
    model = onnx.load(d / "model.onnx")
    op = model.graph.node[0].op_type
    inits = {i.name for i in model.graph.initializer}
    in_names = [i.name for i in model.graph.input if i.name not in inits]
    out_names = [o.name for o in model.graph.output]
    sets = sorted(d.glob("test_data_set_*"))
    if not sets:
        return "no test data"
    for ds in sets:
        try:
            feeds = {n: _load_pb(ds / f"input_{k}.pb") for k, n in enumerate(in_names)}
            expected = [_load_pb(ds / f"output_{k}.pb") for k in range(len(out_names))]
        except (TypeError, ValueError) as e:
            return f"test data: {e}"
        frozen = _frozen_inputs(model, feeds)
        try:
            graph = import_onnx(model, input_shapes={n: a.shape for n, a in feeds.items() if n not in frozen},
                                freeze_inputs={n: feeds[n] for n in frozen})
            values = graph.evaluate({n: a for n, a in feeds.items() if n not in frozen})
            ours = {o: values[o] for o in graph.outputs}
        except WasmrtError as e:
            return f"{type(e).__name__}: {e}"
        except Exception as e:  # a bug somewhere: report it like a failure, with its type
            return f"{type(e).__name__}: {e}"
        for name, exp in zip(out_names, expected, strict=True):
            problem = _compare(name, ours[name], exp, CASE_TOLERANCE.get(case, TOLERANCE.get(op, DEFAULT_TOL)))
            if problem:
                return f"{ds.name}: {problem}"
    return None


# -- the tests -----------------------------------------------------------------------------------------------------
pytestmark = pytest.mark.skipif(not NODE_DIR.is_dir(), reason="onnx backend node test data not installed "
                                "(onnx==1.22.0 wheels ship it)")


def test_case_selection_is_broad() -> None:
    assert len(cases()) > 300, "far fewer conformance cases than expected: is the onnx test data complete?"


def test_deviation_list_names_real_cases() -> None:
    stale = sorted(set(known_deviations()) - set(cases()))
    assert not stale, f"onnx_known_deviations.txt lists cases that are not selected: {stale}"


@pytest.mark.parametrize("case", cases() if NODE_DIR.is_dir() else [])
def test_onnx_node_case(case: str) -> None:
    problem = run_case(case)
    listed = known_deviations().get(case)
    if listed is not None:
        if problem is None:
            pytest.fail(f"{case} is listed in onnx_known_deviations.txt ({listed}) but passes: remove it")
        pytest.xfail(f"known deviation: {listed}")
    assert problem is None, problem


def _fully_folded(case: str) -> bool:
    """True when every input of the case is frozen, so the importer evaluates the whole model."""
    d = NODE_DIR / case
    model = onnx.load(d / "model.onnx")
    inits = {i.name for i in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in inits]
    feeds = {n: _load_pb(d / "test_data_set_0" / f"input_{k}.pb") for k, n in enumerate(names)}
    return set(names) <= _frozen_inputs(model, feeds)


if __name__ == "__main__":  # print every failing case, to review onnx_known_deviations.txt, then a summary
    failures = [(c, p) for c in cases() if (p := run_case(c)) is not None]
    for c, p in failures:
        print(f"{c}  {p}")
    failed = {c for c, _ in failures}
    folded = sum(1 for c in cases() if c not in failed and _fully_folded(c))
    print(f"{len(cases())} cases: {len(cases()) - len(failed)} pass ({folded} of them evaluated entirely at import), "
          f"{len(failed)} fail ({len(failed & set(known_deviations()))} listed as known deviations)", file=sys.stderr)
