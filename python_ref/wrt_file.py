"""Read a .wrt file into plain Python objects, verifying it completely first.

A model file is untrusted input: every index, size and offset is checked here, and any failure, including one
inside the FlatBuffers accessors on a corrupt file, becomes a ModelFormatError that names the file and the problem.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import flatbuffers
import numpy as np

from python_ref import opdefs, qrules, shapes, sparse
from python_ref._fb import wrt_generated as fb
from python_ref.errors import ModelFormatError
from python_ref.quant import QuantParams

FORMAT_VERSION = 1
IDENTIFIER = b"WRT0"
# Metadata.props key of the file's content digest, written by wasmrt's writer: "sha256:" + the SHA-256 (hex) of the
# file with this value's hex digits written as zeros. Hosts key per-file caches by it without hashing the file.
DIGEST_PROP = "digest"
DIGEST_PREFIX = "sha256:"
MAX_RANK = 8
MAX_ELEMENTS = 1 << 31
# limits on what a file unpacks to (the C reader has the same): tables may share vectors and strings, so a small
# file could otherwise unpack to gigabytes
MAX_TENSORS = MAX_OPS = 1 << 20
MAX_OP_INPUTS = 1 << 24  # all operators' inputs and outputs together
MAX_NAME_BYTES = 1 << 26  # all tensor and operator names together, counting repeats
MAX_QUANT_VALUES = 1 << 24  # all tensors' quantization scales and zero points together
MAX_OP_OUTPUTS = 4096  # outputs of one op (SPLIT)
MAX_DIM = (1 << 31) - 1

DTYPES: dict[int, np.dtype] = {
    fb.DType.FLOAT32: np.dtype("<f4"), fb.DType.FLOAT16: np.dtype("<f2"), fb.DType.INT8: np.dtype("i1"),
    fb.DType.UINT8: np.dtype("u1"), fb.DType.INT32: np.dtype("<i4"), fb.DType.INT64: np.dtype("<i8"),
    fb.DType.BOOL: np.dtype("?"),
}
DTYPE_CODES: dict[np.dtype, int] = {v.newbyteorder("="): k for k, v in DTYPES.items()}


@dataclass
class TensorInfo:
    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    data: np.ndarray | None = None  # constants only
    arena_offset: int = -1  # activations only
    quant: QuantParams | None = None
    stored_dtype: np.dtype | None = None  # constants: the dtype in the file (FLOAT16 weights widen to float32)
    bounds: tuple[tuple[int, int], ...] | None = None  # graph inputs sized at run time: (min, max) per dimension
    sparse: sparse.BlockSparse | None = None  # block-sparse in the file (data is its dense expansion)

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


@dataclass
class OpInfo:
    op: str
    inputs: list[int]  # -1 = absent optional input
    outputs: list[int]
    attrs: dict[str, Any]
    name: str


@dataclass
class WrtModel:
    version: int
    tensors: list[TensorInfo]
    ops: list[OpInfo]
    inputs: list[int]
    outputs: list[int]
    arena_size: int
    arena_alignment: int
    lower_bound: int
    metadata: dict[str, Any] = field(default_factory=dict)


def camel(name: str) -> str:
    """FlatBuffers' Python object API names fields in camelCase."""
    head, *rest = name.split("_")
    return head + "".join(p.capitalize() for p in rest)


def read_wrt(source: bytes | bytearray | memoryview | str | Path, name: str | None = None) -> WrtModel:
    """Parse and verify a .wrt model from bytes or a path."""
    if isinstance(source, str | Path):
        label = name or str(source)
        try:
            data = Path(source).read_bytes()
        except OSError as e:
            raise ModelFormatError(f"{label}: cannot read model file: {e.strerror}") from None
    else:
        label, data = name or "<bytes>", bytes(source)
    if len(data) < 8:
        raise ModelFormatError(f"{label}: not a .wrt model (only {len(data)} bytes)")
    if data[4:8] != IDENTIFIER:
        raise ModelFormatError(f"{label}: not a .wrt model (file identifier {data[4:8]!r}, expected {IDENTIFIER!r})")
    try:
        problem = _structure_problem(data)
        root = None if problem else fb.ModelT.InitFromPackedBuf(data, 0)
    except Exception:  # the generated accessors raise whatever struct/index error a corrupt offset causes
        raise ModelFormatError(f"{label}: truncated or corrupt .wrt file: {len(data):,} bytes, and its tables "
                               "point outside them") from None
    if problem:
        raise ModelFormatError(f"{label}: {problem}")
    try:
        return _verify(root, len(data))
    except ModelFormatError as e:
        raise ModelFormatError(f"{label}: {e}") from None
    except Exception as e:
        raise ModelFormatError(f"{label}: corrupt .wrt file ({type(e).__name__}: {e})") from None


