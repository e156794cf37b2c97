"""Serialize a planned Graph to .wrt bytes with the official FlatBuffers runtime (object API)."""

from __future__ import annotations

import hashlib
from collections.abc import Collection
from typing import Any

import flatbuffers
import numpy as np

from python_ref import opdefs, sparse
from python_ref._fb import wrt_generated as fb
from python_ref.wrt_file import DIGEST_PREFIX, DIGEST_PROP, DTYPE_CODES, FORMAT_VERSION, IDENTIFIER, MAX_DIM, camel
from wasmrt.compile.ir import Graph
from wasmrt.compile.planner import MemoryPlan
from wasmrt.errors import ConversionError

DATA_ALIGNMENT = 64  # constant data starts on a cache line, so any SIMD load of packed weights is aligned
WEIGHT_MODES = ("auto", "fp16", "fp32")
MIN_FP16_ELEMENTS = 16  # tiny constants are not worth a conversion at load


def stored_constant(data: np.ndarray, weights: str) -> np.ndarray:
    """How a float32 constant goes into the file. Readers widen FLOAT16 constants back to float32 at load.

    auto: as fp16 when every value survives the round trip exactly (lossless: MediaPipe ships fp16 weights,
          which the TFLite importer dequantizes), else fp32. Halves such models' download.
    fp16: as fp16 unless a value would overflow it (lossy: about 3 significant digits).
    fp32: always fp32.
    """
    if weights not in WEIGHT_MODES:
        raise ValueError(f"weights must be one of {WEIGHT_MODES}, got {weights!r}")
    if data.dtype != np.float32 or data.size < MIN_FP16_ELEMENTS or weights == "fp32":
        return data
    with np.errstate(over="ignore"):
        half = data.astype(np.float16)
    if not np.isfinite(half[np.isfinite(data)]).all():
        return data
    if weights == "fp16" or np.array_equal(half.astype(np.float32), data, equal_nan=True):
        return half
    return data


class _AlignedBufferT(fb.BufferT):
    """A Buffer whose data vector starts DATA_ALIGNMENT-aligned (Python's flatc output ignores force_align)."""

    def __init__(self, data: bytes) -> None:
        super().__init__()
        self.raw = data

    def Pack(self, builder: flatbuffers.Builder) -> int:
        n = len(self.raw)
        builder.StartVector(1, n, DATA_ALIGNMENT)
        builder.head -= n
        builder.Bytes[builder.head: builder.head + n] = self.raw
        vec = builder.EndVector()
        fb.BufferStart(builder)
        fb.BufferAddData(builder, vec)
        return fb.BufferEnd(builder)


def _options(op: str, attrs: dict[str, Any]) -> tuple[int, Any]:
    d = opdefs.OPS[op]
    if d.options is None:
        return fb.Options.NONE, None
    obj = getattr(fb, d.options + "T")()
    for a in d.attrs:
        v = attrs[a.name]
        if a.kind == "ints":
            v = [int(x) for x in v]
        elif a.kind == "floats":
            v = [float(x) for x in v]
        elif a.kind in opdefs.ENUMS or a.kind == "int":
            v = int(v)
        elif a.kind == "float":
            v = float(v)
        else:
            v = bool(v)
        setattr(obj, camel(a.name), v)
    return getattr(fb.Options, d.options), obj


def _sparse_tensor(ft: fb.TensorT, data: np.ndarray, weights: str) -> np.ndarray:
    """Set ft.sparsity from a float or int8 constant; returns the stored blocks' values (float: fp16 where `weights`
    says; int8 as it is)."""
    arr = np.asarray(data)
    enc = sparse.encode(arr if arr.dtype == np.int8 else arr.astype(np.float32))
    ft.sparsity = fb.BlockSparsityT()
    ft.sparsity.rowStarts = [int(v) for v in enc.row_starts]
    ft.sparsity.columns = [int(v) for v in enc.columns]
    return stored_constant(enc.values, weights)


