"""Every constant the hand and segmentation pipelines use, declared once: python_ref/vision reads them from here and
tools/gen_vision_constants.py writes them into js_bindings/vision/constants.js, so the two languages cannot drift.

Values are plain numbers, strings, lists and dicts (JSON-able). Options that reproduce MediaPipe's graphs
(mediapipe==0.10.21: palm_detection_cpu, hand_landmark_cpu, hand_landmark_landmarks_to_roi,
palm_detection_detection_to_roi, hand_landmark_tracking_cpu, selfie_segmentation_cpu, segmentation_smoothing) carry
MediaPipe's option names in their comments.
"""

from __future__ import annotations

import math

# -- palm detection (palm_detection_full / _lite: both 192x192, 2016 anchors) ------------------------------------
PALM_INPUT = 192  # ImageToTensor 192x192, keep_aspect_ratio (letterbox), float range [-1, 1], BORDER_ZERO
PALM_ANCHORS = {  # SsdAnchorsCalculatorOptions
    "num_layers": 4,
    "min_scale": 0.1484375,
    "max_scale": 0.75,
    "input_size": PALM_INPUT,
    "anchor_offset": 0.5,
    "strides": [8, 16, 16, 16],
    "aspect_ratios": [1.0],
    "interpolated_scale_aspect_ratio": 1.0,  # one more anchor per layer (MediaPipe's default)
    "fixed_anchor_size": True,  # width = height = 1
}
PALM_NUM_BOXES = 2016
PALM_NUM_COORDS = 18  # box (x, y, w, h), then 7 keypoints (x, y); TensorsToDetectionsCalculator, reverse_output_order
PALM_NUM_KEYPOINTS = 7
PALM_SCORE_CLIP = 100.0  # score_clipping_thresh, then sigmoid
PALM_MIN_SCORE = 0.5  # min_score_thresh (Hands' min_detection_confidence)
PALM_NMS_IOU = 0.3  # NonMaxSuppression: WEIGHTED, INTERSECTION_OVER_UNION, min_suppression_threshold
# Palm keypoints: 0 wrist centre, 1 index finger MCP, 2 middle finger MCP, 3 ring finger MCP, 4 pinky MCP,
# 5 thumb CMC, 6 thumb MCP.
PALM_ROTATION_KEYPOINTS = [0, 2]  # DetectionsToRects: rotation_vector_start/end_keypoint_index
HAND_TARGET_ANGLE = math.pi / 2  # rotation_vector_target_angle_degrees: 90 (the fingers point up in the crop)
PALM_ROI = {"scale": 2.6, "shift_x": 0.0, "shift_y": -0.5}  # RectTransformation, square_long

# -- hand landmarks (hand_landmark_full / _lite) ---------------------------------------------------------------
HAND_INPUT = 224  # ImageToTensor 224x224, float range [0, 1], BORDER_REPLICATE
HAND_NUM_LANDMARKS = 21
HAND_NORMALIZE_Z = 0.4  # TensorsToLandmarks normalize_z: the model's z is divided by it (then scaled like x)
HAND_MIN_PRESENCE = 0.5  # ThresholdingCalculator (Hands' min_tracking_confidence); the model's flag is a probability
HAND_OUTPUTS = {"landmarks": "Identity", "presence": "Identity_1", "handedness": "Identity_2",
                "world": "Identity_3"}
HANDEDNESS_LABELS = ["Left", "Right"]  # handedness.txt: the flag is the score of "Left" (binary classification)
# Landmarks -> next frame's crop (HandLandmarkLandmarksToRoi): the bounding box of these landmarks (wrist, thumb
# base, the MCP and PIP joints), rotation from the wrist to the mean of the middle MCP with the mean of the index
# and ring MCPs; then RectTransformation, square_long.
HAND_ROI_LANDMARKS = [0, 1, 2, 3, 5, 6, 9, 10, 13, 14, 17, 18]
HAND_ROTATION_LANDMARKS = {"wrist": 0, "index": 5, "middle": 9, "ring": 13}
LANDMARK_ROI = {"scale": 2.0, "shift_x": 0.0, "shift_y": -0.1}
TRACK_IOU = 0.5  # AssociationNormRectCalculator min_similarity_threshold: a tracked crop replaces a palm crop
MAX_HANDS = 2  # max_num_hands

HAND_LANDMARK_NAMES = [
    "wrist", "thumb_cmc", "thumb_mcp", "thumb_ip", "thumb_tip", "index_mcp", "index_pip", "index_dip", "index_tip",
    "middle_mcp", "middle_pip", "middle_dip", "middle_tip", "ring_mcp", "ring_pip", "ring_dip", "ring_tip",
    "pinky_mcp", "pinky_pip", "pinky_dip", "pinky_tip",
]
HAND_CONNECTIONS = [  # the skeleton to draw
    [0, 1], [1, 2], [2, 3], [3, 4], [0, 5], [5, 6], [6, 7], [7, 8], [5, 9], [9, 10], [10, 11], [11, 12],
    [9, 13], [13, 14], [14, 15], [15, 16], [13, 17], [0, 17], [17, 18], [18, 19], [19, 20],
]

# -- gestures (python_ref/vision/gestures.py says the rules) ------------------------------------------------------
FINGERS = {"index": [5, 6, 8], "middle": [9, 10, 12], "ring": [13, 14, 16], "pinky": [17, 18, 20]}  # MCP, PIP, tip
THUMB = {"mcp": 2, "tip": 4, "palm": 9}
FINGER_EXTENDED = 1.15  # |tip - wrist| > FINGER_EXTENDED * |pip - wrist| (world landmarks)
THUMB_EXTENDED = 1.25  # |thumb tip - middle MCP| > THUMB_EXTENDED * |thumb MCP - middle MCP| (world landmarks)
DIRECTION_COS = math.cos(math.pi / 4)  # "up" / "down": within 45 degrees of the image's vertical
GESTURES = ["open_palm", "closed_fist", "pointing_up", "victory", "thumb_up", "thumb_down"]

# -- selfie segmentation ---------------------------------------------------------------------------------------
SELFIE_MODELS = {  # ImageToTensor: the whole frame stretched (keep_aspect_ratio false), [0, 1], BORDER_ZERO
    "general": {"width": 256, "height": 256, "source": "selfie_segmentation.tflite",
                "output": "activation_10"},
    "landscape": {"width": 256, "height": 144, "source": "selfie_segmentation_landscape.tflite",
                  "output": "segment_back"},
}
LANDSCAPE_MIN_ASPECT = 4 / 3  # width / height above this -> landscape (the nearer input shape in log aspect)
SMOOTHING_RATIO = 0.7  # SegmentationSmoothingCalculator combine_with_previous_ratio (MediaPipe's pose graph)
# The smoothing's uncertainty polynomial in t^2, t = mask - 0.5 (SegmentationSmoothingCalculator's coefficients,
# an approximation of 1 - (1 - H(p))^2 with H the binary entropy): c1, c2, c3, c4, c5.
SMOOTHING_POLY = [5.68842, -0.748699, -57.8051, 291.309, -624.717]
MASK_THRESHOLD = 0.5  # a pixel is the person where the mask is >= this (for IoU and binary masks)
BLUR_RADIUS = 8  # blurBackground's default box radius (pixels), applied as BLUR_PASSES box passes
BLUR_PASSES = 2
# the largest blur radius: the engine's blur divides by 2r + 1 with one multiply, exact while 2r + 1 < 256
BLUR_MAX_RADIUS = 127

ALL = {name: value for name, value in dict(globals()).items() if name.isupper()}
