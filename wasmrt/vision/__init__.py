"""The vision pipelines on any engine: `HandTracker` and `SelfieSegmenter` run python_ref.vision's pipelines (the
specification) with their models on the ref, native or wasm engine; same pixels in, same results as python_ref.

    from wasmrt.vision import HandTracker, SelfieSegmenter, replace_background, blur_background
    hands = HandTracker(engine="wasm", max_hands=2)
    for hand in hands.detect(frame):            # HxWx3 uint8 RGB; tracked from frame to frame
        hand.landmarks, hand.world, hand.handedness, hand.gesture
    seg = SelfieSegmenter(engine="native")      # general or landscape model by frame shape
    mask = seg.segment(frame)                   # [H, W] float32, smoothed over frames
    out = replace_background(frame, mask, (0, 177, 64))
    out = seg.replace_background(frame, (0, 177, 64))   # or segment and composite in one engine pass

Models come from the converted models' folder (wasmrt.paths.models_dir(): the checkout's models/) when bundled
there (<name>.wrt), else from MediaPipe's .tflite in the
model cache (python -m wasmrt.zoo.models fetch), converted once per process.

In Pyodide (Python in a page or in Node) the pipelines are the JS package's, through wasmrt.web: FaceMesh,
HandTracker, SelfieSegmenter (`await X.create(rt, ...)`, then `await x.detect(frame)` / `await x.segment(frame)`),
replace_background and blur_background (wasmrt/web/vision.py, hands.py, segment.py; docs/pyodide.md).
"""

from __future__ import annotations

from wasmrt.host import IN_PYODIDE

if IN_PYODIDE:
    from wasmrt.web.hands import Hand, HandTracker
    from wasmrt.web.segment import SelfieSegmenter, blur_background, replace_background
    from wasmrt.web.vision import Face, FaceMesh

    __all__ = ["Face", "FaceMesh", "Hand", "HandTracker", "SelfieSegmenter", "blur_background", "replace_background"]
else:
    from wasmrt.vision.pipelines import (
        ENGINES,
        Hand,
        HandTracker,
        ImageOps,
        SelfieSegmenter,
        blur_background,
        engine_ops,
        finger_states,
        gesture,
        image_ops,
        model_bytes,
        replace_background,
        runner,
    )

    __all__ = ["ENGINES", "Hand", "HandTracker", "ImageOps", "SelfieSegmenter", "blur_background", "engine_ops",
               "finger_states", "gesture", "image_ops", "model_bytes", "replace_background", "runner"]
