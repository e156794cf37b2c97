"""Graph IR -> .tflite, written with the TFLite FlatBuffers object API, so LiteRT and LiteRT.js run our exact graph.

The IR is already NHWC with OHWI weights, TFLite's own layout, so most ops map one to one. What TFLite cannot say
directly is rewritten: explicit pads become SAME/VALID or a PAD op, a clamp that is not RELU/RELU6/RELU_N1_TO_1
becomes MAXIMUM/MINIMUM, a constant right-hand MATMUL becomes FULLY_CONNECTED (LiteRT's fast path).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as fb

from python_ref.opdefs import CoordMode, DepthToSpaceMode, NearestMode, PadMode, ResizeMode
from wasmrt.compile.ir import Graph, Node
from wasmrt.compile.passes import split_residual_adds
from wasmrt.export.common import INF, ExportError, clamp_of, is_depthwise, window_padding

BO = fb.BuiltinOperator
OPT = fb.BuiltinOptions
ACT = fb.ActivationFunctionType
_PADDING = {"SAME": fb.Padding.SAME, "VALID": fb.Padding.VALID}
_DTYPES = {np.dtype(np.float32): fb.TensorType.FLOAT32, np.dtype(np.int32): fb.TensorType.INT32,
           np.dtype(np.int64): fb.TensorType.INT64, np.dtype(np.uint8): fb.TensorType.UINT8,
           np.dtype(np.int8): fb.TensorType.INT8, np.dtype(np.bool_): fb.TensorType.BOOL,
           np.dtype(np.float16): fb.TensorType.FLOAT16}
_FUSED = {(-INF, INF): ACT.NONE, (0.0, INF): ACT.RELU, (0.0, 6.0): ACT.RELU6, (-1.0, 1.0): ACT.RELU_N1_TO_1}
_UNARY = {"RELU": BO.RELU, "HARD_SWISH": BO.HARD_SWISH, "SIGMOID": BO.LOGISTIC, "TANH": BO.TANH, "EXP": BO.EXP,
          "SQRT": BO.SQRT, "ABS": BO.ABS, "NEG": BO.NEG}
_BINARY = {"ADD": (BO.ADD, OPT.AddOptions, fb.AddOptionsT), "SUB": (BO.SUB, OPT.SubOptions, fb.SubOptionsT),
           "MUL": (BO.MUL, OPT.MulOptions, fb.MulOptionsT), "DIV": (BO.DIV, OPT.DivOptions, fb.DivOptionsT)}


class _AlignedBuffer(fb.BufferT):
    """A buffer whose bytes start 16-byte aligned in the file (the object API aligns uint8 vectors to 1)."""

    def Pack(self, builder: flatbuffers.Builder) -> int:
        if not self.data:
            fb.BufferStart(builder)
            return fb.BufferEnd(builder)
        payload = bytes(self.data)
        builder.StartVector(1, len(payload), 16)
        builder.head -= len(payload)
        builder.Bytes[builder.head:builder.head + len(payload)] = payload
        builder.vectorNumElems = len(payload)
        vec = builder.EndVector()
        fb.BufferStart(builder)
        fb.BufferAddData(builder, vec)
        return fb.BufferEnd(builder)


class _Writer:
    def __init__(self, graph: Graph) -> None:
        self.g = graph
        self.tensors: list[fb.TensorT] = []
        self.buffers: list[fb.BufferT] = [fb.BufferT()]  # buffer 0: the empty sentinel every tensor may use
        self.index: dict[str, int] = {}
        self.ops: list[fb.OperatorT] = []
        self.codes: dict[int, int] = {}
        self.opcodes: list[fb.OperatorCodeT] = []
        self.pending: tuple[int, float, float, str] | None = None  # a clamp to emit right after the next op

    # -- tensors ------------------------------------------------------------------------------------------------
    def tensor(self, name: str, shape: tuple[int, ...], dtype: np.dtype, data: np.ndarray | None = None) -> int:
        t = fb.TensorT()
        t.name, t.shape, t.type = name, list(shape), _DTYPES[np.dtype(dtype)]
        t.hasRank = True
        if data is not None:
            buf = _AlignedBuffer()
            buf.data = np.ascontiguousarray(data, dtype=dtype).tobytes()
            self.buffers.append(buf)
            t.buffer = len(self.buffers) - 1
        self.tensors.append(t)
        return len(self.tensors) - 1

    def ref(self, name: str) -> int:
        """Index of an IR tensor (constants are written on first use)."""
        if name not in self.index:
            t = self.g.tensors[name]
            data = t.data
            if data is not None and data.dtype == np.int64:  # TFLite index inputs are int32
                data = data.astype(np.int32)
            dtype = data.dtype if data is not None else t.dtype
            self.index[name] = self.tensor(name, t.shape, dtype, data)
        return self.index[name]

    def const(self, name: str, value: Any, dtype: Any = np.float32) -> int:
        arr = np.asarray(value, dtype=dtype)
        return self.tensor(f"{name}_const{len(self.tensors)}", arr.shape, arr.dtype, arr)

    def temp(self, name: str, shape: tuple[int, ...], dtype: Any = np.float32) -> int:
        return self.tensor(f"{name}_tmp{len(self.tensors)}", shape, np.dtype(dtype))

    # -- operators ------------------------------------------------------------------------------------------------
    def op(self, code: int, inputs: list[int], outputs: list[int], opt_type: int = OPT.NONE,
           options: Any = None) -> None:
        if code not in self.codes:
            oc = fb.OperatorCodeT()
            oc.builtinCode, oc.deprecatedBuiltinCode, oc.version = code, min(code, 127), 1
            self.codes[code] = len(self.opcodes)
            self.opcodes.append(oc)
        o = fb.OperatorT()
        o.opcodeIndex, o.inputs, o.outputs = self.codes[code], inputs, outputs
        o.builtinOptionsType, o.builtinOptions = opt_type, options
        self.ops.append(o)
        if self.pending is not None:  # operators must stay in execution order: the clamp follows its producer
            raw, lo, hi, out = self.pending
            self.pending = None
            self.clamp(raw, lo, hi, out)

    def fused(self, node: Node, out: str) -> tuple[int, int]:
        """(fused activation code, tensor the op itself writes): a clamp TFLite cannot fuse follows as ops."""
        lo, hi = clamp_of(node)
        if (lo, hi) in _FUSED:
            return _FUSED[(lo, hi)], self.ref(out)
        t = self.g.tensors[out]
        raw = self.temp(out, t.shape, t.dtype)
        self.pending = (raw, lo, hi, out)
        return ACT.NONE, raw

    def clamp(self, src: int, lo: float, hi: float, out: str) -> None:
        """out = min(max(src, lo), hi) with RELU-family ops where they fit, else MAXIMUM/MINIMUM."""
        if (lo, hi) in _FUSED:
            code = {ACT.NONE: None, ACT.RELU: BO.RELU, ACT.RELU6: BO.RELU6, ACT.RELU_N1_TO_1: BO.RELU_N1_TO_1}
            c = code[_FUSED[(lo, hi)]]
            if c is None:
                raise ExportError("internal: identity clamp")
            self.op(c, [src], [self.ref(out)])
            return
        shape = self.g.tensors[out].shape
        cur = src
        if lo != -INF:
            nxt = self.ref(out) if hi == INF else self.temp(out, shape)
            self.op(BO.MAXIMUM, [cur, self.const(out + "_lo", lo)], [nxt])
            cur = nxt
        if hi != INF:
            self.op(BO.MINIMUM, [cur, self.const(out + "_hi", hi)], [self.ref(out)])

    def padded(self, node: Node, x: int, pads: tuple[int, int, int, int], value: float) -> int:
        """x padded in H and W by [top, left, bottom, right] (PAD for zeros, PADV2 otherwise)."""
        n, h, w, c = self.g.tensors[node.inputs[0]].shape
        pt, pl, pb, pr = pads
        out = self.temp(node.name + "_pad", (n, h + pt + pb, w + pl + pr, c))
        paddings = self.const(node.name + "_paddings", [[0, 0], [pt, pb], [pl, pr], [0, 0]], np.int32)
        if value == 0.0:
            self.op(BO.PAD, [x, paddings], [out], OPT.PadOptions, fb.PadOptionsT())
        else:
            v = self.const(node.name + "_padvalue", np.float32(max(value, np.finfo(np.float32).min)))
            self.op(BO.PADV2, [x, paddings, v], [out], OPT.PadV2Options, fb.PadV2OptionsT())
        return out

    # -- one IR node ------------------------------------------------------------------------------------------------
    def node(self, n: Node) -> None:
        handler = getattr(self, "op_" + n.op.lower(), None)
        if handler is None:
            raise ExportError(f"TFLite export: op {n.op} (node {n.name!r}) is not supported")
        handler(n)

    def _window(self, n: Node, kernel: tuple[int, int], pad_value: float) -> tuple[int, int]:
        """(input tensor after any explicit pad, padding code) for a conv or pool."""
        x_shape, y_shape = self.g.tensors[n.inputs[0]].shape, self.g.tensors[n.outputs[0]].shape
        sp = window_padding(x_shape[1:3], y_shape[1:3], kernel, tuple(n.attrs["strides"]),
                            tuple(n.attrs.get("dilations", (1, 1))), tuple(n.attrs["pads"]))
        x = self.ref(n.inputs[0])
        if sp.extra is not None:
            x = self.padded(n, x, sp.extra, pad_value)
        return x, _PADDING[sp.padding]

    def _bias(self, n: Node, channels: int) -> int:
        if len(n.inputs) > 2 and n.inputs[2]:
            return self.ref(n.inputs[2])
        return self.const(n.name + "_bias", np.zeros(channels, np.float32))

    def op_conv_2d(self, n: Node) -> None:
        w = self.g.tensors[n.inputs[1]]
        if w.data is None:
            raise ExportError(f"TFLite export: conv {n.name!r} has non-constant weights")
        cout, kh, kw, _ = w.shape
        x, padding = self._window(n, (kh, kw), 0.0)
        (sh, sw), (dh, dw) = n.attrs["strides"], n.attrs["dilations"]
        act, y = self.fused(n, n.outputs[0])
        if is_depthwise(self.g, n):
            cin = self.g.tensors[n.inputs[0]].shape[3]
            wt = self.tensor(n.inputs[1] + "_dw", (1, kh, kw, cout), np.float32, w.data.transpose(3, 1, 2, 0))
            o = fb.DepthwiseConv2DOptionsT()
            o.padding, o.strideH, o.strideW, o.dilationHFactor, o.dilationWFactor = padding, sh, sw, dh, dw
            o.depthMultiplier, o.fusedActivationFunction = cout // cin, act
            self.op(BO.DEPTHWISE_CONV_2D, [x, wt, self._bias(n, cout)], [y], OPT.DepthwiseConv2DOptions, o)
            return
        o = fb.Conv2DOptionsT()
        o.padding, o.strideH, o.strideW, o.dilationHFactor, o.dilationWFactor = padding, sh, sw, dh, dw
        o.fusedActivationFunction = act
        self.op(BO.CONV_2D, [x, self.ref(n.inputs[1]), self._bias(n, cout)], [y], OPT.Conv2DOptions, o)

    def op_conv_transpose_2d(self, n: Node) -> None:
        a = n.attrs
        w = self.g.tensors[n.inputs[1]]
        if a["groups"] != 1 or tuple(a["dilations"]) != (1, 1) or w.data is None:
            raise ExportError(f"TFLite export: transposed conv {n.name!r} needs groups 1, dilation 1, const weights")
        xs, ys = self.g.tensors[n.inputs[0]].shape, self.g.tensors[n.outputs[0]].shape
        cout, kh, kw, _ = w.shape
        (sh, sw), (pt, pl, _, _) = a["strides"], a["pads"]
        full = (xs[0], (xs[1] - 1) * sh + kh, (xs[2] - 1) * sw + kw, cout)  # VALID output, cropped below
        if pt + ys[1] > full[1] or pl + ys[2] > full[2]:
            raise ExportError(f"TFLite export: transposed conv {n.name!r}: output_padding beyond the pads")
        o = fb.TransposeConvOptionsT()
        o.padding, o.strideH, o.strideW = fb.Padding.VALID, sh, sw
        raw = self.temp(n.name, full)
        shape = self.const(n.name + "_oshape", full, np.int32)
        self.op(BO.TRANSPOSE_CONV, [shape, self.ref(n.inputs[1]), self.ref(n.inputs[0]), self._bias(n, cout)],
                [raw], OPT.TransposeConvOptions, o)
        lo, hi = clamp_of(n)
        cropped = self.ref(n.outputs[0]) if (lo, hi) == (-INF, INF) else self.temp(n.name + "_crop", ys)
        self._strided_slice(n.name, raw, [0, pt, pl, 0], [ys[0], pt + ys[1], pl + ys[2], ys[3]], [1, 1, 1, 1],
                            cropped)
        if (lo, hi) != (-INF, INF):
            self.clamp(cropped, lo, hi, n.outputs[0])

    def op_fully_connected(self, n: Node) -> None:
        w = self.g.tensors[n.inputs[1]]
        self._fc(n, self.ref(n.inputs[0]), self.ref(n.inputs[1]), self._bias(n, w.shape[0]))

    def _fc(self, n: Node, x: int, w: int, b: int) -> None:
        act, y = self.fused(n, n.outputs[0])
        o = fb.FullyConnectedOptionsT()
        o.fusedActivationFunction, o.keepNumDims = act, len(self.g.tensors[n.outputs[0]].shape) != 2
        self.op(BO.FULLY_CONNECTED, [x, w, b], [y], OPT.FullyConnectedOptions, o)

    def op_matmul(self, n: Node) -> None:
        b = self.g.tensors[n.inputs[1]]
        if b.data is not None and b.data.ndim == 2 and b.dtype == np.float32:
            wt = self.tensor(n.inputs[1] + "_t", b.shape[::-1], np.float32, b.data.T)
            self._fc(n, self.ref(n.inputs[0]), wt, self.const(n.name + "_bias", np.zeros(b.shape[1], np.float32)))
            return
        self.op(BO.BATCH_MATMUL, [self.ref(n.inputs[0]), self.ref(n.inputs[1])], [self.ref(n.outputs[0])],
                OPT.BatchMatMulOptions, fb.BatchMatMulOptionsT())

    def _binary(self, n: Node) -> None:
        code, opt_type, opt_cls = _BINARY[n.op]
        act, y = self.fused(n, n.outputs[0])
        o = opt_cls()
        o.fusedActivationFunction = act
        self.op(code, [self.ref(n.inputs[0]), self.ref(n.inputs[1])], [y], opt_type, o)

    op_add = op_sub = op_mul = op_div = _binary

    def _minmax(self, n: Node) -> None:
        code = BO.MAXIMUM if n.op == "MAXIMUM" else BO.MINIMUM
        lo, hi = clamp_of(n)
        if (lo, hi) == (-INF, INF):
            self.op(code, [self.ref(n.inputs[0]), self.ref(n.inputs[1])], [self.ref(n.outputs[0])])
            return
        raw = self.temp(n.name, self.g.tensors[n.outputs[0]].shape)
        self.op(code, [self.ref(n.inputs[0]), self.ref(n.inputs[1])], [raw])
        self.clamp(raw, lo, hi, n.outputs[0])

    op_maximum = op_minimum = _minmax

    def op_pow(self, n: Node) -> None:
        self.op(BO.POW, [self.ref(n.inputs[0]), self.ref(n.inputs[1])], [self.ref(n.outputs[0])])

    def op_prelu(self, n: Node) -> None:
        self.op(BO.PRELU, [self.ref(n.inputs[0]), self.ref(n.inputs[1])], [self.ref(n.outputs[0])])

    def _unary(self, n: Node) -> None:
        self.op(_UNARY[n.op], [self.ref(n.inputs[0])], [self.ref(n.outputs[0])])

    op_relu = op_hard_swish = op_sigmoid = op_tanh = op_exp = op_sqrt = op_abs = op_neg = _unary

    def op_clip(self, n: Node) -> None:
        lo, hi = clamp_of(n)
        self.clamp(self.ref(n.inputs[0]), lo, hi, n.outputs[0])

    def op_leaky_relu(self, n: Node) -> None:
        o = fb.LeakyReluOptionsT()
        o.alpha = float(n.attrs["alpha"])
        self.op(BO.LEAKY_RELU, [self.ref(n.inputs[0])], [self.ref(n.outputs[0])], OPT.LeakyReluOptions, o)

    def op_hard_sigmoid(self, n: Node) -> None:
        shape = self.g.tensors[n.outputs[0]].shape
        scaled, shifted = self.temp(n.name, shape), self.temp(n.name, shape)
        self.op(BO.MUL, [self.ref(n.inputs[0]), self.const(n.name + "_alpha", n.attrs["alpha"])], [scaled],
                OPT.MulOptions, fb.MulOptionsT())
        self.op(BO.ADD, [scaled, self.const(n.name + "_beta", n.attrs["beta"])], [shifted], OPT.AddOptions,
                fb.AddOptionsT())
        self.clamp(shifted, 0.0, 1.0, n.outputs[0])

    def _pool(self, n: Node) -> None:
        a = n.attrs
        is_max = n.op == "MAX_POOL_2D"
        if not is_max and a["count_include_pad"] and any(a["pads"]):
            raise ExportError(f"TFLite export: average pool {n.name!r} counts pads in its divisor")
        if tuple(a["dilations"]) != (1, 1):
            raise ExportError(f"TFLite export: pool {n.name!r} is dilated")
        x, padding = self._window(n, tuple(a["kernel"]), -INF if is_max else 0.0)
        act, y = self.fused(n, n.outputs[0])
        o = fb.Pool2DOptionsT()
        o.padding, (o.strideH, o.strideW), (o.filterHeight, o.filterWidth) = padding, a["strides"], a["kernel"]
        o.fusedActivationFunction = act
        self.op(BO.MAX_POOL_2D if is_max else BO.AVERAGE_POOL_2D, [x], [y], OPT.Pool2DOptions, o)

    op_max_pool_2d = op_average_pool_2d = _pool

    def _reduce(self, n: Node) -> None:
        code = {"MEAN": BO.MEAN, "REDUCE_MAX": BO.REDUCE_MAX, "REDUCE_SUM": BO.SUM}[n.op]
        rank = len(self.g.tensors[n.inputs[0]].shape)
        axes = [int(a) % rank for a in n.attrs["axes"]] or list(range(rank))
        o = fb.ReducerOptionsT()
        o.keepDims = bool(n.attrs["keepdims"])
        self.op(code, [self.ref(n.inputs[0]), self.const(n.name + "_axes", axes, np.int32)],
                [self.ref(n.outputs[0])], OPT.ReducerOptions, o)

    op_mean = op_reduce_max = op_reduce_sum = _reduce

    def op_softmax(self, n: Node) -> None:
        rank = len(self.g.tensors[n.inputs[0]].shape)
        if int(n.attrs["axis"]) % rank != rank - 1:
            raise ExportError(f"TFLite export: softmax {n.name!r} is not along the last axis")
        o = fb.SoftmaxOptionsT()
        o.beta = 1.0
        self.op(BO.SOFTMAX, [self.ref(n.inputs[0])], [self.ref(n.outputs[0])], OPT.SoftmaxOptions, o)

    def op_reshape(self, n: Node) -> None:
        shape = list(self.g.tensors[n.outputs[0]].shape)
        o = fb.ReshapeOptionsT()
        o.newShape = shape
        self.op(BO.RESHAPE, [self.ref(n.inputs[0]), self.const(n.name + "_shape", shape, np.int32)],
                [self.ref(n.outputs[0])], OPT.ReshapeOptions, o)

    def op_transpose(self, n: Node) -> None:
        rank = len(self.g.tensors[n.inputs[0]].shape)
        perm = list(n.attrs["perm"]) or list(range(rank))[::-1]
        self.op(BO.TRANSPOSE, [self.ref(n.inputs[0]), self.const(n.name + "_perm", perm, np.int32)],
                [self.ref(n.outputs[0])], OPT.TransposeOptions, fb.TransposeOptionsT())

    def op_concatenation(self, n: Node) -> None:
        act, y = self.fused(n, n.outputs[0])
        o = fb.ConcatenationOptionsT()
        o.axis, o.fusedActivationFunction = int(n.attrs["axis"]), act
        self.op(BO.CONCATENATION, [self.ref(i) for i in n.inputs], [y], OPT.ConcatenationOptions, o)

    def _strided_slice(self, name: str, x: int, begin: list[int], end: list[int], steps: list[int], y: int,
                       end_mask: int = 0) -> None:
        o = fb.StridedSliceOptionsT()
        o.endMask = end_mask
        self.op(BO.STRIDED_SLICE, [x, self.const(name + "_begin", begin, np.int32),
                                   self.const(name + "_end", end, np.int32),
                                   self.const(name + "_strides", steps, np.int32)], [y],
                OPT.StridedSliceOptions, o)

    def op_slice(self, n: Node) -> None:
        a = n.attrs
        ends = [int(e) for e in a["ends"]]
        # a negative step ending at -1 runs through index 0: TFLite says so with the end mask
        mask = sum(1 << k for k, (e, s) in enumerate(zip(ends, a["steps"], strict=True)) if s < 0 and e == -1)
        self._strided_slice(n.name, self.ref(n.inputs[0]), [int(s) for s in a["starts"]], ends,
                            [int(s) for s in a["steps"]], self.ref(n.outputs[0]), mask)

    def op_pad(self, n: Node) -> None:
        a = n.attrs
        rank = len(self.g.tensors[n.inputs[0]].shape)
        p = [int(v) for v in a["pads"]]
        paddings = self.const(n.name + "_paddings", [[p[i], p[i + rank]] for i in range(rank)], np.int32)
        x, y = self.ref(n.inputs[0]), self.ref(n.outputs[0])
        mode = PadMode(int(a["mode"]))
        if mode == PadMode.REFLECT:
            o = fb.MirrorPadOptionsT()
            o.mode = fb.MirrorPadMode.REFLECT
            self.op(BO.MIRROR_PAD, [x, paddings], [y], OPT.MirrorPadOptions, o)
        elif mode == PadMode.CONSTANT and float(a["value"]) == 0.0:
            self.op(BO.PAD, [x, paddings], [y], OPT.PadOptions, fb.PadOptionsT())
        elif mode == PadMode.CONSTANT:
            v = self.const(n.name + "_value", np.asarray(a["value"], self.g.tensors[n.inputs[0]].dtype))
            self.op(BO.PADV2, [x, paddings, v], [y], OPT.PadV2Options, fb.PadV2OptionsT())
        else:
            raise ExportError(f"TFLite export: pad {n.name!r}: mode {mode.name} has no TFLite op")

    def op_resize(self, n: Node) -> None:
        a = n.attrs
        xs, ys = self.g.tensors[n.inputs[0]].shape, self.g.tensors[n.outputs[0]].shape
        for scale, i, o in zip(a["scales"], xs[1:3], ys[1:3], strict=True):
            if scale and not math.isclose(scale, o / i, rel_tol=1e-6):
                raise ExportError(f"TFLite export: resize {n.name!r}: scale {scale} is not the size ratio")
        coord = CoordMode(int(a["coord"]))
        size = self.const(n.name + "_size", list(ys[1:3]), np.int32)
        if ResizeMode(int(a["mode"])) == ResizeMode.BILINEAR:
            if coord not in (CoordMode.HALF_PIXEL, CoordMode.PYTORCH_HALF_PIXEL, CoordMode.ALIGN_CORNERS,
                             CoordMode.ASYMMETRIC):
                raise ExportError(f"TFLite export: resize {n.name!r}: coordinate mode {coord.name}")
            o = fb.ResizeBilinearOptionsT()
            o.halfPixelCenters = coord in (CoordMode.HALF_PIXEL, CoordMode.PYTORCH_HALF_PIXEL)
            o.alignCorners = coord == CoordMode.ALIGN_CORNERS
            self.op(BO.RESIZE_BILINEAR, [self.ref(n.inputs[0]), size], [self.ref(n.outputs[0])],
                    OPT.ResizeBilinearOptions, o)
            return
        nearest = NearestMode(int(a["nearest"]))
        o = fb.ResizeNearestNeighborOptionsT()
        if (coord, nearest) == (CoordMode.ASYMMETRIC, NearestMode.FLOOR):
            pass
        elif (coord, nearest) == (CoordMode.TF_HALF_PIXEL_FOR_NN, NearestMode.FLOOR):
            o.halfPixelCenters = True
        elif (coord, nearest) == (CoordMode.ALIGN_CORNERS, NearestMode.ROUND_PREFER_CEIL):
            o.alignCorners = True
        else:
            raise ExportError(f"TFLite export: nearest resize {n.name!r}: {coord.name}/{nearest.name}")
        self.op(BO.RESIZE_NEAREST_NEIGHBOR, [self.ref(n.inputs[0]), size], [self.ref(n.outputs[0])],
                OPT.ResizeNearestNeighborOptions, o)

    def op_depth_to_space(self, n: Node) -> None:
        if DepthToSpaceMode(int(n.attrs["mode"])) != DepthToSpaceMode.DCR:
            raise ExportError(f"TFLite export: depth_to_space {n.name!r} in CRD mode")
        o = fb.DepthToSpaceOptionsT()
        o.blockSize = int(n.attrs["block"])
        self.op(BO.DEPTH_TO_SPACE, [self.ref(n.inputs[0])], [self.ref(n.outputs[0])], OPT.DepthToSpaceOptions, o)

    def op_gather(self, n: Node) -> None:
        o = fb.GatherOptionsT()
        o.axis = int(n.attrs["axis"]) % len(self.g.tensors[n.inputs[0]].shape)
        self.op(BO.GATHER, [self.ref(n.inputs[0]), self.ref(n.inputs[1])], [self.ref(n.outputs[0])],
                OPT.GatherOptions, o)

    # -- the file --------------------------------------------------------------------------------------------------
    def model(self) -> bytes:
        for n in self.g.nodes:
            self.node(n)
        sg = fb.SubGraphT()
        sg.tensors, sg.operators, sg.name = self.tensors, self.ops, "main"
        sg.inputs = [self.ref(i) for i in self.g.inputs]
        sg.outputs = [self.ref(o) for o in self.g.outputs]
        sig = fb.SignatureDefT()
        sig.signatureKey, sig.subgraphIndex = "serving_default", 0
        sig.inputs = [_tensor_map(i, self.ref(i)) for i in self.g.inputs]
        sig.outputs = [_tensor_map(o, self.ref(o)) for o in self.g.outputs]
        m = fb.ModelT()
        m.version, m.description = 3, "wasmrt export"
        m.operatorCodes, m.subgraphs, m.buffers, m.signatureDefs = self.opcodes, [sg], self.buffers, [sig]
        builder = flatbuffers.Builder(sum(len(b.data or b"") for b in self.buffers) + (1 << 20))
        builder.Finish(m.Pack(builder), file_identifier=b"TFL3")
        return bytes(builder.Output())


def _tensor_map(name: str, index: int) -> fb.TensorMapT:
    tm = fb.TensorMapT()
    tm.name, tm.tensorIndex = name, index
    return tm


def export_tflite(graph: Graph, path: str | Path | None = None) -> bytes:
    """The graph as .tflite bytes (also written to path when given)."""
    data = _Writer(split_residual_adds(graph)).model()
    if path is not None:
        Path(path).write_bytes(data)
    return data
