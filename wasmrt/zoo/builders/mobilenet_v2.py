"""Build MobileNetV2 1.0 / 224 (1000 classes) as an opset-13 ONNX model with seeded random weights.

The architecture is the standard one (Sandler et al. 2018): a 3x3 stride-2 stem, 17 inverted-residual blocks, a 1x1
conv to 1280 channels, global average pooling and a fully connected layer. Every conv is followed by a kept
BatchNormalization node (the converter folds them); ReLU6 is Clip(0, 6). Conv and FC weights are random (He init);
the BN statistics are set from a numpy forward pass over two image-like inputs, perturbed so that folding them is
not a no-op. Without that calibration the shifts dominate and the logits barely depend on the input (0.1% relative
change between images); with it activations stay finite, mostly spatial, and logits change by 25-50% between images.
This model is for speed, memory and layout tests: its predictions mean nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from wasmrt.zoo.builders import output_main, write_checked

# (expansion t, output channels c, repeats n, first stride s) from the paper's Table 2
INVERTED_RESIDUAL_SETTINGS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                              (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]
STEM_CHANNELS = 32
HEAD_CHANNELS = 1280
NUM_CLASSES = 1000
INPUT_SIZE = 224
BN_EPSILON = 1e-5
SEED = 20240601


@dataclass
class ConvBN:
    """One conv (no bias) + BatchNormalization [+ ReLU6]; BN statistics are filled in by `calibrate`."""

    name: str
    weight: np.ndarray  # OIHW
    stride: int
    groups: int
    relu6: bool
    bn: dict[str, np.ndarray] = field(default_factory=dict)  # weight, bias, running_mean, running_var


@dataclass
class Block:
    convs: list[ConvBN]
    residual: bool


def _conv(rng: np.random.Generator, name: str, cin: int, cout: int, kernel: int, stride: int, groups: int,
          relu6: bool) -> ConvBN:
    fan_in = cin // groups * kernel * kernel
    gain = 2.0 if relu6 else 1.0  # He init before ReLU6, LeCun init for the linear bottleneck
    w = rng.normal(0.0, np.sqrt(gain / fan_in), (cout, cin // groups, kernel, kernel))
    return ConvBN(name, w, stride, groups, relu6)


def architecture(rng: np.random.Generator) -> tuple[ConvBN, list[Block], ConvBN]:
    """Stem, the 17 inverted-residual blocks and the 1x1 head conv, with random conv weights."""
    n = iter(range(1, 1000))
    stem = _conv(rng, f"conv{next(n)}", 3, STEM_CHANNELS, 3, 2, 1, True)
    blocks: list[Block] = []
    cin = STEM_CHANNELS
    for t, c, reps, s in INVERTED_RESIDUAL_SETTINGS:
        for i in range(reps):
            stride, hidden = (s if i == 0 else 1), cin * t
            convs = [] if t == 1 else [_conv(rng, f"conv{next(n)}", cin, hidden, 1, 1, 1, True)]
            convs.append(_conv(rng, f"conv{next(n)}", hidden, hidden, 3, stride, hidden, True))
            convs.append(_conv(rng, f"conv{next(n)}", hidden, c, 1, 1, 1, False))
            blocks.append(Block(convs, stride == 1 and cin == c))
            cin = c
    head = _conv(rng, f"conv{next(n)}", cin, HEAD_CHANNELS, 1, 1, 1, True)
    return stem, blocks, head


# -- calibration: a numpy forward pass sets BN statistics from the activations they will really see -----------


def _conv_forward(x: np.ndarray, c: ConvBN) -> np.ndarray:
    k = c.weight.shape[-1]
    p = k // 2
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    ho = (x.shape[2] + 2 * p - k) // c.stride + 1
    wo = (x.shape[3] + 2 * p - k) // c.stride + 1
    out = np.zeros((x.shape[0], c.weight.shape[0], ho, wo), dtype=np.float32)
    for i in range(k):
        for j in range(k):
            patch = xp[:, :, i:i + c.stride * ho:c.stride, j:j + c.stride * wo:c.stride]
            if c.groups == 1:
                out += np.einsum("nchw,oc->nohw", patch, c.weight[:, :, i, j].astype(np.float32), optimize=True)
            else:  # depthwise
                out += patch * c.weight[None, :, 0, i, j, None, None].astype(np.float32)
    return out


def _calibrated_conv_bn(x: np.ndarray, c: ConvBN, rng: np.random.Generator) -> np.ndarray:
    """Run the conv, then give BN statistics near the measured ones (but not equal: keep the fold non-trivial)."""
    y = _conv_forward(x, c)
    mean = y.mean(axis=(0, 2, 3), dtype=np.float64)
    var = y.var(axis=(0, 2, 3), dtype=np.float64) + 1e-3
    ch = len(mean)
    c.bn = {
        "weight": rng.uniform(0.6, 1.4, ch) if c.relu6 else rng.uniform(0.4, 0.8, ch),
        "bias": rng.normal(0.3, 0.3, ch) if c.relu6 else rng.normal(0.0, 0.1, ch),  # most ReLU6 inputs positive
        "running_mean": mean + rng.normal(0.0, 0.1, ch) * np.sqrt(var),
        "running_var": var * rng.uniform(0.8, 1.25, ch),
    }
    bn = c.bn
    scale = bn["weight"] / np.sqrt(bn["running_var"] + BN_EPSILON)
    y = ((y - bn["running_mean"][:, None, None]) * scale[:, None, None] + bn["bias"][:, None, None])
    y = y.astype(np.float32)
    return np.clip(y, 0.0, 6.0) if c.relu6 else y


def calibration_images(rng: np.random.Generator, n: int = 2) -> np.ndarray:
    """Image-like inputs in [-1, 1]: noise at several scales, coarse scales strongest (natural-image spectrum)."""
    x = np.zeros((n, 3, INPUT_SIZE, INPUT_SIZE), np.float32)
    for cells, amp in ((4, 0.5), (16, 0.3), (56, 0.15), (224, 0.05)):
        rep = INPUT_SIZE // cells
        x += amp * rng.uniform(-1, 1, (n, 3, cells, cells)).repeat(rep, 2).repeat(rep, 3)
    return np.clip(x, -1.0, 1.0)


def calibrate(stem: ConvBN, blocks: list[Block], head: ConvBN, rng: np.random.Generator) -> None:
    x = _calibrated_conv_bn(calibration_images(rng), stem, rng)
    for b in blocks:
        y = x
        for c in b.convs:
            y = _calibrated_conv_bn(y, c, rng)
        x = y + x if b.residual else y
    _calibrated_conv_bn(x, head, rng)


# -- ONNX --------------------------------------------------------------------------------------------------------


class _Graph:
    def __init__(self) -> None:
        self.nodes: list[Any] = []
        self.inits: list[Any] = []

    def const(self, name: str, value: np.ndarray) -> str:
        from onnx import numpy_helper

        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(value, np.float32), name))
        return name

    def node(self, op: str, inputs: list[str], out: str, **attrs: Any) -> str:
        from onnx import helper

        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def conv_bn(self, x: str, c: ConvBN) -> str:
        k = c.weight.shape[-1]
        y = self.node("Conv", [x, self.const(f"{c.name}.weight", c.weight)], f"{c.name}/conv", kernel_shape=[k, k],
                      strides=[c.stride, c.stride], pads=[k // 2] * 4, group=c.groups)
        params = [self.const(f"{c.name}.bn.{p}", c.bn[p]) for p in ("weight", "bias", "running_mean", "running_var")]
        y = self.node("BatchNormalization", [y, *params], f"{c.name}/bn", epsilon=BN_EPSILON)
        return self.node("Clip", [y, "relu6_min", "relu6_max"], f"{c.name}/relu6") if c.relu6 else y


def build_onnx(labels: list[str] | None = None, preprocess: dict[str, Any] | None = None, seed: int = SEED) -> Any:
    """MobileNetV2: input "input" [1,3,224,224] NCHW, output "logits" [1,1000]."""
    from onnx import TensorProto, helper

    rng = np.random.default_rng(seed)
    stem, blocks, head = architecture(rng)
    calibrate(stem, blocks, head, rng)
    g = _Graph()
    g.const("relu6_min", np.array(0.0))
    g.const("relu6_max", np.array(6.0))
    x = g.conv_bn("input", stem)
    for i, b in enumerate(blocks):
        y = x
        for c in b.convs:
            y = g.conv_bn(y, c)
        x = g.node("Add", [y, x], f"block{i}/add") if b.residual else y
    x = g.conv_bn(x, head)
    x = g.node("GlobalAveragePool", [x], "gap")
    x = g.node("Flatten", [x], "flatten", axis=1)
    w = rng.normal(0.0, np.sqrt(1.0 / HEAD_CHANNELS), (NUM_CLASSES, HEAD_CHANNELS))
    b = rng.normal(0.0, 0.01, NUM_CLASSES)
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
    return write_checked(build_onnx(labels, preprocess), out)


def main(argv: list[str] | None = None) -> int:
    # the bundled model (preprocessing embedded): `python -m wasmrt.zoo.models fetch`
    return output_main(__doc__, build, argv)


if __name__ == "__main__":
    raise SystemExit(main())
