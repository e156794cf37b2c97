"""ONNX shape rules the importer resolves statically: Reshape targets, Slice clamping, auto_pad, Shape slicing."""

from __future__ import annotations

from typing import Any

import numpy as np


def reshape_target(in_shape: tuple[int, ...], shape: Any, allowzero: bool) -> tuple[int, ...]:
    """ONNX Reshape: 0 copies the input dim (unless allowzero), one -1 is inferred."""
    dims = [int(d) for d in np.atleast_1d(shape)]
    if not allowzero:
        dims = [in_shape[i] if d == 0 else d for i, d in enumerate(dims)]
    if dims.count(-1) > 1:
        raise ValueError(f"Reshape target {dims} has more than one -1")
    total = int(np.prod(in_shape, dtype=np.int64))
    if -1 in dims:
        known = int(np.prod([d for d in dims if d != -1], dtype=np.int64))
        if known == 0 or total % known:
            raise ValueError(f"cannot reshape {in_shape} to {dims}")
        dims[dims.index(-1)] = total // known
    if int(np.prod(dims, dtype=np.int64)) != total:
        raise ValueError(f"cannot reshape {in_shape} to {dims}")
    return tuple(dims)


def slice_params(shape: tuple[int, ...], starts: Any, ends: Any, axes: Any = None, steps: Any = None
                 ) -> list[tuple[int, int, int]]:
    """Clamped (start, end, step) for every axis; with a negative step end -1 means 'through index 0'."""
    rank = len(shape)
    starts = [int(s) for s in np.atleast_1d(starts)]
    ends = [int(e) for e in np.atleast_1d(ends)]
    axes = list(range(len(starts))) if axes is None else [int(a) % rank for a in np.atleast_1d(axes)]
    steps = [1] * len(starts) if steps is None else [int(s) for s in np.atleast_1d(steps)]
    out = [(0, d, 1) for d in shape]
    for a, s, e, st in zip(axes, starts, ends, steps, strict=True):
        if st == 0:
            raise ValueError("Slice step 0")
        dim = shape[a]
        s = s + dim if s < 0 else s
        e = e + dim if e < 0 else e
        if st > 0:
            s, e = min(max(s, 0), dim), min(max(e, 0), dim)
        else:
            s, e = min(max(s, 0), dim - 1), min(max(e, -1), dim - 1)
        out[a] = (s, e, st)
    return out


def shape_slice(shape: tuple[int, ...], start: int = 0, end: int | None = None) -> np.ndarray:
    """ONNX Shape with start/end (opset 15): negative values count from the back, out of range clamps."""
    return np.array(shape[slice(start, end)], dtype=np.int64)


def same_pads(size: int, kernel: int, stride: int, dilation: int, upper: bool) -> tuple[int, int]:
    """auto_pad SAME_UPPER / SAME_LOWER for one spatial axis: output = ceil(size / stride)."""
    out = -(-size // stride)
    total = max(0, (out - 1) * stride + (kernel - 1) * dilation + 1 - size)
    small, big = total // 2, total - total // 2
    return (small, big) if upper else (big, small)


def explicit_pads(node_attrs: dict[str, Any], in_spatial: tuple[int, ...], kernel: tuple[int, ...],
                  strides: tuple[int, ...], dilations: tuple[int, ...]) -> list[int]:
    """ONNX pads/auto_pad of a conv or pool -> [begin_0..begin_k, end_0..end_k]."""
    n = len(kernel)
    auto = node_attrs.get("auto_pad", "NOTSET")
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        pairs = [same_pads(in_spatial[i], kernel[i], strides[i], dilations[i], auto == "SAME_UPPER")
                 for i in range(n)]
        return [p[0] for p in pairs] + [p[1] for p in pairs]
    if auto == "VALID":
        return [0] * (2 * n)
    if auto not in ("NOTSET", ""):
        raise ValueError(f"unknown auto_pad {auto!r}")
    return [int(p) for p in node_attrs.get("pads", [0] * (2 * n))]
