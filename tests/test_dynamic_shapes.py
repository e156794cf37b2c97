"""Models whose input sizes are chosen at run time: conversion with --dynamic (wasmrt/compile/dynamic.py), the engines'
re-planning on a size change, the bounds and limits that still hold, and memory across many changes."""

from __future__ import annotations

import functools

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from python_ref import Interpreter
from python_ref.errors import ModelFormatError
from tests.test_engine import ENGINE_IDS, ENGINES, engine_model
from wasmrt.compile.converter import convert
from wasmrt.compile.dynamic import parse_dynamic
from wasmrt.engines import load
from wasmrt.errors import ConversionError, InputError, OutOfMemoryError, ResourceLimitError

TOLERANCE = 1e-4
OCR_WIDTHS = (160, 320, 640)


def rel(got: np.ndarray, want: np.ndarray) -> float:
    assert got.shape == want.shape
    return float(np.abs(got.astype(np.float64) - want).max() / np.abs(want).max())


@functools.cache
def ocr_rec() -> tuple[bytes, ort.InferenceSession]:
    from wasmrt.zoo import models

    try:
        path = models.model_path("ch_PP-OCRv4_rec_infer.onnx")
    except Exception as e:
        pytest.skip(f"the OCR recognizer is not available ({e}); run `python -m wasmrt.zoo.models fetch`")
    data = convert(path, input_shapes={"x": (1, 3, 48, 320)}, dynamic=[parse_dynamic("x=3:32..1280")]).data
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    return data, ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


def text_line(width: int) -> np.ndarray:
    """A text-line-like input: dark strokes on a light band, in the model's [-1, 1] range."""
    rng = np.random.default_rng(width)
    x = np.full((1, 3, 48, width), 0.8, np.float32)
    for c in range(0, width - 8, 11):
        x[..., 12:36, c:c + 3 + c % 4] = -0.9
    return x + rng.normal(0, 0.05, x.shape).astype(np.float32)


@pytest.mark.slow
@pytest.mark.parametrize(("engine", "variant"), ENGINES, ids=ENGINE_IDS)
def test_ocr_recognizer_at_three_widths_from_one_file(engine: str, variant: str) -> None:
    data, sess = ocr_rec()
    m = engine_model(data, engine, variant)
    assert m.dynamic and m.inputs[0].bounds == ((1, 1), (3, 3), (48, 48), (32, 1280))
    for w in (*OCR_WIDTHS, OCR_WIDTHS[0]):  # and back to the first
        x = text_line(w)
        want = sess.run(None, {"x": x})[0]
        got = m.run({"x": x})["softmax_11.tmp_0"]
        err = rel(got, want)
        print(f"PP-OCRv4 rec width {w} {engine}-{variant}: {err:.2g} vs onnxruntime, output {list(got.shape)}")
        assert err <= TOLERANCE and m.outputs[0].shape == got.shape == (1, w // 8, 6625)


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["native", "wasm"])
def test_switching_widths_does_not_grow_memory(engine: str) -> None:
    data, _ = ocr_rec()
    m = load(data, engine)
    xs = [text_line(w) for w in (96, 200)]
    sizes = []
    for k in range(100):
        m.run({"x": xs[k % 2]})
        sizes.append((m.memory_size, m.wasm.pages if engine == "wasm" else 0))
    print(f"{engine}: model memory {sizes[0][0]:,} / {sizes[1][0]:,} bytes by width; wasm pages "
          f"{sizes[1][1]} after 2 runs, {sizes[-1][1]} after 100")
    assert sizes[2:] == sizes[:2] * 49  # the same two states, alternating: nothing accumulates
    assert sizes[-1][1] == sizes[1][1]


@pytest.mark.parametrize("engine", ["ref", "native", "wasm"])
def test_resize_inputs_explicitly(engine: str) -> None:
    data, sess = ocr_rec()
    m = load(data, engine)
    m.resize_inputs({"x": (1, 3, 48, 64)})
    assert m.inputs[0].shape == (1, 3, 48, 64) and m.outputs[0].shape == (1, 8, 6625)
    x = text_line(64)
    assert rel(m.run(x)["softmax_11.tmp_0"], sess.run(None, {"x": x})[0]) <= TOLERANCE


@pytest.mark.parametrize("engine", ["ref", "native", "wasm"])
def test_sizes_outside_the_bounds_are_refused(engine: str) -> None:
    data, _ = ocr_rec()
    m = load(data, engine)
    with pytest.raises(InputError, match=r"input 'x': shape \[1, 3, 48, 2000\], expected \[1, 3, 48, 32..1280\]"):
        m.run({"x": np.zeros((1, 3, 48, 2000), np.float32)})
    with pytest.raises(InputError, match=r"expected \[1, 3, 48, 32..1280\]"):
        m.resize_inputs({"x": (1, 3, 40, 100)})  # a fixed dimension
    with pytest.raises(InputError, match="unknown input 'y'"):
        m.resize_inputs({"y": (1,)})
    assert m.run(text_line(320))["softmax_11.tmp_0"].shape == (1, 40, 6625)  # the model still runs


@pytest.mark.parametrize("engine", ["native", "wasm"])
def test_limits_hold_on_every_replan(engine: str) -> None:
    """A size within the bounds but beyond the model's memory or work limit is refused, naming the limit, and the
    model keeps running at its previous size."""
    data, _ = ocr_rec()
    m = load(data, engine)
    m.run(text_line(320))
    tight = load(data, engine, max_memory=m.memory_size * 1.2)
    with pytest.raises(OutOfMemoryError, match=r"memory limit of \d+ bytes \(max_memory\)"):
        tight.run(text_line(1280))
    assert tight.run(text_line(320))["softmax_11.tmp_0"].shape == (1, 40, 6625)
    slow = load(data, engine, max_work=m.work * 1.5 if engine == "native" else 3e9)
    with pytest.raises(ResourceLimitError, match=r"work limit of \d+ \(max_work\)"):
        slow.resize_inputs({"x": (1, 3, 48, 1280)})
    assert slow.inputs[0].shape == (1, 3, 48, 320)
    assert slow.run(text_line(320))["softmax_11.tmp_0"].shape == (1, 40, 6625)


