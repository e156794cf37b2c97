"""Sample inputs of the breadth ops for tests/test_ref_ops.py's shape-inference check (every op needs one)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from python_ref.opdefs import CastTo, Direction


def breadth_samples(f: Callable[..., np.ndarray]) -> dict[str, list[tuple[list[np.ndarray | None], dict[str, Any]]]]:
    b = np.array([[True, False, True]])
    i64 = np.array([[3, -1, 2]], np.int64)
    lstm = [f(3, 2, 4), f(2, 20, 4), f(2, 20, 3), None, np.array([3, 1], np.int32), None, None, f(2, 15),
            f(2, 3, 5), f(2, 3), f(2, 4, 5)]
    return {
        "LAYER_NORM": [([f(2, 3, 4), f(4), f(3, 4)], {"axis": 1})],
        "GELU": [([f(2, 3)], {})], **{op: [([np.abs(f(2, 3)) + 0.1], {})] for op in ("ERF", "LOG", "FLOOR", "CEIL")},
        "WHERE": [([b, f(2, 1), f(3)], {})],
        "EXPAND": [([f(3, 1)], {"shape": (2, 1, 4)})],
        "CAST": [([f(2, 3)], {"to": CastTo.INT32}), ([i64], {"to": CastTo.BOOL})],
        **{op: [([i64, np.array([2], np.int64)], {})] for op in ("EQUAL", "LESS", "GREATER", "LESS_EQUAL",
                                                                 "GREATER_EQUAL")},
        "NOT": [([b], {})], **{op: [([b, b.T], {})] for op in ("AND", "OR", "XOR")},
        "SCATTER_ND": [([f(4, 3), np.array([[1], [2]], np.int64), f(2, 3)], {})],
        "SPLIT": [([f(2, 5)], {"axis": 1, "sizes": (2, 0, 3)})],
        "LSTM": [(lstm, {"direction": Direction.BIDIRECTIONAL})],
        "GRU": [([f(3, 2, 4), f(1, 15, 4), f(1, 15, 5), f(1, 30)], {})],
        "RNN": [([f(3, 2, 4), f(1, 5, 4), f(1, 5, 5), None, None, f(1, 2, 5)], {})],
        "LANDMARKS_TO_TRANSFORM_MATRIX": [([f(1, 6, 3)], {"rotation_idx": (0, 3), "subset": (1, 2, 5),
                                                          "size": (4, 5)})],
        "TRANSFORM_TENSOR_BILINEAR": [([f(1, 5, 5, 2), f(1, 4, 4)], {"size": (3, 2)})],
        "TRANSFORM_LANDMARKS": [([f(1, 5, 2), f(1, 4, 4)], {})],
    }
