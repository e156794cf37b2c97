"""MobileNetV1 1.0 / 224 (Howard et al. 2017) built in code as a graph, with seeded random weights: a 3x3 stride-2
stem, 13 depthwise-separable blocks (3x3 depthwise + 1x1 pointwise, BatchNorm folded into a bias, ReLU6), global
average pooling and a 1024 -> 1000 fully connected classifier (568.7 M multiply-adds). Its predictions mean nothing:
it is the standard shape for timing sparse against dense layers (`wasmrt bench --sparsity-sweep`).
"""

from __future__ import annotations

import numpy as np

from wasmrt.compile.ir import Graph

# (pointwise output channels, depthwise stride) of the 13 blocks
BLOCKS = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1), (512, 1), (512, 1), (512, 1),
          (512, 1), (1024, 2), (1024, 1)]
SEED = 20241123


def _conv(g: Graph, rng: np.random.Generator, x: str, name: str, cout: int, k: int, stride: int, groups: int) -> str:
    cin = g.tensors[x].shape[3]
    fan_in = cin // groups * k * k
    w = rng.normal(0.0, np.sqrt(2.0 / fan_in), (cout, k, k, cin // groups)).astype(np.float32)
    b = rng.normal(0.0, 0.05, cout).astype(np.float32)
    h = g.tensors[x].shape[1]
    total = max((-(-h // stride) - 1) * stride + k - h, 0)  # TF SAME
    pads = (total // 2, total // 2, total - total // 2, total - total // 2)
    (y,) = g.add_node("CONV_2D", [x, g.add_const(f"{name}/w", w), g.add_const(f"{name}/b", b)],
                      {"strides": (stride, stride), "pads": pads, "groups": groups, "act_min": 0.0, "act_max": 6.0},
                      name=name)
    return y


def mobilenet_v1(size: int = 224, classes: int = 1000, seed: int = SEED) -> Graph:
    rng = np.random.default_rng(seed)
    g = Graph()
    g.metadata.source = "mobilenet_v1 (random weights, built in code)"
    x = g.add_input("input", (1, size, size, 3))
    x = _conv(g, rng, x, "conv0", 32, 3, 2, 1)
    for i, (cout, stride) in enumerate(BLOCKS, 1):
        c = g.tensors[x].shape[3]
        x = _conv(g, rng, x, f"dw{i}", c, 3, stride, c)
        x = _conv(g, rng, x, f"pw{i}", cout, 1, 1, 1)
    (x,) = g.add_node("MEAN", [x], {"axes": (1, 2), "keepdims": False}, name="pool")
    w = rng.normal(0.0, np.sqrt(1.0 / 1024), (classes, 1024)).astype(np.float32)
    wb = [g.add_const("fc/w", w), g.add_const("fc/b", np.zeros(classes, np.float32))]
    (y,) = g.add_node("FULLY_CONNECTED", [x, *wb], name="fc", outputs=["logits"])
    g.outputs.append(y)
    return g


def _layer(name: str, shape: tuple[int, ...]) -> tuple[Graph, str, np.random.Generator]:
    g = Graph()
    g.metadata.source = f"{name} (random weights, built in code)"
    return g, g.add_input("input", shape), np.random.default_rng(SEED)


def conv3x3_layer(size: int = 28, channels: int = 128) -> Graph:
    """One 3x3 convolution (stride 1, SAME, ReLU6) over a size x size x channels input: the KxK case of the sweep."""
    g, x, rng = _layer(f"conv3x3 {size}x{size}x{channels}", (1, size, size, channels))
    g.outputs.append(_conv(g, rng, x, "conv3x3", channels, 3, 1, 1))
    return g


def pointwise_layer(size: int, cin: int, cout: int) -> Graph:
    g, x, rng = _layer(f"conv1x1 {size}x{size}x{cin}->{cout}", (1, size, size, cin))
    g.outputs.append(_conv(g, rng, x, "conv1x1", cout, 1, 1, 1))
    return g


def fc_layer(k: int, n: int) -> Graph:
    g, x, rng = _layer(f"fc {k}->{n}", (1, k))
    w = rng.normal(0.0, np.sqrt(1.0 / k), (n, k)).astype(np.float32)
    (y,) = g.add_node("FULLY_CONNECTED", [x, g.add_const("fc/w", w), g.add_const("fc/b", np.zeros(n, np.float32))],
                      name="fc", outputs=["y"])
    g.outputs.append(y)
    return g
