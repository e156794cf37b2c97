"""Models whose input sizes are chosen at run time (`wasmrt convert --dynamic NAME=AXIS:MIN..MAX`).

The importers resolve every shape statically, so a dynamic dimension is handled by importing the model at its
declared size and at probe sizes, and checking that the graphs differ only where an attribute can be restated so
that it holds at any size:
- RESHAPE: a target entry that follows the input's dimension at the same index becomes 0 (copy); one entry that
  changes otherwise becomes -1 (inferred);
- SLICE: an end at the end of its axis (or, with a negative step, a start at its last index) becomes 2^31 - 1,
  which the op clamps to the axis;
- RESIZE: an output size that is floor(in * scale) becomes 0 (from the scale);
- EXPAND: a target entry equal to the input's dimension becomes 1 (kept by broadcasting).
Anything else that changes with the size (another attribute, a constant computed from a shape, the graph's
structure) is a ConversionError naming the node. The result is then verified: its shapes are inferred again at every
probe size and must equal those the importer produced there. Engines re-plan at run time (the C engine re-plans
its arena and indirection on a size change, within the declared bounds and the model's limits).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from python_ref import shapes
from wasmrt.compile.ir import Graph
from wasmrt.compile.passes import optimize
from wasmrt.errors import ConversionError

END = (1 << 31) - 1  # a slice bound clamped to the axis, whatever its size


@dataclass(frozen=True)
class DynamicDim:
    """Dimension `axis` of graph input `input` takes any size in [lo, hi] at run time."""

    input: str
    axis: int
    lo: int
    hi: int


def parse_dynamic(spec: str) -> DynamicDim:
    """NAME=AXIS:MIN..MAX, e.g. x=3:32..1280 (axes of the model's own input layout, NCHW for ONNX)."""
    m = re.fullmatch(r"(.+)=(\d+):(\d+)\.\.(\d+)", spec.strip())
    if not m:
        raise ValueError(f"--dynamic {spec!r}: expected NAME=AXIS:MIN..MAX (e.g. x=3:32..1280)")
    name, axis, lo, hi = m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4))
    if not 1 <= lo <= hi <= END:
        raise ValueError(f"--dynamic {spec!r}: need 1 <= MIN <= MAX < 2^31")
    return DynamicDim(name, axis, lo, hi)


def _probe_sizes(nominal: int, lo: int, hi: int) -> list[int]:
    """Two other sizes in [lo, hi], steps of the largest power of two (<= 32) dividing the nominal size, so that
    strided layers keep dividing evenly."""
    step = 1
    while step < 32 and nominal % (step * 2) == 0:
        step *= 2
    out = [v for v in (nominal + step, nominal + 3 * step, nominal - step, nominal - 3 * step) if lo <= v <= hi]
    if len(out) < 2:
        out = [v for v in range(lo, hi + 1) if v != nominal][:2]
    if len(out) < 2:
        raise ConversionError(f"a dynamic dimension of size {nominal} in [{lo}, {hi}] has no room to vary")
    return out[:2]


def dynamic_graph(load: Callable[[dict[str, tuple[int, ...]]], Graph], input_shapes: dict[str, tuple[int, ...]],
                  dims: list[DynamicDim], log: Callable[[str], None] | None = None) -> Graph:
    """The optimized graph at input_shapes, with generalized attributes and input bounds (see the module doc).
    load(shapes) imports the model with those input shapes."""
    say = log or (lambda _m: None)
    base = load(dict(input_shapes))
    optimize(base)
    nominal = {name: tuple(base.tensors[name].shape) for name in base.inputs}
    by_input: dict[str, list[DynamicDim]] = {}
    for d in dims:
        if d.input not in nominal:
            raise ConversionError(f"--dynamic names unknown input {d.input!r}; the model's inputs are {base.inputs}")
        if not 0 <= d.axis < len(nominal[d.input]):
            raise ConversionError(f"--dynamic {d.input}: axis {d.axis} of a rank-{len(nominal[d.input])} input")
        if not d.lo <= nominal[d.input][d.axis] <= d.hi:
            raise ConversionError(f"--dynamic {d.input}: the size {nominal[d.input][d.axis]} it is converted at is "
                                  f"outside [{d.lo}, {d.hi}]")
        by_input.setdefault(d.input, []).append(d)
    probes: list[dict[str, tuple[int, ...]]] = []
    for k in range(2):  # two probes, every dynamic dimension moved in each
        shp = {n: list(s) for n, s in nominal.items()}
        for d in dims:
            shp[d.input][d.axis] = _probe_sizes(nominal[d.input][d.axis], d.lo, d.hi)[k]
        probes.append({n: tuple(s) for n, s in shp.items()})
    graphs = []
    for p in probes:
        say(f"probing input sizes {p}")
        try:
            g = load({**input_shapes, **p})
        except Exception as e:
            raise ConversionError(f"the model does not import at the probe sizes {p}: {e}") from e
        optimize(g)
        graphs.append(g)
    _generalize(base, graphs)
    for name, ds in by_input.items():
        b = [(s, s) for s in nominal[name]]
        for d in ds:
            b[d.axis] = (d.lo, d.hi)
        base.tensors[name].bounds = tuple(b)
    for g, p in zip(graphs, probes, strict=True):
        _verify(base, g, p)
    return base