def write_wrt(graph: Graph, plan: MemoryPlan, weights: str = "auto", sparse_tensors: Collection[str] = ()) -> bytes:
    """The planned graph as .wrt bytes. sparse_tensors: constants to store block-sparse (wasmrt.compile.sparsity picks
    them: weights of CONV_2D / FULLY_CONNECTED whose 1x4 blocks are mostly zero)."""
    index = {name: i for i, name in enumerate(graph.tensors)}
    model = fb.ModelT()
    model.version = FORMAT_VERSION
    model.buffers = [_AlignedBufferT(b"")]
    model.tensors = []
    for name, t in graph.tensors.items():
        ft = fb.TensorT()
        ft.name = name
        ft.shape = [int(d) for d in t.shape]
        if not all(0 <= d <= MAX_DIM for d in ft.shape):  # an importer's shape rule let a hostile size through
            raise ConversionError(f"tensor {name!r}: shape {ft.shape} has a dimension outside 0..{MAX_DIM:,}, "
                                  "which the .wrt format cannot hold")
        if t.data is not None and name in sparse_tensors:
            data = _sparse_tensor(ft, t.data, weights)
        else:
            data = None if t.data is None else stored_constant(np.asarray(t.data, t.dtype), weights)
        dtype = np.dtype(t.dtype if data is None else data.dtype).newbyteorder("=")
        if dtype not in DTYPE_CODES:
            raise ConversionError(f"tensor {name!r}: dtype {dtype} has no .wrt encoding")
        ft.dtype = DTYPE_CODES[dtype]
        if t.quant is not None:
            ft.quant = fb.QuantParamsT()
            ft.quant.scale = [float(v) for v in t.quant.scale]
            if np.any(t.quant.zero_point != 0):  # absent = all zero (symmetric weights: saves 8 bytes a channel)
                ft.quant.zeroPoint = [int(v) for v in t.quant.zero_point]
            ft.quant.axis = int(t.quant.axis)
        if data is not None:
            ft.buffer = len(model.buffers)
            model.buffers.append(_AlignedBufferT(np.ascontiguousarray(data, dtype.newbyteorder("<")).tobytes()))
        else:
            ft.arenaOffset = plan.offsets[name]
        if t.bounds is not None:
            ft.shapeMin, ft.shapeMax = [int(lo) for lo, _ in t.bounds], [int(hi) for _, hi in t.bounds]
        model.tensors.append(ft)
    model.operators = []
    for n in graph.nodes:
        o = fb.OperatorT()
        o.type = opdefs.OPS[n.op].code
        o.inputs = [index[i] if i else -1 for i in n.inputs]
        o.outputs = [index[i] for i in n.outputs]
        o.optionsType, o.options = _options(n.op, n.attrs)
        o.name = n.name
        model.operators.append(o)
    model.inputs = [index[i] for i in graph.inputs]
    model.outputs = [index[i] for i in graph.outputs]
    model.plan = fb.MemoryPlanT()
    model.plan.arenaSize, model.plan.alignment, model.plan.lowerBound = plan.arena_size, plan.alignment, \
        plan.lower_bound
    model.metadata = _metadata(graph)
    placeholder = DIGEST_PREFIX + "0" * 64
    kv = fb.KeyValueT()
    kv.key, kv.value = DIGEST_PROP, placeholder
    model.metadata.props = [p for p in model.metadata.props if p.key != DIGEST_PROP] + [kv]
    builder = flatbuffers.Builder(1 << 20)
    builder.Finish(model.Pack(builder), file_identifier=IDENTIFIER)
    return _with_digest(bytearray(builder.Output()), placeholder.encode())


def _with_digest(out: bytearray, placeholder: bytes) -> bytes:
    """The digest written over its placeholder (same length: no offset moves). Where the placeholder's bytes occur
    more than once (a label or constant holding them), the file keeps the zeros: hosts then hash it at load."""
    at = out.find(placeholder)
    if at >= 0 and out.find(placeholder, at + 1) < 0:
        start = at + len(DIGEST_PREFIX)
        out[start:at + len(placeholder)] = hashlib.sha256(out).hexdigest().encode()
    return bytes(out)


def _metadata(graph: Graph) -> fb.MetadataT:
    md = graph.metadata
    out = fb.MetadataT()
    out.source, out.producer = md.source, md.producer
    out.labels = list(md.labels)
    out.preprocess = []
    for name, p in md.preprocess.items():
        if name not in graph.inputs:
            raise ConversionError(f"preprocessing hints for {name!r}, which is not a graph input {graph.inputs}")
        fp = fb.PreprocessT()
        fp.input = graph.inputs.index(name)
        try:  # hints read from a source file's metadata: any JSON may stand in them
            fp.layout, fp.color, fp.resize = str(p.layout), str(p.color), str(p.resize)
            fp.mean, fp.std = [float(x) for x in p.mean], [float(x) for x in p.std]
            fp.cropFraction = float(p.crop_fraction)
        except (TypeError, ValueError) as e:
            raise ConversionError(f"preprocessing hints for input {name!r} are invalid: {e}") from e
        out.preprocess.append(fp)
    out.props = []
    for k, v in md.props.items():
        kv = fb.KeyValueT()
        kv.key, kv.value = k, v
        out.props.append(kv)
    return out
