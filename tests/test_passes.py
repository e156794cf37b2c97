"""Graph passes: each rewrites what it should and the optimized graph computes the same values."""

from __future__ import annotations

import numpy as np
from graphs import conv_bn_relu_graph

from wasmrt.compile.ir import Graph
from wasmrt.compile.passes import optimize


def _same_after_optimize(build, feeds: dict[str, np.ndarray]) -> Graph:
    g = build()
    before = {o: v for o, v in g.evaluate(feeds).items() if o in g.outputs}
    g = build()
    optimize(g)
    after = g.evaluate(feeds)
    for k, v in before.items():
        np.testing.assert_allclose(after[k], v, rtol=1e-5, atol=1e-5)
    return g


def test_batchnorm_and_relu_fold_into_the_conv() -> None:
    x = np.random.default_rng(0).standard_normal((1, 9, 9, 5)).astype(np.float32)
    g = _same_after_optimize(conv_bn_relu_graph, {"input": x})
    assert [n.op for n in g.nodes] == ["CONV_2D", "RESHAPE", "FULLY_CONNECTED"]
    assert g.nodes[0].attrs["act_min"] == 0.0 and g.outputs == ["logits"]


def _transposes() -> Graph:
    g = Graph()
    x = g.add_input("x", (1, 4, 5, 6))
    (y,) = g.add_node("TRANSPOSE", [x], {"perm": (0, 3, 1, 2)})
    (y,) = g.add_node("TRANSPOSE", [y], {"perm": (0, 2, 3, 1)})  # cancels the first
    (y,) = g.add_node("SIGMOID", [y])
    (p,) = g.add_node("MEAN", [y], {"axes": (1, 2), "keepdims": True})  # [1,1,1,6]
    (p,) = g.add_node("TRANSPOSE", [p], {"perm": (0, 3, 1, 2)})  # NHWC -> NCHW of a 1x1 map: a reshape
    g.outputs = [p]
    return g


def test_transpose_pairs_cancel_and_size1_moves_become_reshapes() -> None:
    x = np.random.default_rng(1).standard_normal((1, 4, 5, 6)).astype(np.float32)
    g = _same_after_optimize(_transposes, {"x": x})
    assert [n.op for n in g.nodes] == ["SIGMOID", "MEAN", "RESHAPE"]


def _consts_and_noops() -> Graph:
    g = Graph()
    x = g.add_input("x", (2, 3))
    a = g.add_const("a", np.arange(6, dtype=np.float32).reshape(2, 3))
    (c,) = g.add_node("MUL", [a, g.add_const("two", np.float32(2))])  # constant: folded
    (y,) = g.add_node("ADD", [x, c])
    (y,) = g.add_node("RESHAPE", [y], {"shape": (2, 3)})  # identity: dropped
    (y,) = g.add_node("CLIP", [y], {"min": 0.0, "max": 6.0})  # fused into ADD
    g.outputs = [y]
    return g


def test_constants_fold_noops_vanish_and_clip_fuses() -> None:
    x = np.random.default_rng(2).standard_normal((2, 3)).astype(np.float32) * 8
    g = _same_after_optimize(_consts_and_noops, {"x": x})
    assert [n.op for n in g.nodes] == ["ADD"]
    assert (g.nodes[0].attrs["act_min"], g.nodes[0].attrs["act_max"]) == (0.0, 6.0)


def test_affine_is_not_folded_across_a_shared_output() -> None:
    """A conv output read by two ops must stay as it is: folding the MUL into it would change the other reader."""

    def build() -> Graph:
        g = conv_bn_relu_graph()
        conv_out = g.nodes[0].outputs[0]
        (extra,) = g.add_node("SIGMOID", [conv_out])
        g.outputs.append(extra)
        return g

    x = np.random.default_rng(3).standard_normal((1, 9, 9, 5)).astype(np.float32)
    g = _same_after_optimize(build, {"input": x})
    assert "MUL" in [n.op for n in g.nodes]


def _residual_block(second_use: bool = False, clamp_conv: bool = False) -> Graph:
    """x -> conv 1x1 -> conv 1x1 (+ x) -> relu: the inverted-residual shape of MobileNetV2."""
    rng = np.random.default_rng(3)
    g = Graph()
    x = g.add_input("x", (1, 5, 4, 8))
    (h,) = g.add_node("CONV_2D", [x, g.add_const("w1", rng.standard_normal((16, 1, 1, 8)).astype(np.float32))],
                      {"act_min": 0.0, "act_max": 6.0}, name="expand")
    (c,) = g.add_node("CONV_2D", [h, g.add_const("w2", rng.standard_normal((8, 1, 1, 16)).astype(np.float32)),
                                  g.add_const("b2", rng.standard_normal(8).astype(np.float32))],
                      {"act_min": -1.0, "act_max": 1.0} if clamp_conv else {}, name="project")
    (y,) = g.add_node("ADD", [x, c], name="add")
    (y,) = g.add_node("RELU", [y], name="relu")
    g.outputs = [y, c] if second_use else [y]
    return g


