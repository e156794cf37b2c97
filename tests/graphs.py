"""Small hand-built graphs for format, planner and pass tests."""

from __future__ import annotations

import numpy as np

from wasmrt.compile.ir import Graph


def conv_bn_relu_graph(seed: int = 0) -> Graph:
    """input [1,9,9,5] -> conv 3x3 s2 -> MUL/ADD per channel (inference BatchNorm) -> RELU -> reshape -> FC."""
    rng = np.random.default_rng(seed)
    g = Graph()
    x = g.add_input("input", (1, 9, 9, 5))
    w = g.add_const("w", rng.standard_normal((6, 3, 3, 5)).astype(np.float32))
    b = g.add_const("b", rng.standard_normal(6).astype(np.float32))
    (y,) = g.add_node("CONV_2D", [x, w, b], {"strides": (2, 2), "pads": (1, 1, 0, 0)}, name="conv")
    s = g.add_const("bn_scale", rng.uniform(0.5, 2, (1, 1, 1, 6)).astype(np.float32))
    t = g.add_const("bn_shift", rng.standard_normal(6).astype(np.float32))
    (y,) = g.add_node("MUL", [y, s], name="bn_mul")
    (y,) = g.add_node("ADD", [y, t], name="bn_add")
    (y,) = g.add_node("RELU", [y], name="relu")
    n = int(np.prod(g.tensors[y].shape))
    (y,) = g.add_node("RESHAPE", [y], {"shape": (1, n)}, name="flatten")
    fw = g.add_const("fc_w", rng.standard_normal((4, n)).astype(np.float32))
    (y,) = g.add_node("FULLY_CONNECTED", [y, fw], name="fc", outputs=["logits"])
    g.outputs.append(y)
    return g
