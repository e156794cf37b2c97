"""Import-time evaluation of ONNX nodes whose inputs are all constant (shape arithmetic, weight preprocessing).

Shapes are static after import, so the shape sub-graphs exporters emit (Shape -> Gather -> Unsqueeze -> Concat ->
Reshape) collapse to constants here. The common ops have a direct numpy implementation; anything else is handed
to onnx's own reference evaluator, node by node.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

Arrays = list[np.ndarray | None]
# Folding evaluates untrusted graphs: a few bytes of ConstantOfShape or Range can ask for gigabytes, a Conv on
# constants runs onnx's pure-Python reference. Results and inputs beyond these sizes are refused instead.
MAX_FOLD_ELEMENTS = 1 << 24
MAX_REFERENCE_ELEMENTS = 1 << 20
FOLDERS: dict[str, Callable[[Arrays, dict[str, Any], int], list[np.ndarray]]] = {}


def _folder(*ops: str) -> Callable:
    def register(fn: Callable) -> Callable:
        for op in ops:
            FOLDERS[op] = fn
        return fn

    return register


def fold(node: onnx.NodeProto, inputs: Arrays, attrs: dict[str, Any], opset: int) -> list[np.ndarray]:
    """Evaluate node on constant inputs (None for an absent optional input); one array per output."""
    fn = FOLDERS.get(node.op_type) if node.domain in ("", "ai.onnx") else None
    size = max([_result_size(node.op_type, inputs), _window_work(inputs, attrs),
                *(a.size for a in inputs if a is not None)], default=0)
    limit = MAX_FOLD_ELEMENTS if fn is not None else MAX_REFERENCE_ELEMENTS
    if size > limit:
        raise ValueError(f"folding it would handle {size:,.0f} elements (limit {limit:,})")
    if fn is not None:
        return [np.asarray(o) for o in fn(inputs, attrs, opset)]
    return _reference(node, inputs, opset)


def _result_size(op: str, x: Arrays) -> float:
    """Elements of the result of the ops whose result can be far larger than their inputs (0: not one of them)."""
    def ints(i: int) -> list[int]:
        return [int(v) for v in np.atleast_1d(x[i]).reshape(-1)] if len(x) > i and x[i] is not None else []

    if op == "ConstantOfShape":
        return float(np.prod([max(d, 0) for d in ints(0)], dtype=float))
    if op == "Range" and len(x) == 3 and all(v is not None and v.size == 1 for v in x):
        start, limit, delta = (float(np.asarray(v).reshape(-1)[0]) for v in x)  # type: ignore[union-attr]
        span = (limit - start) / delta if delta else float("inf")
        return abs(span) if np.isfinite(span) else float("inf")
    if op in ("Expand", "Tile") and len(x) > 1 and x[0] is not None:
        other = ints(1)
        if op == "Tile" and (len(other) != x[0].ndim or min(other, default=0) < 0):  # numpy.tile crashes on some
            raise ValueError(f"repeats {other} must be {x[0].ndim} values >= 0, one per input axis")
        dims = [a * b for a, b in zip(x[0].shape, other, strict=False)] if op == "Tile" else other + list(x[0].shape)
        return float(np.prod([abs(d) for d in dims], dtype=float))
    return 0.0


def _window_work(x: Arrays, attrs: dict[str, Any]) -> float:
    """Elements a windowed op (pooling, convolution) visits: its padded input times its window. Pads are
    attributes, so a small constant input can still ask for a million-wide padded row (the reference evaluator
    loops over it in Python)."""
    pads = [int(p) for p in attrs.get("pads") or ()]
    if not pads or not x or x[0] is None or x[0].ndim < 3:
        return 0.0
    k = len(pads) // 2
    spatial = [d + abs(pads[i]) + abs(pads[i + k]) for i, d in enumerate(x[0].shape[2:2 + k])]
    window = [abs(int(v)) for v in attrs.get("kernel_shape") or (1,)]
    return float(np.prod([*x[0].shape[:2], *spatial, *window], dtype=float))


def _reference(node: onnx.NodeProto, inputs: Arrays, opset: int) -> list[np.ndarray]:
    from onnx.reference import ReferenceEvaluator  # imported lazily: it loads every op implementation

    feeds = {n: a for n, a in zip(node.input, inputs, strict=False) if n}
    opsets = {"": opset} if node.domain in ("", "ai.onnx") else {"": opset, node.domain: 1}
    evaluator = ReferenceEvaluator(node, opsets=opsets)
    return [np.asarray(o) for o in evaluator.run(None, feeds)]


def _axes(arr: Any, rank: int) -> list[int]:
    return sorted(int(a) % rank for a in np.atleast_1d(arr))


# -- the shape arithmetic exporters emit ---------------------------------------------------------------------------
@_folder("Identity", "Dropout")
def _identity(x: Arrays, a: dict, opset: int) -> list:
    return [x[0], np.ones(x[0].shape, bool)]


@_folder("Cast")
def _cast(x: Arrays, a: dict, opset: int) -> list:
    return [x[0].astype(helper.tensor_dtype_to_np_dtype(a["to"]))]


@_folder("CastLike")
def _cast_like(x: Arrays, a: dict, opset: int) -> list:
    return [x[0].astype(x[1].dtype)]


@_folder("Unsqueeze")
def _unsqueeze(x: Arrays, a: dict, opset: int) -> list:
    axes = x[1] if len(x) > 1 and x[1] is not None else a["axes"]
    return [np.expand_dims(x[0], tuple(_axes(axes, x[0].ndim + len(np.atleast_1d(axes)))))]


@_folder("Squeeze")
def _squeeze(x: Arrays, a: dict, opset: int) -> list:
    axes = x[1] if len(x) > 1 and x[1] is not None else a.get("axes")
    if axes is None:
        return [np.squeeze(x[0])]
    return [np.squeeze(x[0], tuple(_axes(axes, x[0].ndim)))]


@_folder("Concat")
def _concat(x: Arrays, a: dict, opset: int) -> list:
    return [np.concatenate([t for t in x if t is not None], axis=a["axis"])]


@_folder("Gather")
def _gather(x: Arrays, a: dict, opset: int) -> list:
    axis = a.get("axis", 0)
    idx = x[1].astype(np.int64)
    idx = np.where(idx < 0, idx + x[0].shape[axis], idx)
    return [np.take(x[0], idx, axis=axis)]


@_folder("Reshape")
def _reshape(x: Arrays, a: dict, opset: int) -> list:
    from wasmrt.compile.onnx.shapes import reshape_target

    return [x[0].reshape(reshape_target(x[0].shape, x[1], bool(a.get("allowzero", 0))))]


@_folder("Slice")
def _slice(x: Arrays, a: dict, opset: int) -> list:
    from wasmrt.compile.onnx.shapes import slice_params

    if opset < 10:
        starts, ends, axes, steps = a["starts"], a["ends"], a.get("axes"), None
    else:
        starts, ends = x[1], x[2]
        axes = x[3] if len(x) > 3 else None
        steps = x[4] if len(x) > 4 else None
    params = slice_params(x[0].shape, starts, ends, axes, steps)
    index = tuple(slice(s, None if (e < 0 and st < 0) else e, st) for s, e, st in params)
    return [x[0][index]]


@_folder("Transpose")
def _transpose(x: Arrays, a: dict, opset: int) -> list:
    return [np.transpose(x[0], a.get("perm"))]


@_folder("ConstantOfShape")
def _constant_of_shape(x: Arrays, a: dict, opset: int) -> list:
    value = a.get("value")
    fill = numpy_helper.to_array(value).reshape(-1) if value is not None else np.zeros(1, np.float32)
    return [np.full(tuple(int(d) for d in x[0]), fill[0], dtype=fill.dtype)]


@_folder("Range")
def _range(x: Arrays, a: dict, opset: int) -> list:
    return [np.arange(x[0], x[1], x[2]).astype(x[0].dtype)]


@_folder("Expand")
def _expand(x: Arrays, a: dict, opset: int) -> list:
    shape = np.broadcast_shapes(x[0].shape, tuple(int(d) for d in x[1]))
    return [np.broadcast_to(x[0], shape).copy()]


@_folder("Where")
def _where(x: Arrays, a: dict, opset: int) -> list:
    return [np.where(x[0], x[1], x[2])]


def _elementwise(fn: Callable) -> Callable:
    return lambda x, a, opset: [np.asarray(fn(*x)).astype(np.result_type(*x), copy=False)]


def _comparison(fn: Callable) -> Callable:
    return lambda x, a, opset: [np.asarray(fn(*x))]


FOLDERS.update({
    "Add": _elementwise(np.add), "Sub": _elementwise(np.subtract), "Mul": _elementwise(np.multiply),
    "Neg": _elementwise(np.negative), "Abs": _elementwise(np.abs), "Sqrt": _elementwise(np.sqrt),
    "Floor": _elementwise(np.floor), "Ceil": _elementwise(np.ceil),
    "Equal": _comparison(np.equal), "Less": _comparison(np.less), "Greater": _comparison(np.greater),
    "Not": _comparison(np.logical_not), "And": _comparison(np.logical_and), "Or": _comparison(np.logical_or),
})


@_folder("Div")
def _div(x: Arrays, a: dict, opset: int) -> list:
    if np.issubdtype(x[0].dtype, np.integer):  # ONNX integer division truncates toward zero
        return [np.trunc(x[0] / x[1]).astype(x[0].dtype)]
    return [(x[0] / x[1]).astype(x[0].dtype)]


@_folder("Shape")
def _shape(x: Arrays, a: dict, opset: int) -> list:
    from wasmrt.compile.onnx.shapes import shape_slice

    return [shape_slice(x[0].shape, a.get("start", 0), a.get("end"))]


@_folder("Size")
def _size(x: Arrays, a: dict, opset: int) -> list:
    return [np.array(x[0].size, np.int64)]
