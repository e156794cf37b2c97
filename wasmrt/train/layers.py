"""A small layer API for models trained from scratch: `Sequential` of `conv`, `depthwise`, `linear`, pooling and
activation layers, written as a .wrt graph (NHWC activations, OHWI weights) with seeded initial weights.

Initial weights follow PyTorch's defaults for Conv2d and Linear: weight and bias uniform in
`[-1/sqrt(fan_in), 1/sqrt(fan_in)]` (fan_in = kernel_h * kernel_w * input channels per group), drawn from
`numpy.random.default_rng(seed)` layer by layer in order, the weight in OHWI order then the bias.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from wasmrt.compile.ir import Graph
from wasmrt.compile.planner import plan_memory
from wasmrt.compile.writer import write_wrt

ACTIVATIONS = ("relu", "relu6", "hard_swish", "sigmoid", "tanh")
_CLAMP = {"relu": (0.0, math.inf), "relu6": (0.0, 6.0)}  # fused into the producing op
_UNARY = {"hard_swish": "HARD_SWISH", "sigmoid": "SIGMOID", "tanh": "TANH"}


@dataclass(frozen=True)
class Layer:
    kind: str
    args: dict[str, Any] = field(default_factory=dict)


def _check_activation(activation: str | None) -> str | None:
    if activation is not None and activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {ACTIVATIONS} or None, got {activation!r}")
    return activation


def conv(channels: int, kernel: int = 3, stride: int = 1, padding: str | int = "same",
         activation: str | None = None, bias: bool = True, groups: int = 1) -> Layer:
    """A 2-D convolution. padding: "same" (output = ceil(input / stride), the odd extra pad at the bottom/right),
    "valid" (none) or a number of pixels on every side."""
    return Layer("conv", {"channels": int(channels), "kernel": int(kernel), "stride": int(stride), "padding": padding,
                          "activation": _check_activation(activation), "bias": bias, "groups": int(groups)})


def depthwise(kernel: int = 3, stride: int = 1, padding: str | int = "same", activation: str | None = None,
              multiplier: int = 1, bias: bool = True) -> Layer:
    """A depthwise convolution: each input channel filtered alone (multiplier outputs per channel)."""
    return Layer("depthwise", {"kernel": int(kernel), "stride": int(stride), "padding": padding,
                               "activation": _check_activation(activation), "multiplier": int(multiplier),
                               "bias": bias})


def linear(units: int, activation: str | None = None, bias: bool = True) -> Layer:
    """A fully connected layer on [batch, features] (flatten first)."""
    return Layer("linear", {"units": int(units), "activation": _check_activation(activation), "bias": bias})


def max_pool(kernel: int = 2, stride: int | None = None) -> Layer:
    return Layer("max_pool", {"kernel": int(kernel), "stride": int(stride or kernel)})


def avg_pool(kernel: int = 2, stride: int | None = None) -> Layer:
    return Layer("avg_pool", {"kernel": int(kernel), "stride": int(stride or kernel)})


def global_avg_pool() -> Layer:
    """Mean over height and width: [batch, H, W, C] -> [batch, C]."""
    return Layer("global_avg_pool")


def flatten() -> Layer:
    """[batch, ...] -> [batch, features] (row-major over H, W, C)."""
    return Layer("flatten")


def activation(name: str) -> Layer:
    _check_activation(name)
    return Layer("activation", {"name": name})


def relu() -> Layer:
    return activation("relu")


def relu6() -> Layer:
    return activation("relu6")


def hard_swish() -> Layer:
    return activation("hard_swish")


def sigmoid() -> Layer:
    return activation("sigmoid")


def tanh() -> Layer:
    return activation("tanh")


def _pads(padding: str | int, size: tuple[int, int], k: int, s: int) -> tuple[int, int, int, int]:
    if padding == "valid":
        return (0, 0, 0, 0)
    if padding == "same":
        out = []
        for n in size:
            total = max((-(-n // s) - 1) * s + k - n, 0)
            out.append((total // 2, total - total // 2))
        return (out[0][0], out[1][0], out[0][1], out[1][1])
    if isinstance(padding, int) and padding >= 0:
        return (padding,) * 4
    raise ValueError(f"padding must be 'same', 'valid' or a number of pixels >= 0, got {padding!r}")


class Sequential:
    """Layers applied in order to one NHWC input of shape [1, height, width, channels].

    `Sequential(layers, input_shape=(28, 28, 1), labels=[...]).wrt(seed=0)` -> .wrt bytes (float32 weights);
    `.graph(seed)` -> the graph before it is written. The output is the last layer's (for a classifier: logits;
    wasmrt.train reads the input of a final softmax as the logits)."""

    def __init__(self, layers: list[Layer], input_shape: tuple[int, int, int], labels: list[str] | None = None,
                 input_name: str = "input", output_name: str = "logits") -> None:
        if len(input_shape) != 3 or any(int(d) < 1 for d in input_shape):
            raise ValueError(f"input_shape is (height, width, channels), got {input_shape}")
        self.layers = list(layers)
        self.input_shape = tuple(int(d) for d in input_shape)
        self.labels = list(labels or [])
        self.input_name, self.output_name = input_name, output_name

    def graph(self, seed: int = 0) -> Graph:
        rng = np.random.default_rng(seed)
        g = Graph()
        x = g.add_input(self.input_name, (1, *self.input_shape))
        for k, layer in enumerate(self.layers):
            x = self._add(g, rng, f"{layer.kind}{k}", layer, x)
        if x != self.output_name:
            g.rename(x, self.output_name)
        g.outputs = [self.output_name]
        g.metadata.producer = "wasmrt.train.Sequential"
        g.metadata.labels = list(self.labels)
        g.metadata.props["wasmrt.train.seed"] = str(seed)
        g.validate()
        return g

    def wrt(self, seed: int = 0) -> bytes:
        g = self.graph(seed)
        return write_wrt(g, plan_memory(g), weights="fp32")

    @staticmethod
    def _init(rng: np.random.Generator, shape: tuple[int, ...], fan_in: int) -> np.ndarray:
        bound = 1.0 / math.sqrt(fan_in)
        return rng.uniform(-bound, bound, shape).astype(np.float32)

    def _add(self, g: Graph, rng: np.random.Generator, name: str, layer: Layer, x: str) -> str:
        a, shape = layer.args, g.tensors[x].shape
        if layer.kind in ("conv", "depthwise"):
            if len(shape) != 4:
                raise ValueError(f"layer {name}: {layer.kind} needs [batch, H, W, C], got {list(shape)}")
            cin, k, s = shape[3], a["kernel"], a["stride"]
            groups = cin if layer.kind == "depthwise" else a["groups"]
            cout = cin * a["multiplier"] if layer.kind == "depthwise" else a["channels"]
            if cin % groups or cout % groups:
                raise ValueError(f"layer {name}: groups {groups} must divide {cin} input and {cout} output channels")
            fan_in = k * k * (cin // groups)
            w = g.add_const(f"{name}.weight", self._init(rng, (cout, k, k, cin // groups), fan_in))
            b = g.add_const(f"{name}.bias", self._init(rng, (cout,), fan_in)) if a["bias"] else ""
            lo, hi = _CLAMP.get(a["activation"], (-math.inf, math.inf))
            y = g.add_node("CONV_2D", [x, w, b] if b else [x, w],
                           {"strides": (s, s), "pads": _pads(a["padding"], shape[1:3], k, s), "groups": groups,
                            "act_min": lo, "act_max": hi}, name=name)[0]
            return self._unary(g, name, a["activation"], y)
        if layer.kind == "linear":
            if len(shape) != 2:
                raise ValueError(f"layer {name}: linear needs [batch, features] (flatten first), got {list(shape)}")
            w = g.add_const(f"{name}.weight", self._init(rng, (a["units"], shape[1]), shape[1]))
            b = g.add_const(f"{name}.bias", self._init(rng, (a["units"],), shape[1])) if a["bias"] else ""
            lo, hi = _CLAMP.get(a["activation"], (-math.inf, math.inf))
            y = g.add_node("FULLY_CONNECTED", [x, w, b] if b else [x, w], {"act_min": lo, "act_max": hi},
                           name=name)[0]
            return self._unary(g, name, a["activation"], y)
        if layer.kind in ("max_pool", "avg_pool"):
            k, s = a["kernel"], a["stride"]
            return g.add_node("MAX_POOL_2D" if layer.kind == "max_pool" else "AVERAGE_POOL_2D", [x],
                              {"kernel": (k, k), "strides": (s, s)}, name=name)[0]
        if layer.kind == "global_avg_pool":
            return g.add_node("MEAN", [x], {"axes": (1, 2), "keepdims": False}, name=name)[0]
        if layer.kind == "flatten":
            return g.add_node("RESHAPE", [x], {"shape": (0, -1)}, name=name)[0]
        if layer.kind == "activation":
            n = a["name"]
            if n in _CLAMP:
                lo, hi = _CLAMP[n]
                return g.add_node("RELU", [x], name=name)[0] if n == "relu" else \
                    g.add_node("CLIP", [x], {"min": lo, "max": hi}, name=name)[0]
            return self._unary(g, name, n, x)
        raise ValueError(f"unknown layer kind {layer.kind!r}")

    @staticmethod
    def _unary(g: Graph, name: str, act: str | None, x: str) -> str:
        if act in _UNARY:
            return g.add_node(_UNARY[act], [x], name=f"{name}/{act}")[0]
        return x
