"""Output shape and dtype of every op, from input shapes, dtypes and attributes (no data needed)."""

from __future__ import annotations

from typing import Any

import numpy as np

Spec = tuple[tuple[int, ...], np.dtype]


def infer(op: str, inputs: list[Spec | None], attrs: dict[str, Any]) -> list[Spec]:
    """Shapes and dtypes of op's outputs. inputs holds None for an absent optional input."""
    raise NotImplementedError(op)
