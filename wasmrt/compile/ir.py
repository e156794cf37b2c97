"""The in-memory graph both importers produce and every pass, the planner and the writer consume.

Ops and attributes are those of python_ref/opdefs.py, with the layout conventions documented there (NHWC for
spatial ops, OHWI convolution weights, explicit pads). Shapes are static: importers resolve dynamic dimensions
from the user's --input-shape before building the graph.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from python_ref import qrules, shapes
from python_ref.opdefs import OPS
from python_ref.quant import QuantParams
from python_ref.wrt_file import MAX_ELEMENTS
from wasmrt.errors import ConversionError

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


@dataclass
class Tensor:
    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    data: np.ndarray | None = None  # set for constants
    quant: QuantParams | None = None  # integer tensors holding quantized reals (python_ref/quant.py)
    # float constants of an imported quantized model: the parameters they were dequantized with (per tensor, or
    # per channel on axis 0), so the quantizer can recover the model's own integers (wasmrt.compile.quantizer)
    source_q: QuantParams | None = None
    bounds: tuple[tuple[int, int], ...] | None = None  # graph inputs sized at run time: (min, max) per dimension

    @property
    def is_const(self) -> bool:
        return self.data is not None

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


@dataclass
class Node:
    op: str
    inputs: list[str]  # "" marks an absent optional input
    outputs: list[str]
    attrs: dict[str, Any]
    name: str = ""


@dataclass
class Preprocess:
    """How to turn an image into this input tensor: pixel (0..255) -> (pixel - mean) / std, per channel."""

    layout: str = "NHWC"  # layout of the graph input: NHWC or NCHW
    color: str = "RGB"  # RGB or BGR
    mean: tuple[float, ...] = (0.0, 0.0, 0.0)
    std: tuple[float, ...] = (1.0, 1.0, 1.0)
    resize: str = "stretch"  # stretch | letterbox | crop (centre crop of crop_fraction, then stretch)
    crop_fraction: float = 1.0


@dataclass
class Metadata:
    source: str = ""  # file name of the model this was converted from
    producer: str = ""  # what made the source (e.g. "onnx opset 13", "tflite v3")
    preprocess: dict[str, Preprocess] = field(default_factory=dict)  # graph input name -> hints
    labels: list[str] = field(default_factory=list)
    props: dict[str, str] = field(default_factory=dict)


@dataclass
class Graph:
    tensors: dict[str, Tensor] = field(default_factory=dict)
    nodes: list[Node] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    metadata: Metadata = field(default_factory=Metadata)
    _counter: itertools.count = field(default_factory=itertools.count, repr=False)

    # -- building ------------------------------------------------------------------------------------------------
    def unique_name(self, base: str) -> str:
        name = base
        while name in self.tensors:
            name = f"{base}_{next(self._counter)}"
        return name

    def rename(self, old: str, new: str) -> None:
        """Give tensor `old` the name `new` everywhere, moving a tensor that holds `new` out of the way."""
        if new in self.tensors:
            self.rename(new, self.unique_name(new + "_"))
        t = self.tensors.pop(old)
        t.name = new
        self.tensors[new] = t
        for n in self.nodes:
            n.inputs = [new if i == old else i for i in n.inputs]
            n.outputs = [new if o == old else o for o in n.outputs]
        self.inputs = [new if i == old else i for i in self.inputs]
        self.outputs = [new if o == old else o for o in self.outputs]

    def add_input(self, name: str, shape: tuple[int, ...], dtype: Any = np.float32,
                  quant: QuantParams | None = None) -> str:
        shape = tuple(int(d) for d in shape)
        if any(not 0 <= d <= INT32_MAX for d in shape) or math.prod(shape) > MAX_ELEMENTS:
            raise ConversionError(f"input {name!r}: shape {list(shape)} is not storable (dims 0..2^31-1, at most "
                                  f"{MAX_ELEMENTS:,} elements)")
        self.tensors[name] = Tensor(name, shape, np.dtype(dtype), quant=quant)
        self.inputs.append(name)
        return name

    def add_const(self, name: str, value: Any, dtype: Any = None, quant: QuantParams | None = None) -> str:
        arr = np.asarray(value, dtype=dtype)
        arr = np.ascontiguousarray(arr) if arr.ndim else arr.copy()  # ascontiguousarray turns 0-d into 1-d
        name = self.unique_name(name)
        qrules.check_tensor(f"constant {name!r}", tuple(arr.shape), arr.dtype, quant)
        self.tensors[name] = Tensor(name, tuple(arr.shape), arr.dtype, arr, quant)
        return name

    def add_node(self, op: str, inputs: list[str], attrs: dict[str, Any] | None = None, name: str = "",
                 outputs: list[str] | None = None, quant: list[QuantParams | None] | None = None) -> list[str]:
        """Append a node, fill defaults for missing attributes and infer its output shapes and dtypes.
        quant: the quantization parameters of each output (quantized ops); checked with python_ref/qrules.py."""
        opdef = OPS[op]
        full = opdef.defaults()
        unknown = set(attrs or {}) - set(full)
        if unknown:
            raise ValueError(f"{op}: unknown attributes {sorted(unknown)}")
        full.update(attrs or {})
        for a in opdef.attrs:  # the format stores ints as int32: a larger value would not survive the writer
            if a.kind in ("int", "ints") and full[a.name] is not None:
                vals = full[a.name] if a.kind == "ints" else (full[a.name],)
                if any(not INT32_MIN <= int(v) <= INT32_MAX for v in vals):
                    raise ValueError(f"{op}: attribute {a.name} = {full[a.name]} is out of the int32 range")
        ins = [self.tensors[i] if i else None for i in inputs]
        out_specs = shapes.infer(op, [(t.shape, t.dtype) if t else None for t in ins], full)
        quant = list(quant or [None] * len(out_specs))
        try:
            qrules.check_op(op, [(t.shape, t.dtype, t.quant) if t else None for t in ins],
                            [(tuple(s), np.dtype(d), q) for (s, d), q in zip(out_specs, quant, strict=True)], full,
                            [t.data if t else None for t in ins])
        except ValueError as e:
            raise ValueError(f"{op} {name!r}: {e}") from None
        names = outputs or [self.unique_name(f"{name or op.lower()}:{k}") for k in range(len(out_specs))]
        for shape, _ in out_specs:  # (element counts are the readers' business: hostile test models need them)
            if any(int(d) > INT32_MAX for d in shape):
                raise ValueError(f"{op}: the output shape {list(shape)} has a dimension beyond int32")
        for n, (shape, dtype), q in zip(names, out_specs, quant, strict=True):
            self.tensors[n] = Tensor(n, tuple(int(d) for d in shape), np.dtype(dtype), quant=q)
        self.nodes.append(Node(op, list(inputs), list(names), full, name or names[0]))
        return names

    def quant_of(self, node: Node) -> tuple[list[QuantParams | None], list[QuantParams | None]]:
        """The quantization parameters of a node's inputs and outputs, as python_ref.dispatch.run takes them."""
        return ([self.tensors[i].quant if i else None for i in node.inputs],
                [self.tensors[o].quant for o in node.outputs])

    # -- queries -------------------------------------------------------------------------------------------------
    def producers(self) -> dict[str, Node]:
        return {o: n for n in self.nodes for o in n.outputs}

    def consumers(self) -> dict[str, list[Node]]:
        out: dict[str, list[Node]] = {}
        for n in self.nodes:
            for i in n.inputs:
                if i:
                    out.setdefault(i, []).append(n)
        return out

    def const(self, name: str) -> np.ndarray | None:
        t = self.tensors.get(name) if name else None
        return None if t is None else t.data

    def prune(self) -> None:
        """Drop nodes whose outputs nobody uses and tensors no node or graph port refers to."""
        live = set(self.outputs)
        kept: list[Node] = []
        for n in reversed(self.nodes):
            if any(o in live for o in n.outputs):
                kept.append(n)
                live.update(i for i in n.inputs if i)
                live.update(n.outputs)  # a kept op writes all its outputs, used or not
        self.nodes = kept[::-1]
        live.update(self.inputs)
        self.tensors = {k: v for k, v in self.tensors.items() if k in live}

    def evaluate(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Every tensor's value for these inputs, with the reference ops: for tests and for debugging a conversion
        before it is written. Each result's shape is checked against the graph's."""
        from python_ref import dispatch

        values = {name: t.data for name, t in self.tensors.items() if t.data is not None}
        values.update(feeds)
        for n in self.nodes:
            results = dispatch.run(n.op, [values[i] if i else None for i in n.inputs], n.attrs, self.quant_of(n))
            for name, r in zip(n.outputs, results, strict=True):
                if r.shape != self.tensors[name].shape:
                    raise AssertionError(f"{n.name} ({n.op}): {name} is {r.shape}, the graph says "
                                         f"{self.tensors[name].shape}")
                values[name] = r
        return values

    def validate(self) -> None:
        """Check that the graph is well formed: topological order, known ops, consistent references."""
        known = set(self.inputs) | {k for k, t in self.tensors.items() if t.is_const}
        for n in self.nodes:
            if n.op not in OPS:
                raise ValueError(f"node {n.name!r}: unknown op {n.op}")
            for i in n.inputs:
                if i and i not in known:
                    raise ValueError(f"node {n.name!r} ({n.op}) reads {i!r} before it is produced")
            known.update(n.outputs)
        for o in self.outputs:
            if o not in known:
                raise ValueError(f"graph output {o!r} is never produced")
