"""Graph IR -> TF.js graph model (model.json with a GraphDef-as-JSON topology + one weights .bin).

TF.js executes TensorFlow ops by name, NHWC like the IR. Convolutions become the fused ops TensorFlow's grappler
makes (_FusedConv2D / FusedDepthwiseConv2dNative with BiasAdd and Relu/Relu6), which the wasm backend runs as one
XNNPACK operator; a fully-connected layer becomes _FusedMatMul. Explicit pads are SAME, VALID or EXPLICIT
(convolutions) or a Pad op (pools, whose TF.js version has no explicit padding).

TF node names cannot contain ':' (it selects an output), so tensors get sanitized names; model.json's
userDefinedMetadata.wasmrt maps the IR's input and output names to the node names.
"""

from __future__ import annotations

import base64
import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from python_ref.opdefs import CoordMode, DepthToSpaceMode, NearestMode, PadMode, ResizeMode
from wasmrt.compile.ir import Graph, Node
from wasmrt.compile.passes import split_residual_adds
from wasmrt.export.common import INF, ExportError, clamp_of, is_depthwise, window_padding

_DT = {np.dtype(np.float32): "DT_FLOAT", np.dtype(np.int32): "DT_INT32", np.dtype(np.bool_): "DT_BOOL"}
_MANIFEST_DT = {"DT_FLOAT": "float32", "DT_INT32": "int32", "DT_BOOL": "bool"}
_BINARY = {"ADD": "AddV2", "SUB": "Sub", "MUL": "Mul", "DIV": "RealDiv", "MAXIMUM": "Maximum", "MINIMUM": "Minimum",
           "POW": "Pow", "PRELU": "Prelu"}
_UNARY = {"RELU": "Relu", "SIGMOID": "Sigmoid", "TANH": "Tanh", "EXP": "Exp", "SQRT": "Sqrt", "ABS": "Abs",
          "NEG": "Neg"}
_FUSABLE = {(0.0, INF): "Relu", (0.0, 6.0): "Relu6"}
_F32_MAX = float(np.finfo(np.float32).max)


# -- AttrValue JSON (the protobuf JSON mapping TF.js reads) --------------------------------------------------------
def _s(text: str) -> dict[str, Any]:
    return {"s": base64.b64encode(text.encode()).decode()}


def _ints(values: Any) -> dict[str, Any]:
    return {"list": {"i": [str(int(v)) for v in values]}}


def _strs(values: list[str]) -> dict[str, Any]:
    return {"list": {"s": [_s(v)["s"] for v in values]}}


def _shape(shape: tuple[int, ...]) -> dict[str, Any]:
    return {"dim": [{"size": str(int(d))} for d in shape]}


_T = {"T": {"type": "DT_FLOAT"}}