def _structure_problem(data: bytes) -> str | None:
    """What is wrong with the size of the model's tables, read from the lengths in the file before anything is
    unpacked (string and vector lengths only, so shared strings cost nothing here)."""
    m = fb.Model.GetRootAs(data, 0)
    nt, no = m.TensorsLength(), m.OperatorsLength()
    if nt > MAX_TENSORS:
        return f"model has {nt} tensors (limit {MAX_TENSORS})"
    if no > MAX_OPS:
        return f"model has {no} operators (limit {MAX_OPS})"

    def strlen(tab: flatbuffers.table.Table, slot: int) -> int:
        o = tab.Offset(4 + 2 * slot)
        return tab.VectorLen(o) if o else 0

    names = sum(strlen(m.Tensors(i)._tab, 0) for i in range(nt))
    expanded = 0  # elements of each block-sparse tensor, saturating at 2^40 (as the C reader counts)
    for i in range(nt):
        t = m.Tensors(i)
        if t.Sparsity() is not None:
            dims = [] if t.ShapeIsNone() else [max(int(d), 0) for d in t.ShapeAsNumpy()]
            expanded += 4 * min(int(np.prod(dims, dtype=object)), 1 << 40)
    if expanded > sparse.MAX_EXPANDED_BYTES:
        return f"block-sparse constants expand to {expanded} bytes in all (limit {sparse.MAX_EXPANDED_BYTES})"
    qvalues = 0
    for i in range(nt):
        q = m.Tensors(i).Quant()
        if q is not None:
            qvalues += q.ScaleLength() + q.ZeroPointLength()
    if qvalues > MAX_QUANT_VALUES:
        return f"the tensors' quantization parameters hold {qvalues} values in all (limit {MAX_QUANT_VALUES})"
    inputs = 0
    for k in range(no):
        op = m.Operators(k)
        inputs += op.InputsLength() + op.OutputsLength()
        names += strlen(op._tab, 5)
    if inputs > MAX_OP_INPUTS:
        return f"the operators have {inputs} inputs and outputs in all (limit {MAX_OP_INPUTS})"
    if names > MAX_NAME_BYTES:
        return f"tensor and operator names take {names} bytes in all (limit {MAX_NAME_BYTES})"
    return None


def _check(cond: bool, msg: str) -> None:
    if not cond:
        raise ModelFormatError(msg)


