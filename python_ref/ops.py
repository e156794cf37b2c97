"""Reference implementation of every op in python_ref/opdefs.py, in numpy."""

from __future__ import annotations

from typing import Any

import numpy as np


def run(op: str, inputs: list[np.ndarray | None], attrs: dict[str, Any]) -> list[np.ndarray]:
    """Run one op. inputs holds None for an absent optional input; attrs has every attribute of the op."""
    raise NotImplementedError(op)