# -- generalization on small models -----------------------------------------------------------------------------
def _onnx(nodes: list, inputs: dict[str, list], inits: dict[str, np.ndarray], outputs: list[str],
          opset: int = 17) -> onnx.ModelProto:
    ins = [helper.make_tensor_value_info(k, TensorProto.FLOAT, v) for k, v in inputs.items()]
    g = helper.make_graph(nodes, "g", ins, [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
                          [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 9
    return m


def _sample_model(tmp_path) -> tuple[str, onnx.ModelProto]:
    """Conv, a 2x resize by scales, a flatten of the spatial axes (a reshape whose size follows H and W), a slice
    to the end and a reshape that copies the batch: every generalized attribute."""
    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Resize", ["c", "", "scales"], ["r"], mode="linear"),
        helper.make_node("Shape", ["r"], ["s"]),
        helper.make_node("Slice", ["s", "zero", "two"], ["nc"]),
        helper.make_node("Concat", ["nc", "minus1"], ["target"], axis=0),
        helper.make_node("Reshape", ["r", "target"], ["f"]),
        helper.make_node("Slice", ["f", "one", "big", "two1"], ["sl"]),
        helper.make_node("Relu", ["sl"], ["y"]),
    ]
    inits = {"w": rng.normal(0, 0.5, (4, 3, 3, 3)).astype(np.float32),
             "scales": np.array([1, 1, 2, 2], np.float32), "zero": np.array([0], np.int64),
             "two": np.array([2], np.int64), "minus1": np.array([-1], np.int64), "one": np.array([1], np.int64),
             "big": np.array([2**40], np.int64), "two1": np.array([2], np.int64)}
    model = _onnx(nodes, {"x": ["n", 3, "h", "w"]}, inits, ["y"])
    path = tmp_path / "sample.onnx"
    onnx.save(model, path)
    return str(path), model


@pytest.mark.parametrize(("engine", "variant"), ENGINES, ids=ENGINE_IDS)
def test_generalized_attributes_on_every_engine(tmp_path, engine: str, variant: str) -> None:
    path, model = _sample_model(tmp_path)
    data = convert(path, input_shapes={"x": (1, 3, 16, 20)},
                   dynamic=[parse_dynamic(s) for s in ("x=0:1..4", "x=2:8..64", "x=3:8..64")]).data
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    m = engine_model(data, engine, variant)
    for shape in ((1, 3, 16, 20), (2, 3, 9, 30), (1, 3, 64, 8), (3, 3, 13, 13)):
        x = np.random.default_rng(sum(shape)).uniform(-1, 1, shape).astype(np.float32)
        want = sess.run(None, {"x": x})[0]
        assert rel(m.run({"x": x})["y"], want) <= 2e-5, shape
        assert rel(Interpreter(data).run({"x": x})["y"], want) <= 2e-6, shape


def test_a_size_dependent_constant_is_named(tmp_path) -> None:
    """ConstantOfShape builds a constant whose value follows the input size: not restatable, so the converter
    says which node and what."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("ConstantOfShape", ["s"], ["ones"], value=numpy_helper.from_array(
                 np.array([2.0], np.float32))),
             helper.make_node("Mul", ["x", "ones"], ["y"], name="scale_by_ones")]
    path = tmp_path / "m.onnx"
    onnx.save(_onnx(nodes, {"x": [1, "n"]}, {}, ["y"]), path)
    with pytest.raises(ConversionError, match=r"node 'scale_by_ones' \(MUL\): the constant .* changes with the input "
                                              r"size"):
        convert(path, input_shapes={"x": (1, 8)}, dynamic=[parse_dynamic("x=1:2..100")])


def test_dynamic_spec_errors() -> None:
    with pytest.raises(ValueError, match=r"expected NAME=AXIS:MIN\.\.MAX"):
        parse_dynamic("x=3")
    with pytest.raises(ValueError, match="need 1 <= MIN <= MAX"):
        parse_dynamic("x=3:100..10")


def test_bounds_in_the_file_are_verified() -> None:
    """A file whose bounds exclude its own shape, or that puts bounds on an activation, is refused by every
    reader."""
    import flatbuffers

    from python_ref._fb import wrt_generated as fb
    from python_ref.wrt_file import read_wrt

    data, _ = ocr_rec()

    def edit(fn) -> bytes:
        m = fb.ModelT.InitFromPackedBuf(bytearray(data), 0)
        fn(m)
        b = flatbuffers.Builder(1024)
        b.Finish(m.Pack(b), file_identifier=b"WRT0")
        return bytes(b.Output())

    def shrink(m: fb.ModelT) -> None:
        m.tensors[m.inputs[0]].shapeMax = [1, 3, 48, 100]

    def on_activation(m: fb.ModelT) -> None:
        t = m.tensors[m.outputs[0]]
        t.shapeMin, t.shapeMax = list(t.shape), list(t.shape)

    for fn, msg in ((shrink, r"shape \[1, 3, 48, 320\] is not within its bounds|dimension 3 \(320\) is not within"),
                    (on_activation, "has shape bounds but is not a graph input")):
        bad = edit(fn)
        with pytest.raises(ModelFormatError, match=msg):
            read_wrt(bad)
        for engine in ("native", "wasm"):
            with pytest.raises(ModelFormatError, match=msg):
                load(bad, engine)