def _verify(m: fb.ModelT, file_size: int) -> WrtModel:
    _check(m.version == FORMAT_VERSION, f"format version {m.version}, this reader knows {FORMAT_VERSION}")
    buffers = [b.data for b in (m.buffers or [])]
    tensors = [_tensor(i, t, buffers) for i, t in enumerate(m.tensors or [])]
    nt = len(tensors)
    plan = m.plan or fb.MemoryPlanT()
    _check(plan.alignment in (16, 32, 64, 128), f"arena alignment {plan.alignment} is not 16, 32, 64 or 128")
    for i, t in enumerate(tensors):
        if t.data is None:
            _check(t.arena_offset >= 0 and t.arena_offset % plan.alignment == 0
                   and t.arena_offset + t.nbytes <= plan.arenaSize,
                   f"tensor {i} ({t.name!r}): arena offset {t.arena_offset} + {t.nbytes} bytes outside the "
                   f"{plan.arenaSize}-byte arena or misaligned")
    inputs, outputs = list(m.inputs if m.inputs is not None else []), list(m.outputs if m.outputs is not None else [])
    for i, t in enumerate(tensors):
        _check(t.bounds is None or i in inputs, f"tensor {i} ({t.name!r}) has shape bounds but is not a graph input")
    for kind, idx in (("input", inputs), ("output", outputs)):
        _check(len(idx) > 0, f"model has no {kind}s")
        _check(len(idx) <= 4096, f"model has {len(idx)} {kind}s (limit 4096)")
        for i in idx:
            _check(0 <= i < nt, f"graph {kind} refers to tensor {i}, but the model has {nt} tensors")
            _check(tensors[i].data is None, f"graph {kind} tensor {i} ({tensors[i].name!r}) is a constant")
    ops = [_op(k, o, nt) for k, o in enumerate(m.operators or [])]
    _check_sparse_uses(ops, tensors)
    _check_order(ops, tensors, inputs, outputs)
    _check_shapes(ops, tensors)
    for k, o in enumerate(ops):
        _check_quant(k, o, tensors)
    _check_aliasing(ops, tensors)
    return WrtModel(m.version, tensors, ops, inputs, outputs, int(plan.arenaSize), int(plan.alignment),
                    int(plan.lowerBound), _metadata(m.metadata, inputs))


def _tensor(i: int, t: fb.TensorT, buffers: list[Any]) -> TensorInfo:
    name = (t.name or b"").decode("utf-8", "replace") if isinstance(t.name, bytes) else (t.name or "")
    shape = tuple(int(d) for d in (t.shape if t.shape is not None else []))
    _check(len(shape) <= MAX_RANK, f"tensor {i} ({name!r}): rank {len(shape)} exceeds {MAX_RANK}")
    _check(all(d >= 0 for d in shape), f"tensor {i} ({name!r}): negative dimension in {shape}")
    _check(int(np.prod(shape, dtype=object)) <= MAX_ELEMENTS, f"tensor {i} ({name!r}): absurd shape {shape}")
    _check(t.dtype in DTYPES, f"tensor {i} ({name!r}): unknown dtype code {t.dtype}")
    dtype = DTYPES[t.dtype]
    info = TensorInfo(name, shape, dtype.newbyteorder("="), arena_offset=int(t.arenaOffset))
    if t.sparsity is not None:
        _check(t.buffer != 0, f"tensor {i} ({name!r}): block-sparse, but not a constant")
        _check(dtype in sparse.DTYPES,
               f"tensor {i} ({name!r}): block-sparse tensors must be float32, float16 or int8, not {dtype.name}")
    if t.buffer != 0:
        _check(t.buffer < len(buffers), f"tensor {i} ({name!r}): buffer {t.buffer} of {len(buffers)}")
        raw = buffers[t.buffer]
        raw = np.zeros(0, np.uint8) if raw is None else np.asarray(raw, dtype=np.uint8)
        if t.sparsity is not None:
            info.sparse = _sparse(f"tensor {i} ({name!r})", shape, t.sparsity, raw, dtype)
            info.data = sparse.expand(shape, info.sparse).astype(info.dtype, copy=False)
        else:
            _check(raw.size == info.nbytes, f"tensor {i} ({name!r}): constant holds {raw.size} bytes, shape "
                                            f"{shape} of {dtype.name} needs {info.nbytes}")
            info.data = raw.view(dtype).astype(info.dtype, copy=False).reshape(shape)
        info.stored_dtype, info.arena_offset = info.dtype, -1
        if info.dtype == np.float16:  # fp16-stored weights compute in float32 (the format's rule)
            info.data, info.dtype = info.data.astype(np.float32), np.dtype(np.float32)
    lo, hi = _seq(t.shapeMin), _seq(t.shapeMax)
    if len(lo) or len(hi):
        _check(len(lo) == len(hi) == len(shape), f"tensor {i} ({name!r}): shape bounds {list(lo)}..{list(hi)} do not "
                                                 f"match its rank {len(shape)}")
        b = tuple((int(a), int(z)) for a, z in zip(lo, hi, strict=True))
        _check(all(1 <= a <= d <= z <= MAX_DIM for (a, z), d in zip(b, shape, strict=True)),
               f"tensor {i} ({name!r}): shape {list(shape)} is not within its bounds {list(lo)}..{list(hi)}")
        info.bounds = b
    if t.quant is not None:
        info.quant = QuantParams(np.asarray(_seq(t.quant.scale), np.float32).reshape(-1),
                                 np.asarray(_seq(t.quant.zeroPoint), np.int64).reshape(-1), int(t.quant.axis))
        try:
            qrules.check_tensor(f"tensor {i} ({name!r})", shape, info.stored_dtype or info.dtype, info.quant)
        except ValueError as e:
            raise ModelFormatError(str(e)) from None
        info.quant = QuantParams.make(info.quant.scale, info.quant.zero_point if info.quant.zero_point.size else 0,
                                      info.quant.axis)
    return info


