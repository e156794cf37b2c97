"""The wasmrt command: convert, inspect, run, and one readable error line (no traceback) for bad input."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper


def wasmrt(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "wasmrt.cli", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=300)


@pytest.fixture(scope="module")
def tiny_onnx(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """NCHW conv + BN + relu + global pool + flatten + gemm: exercises layout, folding and fusion."""
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w"),
        numpy_helper.from_array(rng.uniform(0.5, 1.5, 8).astype(np.float32), "scale"),
        numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "bias"),
        numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "mean"),
        numpy_helper.from_array(rng.uniform(0.5, 2, 8).astype(np.float32), "var"),
        numpy_helper.from_array(rng.standard_normal((8, 5)).astype(np.float32), "fc_w"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("BatchNormalization", ["c", "scale", "bias", "mean", "var"], ["b"]),
        helper.make_node("Relu", ["b"], ["r"]),
        helper.make_node("GlobalAveragePool", ["r"], ["p"]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "fc_w"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 17, 15])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    path = tmp_path_factory.mktemp("cli") / "tiny.onnx"
    onnx.save(model, path)
    return path


def test_convert_inspect_run_matches_onnxruntime(tiny_onnx: Path, tmp_path: Path) -> None:
    r = wasmrt("convert", str(tiny_onnx), "-o", "tiny.wrt", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "wrote tiny.wrt" in r.stdout

    r = wasmrt("inspect", "tiny.wrt", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "x  [1,3,17,15] float32" in r.stdout and "y  [1,5] float32" in r.stdout
    assert "arena:" in r.stdout and "lower bound" in r.stdout

    x = np.random.default_rng(5).standard_normal((1, 3, 17, 15)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    r = wasmrt("run", "tiny.wrt", "--engine", "ref", "--input", "x=x.npy", "-o", "out", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    got = np.load(tmp_path / "out" / "y.npy")
    want = ort.InferenceSession(str(tiny_onnx), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()


def test_random_input_prints_its_seed(tiny_onnx: Path, tmp_path: Path) -> None:
    assert wasmrt("convert", str(tiny_onnx), "-o", "t.wrt", cwd=tmp_path).returncode == 0
    r = wasmrt("run", "t.wrt", "--seed", "7", cwd=tmp_path)
    assert r.returncode == 0 and "random input 'x' [1, 3, 17, 15] float32 (seed 7)" in r.stdout


@pytest.mark.parametrize(
    ("setup", "args", "message"),
    [
        (None, ["convert", "missing.onnx"], "missing.onnx"),
        ("garbage", ["convert", "bad.onnx"], "bad.onnx"),
        ("garbage", ["inspect", "bad.onnx"], "not a .wrt model"),
        ("truncated", ["run", "cut.wrt"], "cut.wrt"),
        ("unsupported", ["convert", "odd.onnx"], "unsupported op 'Einsum' (node 'mystery')"),
        ("model", ["run", "m.wrt", "--input", "x=nope.npy"], "nope.npy does not exist"),
        ("model", ["run", "m.wrt", "--input", "q=x.npy"], "unknown input 'q'"),
        ("badshape", ["run", "m.wrt", "--input", "x=x.npy"], "input 'x': shape [1, 3, 4, 4], expected"),
    ],
)
def test_errors_are_one_clear_line(setup: str | None, args: list[str], message: str, tiny_onnx: Path,
                                   tmp_path: Path) -> None:
    if setup == "garbage":
        (tmp_path / "bad.onnx").write_bytes(b"\x08\x07garbage" * 10)
    elif setup == "truncated":
        assert wasmrt("convert", str(tiny_onnx), "-o", "m.wrt", cwd=tmp_path).returncode == 0
        (tmp_path / "cut.wrt").write_bytes((tmp_path / "m.wrt").read_bytes()[:300])
    elif setup == "unsupported":
        node = helper.make_node("Einsum", ["x", "x"], ["y"], equation="ij,jk->ik", name="mystery")
        g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])])
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), tmp_path / "odd.onnx")
    elif setup in ("model", "badshape"):
        assert wasmrt("convert", str(tiny_onnx), "-o", "m.wrt", cwd=tmp_path).returncode == 0
        shape = (1, 3, 17, 15) if setup == "model" else (1, 3, 4, 4)
        np.save(tmp_path / "x.npy", np.zeros(shape, np.float32))
    r = wasmrt(*args, cwd=tmp_path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    assert r.stderr.startswith("wasmrt: error: ") and message in r.stderr, r.stderr
