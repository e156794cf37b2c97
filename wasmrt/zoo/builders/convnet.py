"""A small layer list for convolutional networks built with seeded random weights (resnet18.py, unet.py): each layer
has a numpy forward pass (to calibrate batch-norm statistics on image-like inputs, as mobilenet_v2.py does) and an
ONNX node. The ops are the ones the peers' toolchains rebuild as PyTorch layers (wasmrt/bench/toolchain_export.py:
nn.Conv2d, nn.BatchNorm2d, nn.ReLU, nn.MaxPool2d, nn.ConvTranspose2d, torch.cat, ...), so LiteRT and onnxruntime
run what litert-torch and torch.onnx.export make of the same PyTorch module.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from wasmrt.zoo.builders.mobilenet_v2 import calibration_images

BN_EPSILON = 1e-5


class Net:
    """Layers appended in order; values are named strings, numpy activations computed as layers are added."""

    def __init__(self, rng: np.random.Generator, x: np.ndarray, input_name: str = "input") -> None:
        self.rng = rng
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self.vals: dict[str, np.ndarray] = {input_name: x}
        self.n = 0

    def _name(self, kind: str) -> str:
        self.n += 1
        return f"{kind}{self.n}"

    def const(self, name: str, value: np.ndarray) -> str:
        from onnx import numpy_helper

        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(value, np.float32), name))
        return name

    def node(self, op: str, inputs: list[str], out: str, value: np.ndarray, **attrs: Any) -> str:
        from onnx import helper

        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        self.vals[out] = value.astype(np.float32)
        return out

    def conv_bn(self, x: str, cout: int, k: int, stride: int = 1, relu: bool = True) -> str:
        """Conv (no bias, He init) + BatchNormalization calibrated on the activations it sees [+ ReLU]."""
        name, xv = self._name("conv"), self.vals[x]
        cin = xv.shape[1]
        w = self.rng.normal(0.0, np.sqrt((2.0 if relu else 1.0) / (cin * k * k)), (cout, cin, k, k))
        y = conv(xv, w, stride, k // 2)
        y = self.node("Conv", [x, self.const(f"{name}.weight", w)], f"{name}/conv", y, kernel_shape=[k, k],
                      strides=[stride, stride], pads=[k // 2] * 4)
        return self.bn_relu(y, name, relu)

    def bn_relu(self, y: str, name: str, relu: bool) -> str:
        yv = self.vals[y]
        ch = yv.shape[1]
        mean, var = yv.mean(axis=(0, 2, 3), dtype=np.float64), yv.var(axis=(0, 2, 3), dtype=np.float64) + 1e-3
        bn = {"weight": self.rng.uniform(0.6, 1.4, ch), "bias": self.rng.normal(0.2 if relu else 0.0, 0.2, ch),
              "running_mean": mean + self.rng.normal(0.0, 0.1, ch) * np.sqrt(var),
              "running_var": var * self.rng.uniform(0.8, 1.25, ch)}
        scale = bn["weight"] / np.sqrt(bn["running_var"] + BN_EPSILON)
        z = (yv - bn["running_mean"][:, None, None]) * scale[:, None, None] + bn["bias"][:, None, None]
        params = [self.const(f"{name}.bn.{p}", bn[p]) for p in ("weight", "bias", "running_mean", "running_var")]
        out = self.node("BatchNormalization", [y, *params], f"{name}/bn", z, epsilon=BN_EPSILON)
        return self.node("Relu", [out], f"{name}/relu", np.maximum(z, 0.0)) if relu else out

    def add_relu(self, a: str, b: str) -> str:
        name = self._name("add")
        s = self.node("Add", [a, b], name, self.vals[a] + self.vals[b])
        return self.node("Relu", [s], f"{name}/relu", np.maximum(self.vals[s], 0.0))

    def max_pool(self, x: str, k: int, stride: int, pad: int) -> str:
        xv = self.vals[x]
        xp = np.pad(xv, ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=-np.inf)
        ho, wo = (xv.shape[2] + 2 * pad - k) // stride + 1, (xv.shape[3] + 2 * pad - k) // stride + 1
        y = np.full((*xv.shape[:2], ho, wo), -np.inf, np.float32)
        for i in range(k):
            for j in range(k):
                y = np.maximum(y, xp[:, :, i:i + stride * ho:stride, j:j + stride * wo:stride])
        return self.node("MaxPool", [x], self._name("pool"), y, kernel_shape=[k, k], strides=[stride, stride],
                         pads=[pad] * 4)

    def up_bn(self, x: str, cout: int) -> str:
        """ConvTranspose 2x2 stride 2 (no bias) + BatchNormalization + ReLU: twice the map size."""
        name, xv = self._name("up"), self.vals[x]
        cin = xv.shape[1]
        w = self.rng.normal(0.0, np.sqrt(2.0 / cin), (cin, cout, 2, 2))  # ONNX ConvTranspose: [Cin, Cout, kh, kw]
        n, _, h, wd = xv.shape
        y = np.einsum("nchw,cokl->nohkwl", xv, w.astype(np.float32), optimize=True).reshape(n, cout, 2 * h, 2 * wd)
        y = self.node("ConvTranspose", [x, self.const(f"{name}.weight", w)], f"{name}/convt", y, kernel_shape=[2, 2],
                      strides=[2, 2])
        return self.bn_relu(y, name, True)

    def concat(self, a: str, b: str) -> str:
        return self.node("Concat", [a, b], self._name("cat"), np.concatenate([self.vals[a], self.vals[b]], 1), axis=1)

    def global_pool_fc(self, x: str, classes: int, out: str) -> str:
        xv = self.vals[x]
        g = self.node("GlobalAveragePool", [x], "gap", xv.mean(axis=(2, 3), keepdims=True))
        f = self.node("Flatten", [g], "flatten", self.vals[g].reshape(xv.shape[0], -1), axis=1)
        ch = xv.shape[1]
        w, b = self.rng.normal(0.0, np.sqrt(1.0 / ch), (classes, ch)), self.rng.normal(0.0, 0.01, classes)
        return self.node("Gemm", [f, self.const("fc.weight", w), self.const("fc.bias", b)], out,
                         self.vals[f] @ w.T.astype(np.float32) + b, transB=1)

    def conv_bias(self, x: str, cout: int, out: str) -> str:
        """A 1x1 conv with bias: a head."""
        xv = self.vals[x]
        w = self.rng.normal(0.0, np.sqrt(1.0 / xv.shape[1]), (cout, xv.shape[1], 1, 1))
        b = self.rng.normal(0.0, 0.01, cout)
        y = conv(xv, w, 1, 0) + b[None, :, None, None]
        return self.node("Conv", [x, self.const("head.weight", w), self.const("head.bias", b)], out, y,
                         kernel_shape=[1, 1])

    def model(self, name: str, in_shape: list[int], out: str, out_shape: list[int], seed: int,
              preprocess: dict[str, Any] | None) -> Any:
        from onnx import TensorProto, helper

        graph = helper.make_graph(self.nodes, name,
                                  [helper.make_tensor_value_info("input", TensorProto.FLOAT, in_shape)],
                                  [helper.make_tensor_value_info(out, TensorProto.FLOAT, out_shape)], self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="wasmrt")
        model.ir_version = 8
        props = {"wasmrt.note": f"random weights (seed {seed}): outputs are meaningless"}
        if preprocess is not None:
            props["wasmrt.preprocess.input"] = json.dumps(preprocess)
        helper.set_model_props(model, props)
        return model


def conv(x: np.ndarray, w: np.ndarray, stride: int, pad: int) -> np.ndarray:
    """Dense NCHW convolution in float32 (numpy), for calibration."""
    k = w.shape[-1]
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    ho, wo = (x.shape[2] + 2 * pad - k) // stride + 1, (x.shape[3] + 2 * pad - k) // stride + 1
    out = np.zeros((x.shape[0], w.shape[0], ho, wo), np.float32)
    for i in range(k):
        for j in range(k):
            patch = xp[:, :, i:i + stride * ho:stride, j:j + stride * wo:stride]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j].astype(np.float32), optimize=True)
    return out


def images(rng: np.random.Generator, size: int) -> np.ndarray:
    """Two image-like calibration inputs [2, 3, size, size] in [-1, 1]."""
    x = calibration_images(rng)
    if size == x.shape[-1]:
        return x
    idx = np.arange(size) * x.shape[-1] // size
    return np.ascontiguousarray(x[:, :, idx][:, :, :, idx])
