"""TFLite importer: real MediaPipe models and small op models against LiteRT, plus error handling."""

from __future__ import annotations

import contextlib
import struct
from pathlib import Path

import numpy as np
import pytest
from tflite_oracle import ModelBuilder, litert_compatible, options, run_litert

from wasmrt.compile.ir import Graph
from wasmrt.compile.tflite.importer import import_tflite
from wasmrt.errors import ModelFormatError, UnsupportedOpError, WasmrtError

# model file -> (input value range of the real-image input, intermediate tensors also compared)
REAL_MODELS = {
    "face_detection_short_range.tflite": ((-1.0, 1.0), ()),
    "face_landmark.tflite": ((0.0, 1.0), ()),
    # the mask is a sigmoid that saturates on random input: compare the logits of the transposed conv too
    "selfie_segmentation.tflite": ((0.0, 1.0), ("segment",)),
}
TOLERANCE = 1e-4  # max|ours - litert| <= TOLERANCE * max|litert|, per output


def model_file(name: str) -> Path:
    """A MediaPipe model from wasmrt.zoo.models' cache (fetched by scripts/setup.sh)."""
    from wasmrt.zoo import models

    try:
        return models.model_path(name)
    except Exception as e:  # offline without a cache: say what to run instead of failing elsewhere
        pytest.skip(f"{name} not available ({e}); run `python -m wasmrt.zoo.models fetch`")


def assert_close(ours: np.ndarray, ref: np.ndarray, what: str, tol: float = TOLERANCE) -> float:
    assert ours.shape == ref.shape, f"{what}: shape {ours.shape} vs LiteRT {ref.shape}"
    err = float(np.abs(ours.astype(np.float64) - ref).max()) if ref.size else 0.0
    scale = float(np.abs(ref).max()) if ref.size else 0.0
    assert err <= tol * scale + 1e-30, f"{what}: max error {err:.3g} vs max |LiteRT| {scale:.3g}"
    return err / scale if scale else 0.0


def astronaut(shape: tuple[int, ...], lo: float, hi: float) -> np.ndarray:
    from skimage import data
    from skimage.transform import resize

    img = resize(data.astronaut(), shape[1:3], anti_aliasing=True)  # float64 in [0, 1]
    return (lo + (hi - lo) * img)[None].astype(np.float32)


# -- the real models --------------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("name", list(REAL_MODELS))
@pytest.mark.parametrize("image", ["random", "astronaut"])
def test_real_model_matches_litert(name: str, image: str) -> None:
    path = model_file(name)
    (lo, hi), extra = REAL_MODELS[name]
    g = import_tflite(path)
    shape = g.tensors[g.inputs[0]].shape
    if image == "random":
        x = np.random.default_rng(7).uniform(lo, hi, shape).astype(np.float32)
    else:
        x = astronaut(shape, lo, hi)
    refs = run_litert(litert_compatible(path.read_bytes()), [x], extra)
    values = g.evaluate(dict(zip(g.inputs, [x], strict=True)))
    for out, ref in zip(g.outputs + list(extra), refs, strict=True):
        assert_close(values[out], ref, f"{name} {image} {out}")


def test_real_model_structure() -> None:
    path = model_file("selfie_segmentation.tflite")
    g = import_tflite(path)
    assert g.metadata.source == "selfie_segmentation.tflite"
    assert g.metadata.producer.startswith("tflite schema v3, keras2tflite_selfiesegmentation")
    ops = {n.op for n in g.nodes}
    assert "CONV_TRANSPOSE_2D" in ops
    assert not any(t.dtype == np.float16 for t in g.tensors.values()), "fp16 weights must be folded to float32"
    (tconv,) = [n for n in g.nodes if n.op == "CONV_TRANSPOSE_2D"]
    assert tconv.attrs["strides"] == (2, 2) and list(tconv.attrs["pads"]) == [0, 0, 0, 0]
    assert g.tensors[g.outputs[0]].shape == (1, 256, 256, 1)


