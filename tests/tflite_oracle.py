"""LiteRT as the oracle for the TFLite importer: model rewriting, small model building, running.

LiteRT (ai-edge-litert) cannot run MediaPipe's custom op Convolution2DTransposeBias: the op is registered only by
MediaPipe's own resolver. `litert_compatible` therefore rewrites each such op into LiteRT's builtin TRANSPOSE_CONV
with the same weights, padding, strides and bias (4th input) and an explicit output_shape constant. The custom op is
defined as exactly that computation (a transposed convolution plus a per-channel bias), so running LiteRT on the
rewritten model checks everything else in the model and the transposed convolution itself, with an implementation
independent of ours. The one assumption shared with the importer is the meaning of the raw option struct
(int32 padding as the C enum TfLitePadding, 1 = SAME / 2 = VALID, then stride_width, stride_height); the output
shape recorded in the model is used as output_shape, so a misread stride would make LiteRT fail, not agree.
"""

from __future__ import annotations

import struct
import warnings
from typing import Any

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as fb
from ai_edge_litert.interpreter import Interpreter

MEDIAPIPE_TRANSPOSE_CONV = "Convolution2DTransposeBias"
_NP_TYPES = {np.dtype(np.float32): fb.TensorType.FLOAT32, np.dtype(np.int32): fb.TensorType.INT32,
             np.dtype(np.float16): fb.TensorType.FLOAT16, np.dtype(np.int64): fb.TensorType.INT64,
             np.dtype(np.int8): fb.TensorType.INT8, np.dtype(np.uint8): fb.TensorType.UINT8,
             np.dtype(np.int16): fb.TensorType.INT16}


def _pack(model: fb.ModelT) -> bytes:
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def _opcode_index(model: fb.ModelT, builtin: int, custom: str | None = None, version: int = 1) -> int:
    """Index of the operator code, added when missing (deprecated_builtin_code caps at 127, PLACEHOLDER)."""
    for k, oc in enumerate(model.operatorCodes or []):
        code = max(oc.builtinCode, oc.deprecatedBuiltinCode)
        if code == builtin and (custom is None or (oc.customCode or b"").decode() == custom):
            return k
    oc = fb.OperatorCodeT()
    oc.builtinCode, oc.deprecatedBuiltinCode = builtin, min(builtin, 127)
    oc.customCode, oc.version = custom, version
    model.operatorCodes = [*(model.operatorCodes or []), oc]
    return len(model.operatorCodes) - 1


def _add_tensor(model: fb.ModelT, graph: fb.SubGraphT, name: str, shape: tuple[int, ...], dtype: np.dtype,
                data: np.ndarray | None = None) -> int:
    buf = fb.BufferT()
    if data is not None:
        buf.data = np.frombuffer(np.ascontiguousarray(data, dtype=dtype).tobytes(), np.uint8)
    model.buffers.append(buf)
    t = fb.TensorT()
    t.name, t.shape, t.type, t.buffer = name, list(shape), _NP_TYPES[np.dtype(dtype)], len(model.buffers) - 1
    graph.tensors.append(t)
    return len(graph.tensors) - 1


def litert_compatible(data: bytes) -> bytes:
    """The model with every Convolution2DTransposeBias replaced by a builtin TRANSPOSE_CONV (see module doc)."""
    model = fb.ModelT.InitFromPackedBuf(bytearray(data), 0)
    for graph in model.subgraphs:
        for op in graph.operators:
            oc = model.operatorCodes[op.opcodeIndex]
            if (oc.customCode or b"").decode() != MEDIAPIPE_TRANSPOSE_CONV:
                continue
            padding, stride_w, stride_h = struct.unpack_from("<iii", bytes(bytearray(op.customOptions)))
            x, w, b = op.inputs
            out = graph.tensors[op.outputs[0]]
            shape_t = _add_tensor(model, graph, f"{(out.name or b'').decode()}/output_shape", (4,),
                                  np.dtype(np.int32), np.array(out.shape, np.int32))
            options = fb.TransposeConvOptionsT()
            options.padding = {1: fb.Padding.SAME, 2: fb.Padding.VALID}[padding]
            options.strideW, options.strideH = stride_w, stride_h
            # version 3 is the first TRANSPOSE_CONV that takes a bias input
            op.opcodeIndex = _opcode_index(model, fb.BuiltinOperator.TRANSPOSE_CONV, version=3)
            op.inputs = [shape_t, w, x, b]
            op.builtinOptionsType, op.builtinOptions = fb.BuiltinOptions.TransposeConvOptions, options
            op.customOptions, op.customOptionsFormat = None, 0
    return _pack(model)


