"""The memory planner: no two live tensors share bytes, reshape aliases, arena close to the lower bound."""

from __future__ import annotations

import numpy as np
from graphs import conv_bn_relu_graph

from wasmrt.compile.ir import Graph
from wasmrt.compile.passes import optimize
from wasmrt.compile.planner import plan_memory


def _lifetimes(g: Graph) -> dict[str, tuple[int, int]]:
    life: dict[str, list[int]] = {n: [-1, -1] for n in g.inputs}
    for k, n in enumerate(g.nodes):
        for name in n.outputs:
            life.setdefault(name, [k, k])
        for name in n.inputs:
            if name and not g.tensors[name].is_const:
                life[name][1] = k
    for name in g.outputs:
        life[name][1] = len(g.nodes)
    return {k: (v[0], v[1]) for k, v in life.items()}


def _branchy_graph(seed: int) -> Graph:
    """A random DAG of element-wise ops with long and short lived tensors of varied sizes."""
    rng = np.random.default_rng(seed)
    g = Graph()
    live = [g.add_input("x", (1, 8, 8, 4))]
    for k in range(30):
        a, b = rng.choice(live), rng.choice(live)
        if rng.random() < 0.3:
            c = int(rng.integers(1, 16))
            w = g.add_const(f"w{k}", rng.standard_normal((c, 1, 1, g.tensors[a].shape[-1])).astype(np.float32))
            (y,) = g.add_node("CONV_2D", [a, w])
        elif g.tensors[a].shape == g.tensors[b].shape:
            (y,) = g.add_node("ADD", [a, b])
        else:
            (y,) = g.add_node("SIGMOID", [a])
        live.append(y)
        if len(live) > 5:
            live.pop(int(rng.integers(0, len(live) - 1)))
    g.outputs = [live[-1]]
    g.prune()
    return g


def _assert_valid(g: Graph) -> None:
    plan = plan_memory(g)
    life = _lifetimes(g)
    aliases = {frozenset((n.inputs[0], n.outputs[0])) for n in g.nodes if n.op == "RESHAPE"}
    names = list(plan.offsets)
    for i, a in enumerate(names):
        assert plan.offsets[a] % plan.alignment == 0
        assert plan.offsets[a] + g.tensors[a].nbytes <= plan.arena_size
        for b in names[i + 1:]:
            (a0, a1), (b0, b1) = life[a], life[b]
            if a0 <= b1 and b0 <= a1 and frozenset((a, b)) not in aliases:
                sa, sb = plan.offsets[a], plan.offsets[b]
                assert sa + g.tensors[a].nbytes <= sb or sb + g.tensors[b].nbytes <= sa, (a, b)
    assert plan.lower_bound <= plan.arena_size


def test_random_graphs_never_overlap_live_tensors() -> None:
    for seed in range(20):
        _assert_valid(_branchy_graph(seed))


def test_reshape_output_aliases_its_input() -> None:
    g = conv_bn_relu_graph()
    optimize(g)
    plan = plan_memory(g)
    reshape = next(n for n in g.nodes if n.op == "RESHAPE")
    assert plan.offsets[reshape.inputs[0]] == plan.offsets[reshape.outputs[0]]
    _assert_valid(g)


def test_chain_reaches_the_lower_bound() -> None:
    g = Graph()
    y = g.add_input("x", (1, 16, 16, 8))
    for _ in range(6):
        (y,) = g.add_node("SIGMOID", [y])
    g.outputs = [y]
    plan = plan_memory(g)
    assert plan.arena_size == plan.lower_bound == 2 * 16 * 16 * 8 * 4
