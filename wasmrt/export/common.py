"""What the peer exporters share: loading the optimized graph, running it on python_ref, padding and clamp helpers."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from python_ref import dispatch
from wasmrt.compile.ir import Graph, Node
from wasmrt.errors import WasmrtError

INF = math.inf


class ExportError(WasmrtError):
    """The graph uses something the target format (or this exporter) cannot express."""


def load_optimized(path: str | Path, input_shapes: dict[str, tuple[int, ...]] | None = None) -> Graph:
    """Source model -> imported graph -> the converter's passes: what every engine in the bench runs."""
    from wasmrt.compile.converter import load_graph
    from wasmrt.compile.passes import optimize

    graph = load_graph(path, input_shapes)
    optimize(graph)
    return graph


def run_reference(graph: Graph, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run the graph op by op with the python_ref kernels (the oracle every export is checked against)."""
    values: dict[str, np.ndarray] = {k: v.data for k, v in graph.tensors.items() if v.is_const}
    values.update(feeds)
    for n in graph.nodes:
        outs = dispatch.run(n.op, [values[i] if i else None for i in n.inputs], n.attrs)
        values.update(zip(n.outputs, outs, strict=True))
    return {o: values[o] for o in graph.outputs}


def random_input(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """Floats in [-1, 1]; integer and bool inputs (token ids, masks, segment ids) 0 or 1, valid for all of them."""
    if np.dtype(dtype).kind in "iub":
        return rng.integers(0, 2, shape).astype(dtype)
    return rng.uniform(-1.0, 1.0, shape).astype(dtype)


def random_feeds(graph: Graph, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {name: random_input(rng, graph.tensors[name].shape, graph.tensors[name].dtype) for name in graph.inputs}


def max_rel_error(got: np.ndarray, want: np.ndarray) -> float:
    """max |got - want| / max |want|: one number per output, insensitive to the output's scale."""
    got = np.asarray(got, np.float64).reshape(-1)
    want = np.asarray(want, np.float64).reshape(-1)
    if got.shape != want.shape:
        return INF
    scale = max(float(np.max(np.abs(want))) if want.size else 0.0, 1e-12)
    return float(np.max(np.abs(got - want))) / scale if want.size else 0.0


@dataclass(frozen=True)
class SpatialPads:
    """How a window op's explicit pads map onto formats that only know SAME and VALID."""

    padding: str  # "SAME" or "VALID"
    extra: tuple[int, int, int, int] | None  # [top, left, bottom, right] for a separate pad op, when needed


def window_padding(in_hw: tuple[int, int], out_hw: tuple[int, int], kernel: tuple[int, int],
                   strides: tuple[int, int], dilations: tuple[int, int], pads: tuple[int, ...]) -> SpatialPads:
    """SAME when the pads the windows actually touch are TF's SAME split, VALID when none, else an explicit pad.

    Pads no window reaches (the bottom row of a stride-2 conv exported from PyTorch) do not count.
    """
    pt, pl = int(pads[0]), int(pads[1])
    used = []
    for ax, before in ((0, pt), (1, pl)):
        span = (out_hw[ax] - 1) * strides[ax] + (kernel[ax] - 1) * dilations[ax] + 1
        used.append((before, max(0, span - in_hw[ax] - before)))
    if all(b == 0 and a == 0 for b, a in used):
        return SpatialPads("VALID", None)
    same = True
    for ax, (before, after) in enumerate(used):
        out = -(-in_hw[ax] // strides[ax])
        total = max((out - 1) * strides[ax] + (kernel[ax] - 1) * dilations[ax] + 1 - in_hw[ax], 0)
        same &= out == out_hw[ax] and before == total // 2 and after == total - total // 2
    if same:
        return SpatialPads("SAME", None)
    return SpatialPads("VALID", (used[0][0], used[1][0], used[0][1], used[1][1]))


def clamp_of(node: Node) -> tuple[float, float]:
    a = node.attrs
    if node.op == "CLIP":
        return float(a["min"]), float(a["max"])
    if node.op == "RELU":
        return 0.0, INF
    return float(a.get("act_min", -INF)), float(a.get("act_max", INF))


def is_depthwise(graph: Graph, node: Node) -> bool:
    w = graph.tensors[node.inputs[1]]
    cin = graph.tensors[node.inputs[0]].shape[3]
    return node.attrs["groups"] == cin and w.shape[3] == 1 and cin > 1
