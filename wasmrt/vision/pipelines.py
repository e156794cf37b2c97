"""The vision pipelines on the CPython engines (wasmrt.vision re-exports them; see its docstring)."""

from __future__ import annotations

import functools
from pathlib import Path

from python_ref.vision.facemesh import ModelRunner
from python_ref.vision.gestures import finger_states, gesture
from python_ref.vision.hands import Hand
from python_ref.vision.hands import HandTracker as _HandTracker
from python_ref.vision.segment import SelfieSegmenter as _SelfieSegmenter
from python_ref.vision.segment import blur_background, replace_background
from wasmrt.vision.imgops import ImageOps, image_ops

ENGINES = ("ref", "native", "wasm")

__all__ = ["ENGINES", "Hand", "HandTracker", "ImageOps", "SelfieSegmenter", "blur_background", "engine_ops",
           "finger_states", "gesture", "image_ops", "model_bytes", "replace_background", "runner"]


@functools.cache
def model_bytes(source: str) -> bytes:
    """A model's .wrt bytes by its MediaPipe .tflite name (e.g. "palm_detection_full.tflite")."""
    from wasmrt.paths import models_dir

    bundled = models_dir() / (Path(source).stem + ".wrt")
    if bundled.is_file():
        return bundled.read_bytes()
    from wasmrt.compile.converter import convert
    from wasmrt.zoo import models

    return convert(models.model_path(source)).data


def runner(source: str, engine: str = "ref", variant: str | None = None, threads: int | str = 1) -> ModelRunner:
    """run(feeds) -> outputs for one model on one engine."""
    if engine not in ENGINES:
        raise ValueError(f"wasmrt.vision: engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    data = model_bytes(source)
    if engine == "ref":
        from python_ref import Interpreter

        return Interpreter(data).run
    from wasmrt.engines import load

    return load(data, engine, variant, threads=threads).run


def engine_ops(engine: str, variant: str | None = None) -> ImageOps | None:
    """The image operations the pipelines use on an engine: the C engine's (native, wasm), python_ref's (ref)."""
    if engine not in ENGINES:
        raise ValueError(f"wasmrt.vision: engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    return None if engine == "ref" else image_ops(engine, variant)


class HandTracker(_HandTracker):
    """MediaPipe Hands' pipeline: palm detection, 21 landmarks, handedness, tracking, gestures.
    lite: the lite palm and landmark models (MediaPipe's model_complexity=0)."""

    def __init__(self, engine: str = "ref", *, lite: bool = False, variant: str | None = None,
                 threads: int | str = 1, **options) -> None:
        kind = "lite" if lite else "full"
        super().__init__(runner(f"palm_detection_{kind}.tflite", engine, variant, threads),
                         runner(f"hand_landmark_{kind}.tflite", engine, variant, threads),
                         ops=engine_ops(engine, variant), **options)


class SelfieSegmenter(_SelfieSegmenter):
    """MediaPipe's selfie segmentation: model "auto" (by frame shape), "general" or "landscape"; smoothing: the
    weight of the previous mask (MediaPipe's 0.7; 0 turns it off)."""

    def __init__(self, engine: str = "ref", *, model: str = "auto", variant: str | None = None,
                 threads: int | str = 1, **options) -> None:
        from python_ref.vision.constants import SELFIE_MODELS

        names = list(SELFIE_MODELS) if model == "auto" else [model]
        if any(n not in SELFIE_MODELS for n in names):
            raise ValueError(f"SelfieSegmenter: model must be auto, general or landscape, got {model!r}")
        super().__init__({n: runner(SELFIE_MODELS[n]["source"], engine, variant, threads) for n in names},
                         model=model, ops=engine_ops(engine, variant), **options)