def _fail(node_name: str, op: str, what: str) -> ConversionError:
    return ConversionError(f"node {node_name!r} ({op}): {what} changes with the input size in a way wasmrt cannot "
                           "restate for run-time sizes; convert with fixed input shapes instead")


def _generalize(base: Graph, probes: list[Graph]) -> None:
    graphs = [base, *probes]
    for g in probes:
        if [(n.op, n.inputs, n.outputs) for n in g.nodes] != [(n.op, n.inputs, n.outputs) for n in base.nodes]:
            bad = next((n for n, m in zip(base.nodes, g.nodes, strict=False) if (n.op, n.inputs) != (m.op, m.inputs)),
                       base.nodes[-1])
            raise _fail(bad.name, bad.op, "the graph's structure")
        for name, t in base.tensors.items():
            o = g.tensors.get(name)
            if t.is_const and (o is None or not o.is_const or o.data.shape != t.data.shape
                               or not np.array_equal(o.data, t.data)):
                user = next((n for n in base.nodes if name in n.inputs), None)
                raise _fail(user.name if user else name, user.op if user else "constant", f"the constant {name!r}")
    for k, node in enumerate(base.nodes):
        nodes = [g.nodes[k] for g in graphs]
        ins = [g.tensors[node.inputs[0]].shape if node.inputs and node.inputs[0] else () for g in graphs]
        for attr in node.attrs:
            values = [n.attrs[attr] for n in nodes]
            if all(_same(v, values[0]) for v in values):
                continue
            node.attrs[attr] = _restate(node.name, node.op, attr, values, ins, nodes)


def _same(a: Any, b: Any) -> bool:
    return np.array_equal(np.asarray(a), np.asarray(b))


def _restate(name: str, op: str, attr: str, values: list[Any], ins: list[tuple[int, ...]], nodes: list[Any]) -> Any:
    cols = [tuple(int(v) for v in vals) for vals in values] if op != "RESIZE" or attr == "size" else None
    if cols is None or len({len(c) for c in cols}) != 1:
        raise _fail(name, op, f"attribute {attr}")
    out = list(cols[0])
    moving = [i for i in range(len(out)) if len({c[i] for c in cols}) > 1]
    if op == "RESHAPE" and attr == "shape":
        rest = []
        for i in moving:
            if all(i < len(s) and c[i] == s[i] for c, s in zip(cols, ins, strict=True)):
                out[i] = 0
            else:
                rest.append(i)
        if len(rest) > 1 or (rest and -1 in out):
            raise _fail(name, op, "the reshape target (more than one dimension changes)")
        for i in rest:
            out[i] = -1
        return tuple(out)
    if op == "SLICE" and attr in ("starts", "ends"):
        for i in moving:
            steps = [int(n.attrs["steps"][i]) for n in nodes]
            at_end = [c[i] == (s[i] if st > 0 else s[i] - 1) for c, s, st in zip(cols, ins, steps, strict=True)]
            if not all(at_end) or (attr == "ends") != (steps[0] > 0):
                raise _fail(name, op, f"slice {attr} on axis {i}")
            out[i] = END
        return tuple(out)
    if op == "RESIZE" and attr == "size":
        for i in moving:
            scale = float(np.float32(nodes[0].attrs["scales"][i]))
            if not scale > 0 or any(c[i] != int(np.floor(s[1 + i] * scale)) for c, s in zip(cols, ins, strict=True)):
                raise _fail(name, op, "the resize size (not the input size times a fixed scale)")
            out[i] = 0
        return tuple(out)
    if op == "EXPAND" and attr == "shape":
        for i in moving:
            off = len(out) - len(ins[0])
            if not all(i >= off and c[i] == s[i - off] for c, s in zip(cols, ins, strict=True)):
                raise _fail(name, op, "the expanded shape")
            out[i] = 1
        return tuple(out)
    raise _fail(name, op, f"attribute {attr}")


def _verify(g: Graph, probe: Graph, sizes: dict[str, tuple[int, ...]]) -> None:
    """Shapes of the generalized graph inferred at the probe sizes equal the probe import's."""
    spec = {name: (sizes.get(name, t.shape), t.dtype) for name, t in g.tensors.items()
            if t.is_const or name in g.inputs}
    for n in g.nodes:
        try:
            outs = shapes.infer(n.op, [spec[i] if i else None for i in n.inputs], n.attrs)
        except ValueError as e:
            raise ConversionError(f"node {n.name!r} ({n.op}) fails at input sizes {sizes}: {e}") from e
        for name, (s, dt) in zip(n.outputs, outs, strict=True):
            if tuple(s) != probe.tensors[name].shape:
                raise ConversionError(f"node {n.name!r} ({n.op}): at input sizes {sizes} its output {name!r} would be "
                                      f"{list(s)}, the model gives {list(probe.tensors[name].shape)}")
            spec[name] = (tuple(s), dt)


def describe(bounds: tuple[tuple[int, int], ...]) -> str:
    return "[" + ", ".join(str(lo) if lo == hi else f"{lo}..{hi}" for lo, hi in bounds) + "]"


__all__ = ["END", "DynamicDim", "describe", "dynamic_graph", "parse_dynamic"]
