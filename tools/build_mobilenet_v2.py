"""Build MobileNetV2 1.0 / 224 (1000 classes) as an opset-13 ONNX model with seeded random weights.

The architecture is the standard one (Sandler et al. 2018): a 3x3 stride-2 stem, 17 inverted-residual blocks, a 1x1
conv to 1280 channels, global average pooling and a fully connected layer. Every conv is followed by a kept
BatchNormalization node (the converter folds them); ReLU6 is Clip(0, 6). The weights are random but scaled so that
activations stay finite and varied through the whole network: this model is for speed, memory and layout tests,
its predictions mean nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

# (expansion t, output channels c, repeats n, first stride s) from the paper's Table 2
INVERTED_RESIDUAL_SETTINGS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                              (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]
STEM_CHANNELS = 32
HEAD_CHANNELS = 1280
NUM_CLASSES = 1000
INPUT_SIZE = 224
BN_EPSILON = 1e-5
SEED = 20240601


class _Builder:
    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self.count = 0

    def const(self, name: str, value: np.ndarray) -> str:
        from onnx import numpy_helper

        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(value, np.float32), name))
        return name

    def node(self, op: str, inputs: list[str], out: str, **attrs: Any) -> str:
        from onnx import helper

        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def conv_bn(self, x: str, cin: int, cout: int, kernel: int, stride: int, groups: int, relu6: bool) -> str:
        """Conv (no bias) + BatchNormalization [+ ReLU6] with weights scaled for the following activation."""
        self.count += 1
        p = f"conv{self.count}"
        fan_in = cin // groups * kernel * kernel
        # He init before ReLU6; the linear bottleneck gets a smaller gain so residual sums do not grow
        gain = 2.0 if relu6 else 0.5
        w = self.rng.normal(0.0, np.sqrt(gain / fan_in), (cout, cin // groups, kernel, kernel))
        pad = kernel // 2
        y = self.node("Conv", [x, self.const(f"{p}.weight", w)], f"{p}/conv", kernel_shape=[kernel, kernel],
                      strides=[stride, stride], pads=[pad] * 4, group=groups)
        y = self.node("BatchNormalization", [y, *self.bn_params(p, cout, relu6)], f"{p}/bn", epsilon=BN_EPSILON)
        if relu6:
            y = self.node("Clip", [y, "relu6_min", "relu6_max"], f"{p}/relu6")
        return y

    def bn_params(self, p: str, c: int, relu6: bool) -> list[str]:
        """Non-trivial BN statistics: every channel gets its own scale and shift, none of them degenerate."""
        r = self.rng
        gamma = r.uniform(0.6, 1.4, c) if relu6 else r.uniform(0.3, 0.7, c)
        beta = r.uniform(0.0, 0.6, c) if relu6 else r.normal(0.0, 0.1, c)  # keep most ReLU6 inputs positive
        mean = r.normal(0.0, 0.2, c)
        var = r.uniform(0.5, 2.0, c)
        return [self.const(f"{p}.bn.{n}", v) for n, v in
                (("weight", gamma), ("bias", beta), ("running_mean", mean), ("running_var", var))]

    def inverted_residual(self, x: str, cin: int, cout: int, stride: int, t: int) -> str:
        hidden = cin * t
        y = x if t == 1 else self.conv_bn(x, cin, hidden, 1, 1, 1, True)
        y = self.conv_bn(y, hidden, hidden, 3, stride, hidden, True)
        y = self.conv_bn(y, hidden, cout, 1, 1, 1, False)
        if stride == 1 and cin == cout:
            y = self.node("Add", [y, x], f"add{self.count}")
        return y


def build_onnx(labels: list[str] | None = None, preprocess: dict[str, Any] | None = None, seed: int = SEED) -> Any:
    """MobileNetV2: input "input" [1,3,224,224] NCHW, output "logits" [1,1000]."""
    from onnx import TensorProto, helper

    g = _Builder(np.random.default_rng(seed))
    g.const("relu6_min", np.array(0.0))
    g.const("relu6_max", np.array(6.0))
    x = g.conv_bn("input", 3, STEM_CHANNELS, 3, 2, 1, True)
    cin = STEM_CHANNELS
    for t, c, n, s in INVERTED_RESIDUAL_SETTINGS:
        for i in range(n):
            x = g.inverted_residual(x, cin, c, s if i == 0 else 1, t)
            cin = c
    x = g.conv_bn(x, cin, HEAD_CHANNELS, 1, 1, 1, True)
    x = g.node("GlobalAveragePool", [x], "gap")
    x = g.node("Flatten", [x], "flatten", axis=1)
    w = g.rng.normal(0.0, np.sqrt(1.0 / HEAD_CHANNELS), (NUM_CLASSES, HEAD_CHANNELS))
    b = g.rng.normal(0.0, 0.01, NUM_CLASSES)
    g.node("Gemm", [x, g.const("fc.weight", w), g.const("fc.bias", b)], "logits", transB=1)

    graph = helper.make_graph(
        g.nodes, "mobilenet_v2",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, INPUT_SIZE, INPUT_SIZE])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, NUM_CLASSES])],
        g.inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="wasmrt")
    model.ir_version = 8
    props = {"wasmrt.note": f"random weights (seed {seed}): predictions are meaningless"}
    if preprocess is not None:
        props["wasmrt.preprocess.input"] = json.dumps(preprocess)
    if labels is not None:
        props["wasmrt.labels"] = json.dumps(labels)
    helper.set_model_props(model, props)
    return model


def build(out: Path, labels: list[str] | None = None, preprocess: dict[str, Any] | None = None) -> Path:
    import onnx

    model = build_onnx(labels, preprocess)
    onnx.checker.check_model(model)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_bytes(model.SerializeToString())
    tmp.replace(out)
    return out


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", type=Path, help="output .onnx (default: models/cache/mobilenet_v2.onnx)")
    args = ap.parse_args(argv)
    if args.output is None:
        from wasmrt.models import model_path

        print(model_path("mobilenet_v2"))  # builds with labels and preprocessing metadata
    else:
        print(build(args.output))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
