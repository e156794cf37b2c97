"""Offline memory plan: every activation gets a byte offset in one arena, by lifetime.

Tensors whose lifetimes overlap never share bytes. RESHAPE output aliases its input (engines never copy for it),
so the two form one storage group whose lifetime is the union. Placement is greedy by size, best fit: the
largest group first at the lowest offset free for its whole lifetime (the scheme TFLite and XNNPACK use); a few
orderings are tried and the smallest arena kept. lower_bound is the largest total size of simultaneously live
groups, which no plan can beat.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from wasmrt.compile.ir import Graph

ALIASING_OPS = {"RESHAPE"}


@dataclass
class MemoryPlan:
    offsets: dict[str, int]  # activation tensor name -> byte offset
    arena_size: int
    lower_bound: int
    alignment: int = 64


@dataclass
class _Group:
    members: list[str]
    size: int
    first: int  # step that writes it (-1 for graph inputs)
    last: int  # last step that reads it (len(nodes) for graph outputs)
    offset: int = -1


def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def _groups(graph: Graph, alignment: int) -> list[_Group]:
    root: dict[str, str] = {}

    def find(x: str) -> str:
        while root.get(x, x) != x:
            x = root[x]
        return x

    for n in graph.nodes:
        if n.op in ALIASING_OPS and not graph.tensors[n.inputs[0]].is_const:
            root[n.outputs[0]] = find(n.inputs[0])
    steps = len(graph.nodes)
    groups: dict[str, _Group] = {}

    def touch(name: str, step: int) -> None:
        t = graph.tensors[name]
        if t.is_const:
            return
        g = groups.setdefault(find(name), _Group([], 0, step, step))
        if name not in g.members:
            g.members.append(name)
        g.size = max(g.size, _align(max(t.nbytes, 1), alignment))
        g.first, g.last = min(g.first, step), max(g.last, step)

    for name in graph.inputs:
        touch(name, -1)
    for k, n in enumerate(graph.nodes):
        for name in [*n.inputs, *n.outputs]:
            if name:
                touch(name, k)
    for name in graph.outputs:
        touch(name, steps)
    return list(groups.values())


def lower_bound(groups: list[_Group]) -> int:
    if not groups:
        return 0
    lo, hi = min(g.first for g in groups), max(g.last for g in groups)
    return max(sum(g.size for g in groups if g.first <= s <= g.last) for s in range(lo, hi + 1))


def _place(groups: list[_Group], order: Callable[[_Group], tuple]) -> int:
    placed: list[_Group] = []
    for g in sorted(groups, key=order):
        busy = sorted((p.offset, p.offset + p.size) for p in placed if p.first <= g.last and g.first <= p.last)
        best, best_gap, cursor = -1, None, 0
        for start, end in busy:
            gap = start - cursor
            if gap >= g.size and (best_gap is None or gap < best_gap):
                best, best_gap = cursor, gap
            cursor = max(cursor, end)
        g.offset = best if best >= 0 else cursor
        placed.append(g)
    return max((g.offset + g.size for g in groups), default=0)


ORDERS: list[Callable[[_Group], tuple]] = [
    lambda g: (-g.size, g.first),  # greedy by size
    lambda g: (-(g.last - g.first), -g.size),  # longest-lived first
    lambda g: (g.first, -g.size),  # in execution order
]


def plan_memory(graph: Graph, alignment: int = 64) -> MemoryPlan:
    groups = _groups(graph, alignment)
    best_size, best_offsets = None, {}
    for order in ORDERS:
        size = _place(groups, order)
        if best_size is None or size < best_size:
            best_size = size
            best_offsets = {m: g.offset for g in groups for m in g.members}
    return MemoryPlan(best_offsets, best_size or 0, lower_bound(groups), alignment)
