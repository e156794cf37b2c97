"""python_ref.vision: known facts on the astronaut, exact rules, agreement with LiteRT, tracking."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from python_ref.vision import (
    LIPS_INNER,
    LIPS_OUTER,
    Detection,
    FaceMesh,
    Roi,
    feather,
    letterbox,
    lip_alpha,
    lip_mask,
    litert_runner,
    map_landmarks,
    paint_lips,
    roi_from_landmarks,
    roi_is_sane,
    sample_rect,
    ssd_anchors,
    warp_roi,
    weighted_nms,
)
from python_ref.vision.clip import clip
from python_ref.vision.lips import linear_to_oklab, polygon_mask, srgb_to_linear
from wasmrt.zoo import models

data = pytest.importorskip("skimage.data")
ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "models"
CACHE = models.CACHE  # the source .tflite files (the user cache)
needs_models = pytest.mark.skipif(not (MODELS / "face_landmark.wrt").exists(),
                                  reason="run `python -m wasmrt.zoo.bundle` first")


@pytest.fixture(scope="module")
def astronaut() -> np.ndarray:
    return data.astronaut()


@pytest.fixture(scope="module")
def face(astronaut):
    faces = FaceMesh(tracking=False).detect(astronaut)
    assert len(faces) == 1
    return faces[0]


# -- exact rules -------------------------------------------------------------------------------------------------


def test_letterbox_is_mediapipes():
    """The astronaut (512 x 512) shrinks 4x: output pixel (i, j) reads the image at the corner point (4j, 4i), an exact
    pixel (MediaPipe's ImageToTensor), so the tensor is a plain subsampling; chelsea (451 x 300) is centred
    vertically in a 451-pixel square."""
    img = data.astronaut()
    tensor, lb = letterbox(img)
    np.testing.assert_array_equal(tensor[0], ((img[::4, ::4].astype(np.float64) - 127.5) / 127.5).astype(np.float32))
    assert (lb.left, lb.top, lb.content_w, lb.content_h) == (0, 0, 128, 128)
    tensor, lb = letterbox(data.chelsea())
    assert lb.left == 0 and lb.content_w == 128
    assert lb.top == pytest.approx(75.5 * 128 / 451) and lb.content_h == pytest.approx(300 * 128 / 451)
    assert (tensor[0, :21] == -1).all() and (tensor[0, 107:] == -1).all()  # the zero border above and below


def test_sample_rect_rounds_like_8bit_opencv():
    """1/32-pixel positions and integer weights: halfway between 10 and 21 is (10 + 21) / 2 = 15.5 -> 16."""
    img = np.zeros((2, 2, 3), np.uint8)
    img[:, 1] = 21
    img[:, 0] = 10
    px = sample_rect(img, 0.5 + 1.0, 1.0, 2.0, 2.0, 0.0, 2, 2)  # column 1 of the output reads x = 1.5
    assert px[0, 0, 0] == 16 and px[0, 1, 0] == 21


def test_anchors():
    a = ssd_anchors()
    assert a.shape == (896, 2)
    np.testing.assert_allclose(a[0], [0.5 / 16, 0.5 / 16])
    np.testing.assert_allclose(a[1], a[0])  # two anchors per cell in the first layer
    np.testing.assert_allclose(a[2], [1.5 / 16, 0.5 / 16])
    np.testing.assert_allclose(a[512], [0.5 / 8, 0.5 / 8])
    np.testing.assert_allclose(a[-1], [7.5 / 8, 7.5 / 8])


def _det(box, score):
    return Detection(np.asarray(box, dtype=np.float64), np.zeros((6, 2)) + box[0], score)


def test_weighted_nms_blends_by_score_and_keeps_separate_faces():
    dets = [_det([0, 0, 10, 10], 0.6), _det([1, 0, 11, 10], 0.9), _det([50, 50, 60, 60], 0.7),
            _det([30, 0, 40, 10], 0.55)]
    out = weighted_nms(dets, 0.3)
    assert [round(d.score, 2) for d in out] == [0.9, 0.7, 0.55]
    np.testing.assert_allclose(out[0].box, [0.9 / 1.5, 0, 10 + 0.9 / 1.5, 10])
    np.testing.assert_allclose(out[0].keypoints, 0.9 / 1.5)
    np.testing.assert_allclose(out[1].box, [50, 50, 60, 60])


def test_warp_identity_and_quarter_turn():
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (16, 16, 3), dtype=np.uint8)
    same = warp_roi(img, Roi(8.0, 8.0, 16.0, 0.0), n=16)[0]
    np.testing.assert_array_equal(same, (img / 255.0).astype(np.float32))
    turned = warp_roi(img, Roi(8.0, 8.0, 16.0, math.pi / 2), n=16)[0]
    # crop x axis = image +y: crop (row i, col j) = image (row j, col 16 - i), the edge column replicated for i = 0
    want = img[:, np.clip(16 - np.arange(16), 0, 15)].transpose(1, 0, 2)
    np.testing.assert_allclose(turned, (want / 255.0).astype(np.float32), atol=1e-6)


def test_landmark_mapping_matches_warp_geometry():
    roi = Roi(100.0, 80.0, 60.0, 0.3)
    raw = np.array([[96.0, 96.0, 0.0], [0.0, 0.0, 192.0], [192.0, 96.0, 0.0]]).reshape(-1)
    lm = map_landmarks(raw, roi)
    np.testing.assert_allclose(lm[0], [100, 80, 0])
    np.testing.assert_allclose(lm[1, 2], 60.0)
    np.testing.assert_allclose(lm[2, :2], [100 + 30 * math.cos(0.3), 80 + 30 * math.sin(0.3)])


def _point_in_polygon(px, py, poly):
    inside = False
    for k in range(len(poly)):
        (x0, y0), (x1, y1) = poly[k], poly[(k + 1) % len(poly)]
        if (y0 > py) != (y1 > py) and px < x0 + (py - y0) * (x1 - x0) / (y1 - y0):
            inside = not inside
    return inside


def test_polygon_rasterization_is_even_odd_at_pixel_centres():
    mask = polygon_mask(np.array([[1.0, 1.0], [5.0, 1.0], [5.0, 4.0], [1.0, 4.0]]), 8, 8)
    assert mask.sum() == 12 and mask[1:4, 1:5].all()
    rng = np.random.default_rng(1)
    for _ in range(20):  # random (self-intersecting) polygons against a direct point test
        poly = rng.uniform(-2, 14, (7, 2))
        mask = polygon_mask(poly, 12, 12)
        ref = np.array([[_point_in_polygon(j + 0.5, i + 0.5, poly) for j in range(12)] for i in range(12)])
        np.testing.assert_array_equal(mask, ref)


def test_feather_keeps_mass_and_is_soft():
    m = np.zeros((30, 30), dtype=bool)
    m[10:20, 8:22] = True
    a = feather(m, 2)
    assert a.sum() == pytest.approx(m.sum())
    assert 0 < a[9, 15] < 1 and a[15, 15] == pytest.approx(1.0) and a[0, 0] == 0


def test_tracking_sanity_check():
    prev = Roi(100, 100, 80, 0.0)
    assert roi_is_sane(Roi(105, 98, 84, 0.1), prev, 200, 200)
    assert not roi_is_sane(Roi(160, 100, 80, 0.0), prev, 200, 200)  # jumped more than half a crop
    assert not roi_is_sane(Roi(100, 100, 200, 0.0), prev, 200, 200)  # grew beyond 2x
    assert not roi_is_sane(Roi(-5, 100, 80, 0.0), None, 200, 200)  # centre left the image
    assert not roi_is_sane(Roi(100, 100, float("nan"), 0.0), None, 200, 200)


# -- the real models on the astronaut ------------------------------------------------------------------------------


@needs_models
def test_astronaut_face_detection(face):
    det = face.detection
    assert det is not None and det.score > 0.9
    x0, y0, x1, y1 = det.box
    assert 165 < x0 < 195 and 265 < x1 < 290 and 65 < y0 < 95 and 160 < y1 < 190  # her face in the 512x512 photo
    re, le, nose, mouth = det.keypoints[:4]
    assert re[0] < nose[0] < le[0] and max(re[1], le[1]) < nose[1] < mouth[1]


@needs_models
def test_astronaut_landmarks_are_plausible(face):
    lm = face.landmarks
    assert lm.shape == (468, 3) and face.score > 0.9
    x0, y0, x1, y1 = face.detection.box
    inside = (lm[:, 0] > x0 - 20) & (lm[:, 0] < x1 + 20) & (lm[:, 1] > y0 - 40) & (lm[:, 1] < y1 + 20)
    assert inside.all()
    for idx, kp in ((33, 0), (263, 1), (1, 2), (13, 3)):  # eye corners, nose tip, upper lip near the keypoints
        assert np.hypot(*(lm[idx, :2] - face.detection.keypoints[kp])) < 16
    assert lm[33, 0] < lm[263, 0] and lm[13, 1] < lm[14, 1] and lm[61, 0] < lm[291, 0]
    assert abs(lm[33, 1] - lm[263, 1]) < 10  # she holds her head nearly level


@needs_models
def test_astronaut_lip_mask(face, astronaut):
    mask = lip_mask(face.landmarks, 512, 512)
    rows, cols = np.nonzero(mask)
    assert mask.sum() > 150
    x0, y0, x1, y1 = face.detection.box
    assert x0 < cols.min() and cols.max() < x1 and y0 < rows.min() and rows.max() < y1
    assert rows.min() > face.landmarks[1, 1]  # below the nose tip
    # the inner ring (her teeth) is cut out
    inner = polygon_mask(face.landmarks[list(LIPS_INNER)], 512, 512)
    assert inner.sum() > 0 and not (mask & inner).any()
    assert polygon_mask(face.landmarks[list(LIPS_OUTER)], 512, 512).sum() == mask.sum() + inner.sum()


@needs_models
def test_paint_lips_recolours_only_the_lips_and_keeps_texture(face, astronaut):
    out = paint_lips(astronaut, face, "#c2185b", 1.0)
    changed = np.any(out != astronaut, axis=2)
    x0, y0, x1, y1 = face.box
    rows, cols = np.nonzero(changed)
    assert changed.sum() > 150 and y0 < rows.min() and rows.max() < y1 and x0 < cols.min() and cols.max() < x1
    mask = lip_alpha(face.landmarks, 512, 512) > 0.95  # the fully painted core of the lips
    lab_out = linear_to_oklab(srgb_to_linear(out[mask]))
    lab_in = linear_to_oklab(srgb_to_linear(astronaut[mask]))
    target = linear_to_oklab(srgb_to_linear(np.array([0xC2, 0x18, 0x5B])))
    hue = np.arctan2(lab_out[:, 2], lab_out[:, 1]).mean()
    assert abs(hue - math.atan2(target[2], target[1])) < 0.15
    assert np.corrcoef(lab_out[:, 0], lab_in[:, 0])[0, 1] > 0.9  # lightness texture kept
    np.testing.assert_array_equal(paint_lips(astronaut, face, "#c2185b", 0.0), astronaut)


@needs_models
@pytest.mark.skipif(not (CACHE / "face_landmark.tflite").exists(), reason="python -m wasmrt.zoo.models fetch")
def test_pipeline_agrees_with_litert(face, astronaut):
    pytest.importorskip("ai_edge_litert")
    mesh = FaceMesh(litert_runner(CACHE / "face_detection_short_range.tflite"),
                    litert_runner(CACHE / "face_landmark.tflite"), tracking=False)
    other = mesh.detect(astronaut)[0]
    assert np.abs(other.landmarks - face.landmarks).max() < 0.01
    assert abs(other.detection.score - face.detection.score) < 1e-5


@needs_models
def test_tracking_runs_the_detector_rarely_and_matches_detect_every_frame(astronaut):
    frames = clip(astronaut, 48)
    every, tracked = FaceMesh(tracking=False), FaceMesh(tracking=True)
    runs, errs = 0, []
    for frame in frames:
        a = every.detect(frame)[0].landmarks
        faces = tracked.detect(frame)
        runs += tracked.stats.ran_detector
        errs.append(np.hypot(*(faces[0].landmarks[:, :2] - a[:, :2]).T).mean())
    assert runs / len(frames) < 0.2
    assert np.mean(errs) < 1.0, errs
    # the tracked crop follows the face: the last frame's crop is near the one derived from the last landmarks
    assert roi_is_sane(roi_from_landmarks(faces[0].landmarks), tracked.tracked[0], 384, 384)


@needs_models
def test_tracking_falls_back_to_the_detector_when_the_face_leaves(astronaut):
    mesh = FaceMesh(tracking=True)
    assert mesh.detect(astronaut) and mesh.stats.ran_detector
    assert mesh.detect(astronaut) and not mesh.stats.ran_detector
    blank = np.full_like(astronaut, 128)
    assert mesh.detect(blank) == [] and mesh.stats.ran_detector
    assert mesh.tracked == []
