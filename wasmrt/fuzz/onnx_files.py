"""Hostile ONNX models for the importer fuzzer: small graphs built with onnx.helper from a seeded generator.

Every op the importer converts (and some it only folds or refuses) is reachable, wired to graph inputs,
initializers, Constant nodes or earlier outputs, with attributes that are plausible most of the time and hostile
otherwise (zero, negative and 2^31 sizes, wrong list lengths, out-of-range axes, unknown modes); initializers with
dims that disagree with their data, unusual element types, external-data references; opsets from 1 to beyond the
newest. The bytes are serialized ModelProtos, the input of `import_onnx`.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper

from wasmrt.compile.onnx import ops as onnx_ops

HOSTILE = (0, -1, 1, 2, 3, 7, 65536, 2**31 - 1, -(2**31), 2**40, 2**62, -(2**62), 10**9)
FLOAT_HOSTILE = (0.0, -0.0, 1.0, -1.0, 1e-30, 1e30, float("inf"), float("-inf"), float("nan"), 0.5)
ELEM_TYPES = (TensorProto.FLOAT, TensorProto.FLOAT, TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32,
              TensorProto.FLOAT16, TensorProto.DOUBLE, TensorProto.BOOL, TensorProto.UINT8, TensorProto.INT8,
              TensorProto.STRING, TensorProto.BFLOAT16, TensorProto.COMPLEX64, 0, 99)

# op -> (input slots, attributes). Slots: x = data (runtime mostly), c = float constant shaped like x's channels,
# w = conv weights, i = int64 constant vector, s = a scalar constant, '?' = optional, '*' = repeated.
# Attribute kinds: int, ints2, ints4, intsn, float, bool, str:<choices>, tensor, axis, axes.
OPS: dict[str, tuple[tuple[str, ...], dict[str, str]]] = {
    "Conv": (("x", "w", "c?"), {"kernel_shape": "ints2", "strides": "ints2", "pads": "ints4", "dilations": "ints2",
                                "group": "int", "auto_pad": "str:NOTSET,SAME_UPPER,SAME_LOWER,VALID,BOGUS"}),
    "ConvTranspose": (("x", "w", "c?"), {"kernel_shape": "ints2", "strides": "ints2", "pads": "ints4",
                                         "dilations": "ints2", "group": "int", "output_padding": "ints2",
                                         "output_shape": "ints2", "auto_pad": "str:NOTSET,SAME_UPPER,VALID"}),
    "MaxPool": (("x",), {"kernel_shape": "ints2", "strides": "ints2", "pads": "ints4", "dilations": "ints2",
                         "ceil_mode": "bool", "storage_order": "int", "auto_pad": "str:NOTSET,SAME_UPPER,VALID"}),
    "AveragePool": (("x",), {"kernel_shape": "ints2", "strides": "ints2", "pads": "ints4", "ceil_mode": "bool",
                             "count_include_pad": "bool", "auto_pad": "str:NOTSET,SAME_LOWER,VALID"}),
    "GlobalAveragePool": (("x",), {}),
    "GlobalMaxPool": (("x",), {}),
    "BatchNormalization": (("x", "c", "c", "c", "c"), {"epsilon": "float", "momentum": "float",
                                                       "training_mode": "bool"}),
    "Gemm": (("x", "w", "c?"), {"alpha": "float", "beta": "float", "transA": "bool", "transB": "bool"}),
    "MatMul": (("x", "x"), {}),
    "Add": (("x", "x"), {}), "Sub": (("x", "x"), {}), "Mul": (("x", "x"), {}), "Div": (("x", "x"), {}),
    "Pow": (("x", "x"), {}), "Max": (("x", "x*"), {}), "Min": (("x", "x*"), {}), "Sum": (("x", "x*"), {}),
    "Mean": (("x", "x*"), {}), "PRelu": (("x", "c"), {}),
    "Relu": (("x",), {}), "Sigmoid": (("x",), {}), "Tanh": (("x",), {}), "Exp": (("x",), {}),
    "Sqrt": (("x",), {}), "Abs": (("x",), {}), "Neg": (("x",), {}), "Reciprocal": (("x",), {}),
    "HardSwish": (("x",), {}), "Identity": (("x",), {}),
    "LeakyRelu": (("x",), {"alpha": "float"}),
    "HardSigmoid": (("x",), {"alpha": "float", "beta": "float"}),
    "Clip": (("x", "s?", "s?"), {"min": "float", "max": "float"}),
    "Softmax": (("x",), {"axis": "axis"}),
    "Cast": (("x",), {"to": "int"}),
    "CastLike": (("x", "x"), {}),
    "Dropout": (("x", "s?"), {"ratio": "float"}),
    "Concat": (("x", "x*"), {"axis": "axis"}),
    "Reshape": (("x", "i"), {"allowzero": "bool"}),
    "Flatten": (("x",), {"axis": "axis"}),
    "Squeeze": (("x", "i?"), {"axes": "axes"}),
    "Unsqueeze": (("x", "i?"), {"axes": "axes"}),
    "Transpose": (("x",), {"perm": "intsn"}),
    "Slice": (("x", "i", "i", "i?", "i?"), {}),
    "Split": (("x", "i?"), {"axis": "axis", "split": "intsn", "num_outputs": "int"}),
    "Pad": (("x", "i", "s?"), {"mode": "str:constant,reflect,edge,wrap,bogus", "pads": "intsn", "value": "float"}),
    "Resize": (("x", "i?", "c?", "i?"), {"mode": "str:nearest,linear,cubic,bogus",
                                         "coordinate_transformation_mode":
                                             "str:half_pixel,align_corners,asymmetric,pytorch_half_pixel,"
                                             "tf_half_pixel_for_nn,tf_crop_and_resize",
                                         "nearest_mode": "str:round_prefer_floor,round_prefer_ceil,floor,ceil",
                                         "antialias": "bool", "exclude_outside": "bool"}),
    "Upsample": (("x", "c?"), {"mode": "str:nearest,linear", "scales": "floats"}),
    "DepthToSpace": (("x",), {"blocksize": "int", "mode": "str:DCR,CRD,XYZ"}),
    "Gather": (("x", "i"), {"axis": "axis"}),
    "Tile": (("x", "i"), {}),
    "Expand": (("x", "i"), {}),
    "ReduceMean": (("x", "i?"), {"axes": "axes", "keepdims": "bool", "noop_with_empty_axes": "bool"}),
    "ReduceMax": (("x", "i?"), {"axes": "axes", "keepdims": "bool"}),
    "ReduceMin": (("x", "i?"), {"axes": "axes", "keepdims": "bool"}),
    "ReduceSum": (("x", "i?"), {"axes": "axes", "keepdims": "bool", "noop_with_empty_axes": "bool"}),
    "ReduceL1": (("x", "i?"), {"axes": "axes", "keepdims": "bool"}),
    "ReduceL2": (("x", "i?"), {"axes": "axes", "keepdims": "bool"}),
    "ReduceSumSquare": (("x", "i?"), {"axes": "axes", "keepdims": "bool"}),
    "Shape": (("x",), {"start": "int", "end": "int"}),
    "Size": (("x",), {}),
    "ConstantOfShape": (("i",), {"value": "tensor"}),
    "Range": (("s", "s", "s"), {}),
    "Where": (("x", "x", "x"), {}),
    "Equal": (("x", "x"), {}), "Not": (("x",), {}), "Floor": (("x",), {}), "Ceil": (("x",), {}),
    "Loop": (("x",), {"body": "graph"}),
    "Einsum": (("x", "x"), {"equation": "str:ij,jk->ik,bogus"}),
    "NonZero": (("x",), {}),
}
# every element-wise op the importer converts one to one (its own table), with no attributes unless listed above
for _op in (*onnx_ops._UNARY, *onnx_ops._BINARY):
    OPS.setdefault(_op, (("x",) * (1 if _op in onnx_ops._UNARY else 2), {}))


class OnnxGen:
    """One random model per call of `model(rng)`; `hostile` is the share of decisions that go to edge values."""

    def __init__(self, rng: random.Random, hostile: float = 0.08) -> None:
        self.r = rng
        self.hostile = hostile
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.inputs: list[onnx.ValueInfoProto] = []
        self.shapes: dict[str, tuple[int, ...]] = {}  # what the generator believes (may be a lie)
        self.runtime: list[str] = []
        self.names: list[str] = []
        self.n = 0

    def evil(self, k: float = 1.0) -> bool:
        return self.r.random() < self.hostile * k

    def name(self, prefix: str) -> str:
        self.n += 1
        if self.evil(0.3):
            return self.r.choice(["", "x", prefix, "a" * 300, "é/ü:0", *self.names[-3:]])
        return f"{prefix}{self.n}"

    def dim(self) -> int:
        return self.r.choice(HOSTILE) if self.evil() else self.r.randint(1, 6)

    def shape(self, rank: int | None = None) -> tuple[int, ...]:
        rank = self.r.choice((4, 4, 4, 2, 3, 1)) if rank is None else rank
        if self.evil(0.5):
            rank = self.r.choice((0, 5, 6, 9))
        return tuple(self.dim() for _ in range(rank))

    # -- tensors ---------------------------------------------------------------------------------------------------
    def tensor(self, name: str, shape: tuple[int, ...], kind: str = "float") -> onnx.TensorProto:
        r = self.r
        count = int(np.prod([max(d, 0) for d in shape])) if all(0 <= d <= 1 << 20 for d in shape) else -1
        if kind == "int":
            vals = [r.choice(HOSTILE) if self.evil() else r.randint(-2, 6) for _ in range(max(count, 0))]
            t = helper.make_tensor(name, TensorProto.INT64, [max(count, 0)] if len(shape) != 1 else shape, vals)
        elif 0 <= count <= 4096:
            arr = np.array([r.uniform(-1, 1) for _ in range(count)], np.float32).reshape(shape)
            t = onnx.numpy_helper.from_array(arr, name)
        else:  # a huge or negative shape with (almost) no data: the dims lie
            t = helper.make_tensor(name, TensorProto.FLOAT, [0], [])
            del t.dims[:]
            t.dims.extend(int(d) for d in shape)
            t.raw_data = b"\0" * r.choice((0, 4, 16))
        if self.evil(0.5):
            self.corrupt(t)
        return t

    def corrupt(self, t: onnx.TensorProto) -> None:
        r = self.r
        choice = r.randrange(6)
        if choice == 0:
            t.data_type = r.choice(ELEM_TYPES)
        elif choice == 1:
            t.dims.append(r.choice(HOSTILE))
        elif choice == 2:
            t.raw_data = t.raw_data[: len(t.raw_data) // 2] + b"\x01"
        elif choice == 3:  # external data: must never read a file
            t.data_location = TensorProto.EXTERNAL
            entry = t.external_data.add()
            entry.key, entry.value = "location", r.choice(["/etc/passwd", "../../etc/hostname", "w.bin"])
            t.ClearField("raw_data")
        elif choice == 4:
            t.ClearField("raw_data")
            t.float_data.extend([1.0, 2.0])
        else:
            t.segment.begin, t.segment.end = 0, r.choice(HOSTILE)

    def const(self, shape: tuple[int, ...], kind: str = "float") -> str:
        name = self.name("c")
        t = self.tensor(name, shape, kind)
        if self.r.random() < 0.25:  # a Constant node instead of an initializer
            self.nodes.append(helper.make_node("Constant", [], [name], value=t, name=self.name("k")))
        else:
            self.inits.append(t)
        self.shapes[name] = shape
        self.names.append(name)
        return name

    def graph_input(self) -> str:
        name = self.name("in")
        shape = self.shape()
        dims: list[Any] = list(shape)
        if self.evil():
            dims = [self.r.choice([d, "N", None, -1]) for d in dims]
        elem = self.r.choice(ELEM_TYPES) if self.evil() else TensorProto.FLOAT
        vi = helper.make_tensor_value_info(name, elem, None if self.evil(0.3) else dims)
        self.inputs.append(vi)
        self.shapes[name] = shape
        self.runtime.append(name)
        self.names.append(name)
        return name

    def data(self) -> str:
        r = self.r
        if not self.runtime or r.random() < 0.1:
            return self.graph_input()
        if self.evil():
            return r.choice([*self.names, "missing"])
        return self.runtime[-1] if r.random() < 0.7 else r.choice(self.runtime)

    # -- attributes ------------------------------------------------------------------------------------------------
    def attr(self, kind: str, x_rank: int) -> Any:
        r, evil = self.r, self.evil()
        if kind == "int":
            return r.choice(HOSTILE) if evil else r.randint(1, 3)
        if kind in ("ints2", "ints4"):
            n = int(kind[-1])
            if evil:
                n = r.choice((0, 1, 3, 5, 8))
            return [r.choice(HOSTILE) if self.evil() else r.randint(0 if n == 4 else 1, 3) for _ in range(n)]
        if kind == "intsn":
            n = x_rank if not evil else r.randint(0, 10)
            vals = list(range(n))
            r.shuffle(vals)
            return [v if not self.evil() else r.choice(HOSTILE) for v in vals]
        if kind == "float":
            return r.choice(FLOAT_HOSTILE) if evil else r.uniform(0, 1)
        if kind == "floats":
            return [r.choice(FLOAT_HOSTILE) if self.evil() else r.choice((1.0, 2.0)) for _ in range(x_rank)]
        if kind == "bool":
            return r.choice(HOSTILE) if evil else r.randint(0, 1)
        if kind.startswith("str:"):
            return r.choice(kind[4:].split(",")) if not evil else r.choice(["", "\x00", "x" * 1000])
        if kind == "axis":
            return r.choice(HOSTILE) if evil else r.randint(-max(x_rank, 1), max(x_rank - 1, 0))
        if kind == "axes":
            k = r.randint(0, max(x_rank, 1))
            return [r.choice(HOSTILE) if self.evil() else r.randint(-x_rank, max(x_rank - 1, 0)) for _ in range(k)]
        if kind == "tensor":
            return self.tensor("v", (1,))
        return helper.make_graph([], "body", [], [])  # a sub-graph: control flow is refused

    # -- nodes -----------------------------------------------------------------------------------------------------
    def node(self) -> None:
        r = self.r
        op = r.choice(list(OPS))
        slots, attrs = OPS[op]
        x = self.data()
        xs = self.shapes.get(x, (1, 3, 4, 4))
        ins: list[str] = []
        for k, slot in enumerate(slots):
            base = slot.rstrip("?*")
            if slot.endswith("?") and r.random() < 0.4:
                if r.random() < 0.5:
                    break
                ins.append("")  # an omitted optional input in the middle
                continue
            reps = r.choice((1, 1, 2, 3, 200 if self.evil() else 1)) if slot.endswith("*") else 1
            for _ in range(reps):
                ins.append(x if k == 0 else self.slot(base, xs, x))
        node_attrs = {a: self.attr(kind, len(xs)) for a, kind in attrs.items() if r.random() < 0.5 or self.evil(3)}
        n_out = 1 if op != "Split" else r.choice((1, 2, 3))
        outs = [self.name("y") for _ in range(n_out)]
        if self.evil(0.5) and self.names:
            outs[0] = r.choice(self.names)  # a second writer of an existing name
        try:
            node = helper.make_node(op, ins, outs, name=self.name(op), **node_attrs)
        except (ValueError, TypeError):  # helper refuses the attribute's Python type: drop the attributes
            node = helper.make_node(op, ins, outs, name=self.name(op))
        if self.evil(0.2):
            node.domain = r.choice(["com.microsoft", "ai.onnx.ml", "custom"])
        self.nodes.append(node)
        for o in outs:
            self.shapes[o] = xs  # a guess; the importer knows better
            self.runtime.append(o)
            self.names.append(o)

    def slot(self, kind: str, xs: tuple[int, ...], x: str) -> str:
        r = self.r
        c = xs[1] if len(xs) > 1 else 1
        if kind == "x":
            if r.random() < 0.5:
                return self.data()
            return self.const(xs if r.random() < 0.5 else xs[r.randint(0, len(xs)):])
        if kind == "w":
            k = self.r.choice((1, 3))
            return self.const((self.dim(), max(c, 0), k, k) if len(xs) == 4 else (self.dim(), xs[-1] if xs else 1))
        if kind == "c":
            return self.const((c,) if not self.evil() else self.shape())
        if kind == "s":
            return self.const(() if not self.evil() else self.shape())
        n = len(xs) if not self.evil() else r.choice((0, 1, 9))
        return self.const((n,), "int")

    def model(self) -> bytes:
        r = self.r
        for _ in range(r.choice((1, 1, 2, 3, 5, 8))):
            self.node()
        outs = [self.runtime[-1]] if self.runtime else ["nothing"]
        if self.evil():
            outs.append(r.choice([*self.names, "nothing"]))
        outputs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs]
        graph = helper.make_graph(self.nodes, self.name("g"), self.inputs, outputs, self.inits)
        opset = r.choice((13, 13, 17, 11, 21)) if not self.evil() else r.choice((1, 6, 7, 9, 10, 22, 30, 10**6))
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="wasmrt-fuzz")
        if self.evil(0.3):
            m.opset_import.add(domain="com.microsoft", version=1)
        if self.evil(0.3):
            p = m.metadata_props.add()
            p.key, p.value = r.choice([("wasmrt.labels", "[1, 2"), ("wasmrt.preprocess.in1", '{"mean": 3}'),
                                       ("wasmrt.labels", '"x"'), ("wasmrt.preprocess.x", "[]")])
        m.ir_version = r.choice((8, 9, 3, 0, 99)) if self.evil() else 8
        return m.SerializeToString()


def generate(seed: int, hostile: float = 0.08) -> bytes:
    return OnnxGen(random.Random(seed), hostile).model()


def mutate(data: bytes, rng: random.Random) -> bytes:
    """A structural change to a serialized model: one attribute, initializer dim or node input replaced."""
    try:
        m = onnx.load_from_string(data)
    except Exception:  # a model the mutator cannot parse is mutated as bytes
        b = bytearray(data)
        if b:
            b[rng.randrange(len(b))] = rng.randrange(256)
        return bytes(b)
    g = m.graph
    choice = rng.randrange(4)
    if choice == 0 and g.node:
        node = rng.choice(g.node)
        if node.attribute:
            a = rng.choice(node.attribute)
            if a.ints:
                a.ints[rng.randrange(len(a.ints))] = rng.choice(HOSTILE)
            elif a.type == onnx.AttributeProto.INT:
                a.i = rng.choice(HOSTILE)
            elif a.type == onnx.AttributeProto.FLOAT:
                a.f = rng.choice(FLOAT_HOSTILE)
    elif choice == 1 and g.initializer:
        t = rng.choice(g.initializer)
        if t.dims:
            t.dims[rng.randrange(len(t.dims))] = rng.choice(HOSTILE)
    elif choice == 2 and g.node:
        node = rng.choice(g.node)
        if node.input:
            names = [i.name for i in g.input] + [t.name for t in g.initializer] + [o for n in g.node for o in n.output]
            node.input[rng.randrange(len(node.input))] = rng.choice(names or ["x"])
    elif g.input:
        dims = g.input[0].type.tensor_type.shape.dim
        if dims:
            dims[rng.randrange(len(dims))].dim_value = rng.choice(HOSTILE) & (2**63 - 1)
    return m.SerializeToString()
