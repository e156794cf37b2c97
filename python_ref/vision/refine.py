"""Refined landmarks from MediaPipe's attention face mesh (face_landmark_with_attention.tflite): 478 points.

The model outputs the 468-point mesh plus dense lips (80 points), eyes (71 each) and irises (5 each), all in crop
pixels. The refined set is the mesh with the lips and eye points written over the mesh points they stand for (x, y
only; the mesh keeps its z), and the irises appended as points 468-472 (left) and 473-477 (right) with z the mean
z of their eye's contour (its first 16 points). The index lists are those the model's own Landmarks2TransformMatrix
ops crop each region with (tests check they equal the subsets in the converted model).
"""

from __future__ import annotations

import numpy as np

LIPS = (61, 146, 91, 181, 84, 17, 314, 405, 321, 375, 291, 185, 40, 39, 37, 0, 267, 269, 270, 409, 78, 95, 88, 178,
        87, 14, 317, 402, 318, 324, 308, 191, 80, 81, 82, 13, 312, 311, 310, 415, 76, 77, 90, 180, 85, 16, 315, 404,
        320, 307, 306, 184, 74, 73, 72, 11, 302, 303, 304, 408, 62, 96, 89, 179, 86, 15, 316, 403, 319, 325, 292,
        183, 42, 41, 38, 12, 268, 271, 272, 407)
LEFT_EYE = (33, 7, 163, 144, 145, 153, 154, 155, 133, 246, 161, 160, 159, 158, 157, 173, 130, 25, 110, 24, 23, 22,
            26, 112, 243, 247, 30, 29, 27, 28, 56, 190, 226, 31, 228, 229, 230, 231, 232, 233, 244, 113, 225, 224,
            223, 222, 221, 189, 35, 124, 46, 53, 52, 65, 143, 111, 117, 118, 119, 120, 121, 128, 245, 156, 70, 63,
            105, 66, 107, 55, 193)
RIGHT_EYE = (263, 249, 390, 373, 374, 380, 381, 382, 362, 466, 388, 387, 386, 385, 384, 398, 359, 255, 339, 254, 253,
             252, 256, 341, 463, 467, 260, 259, 257, 258, 286, 414, 446, 261, 448, 449, 450, 451, 452, 453, 464, 342,
             445, 444, 443, 442, 441, 413, 265, 353, 276, 283, 282, 295, 372, 340, 346, 347, 348, 349, 350, 357, 465,
             383, 300, 293, 334, 296, 336, 285, 417)
EYE_CONTOUR = 16  # the first 16 points of an eye list: its lower and upper contour
LEFT_IRIS, RIGHT_IRIS = tuple(range(468, 473)), tuple(range(473, 478))
# the attention model's outputs, in the order refine() takes them
OUTPUTS = ("output_mesh_identity", "output_lips", "output_left_eye", "output_right_eye", "output_left_iris",
           "output_right_iris")
PRESENCE = "conv_faceflag"


def refine_landmarks(mesh: np.ndarray, lips: np.ndarray, left_eye: np.ndarray, right_eye: np.ndarray,
                     left_iris: np.ndarray, right_iris: np.ndarray) -> np.ndarray:
    """[478, 3] from the mesh [468, 3] and the regions' (x, y) points [n, 2], all in the same coordinates."""
    out = np.zeros((478, 3), np.float64)
    out[:468] = mesh
    for idx, pts in ((LIPS, lips), (LEFT_EYE, left_eye), (RIGHT_EYE, right_eye)):
        out[list(idx), :2] = pts
    for idx, pts, eye in ((LEFT_IRIS, left_iris, LEFT_EYE), (RIGHT_IRIS, right_iris, RIGHT_EYE)):
        out[list(idx), :2] = pts
        out[list(idx), 2] = mesh[list(eye[:EYE_CONTOUR]), 2].mean()
    return out