def test_residual_add_fuses_into_the_convolution_and_splits_back() -> None:
    from wasmrt.compile.passes import split_residual_adds

    x = np.random.default_rng(4).standard_normal((1, 5, 4, 8)).astype(np.float32)
    g = _residual_block()
    ref = g.evaluate({"x": x})[g.outputs[0]]
    optimize(g)
    assert [n.op for n in g.nodes] == ["CONV_2D", "CONV_2D"]
    proj = g.nodes[1]
    assert proj.inputs[3] == "x" and (proj.attrs["act_min"], proj.attrs["act_max"]) == (0.0, float("inf"))
    np.testing.assert_array_equal(g.evaluate({"x": x})[g.outputs[0]], ref)  # the same float32 roundings
    s = split_residual_adds(g)
    assert [n.op for n in s.nodes] == ["CONV_2D", "CONV_2D", "ADD"] and len(g.nodes) == 2  # the input graph stays
    np.testing.assert_array_equal(s.evaluate({"x": x})[s.outputs[0]], ref)


def test_residual_add_stays_where_the_conv_output_is_used_or_clamped() -> None:
    for g in (_residual_block(second_use=True), _residual_block(clamp_conv=True)):
        optimize(g)
        assert [n.op for n in g.nodes] == ["CONV_2D", "CONV_2D", "ADD"]


def _padded_convs(value: float = 0.0, shared: bool = False) -> Graph:
    """TFLite's stride-2 layers: an explicit PAD of H and W, then a VALID convolution (a depthwise 3x3/2 here), and
    a PAD before a 1x1 convolution (left alone: the padding would take it off its in-place GEMM path)."""
    rng = np.random.default_rng(5)
    g = Graph()
    x = g.add_input("x", (1, 7, 6, 4))
    (p,) = g.add_node("PAD", [x], {"pads": (0, 0, 1, 0, 0, 1, 2, 0), "value": value})
    (y,) = g.add_node("CONV_2D", [p, g.add_const("w", rng.standard_normal((4, 3, 3, 1)).astype(np.float32))],
                      {"strides": (2, 2), "groups": 4, "pads": (1, 0, 0, 0)})
    (q,) = g.add_node("PAD", [y], {"pads": (0, 1, 1, 0, 0, 1, 1, 0)})
    (z,) = g.add_node("CONV_2D", [q, g.add_const("w1", rng.standard_normal((3, 1, 1, 4)).astype(np.float32))])
    g.outputs = [y, z, p] if shared else [y, z]
    return g


def test_zero_pads_fold_into_the_following_kxk_convolution() -> None:
    x = np.random.default_rng(6).standard_normal((1, 7, 6, 4)).astype(np.float32)
    g = _same_after_optimize(_padded_convs, {"x": x})
    assert [n.op for n in g.nodes] == ["CONV_2D", "PAD", "CONV_2D"]
    assert g.nodes[0].attrs["pads"] == (1, 1, 1, 2) and g.nodes[0].inputs[0] == "x"
    for build in (lambda: _padded_convs(value=1.0), lambda: _padded_convs(shared=True)):  # a non-zero or a read pad
        g = _same_after_optimize(build, {"x": x})
        assert [n.op for n in g.nodes] == ["PAD", "CONV_2D", "PAD", "CONV_2D"]


def _decomposed_hard_swish(three: float = 3.0, six: float = 6.0, by_reciprocal: bool = False,
                           shared: bool = False, swap: bool = False) -> Graph:
    """x * clip(x + 3, 0, 6) / 6 as Paddle exports it (ADD, CLIP, MUL, DIV), or times 1/6, after a convolution"""
    rng = np.random.default_rng(8)
    g = Graph()
    x = g.add_input("x", (1, 6, 5, 4))
    (c,) = g.add_node("CONV_2D", [x, g.add_const("w", rng.standard_normal((4, 1, 1, 4)).astype(np.float32))])
    k3 = g.add_const("three", np.full((1, 1, 1, 1), three, np.float32))
    (t,) = g.add_node("ADD", [k3, c] if swap else [c, k3])
    (t,) = g.add_node("CLIP", [t], {"min": 0.0, "max": 6.0})
    (m,) = g.add_node("MUL", [t, c] if swap else [c, t])
    k = np.float32(1 / six) if by_reciprocal else np.float32(six)
    (y,) = g.add_node("MUL" if by_reciprocal else "DIV", [m, g.add_const("six", np.full((1,), k, np.float32))],
                      outputs=["y"])
    g.outputs = [y, m] if shared else [y]
    return g


def test_decomposed_hard_swish_becomes_one_op() -> None:
    x = np.random.default_rng(9).uniform(-8, 8, (1, 6, 5, 4)).astype(np.float32)
    for build in (_decomposed_hard_swish, lambda: _decomposed_hard_swish(by_reciprocal=True),
                  lambda: _decomposed_hard_swish(swap=True)):
        g = _same_after_optimize(build, {"x": x})
        assert [n.op for n in g.nodes] == ["CONV_2D", "HARD_SWISH"] and g.outputs == ["y"]
    # other constants, or a product another op reads, stay as they are
    for build in (lambda: _decomposed_hard_swish(three=2.0), lambda: _decomposed_hard_swish(six=5.0),
                  lambda: _decomposed_hard_swish(shared=True)):
        g = _same_after_optimize(build, {"x": x})
        assert [n.op for n in g.nodes] == ["CONV_2D", "ADD", "MUL", "DIV"]
