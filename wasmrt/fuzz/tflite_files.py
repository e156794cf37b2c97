"""Hostile TFLite models for the importer fuzzer: FlatBuffers written with LiteRT's generated object API (the schema
of the files we import; ai-edge-litert is a development dependency, as the fuzzer is a development tool).

Each model is one subgraph of random ops the importer handles (plus a few it refuses), wired to graph inputs,
constant buffers or earlier outputs; tensors get plausible or hostile shapes (zeros, -1, 2^31), types, buffers whose
size disagrees with the shape, shape signatures, quantization; builtin options get plausible or edge values; the
recorded output shapes may lie. The bytes are what `import_tflite` reads.
"""

from __future__ import annotations

import contextlib
import random
import struct
from typing import Any

import flatbuffers
import numpy as np

from wasmrt.compile.tflite import ops as tflite_ops

HOSTILE = (0, -1, 1, 2, 3, 65536, 2**31 - 1, -(2**31), 1 << 20, 7)
FLOAT_HOSTILE = (0.0, -1.0, 1e30, float("inf"), float("nan"), 0.5)
TYPES = ("FLOAT32", "FLOAT32", "FLOAT32", "INT32", "INT64", "FLOAT16", "INT8", "UINT8", "BOOL", "STRING", "FLOAT64")

# op -> (input slots, options table or None). Slots: x = data, w = weights [O, KH, KW, I], c = per-channel constant,
# i = int32 constant vector, s = scalar constant, '?' optional, '*' repeated.
OPS: dict[str, tuple[tuple[str, ...], str | None]] = {
    "CONV_2D": (("x", "w", "c?"), "Conv2DOptions"),
    "DEPTHWISE_CONV_2D": (("x", "w", "c?"), "DepthwiseConv2DOptions"),
    "TRANSPOSE_CONV": (("i", "w", "x", "c?"), "TransposeConvOptions"),
    "FULLY_CONNECTED": (("x", "w", "c?"), "FullyConnectedOptions"),
    "BATCH_MATMUL": (("x", "x"), "BatchMatMulOptions"),
    "AVERAGE_POOL_2D": (("x",), "Pool2DOptions"),
    "MAX_POOL_2D": (("x",), "Pool2DOptions"),
    "ADD": (("x", "x"), "AddOptions"), "SUB": (("x", "x"), "SubOptions"), "MUL": (("x", "x"), "MulOptions"),
    "DIV": (("x", "x"), "DivOptions"), "MAXIMUM": (("x", "x"), None), "MINIMUM": (("x", "x"), None),
    "POW": (("x", "x"), None), "SQUARED_DIFFERENCE": (("x", "x"), None), "PRELU": (("x", "c"), None),
    "RELU": (("x",), None), "RELU6": (("x",), None), "RELU_N1_TO_1": (("x",), None), "RELU_0_TO_1": (("x",), None),
    "LOGISTIC": (("x",), None), "TANH": (("x",), None), "EXP": (("x",), None), "SQRT": (("x",), None),
    "RSQRT": (("x",), None), "ABS": (("x",), None), "NEG": (("x",), None), "HARD_SWISH": (("x",), None),
    "LEAKY_RELU": (("x",), "LeakyReluOptions"),
    "SOFTMAX": (("x",), "SoftmaxOptions"),
    "DEQUANTIZE": (("x",), None), "DENSIFY": (("x",), None),
    "CONCATENATION": (("x", "x*"), "ConcatenationOptions"),
    "RESHAPE": (("x", "i?"), "ReshapeOptions"),
    "SQUEEZE": (("x",), "SqueezeOptions"),
    "EXPAND_DIMS": (("x", "s"), None),
    "TRANSPOSE": (("x", "i"), None),
    "SLICE": (("x", "i", "i"), None),
    "STRIDED_SLICE": (("x", "i", "i", "i"), "StridedSliceOptions"),
    "PAD": (("x", "p"), None), "PADV2": (("x", "p", "s"), None),
    "MIRROR_PAD": (("x", "p"), "MirrorPadOptions"),
    "RESIZE_BILINEAR": (("x", "i"), "ResizeBilinearOptions"),
    "RESIZE_NEAREST_NEIGHBOR": (("x", "i"), "ResizeNearestNeighborOptions"),
    "DEPTH_TO_SPACE": (("x",), "DepthToSpaceOptions"),
    "GATHER": (("x", "i"), "GatherOptions"),
    "MEAN": (("x", "i"), "ReducerOptions"), "SUM": (("x", "i"), "ReducerOptions"),
    "REDUCE_MAX": (("x", "i"), "ReducerOptions"),
    "SHAPE": (("x",), "ShapeOptions"),
    "CUSTOM": (("x", "w", "c"), None),
    "LSTM": (("x",), None), "WHILE": (("x",), None),
}
for _op in tflite_ops._UNARY:  # every element-wise unary op the importer converts one to one (its own table)
    OPS.setdefault(_op, (("x",), None))


