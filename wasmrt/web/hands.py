"""The JS package's hand pipeline (wasmrt/vision's HandTracker) from Pyodide: `from wasmrt.vision import HandTracker`.

    hands = await HandTracker.create(rt, max_hands=2)   # rt = await wasmrt.web.init(); the package's lite models
    for hand in await hands.detect(frame):              # HxWx3/4 uint8 numpy array, or detect(buffer, width, height)
        hand.landmarks, hand.world, hand.handedness, hand.gesture   # [21, 3] float64 arrays (or memoryviews)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wasmrt.web import Runtime, bridge
from wasmrt.web.frames import frame_of
from wasmrt.web.tensors import make_output

__all__ = ["Hand", "HandTracker"]

OPTIONS = {"model_base": "modelBase", "palm_model": "palmModel", "landmark_model": "landmarkModel", "lite": "lite",
           "max_hands": "maxHands", "min_detection_score": "minDetectionScore", "min_presence": "minPresence",
           "tracking": "tracking", "image_ops": "imageOps"}


@dataclass
class Hand:
    """One hand, as CPython's wasmrt.vision.Hand: landmarks [21, 3] (x, y pixels, z), world [21, 3] (metres),
    handedness "Left" / "Right", its score, presence score, gesture name or None, the crop (roi: cx, cy, side,
    angle), tracked (from the previous frame), the palm detection (box, keypoints, score) or None."""

    landmarks: Any
    world: Any
    handedness: str
    handedness_score: float
    score: float
    gesture: str | None
    roi: dict[str, float]
    tracked: bool
    detection: dict[str, Any] | None


def js_options(who: str, options: dict[str, Any], names: dict[str, str]) -> Any:
    """Python keyword options -> the JS options object (None: left out); unknown names are a TypeError."""
    js, ffi = bridge.pyodide_modules()
    unknown = sorted(set(options) - set(names))
    if unknown:
        raise TypeError(f"{who}: unknown option {unknown[0]!r}; expected {', '.join(names)}")
    return ffi.to_js({names[k]: v for k, v in options.items() if v is not None}, dict_converter=js.Object.fromEntries)


def _points(js_array: Any) -> Any:
    return make_output("float64", [js_array.length // 3, 3], js_array.assign_to)


def _absent(v: Any) -> bool:
    """JS null or undefined (Pyodide gives null as pyodide.ffi.jsnull)."""
    _, ffi = bridge.pyodide_modules()
    return v is None or v is getattr(ffi, "jsnull", None)


def _hand(h: Any) -> Hand:
    r, d = h.roi, h.detection
    det = None if _absent(d) else {"box": tuple(float(v) for v in d.box), "score": float(d.score),
                                  "keypoints": [float(v) for v in d.keypoints]}
    return Hand(_points(h.landmarks), _points(h.worldLandmarks), str(h.handedness), float(h.handednessScore),
                float(h.score), None if _absent(h.gesture) else str(h.gesture),
                {k: float(getattr(r, k)) for k in ("cx", "cy", "side", "angle")}, bool(h.tracked), det)


class HandTracker:
    """MediaPipe Hands' pipeline on the JS package: palms, 21 landmarks, handedness, gestures, tracked over frames.
    After detect(): ran_detector (the palm detector ran on that frame) and ms (the JS stage times)."""

    def __init__(self, js_tracker: Any) -> None:
        self.js = js_tracker
        self.ran_detector = False
        self.ms: dict[str, float] = {}

    @classmethod
    async def create(cls, rt: Runtime, **options: Any) -> HandTracker:
        """options: model_base (folder of the hand models; default: the JS package's models/, its lite ones),
        palm_model, landmark_model, lite, max_hands, min_detection_score, min_presence, tracking, image_ops."""
        opts = js_options("HandTracker.create", options, OPTIONS)
        vision = await rt.vision()
        return cls(await bridge.call(vision.HandTracker.create(rt.js, opts), builtins=True))

    async def detect(self, image: Any, width: int | None = None, height: int | None = None) -> list[Hand]:
        """The hands of one frame (RGB or RGBA uint8: a numpy array, or a buffer with width and height)."""
        _, ffi = bridge.pyodide_modules()
        f = frame_of(image, width, height, "HandTracker.detect")
        proxy = ffi.create_proxy(f.data)
        try:
            res = await bridge.call(bridge.glue().onFrame(self.js, "detect", proxy, f.width, f.height, f.channels),
                                    builtins=True)
        finally:
            proxy.destroy()
        self.ran_detector = bool(res.ranDetector)
        self.ms = {str(k): float(v) for k, v in res.ms.object_entries()}
        return [_hand(h) for h in res.hands]

    def reset(self) -> None:
        """Forget the tracked hands (a new scene)."""
        self.js.reset()

    async def release(self) -> None:
        await bridge.call(self.js.release())