def _sparse(where: str, shape: tuple[int, ...], sp: fb.BlockSparsityT, raw: np.ndarray,
            dtype: np.dtype) -> sparse.BlockSparse:
    starts = np.asarray(_seq(sp.rowStarts), np.int64).reshape(-1)
    cols = np.asarray(_seq(sp.columns), np.int64).reshape(-1)
    problem = sparse.check(shape, starts, cols, raw.size, dtype.itemsize, dtype.name)
    _check(problem is None, f"{where}: {problem}")
    s = sparse.BlockSparse(starts, cols, raw.view(dtype).reshape(len(cols), sparse.BLOCK))
    problem = sparse.check_padding(shape, s)
    _check(problem is None, f"{where}: {problem}")
    return s


def _check_sparse_uses(ops: list[OpInfo], tensors: list[TensorInfo]) -> None:
    """Block-sparse constants may only be the weights of the ops that have a sparse variant."""
    for k, o in enumerate(ops):
        for slot, i in enumerate(o.inputs):
            if i >= 0 and tensors[i].sparse is not None and not (slot == 1 and o.op in sparse.SPARSE_OPS):
                raise ModelFormatError(f"operator {k} ({o.op} {o.name!r}): input {slot} (tensor {i} "
                                       f"{tensors[i].name!r}) is block-sparse; only the weights of "
                                       f"{' and '.join(sparse.SPARSE_OPS)} may be")


def _op(k: int, o: fb.OperatorT, nt: int) -> OpInfo:
    _check(o.type in opdefs.BY_CODE, f"operator {k}: unknown op type code {o.type}")
    d = opdefs.BY_CODE[o.type]
    name = o.name.decode("utf-8", "replace") if isinstance(o.name, bytes) else (o.name or f"op{k}")
    where = f"operator {k} ({d.name} {name!r})"
    ins = [int(i) for i in (o.inputs if o.inputs is not None else [])]
    outs = [int(i) for i in (o.outputs if o.outputs is not None else [])]
    _check(len(ins) >= d.min_inputs and (d.variadic or len(ins) <= len(d.inputs)),
           f"{where}: {len(ins)} inputs, expected {d.min_inputs}..{len(d.inputs)}")
    if d.variadic_outputs:
        _check(1 <= len(outs) <= MAX_OP_OUTPUTS, f"{where}: {len(outs)} outputs, expected 1..{MAX_OP_OUTPUTS}")
    else:
        _check(len(outs) == len(d.outputs), f"{where}: {len(outs)} outputs, expected {len(d.outputs)}")
    for i in ins:
        _check(-1 <= i < nt, f"{where}: input tensor index {i} out of range (0..{nt - 1})")
    for i in ins[: d.min_inputs]:
        _check(i >= 0, f"{where}: required input missing")
    for i in outs:
        _check(0 <= i < nt, f"{where}: output tensor index {i} out of range (0..{nt - 1})")
    return OpInfo(d.name, ins, outs, _attrs(d, o, where), name)


