"""Acceptance of the converter and the reference engine on the bundled real models.

Every model is converted to .wrt and run by python_ref.Interpreter; the original model runs in onnxruntime (ONNX)
or LiteRT (TFLite). Tolerance: max|ref - oracle| <= 1e-4 * max|oracle| per output, on a seeded random input and
on a real photo preprocessed with the hints stored in the model. The memory plan must stay within 1.1x of its
lower bound.

An output that comes out of a sigmoid can be almost zero everywhere (PP-OCR's text map on a random input has a
maximum near 1e-3), which makes "relative to its maximum" meaningless. For ONNX models such outputs are compared
against their range, 1, and the sigmoid's input (the logits) is exposed as an extra output of the model given to
both engines and compared relatively like every other output.
"""

from __future__ import annotations

import atexit
import shutil
import subprocess
import sys
import tempfile
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from skimage import data as skdata

from python_ref import Interpreter
from wasmrt.compile.converter import Converted, convert
from wasmrt.compile.ir import Preprocess
from wasmrt.preprocess import image_to_tensor
from wasmrt.zoo.models import BUNDLED, load_labels, model_path

pytestmark = pytest.mark.slow
REL_TOL = 1e-4
PHOTO = {"face_detector": "astronaut", "face_landmark": "astronaut", "selfie_segmentation": "astronaut",
         "efficientnet_lite0": "chelsea", "mobilenet_v2": "coffee", "ppocr_det": "text", "ppocr_cls": "text",
         "ppocr_rec": "text", "resnet18": "chelsea", "unet": "astronaut", "selfie_segmentation_landscape": "astronaut",
         "palm_detection_lite": "astronaut", "palm_detection_full": "astronaut", "hand_landmark_lite": "astronaut",
         "hand_landmark_full": "astronaut"}
# LiteRT cannot run the attention mesh's MediaPipe custom ops: tests/test_mediapipe_models.py compares it with
# MediaPipe's own FaceMesh on real photos instead
OTHER_ORACLE = ("face_landmark_attention",)


@cache
def converted(name: str) -> Converted:
    try:
        src = model_path(name)
    except Exception as e:  # no network and no cache: say so instead of failing on an unrelated error
        pytest.skip(f"{name}: model not available ({e})")
    m = BUNDLED[name]
    labels = load_labels(m.labels) if m.labels else None
    return convert(src, input_shapes=m.input_shapes, preprocess=m.preprocess, labels=labels)


@cache
def with_logits(name: str) -> tuple[Path, frozenset[str]]:
    """The ONNX model with the input of every output-producing Sigmoid added as a graph output."""
    import onnx

    src = model_path(name)
    model = onnx.load(str(src))
    by_output = {o: n for n in model.graph.node for o in n.output}
    sigmoid_outputs = {o.name for o in model.graph.output if by_output.get(o.name) is not None
                       and by_output[o.name].op_type == "Sigmoid"}
    for o in sigmoid_outputs:
        model.graph.output.append(onnx.helper.make_tensor_value_info(by_output[o].input[0], 1, None))
    tmp = tempfile.mkdtemp(prefix="wasmrt-logits-")
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
    dest = Path(tmp) / src.name
    onnx.save(model, str(dest))
    return dest, frozenset(sigmoid_outputs)


@cache
def converted_with_logits(name: str) -> Converted:
    m = BUNDLED[name]
    return convert(with_logits(name)[0], input_shapes=m.input_shapes, preprocess=m.preprocess)


def oracle(name: str, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    src = model_path(name)
    if src.suffix == ".onnx":
        src = with_logits(name)[0]
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        sess = ort.InferenceSession(str(src), opts, providers=["CPUExecutionProvider"])
        names = [o.name for o in sess.get_outputs()]
        return dict(zip(names, sess.run(names, feeds), strict=True))
    from ai_edge_litert.interpreter import Interpreter as LiteRT
    from tflite_oracle import litert_compatible, run_litert

    data = litert_compatible(src.read_bytes())
    interp = LiteRT(model_content=data)
    ins = [feeds[d["name"]] for d in interp.get_input_details()]
    outs = [d["name"] for d in interp.get_output_details()]
    return dict(zip(outs, run_litert(data, ins), strict=True))


def photo(name: str) -> np.ndarray:
    kind = PHOTO[name]
    if kind == "text":  # dark text lines on paper: what the OCR models expect
        img = np.full((240, 640, 3), 235, np.uint8)
        for row in range(3):
            for k in range(14):
                y, x = 40 + row * 70, 30 + k * 42
                img[y:y + 30, x:x + 6] = 20
                img[y:y + 6, x:x + 26] = 20
                img[y + 24:y + 30, x:x + 26] = 20
        return img
    return getattr(skdata, kind)()


def _feeds(name: str, interp: Interpreter, real: bool) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1234)
    feeds = {}
    for k, spec in enumerate(interp.inputs):
        pre = interp.metadata["preprocess"].get(k)
        if real and pre:
            feeds[spec.name] = image_to_tensor(photo(name), Preprocess(**pre), spec.shape)
        else:
            feeds[spec.name] = rng.uniform(-1, 1, spec.shape).astype(spec.dtype)
    return feeds


@pytest.mark.parametrize("real", [False, True], ids=["random", "photo"])
@pytest.mark.parametrize("name", [n for n in BUNDLED if n not in OTHER_ORACLE])
def test_reference_matches_oracle(name: str, real: bool) -> None:
    onnx_model = model_path(name).suffix == ".onnx"
    interp = Interpreter((converted_with_logits(name) if onnx_model else converted(name)).data)
    probabilities = with_logits(name)[1] if onnx_model else frozenset()
    feeds = _feeds(name, interp, real)
    ours = interp.run(feeds)
    theirs = oracle(name, feeds)
    assert set(ours) == set(theirs)
    for out, want in theirs.items():
        got = ours[out].reshape(want.shape)
        scale = 1.0 if out in probabilities else np.abs(want).max()
        err = np.abs(got - want).max() / scale
        assert err <= REL_TOL, f"{name}/{out}: max|ref - oracle| = {err:.2e} x max|oracle|"


@pytest.mark.parametrize("name", list(BUNDLED))
def test_arena_within_10_percent_of_lower_bound(name: str) -> None:
    plan = converted(name).plan
    assert plan.lower_bound > 0
    assert plan.arena_size <= 1.1 * plan.lower_bound, (plan.arena_size, plan.lower_bound)


@pytest.mark.parametrize(("image", "classes"), [("chelsea", range(281, 286)), ("coffee", [967])])
def test_efficientnet_cli_classifies_photos(image: str, classes, tmp_path: Path) -> None:
    """Acceptance 2: `wasmrt run --engine ref` with the preprocessing from the model's metadata."""
    wrt = tmp_path / "efficientnet_lite0.wrt"
    wrt.write_bytes(converted("efficientnet_lite0").data)
    png = Path(skdata.__file__).parent / f"{image}.png"
    r = subprocess.run([sys.executable, "-m", "wasmrt.cli.main", "run", str(wrt), "--engine", "ref",
                        "--input", f"input={png}", "-o", str(tmp_path / "out")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    logits = np.load(tmp_path / "out" / "logits.npy").reshape(-1)
    assert int(np.argmax(logits)) in classes, r.stdout