def _fb() -> Any:
    from ai_edge_litert import schema_py_generated as fb

    return fb


class TflGen:
    def __init__(self, rng: random.Random, hostile: float = 0.08) -> None:
        self.fb = _fb()
        self.r = rng
        self.hostile = hostile
        m = self.fb.ModelT()
        m.version, m.description = 3, "wasmrt fuzz"
        m.operatorCodes, m.buffers = [], [self.fb.BufferT()]
        self.g = self.fb.SubGraphT()
        self.g.tensors, self.g.operators, self.g.inputs, self.g.outputs = [], [], [], []
        m.subgraphs = [self.g]
        self.m = m
        self.runtime: list[int] = []

    def evil(self, k: float = 1.0) -> bool:
        return self.r.random() < self.hostile * k

    def dim(self) -> int:
        return self.r.choice(HOSTILE) if self.evil() else self.r.randint(1, 6)

    def shape(self, rank: int | None = None) -> list[int]:
        rank = self.r.choice((4, 4, 4, 2, 3, 1)) if rank is None else rank
        if self.evil(0.5):
            rank = self.r.choice((0, 5, 7, 9))
        return [self.dim() for _ in range(rank)]

    def tensor(self, shape: list[int], type_name: str = "FLOAT32", data: bytes | None = None) -> int:
        fb, r = self.fb, self.r
        buf = fb.BufferT()
        if data is not None:
            buf.data = np.frombuffer(data, np.uint8)
        self.m.buffers.append(buf)
        t = fb.TensorT()
        t.name = f"t{len(self.g.tensors)}" if not self.evil(0.3) else r.choice(["", "t0", "x" * 500])
        t.shape = list(shape)
        t.type = getattr(fb.TensorType, r.choice(TYPES) if self.evil(0.5) else type_name)
        t.buffer = len(self.m.buffers) - 1 if not self.evil(0.3) else r.choice((0, 10**6, len(self.m.buffers)))
        if self.evil(0.5):
            t.shapeSignature = [r.choice((-1, d)) for d in shape]
        if self.evil(0.5):
            q = fb.QuantizationParametersT()
            q.scale, q.zeroPoint = [r.choice(FLOAT_HOSTILE)], [r.choice(HOSTILE)]
            q.quantizedDimension = r.choice(HOSTILE)
            t.quantization = q
        if self.evil(0.2):
            t.isVariable = True
        self.g.tensors.append(t)
        return len(self.g.tensors) - 1

    def const(self, shape: list[int], kind: str = "f") -> int:
        r = self.r
        count = int(np.prod(shape)) if all(0 <= d <= 4096 for d in shape) and len(shape) < 6 else -1
        if kind == "i":
            vals = [r.choice(HOSTILE) if self.evil() else r.randint(-1, 4) for _ in range(max(count, 0))]
            data = np.array(vals, "<i8").clip(-(2**31), 2**31 - 1).astype("<i4").tobytes()
            type_name = "INT32"
        else:
            data = np.array([r.uniform(-1, 1) for _ in range(max(min(count, 65536), 0))], "<f4").tobytes()
            type_name = "FLOAT32" if not self.evil() else "FLOAT16"
        if count < 0 or self.evil(0.5):
            data = data[: r.choice((0, 1, 3, len(data)))]
        return self.tensor(shape, type_name, data)

    def sparse_const(self, shape: list[int]) -> int:
        """Weights stored sparse (SparsityParameters: dense dimensions, the last CSR, maybe 4x1 or 2x1 blocks),
        read through DENSIFY; sometimes with one lie in the encoding. Returns DENSIFY's output."""
        from wasmrt.compile.tflite.sparse import encode

        fb, r = self.fb, self.r
        if len(shape) < 1 or not all(0 <= d <= 64 for d in shape) or len(shape) > 5:
            return self.const(shape)
        dense = np.array([r.uniform(-1, 1) if r.random() < 0.3 else 0.0 for _ in range(int(np.prod(shape)))],
                         np.float32).reshape(shape)
        block = r.choice([b for b in (0, 0, 2, 4) if b == 0 or shape[0] % b == 0])
        sp, values = encode(fb, dense, block, r.choice(("int32", "uint16", "uint8")) if np.prod(shape) < 256
                            else "int32")
        if self.evil(2):
            lie = r.randrange(5)
            last = sp.dimMetadata[len(shape) - 1]
            if lie == 0 and len(last.arraySegments.values):
                last.arraySegments.values = last.arraySegments.values[::-1].copy()
            elif lie == 1 and len(last.arrayIndices.values):
                last.arrayIndices.values[-1] = last.arrayIndices.values.dtype.type(min(shape[-1] + r.choice((0, 7)),
                                                                                     255))
            elif lie == 2:
                values = values[: r.choice((0, max(len(values) - 1, 0)))]
            elif lie == 3:
                sp.traversalOrder = list(reversed(sp.traversalOrder))
            else:
                sp.blockMap = [r.choice(HOSTILE) % 7]
        dtype = "FLOAT16" if self.evil(3) else "FLOAT32"
        t = self.tensor(shape, dtype, values.astype("<f2" if dtype == "FLOAT16" else "<f4").tobytes())
        self.g.tensors[t].sparsity = sp
        out = self.tensor(shape, dtype)
        op = fb.OperatorT()
        oc = fb.OperatorCodeT()
        oc.builtinCode, oc.deprecatedBuiltinCode, oc.version = fb.BuiltinOperator.DENSIFY, fb.BuiltinOperator.DENSIFY, 1
        self.m.operatorCodes.append(oc)
        op.opcodeIndex, op.inputs, op.outputs = len(self.m.operatorCodes) - 1, [t], [out]
        self.g.operators.append(op)
        return out

    def data(self) -> int:
        r = self.r
        if not self.runtime or r.random() < 0.1:
            k = self.tensor(self.shape())
            self.g.inputs.append(k)
            self.runtime.append(k)
            return k
        if self.evil():
            return r.choice((-1, len(self.g.tensors) + 5, r.randrange(len(self.g.tensors))))
        return self.runtime[-1] if r.random() < 0.7 else r.choice(self.runtime)

    def options(self, kind: str, x_rank: int) -> Any:
        fb, r = self.fb, self.r
        obj = getattr(fb, kind + "T")()
        for field in vars(obj):
            cur = getattr(obj, field)
            if isinstance(cur, float):
                v: Any = r.choice(FLOAT_HOSTILE) if self.evil(2) else r.uniform(0, 1)
            elif isinstance(cur, bool):
                v = r.random() < 0.3
            elif isinstance(cur, int):
                if field in ("padding",):
                    v = r.randint(0, 1) if not self.evil() else r.choice((2, 3, 255))
                elif field.startswith(("stride", "dilation", "filter", "depthMultiplier", "blockSize")):
                    v = r.randint(1, 3) if not self.evil(2) else r.choice(HOSTILE)
                elif field == "fusedActivationFunction":
                    v = r.choice((0, 0, 1, 3)) if not self.evil() else r.choice((2, 4, 5, 6, 100))
                elif field in ("axis", "batchDims"):
                    v = r.randint(-x_rank, max(x_rank - 1, 0)) if not self.evil(2) else r.choice(HOSTILE)
                elif field.endswith("Mask"):
                    v = r.randint(0, 15) if not self.evil() else r.choice(HOSTILE)
                else:
                    v = r.randint(0, 2) if not self.evil() else r.choice(HOSTILE)
            elif field in ("newShape", "squeezeDims"):
                v = [r.choice((-1, 1, 2)) if not self.evil() else r.choice(HOSTILE) for _ in range(r.randint(0, 5))]
            else:
                continue
            with contextlib.suppress(TypeError, ValueError):
                setattr(obj, field, v)
        return obj

    def slot(self, kind: str, xs: list[int]) -> int:
        r = self.r
        c = xs[-1] if xs else 1
        if kind == "x":
            return self.data() if r.random() < 0.5 else self.const(xs if r.random() < 0.5 else xs[-1:])
        if kind == "w":
            k = r.choice((1, 3))
            shape = [self.dim(), k, k, max(c, 0)] if not self.evil() else self.shape()
            return self.sparse_const(shape) if r.random() < 0.15 else self.const(shape)
        if kind == "c":
            return self.const([c] if not self.evil() else self.shape())
        if kind == "s":
            return self.const([] if not self.evil() else self.shape(), "i")
        if kind == "p":
            return self.const([len(xs), 2] if not self.evil() else self.shape(2), "i")
        return self.const([len(xs) if not self.evil() else r.choice((0, 1, 9))], "i")

    def op(self) -> None:
        fb, r = self.fb, self.r
        name = r.choice(list(OPS))
        slots, opts = OPS[name]
        x = self.data()
        xs = list(self.g.tensors[x].shape) if 0 <= x < len(self.g.tensors) else [1, 4, 4, 3]
        ins: list[int] = []
        for k, slot in enumerate(slots):
            base = slot.rstrip("?*")
            if slot.endswith("?") and r.random() < 0.4:
                ins.append(-1)
                continue
            reps = r.choice((1, 1, 2, 3, 100 if self.evil() else 1)) if slot.endswith("*") else 1
            for _ in range(reps):
                ins.append(x if base == "x" and k == (2 if name == "TRANSPOSE_CONV" else 0) else self.slot(base, xs))
        out_shape = xs if not self.evil() else self.shape()
        out = self.tensor(out_shape)
        op = fb.OperatorT()
        code = getattr(fb.BuiltinOperator, name)
        custom = None
        if name == "CUSTOM":
            custom = r.choice(("Convolution2DTransposeBias", "MaxPoolingWithArgmax2D", "bogus"))
            op.customOptions = list(struct.pack("<iii", *[r.choice(HOSTILE) if self.evil(2) else r.randint(1, 2)
                                                          for _ in range(3)]))[: r.choice((12, 12, 4, 0))]
        oc = fb.OperatorCodeT()
        oc.builtinCode, oc.deprecatedBuiltinCode = code, min(code, 127)
        oc.customCode, oc.version = custom, r.choice((1, 1, 2, 3))
        self.m.operatorCodes.append(oc)
        op.opcodeIndex = len(self.m.operatorCodes) - 1 if not self.evil(0.3) else r.choice((10**6, -1 & 0xFFFFFFFF))
        op.inputs, op.outputs = ins, [out] if not self.evil(0.3) else r.choice(([], [out, out], [x]))
        if opts and not self.evil(0.3):
            op.builtinOptionsType = getattr(fb.BuiltinOptions, opts)
            op.builtinOptions = self.options(opts, len(xs))
        self.g.operators.append(op)
        self.runtime.append(out)

    def model(self) -> bytes:
        r = self.r
        for _ in range(r.choice((1, 1, 2, 3, 5))):
            self.op()
        self.g.outputs = [self.runtime[-1]] if not self.evil() else [r.choice(HOSTILE) % 1000]
        if self.evil(0.3):
            self.m.subgraphs.append(self.fb.SubGraphT())
        if self.evil(0.2):
            self.m.version = r.choice((0, 1, 99))
        b = flatbuffers.Builder(1024)
        b.Finish(self.m.Pack(b), file_identifier=b"TFL3")
        return bytes(b.Output())


