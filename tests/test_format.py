"""The .wrt format: round trip, alignment, schema freshness, and clean errors on corrupt or hostile files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from graphs import conv_bn_relu_graph

from python_ref import Interpreter
from python_ref.errors import ModelFormatError
from python_ref.wrt_file import read_wrt
from wasmrt.compile.converter import convert
from wasmrt.compile.ir import Preprocess

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wrt() -> bytes:
    g = conv_bn_relu_graph()
    g.metadata.source = "hand-built"
    pre = {"input": Preprocess(layout="NHWC", mean=(1.0, 2.0, 3.0), std=(4.0, 5.0, 6.0), resize="letterbox")}
    return convert(g, preprocess=pre, labels=["a", "b", "c", "d"]).data


def test_schema_and_generated_code_are_current() -> None:
    r = subprocess.run([sys.executable, str(ROOT / "tools/gen_schema.py"), "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_round_trip_keeps_graph_and_metadata(wrt: bytes) -> None:
    m = read_wrt(wrt)
    names = [t.name for t in m.tensors]
    assert [names[i] for i in m.inputs] == ["input"] and [names[i] for i in m.outputs] == ["logits"]
    assert [op.op for op in m.ops] == ["CONV_2D", "RESHAPE", "FULLY_CONNECTED"]  # BN folded, ReLU fused
    conv = m.ops[0]
    assert conv.attrs["strides"] == (2, 2) and conv.attrs["pads"] == (1, 1, 0, 0) and conv.attrs["act_min"] == 0
    assert m.metadata["labels"] == ["a", "b", "c", "d"]
    pre = m.metadata["preprocess"][0]
    assert pre["mean"] == (1.0, 2.0, 3.0) and pre["resize"] == "letterbox"


def test_constants_are_aligned_for_simd_loads(wrt: bytes) -> None:
    m = read_wrt(wrt)
    base = np.frombuffer(wrt, np.uint8).ctypes.data
    for t in m.tensors:
        if t.data is not None and t.data.size:
            # the reader views the file's bytes; their offset in the file is what the C engine sees
            off = t.data.__array_interface__["data"][0] - base
            if 0 <= off < len(wrt):
                assert off % 64 == 0, (t.name, off)


def test_converted_graph_computes_what_the_unoptimized_one_does(wrt: bytes) -> None:
    g = conv_bn_relu_graph()
    x = np.random.default_rng(1).standard_normal((1, 9, 9, 5)).astype(np.float32)
    values = g.evaluate({"input": x})
    got = Interpreter(wrt).run({"input": x})["logits"]
    np.testing.assert_allclose(got, values["logits"], rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("cut", [0, 3, 7, 8, 40, 200, 1000, -100])
def test_truncated_file_is_a_format_error(wrt: bytes, cut: int) -> None:
    with pytest.raises(ModelFormatError, match=r"<bytes>|model"):
        read_wrt(wrt[:cut])


def test_wrong_identifier_is_named(wrt: bytes) -> None:
    with pytest.raises(ModelFormatError, match="file identifier"):
        read_wrt(wrt[:4] + b"XXXX" + wrt[8:], "x.wrt")


def test_flipped_bytes_never_escape_as_other_errors(wrt: bytes) -> None:
    """Random corruption must give ModelFormatError or a model that still verifies; never another exception."""
    rng = np.random.default_rng(0)
    outcomes = {"error": 0, "ok": 0}
    for _ in range(400):
        data = bytearray(wrt)
        for pos in rng.integers(8, len(data), size=rng.integers(1, 4)):
            data[pos] = rng.integers(0, 256)
        try:
            m = read_wrt(bytes(data))
        except ModelFormatError:
            outcomes["error"] += 1
            continue
        outcomes["ok"] += 1
        assert all(0 <= i < len(m.tensors) for i in m.inputs + m.outputs)
    assert outcomes["error"] > 0 and outcomes["ok"] > 0, outcomes


def _repack(root: object) -> bytes:
    import flatbuffers

    b = flatbuffers.Builder(0)
    b.Finish(root.Pack(b), file_identifier=b"WRT0")
    return bytes(b.Output())


def test_out_of_range_tensor_index_is_named() -> None:
    from python_ref._fb import wrt_generated as fb

    root = fb.ModelT.InitFromPackedBuf(convert(conv_bn_relu_graph()).data, 0)
    root.operators[0].inputs = [root.operators[0].inputs[0], 999]
    with pytest.raises(ModelFormatError, match=r"operator 0 \(CONV_2D .*input tensor index 999 out of range"):
        read_wrt(_repack(root))


def test_absurd_shape_is_named() -> None:
    from python_ref._fb import wrt_generated as fb

    root = fb.ModelT.InitFromPackedBuf(convert(conv_bn_relu_graph()).data, 0)
    root.tensors[0].shape = [1 << 20, 1 << 20, 1 << 20]
    with pytest.raises(ModelFormatError, match="absurd shape"):
        read_wrt(_repack(root))


def test_wrong_input_shape_and_name_are_clear(wrt: bytes) -> None:
    from python_ref.errors import InputError

    m = Interpreter(wrt)
    with pytest.raises(InputError, match=r"input 'input': shape \[1, 9, 9, 4\], expected \[1, 9, 9, 5\]"):
        m.run({"input": np.zeros((1, 9, 9, 4), np.float32)})
    with pytest.raises(InputError, match="dtype float64, expected float32"):
        m.run({"input": np.zeros((1, 9, 9, 5))})
    with pytest.raises(InputError, match="unknown input 'x'"):
        m.run({"x": np.zeros((1, 9, 9, 5), np.float32)})


def _fp16_graph(weights: np.ndarray) -> object:
    from wasmrt.compile.ir import Graph

    g = Graph()
    x = g.add_input("x", (1, 4, 4, weights.shape[-1]))
    (y,) = g.add_node("CONV_2D", [x, g.add_const("w", weights)], outputs=["y"])
    g.outputs.append(y)
    return g


def test_weights_exact_in_fp16_are_stored_as_fp16_losslessly() -> None:
    w = np.random.default_rng(3).standard_normal((8, 3, 3, 5)).astype(np.float16).astype(np.float32)
    m = read_wrt(convert(_fp16_graph(w)).data)
    t = next(t for t in m.tensors if t.name == "w")
    assert t.stored_dtype == np.float16 and t.dtype == np.float32
    np.testing.assert_array_equal(t.data, w)
    kept = next(t for t in read_wrt(convert(_fp16_graph(w), weights="fp32").data).tensors if t.name == "w")
    assert kept.stored_dtype == np.float32


def test_fp16_weights_mode_is_lossy_but_bounded_and_auto_keeps_fp32_weights() -> None:
    w = np.random.default_rng(4).standard_normal((8, 3, 3, 5)).astype(np.float32)
    auto = next(t for t in read_wrt(convert(_fp16_graph(w)).data).tensors if t.name == "w")
    assert auto.stored_dtype == np.float32  # not exactly representable: auto keeps float32
    half = next(t for t in read_wrt(convert(_fp16_graph(w), weights="fp16").data).tensors if t.name == "w")
    assert half.stored_dtype == np.float16
    assert np.abs(half.data - w).max() <= 2 ** -11 * np.abs(w).max()
    huge = np.full((8, 1, 1, 5), 1e6, np.float32)  # would overflow fp16: stays float32 even when asked
    t = next(t for t in read_wrt(convert(_fp16_graph(huge), weights="fp16").data).tensors if t.name == "w")
    assert t.stored_dtype == np.float32
