"""Decode a TFLite FlatBuffer into plain Python objects, eagerly.

The generated `tflite` readers decode lazily: a corrupt offset only fails (or silently yields garbage) at the
moment a field is read. Reading everything here, inside one try block, and checking every index and size turns
any corruption into a ModelFormatError that names the file, before the converter sees a single op.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import tflite

from wasmrt.compile.tflite.sparse import densify, read_sparsity
from wasmrt.errors import ModelFormatError

FILE_IDENTIFIER = b"TFL3"

_OPCODE_NAMES: dict[int, str] = dict(tflite.BUILTIN_OPCODE2NAME)
_TYPE_NAMES: dict[int, str] = {v: k for k, v in vars(tflite.TensorType).items() if not k.startswith("_")}
_OPTION_NAMES: dict[int, str] = {v: k for k, v in vars(tflite.BuiltinOptions).items() if not k.startswith("_")}
_NP_DTYPES: dict[str, np.dtype] = {
    name: np.dtype(dt).newbyteorder("<")
    for name, dt in {
        "FLOAT32": np.float32, "FLOAT16": np.float16, "FLOAT64": np.float64, "INT32": np.int32, "INT64": np.int64,
        "INT16": np.int16, "INT8": np.int8, "UINT8": np.uint8, "UINT16": np.uint16, "UINT32": np.uint32,
        "BOOL": np.bool_,
    }.items()
}


@dataclass
class TflTensor:
    index: int
    name: str
    shape: tuple[int, ...]
    signature: tuple[int, ...] | None  # shape with -1 for dynamic dimensions, when the file records it
    type_name: str  # TFLite TensorType name: FLOAT32, FLOAT16, INT8, ...
    data: np.ndarray | None = None  # constant contents, already in `shape`
    quant_scale: tuple[float, ...] = ()
    quant_zero_point: tuple[int, ...] = ()
    quant_axis: int = 0  # TFLite's quantized_dimension (used when there are several scales)
    is_variable: bool = False
    is_sparse: bool = False

    @property
    def dtype(self) -> np.dtype | None:
        return _NP_DTYPES.get(self.type_name)

    @property
    def quantized(self) -> bool:
        """Integer tensors carrying a scale hold quantized reals; int32/int64 index tensors carry none."""
        return bool(self.quant_scale) or self.type_name in ("INT8", "UINT8", "INT16")


@dataclass
class TflOp:
    index: int
    name: str  # builtin operator name, or "CUSTOM"
    custom_code: str
    inputs: list[int]  # -1 marks an absent optional input
    outputs: list[int]
    options: dict[str, Any] = field(default_factory=dict)  # builtin options by field name (CamelCase as generated)
    custom_options: bytes = b""


@dataclass
class TflModel:
    source: str
    version: int
    description: str
    tensors: list[TflTensor]
    ops: list[TflOp]
    inputs: list[int]
    outputs: list[int]


def read_model(data: bytes, source: str) -> TflModel:
    """Parse and validate the first subgraph of a TFLite model. Raises ModelFormatError on anything malformed."""
    if len(data) < 8:
        raise ModelFormatError(f"{source}: {len(data)} bytes is too short to be a TFLite model")
    if data[4:8] != FILE_IDENTIFIER:
        raise ModelFormatError(f"{source}: not a TFLite model: file identifier is {bytes(data[4:8])!r}, "
                               f"expected {FILE_IDENTIFIER!r}")
    try:
        return _decode(data, source)
    except ModelFormatError:
        raise
    except Exception as e:  # the generated readers raise anything from struct.error to numpy errors
        raise ModelFormatError(f"{source}: corrupt or truncated TFLite FlatBuffer ({type(e).__name__}: {e})") from e


def _decode(data: bytes, source: str) -> TflModel:
    model = tflite.Model.GetRootAs(data, 0)
    if model.SubgraphsLength() < 1:
        raise ModelFormatError(f"{source}: the model has no subgraph")
    graph = model.Subgraphs(0)
    buffers = [_buffer_bytes(model.Buffers(i), data, source) for i in range(model.BuffersLength())]
    tensors = [_read_tensor(graph.Tensors(i), i, buffers, source) for i in range(graph.TensorsLength())]
    opcodes = [_read_opcode(model.OperatorCodes(i), source) for i in range(model.OperatorCodesLength())]
    ops = [_read_op(graph.Operators(i), i, opcodes, len(tensors), source) for i in range(graph.OperatorsLength())]
    inputs = _indices(graph.InputsAsNumpy(), len(tensors), f"{source}: graph inputs", optional=False)
    outputs = _indices(graph.OutputsAsNumpy(), len(tensors), f"{source}: graph outputs", optional=False)
    return TflModel(source, int(model.Version()), _text(model.Description()), tensors, ops, inputs, outputs)


def _text(raw: bytes | None) -> str:
    return raw.decode("utf-8", errors="replace") if raw else ""


def _buffer_bytes(buf: Any, data: bytes, source: str) -> bytes:
    # Models over 2 GB keep buffers after the FlatBuffer, addressed by offset and size (offset 1 means "none").
    offset, size = int(buf.Offset()), int(buf.Size())
    if offset > 1:
        if offset + size > len(data):
            raise ModelFormatError(f"{source}: buffer at offset {offset} of {size} bytes runs past the end of the file")
        return bytes(data[offset:offset + size])
    if buf.DataIsNone():
        return b""
    return buf.DataAsNumpy().tobytes()


def _read_tensor(t: Any, index: int, buffers: list[bytes], source: str) -> TflTensor:
    name = _text(t.Name()) or f"tensor_{index}"
    shape = tuple(int(d) for d in t.ShapeAsNumpy()) if not t.ShapeIsNone() else ()
    signature = tuple(int(d) for d in t.ShapeSignatureAsNumpy()) if not t.ShapeSignatureIsNone() else None
    type_name = _TYPE_NAMES.get(int(t.Type()), f"type {t.Type()}")
    if any(d < -1 for d in shape):
        raise ModelFormatError(f"{source}: tensor {name!r} has an invalid shape {shape}")
    tensor = TflTensor(index, name, shape, signature, type_name, is_variable=bool(t.IsVariable()),
                       is_sparse=t.Sparsity() is not None)
    q = t.Quantization()
    if q is not None and not q.ScaleIsNone():
        tensor.quant_scale = tuple(float(s) for s in q.ScaleAsNumpy())
        tensor.quant_zero_point = tuple(int(z) for z in q.ZeroPointAsNumpy()) if not q.ZeroPointIsNone() else ()
        tensor.quant_axis = int(q.QuantizedDimension())
    b = int(t.Buffer())
    if not 0 <= b < max(len(buffers), 1):
        raise ModelFormatError(f"{source}: tensor {name!r} refers to buffer {b} of {len(buffers)}")
    raw = buffers[b] if buffers else b""
    if tensor.is_sparse:  # stored sparse (TACO-style SparsityParameters): expanded to its dense value (all zeros:
        # no values at all)
        if tensor.dtype is None or tensor.quantized:
            raise ModelFormatError(f"{source}: sparse tensor {name!r} has unsupported type {tensor.type_name}")
        if len(raw) % tensor.dtype.itemsize:
            raise ModelFormatError(f"{source}: sparse tensor {name!r}: {len(raw)} bytes is not a whole number of "
                                   f"{tensor.type_name} values")
        values = np.frombuffer(raw, tensor.dtype).astype(tensor.dtype.newbyteorder("="))
        where = f"{source}: sparse tensor {name!r}"
        tensor.data = densify(read_sparsity(t.Sparsity(), where), shape, values, where)
    elif raw:
        tensor.data = _const_array(raw, tensor, source)
    return tensor


def _const_array(raw: bytes, tensor: TflTensor, source: str) -> np.ndarray:
    dtype = tensor.dtype
    if dtype is None:
        raise ModelFormatError(f"{source}: constant tensor {tensor.name!r} has unsupported type {tensor.type_name}")
    count = int(np.prod(tensor.shape, dtype=np.int64))
    if count * dtype.itemsize != len(raw) or count < 0:
        raise ModelFormatError(f"{source}: constant tensor {tensor.name!r} of shape {tensor.shape} and type "
                               f"{tensor.type_name} needs {count * dtype.itemsize} bytes, its buffer has {len(raw)}")
    return np.frombuffer(raw, dtype=dtype).astype(dtype.newbyteorder("="), copy=True).reshape(tensor.shape)


def _read_opcode(oc: Any, source: str) -> tuple[str, str]:
    # Files written before schema 3a set only deprecated_builtin_code (< 127) and leave builtin_code at 0.
    code = max(int(oc.BuiltinCode()), int(oc.DeprecatedBuiltinCode()))
    name = _OPCODE_NAMES.get(code, f"BUILTIN_{code}")
    return name, _text(oc.CustomCode())


def _read_op(op: Any, index: int, opcodes: list[tuple[str, str]], n_tensors: int, source: str) -> TflOp:
    k = int(op.OpcodeIndex())
    if not 0 <= k < len(opcodes):
        raise ModelFormatError(f"{source}: operator {index} uses opcode {k}, the model declares {len(opcodes)}")
    name, custom = opcodes[k]
    where = f"{source}: operator {index} ({name})"
    result = TflOp(index, name, custom,
                   _indices(op.InputsAsNumpy(), n_tensors, f"{where} inputs", optional=True),
                   _indices(op.OutputsAsNumpy(), n_tensors, f"{where} outputs", optional=False))
    result.options = _read_options(op)
    if not op.CustomOptionsIsNone():
        result.custom_options = op.CustomOptionsAsNumpy().tobytes()
    return result


def _indices(raw: Any, n: int, where: str, optional: bool) -> list[int]:
    values = [int(i) for i in raw] if isinstance(raw, np.ndarray) else []
    low = -1 if optional else 0
    bad = [i for i in values if not low <= i < n]
    if bad:
        raise ModelFormatError(f"{where}: tensor index {bad[0]} out of range (the subgraph has {n} tensors)")
    return values


_SKIP_SUFFIXES = ("AsNumpy", "IsNone", "Length", "BufferHasIdentifier")


def _read_options(op: Any) -> dict[str, Any]:
    """Every field of the op's builtin options table, by its generated accessor name (vectors as lists)."""
    kind = _OPTION_NAMES.get(int(op.BuiltinOptionsType()), "NONE")
    table = op.BuiltinOptions()
    if kind == "NONE" or table is None:
        return {}
    cls = getattr(tflite, kind)
    obj = cls()
    obj.Init(table.Bytes, table.Pos)
    out: dict[str, Any] = {}
    for attr in dir(cls):
        if attr.startswith(("_", "GetRootAs", "Init")) or attr.endswith(_SKIP_SUFFIXES):
            continue
        if hasattr(cls, attr + "AsNumpy"):  # a vector field: the plain accessor takes an index
            vec = getattr(obj, attr + "AsNumpy")()
            out[attr] = [v.item() for v in vec] if isinstance(vec, np.ndarray) else []
        elif getattr(cls, attr).__code__.co_argcount == 1:  # skip nested tables that need an argument
            out[attr] = getattr(obj, attr)()
    return out