def test_input_shapes_override() -> None:
    g = import_tflite(model_file("face_landmark.tflite"), input_shapes={"input_1": (2, 192, 192, 3)})
    assert g.tensors[g.inputs[0]].shape == (2, 192, 192, 3)
    assert g.tensors[g.outputs[0]].shape == (2, 1, 1, 1404)


# -- small models, one feature each, against LiteRT --------------------------------------------------------------
def check(builder: ModelBuilder, seed: int = 0) -> Graph:
    data = builder.build()
    g = import_tflite(data)
    rng = np.random.default_rng(seed)
    feeds = [rng.standard_normal(g.tensors[n].shape).astype(np.float32) for n in g.inputs]
    refs = run_litert(data, feeds)
    values = g.evaluate(dict(zip(g.inputs, feeds, strict=True)))
    for out, ref in zip(g.outputs, refs, strict=True):
        assert_close(values[out], ref, out, tol=1e-5)
    return g


def test_conv_same_odd_size_stride_fused_relu6() -> None:
    b = ModelBuilder()
    x = b.input("x", (1, 8, 9, 3))  # H: 1 pixel of SAME padding, at the bottom; W: one each side
    w = b.const("w", np.random.default_rng(1).standard_normal((4, 3, 3, 3)).astype(np.float32))
    bias = b.const("b", np.arange(4, dtype=np.float32) - 1)
    y = b.tensor("y", (1, 4, 5, 4))
    b.op("CONV_2D", [x, w, bias], [y], options("Conv2DOptions", padding=0, strideW=2, strideH=2,
                                                fusedActivationFunction=3, dilationWFactor=1, dilationHFactor=1))
    b.output(y)
    g = check(b)
    assert list(g.nodes[0].attrs["pads"]) == [0, 1, 1, 1]
    assert g.nodes[0].attrs["act_max"] == 6.0


def test_depthwise_multiplier_and_dilation() -> None:
    b = ModelBuilder()
    x = b.input("x", (1, 8, 8, 3))
    w = b.const("w", np.random.default_rng(2).standard_normal((1, 3, 3, 6)).astype(np.float32))
    y = b.tensor("y", (1, 8, 8, 6))
    bias = b.const("b", np.linspace(-1, 1, 6).astype(np.float32))
    b.op("DEPTHWISE_CONV_2D", [x, w, bias], [y],
         options("DepthwiseConv2DOptions", padding=0, strideW=1, strideH=1, depthMultiplier=2,
                 dilationWFactor=2, dilationHFactor=2, fusedActivationFunction=1))
    z = b.tensor("z", (1, 4, 4, 6))
    b.op("AVERAGE_POOL_2D", [y], [z], options("Pool2DOptions", padding=0, strideW=2, strideH=2,
                                              filterWidth=3, filterHeight=3))
    b.output(z)
    g = check(b)
    conv = g.nodes[0]
    assert conv.attrs["groups"] == 3 and g.tensors[conv.inputs[1]].shape == (6, 3, 3, 1)


@pytest.mark.parametrize("padding", [0, 1])
def test_transpose_conv(padding: int) -> None:
    b = ModelBuilder()
    x = b.input("x", (1, 5, 4, 3))
    oh, ow = (10, 8) if padding == 0 else (11, 9)
    shape = b.const("shape", np.array([1, oh, ow, 2], np.int32))
    w = b.const("w", np.random.default_rng(3).standard_normal((2, 3, 3, 3)).astype(np.float32))
    bias = b.const("b", np.array([0.5, -1.0], np.float32))
    y = b.tensor("y", (1, oh, ow, 2))
    b.op("TRANSPOSE_CONV", [shape, w, x, bias], [y], options("TransposeConvOptions", padding=padding,
                                                                 strideW=2, strideH=2))
    b.output(y)
    check(b)


