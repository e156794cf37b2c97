"""Quantized TFLite ops against LiteRT's own int8 run (XNNPACK QS8 kernels where it has them): each case is a
one-op int8 model built with LiteRT's schema; we import it and run python_ref. Where both compute the same
arithmetic the integers are equal; where LiteRT rounds differently (README, "Quantized int8": differences to
LiteRT) they stay within one step and the share of differing values is bounded."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as fb
from tflite_oracle import ModelBuilder, options, run_litert

from python_ref import Interpreter
from wasmrt.compile.converter import convert
from wasmrt.compile.tflite.importer import import_tflite

RNG = np.random.default_rng(11)


def qparams(scale: float | list[float], zp: int | list[int] = 0, axis: int = 0) -> object:
    s = list(np.atleast_1d(np.float32(scale)).astype(float))
    z = list(np.atleast_1d(zp).astype(int))
    return options("QuantizationParameters", scale=s, zeroPoint=z if len(z) == len(s) else z * len(s),
                   quantizedDimension=axis)


class QBuilder(ModelBuilder):
    def qinput(self, name: str, shape: tuple[int, ...], scale: float, zp: int, dtype: type = np.int8) -> int:
        k = self.input(name, shape, dtype)
        self.graph.tensors[k].quantization = qparams(scale, zp)
        return k

    def qtensor(self, name: str, shape: tuple[int, ...], scale: float, zp: int, dtype: type = np.int8) -> int:
        k = self.tensor(name, shape, dtype)
        self.graph.tensors[k].quantization = qparams(scale, zp)
        return k

    def qconst(self, name: str, value: np.ndarray, scale: float | list[float], zp: int | list[int] = 0,
               axis: int = 0) -> int:
        k = self.const(name, value)
        self.graph.tensors[k].quantization = qparams(scale, zp, axis)
        return k


def weights(shape: tuple[int, ...], axis: int) -> tuple[np.ndarray, list[float]]:
    return RNG.integers(-127, 128, shape).astype(np.int8), list(RNG.uniform(0.002, 0.02, shape[axis]))


@dataclass
class Case:
    build: Callable[[QBuilder], None]
    max_steps: int = 0  # largest allowed |ours - LiteRT| in output steps
    max_share: float = 0.0  # largest share of outputs that may differ


def _conv(b: QBuilder, act: int = 3) -> None:
    x = b.qinput("x", (1, 9, 8, 5), 0.031, -7)
    w, sw = weights((6, 3, 3, 5), 0)
    bias = b.qconst("b", RNG.integers(-2000, 2000, 6).astype(np.int32), [0.031 * s for s in sw])
    y = b.qtensor("y", (1, 5, 4, 6), 0.04, -20)
    b.op("CONV_2D", [x, b.qconst("w", w, sw), bias], [y],
         options("Conv2DOptions", padding=0, strideW=2, strideH=2, fusedActivationFunction=act))
    b.output(y)


def _depthwise(b: QBuilder) -> None:
    x = b.qinput("x", (1, 8, 8, 6), 0.05, 3)
    w, sw = weights((1, 3, 3, 6), 3)
    bias = b.qconst("b", RNG.integers(-500, 500, 6).astype(np.int32), [0.05 * s for s in sw])
    y = b.qtensor("y", (1, 8, 8, 6), 0.03, -5)
    b.op("DEPTHWISE_CONV_2D", [x, b.qconst("w", w, sw, axis=3), bias], [y],
         options("DepthwiseConv2DOptions", padding=0, strideW=1, strideH=1, depthMultiplier=1,
                 fusedActivationFunction=1))
    b.output(y)


def _fully_connected(b: QBuilder) -> None:
    x = b.qinput("x", (2, 64), 0.02, 10)
    w, sw = weights((10, 64), 0)
    bias = b.qconst("b", RNG.integers(-900, 900, 10).astype(np.int32), [0.02 * s for s in sw])
    y = b.qtensor("y", (2, 10), 0.05, 4)
    b.op("FULLY_CONNECTED", [x, b.qconst("w", w, sw), bias], [y], options("FullyConnectedOptions"))
    b.output(y)


def _binary(kind: str, options_name: str) -> Callable[[QBuilder], None]:
    def build(b: QBuilder) -> None:
        x = b.qinput("a", (1, 4, 4, 8), 0.05, -3)
        y = b.qinput("b", (1, 4, 4, 8), 0.03, 7)
        z = b.qtensor("y", (1, 4, 4, 8), 0.07 if kind != "MUL" else 0.02, 1)
        b.op(kind, [x, y], [z], options(options_name))
        b.output(z)
    return build


def _unary(kind: str, out_scale: float, out_zp: int, opts: object = None) -> Callable[[QBuilder], None]:
    def build(b: QBuilder) -> None:
        x = b.qinput("x", (1, 4, 4, 16), 0.05, -2)
        y = b.qtensor("y", (1, 4, 4, 16), out_scale, out_zp)
        b.op(kind, [x], [y], opts)
        b.output(y)
    return build


def _pool(kind: str) -> Callable[[QBuilder], None]:
    def build(b: QBuilder) -> None:
        x = b.qinput("x", (1, 8, 7, 4), 0.05, -2)
        y = b.qtensor("y", (1, 4, 4, 4), 0.05, -2)
        b.op(kind, [x], [y], options("Pool2DOptions", padding=0, strideW=2, strideH=2, filterWidth=3,
                                     filterHeight=3))
        b.output(y)
    return build


def _mean(b: QBuilder) -> None:
    x = b.qinput("x", (1, 7, 7, 16), 0.05, -2)
    y = b.qtensor("y", (1, 1, 1, 16), 0.01, 5)
    b.op("MEAN", [x, b.const("axes", np.array([1, 2], np.int32))], [y], options("ReducerOptions", keepDims=True))
    b.output(y)


def _softmax(b: QBuilder) -> None:
    x = b.qinput("x", (2, 10), 0.1, 0)
    y = b.qtensor("y", (2, 10), 1 / 256, -128)
    b.op("SOFTMAX", [x], [y], options("SoftmaxOptions", beta=1.0))
    b.output(y)


def _concat(b: QBuilder) -> None:
    x = b.qinput("a", (1, 3, 3, 4), 0.05, -3)
    y = b.qinput("b", (1, 3, 3, 2), 0.05, -3)
    z = b.qtensor("y", (1, 3, 3, 6), 0.05, -3)
    b.op("CONCATENATION", [x, y], [z], options("ConcatenationOptions", axis=3))
    b.output(z)


def _prelu(b: QBuilder) -> None:
    x = b.qinput("x", (1, 4, 4, 8), 0.05, -3)
    # TFLite's int8 PRELU reads one alpha scale (its converter quantizes alpha per tensor)
    alpha = b.qconst("alpha", RNG.integers(-20, 120, (1, 1, 8)).astype(np.int8), 0.003, 5)
    y = b.qtensor("y", (1, 4, 4, 8), 0.04, -30)
    b.op("PRELU", [x, alpha], [y])
    b.output(y)


def _quantize(b: QBuilder) -> None:
    x = b.input("x", (2, 40))
    y = b.qtensor("y", (2, 40), 0.02, 3)
    b.op("QUANTIZE", [x], [y])
    b.output(y)


def _dequantize(b: QBuilder) -> None:
    x = b.qinput("x", (2, 40), 0.02, 3)
    y = b.tensor("y", (2, 40))
    b.op("DEQUANTIZE", [x], [y])
    b.output(y)


def _resize(b: QBuilder) -> None:
    x = b.qinput("x", (1, 5, 6, 3), 0.05, -3)
    y = b.qtensor("y", (1, 10, 12, 3), 0.05, -3)
    b.op("RESIZE_BILINEAR", [x, b.const("size", np.array([10, 12], np.int32))], [y],
         options("ResizeBilinearOptions", halfPixelCenters=True))
    b.output(y)


def _pad(b: QBuilder) -> None:
    x = b.qinput("x", (1, 4, 4, 3), 0.05, -3)
    y = b.qtensor("y", (1, 6, 5, 3), 0.05, -3)
    b.op("PAD", [x, b.const("pads", np.array([[0, 0], [1, 1], [0, 1], [0, 0]], np.int32))], [y])
    b.output(y)


def _uint8_conv(b: QBuilder) -> None:
    x = b.qinput("x", (1, 6, 6, 3), 0.03, 120, np.uint8)
    w = RNG.integers(0, 256, (4, 3, 3, 3)).astype(np.uint8)
    bias = b.qconst("b", RNG.integers(-2000, 2000, 4).astype(np.int32), 0.03 * 0.01)
    y = b.qtensor("y", (1, 6, 6, 4), 0.05, 100, np.uint8)
    b.op("CONV_2D", [x, b.qconst("w", w, 0.01, 131), bias], [y],
         options("Conv2DOptions", padding=0, strideW=1, strideH=1, fusedActivationFunction=3))
    b.output(y)


CASES: dict[str, Case] = {
    "conv_relu6": Case(_conv),
    "conv": Case(lambda b: _conv(b, 0)),
    "depthwise_relu": Case(_depthwise),
    "fully_connected": Case(_fully_connected),
    "add": Case(_binary("ADD", "AddOptions"), 1, 0.05),
    "sub": Case(_binary("SUB", "SubOptions"), 1, 0.05),
    "mul": Case(_binary("MUL", "MulOptions"), 1, 0.05),
    "logistic": Case(_unary("LOGISTIC", 1 / 256, -128), 1, 0.1),
    "tanh": Case(_unary("TANH", 1 / 128, 0), 1, 0.1),
    "hard_swish": Case(_unary("HARD_SWISH", 0.03, -40), 1, 0.1),
    "leaky_relu": Case(_unary("LEAKY_RELU", 0.04, 10, options("LeakyReluOptions", alpha=0.2)), 1, 0.15),
    "relu": Case(_unary("RELU", 0.05, -128)),
    "relu6": Case(_unary("RELU6", 0.03, -128), 1, 0.05),
    "max_pool": Case(_pool("MAX_POOL_2D")),
    "average_pool": Case(_pool("AVERAGE_POOL_2D"), 1, 0.15),
    "mean": Case(_mean, 1, 0.1),
    "softmax": Case(_softmax, 1, 0.1),
    "concat": Case(_concat),
    "prelu": Case(_prelu, 1, 0.12),
    "quantize": Case(_quantize),
    "dequantize": Case(_dequantize),
    "resize_bilinear": Case(_resize, 1, 0.1),
    "pad": Case(_pad),
    "uint8_conv": Case(_uint8_conv),
}


def compare(case: str) -> tuple[np.ndarray, np.ndarray]:
    """(ours, LiteRT's) on random inputs over the whole integer range."""
    b = QBuilder()
    CASES[case].build(b)
    data = b.build()
    feeds = []
    for k in b.graph.inputs:
        t = b.graph.tensors[k]
        dt = {fb.TensorType.INT8: np.int8, fb.TensorType.UINT8: np.uint8}.get(t.type, np.float32)
        feeds.append(RNG.integers(np.iinfo(dt).min, np.iinfo(dt).max + 1, t.shape).astype(dt) if dt != np.float32
                     else RNG.standard_normal(t.shape).astype(np.float32) * 2)
    (want,) = run_litert(data, feeds)
    interp = Interpreter(convert(import_tflite(data)).data)
    (got,) = interp.run({s.name: f for s, f in zip(interp.inputs, feeds, strict=True)}).values()
    return got, want


@pytest.mark.parametrize("case", sorted(CASES))
def test_int8_op_matches_litert(case: str) -> None:
    got, want = compare(case)
    assert got.dtype == want.dtype and got.shape == want.shape
    if got.dtype.kind == "f":
        np.testing.assert_array_equal(got, want)
        return
    diff = np.abs(got.astype(np.int64) - want.astype(np.int64))
    c = CASES[case]
    assert diff.max() <= c.max_steps, f"{case}: up to {diff.max()} steps from LiteRT"
    assert np.mean(diff > 0) <= c.max_share, f"{case}: {np.mean(diff > 0):.1%} of the outputs differ"