class _Writer:
    def __init__(self, graph: Graph) -> None:
        self.g = graph
        self.nodes: list[dict[str, Any]] = []
        self.weights: list[tuple[str, np.ndarray]] = []
        self.names: dict[str, str] = {}  # IR tensor -> node name
        self.used: set[str] = set()

    def fresh(self, base: str) -> str:
        name = re.sub(r"[^A-Za-z0-9_.\-/]", "_", base) or "t"
        if name[0] in "_./-":  # TF node names start with a letter or digit
            name = "t" + name
        k, cand = 0, name
        while cand in self.used:
            k += 1
            cand = f"{name}_{k}"
        self.used.add(cand)
        return cand

    def add(self, op: str, inputs: list[str], name: str, attr: dict[str, Any] | None = None) -> str:
        self.nodes.append({"name": name, "op": op, "input": inputs, "attr": attr or {}})
        return name

    def const(self, base: str, value: Any, dtype: Any = np.float32) -> str:
        arr = np.ascontiguousarray(np.asarray(value, dtype=dtype))
        if arr.dtype == np.int64:
            arr = arr.astype(np.int32)
        name = self.fresh(base)
        dt = _DT[arr.dtype]
        self.weights.append((name, arr))
        return self.add("Const", [], name, {"value": {"tensor": {"dtype": dt, "tensorShape": _shape(arr.shape)}},
                                            "dtype": {"type": dt}})

    def ref(self, name: str) -> str:
        if name not in self.names:
            c = self.g.const(name)
            if c is None:
                raise ExportError(f"TF.js export: tensor {name!r} is read before it is produced")
            self.names[name] = self.const(name, c, c.dtype)
        return self.names[name]

    def out(self, ir_name: str) -> str:
        self.names[ir_name] = self.fresh(ir_name)
        return self.names[ir_name]

    def shape(self, name: str) -> tuple[int, ...]:
        return self.g.tensors[name].shape

    # -- clamps -------------------------------------------------------------------------------------------------
    def clamp(self, x: str, lo: float, hi: float, name: str) -> str:
        if (lo, hi) in _FUSABLE:
            return self.add(_FUSABLE[(lo, hi)], [x], name, dict(_T))
        bounds = [self.const(name + "_min", max(lo, -_F32_MAX)), self.const(name + "_max", min(hi, _F32_MAX))]
        return self.add("ClipByValue", [x, *bounds], name, dict(_T))

    def then_clamp(self, n: Node, emit: Any) -> None:
        """emit(name) writes the op; the node's clamp, if any, follows as its own op."""
        lo, hi = clamp_of(n)
        if (lo, hi) == (-INF, INF):
            emit(self.out(n.outputs[0]))
            return
        raw = emit(self.fresh(n.name + "_raw"))
        self.clamp(raw, lo, hi, self.out(n.outputs[0]))

    # -- ops ----------------------------------------------------------------------------------------------------
    def node(self, n: Node) -> None:
        handler = getattr(self, "op_" + n.op.lower(), None)
        if handler is None:
            raise ExportError(f"TF.js export: op {n.op} (node {n.name!r}) is not supported")
        handler(n)

    def _bias(self, n: Node, channels: int) -> str:
        if len(n.inputs) > 2 and n.inputs[2]:
            return self.ref(n.inputs[2])
        return self.const(n.name + "_bias", np.zeros(channels, np.float32))

    def op_conv_2d(self, n: Node) -> None:
        a = n.attrs
        w = self.g.const(n.inputs[1])
        if w is None:
            raise ExportError(f"TF.js export: conv {n.name!r} has non-constant weights")
        cout, kh, kw, _ = w.shape
        depthwise = is_depthwise(self.g, n)
        if a["groups"] != 1 and not depthwise:
            raise ExportError(f"TF.js export: grouped conv {n.name!r} (groups {a['groups']}) has no TF.js op")
        sp = window_padding(self.shape(n.inputs[0])[1:3], self.shape(n.outputs[0])[1:3], (kh, kw),
                            tuple(a["strides"]), tuple(a["dilations"]), tuple(a["pads"]))
        attr: dict[str, Any] = {
            **_T, "strides": _ints([1, *a["strides"], 1]), "dilations": _ints([1, *a["dilations"], 1]),
            "data_format": _s("NHWC"), "num_args": {"i": "1"},
            "padding": _s("EXPLICIT" if sp.extra else sp.padding),
        }
        if sp.extra:
            pt, pl, pb, pr = sp.extra
            attr["explicit_paddings"] = _ints([0, 0, pt, pb, pl, pr, 0, 0])
        lo, hi = clamp_of(n)
        fused = _FUSABLE.get((lo, hi))
        attr["fused_ops"] = _strs(["BiasAdd", fused] if fused else ["BiasAdd"])
        if depthwise:
            cin = self.shape(n.inputs[0])[3]
            filt = w.reshape(cin, cout // cin, kh, kw).transpose(2, 3, 0, 1)  # [KH, KW, Cin, multiplier]
            op = "FusedDepthwiseConv2dNative"
        else:
            filt = w.transpose(1, 2, 3, 0)  # OHWI -> HWIO
            op = "_FusedConv2D"
        ins = [self.ref(n.inputs[0]), self.const(n.inputs[1] + "_tf", filt), self._bias(n, cout)]
        if fused or (lo, hi) == (-INF, INF):
            self.add(op, ins, self.out(n.outputs[0]), attr)
        else:
            raw = self.add(op, ins, self.fresh(n.name + "_raw"), attr)
            self.clamp(raw, lo, hi, self.out(n.outputs[0]))

    def op_conv_transpose_2d(self, n: Node) -> None:
        a = n.attrs
        w = self.g.const(n.inputs[1])
        if a["groups"] != 1 or tuple(a["dilations"]) != (1, 1) or w is None:
            raise ExportError(f"TF.js export: transposed conv {n.name!r} needs groups 1, dilation 1, const weights")
        xs, ys = self.shape(n.inputs[0]), self.shape(n.outputs[0])
        cout, kh, kw, _ = w.shape
        (sh, sw), (pt, pl, _, _) = a["strides"], a["pads"]
        full = (xs[0], (xs[1] - 1) * sh + kh, (xs[2] - 1) * sw + kw, cout)  # VALID output, cropped below
        if pt + ys[1] > full[1] or pl + ys[2] > full[2]:
            raise ExportError(f"TF.js export: transposed conv {n.name!r}: output_padding beyond the pads")
        raw = self.add("Conv2DBackpropInput",
                       [self.const(n.name + "_oshape", full, np.int32),
                        self.const(n.inputs[1] + "_tf", w.transpose(1, 2, 0, 3)), self.ref(n.inputs[0])],
                       self.fresh(n.name + "_full"),
                       {**_T, "strides": _ints([1, sh, sw, 1]), "padding": _s("VALID"), "data_format": _s("NHWC")})
        crop = self._strided_slice(n.name, raw, [0, pt, pl, 0], [ys[0], pt + ys[1], pl + ys[2], ys[3]],
                                   [1, 1, 1, 1], self.fresh(n.name + "_crop"))
        self.then_clamp(n, lambda name: self.add("AddV2", [crop, self._bias(n, cout)], name, dict(_T)))

    def op_fully_connected(self, n: Node) -> None:
        w = self.g.const(n.inputs[1])
        if w is None:
            raise ExportError(f"TF.js export: fully-connected {n.name!r} has non-constant weights")
        self._dense(n, w.T, self._bias(n, w.shape[0]))

    def op_matmul(self, n: Node) -> None:
        b = self.g.const(n.inputs[1])
        if b is not None and b.ndim == 2 and b.dtype == np.float32:
            self._dense(n, b, self.const(n.name + "_bias", np.zeros(b.shape[1], np.float32)))
            return
        ins = [self.ref(i) for i in n.inputs]
        self.add("BatchMatMulV2", ins, self.out(n.outputs[0]), {**_T, "adj_x": {"b": False}, "adj_y": {"b": False}})

    def _dense(self, n: Node, w_kn: np.ndarray, bias: str) -> None:
        """x [..., K] times w [K, N] plus bias, with the clamp fused when TF.js can."""
        xs, ys = self.shape(n.inputs[0]), self.shape(n.outputs[0])
        x = self.ref(n.inputs[0])
        if len(xs) != 2:
            x = self.add("Reshape", [x, self.const(n.name + "_flat", [-1, xs[-1]], np.int32)],
                         self.fresh(n.name + "_2d"), dict(_T))
        lo, hi = clamp_of(n)
        fused = _FUSABLE.get((lo, hi))
        attr = {**_T, "transpose_a": {"b": False}, "transpose_b": {"b": False}, "num_args": {"i": "1"},
                "fused_ops": _strs(["BiasAdd", fused] if fused else ["BiasAdd"])}
        last = len(xs) == 2 and (fused or (lo, hi) == (-INF, INF))
        y = self.add("_FusedMatMul", [x, self.const(n.name + "_w", w_kn), bias],
                     self.out(n.outputs[0]) if last else self.fresh(n.name + "_mm"), attr)
        if last:
            return
        if len(xs) != 2:
            if not fused and (lo, hi) != (-INF, INF):
                y = self.clamp(y, lo, hi, self.fresh(n.name + "_clamp"))
            self.add("Reshape", [y, self.const(n.name + "_shape", ys, np.int32)], self.out(n.outputs[0]), dict(_T))
        else:
            self.clamp(y, lo, hi, self.out(n.outputs[0]))

    def _binary(self, n: Node) -> None:
        ins = [self.ref(i) for i in n.inputs]
        self.then_clamp(n, lambda name: self.add(_BINARY[n.op], ins, name, dict(_T)))

    op_add = op_sub = op_mul = op_div = op_maximum = op_minimum = op_pow = op_prelu = _binary

    def _unary(self, n: Node) -> None:
        self.add(_UNARY[n.op], [self.ref(n.inputs[0])], self.out(n.outputs[0]), dict(_T))

    op_relu = op_sigmoid = op_tanh = op_exp = op_sqrt = op_abs = op_neg = _unary

    def op_clip(self, n: Node) -> None:
        lo, hi = clamp_of(n)
        self.clamp(self.ref(n.inputs[0]), lo, hi, self.out(n.outputs[0]))

    def op_leaky_relu(self, n: Node) -> None:
        self.add("LeakyRelu", [self.ref(n.inputs[0])], self.out(n.outputs[0]),
                 {**_T, "alpha": {"f": float(n.attrs["alpha"])}})

    def op_hard_swish(self, n: Node) -> None:
        # x * relu6(x + 3) / 6: TF.js has no hard-swish op
        x = self.ref(n.inputs[0])
        shifted = self.add("AddV2", [x, self.const(n.name + "_3", 3.0)], self.fresh(n.name + "_add"), dict(_T))
        gate = self.add("Relu6", [shifted], self.fresh(n.name + "_relu6"), dict(_T))
        scaled = self.add("Mul", [gate, self.const(n.name + "_sixth", 1.0 / 6.0)], self.fresh(n.name + "_gate"),
                          dict(_T))
        self.add("Mul", [x, scaled], self.out(n.outputs[0]), dict(_T))

    def op_hard_sigmoid(self, n: Node) -> None:
        x = self.ref(n.inputs[0])
        scaled = self.add("Mul", [x, self.const(n.name + "_alpha", n.attrs["alpha"])], self.fresh(n.name + "_mul"),
                          dict(_T))
        shifted = self.add("AddV2", [scaled, self.const(n.name + "_beta", n.attrs["beta"])],
                           self.fresh(n.name + "_add"), dict(_T))
        self.clamp(shifted, 0.0, 1.0, self.out(n.outputs[0]))

    def _pad_hw(self, n: Node, x: str, pads: tuple[int, int, int, int], value: float) -> str:
        pt, pl, pb, pr = pads
        paddings = self.const(n.name + "_paddings", [[0, 0], [pt, pb], [pl, pr], [0, 0]], np.int32)
        v = self.const(n.name + "_padvalue", max(value, -_F32_MAX))
        return self.add("PadV2", [x, paddings, v], self.fresh(n.name + "_pad"), dict(_T))

    def _pool(self, n: Node) -> None:
        a = n.attrs
        is_max = n.op == "MAX_POOL_2D"
        if not is_max and a["count_include_pad"] and any(a["pads"]):
            raise ExportError(f"TF.js export: average pool {n.name!r} counts pads in its divisor")
        if tuple(a["dilations"]) != (1, 1):
            raise ExportError(f"TF.js export: pool {n.name!r} is dilated")
        sp = window_padding(self.shape(n.inputs[0])[1:3], self.shape(n.outputs[0])[1:3], tuple(a["kernel"]),
                            tuple(a["strides"]), (1, 1), tuple(a["pads"]))
        x = self.ref(n.inputs[0])
        if sp.extra:
            if not is_max:
                raise ExportError(f"TF.js export: average pool {n.name!r} with pads that are neither SAME nor VALID")
            x = self._pad_hw(n, x, sp.extra, -INF)
        attr = {**_T, "ksize": _ints([1, *a["kernel"], 1]), "strides": _ints([1, *a["strides"], 1]),
                "padding": _s(sp.padding), "data_format": _s("NHWC")}
        self.then_clamp(n, lambda name: self.add("MaxPool" if is_max else "AvgPool", [x], name, attr))

    op_max_pool_2d = op_average_pool_2d = _pool

    def _reduce(self, n: Node) -> None:
        rank = len(self.shape(n.inputs[0]))
        axes = [int(x) % rank for x in n.attrs["axes"]] or list(range(rank))
        op = {"MEAN": "Mean", "REDUCE_MAX": "Max", "REDUCE_SUM": "Sum"}[n.op]
        self.add(op, [self.ref(n.inputs[0]), self.const(n.name + "_axes", axes, np.int32)], self.out(n.outputs[0]),
                 {**_T, "keep_dims": {"b": bool(n.attrs["keepdims"])}, "Tidx": {"type": "DT_INT32"}})

    op_mean = op_reduce_max = op_reduce_sum = _reduce

    def op_softmax(self, n: Node) -> None:
        rank = len(self.shape(n.inputs[0]))
        if int(n.attrs["axis"]) % rank != rank - 1:
            raise ExportError(f"TF.js export: softmax {n.name!r} is not along the last axis")
        self.add("Softmax", [self.ref(n.inputs[0])], self.out(n.outputs[0]), dict(_T))

    def op_reshape(self, n: Node) -> None:
        shape = self.const(n.name + "_shape", self.shape(n.outputs[0]), np.int32)
        self.add("Reshape", [self.ref(n.inputs[0]), shape], self.out(n.outputs[0]), dict(_T))

    def op_transpose(self, n: Node) -> None:
        rank = len(self.shape(n.inputs[0]))
        perm = list(n.attrs["perm"]) or list(range(rank))[::-1]
        self.add("Transpose", [self.ref(n.inputs[0]), self.const(n.name + "_perm", perm, np.int32)],
                 self.out(n.outputs[0]), dict(_T))

    def op_concatenation(self, n: Node) -> None:
        ins = [self.ref(i) for i in n.inputs] + [self.const(n.name + "_axis", int(n.attrs["axis"]), np.int32)]
        self.then_clamp(n, lambda name: self.add("ConcatV2", ins, name, {**_T, "N": {"i": str(len(n.inputs))}}))

    def _strided_slice(self, base: str, x: str, begin: list[int], end: list[int], steps: list[int], name: str,
                       end_mask: int = 0) -> str:
        ins = [x, self.const(base + "_begin", begin, np.int32), self.const(base + "_end", end, np.int32),
               self.const(base + "_strides", steps, np.int32)]
        attr = {**_T, "begin_mask": {"i": "0"}, "end_mask": {"i": str(end_mask)}, "ellipsis_mask": {"i": "0"},
                "new_axis_mask": {"i": "0"}, "shrink_axis_mask": {"i": "0"}}
        return self.add("StridedSlice", ins, name, attr)

    def op_slice(self, n: Node) -> None:
        a = n.attrs
        ends = [int(e) for e in a["ends"]]
        mask = sum(1 << k for k, (e, s) in enumerate(zip(ends, a["steps"], strict=True)) if s < 0 and e == -1)
        self._strided_slice(n.name, self.ref(n.inputs[0]), [int(s) for s in a["starts"]], ends,
                            [int(s) for s in a["steps"]], self.out(n.outputs[0]), mask)

    def op_pad(self, n: Node) -> None:
        a = n.attrs
        rank = len(self.shape(n.inputs[0]))
        p = [int(v) for v in a["pads"]]
        paddings = self.const(n.name + "_paddings", [[p[i], p[i + rank]] for i in range(rank)], np.int32)
        mode = PadMode(int(a["mode"]))
        x = self.ref(n.inputs[0])
        if mode == PadMode.CONSTANT:
            self.add("Pad", [x, paddings], self.out(n.outputs[0]),
                     {**_T, "constant_value": {"f": float(a["value"])}})
        elif mode == PadMode.REFLECT:
            self.add("MirrorPad", [x, paddings], self.out(n.outputs[0]), {**_T, "mode": _s("REFLECT")})
        else:
            raise ExportError(f"TF.js export: pad {n.name!r}: mode {mode.name} has no TF.js op")

    def op_resize(self, n: Node) -> None:
        a = n.attrs
        xs, ys = self.shape(n.inputs[0]), self.shape(n.outputs[0])
        for scale, i, o in zip(a["scales"], xs[1:3], ys[1:3], strict=True):
            if scale and not math.isclose(scale, o / i, rel_tol=1e-6):
                raise ExportError(f"TF.js export: resize {n.name!r}: scale {scale} is not the size ratio")
        coord = CoordMode(int(a["coord"]))
        size = self.const(n.name + "_size", list(ys[1:3]), np.int32)
        if ResizeMode(int(a["mode"])) == ResizeMode.BILINEAR:
            if coord == CoordMode.TF_HALF_PIXEL_FOR_NN:
                raise ExportError(f"TF.js export: bilinear resize {n.name!r}: coordinate mode {coord.name}")
            half = coord in (CoordMode.HALF_PIXEL, CoordMode.PYTORCH_HALF_PIXEL)
            align = coord == CoordMode.ALIGN_CORNERS
            op = "ResizeBilinear"
        else:
            nearest = NearestMode(int(a["nearest"]))
            modes = {(CoordMode.ASYMMETRIC, NearestMode.FLOOR): (False, False),
                     (CoordMode.TF_HALF_PIXEL_FOR_NN, NearestMode.FLOOR): (True, False),
                     (CoordMode.ALIGN_CORNERS, NearestMode.ROUND_PREFER_CEIL): (False, True)}
            if (coord, nearest) not in modes:
                raise ExportError(f"TF.js export: nearest resize {n.name!r}: {coord.name}/{nearest.name}")
            half, align = modes[(coord, nearest)]
            op = "ResizeNearestNeighbor"
        self.add(op, [self.ref(n.inputs[0]), size], self.out(n.outputs[0]),
                 {**_T, "align_corners": {"b": align}, "half_pixel_centers": {"b": half}})

    def op_depth_to_space(self, n: Node) -> None:
        if DepthToSpaceMode(int(n.attrs["mode"])) != DepthToSpaceMode.DCR:
            raise ExportError(f"TF.js export: depth_to_space {n.name!r} in CRD mode")
        self.add("DepthToSpace", [self.ref(n.inputs[0])], self.out(n.outputs[0]),
                 {**_T, "block_size": {"i": str(int(n.attrs["block"]))}, "data_format": _s("NHWC")})

    def op_gather(self, n: Node) -> None:
        axis = int(n.attrs["axis"]) % len(self.shape(n.inputs[0]))
        ins = [self.ref(n.inputs[0]), self.ref(n.inputs[1]), self.const(n.name + "_axis", axis, np.int32)]
        self.add("GatherV2", ins, self.out(n.outputs[0]), {"batch_dims": {"i": "0"}})

    # -- the files --------------------------------------------------------------------------------------------------
    def build(self) -> tuple[dict[str, Any], bytes]:
        for name in self.g.inputs:
            t = self.g.tensors[name]
            self.add("Placeholder", [], self.out(name), {"shape": {"shape": _shape(t.shape)},
                                                          "dtype": {"type": _DT[t.dtype]}})
        for n in self.g.nodes:
            self.node(n)
        outputs = {}
        for o in self.g.outputs:
            if self.names[o] in [self.names[i] for i in self.g.inputs]:  # an input passed through: copy it
                self.add("Identity", [self.names[o]], self.out(o), dict(_T))
            outputs[o] = self.names[o]
        manifest = [{"name": name, "shape": list(arr.shape), "dtype": _MANIFEST_DT[_DT[arr.dtype]]}
                    for name, arr in self.weights]
        blob = b"".join(arr.tobytes() for _, arr in self.weights)
        model = {
            "format": "graph-model",
            "generatedBy": "wasmrt",
            "convertedBy": "wasmrt.export.tfjs",
            "modelTopology": {"node": self.nodes, "library": {}, "versions": {"producer": 1982}},
            "weightsManifest": [{"paths": ["weights.bin"], "weights": manifest}],
            "userDefinedMetadata": {"wasmrt": {"inputs": {i: self.names[i] for i in self.g.inputs},
                                               "outputs": outputs}},
        }
        return model, blob


def export_tfjs(graph: Graph, out_dir: str | Path) -> Path:
    """Write model.json and weights.bin into out_dir; returns the model.json path."""
    model, blob = _Writer(split_residual_adds(graph)).build()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "weights.bin").write_bytes(blob)
    path = out / "model.json"
    path.write_text(json.dumps(model))
    return path