def generate(seed: int, hostile: float = 0.08) -> bytes:
    rng = random.Random(seed)
    try:
        return TflGen(rng, hostile).model()
    except (struct.error, OverflowError, ValueError, TypeError):  # a value the packer cannot hold: a plainer model
        return TflGen(random.Random(seed + 1), 0.0).model()


def mutate(data: bytes, rng: random.Random) -> bytes:
    """A structural change through the object API: one shape, option field or op input replaced."""
    fb = _fb()
    try:
        m = fb.ModelT.InitFromPackedBuf(bytearray(data), 0)
        g = m.subgraphs[0]
        choice = rng.randrange(3)
        if choice == 0 and g.tensors:
            t = rng.choice(g.tensors)
            if t.shape is not None and len(t.shape):
                shape = list(t.shape)
                shape[rng.randrange(len(shape))] = rng.choice(HOSTILE)
                t.shape = shape
        elif choice == 1 and g.operators:
            op = rng.choice(g.operators)
            if op.builtinOptions is not None:
                fields = [f for f in vars(op.builtinOptions) if isinstance(getattr(op.builtinOptions, f), int)]
                if fields:
                    setattr(op.builtinOptions, rng.choice(fields), rng.choice(HOSTILE))
        elif g.operators:
            op = rng.choice(g.operators)
            if op.inputs is not None and len(op.inputs):
                ins = list(op.inputs)
                ins[rng.randrange(len(ins))] = rng.randrange(-1, len(g.tensors) + 1)
                op.inputs = ins
        b = flatbuffers.Builder(1024)
        b.Finish(m.Pack(b), file_identifier=b"TFL3")
        return bytes(b.Output())
    except Exception:
        out = bytearray(data)
        if out:
            out[rng.randrange(len(out))] = rng.randrange(256)
        return bytes(out)
