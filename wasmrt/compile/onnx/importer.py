"""ONNX -> wasmrt graph IR.

    graph = import_onnx("model.onnx", input_shapes={"x": (1, 3, 224, 224)})

Scope: the default ONNX domain, opsets 11 to 21 (older and newer models import too when the ops they use kept
their semantics; attribute-vs-input changes such as Clip min/max, Pad pads, Slice, Squeeze/Unsqueeze/Reduce* axes,
Split sizes and the Resize inputs are handled per opset), and onnxruntime's com.microsoft ops its quantization tools
and optimizers write (onnx_quant.py, onnx_contrib.py). Other domains are unsupported. Control flow is flattened
(onnx/control.py): an If on a condition known at import inlines its branch, one on a run-time condition converts
both branches and selects their outputs with WHERE; a Loop needs a constant trip count; Scan is unrolled.

Static shapes. Dynamic dims of graph inputs come from `input_shapes`; a leading symbolic dim (the batch) defaults
to 1, any other unresolved dim is a ConversionError naming the input and the dim. `freeze_inputs` turns graph inputs
into constants (shape tensors, indices). Initializers and Constant nodes are constants, and every node whose inputs
are all constant is evaluated here (onnx_fold.py); since shapes are static, Shape and Size are constants too. Only
data-dependent nodes become IR nodes (onnx_ops.py). Runtime tensors are float32.

float16 models: a float16 graph input stays a float16 .wrt input read through one CAST to float32, and a float16
graph output is the CAST of its float32 value back to float16 (round to nearest even); float16 initializers and
Constants become float32 constants (the writer may store them as float16 again). Everything between computes in
float32, so a float16 model's result is its float32 counterpart's, rounded once at the output.

Layout policy. The IR runs spatial ops channels-last (NHWC), ONNX thinks NCHW. Each ONNX tensor's Value records
whether its IR tensor is stored in ONNX's layout or channels-last ([N, C, D...] stored as [N, D..., C]):
- Conv, ConvTranspose, MaxPool/AveragePool, GlobalAverage/MaxPool, Resize/Upsample and DepthToSpace read
  channels-last and produce channels-last. 1-D convs and pools run as 2-D ones over a height-1 image.
- Layout-agnostic ops keep whatever layout their input has: element-wise ops and activations (constant operands
  such as a [C,1,1] bias or a PRelu slope are broadcast and permuted to match, e.g. [1,1,1,C]), BatchNormalization
  (MUL and ADD with per-channel constants, folded into the conv by a later pass), Concat, Softmax (opset >= 13),
  Slice, Split, Pad, Reduce* with keepdims, Gather with 1-D indices: their axes are remapped.
- Layout-sensitive ops (Reshape, Flatten, Squeeze, Unsqueeze, MatMul, Gemm, Softmax before opset 13) and graph
  outputs read the ONNX layout: a TRANSPOSE back is inserted (once per tensor). Transpose composes its perm with
  the stored layout, so an exporter's own NCHW->NHWC transpose becomes free.
- Graph inputs keep the user's ONNX layout (NCHW); the first spatial op reads them through one TRANSPOSE.
A later pass cancels transpose pairs and turns transposes that only move size-1 axes into reshapes.

Metadata: graph.metadata.source is the file name, producer "onnx opset N, <producer_name>". ONNX metadata_props
with keys `wasmrt.preprocess.<input>` (JSON object of ir.Preprocess fields) and `wasmrt.labels` (JSON list) fill
metadata.preprocess and metadata.labels; any other `wasmrt.<key>` goes to metadata.props[<key>].
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from typing import Any

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import helper, numpy_helper

from python_ref.opdefs import CastTo, QuantType
from python_ref.quant import QuantParams
from wasmrt.compile.ir import Graph, Metadata, Preprocess
from wasmrt.compile.onnx import contrib as onnx_contrib
from wasmrt.compile.onnx import ops as onnx_ops
from wasmrt.compile.onnx import quant as onnx_quant
from wasmrt.compile.onnx.context import MAX_DIM, Context, Value, attributes, node_name
from wasmrt.compile.onnx.control import CONVERTERS as CONTROL_FLOW
from wasmrt.compile.onnx.fold import FOLDERS, fold
from wasmrt.compile.onnx.ops import CONSTANT_INPUTS
from wasmrt.compile.onnx.shapes import shape_slice
from wasmrt.errors import ConversionError, ModelFormatError, UnsupportedOpError, WasmrtError

__all__ = ["CONSTANT_INPUTS", "CONSTANT_ONLY_OPS", "SUPPORTED_OPS", "import_onnx"]

# ONNX ops converted for runtime (data-dependent) inputs: every node converter but control flow.
CONVERTERS = {**onnx_ops.CONVERTERS, **onnx_quant.CONVERTERS, **onnx_contrib.DEFAULT_DOMAIN}
SUPPORTED_OPS: frozenset[str] = frozenset(CONVERTERS) | frozenset(CONTROL_FLOW) | {"Constant", "Shape", "Size"}
# ONNX ops evaluated only when all their inputs are constant (others go through onnx's reference evaluator).
CONSTANT_ONLY_OPS: frozenset[str] = frozenset(FOLDERS) - SUPPORTED_OPS
MIN_OPSET = 7
RUNTIME_INPUT_DTYPES = tuple(np.dtype(d) for d in (np.float32, np.float16, np.int32, np.int64, np.bool_, np.uint8,
                                                   np.int8))


def import_onnx(path_or_model: str | os.PathLike | bytes | onnx.ModelProto,
                input_shapes: dict[str, tuple[int, ...]] | None = None,
                freeze_inputs: dict[str, np.ndarray] | None = None) -> Graph:
    """Convert an ONNX model (path, serialized bytes or ModelProto) into a static-shape wasmrt Graph."""
    model, source = _load(path_or_model)
    try:
        return _import(model, source, input_shapes, freeze_inputs)
    except (WasmrtError, MemoryError, RecursionError):
        raise
    except Exception as e:  # a model whose parts contradict each other in a way no check above names
        raise ModelFormatError(f"{source}: invalid model ({type(e).__name__}: {e})") from e


def _import(model: onnx.ModelProto, source: str, input_shapes: dict[str, tuple[int, ...]] | None,
            freeze_inputs: dict[str, np.ndarray] | None) -> Graph:
    opset = _default_opset(model, source)
    graph = Graph()
    graph.metadata.source = source
    graph.metadata.producer = f"onnx opset {opset}, {model.producer_name or 'unknown producer'}".strip()
    _read_metadata(model, graph.metadata, source)
    ctx = Context(graph, source, opset, _convert_node)
    _add_initializers(ctx, model.graph)
    _add_inputs(ctx, model.graph, dict(input_shapes or {}), dict(freeze_inputs or {}))
    for node in model.graph.node:
        _convert_node(ctx, node)
    _add_outputs(ctx, model.graph)
    graph.prune()
    graph.validate()
    return graph


# -- loading --------------------------------------------------------------------------------------------------------
def _load(src: Any) -> tuple[onnx.ModelProto, str]:
    if isinstance(src, onnx.ModelProto):
        return src, src.graph.name or "<onnx model>"
    source = "<onnx bytes>" if isinstance(src, bytes) else os.path.basename(os.fspath(src))
    try:
        model = onnx.load_from_string(src) if isinstance(src, bytes) else onnx.load(os.fspath(src))
    except FileNotFoundError:
        raise
    except (DecodeError, ValueError, RuntimeError, OSError, onnx.checker.ValidationError) as e:
        raise ModelFormatError(f"{source}: not a readable ONNX model (corrupt or truncated?): {e}") from e
    if not model.graph.output or not model.opset_import:
        raise ModelFormatError(f"{source}: not a complete ONNX model (no graph outputs or opset; truncated?)")
    return model, source


def _default_opset(model: onnx.ModelProto, source: str) -> int:
    versions = [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")]
    if not versions:
        raise ModelFormatError(f"{source}: the model imports no default-domain ONNX opset")
    if versions[0] < MIN_OPSET:
        raise ConversionError(f"{source}: ONNX opset {versions[0]} is too old (need >= {MIN_OPSET}, ideally 11-21); "
                              "upgrade it with onnx.version_converter")
    return versions[0]


def _read_metadata(model: onnx.ModelProto, meta: Metadata, source: str) -> None:
    fields = {f.name for f in dataclasses.fields(Preprocess)}
    for prop in model.metadata_props:
        if not prop.key.startswith("wasmrt."):
            continue
        key = prop.key[len("wasmrt."):]
        try:
            if key.startswith("preprocess."):
                spec = json.loads(prop.value)
                if not isinstance(spec, dict) or set(spec) - fields:
                    raise ValueError(f"expected an object with fields among {sorted(fields)}")
                spec = {k: tuple(v) if isinstance(v, list) else v for k, v in spec.items()}
                meta.preprocess[key[len("preprocess."):]] = Preprocess(**spec)
            elif key == "labels":
                labels = json.loads(prop.value)
                if not isinstance(labels, list):
                    raise ValueError("expected a JSON list")
                meta.labels = [str(s) for s in labels]
            else:
                meta.props[key] = prop.value
        except ValueError as e:  # json.JSONDecodeError is a ValueError
            raise ModelFormatError(f"{source}: metadata {prop.key!r} is invalid: {e}") from e


def _add_initializers(ctx: Context, g: onnx.GraphProto) -> None:
    for init in g.initializer:
        if not all(0 <= d <= MAX_DIM for d in init.dims):  # numpy would wrap the product of such dims
            raise ModelFormatError(f"{ctx.source}: initializer {init.name!r} has dims {list(init.dims)}: each must be "
                                   f"0..{MAX_DIM:,}")
        try:
            ctx.set_const(init.name, numpy_helper.to_array(init))
        except Exception as e:  # numpy raises several kinds for sizes that don't match the dims
            raise ModelFormatError(f"{ctx.source}: initializer {init.name!r} is unreadable: {e}") from e
    for sparse in g.sparse_initializer:
        raise UnsupportedOpError("sparse_initializer", sparse.values.name, ctx.source, "sparse initializers")


# -- graph inputs and outputs -----------------------------------------------------------------------------------------
def _add_inputs(ctx: Context, g: onnx.GraphProto, shapes: dict[str, tuple[int, ...]],
                frozen: dict[str, np.ndarray]) -> None:
    inits = {i.name for i in g.initializer}
    runtime = [i for i in g.input if i.name not in inits]
    names = [i.name for i in runtime]
    unknown = (set(shapes) | set(frozen)) - set(names)
    if unknown:
        raise ConversionError(f"{ctx.source}: unknown input(s) {sorted(unknown)}; the model's inputs are {names}")
    for inp in runtime:
        if inp.name in frozen:
            ctx.set_const(inp.name, np.asarray(frozen[inp.name]))
            continue
        elem = inp.type.tensor_type.elem_type
        if not inp.type.HasField("tensor_type"):
            raise ConversionError(f"{ctx.source}: input {inp.name!r} is not a tensor (sequence/map/optional)")
        if elem and elem not in helper.get_all_tensor_dtypes():
            raise ModelFormatError(f"{ctx.source}: input {inp.name!r} has the unknown element type {elem}")
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(elem) if elem else np.float32)
        if dtype not in RUNTIME_INPUT_DTYPES:
            raise ConversionError(f"{ctx.source}: input {inp.name!r} is {dtype}; wasmrt's graph inputs are "
                                  f"{', '.join(str(d) for d in RUNTIME_INPUT_DTYPES)} (give an input a fixed value "
                                  "with freeze_inputs)")
        shape = _input_shape(ctx.source, inp, shapes.get(inp.name))
        ctx.graph.add_input(inp.name, shape, dtype)
        ir = inp.name
        if dtype == np.float16:  # float16 at the boundary, float32 inside
            ir = ctx.emit("CAST", [inp.name], {"to": CastTo.FLOAT32}, inp.name + "/f32")
        ctx.values[inp.name] = Value(shape, ir=ir)


def _input_shape(source: str, inp: onnx.ValueInfoProto, given: tuple[int, ...] | None) -> tuple[int, ...]:
    tt = inp.type.tensor_type
    declared = list(tt.shape.dim) if tt.HasField("shape") else None
    if given is not None:
        given = tuple(int(d) for d in given)
        if declared is not None and len(declared) != len(given):
            raise ConversionError(f"{source}: input {inp.name!r} has rank {len(declared)}, "
                                  f"but input_shapes gives {given}")
        for i, d in enumerate(declared or []):
            if _fixed(d) and d.dim_value != given[i]:
                raise ConversionError(f"{source}: input {inp.name!r} dim {i} is fixed to {d.dim_value}, "
                                      f"but input_shapes gives {given[i]}")
        return given
    if declared is None:
        raise ConversionError(f"{source}: input {inp.name!r} has no declared shape; pass it in input_shapes")
    shape = []
    for i, d in enumerate(declared):
        if _fixed(d):
            shape.append(int(d.dim_value))
        elif i == 0:  # a symbolic leading dim is the batch
            shape.append(1)
        else:
            label = d.dim_param or "?"
            raise ConversionError(f"{source}: input {inp.name!r} dim {i} ({label!r}) is dynamic; "
                                  f"set it with input_shapes={{{inp.name!r}: (...)}}")
    return tuple(shape)


def _fixed(dim: onnx.TensorShapeProto.Dimension) -> bool:
    return dim.HasField("dim_value") and dim.dim_value >= 0  # some exporters write -1 for a dynamic dim


def _add_outputs(ctx: Context, g: onnx.GraphProto) -> None:
    graph = ctx.graph
    for out in g.output:
        if out.name not in ctx.values:
            raise ModelFormatError(f"{ctx.source}: graph output {out.name!r} is never produced")
        v = ctx.values[out.name]
        ir = ctx.const_ir(v.const, out.name) if v.is_const else ctx.ir(out.name)
        q = graph.tensors[ir].quant
        if q is not None and out.type.tensor_type.elem_type == onnx.TensorProto.UINT8:
            # uint8 runs as int8 inside: the model's uint8 output comes back with its own zero point
            up = QuantParams.make(q.scale, q.zero_point + 128)
            (ir,) = graph.add_node("QUANTIZE", [ir], {"dtype": QuantType.UINT8}, quant=[up],
                                   outputs=[graph.unique_name(out.name + "/uint8")])
        elif out.type.tensor_type.elem_type == onnx.TensorProto.FLOAT16 and graph.tensors[ir].dtype == np.float32:
            ir = ctx.emit("CAST", [ir], {"to": CastTo.FLOAT16}, out.name + "/f16")
        elif ir in graph.inputs or ir in graph.outputs:  # an output needs its own tensor: copy
            ir = ctx.emit("RESHAPE", [ir], {"shape": graph.tensors[ir].shape}, out.name)
        if ir != out.name:
            graph.rename(ir, out.name)
        graph.outputs.append(out.name)


# -- nodes ---------------------------------------------------------------------------------------------------------
def _convert_node(ctx: Context, node: onnx.NodeProto) -> None:
    for name in node.input:
        if name and name not in ctx.values:
            raise ModelFormatError(f"{ctx.source}: node {node_name(node)!r} reads {name!r}, which is neither an "
                                   "input, an initializer nor produced by an earlier node")
    if node.domain not in ("", "ai.onnx") and not (node.domain == onnx_quant.MS_DOMAIN
                                                   and (node.op_type in onnx_quant.MS_OPS
                                                        or node.op_type in onnx_contrib.CONVERTERS)):
        raise ctx.unsupported(node, f"custom domain {node.domain!r}")
    if node.op_type in CONTROL_FLOW:
        CONTROL_FLOW[node.op_type](ctx, _convert_node, node)
        _check_outputs(ctx, node)
        return
    if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute):
        raise ctx.unsupported(node, "sub-graphs are supported only in If, Loop and Scan")
    attrs = attributes(node)
    if node.op_type == "Constant":
        ctx.set_const(node.output[0], _constant_value(ctx, node, attrs))
    elif node.op_type in ("Shape", "Size"):
        shape = ctx.shape(node.input[0])
        value = (shape_slice(shape, attrs.get("start", 0), attrs.get("end")) if node.op_type == "Shape"
                 else np.array(math.prod(shape), np.int64))
        ctx.set_const(node.output[0], value)
    elif all(ctx.is_const(n) for n in node.input if n):
        _fold_node(ctx, node, attrs)
    elif (rule := _rule(node)) is not None:
        convert = onnx_quant.on_integers(ctx, node) or rule  # a QOperator model's uint8
        try:
            convert(ctx, node, attrs)
        except (WasmrtError, MemoryError, RecursionError):
            raise
        except Exception as e:  # e.g. shape inference rejecting the attributes, or a required one missing
            raise ConversionError(f"{ctx.source}: node {node_name(node)!r} ({node.op_type}): {_reason(e)}") from e
    else:
        hint = " (supported only when all its inputs are constant)" if node.op_type in CONSTANT_ONLY_OPS else ""
        raise ctx.unsupported(node, "no wasmrt equivalent" + hint)
    _check_outputs(ctx, node)




def _rule(node: onnx.NodeProto) -> onnx_ops.OpConverter | None:
    """The converter of a node: com.microsoft ones from their own table (onnx_contrib.py), others by op type."""
    if node.domain == onnx_contrib.MS_DOMAIN and node.op_type in onnx_contrib.CONVERTERS:
        return onnx_contrib.CONVERTERS[node.op_type]
    return CONVERTERS.get(node.op_type)


def _check_outputs(ctx: Context, node: onnx.NodeProto) -> None:
    for name in node.output:
        if name and name not in ctx.values:
            raise ConversionError(f"{ctx.source}: node {node_name(node)!r} ({node.op_type}) left output "
                                  f"{name!r} unset")


def _reason(e: Exception) -> str:
    """What a converter's exception means for the user: attributes and inputs a hostile file left out."""
    if isinstance(e, KeyError):
        return "a required input is omitted" if e.args == ("",) else f"missing attribute or input {e.args[0]!r}"
    if isinstance(e, IndexError):
        return f"too few inputs or attribute values ({e})"
    return str(e) if isinstance(e, ValueError | NotImplementedError) else f"{type(e).__name__}: {e}"


def _fold_node(ctx: Context, node: onnx.NodeProto, attrs: dict[str, Any]) -> None:
    if onnx_quant.fold_dequantize(ctx, node, attrs):
        return
    inputs = [ctx.value(n).const if n else None for n in node.input]
    try:
        outs = fold(node, inputs, attrs, ctx.opset)
    except Exception as e:  # whatever the evaluator raises, the user needs the node and the reason
        raise ctx.unsupported(node, f"cannot evaluate it on constant inputs: {e}") from e
    for name, arr in zip(node.output, outs, strict=False):
        if name:
            ctx.set_const(name, arr)


def _constant_value(ctx: Context, node: onnx.NodeProto, attrs: dict[str, Any]) -> np.ndarray:
    if "value" in attrs:
        return numpy_helper.to_array(attrs["value"])
    for key, dtype in (("value_float", np.float32), ("value_floats", np.float32), ("value_int", np.int64),
                       ("value_ints", np.int64)):
        if key in attrs:
            return np.array(attrs[key], dtype)
    if "value_string" in attrs or "value_strings" in attrs:
        return np.array(attrs.get("value_string", attrs.get("value_strings")), dtype=object)
    raise ctx.unsupported(node, f"Constant with {sorted(attrs)}")