def test_mediapipe_transpose_conv_bias_rewrite() -> None:
    """Our reading of the custom op equals LiteRT on the oracle's builtin rewrite (SAME padding, odd kernel)."""
    b = ModelBuilder()
    x = b.input("x", (1, 4, 5, 3))
    w = b.const("w", np.random.default_rng(4).standard_normal((2, 3, 3, 3)).astype(np.float32))
    bias = b.const("b", np.array([0.25, -0.5], np.float32))
    y = b.tensor("y", (1, 8, 10, 2))
    b.op("CUSTOM", [x, w, bias], [y], custom="Convolution2DTransposeBias",
         custom_options=struct.pack("<iii", 1, 2, 2))
    b.output(y)
    data = b.build()
    g = import_tflite(data)
    feeds = [np.random.default_rng(5).standard_normal((1, 4, 5, 3)).astype(np.float32)]
    (ref,) = run_litert(litert_compatible(data), feeds)
    assert_close(g.evaluate(dict(zip(g.inputs, feeds, strict=True)))[g.outputs[0]], ref, "y", tol=1e-5)


def test_fully_connected_softmax_beta_reshape() -> None:
    b = ModelBuilder()
    x = b.input("x", (2, 3, 4))
    w = b.const("w", np.random.default_rng(6).standard_normal((5, 12)).astype(np.float32))
    bias = b.const("bias", np.ones(5, np.float32))
    r = b.tensor("r", (2, 12))
    b.op("RESHAPE", [x, b.const("s", np.array([2, -1], np.int32))], [r], options("ReshapeOptions", newShape=[2, -1]))
    h = b.tensor("h", (2, 5))
    b.op("FULLY_CONNECTED", [r, w, bias], [h], options("FullyConnectedOptions", fusedActivationFunction=2))
    y = b.tensor("y", (2, 5))
    b.op("SOFTMAX", [h], [y], options("SoftmaxOptions", beta=0.5))
    b.output(y)
    check(b)


@pytest.mark.parametrize(("op", "align", "half"), [
    ("RESIZE_BILINEAR", False, False), ("RESIZE_BILINEAR", True, False), ("RESIZE_BILINEAR", False, True),
    ("RESIZE_NEAREST_NEIGHBOR", False, False), ("RESIZE_NEAREST_NEIGHBOR", True, False),
    ("RESIZE_NEAREST_NEIGHBOR", False, True),
])
def test_resize(op: str, align: bool, half: bool) -> None:
    b = ModelBuilder()
    x = b.input("x", (1, 5, 7, 2))
    y = b.tensor("y", (1, 9, 12, 2))
    kind = "ResizeBilinearOptions" if op == "RESIZE_BILINEAR" else "ResizeNearestNeighborOptions"
    b.op(op, [x, b.const("size", np.array([9, 12], np.int32))], [y],
         options(kind, alignCorners=align, halfPixelCenters=half))
    b.output(y)
    check(b)


