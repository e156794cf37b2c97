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
    return subprocess.run([sys.executable, "-m", "wasmrt.cli.main", *args], capture_output=True, text=True, cwd=cwd,
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


# -- serving models it has never seen ------------------------------------------------------------------------------


def test_bare_command_prints_help_and_version(tmp_path: Path) -> None:
    from wasmrt import __version__

    r = wasmrt(cwd=tmp_path)
    assert r.returncode == 0 and "usage: wasmrt" in r.stdout and "convert" in r.stdout and "run" in r.stdout
    r = wasmrt("--version", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == f"wasmrt {__version__}"


def test_preprocessing_flags_are_stored_and_used(tiny_onnx: Path, tmp_path: Path) -> None:
    """--range 0,1 with torchvision's mean/std: stored as pixel-unit hints, used by `run --input x=photo.png`, and
    the same flags given to `run` on a model without hints give the same tensor."""
    from PIL import Image

    from wasmrt.compile.ir import Preprocess
    from wasmrt.preprocess import image_to_tensor

    rng = np.random.default_rng(1)
    Image.fromarray(rng.integers(0, 256, (40, 30, 3), dtype=np.uint8)).save(tmp_path / "photo.png")
    flags = ["--mean", "0.485,0.456,0.406", "--std", "0.229,0.224,0.225", "--range", "0,1", "--resize", "crop"]
    assert wasmrt("convert", str(tiny_onnx), "-o", "hinted.wrt", *flags, cwd=tmp_path).returncode == 0
    r = wasmrt("inspect", "hinted.wrt", cwd=tmp_path)
    assert "image: RGB NCHW, (pixel - [123.675,116.28,103.53]) / [58.395,57.12,57.375], crop 0.875" in r.stdout
    pre = Preprocess(layout="NCHW", mean=(123.675, 116.28, 103.53), std=(58.395, 57.12, 57.375), resize="crop",
                     crop_fraction=0.875)
    x = image_to_tensor(np.asarray(Image.open(tmp_path / "photo.png")), pre, (1, 3, 17, 15))
    np.save(tmp_path / "x.npy", x)
    r = wasmrt("run", "hinted.wrt", "--engine", "ref", "--input", "x=x.npy", "-o", "want", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    r = wasmrt("run", "hinted.wrt", "--engine", "ref", "--input", "x=photo.png", "-o", "hinted", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert wasmrt("convert", str(tiny_onnx), "-o", "plain.wrt", cwd=tmp_path).returncode == 0
    r = wasmrt("run", "plain.wrt", "--engine", "ref", "--input", "x=photo.png", cwd=tmp_path)
    assert r.returncode == 2 and "--mean/--std/--range/--layout" in r.stderr
    r = wasmrt("run", "plain.wrt", "--engine", "ref", "--input", "x=photo.png", "-o", "flags", *flags, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    want = np.load(tmp_path / "want" / "y.npy")
    for d in ("hinted", "flags"):  # the hints are stored as float32, hence not bit-equal
        np.testing.assert_allclose(np.load(tmp_path / d / "y.npy"), want, rtol=1e-5, atol=1e-5, err_msg=d)


def test_freeze_makes_an_input_a_constant(tmp_path: Path) -> None:
    g = helper.make_graph([helper.make_node("Mul", ["x", "gain"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4]),
                           helper.make_tensor_value_info("gain", TensorProto.FLOAT, [])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), tmp_path / "gain.onnx")
    r = wasmrt("convert", "gain.onnx", "--freeze", "gain=2.5", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    r = wasmrt("inspect", "gain.wrt", cwd=tmp_path)
    assert r.stdout.split("inputs:")[1].split("outputs:")[0].strip() == "x  [1,4] float32"  # gain is no input
    np.save(tmp_path / "x.npy", np.arange(4, dtype=np.float32)[None])
    assert wasmrt("run", "gain.wrt", "--input", "x=x.npy", "-o", "out", cwd=tmp_path).returncode == 0
    assert np.array_equal(np.load(tmp_path / "out" / "y.npy"), 2.5 * np.arange(4, dtype=np.float32)[None])
    r = wasmrt("convert", "gain.onnx", "--freeze", "gain=1,2", cwd=tmp_path)
    assert r.returncode == 2 and "input 'gain' has shape []" in r.stderr


def test_run_picks_the_fastest_engine_and_says_which(tiny_onnx: Path, tmp_path: Path) -> None:
    assert wasmrt("convert", str(tiny_onnx), "-o", "t.wrt", cwd=tmp_path).returncode == 0
    r = wasmrt("run", "t.wrt", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "on the native engine (" in r.stdout and "the fastest here" in r.stdout, r.stdout
    r = wasmrt("run", "t.wrt", "--variant", "simd", cwd=tmp_path)
    assert "on the wasm engine (wasm_simd128 kernels, 1 thread)" in r.stdout, r.stdout
    r = wasmrt("run", "t.wrt", "--variant", "simd", "--threads", "2", cwd=tmp_path)
    assert "on the wasm engine (wasm_simd128 kernels, 2 threads)" in r.stdout, r.stdout


def _dynamic_onnx(path: Path) -> None:
    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4, "H", "W"])], [w])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["convert", "dyn.onnx"], "dyn.onnx: input 'x' has dynamic dimensions [N, 3, H, W]: give them with "
                                  "--input-shape x=1,3,H,W"),
        (["convert", "dyn.onnx", "--input-shape", "x=1,3,90000,90000"], "more than an input may hold"),
        (["convert", "dyn.onnx", "--input-shape", "x=1,3,-4,8"], "dimension -4 is outside"),
        (["convert", "dyn.onnx", "--input-shape", "z=1,3,8,8"], "dyn.onnx: no input named 'z'"),
        (["convert", "m.wrt"], "m.wrt: already a .wrt model, neither an ONNX nor a TFLite model"),
        (["convert", "tiny.onnx", "--input-shape", "x=1,3,20,20"], "dimension 2 is fixed to 17 in the model"),
        (["run", "m.wrt", "--input", "x=fake.npy"], "fake.npy is not a .npy file"),
        (["run", "m.wrt", "--input", "x=notes.txt"], "notes.txt is neither a .npy array nor an image"),
        (["inspect", "nothing.wrt"], "nothing.wrt: No such file or directory"),
        (["run", "m.wrt", "--engine", "rocket"], "argument --engine: invalid choice: 'rocket'"),
        (["run", "m.wrt", "--mean", "1,2"], "--mean takes one value or three"),
    ],
)
def test_more_errors_are_one_clear_line(args: list[str], message: str, tiny_onnx: Path, tmp_path: Path) -> None:
    _dynamic_onnx(tmp_path / "dyn.onnx")
    (tmp_path / "tiny.onnx").write_bytes(tiny_onnx.read_bytes())
    assert wasmrt("convert", "tiny.onnx", "-o", "m.wrt", cwd=tmp_path).returncode == 0
    (tmp_path / "fake.npy").write_bytes(b"not numpy at all")
    (tmp_path / "notes.txt").write_text("hello")
    r = wasmrt(*args, cwd=tmp_path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert r.stderr.startswith("wasmrt: error: ") and message in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1, r.stderr


def test_input_notes_and_warnings(tiny_onnx: Path, tmp_path: Path) -> None:
    assert wasmrt("convert", str(tiny_onnx), "-o", "m.wrt", cwd=tmp_path).returncode == 0
    x = np.random.default_rng(0).standard_normal((1, 3, 17, 15))
    x[0, 0, 0, :3] = [np.nan, np.inf, -np.inf]
    np.save(tmp_path / "x64.npy", x)
    r = wasmrt("run", "m.wrt", "--engine", "ref", "--input", "x=x64.npy", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "note: input 'x': x64.npy holds float64; cast to float32" in r.stderr
    assert "warning: input 'x': x64.npy has 3 NaN or infinite value(s)" in r.stderr


def test_overriding_a_static_tflite_shape_warns(tmp_path: Path) -> None:
    from wasmrt.zoo.models import model_path

    src = model_path("face_detection_short_range.tflite")
    r = wasmrt("convert", str(src), "--no-preset", "--input-shape", "input=1,256,256,3", "-o", "f.wrt", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "warning: face_detection_short_range.tflite: input 'input' is [1, 128, 128, 3] in the model; using " \
           "[1, 256, 256, 3]" in r.stderr


def test_a_closed_pipe_is_one_line(tiny_onnx: Path, tmp_path: Path) -> None:
    assert wasmrt("convert", str(tiny_onnx), "-o", "m.wrt", cwd=tmp_path).returncode == 0
    proc = subprocess.Popen([sys.executable, "-m", "wasmrt.cli.main", "run", "m.wrt", "--engine", "ref"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader goes away before anything is written (like `| head -0`)
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 1
    assert err == "wasmrt: stopped: the output pipe was closed\n", err


def test_mobilenet_says_random_weights_and_has_no_labels(tmp_path: Path) -> None:
    """No registry package ships MobileNetV2's ImageNet weights: the bundled one says so and names no classes."""
    from wasmrt.zoo.models import model_path

    assert wasmrt("convert", str(model_path("mobilenet_v2")), "-o", "m.wrt", cwd=tmp_path).returncode == 0
    assert "note: random weights" in wasmrt("inspect", "m.wrt", cwd=tmp_path).stdout
    r = wasmrt("run", "m.wrt", cwd=tmp_path)
    assert r.returncode == 0 and "note: random weights" in r.stdout and "labels" not in r.stdout
    assert "score" not in r.stdout  # no top-5 class list
