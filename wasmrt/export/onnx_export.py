"""Graph IR -> ONNX, so onnxruntime and onnxruntime-web run our exact graph (TFLite-sourced models included).

The IR keeps 4-D activations NHWC; ONNX's spatial ops want NCHW. Each IR tensor can therefore exist in two ONNX
forms: "logical" (as the IR holds it, named like the IR tensor) and "nchw" (a 4-D NHWC tensor transposed to NCHW).
Forms are made on demand with a Transpose and cached.

layout="nchw" (default) keeps activations NCHW between ops (element-wise ops, pads, concats, reductions and
transposes follow the layout), which is how an ONNX model from PyTorch looks and what onnxruntime is tuned for.
layout="nhwc" converts every spatial op's output back at once: the "NHWC with transposes" form a naive TFLite -> ONNX
conversion gives, useful to measure what layout costs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from python_ref.opdefs import CoordMode, DepthToSpaceMode, NearestMode, PadMode, ResizeMode
from wasmrt.compile.ir import Graph, Node
from wasmrt.compile.passes import split_residual_adds
from wasmrt.export.common import INF, ExportError, clamp_of

OPSET = 17
TO_NCHW = (0, 3, 1, 2)  # nchw axis k holds NHWC axis TO_NCHW[k]
TO_NHWC = (0, 2, 3, 1)  # NHWC axis j sits at nchw axis TO_NHWC[j]
_DTYPES = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int32): TensorProto.INT32,
           np.dtype(np.int64): TensorProto.INT64, np.dtype(np.uint8): TensorProto.UINT8,
           np.dtype(np.int8): TensorProto.INT8, np.dtype(np.bool_): TensorProto.BOOL}
_BINARY = {"ADD": "Add", "SUB": "Sub", "MUL": "Mul", "DIV": "Div", "MAXIMUM": "Max", "MINIMUM": "Min",
           "POW": "Pow", "PRELU": "PRelu"}
_UNARY = {"RELU": "Relu", "HARD_SWISH": "HardSwish", "SIGMOID": "Sigmoid", "TANH": "Tanh", "EXP": "Exp",
          "SQRT": "Sqrt", "ABS": "Abs", "NEG": "Neg", "LEAKY_RELU": "LeakyRelu", "HARD_SIGMOID": "HardSigmoid"}
_COORD = {CoordMode.HALF_PIXEL: "half_pixel", CoordMode.ALIGN_CORNERS: "align_corners",
          CoordMode.ASYMMETRIC: "asymmetric", CoordMode.PYTORCH_HALF_PIXEL: "pytorch_half_pixel",
          CoordMode.TF_HALF_PIXEL_FOR_NN: "tf_half_pixel_for_nn"}
_NEAREST = {NearestMode.ROUND_PREFER_FLOOR: "round_prefer_floor", NearestMode.ROUND_PREFER_CEIL: "round_prefer_ceil",
            NearestMode.FLOOR: "floor", NearestMode.CEIL: "ceil"}
_INT64_MIN = np.iinfo(np.int64).min


class _Writer:
    def __init__(self, graph: Graph, layout: str) -> None:
        if layout not in ("nchw", "nhwc"):
            raise ValueError(f"layout must be 'nchw' or 'nhwc', not {layout!r}")
        self.g, self.layout = graph, layout
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.logical: dict[str, str] = {n: n for n in graph.inputs}
        self.nchw_form: dict[str, str] = {}
        self.count = 0

    # -- names and forms ------------------------------------------------------------------------------------------
    def fresh(self, base: str) -> str:
        self.count += 1
        return f"{base}__{self.count}"

    def init(self, base: str, value: np.ndarray) -> str:
        name = self.fresh(base)
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def add(self, op: str, inputs: list[str], output: str | None = None, **attrs: object) -> str:
        out = output or self.fresh(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], name=self.fresh(op), **attrs))
        return out

    def rank(self, name: str) -> int:
        return len(self.g.tensors[name].shape)

    def has_nchw(self, name: str) -> bool:
        return name in self.nchw_form or (self.g.const(name) is not None and self.rank(name) == 4)

    def nhwc(self, name: str) -> str:
        """The ONNX name holding IR tensor `name` as the IR holds it."""
        if name in self.logical:
            return self.logical[name]
        c = self.g.const(name)
        if c is not None:
            self.logical[name] = self.init(name, c)
        else:
            self.logical[name] = self.add("Transpose", [self.nchw_form[name]], name, perm=list(TO_NHWC))
        return self.logical[name]

    def nchw(self, name: str) -> str:
        """The ONNX name holding 4-D IR tensor `name` transposed to NCHW."""
        if name not in self.nchw_form:
            c = self.g.const(name)
            if c is not None:
                self.nchw_form[name] = self.init(name + "_nchw", c.transpose(TO_NCHW))
            else:
                self.nchw_form[name] = self.add("Transpose", [self.nhwc(name)], self.fresh(name + "_nchw"),
                                                perm=list(TO_NCHW))
        return self.nchw_form[name]

    def operand_nchw(self, name: str, out_rank: int) -> str:
        """A (possibly lower-rank, broadcasting) operand of a 4-D NCHW op, in NCHW."""
        c = self.g.const(name)
        if c is not None and c.ndim < 4:
            return self.init(name + "_nchw", c.reshape((1,) * (4 - c.ndim) + c.shape).transpose(TO_NCHW))
        return self.nchw(name)

    def produced(self, ir_name: str, onnx_name: str, nchw: bool) -> None:
        if nchw:
            self.nchw_form[ir_name] = onnx_name
            if self.layout == "nhwc":
                self.nhwc(ir_name)
        else:
            self.logical[ir_name] = onnx_name

    def out_name(self, ir_name: str, nchw: bool) -> str:
        return self.fresh(ir_name + "_nchw") if nchw else ir_name

    def with_clamp(self, n: Node, op: str, inputs: list[str], nchw: bool, **attrs: object) -> None:
        """Emit op, then the node's fused clamp (Relu or Clip, which onnxruntime fuses back into convs)."""
        lo, hi = clamp_of(n)
        out = n.outputs[0]
        if (lo, hi) == (-INF, INF):
            self.produced(out, self.add(op, inputs, self.out_name(out, nchw), **attrs), nchw)
            return
        raw = self.add(op, inputs, **attrs)
        self.produced(out, self.clamp(raw, lo, hi, self.out_name(out, nchw)), nchw)

    def clamp(self, x: str, lo: float, hi: float, out: str) -> str:
        if (lo, hi) == (0.0, INF):
            return self.add("Relu", [x], out)
        big = float(np.finfo(np.float32).max)
        bounds = [self.init("clip_min", np.float32(max(lo, -big))), self.init("clip_max", np.float32(min(hi, big)))]
        return self.add("Clip", [x, *bounds], out)

    def in_nchw(self, n: Node, names: list[str]) -> bool:
        """Whether an element-wise style op should run in NCHW: 4-D output and its 4-D inputs already are."""
        if self.layout != "nchw" or self.rank(n.outputs[0]) != 4:
            return False
        live = [i for i in names if i and self.g.const(i) is None]
        return bool(live) and all(self.rank(i) == 4 and i in self.nchw_form for i in live)

    # -- ops ------------------------------------------------------------------------------------------------------
    def node(self, n: Node) -> None:
        handler = getattr(self, "op_" + n.op.lower(), None)
        if handler is None:
            raise ExportError(f"ONNX export: op {n.op} (node {n.name!r}) is not supported")
        handler(n)

    def _bias(self, n: Node) -> list[str]:
        return [self.nhwc(n.inputs[2])] if len(n.inputs) > 2 and n.inputs[2] else []

    def op_conv_2d(self, n: Node) -> None:
        a = n.attrs
        w = self.g.const(n.inputs[1])
        if w is None:
            raise ExportError(f"ONNX export: conv {n.name!r} has non-constant weights")
        wt = self.init(n.inputs[1] + "_oihw", w.transpose(0, 3, 1, 2))
        self.with_clamp(n, "Conv", [self.nchw(n.inputs[0]), wt, *self._bias(n)], True,
                        kernel_shape=list(w.shape[1:3]), strides=list(a["strides"]), dilations=list(a["dilations"]),
                        pads=list(a["pads"]), group=int(a["groups"]))

    def op_conv_transpose_2d(self, n: Node) -> None:
        a = n.attrs
        w = self.g.const(n.inputs[1])
        if w is None:
            raise ExportError(f"ONNX export: transposed conv {n.name!r} has non-constant weights")
        g = int(a["groups"])
        cout, kh, kw, cg = w.shape
        # IR [g*Og, KH, KW, Cg] -> ONNX [g*Cg, Og, KH, KW]
        wt = w.reshape(g, cout // g, kh, kw, cg).transpose(0, 4, 1, 2, 3).reshape(g * cg, cout // g, kh, kw)
        self.with_clamp(n, "ConvTranspose", [self.nchw(n.inputs[0]), self.init(n.inputs[1] + "_t", wt),
                                             *self._bias(n)], True,
                        kernel_shape=[kh, kw], strides=list(a["strides"]), dilations=list(a["dilations"]),
                        pads=list(a["pads"]), group=g, output_padding=list(a["output_padding"]))

    def op_fully_connected(self, n: Node) -> None:
        x = self.nhwc(n.inputs[0])
        w = self.g.const(n.inputs[1])
        if self.rank(n.inputs[0]) == 2:
            ins = [x, self.nhwc(n.inputs[1]), *self._bias(n)]
            self.with_clamp(n, "Gemm", ins, False, transB=1)
            return
        wt = self.init(n.inputs[1] + "_t", w.T) if w is not None else \
            self.add("Transpose", [self.nhwc(n.inputs[1])], perm=[1, 0])
        if not self._bias(n):
            self.with_clamp(n, "MatMul", [x, wt], False)
            return
        self.with_clamp(n, "Add", [self.add("MatMul", [x, wt]), *self._bias(n)], False)

    def op_matmul(self, n: Node) -> None:
        self.produced(n.outputs[0], self.add("MatMul", [self.nhwc(i) for i in n.inputs], n.outputs[0]), False)

    def _binary(self, n: Node) -> None:
        op = _BINARY[n.op]
        nchw = self.in_nchw(n, n.inputs)
        ins = [self.operand_nchw(i, 4) for i in n.inputs] if nchw else [self.nhwc(i) for i in n.inputs]
        self.with_clamp(n, op, ins, nchw)

    op_add = op_sub = op_mul = op_div = op_maximum = op_minimum = op_pow = op_prelu = _binary

    def _unary(self, n: Node) -> None:
        nchw = self.in_nchw(n, n.inputs)
        x = self.nchw(n.inputs[0]) if nchw else self.nhwc(n.inputs[0])
        attrs = {k: float(v) for k, v in n.attrs.items() if k in ("alpha", "beta")}
        self.produced(n.outputs[0], self.add(_UNARY[n.op], [x], self.out_name(n.outputs[0], nchw), **attrs), nchw)

    op_relu = op_hard_swish = op_sigmoid = op_tanh = op_exp = op_sqrt = op_abs = op_neg = _unary
    op_leaky_relu = op_hard_sigmoid = _unary

    def op_clip(self, n: Node) -> None:
        nchw = self.in_nchw(n, n.inputs)
        x = self.nchw(n.inputs[0]) if nchw else self.nhwc(n.inputs[0])
        lo, hi = clamp_of(n)
        self.produced(n.outputs[0], self.clamp(x, lo, hi, self.out_name(n.outputs[0], nchw)), nchw)

    def _pool(self, n: Node) -> None:
        a = n.attrs
        attrs: dict[str, object] = {"kernel_shape": list(a["kernel"]), "strides": list(a["strides"]),
                                    "pads": list(a["pads"]), "ceil_mode": int(a["ceil_mode"])}
        if tuple(a["dilations"]) != (1, 1):
            if n.op == "AVERAGE_POOL_2D":
                raise ExportError(f"ONNX export: dilated average pool {n.name!r} needs opset 19")
            attrs["dilations"] = list(a["dilations"])
        if n.op == "AVERAGE_POOL_2D":
            attrs["count_include_pad"] = int(a["count_include_pad"])
        op = "MaxPool" if n.op == "MAX_POOL_2D" else "AveragePool"
        self.with_clamp(n, op, [self.nchw(n.inputs[0])], True, **attrs)

    op_max_pool_2d = op_average_pool_2d = _pool

    def _reduce(self, n: Node) -> None:
        rank = self.rank(n.inputs[0])
        axes = sorted(int(x) % rank for x in n.attrs["axes"]) or list(range(rank))
        keep = bool(n.attrs["keepdims"])
        nchw = self.layout == "nchw" and rank == 4 and n.inputs[0] in self.nchw_form
        if nchw and not keep:  # the kept axes must stay in the same order in both layouts
            kept = [ax for ax in range(4) if ax not in axes]
            nchw = [TO_NHWC[ax] for ax in kept] == sorted(TO_NHWC[ax] for ax in kept)
        if nchw:
            x, axes, out_nchw = self.nchw(n.inputs[0]), sorted(TO_NHWC[ax] for ax in axes), keep
        else:
            x, out_nchw = self.nhwc(n.inputs[0]), False
        op = {"MEAN": "ReduceMean", "REDUCE_MAX": "ReduceMax", "REDUCE_SUM": "ReduceSum"}[n.op]
        out = self.out_name(n.outputs[0], out_nchw)
        if op == "ReduceSum":  # axes became an input in opset 13
            self.add(op, [x, self.init("axes", np.array(axes, np.int64))], out, keepdims=int(keep))
        else:
            self.add(op, [x], out, axes=axes, keepdims=int(keep))
        self.produced(n.outputs[0], out, out_nchw)

    op_mean = op_reduce_max = op_reduce_sum = _reduce

    def op_softmax(self, n: Node) -> None:
        rank = self.rank(n.inputs[0])
        axis = int(n.attrs["axis"]) % rank
        nchw = self.in_nchw(n, n.inputs)
        x = self.nchw(n.inputs[0]) if nchw else self.nhwc(n.inputs[0])
        out = self.add("Softmax", [x], self.out_name(n.outputs[0], nchw), axis=TO_NHWC[axis] if nchw else axis)
        self.produced(n.outputs[0], out, nchw)

    def op_reshape(self, n: Node) -> None:
        shape = self.init("shape", np.array(self.g.tensors[n.outputs[0]].shape, np.int64))
        self.produced(n.outputs[0], self.add("Reshape", [self.nhwc(n.inputs[0]), shape], n.outputs[0]), False)

    def op_transpose(self, n: Node) -> None:
        src = n.inputs[0]
        rank = self.rank(src)
        perm = [int(p) for p in n.attrs["perm"]] or list(range(rank))[::-1]
        if self.layout != "nchw" or rank != 4:
            self.produced(n.outputs[0], self.add("Transpose", [self.nhwc(src)], n.outputs[0], perm=perm), False)
            return
        # Produce the output in NCHW: y_nchw[k] = y[TO_NCHW[k]] = x[perm[TO_NCHW[k]]]
        if src in self.nchw_form:
            p, x = [TO_NHWC[perm[TO_NCHW[k]]] for k in range(4)], self.nchw_form[src]
        else:
            p, x = [perm[TO_NCHW[k]] for k in range(4)], self.nhwc(src)
        if p == [0, 1, 2, 3]:  # e.g. the NCHW -> NHWC transpose at the input of a PyTorch model vanishes
            self.nchw_form[n.outputs[0]] = x
            return
        self.produced(n.outputs[0], self.add("Transpose", [x], self.out_name(n.outputs[0], True), perm=p), True)

    def op_concatenation(self, n: Node) -> None:
        axis = int(n.attrs["axis"])
        nchw = self.in_nchw(n, n.inputs)
        ins = [self.nchw(i) for i in n.inputs] if nchw else [self.nhwc(i) for i in n.inputs]
        self.with_clamp(n, "Concat", ins, nchw, axis=TO_NHWC[axis] if nchw else axis)

    def op_slice(self, n: Node) -> None:
        a = n.attrs
        rank = self.rank(n.inputs[0])
        nchw = self.in_nchw(n, n.inputs[:1])
        starts = [int(s) for s in a["starts"]]
        steps = [int(s) for s in a["steps"]]
        # a negative step ending at -1 runs through index 0: ONNX says so with an end below -dim
        ends = [_INT64_MIN if s < 0 and e == -1 else int(e) for e, s in zip(a["ends"], steps, strict=True)]
        axes = [TO_NHWC[ax] for ax in range(rank)] if nchw else list(range(rank))
        x = self.nchw(n.inputs[0]) if nchw else self.nhwc(n.inputs[0])
        ins = [x] + [self.init(k, np.array(v, np.int64)) for k, v in
                     (("starts", starts), ("ends", ends), ("axes", axes), ("steps", steps))]
        self.produced(n.outputs[0], self.add("Slice", ins, self.out_name(n.outputs[0], nchw)), nchw)

    def op_pad(self, n: Node) -> None:
        a = n.attrs
        rank = self.rank(n.inputs[0])
        p = [int(v) for v in a["pads"]]
        nchw = self.in_nchw(n, n.inputs[:1])
        order = list(TO_NCHW) if nchw else list(range(rank))
        pads = [p[ax] for ax in order] + [p[ax + rank] for ax in order]
        x = self.nchw(n.inputs[0]) if nchw else self.nhwc(n.inputs[0])
        mode = {PadMode.CONSTANT: "constant", PadMode.REFLECT: "reflect", PadMode.EDGE: "edge"}[PadMode(int(a["mode"]))]
        ins = [x, self.init("pads", np.array(pads, np.int64))]
        if mode == "constant":
            ins.append(self.init("value", np.asarray(a["value"], self.g.tensors[n.inputs[0]].dtype)))
        self.produced(n.outputs[0], self.add("Pad", ins, self.out_name(n.outputs[0], nchw), mode=mode), nchw)

    def op_resize(self, n: Node) -> None:
        a = n.attrs
        xs, ys = self.g.tensors[n.inputs[0]].shape, self.g.tensors[n.outputs[0]].shape
        mode = "linear" if ResizeMode(int(a["mode"])) == ResizeMode.BILINEAR else "nearest"
        attrs: dict[str, object] = {"mode": mode, "coordinate_transformation_mode": _COORD[CoordMode(int(a["coord"]))]}
        if mode == "nearest":
            attrs["nearest_mode"] = _NEAREST[NearestMode(int(a["nearest"]))]
        sh, sw = (float(s) for s in a["scales"])
        empty = ""
        if sh and sw:  # the scales define the coordinate map; the size follows from them
            if (int(xs[1] * sh), int(xs[2] * sw)) != ys[1:3]:
                raise ExportError(f"ONNX export: resize {n.name!r}: scales and size disagree")
            ins = [empty, self.init("scales", np.array([1, 1, sh, sw], np.float32))]
        else:
            ins = [empty, empty, self.init("sizes", np.array([ys[0], ys[3], ys[1], ys[2]], np.int64))]
        self.with_clamp(n, "Resize", [self.nchw(n.inputs[0]), *ins], True, **attrs)

    def op_depth_to_space(self, n: Node) -> None:
        mode = "DCR" if DepthToSpaceMode(int(n.attrs["mode"])) == DepthToSpaceMode.DCR else "CRD"
        self.with_clamp(n, "DepthToSpace", [self.nchw(n.inputs[0])], True, blocksize=int(n.attrs["block"]),
                        mode=mode)

    def op_gather(self, n: Node) -> None:
        out = self.add("Gather", [self.nhwc(i) for i in n.inputs], n.outputs[0], axis=int(n.attrs["axis"]))
        self.produced(n.outputs[0], out, False)

    # -- the model ------------------------------------------------------------------------------------------------
    def model(self) -> onnx.ModelProto:
        for n in self.g.nodes:
            self.node(n)
        for o in self.g.outputs:
            if self.nhwc(o) != o:  # an output that is also an input or an alias: give it its own name
                self.add("Identity", [self.nhwc(o)], o)

        def info(name: str) -> onnx.ValueInfoProto:
            t = self.g.tensors[name]
            return helper.make_tensor_value_info(name, _DTYPES[t.dtype], list(t.shape))

        graph = helper.make_graph(self.nodes, "wasmrt_export", [info(i) for i in self.g.inputs],
                                  [info(o) for o in self.g.outputs], self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="wasmrt")
        model.ir_version = 8  # readable by onnxruntime(-web) releases of the last years
        return model


def export_onnx(graph: Graph, path: str | Path | None = None, layout: str = "nchw") -> bytes:
    """The graph as ONNX bytes (also written to path when given); layout 'nchw' or 'nhwc' (see the module doc)."""
    model = _Writer(split_residual_adds(graph), layout).model()
    onnx.checker.check_model(model)
    data = model.SerializeToString()
    if path is not None:
        Path(path).write_bytes(data)
    return data
