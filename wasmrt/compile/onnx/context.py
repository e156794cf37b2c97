"""Per-import state of the ONNX importer: what each ONNX tensor currently is, and in which layout.

Every ONNX tensor name maps to a `Value`: either a numpy constant (always in ONNX's own layout) or an IR tensor.
An IR tensor is stored either in ONNX's layout or channels-last: for an ONNX tensor of rank r >= 3 viewed as
[N, C, D1, ..., Dk], channels-last stores [N, D1, ..., Dk, C] (NHWC for rank 4). `Context.ir()` returns the IR
tensor in the layout a converter asks for, inserting (and caching) one TRANSPOSE when the stored layout differs.
See onnx_import.py for the overall layout policy.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import helper

from python_ref.quant import QuantParams
from python_ref.wrt_file import MAX_DIM
from wasmrt.compile.ir import Graph
from wasmrt.errors import ConversionError, UnsupportedOpError

MAX_ELEMENTS = 1 << 31  # elements of one tensor, the .wrt format's limit
MAX_CONST_ELEMENTS = 1 << 26  # elements of one constant the importer builds itself (256 MiB of float32)
MAX_CONCAT = 4096  # inputs of one CONCATENATION (the C engine's limit on an op's inputs)


def cl_perm(rank: int) -> tuple[int, ...]:
    """Transpose perm taking an ONNX-layout tensor to channels-last: IR axis i holds ONNX axis perm[i]."""
    return (0, *range(2, rank), 1)


def cl_inverse(rank: int) -> tuple[int, ...]:
    """Transpose perm taking channels-last back to ONNX layout; entry a is the IR axis holding ONNX axis a."""
    return (0, rank - 1, *range(1, rank - 1))


def ir_axis(axis: int, rank: int, channels_last: bool) -> int:
    """Where ONNX axis `axis` (any sign) lives in the IR tensor."""
    axis = axis % rank if rank else 0
    return cl_inverse(rank)[axis] if channels_last else axis


@dataclass
class Value:
    shape: tuple[int, ...]  # in ONNX's view, whatever the stored layout
    const: np.ndarray | None = None
    ir: str = ""  # IR tensor name when not constant
    channels_last: bool = False

    @property
    def is_const(self) -> bool:
        return self.const is not None

    @property
    def rank(self) -> int:
        return len(self.shape)


class Context:
    def __init__(self, graph: Graph, source: str, opset: int,
                 convert_node: Callable[[Context, onnx.NodeProto], None]) -> None:
        self.graph, self.source, self.opset = graph, source, opset
        # the importer's node conversion, for rules that expand one node into several (onnx/quant.py)
        self.convert_node = convert_node
        self.values: dict[str, Value] = {}
        self._layout_cache: dict[tuple[str, bool], str] = {}
        self._const_cache: dict[tuple[bytes, tuple[int, ...], str], str] = {}
        # constants that are a DequantizeLinear of integers: their parameters (onnx_quant.py)
        self.qsources: dict[str, QuantParams] = {}
        self.dynamic: set[str] = set()  # DynamicQuantizeLinear outputs: float32 tensors holding the integers

    # -- errors ----------------------------------------------------------------------------------------------------
    def unsupported(self, node: onnx.NodeProto, detail: str) -> UnsupportedOpError:
        return UnsupportedOpError(node.op_type, node_name(node), self.source, detail)

    # -- values ----------------------------------------------------------------------------------------------------
    def value(self, name: str) -> Value:
        return self.values[name]

    def has(self, node: onnx.NodeProto, i: int) -> bool:
        return len(node.input) > i and node.input[i] != ""

    def is_const(self, name: str) -> bool:
        return self.values[name].is_const

    def shape(self, name: str) -> tuple[int, ...]:
        return self.values[name].shape

    def const(self, node: onnx.NodeProto, i: int, what: str = "") -> np.ndarray:
        """Input i of node as a numpy array; it must be constant at import time."""
        v = self.values[node.input[i]]
        if v.const is None:
            what = what or f"input {i} ({node.input[i]!r})"
            raise self.unsupported(node, f"{what} must be a constant (an initializer or computable at import time)")
        return v.const

    def opt_const(self, node: onnx.NodeProto, i: int, what: str = "") -> np.ndarray | None:
        return self.const(node, i, what) if self.has(node, i) else None

    def check_size(self, node: onnx.NodeProto, shape: tuple[int, ...], what: str, limit: int = MAX_ELEMENTS) -> None:
        """Refuse a tensor the .wrt format cannot hold (over MAX_ELEMENTS, or a dimension over MAX_DIM) or a
        constant that would take gigabytes to build (MAX_CONST_ELEMENTS), naming the node."""
        count = math.prod(shape)
        if count > limit or not all(0 <= d <= MAX_DIM for d in shape):
            raise ConversionError(f"{self.source}: node {node_name(node)!r} ({node.op_type}): {what} would have shape "
                                  f"{list(shape)} ({count:,} elements, the limit is {limit:,}; "
                                  f"each dimension 0..{MAX_DIM:,})")

    def set_const(self, name: str, arr: Any) -> None:
        arr = np.asarray(arr)
        if arr.dtype == np.float16:  # float16 constants hold their exact values as float32 (computed in float32)
            arr = arr.astype(np.float32)
        self.values[name] = Value(tuple(arr.shape), const=arr)

    def alias(self, dst: str, src: str) -> None:
        self.values[dst] = self.values[src]

    # -- IR tensors in a requested layout --------------------------------------------------------------------------
    def ir(self, name: str, channels_last: bool = False, dtype: Any = np.float32) -> str:
        """IR tensor holding ONNX tensor `name` in ONNX layout or channels-last."""
        v = self.values[name]
        if v.is_const:
            arr = v.const.astype(dtype) if dtype is not None else v.const
            return self.const_ir(arr, name, channels_last)
        if channels_last and v.rank < 3:
            raise ConversionError(f"{self.source}: tensor {name!r} of rank {v.rank} has no channels-last layout")
        if v.channels_last == channels_last:
            return v.ir
        key = (v.ir, channels_last)
        if key not in self._layout_cache:
            perm = cl_perm(v.rank) if channels_last else cl_inverse(v.rank)
            suffix = "/to_nhwc" if channels_last else "/to_nchw"
            self._layout_cache[key] = self.emit("TRANSPOSE", [v.ir], {"perm": perm}, v.ir + suffix)
        return self._layout_cache[key]

    def const_ir(self, arr: np.ndarray, base: str, channels_last: bool = False, rank: int = 0) -> str:
        """Add a constant; channels_last broadcasts it to `rank` (default: its own) and permutes it like data."""
        arr = np.asarray(arr)
        if channels_last:
            rank = max(rank, arr.ndim)
            arr = arr.reshape((1,) * (rank - arr.ndim) + arr.shape).transpose(cl_perm(rank))
        if arr.size > 64:  # weights: rarely shared, and hashing them costs time
            return self.graph.add_const(base, arr)
        key = (arr.tobytes(), arr.shape, str(arr.dtype))  # small constants (scalars, shapes) are shared by content
        if key not in self._const_cache:
            self._const_cache[key] = self.graph.add_const(base, arr)
        return self._const_cache[key]

    def mark_quantized(self, ir_name: str, onnx_name: str, channel_axis: int) -> str:
        """Note on IR constant ir_name (weights [Cout, ...] or a bias [Cout]) that it holds the dequantized integers
        of ONNX tensor onnx_name, when its scales are per tensor or along the output channels (channel_axis in
        ONNX's layout of that tensor): the QDQ quantization then keeps the model's own integers."""
        q = self.qsources.get(onnx_name)
        if q is not None and (q.per_tensor or q.axis == channel_axis):
            self.graph.tensors[ir_name].source_q = q if q.per_tensor else QuantParams(q.scale, q.zero_point, 0)
        return ir_name

    # -- emitting nodes --------------------------------------------------------------------------------------------
    def emit(self, op: str, inputs: list[str], attrs: dict[str, Any] | None, out_name: str, node_label: str = ""
             ) -> str:
        """Append one IR node with a single output named after out_name; return the output's IR name."""
        out = self.graph.unique_name(out_name)
        self.graph.add_node(op, inputs, attrs, name=node_label or out, outputs=[out])
        return out

    def emit_value(self, op: str, inputs: list[str], attrs: dict[str, Any] | None, node: onnx.NodeProto,
                   out_index: int = 0, channels_last: bool = False) -> str:
        """Emit the IR node computing ONNX output out_index of node and record it as that tensor's value."""
        onnx_name = node.output[out_index]
        ir_name = self.emit(op, inputs, attrs, onnx_name, node_name(node))
        self.bind(onnx_name, ir_name, channels_last)
        return ir_name

    def emit_quantized(self, op: str, inputs: list[str], node: onnx.NodeProto, quant: QuantParams,
                       channels_last: bool) -> str:
        """Emit a QUANTIZE (or another op with an int8 output) computing node's output 0, bound to it."""
        out = self.graph.unique_name(node.output[0])
        self.graph.add_node(op, inputs, None, name=node_name(node), outputs=[out], quant=[quant])
        self.bind(node.output[0], out, channels_last)
        return out

    def bind(self, onnx_name: str, ir_name: str, channels_last: bool) -> None:
        shape = self.graph.tensors[ir_name].shape
        if channels_last:
            shape = tuple(shape[a] for a in cl_inverse(len(shape)))
        self.values[onnx_name] = Value(tuple(shape), ir=ir_name, channels_last=channels_last)


def node_name(node: onnx.NodeProto) -> str:
    return node.name or f"{node.op_type}->{node.output[0] if node.output else '?'}"


def attributes(node: onnx.NodeProto) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for a in node.attribute:
        val = helper.get_attribute_value(a)
        if isinstance(val, bytes):
            val = val.decode("utf-8", "replace")
        out[a.name] = val
    return out
