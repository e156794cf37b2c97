"""The vision pipelines in numpy (the face mesh of the AR lipstick try-on, hand tracking with gestures, selfie
segmentation): the oracle that `wasmrt.vision` (JS) must reproduce.

Stages (each module's docstring defines its arithmetic exactly, so the JS port can agree to rounding):
  sample.py   MediaPipe's image-to-tensor sampling (8-bit bilinear at 1/32 pixel), shared by the two crops below
  detect.py   letterbox to 128x128, BlazeFace anchors, box/keypoint decoding, weighted non-max suppression
  roi.py      rotated square region of interest from a detection or from landmarks, bilinear warp to 192x192,
              mapping landmarks back, the sanity check used by tracking
  facemesh.py FaceMesh: detector + landmark model, tracking from the previous frame's landmarks
  refine.py   the attention mesh's 478 refined landmarks (lips, eyes, irises)
  lips.py     lip mask from the landmark rings (scanline, pixel centres, even-odd), feathering, colour blending
  constants.py every constant of the hand and segmentation pipelines, declared once (generated into JS)
  palm.py     palm detection: SSD anchors, decoding, weighted NMS, the palm -> hand crop
  hands.py    HandTracker: 21 landmarks (image, world), handedness, tracking from the landmarks
  gestures.py open palm, closed fist, pointing up, victory, thumb up / down from one hand's landmarks
  segment.py  SelfieSegmenter (general / landscape by frame shape), smoothing, compositing, background blur

Coordinates are continuous image pixels: x to the right, y down, (0, 0) the top-left corner of the top-left pixel,
so the centre of pixel (row i, column j) is (j + 0.5, i + 0.5).
"""

from python_ref.vision.detect import Detection, decode, detect_faces, letterbox, ssd_anchors, weighted_nms
from python_ref.vision.facemesh import Face, FaceMesh, ModelRunner, litert_runner, python_ref_runner
from python_ref.vision.gestures import finger_states, gesture
from python_ref.vision.hands import Hand, HandTracker, roi_from_hand_landmarks
from python_ref.vision.lips import LIPS_INNER, LIPS_OUTER, feather, lip_alpha, lip_mask, paint_lips, parse_color
from python_ref.vision.refine import refine_landmarks
from python_ref.vision.roi import Roi, map_landmarks, roi_from_detection, roi_from_landmarks, roi_is_sane, warp_roi
from python_ref.vision.sample import sample_rect
from python_ref.vision.segment import SelfieSegmenter, blur_background, composite, replace_background

__all__ = [
    "LIPS_INNER", "LIPS_OUTER", "Detection", "Face", "FaceMesh", "Hand", "HandTracker", "ModelRunner", "Roi",
    "SelfieSegmenter", "blur_background", "composite", "decode", "detect_faces", "feather", "finger_states", "gesture",
    "letterbox", "lip_alpha", "lip_mask", "litert_runner", "map_landmarks", "paint_lips", "parse_color",
    "python_ref_runner", "refine_landmarks", "replace_background", "roi_from_detection", "roi_from_hand_landmarks",
    "roi_from_landmarks", "roi_is_sane", "sample_rect", "ssd_anchors", "warp_roi", "weighted_nms",
]
