"""Graph passes run by the converter, in this order (see optimize()):

1. fold_constants     ops whose inputs are all constant are evaluated now, with the reference ops
2. drop_noops         identity reshapes/transposes/slices/pads, clips to (-inf, inf), single-input concats
3. simplify_transposes   transpose pairs compose (and vanish when they cancel); a transpose that only moves
                      size-1 axes is a reshape (the NCHW flatten after a global pool, for example)
4. fold_affine        x*s+t with per-channel constants after a conv or fully-connected layer (inference
                      BatchNormalization, which importers emit as MUL and ADD) goes into its weights and bias
5. fuse_activations   RELU/CLIP after a producer that has a fused clamp becomes its act_min/act_max
6. fuse_residual_adds ADD(conv(x), r) becomes the convolution's residual input r: the engines add r to each block
                      of the output while it is still in cache, instead of a pass of its own
7. fold_pads          a float zero PAD of H and W before a KxK convolution becomes the convolution's own padding
                      (TFLite's stride-2 layers: the padded copy cost a pass over the activations)
8. fuse_hard_swish    x * clip(x + 3, 0, 6) / 6 written as ADD, CLIP, MUL and DIV (Paddle's and some PyTorch
                      exports; the ADD has taken the CLIP as its clamp by then) becomes one HARD_SWISH: one pass over
                      the values instead of three, and no division. The results move within HARD_SWISH's tolerance
                      (docs/ops.md): python_ref rounds the op once, the chain rounds after each of its three ops.
9. prune              drop what no graph output depends on
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from python_ref import dispatch
from python_ref.opdefs import OPS
from wasmrt.compile.ir import Graph, Node

INF = float("inf")
CLAMPED_OPS = {d.name for d in OPS.values() if d.has_clamp}  # the engines derive the same set from opdefs
AFFINE_TARGETS = {"CONV_2D", "CONV_TRANSPOSE_2D", "FULLY_CONNECTED"}


def _replace_uses(graph: Graph, old: str, new: str) -> None:
    for n in graph.nodes:
        n.inputs = [new if i == old else i for i in n.inputs]


def _bypass(graph: Graph, node: Node) -> bool:
    """Remove a node whose output equals its first input. Graph outputs keep their names, so those stay."""
    out, src = node.outputs[0], node.inputs[0]
    if out in graph.outputs:
        return False
    _replace_uses(graph, out, src)
    graph.nodes.remove(node)
    return True


# Folding runs the reference ops on an untrusted graph: a 2^31-tap pooling window on a small constant would take
# hours. Nodes whose evaluation would touch more than this many values stay nodes (the engines' budgets judge them).
MAX_FOLD_WORK = 1 << 24


def fold_work(op: str, inputs: list[np.ndarray | None], attrs: dict, out_shapes: list[tuple[int, ...]]) -> float:
    """Values the reference op touches, roughly: inputs plus outputs times the taps of a window or dot product."""
    taps = 1.0
    w = inputs[1] if len(inputs) > 1 else None
    if op in ("MAX_POOL_2D", "AVERAGE_POOL_2D"):
        taps = float(np.prod([max(int(k), 1) for k in attrs.get("kernel", (1, 1))], dtype=float))
    elif op in ("CONV_2D", "CONV_TRANSPOSE_2D") and w is not None and w.ndim == 4:
        taps = float(np.prod(w.shape[1:], dtype=float))
    elif op in ("FULLY_CONNECTED", "MATMUL") and w is not None and w.ndim:
        taps = float(w.shape[-1] if op == "FULLY_CONNECTED" else w.shape[0] if w.ndim == 1 else w.shape[-2])
    outs = sum(float(np.prod(s, dtype=float)) for s in out_shapes)
    return sum(float(x.size) for x in inputs if x is not None) + outs * max(taps, 1.0)


def fold_constants(graph: Graph) -> int:
    folded = 0
    for n in list(graph.nodes):
        ins = [graph.tensors[i] if i else None for i in n.inputs]
        if not all(t is None or t.is_const for t in ins) or not any(t is not None for t in ins):
            continue
        if any(o in graph.outputs for o in n.outputs):
            continue
        outs = [graph.tensors[o].shape for o in n.outputs]
        if fold_work(n.op, [t.data if t else None for t in ins], n.attrs, outs) > MAX_FOLD_WORK:
            continue
        results = dispatch.run(n.op, [t.data if t else None for t in ins], n.attrs, graph.quant_of(n))
        for name, value in zip(n.outputs, results, strict=True):
            t = graph.tensors[name]
            t.data = np.ascontiguousarray(value.astype(t.dtype, copy=False))
        graph.nodes.remove(n)
        folded += 1
    return folded


def _is_noop(graph: Graph, n: Node) -> bool:
    x = graph.tensors[n.inputs[0]] if n.inputs and n.inputs[0] else None
    if x is None or len(n.outputs) != 1 or graph.tensors[n.outputs[0]].shape != x.shape:
        return False
    if x.quant != graph.tensors[n.outputs[0]].quant:  # a requantization is never a no-op
        return False
    a = n.attrs
    if n.op == "RESHAPE":
        return True
    if n.op == "TRANSPOSE":
        return list(a["perm"]) == sorted(a["perm"])
    if n.op == "SLICE":
        return all(s == 1 for s in a["steps"])
    if n.op == "PAD":
        return not any(a["pads"])
    if n.op == "CLIP":
        return a["min"] == -INF and a["max"] == INF
    if n.op == "CONCATENATION":
        return len(n.inputs) == 1
    return False


def drop_noops(graph: Graph) -> int:
    return sum(_bypass(graph, n) for n in list(graph.nodes) if _is_noop(graph, n))


def _single_consumer(graph: Graph, name: str) -> Node | None:
    users = graph.consumers().get(name, [])
    if len(users) != 1 or name in graph.outputs:
        return None
    return users[0]


def simplify_transposes(graph: Graph) -> int:
    changed = 0
    for n in list(graph.nodes):
        if n.op != "TRANSPOSE" or n not in graph.nodes:
            continue
        perm = list(n.attrs["perm"])
        producer = graph.producers().get(n.inputs[0])
        if producer is not None and producer.op == "TRANSPOSE" and _single_consumer(graph, producer.outputs[0]):
            # y = transpose(transpose(x, p1), p2) = transpose(x, p1[p2])
            inner = list(producer.attrs["perm"])
            n.attrs["perm"] = tuple(inner[p] for p in perm)
            n.inputs[0] = producer.inputs[0]
            graph.nodes.remove(producer)
            changed += 1
            perm = list(n.attrs["perm"])
        shape = graph.tensors[n.inputs[0]].shape
        moved = [p for p in perm if shape[p] != 1]
        if moved == sorted(moved):  # only size-1 axes move: the bytes stay in order
            n.op, n.attrs = "RESHAPE", {"shape": graph.tensors[n.outputs[0]].shape}
            changed += 1
    return changed


def _channel_vector(graph: Graph, name: str, channels: int, out_rank: int) -> np.ndarray | None:
    """The constant as a per-last-axis vector of length channels, if it broadcasts only along that axis."""
    c = graph.const(name)
    if c is None or c.ndim > out_rank or c.dtype != np.float32:
        return None
    if any(d != 1 for d in c.shape[:-1]) or (c.ndim and c.shape[-1] not in (1, channels)):
        return None
    return np.broadcast_to(c.reshape(-1) if c.ndim else c, (channels,)).astype(np.float64)


def fold_affine(graph: Graph) -> int:
    folded = 0
    for n in list(graph.nodes):
        if n.op not in ("MUL", "ADD", "SUB", "DIV") or n not in graph.nodes:
            continue
        x, k = n.inputs
        if graph.const(x) is not None and n.op in ("MUL", "ADD"):
            x, k = k, x
        p = graph.producers().get(x)
        if p is None or p.op not in AFFINE_TARGETS or _single_consumer(graph, x) is not n:
            continue
        if p.attrs["act_min"] != -INF or p.attrs["act_max"] != INF or n.attrs["act_min"] != -INF \
                or n.attrs["act_max"] != INF:
            continue
        w = graph.const(p.inputs[1])
        out = graph.tensors[n.outputs[0]]
        if w is None or out.shape != graph.tensors[x].shape:
            continue
        vec = _channel_vector(graph, k, w.shape[0], len(out.shape))
        if vec is None:
            continue
        bias_name = p.inputs[2] if len(p.inputs) > 2 else ""
        b = graph.const(bias_name) if bias_name else np.zeros(w.shape[0], np.float32)
        if b is None:
            continue
        b = b.astype(np.float64)
        if n.op in ("MUL", "DIV"):
            s = vec if n.op == "MUL" else 1.0 / vec
            w = (w.astype(np.float64) * s.reshape((-1,) + (1,) * (w.ndim - 1))).astype(np.float32)
            b = b * s
            p.inputs[1] = graph.add_const(p.inputs[1] + "_scaled", w)
        else:
            b = b + vec if n.op == "ADD" else b - vec
        new_b = graph.add_const((bias_name or p.name + "_bias") + "_folded", b.astype(np.float32))
        p.inputs = [p.inputs[0], p.inputs[1], new_b]
        # The producer now writes the MUL/ADD's output tensor directly.
        graph.tensors.pop(x, None)
        p.outputs = [n.outputs[0]]
        graph.nodes.remove(n)
        folded += 1
    return folded


def fuse_activations(graph: Graph) -> int:
    fused = 0
    for n in list(graph.nodes):
        if n.op == "RELU":
            lo, hi = 0.0, INF
        elif n.op == "CLIP":
            lo, hi = n.attrs["min"], n.attrs["max"]
        else:
            continue
        p = graph.producers().get(n.inputs[0])
        if p is None or p.op not in CLAMPED_OPS or _single_consumer(graph, n.inputs[0]) is not n:
            continue
        if graph.tensors[p.outputs[0]].dtype != np.float32:
            continue
        p.attrs["act_min"] = max(p.attrs["act_min"], lo)
        p.attrs["act_max"] = min(p.attrs["act_max"], hi)
        graph.tensors.pop(p.outputs[0], None)
        p.outputs = [n.outputs[0]]
        graph.nodes.remove(n)
        fused += 1
    return fused


def _unclamped(attrs: dict) -> bool:
    return attrs["act_min"] == -INF and attrs["act_max"] == INF


def fuse_residual_adds(graph: Graph) -> int:
    """ADD(conv(x), r) -> CONV_2D(x, w, b, r) where the ADD is the convolution's only consumer, the convolution has
    no clamp of its own (the ADD's becomes its clamp), r has the output's shape and dtype (no broadcasting) and r is
    computed before the convolution runs."""
    fused = 0
    order = {o: k for k, n in enumerate(graph.nodes) for o in n.outputs}
    producers = graph.producers()
    for n in list(graph.nodes):
        if n.op != "ADD":
            continue
        for a, r in ((n.inputs[0], n.inputs[1]), (n.inputs[1], n.inputs[0])):
            p = producers.get(a)
            if p is None or p.op != "CONV_2D" or (len(p.inputs) > 3 and p.inputs[3]) or not _unclamped(p.attrs):
                continue
            ta, tr = graph.tensors[a], graph.tensors[r]
            if ta.dtype != np.float32 or tr.dtype != ta.dtype or tuple(tr.shape) != tuple(ta.shape) or r == a:
                continue
            if _single_consumer(graph, a) is not n or order.get(r, -1) >= order[a]:
                continue
            p.inputs = [*p.inputs[:3], *[""] * (3 - len(p.inputs)), r]
            p.attrs["act_min"], p.attrs["act_max"] = n.attrs["act_min"], n.attrs["act_max"]
            graph.tensors.pop(a, None)
            p.outputs = [n.outputs[0]]
            graph.nodes.remove(n)
            fused += 1
            break
    return fused


def split_residual_adds(graph: Graph) -> Graph:
    """The graph with every residual convolution written as CONV_2D + ADD again (for formats without the fused
    form: the peers' exporters). The input graph is left as it is."""
    import copy

    g = copy.deepcopy(graph)
    unfuse_residual_adds(g)
    return g


def unfuse_residual_adds(g: Graph) -> int:
    """In place: CONV_2D(x, w, b, r) -> ADD(CONV_2D(x, w, b), r). The quantizer needs the convolution's own output
    (it has a range and int8 parameters of its own)."""
    import copy

    split = 0
    for n in list(g.nodes):
        if n.op != "CONV_2D" or len(n.inputs) < 4 or not n.inputs[3]:
            continue
        r, y = n.inputs[3], n.outputs[0]
        plain = f"{y}:conv"
        g.tensors[plain] = copy.deepcopy(g.tensors[y])
        g.tensors[plain].name = plain
        add = Node("ADD", [plain, r], [y], {"act_min": n.attrs["act_min"], "act_max": n.attrs["act_max"]},
                   f"{n.name}:residual_add" if n.name else "")
        n.inputs, n.outputs = n.inputs[:3], [plain]
        n.attrs["act_min"], n.attrs["act_max"] = -INF, INF
        g.nodes.insert(g.nodes.index(n) + 1, add)
        split += 1
    return split


def fold_pads(graph: Graph) -> int:
    changed = 0
    for n in list(graph.nodes):
        if n.op != "PAD" or n.attrs.get("mode", 0) != 0 or n.attrs.get("value", 0.0) != 0.0:
            continue
        x = graph.tensors[n.inputs[0]]
        pads = list(n.attrs["pads"])
        if len(x.shape) != 4 or x.dtype != np.float32 or x.quant is not None or len(pads) != 8 or any(
                pads[i] for i in (0, 3, 4, 7)):
            continue
        conv = _single_consumer(graph, n.outputs[0])
        if conv is None or conv.op != "CONV_2D" or conv.inputs[0] != n.outputs[0] or n.outputs[0] in conv.inputs[1:]:
            continue
        w = graph.tensors[conv.inputs[1]]
        if len(w.shape) != 4:
            continue
        dil = list(conv.attrs.get("dilations", (1, 1)))
        reach = [dil[0] * (w.shape[1] - 1), dil[1] * (w.shape[2] - 1)]  # a pad wider than the kernel reads no input
        if w.shape[1] * w.shape[2] == 1 or pads[1] > reach[0] or pads[5] > reach[0] or (
                pads[2] > reach[1] or pads[6] > reach[1]):
            continue
        pt, pl, pb, pr = conv.attrs.get("pads", (0, 0, 0, 0))
        conv.attrs["pads"] = (pt + pads[1], pl + pads[2], pb + pads[5], pr + pads[6])
        conv.inputs[0] = n.inputs[0]
        graph.nodes.remove(n)
        changed += 1
    return changed


def _scalar_const(graph: Graph, name: str) -> float | None:
    c = graph.const(name)
    return float(c.reshape(-1)[0]) if c is not None and c.size == 1 and c.dtype == np.float32 else None


def _hard_swish_input(graph: Graph, div: Node) -> tuple[str, list[Node]] | None:
    """x when div computes x * clip(x + 3, 0, 6) / 6 (or times float32 1/6), with the nodes it replaces."""
    if div.op not in ("DIV", "MUL") or not _unclamped(div.attrs):
        return None
    m, k = div.inputs
    if div.op == "MUL" and graph.const(m) is not None:
        m, k = k, m
    want = 6.0 if div.op == "DIV" else float(np.float32(1 / 6))
    mul = graph.producers().get(m)
    if _scalar_const(graph, k) != want or mul is None or mul.op != "MUL" or not _unclamped(mul.attrs) \
            or _single_consumer(graph, m) is not div:
        return None
    for x, t in ((mul.inputs[0], mul.inputs[1]), (mul.inputs[1], mul.inputs[0])):
        add = graph.producers().get(t)
        if add is None or add.op != "ADD" or (add.attrs["act_min"], add.attrs["act_max"]) != (0.0, 6.0) \
                or _single_consumer(graph, t) is not mul or x not in add.inputs:
            continue
        three = add.inputs[1] if add.inputs[0] == x else add.inputs[0]
        tx, ty = graph.tensors[x], graph.tensors[div.outputs[0]]
        if _scalar_const(graph, three) == 3.0 and tx.dtype == np.float32 and tx.quant is None \
                and tuple(tx.shape) == tuple(ty.shape):
            return x, [add, mul]
    return None


def fuse_hard_swish(graph: Graph) -> int:
    fused = 0
    for n in list(graph.nodes):
        if n not in graph.nodes:
            continue
        found = _hard_swish_input(graph, n)
        if found is None:
            continue
        x, gone = found
        for g in gone:
            graph.nodes.remove(g)
            graph.tensors.pop(g.outputs[0], None)
        n.op, n.inputs, n.attrs = "HARD_SWISH", [x], {}
        fused += 1
    return fused


PASSES: list[tuple[str, Callable[[Graph], int]]] = [
    ("fold_constants", fold_constants),
    ("drop_noops", drop_noops),
    ("simplify_transposes", simplify_transposes),
    ("fold_affine", fold_affine),
    ("fuse_activations", fuse_activations),
    ("fuse_residual_adds", fuse_residual_adds),
    ("fold_pads", fold_pads),
    ("fuse_hard_swish", fuse_hard_swish),
]


def optimize(graph: Graph, log: Callable[[str], None] | None = None, *, fuse_residuals: bool = True,
             observe: Callable[[str, Graph], None] | None = None) -> dict[str, int]:
    """Run the passes to a fixed point; returns how often each one changed the graph. fuse_residuals=False (for
    the quantizer, which gives the convolution and the add their own int8 parameters) leaves residual adds as ADD
    ops and splits those a .wrt file already fused. observe(name, graph) is called after each pass run that changed
    the graph (name is the pass's PASSES name), so a caller can evaluate the graph between passes
    (tests/test_pass_numerics.py); it must not change the graph."""
    passes = PASSES if fuse_residuals else [(n, f) for n, f in PASSES if f is not fuse_residual_adds]
    counts = {name: 0 for name, _ in passes}
    if not fuse_residuals:
        counts["unfuse_residual_adds"] = unfuse_residual_adds(graph)
        if observe and counts["unfuse_residual_adds"]:
            observe("unfuse_residual_adds", graph)
    for _ in range(10):
        changed = 0
        for name, fn in passes:
            c = fn(graph)
            counts[name] += c
            changed += c
            if observe and c:
                observe(name, graph)
        graph.prune()
        if not changed:
            break
    if log:
        log("passes: " + ", ".join(f"{k} {v}" for k, v in counts.items() if v))
    graph.validate()
    return counts