def _attrs(d: opdefs.OpDef, o: fb.OperatorT, where: str) -> dict[str, Any]:
    attrs = d.defaults()
    if d.options is None:
        return attrs
    expected = getattr(fb.Options, d.options)
    _check(o.optionsType == expected and o.options is not None,
           f"{where}: options of type {o.optionsType}, expected {d.options}")
    for a in d.attrs:
        v = getattr(o.options, camel(a.name))
        if a.kind in ("ints", "floats"):
            v = a.default if v is None else tuple(int(x) if a.kind == "ints" else float(x) for x in v)
        elif a.kind in opdefs.ENUMS:
            enum_cls = opdefs.ENUMS[a.kind]
            _check(v in {int(m) for m in enum_cls}, f"{where}: {a.name} = {v} is not a valid {a.kind}")
            v = enum_cls(v)
        elif a.kind == "bool":
            v = bool(v)
        elif a.kind == "int":
            v = int(v)
        attrs[a.name] = v
    return attrs


def _check_order(ops: list[OpInfo], tensors: list[TensorInfo], inputs: list[int], outputs: list[int]) -> None:
    """Every op reads only constants, graph inputs or outputs of earlier ops; every tensor is written once."""
    ready = set(inputs) | {i for i, t in enumerate(tensors) if t.data is not None}
    for k, o in enumerate(ops):
        d = opdefs.OPS[o.op]
        for slot, i in enumerate(o.inputs):
            if i >= 0 and d.const_mask >> slot & 1 and tensors[i].data is None:
                raise ModelFormatError(f"operator {k} ({o.op} {o.name!r}): input {slot} (tensor {i} "
                                       f"{tensors[i].name!r}) must be a constant")
        for i in o.inputs:
            _check(i < 0 or i in ready, f"operator {k} ({o.op} {o.name!r}) reads tensor {i} "
                                        f"({tensors[i].name!r}) before any op writes it")
        for i in o.outputs:
            _check(i not in ready, f"operator {k} ({o.op} {o.name!r}) writes tensor {i} "
                                   f"({tensors[i].name!r}), which is already a constant, input or earlier output")
            ready.add(i)
    for i in outputs:
        _check(i in ready, f"graph output tensor {i} ({tensors[i].name!r}) is never written")


MAX_ALIAS_CHECKS = 1 << 26  # kernels_wasm/engine/engine.h WRT_MAX_ALIAS_CHECKS


def _check_aliasing(ops: list[OpInfo], tensors: list[TensorInfo]) -> None:
    """An op's outputs share no arena bytes with its inputs or with each other (a RESHAPE's output may alias its
    input exactly): the C kernels check indices and then write, so such a plan could turn a checked index into an
    out-of-range one. Same order and words as kernels_wasm/engine/model_read.c (check_aliasing)."""
    pairs = sum(len(o.outputs) * (len(o.inputs) + len(o.outputs)) for o in ops)
    _check(pairs <= MAX_ALIAS_CHECKS,
           f"the memory plan needs {pairs} overlap checks (limit {MAX_ALIAS_CHECKS})")

    def shares(a: TensorInfo, b: TensorInfo) -> bool:
        return (a.data is None and b.data is None and a.nbytes > 0 and b.nbytes > 0
                and a.arena_offset < b.arena_offset + b.nbytes and b.arena_offset < a.arena_offset + a.nbytes)

    for k, o in enumerate(ops):
        for a, yi in enumerate(o.outputs):
            y = tensors[yi]
            for j, ti in enumerate([*o.inputs, *o.outputs[:a]]):
                if ti < 0 or not shares(y, tensors[ti]):
                    continue
                if o.op == "RESHAPE" and y.arena_offset == tensors[ti].arena_offset:
                    continue
                raise ModelFormatError(
                    f"operator {k} ({o.op} {o.name!r}): output tensor {yi} ({y.name!r}) shares arena bytes with "
                    f"{'input' if j < len(o.inputs) else 'output'} tensor {ti} ({tensors[ti].name!r})")


