"""FaceMesh: detector + 468-point landmark model, with tracking so the detector runs only when tracking is lost.

Per frame:
  1. For every face tracked from the previous frame: warp its landmark-derived Roi, run the landmark model.
     The face is kept when presence = sigmoid(conv2d_31) >= min_presence and the next Roi passes roi_is_sane.
  2. Only when fewer than max_faces faces were kept: run the detector, and for each detection (strongest first)
     whose box centre is not inside an already kept face's landmark box, run the landmark model on its Roi
     (kept when presence >= min_presence), until max_faces faces.
  3. Tracked Rois for the next frame = roi_from_landmarks of each kept face (only when tracking is on).
Face fields: box and keypoints are always derived from the landmarks (so they mean the same thing on tracked
and detected frames), score is the presence score; `detection` holds the detector's output when it ran for
that face on this frame.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from python_ref.vision.detect import Detection, detect_faces
from python_ref.vision.refine import OUTPUTS, PRESENCE, refine_landmarks
from python_ref.vision.roi import Roi, map_landmarks, roi_from_detection, roi_from_landmarks, roi_is_sane, warp_roi
from python_ref.vision.sample import SampleInput, sample_input

ModelRunner = Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]
MODELS = Path(__file__).resolve().parents[2] / "models"
# Landmark-derived keypoints, in the detector's order: eyes = mean of the two corners, mouth = mean of 13 and 14.
KEYPOINT_LANDMARKS = ((33, 133), (263, 362), (1,), (13, 14), (234,), (454,))


def python_ref_runner(path: str | Path) -> ModelRunner:
    from python_ref import Interpreter

    return Interpreter(path).run


def litert_runner(tflite_path: str | Path) -> ModelRunner:
    """The same model run by LiteRT from its .tflite (an independent oracle for the models' arithmetic)."""
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_path=str(tflite_path), num_threads=1)
    it.allocate_tensors()
    ins = {d["name"]: d["index"] for d in it.get_input_details()}
    outs = {d["name"]: d["index"] for d in it.get_output_details()}

    def run(feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        for name, value in feeds.items():
            it.set_tensor(ins[name], value)
        it.invoke()
        return {name: it.get_tensor(i).copy() for name, i in outs.items()}

    return run


@dataclass
class Face:
    box: np.ndarray  # (x_min, y_min, x_max, y_max) of the landmarks
    keypoints: np.ndarray  # [6, 2]
    score: float  # face presence from the landmark model
    landmarks: np.ndarray  # [468, 3], refined: [478, 3]
    roi: Roi
    detection: Detection | None = None


@dataclass
class FrameStats:
    ran_detector: bool = False
    ms: dict[str, float] = field(default_factory=dict)


def face_from_landmarks(lm: np.ndarray, presence: float, roi: Roi, det: Detection | None) -> Face:
    box = np.array([lm[:, 0].min(), lm[:, 1].min(), lm[:, 0].max(), lm[:, 1].max()])
    kps = np.array([lm[list(ix), :2].mean(axis=0) for ix in KEYPOINT_LANDMARKS])
    return Face(box, kps, presence, lm, roi, det)


class FaceMesh:
    def __init__(self, detector: ModelRunner | None = None, landmarker: ModelRunner | None = None, *,
                 max_faces: int = 1, min_detection_score: float = 0.5, min_presence: float = 0.5,
                 tracking: bool = True, refine: bool = False, ops: Any = None) -> None:
        """refine: the landmarker is the attention mesh (face_landmark_with_attention): 478 refined landmarks.
        ops: the image operations (sample_input) of an engine (wasmrt.vision.imgops); None: python_ref's."""
        self.sample: SampleInput = ops.sample_input if ops is not None else sample_input
        self.refine = refine
        self.detector = detector or python_ref_runner(MODELS / "face_detector.wrt")
        self.landmarker = landmarker or python_ref_runner(
            MODELS / ("face_landmark_attention.wrt" if refine else "face_landmark.wrt"))
        self.max_faces, self.min_detection_score, self.min_presence = max_faces, min_detection_score, min_presence
        self.tracking = tracking
        self.tracked: list[Roi] = []
        self.stats = FrameStats()

    def reset(self) -> None:
        self.tracked = []

    def landmarks(self, rgb: np.ndarray, roi: Roi) -> tuple[np.ndarray, float]:
        """Landmarks [468, 3] (refined: [478, 3]) in image pixels and the presence score for one crop."""
        t0 = time.perf_counter()
        tensor = warp_roi(rgb, roi, sample=self.sample)
        t1 = time.perf_counter()
        out = self.landmarker({"input_1": tensor})
        t2 = time.perf_counter()
        flag = out[PRESENCE] if self.refine else out["conv2d_31"]
        presence = float(1.0 / (1.0 + np.exp(-np.clip(float(flag.reshape(-1)[0]), -100.0, 100.0))))
        if self.refine:  # every region mapped to the image, then merged
            mesh, *regions = (np.asarray(out[k], np.float64).reshape(-1, 3 if k == OUTPUTS[0] else 2)
                              for k in OUTPUTS)
            mesh = map_landmarks(mesh, roi)
            regions = [map_landmarks(np.c_[r, np.zeros(len(r))], roi)[:, :2] for r in regions]
            lm = refine_landmarks(mesh, *regions)
        else:
            lm = map_landmarks(out["conv2d_21"], roi)
        ms = self.stats.ms
        ms["warp"] = ms.get("warp", 0.0) + (t1 - t0) * 1e3
        ms["landmarks"] = ms.get("landmarks", 0.0) + (t2 - t1) * 1e3
        return lm, presence

    def detect(self, image: np.ndarray) -> list[Face]:
        rgb = np.asarray(image)
        h, w = rgb.shape[:2]
        self.stats = FrameStats()
        faces: list[Face] = []
        for roi in self.tracked if self.tracking else []:
            lm, presence = self.landmarks(rgb, roi)
            if presence >= self.min_presence and roi_is_sane(roi_from_landmarks(lm), roi, w, h):
                faces.append(face_from_landmarks(lm, presence, roi, None))
        if len(faces) < self.max_faces:
            t0 = time.perf_counter()
            dets = detect_faces(self.detector, rgb, self.min_detection_score, sample=self.sample)
            self.stats.ran_detector = True
            self.stats.ms["detector"] = (time.perf_counter() - t0) * 1e3
            for det in dets:
                if len(faces) >= self.max_faces:
                    break
                cx, cy = (det.box[0] + det.box[2]) / 2, (det.box[1] + det.box[3]) / 2
                if any(f.box[0] <= cx <= f.box[2] and f.box[1] <= cy <= f.box[3] for f in faces):
                    continue  # already tracked
                roi = roi_from_detection(det)
                lm, presence = self.landmarks(rgb, roi)
                if presence >= self.min_presence:
                    faces.append(face_from_landmarks(lm, presence, roi, det))
        self.tracked = [roi_from_landmarks(f.landmarks) for f in faces] if self.tracking else []
        return faces