def test_data_movement_chain() -> None:
    """STRIDED_SLICE (masks, shrink), TRANSPOSE, PAD, CONCATENATION, MEAN, DEPTH_TO_SPACE, GATHER, activations."""
    b = ModelBuilder()
    x = b.input("x", (1, 6, 6, 8))
    s = b.tensor("s", (1, 3, 6, 8))
    b.op("STRIDED_SLICE", [x, b.const("b0", np.array([0, 1, 0, 0], np.int32)),
                           b.const("e0", np.array([1, 6, 0, 8], np.int32)),
                           b.const("st0", np.array([1, 2, 1, 1], np.int32))], [s],
         options("StridedSliceOptions", beginMask=0, endMask=4))
    d = b.tensor("d", (1, 6, 12, 2))
    b.op("DEPTH_TO_SPACE", [s], [d], options("DepthToSpaceOptions", blockSize=2))
    t = b.tensor("t", (1, 12, 6, 2))
    b.op("TRANSPOSE", [d, b.const("perm", np.array([0, 2, 1, 3], np.int32))], [t])
    p = b.tensor("p", (1, 13, 8, 2))
    b.op("PAD", [t, b.const("pads", np.array([[0, 0], [1, 0], [1, 1], [0, 0]], np.int32))], [p])
    hs = b.tensor("hs", (1, 13, 8, 2))
    b.op("HARD_SWISH", [p], [hs])
    lr = b.tensor("lr", (1, 13, 8, 2))
    b.op("LEAKY_RELU", [p], [lr], options("LeakyReluOptions", alpha=0.2))
    c = b.tensor("c", (1, 13, 8, 4))
    b.op("CONCATENATION", [hs, lr], [c], options("ConcatenationOptions", axis=-1))
    g_ = b.tensor("g", (1, 13, 8, 3))
    b.op("GATHER", [c, b.const("idx", np.array([3, 0, 2], np.int32))], [g_], options("GatherOptions", axis=3))
    m = b.tensor("m", (1, 1, 1, 3))
    b.op("MEAN", [g_, b.const("axes", np.array([1, 2], np.int32))], [m], options("ReducerOptions", keepDims=True))
    sq = b.tensor("sq", (3,))
    b.op("STRIDED_SLICE", [m, b.const("b1", np.array([0, 0, 0, 0], np.int32)),
                           b.const("e1", np.array([1, 1, 1, 3], np.int32)),
                           b.const("st1", np.array([1, 1, 1, 1], np.int32))], [sq],
         options("StridedSliceOptions", shrinkAxisMask=7))
    b.output(sq)
    b.output(c)
    check(b)


def test_fp16_dequantize_and_constant_folding() -> None:
    b = ModelBuilder()
    x = b.input("x", (1, 4, 4, 2))
    w16 = b.const("w16", np.random.default_rng(8).standard_normal((1, 3, 3, 2)).astype(np.float16))
    w = b.tensor("w", (1, 3, 3, 2))
    b.op("DEQUANTIZE", [w16], [w])
    # a chain on constants only: folded at import, no node left for it
    k = b.tensor("k", (2,))
    b.op("ADD", [b.const("c1", np.array([1.0, 2.0], np.float32)), b.const("c2", np.array([0.5, 0.5], np.float32))],
         [k])
    y = b.tensor("y", (1, 4, 4, 2))
    b.op("DEPTHWISE_CONV_2D", [x, w, k], [y], options("DepthwiseConv2DOptions", padding=0, strideW=1, strideH=1,
                                                      depthMultiplier=1, dilationWFactor=1, dilationHFactor=1))
    b.output(y)
    g = check(b)
    assert [n.op for n in g.nodes] == ["CONV_2D"]
    assert all(g.tensors[i].dtype == np.float32 for i in g.nodes[0].inputs[1:])


# -- errors ----------------------------------------------------------------------------------------------------
def tiny_model() -> bytes:
    b = ModelBuilder()
    x = b.input("x", (1, 4))
    y = b.tensor("y", (1, 4))
    b.op("RELU", [x], [y])
    b.output(y)
    return b.build()


@pytest.mark.parametrize("keep", [0, 3, 7, 8, 16, 40, 0.5, -8])
def test_truncated_file(keep: float) -> None:
    data = tiny_model()
    n = int(len(data) * keep) if isinstance(keep, float) else keep if keep >= 0 else len(data) + keep
    with pytest.raises(ModelFormatError, match=r"<tflite bytes>"):
        import_tflite(data[:n])


def test_truncated_real_model_names_file(tmp_path: Path) -> None:
    data = model_file("face_detection_short_range.tflite").read_bytes()
    path = tmp_path / "cut.tflite"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelFormatError, match=r"cut\.tflite: corrupt or truncated"):
        import_tflite(path)