def run_litert(data: bytes, feeds: list[np.ndarray], extra: tuple[str, ...] = ()) -> list[np.ndarray]:
    """Run a model on LiteRT with one thread; feeds and results follow the model's input/output order.

    extra names intermediate tensors to return after the outputs (kept alive by preserve_all_tensors).
    """
    with warnings.catch_warnings():  # preserve_all_tensors warns that it is meant for debugging: it is, here
        warnings.simplefilter("ignore", UserWarning)
        interp = Interpreter(model_content=data, num_threads=1, experimental_preserve_all_tensors=bool(extra))
    interp.allocate_tensors()
    for detail, x in zip(interp.get_input_details(), feeds, strict=True):
        interp.set_tensor(detail["index"], x)
    interp.invoke()
    by_name = {d["name"]: d["index"] for d in interp.get_tensor_details()}
    indices = [d["index"] for d in interp.get_output_details()] + [by_name[n] for n in extra]
    return [interp.get_tensor(k).copy() for k in indices]


class ModelBuilder:
    """A one-subgraph TFLite model written through the object API, for small op-level tests."""

    def __init__(self) -> None:
        self.model = fb.ModelT()
        self.model.version, self.model.description = 3, "wasmrt test model"
        self.model.operatorCodes, self.model.buffers = [], [fb.BufferT()]  # buffer 0: the empty sentinel
        self.graph = fb.SubGraphT()
        self.graph.tensors, self.graph.operators, self.graph.inputs, self.graph.outputs = [], [], [], []
        self.model.subgraphs = [self.graph]

    def input(self, name: str, shape: tuple[int, ...], dtype: Any = np.float32) -> int:
        k = self.tensor(name, shape, dtype)
        self.graph.inputs.append(k)
        return k

    def const(self, name: str, value: Any, dtype: Any = None) -> int:
        arr = np.asarray(value, dtype=dtype)
        return _add_tensor(self.model, self.graph, name, arr.shape, arr.dtype, arr)

    def tensor(self, name: str, shape: tuple[int, ...], dtype: Any = np.float32) -> int:
        return _add_tensor(self.model, self.graph, name, shape, np.dtype(dtype))

    def op(self, opname: str, inputs: list[int], outputs: list[int], options: Any = None,
           custom: str | None = None, custom_options: bytes = b"") -> None:
        op = fb.OperatorT()
        op.opcodeIndex = _opcode_index(self.model, getattr(fb.BuiltinOperator, opname), custom)
        op.inputs, op.outputs = list(inputs), list(outputs)
        if options is not None:
            op.builtinOptionsType = getattr(fb.BuiltinOptions, type(options).__name__[:-1])
            op.builtinOptions = options
        if custom_options:
            op.customOptions = list(custom_options)
        self.graph.operators.append(op)

    def output(self, k: int) -> None:
        self.graph.outputs.append(k)

    def build(self) -> bytes:
        return _pack(self.model)


def options(kind: str, **fields: Any) -> Any:
    """An options object of the object API, e.g. options("Conv2DOptions", padding=0, strideW=1, strideH=1)."""
    obj = getattr(fb, kind + "T")()
    for key, value in fields.items():
        if not hasattr(obj, key):
            raise AttributeError(f"{kind} has no field {key!r}")
        setattr(obj, key, value)
    return obj