def _check_shapes(ops: list[OpInfo], tensors: list[TensorInfo]) -> None:
    """Every op's rules (python_ref/shapes.py) hold and its outputs have the shapes and dtypes it produces, as the C
    engine checks before running anything (kernels_wasm/engine/shape_check.c)."""
    for k, o in enumerate(ops):
        where = f"operator {k} ({o.op} {o.name!r})"
        specs = [None if i < 0 else (tensors[i].shape, tensors[i].dtype) for i in o.inputs]
        try:
            produced = shapes.infer(o.op, specs, o.attrs)
        except ValueError as e:
            raise ModelFormatError(f"{where}: {str(e).removeprefix(f'{o.op}: ')}") from None
        for i, (shape, dtype) in zip(o.outputs, produced, strict=True):
            t = tensors[i]
            _check(t.shape == tuple(shape), f"{where}: output tensor {i} ({t.name!r}) is declared with shape "
                                            f"{list(t.shape)}, but the op produces {list(shape)}")
            _check(t.dtype == dtype, f"{where}: output dtype {t.dtype} differs from the input dtype {dtype}")


def _check_quant(k: int, o: OpInfo, tensors: list[TensorInfo]) -> None:
    """The op's quantization rules (python_ref/qrules.py), on the declared tensors."""
    def spec(i: int) -> qrules.Spec | None:
        return None if i < 0 else (tensors[i].shape, tensors[i].dtype, tensors[i].quant)

    try:
        qrules.check_op(o.op, [spec(i) for i in o.inputs], [spec(i) for i in o.outputs], o.attrs,
                        [None if i < 0 else tensors[i].data for i in o.inputs])
    except ValueError as e:
        raise ModelFormatError(f"operator {k} ({o.op} {o.name!r}): {e}") from None


def _seq(v: Any) -> Any:
    """A FlatBuffers vector from the object API: None when absent, else a list or a numpy array."""
    return [] if v is None else v


def _floats(v: Any) -> list[float]:
    return [float(x) for x in _seq(v)]


def read_metadata(data: bytes) -> dict[str, Any]:
    """Only the metadata of a .wrt file that an engine has already verified (no tensors are unpacked)."""
    m = fb.Model.GetRootAs(data, 0)
    md = m.Metadata()
    return _metadata(None if md is None else fb.MetadataT.InitFromObj(md), list(m.InputsAsNumpy())
                     if not m.InputsIsNone() else [])


def stored_digest(data: bytes) -> str | None:
    """The content digest the writer stored in the file (DIGEST_PROP), or None: absent, left as zeros, or unreadable.
    Reads only the props, before any engine verified the file: any failure means no digest (the engine's own load
    then reports what is wrong with the file)."""
    try:
        if len(data) < 8 or data[4:8] != IDENTIFIER:
            return None
        md = fb.Model.GetRootAs(data, 0).Metadata()
        for i in range(min(md.PropsLength(), 4096) if md is not None else 0):
            kv = md.Props(i)
            if kv.Key() == DIGEST_PROP.encode():
                v = (kv.Value() or b"").decode("ascii")
                hexpart = v[len(DIGEST_PREFIX):]
                ok = v.startswith(DIGEST_PREFIX) and len(hexpart) == 64 and hexpart.strip("0123456789abcdef") == ""
                return v if ok and hexpart != "0" * 64 else None
    except Exception:  # a corrupt file: the FlatBuffers accessors raise anything from struct.error to IndexError
        return None
    return None


def _s(v: Any) -> str:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else (v or "")


def _metadata(md: fb.MetadataT | None, inputs: list[int]) -> dict[str, Any]:
    if md is None:
        return {"source": "", "producer": "", "preprocess": {}, "labels": [], "props": {}}
    pre = {}
    for p in md.preprocess or []:
        _check(0 <= p.input < len(inputs), f"preprocess hint for input #{p.input} of {len(inputs)}")
        pre[p.input] = {"layout": _s(p.layout), "color": _s(p.color), "mean": tuple(_floats(p.mean)),
                        "std": tuple(_floats(p.std)), "resize": _s(p.resize), "crop_fraction": p.cropFraction}
    return {"source": _s(md.source), "producer": _s(md.producer), "preprocess": pre,
            "labels": [_s(x) for x in md.labels or []], "props": {_s(kv.key): _s(kv.value) for kv in md.props or []}}