def test_not_a_tflite_file(tmp_path: Path) -> None:
    path = tmp_path / "model.onnx"
    path.write_bytes(b"\x08\x07\x12\x04onnx" + bytes(100))
    with pytest.raises(ModelFormatError, match=r"model\.onnx: not a TFLite model"):
        import_tflite(path)
    with pytest.raises(ModelFormatError, match=r"missing\.tflite: cannot read"):
        import_tflite(tmp_path / "missing.tflite")


@pytest.mark.parametrize("position", ["identifier", "root", "vtable"])
def test_flipped_bytes(position: str) -> None:
    data = bytearray(tiny_model())
    root = struct.unpack_from("<I", data)[0]
    where = {"identifier": 5, "root": 1, "vtable": root + 1}[position]
    data[where] ^= 0xFF
    with pytest.raises(ModelFormatError):
        import_tflite(bytes(data))


def test_random_corruption_never_crashes() -> None:
    """Whatever bits flip, the importer either converts or raises one of its own errors, never a bare exception."""
    data = tiny_model()
    rng = np.random.default_rng(11)
    for _ in range(300):
        corrupt = bytearray(data)
        for pos in rng.integers(8, len(data), size=3):
            corrupt[pos] ^= 1 << int(rng.integers(0, 8))
        with contextlib.suppress(WasmrtError):
            import_tflite(bytes(corrupt))


def test_unsupported_builtin_names_op_and_node() -> None:
    b = ModelBuilder()
    x = b.input("x", (1, 5))
    y = b.tensor("cumulative", (1, 5))
    b.op("CUMSUM", [x, b.const("axis", np.array(1, np.int32))], [y])
    b.output(y)
    with pytest.raises(UnsupportedOpError, match=r"unsupported op 'CUMSUM' \(node 'cumulative'\)") as e:
        import_tflite(b.build())
    assert e.value.op_type == "CUMSUM" and e.value.node == "cumulative"


def test_unsupported_custom_op() -> None:
    b = ModelBuilder()
    x = b.input("x", (1, 5))
    y = b.tensor("y", (1, 5))
    b.op("CUSTOM", [x], [y], custom="MyFancyOp", custom_options=b"\x01")
    b.output(y)
    with pytest.raises(UnsupportedOpError, match=r"'CUSTOM:MyFancyOp'.*custom op 'MyFancyOp'"):
        import_tflite(b.build())


def test_hybrid_model_computes_in_float_with_its_int8_weights() -> None:
    """'Dynamic range' models keep float activations and int8 weights: the weights become the float32 values they
    stand for (scale * q), and the op computes in float."""
    b = ModelBuilder()
    x = b.input("x", (1, 4))
    q = np.arange(-6, 6, dtype=np.int8).reshape(3, 4)
    w = b.const("w", q)
    b.graph.tensors[w].quantization = options("QuantizationParameters", scale=[0.1, 0.2, 0.3], zeroPoint=[0, 0, 0])
    y = b.tensor("y", (1, 3))
    b.op("FULLY_CONNECTED", [x, w, -1], [y], options("FullyConnectedOptions"))
    b.output(y)
    g = import_tflite(b.build())
    (fc,) = g.nodes
    np.testing.assert_array_equal(g.tensors[fc.inputs[1]].data, q * np.float32([[0.1], [0.2], [0.3]]))


def test_int16_quantization_is_rejected_clearly() -> None:
    b = ModelBuilder()
    x = b.input("x", (1, 4))
    w = b.const("w", np.ones((3, 4), np.int16))
    b.graph.tensors[w].quantization = options("QuantizationParameters", scale=[0.1], zeroPoint=[0])
    y = b.tensor("y", (1, 3))
    b.op("FULLY_CONNECTED", [x, w, -1], [y], options("FullyConnectedOptions"))
    b.output(y)
    with pytest.raises(UnsupportedOpError, match=r"'FULLY_CONNECTED'.*quantized as INT16"):
        import_tflite(b.build())
