"""ONNX control flow flattened into plain nodes at import.

- If with a condition known at conversion time (a shape check, say, which folds once input shapes are fixed): the
  chosen branch's nodes are converted in place and its outputs become the If's outputs.
- If with a run-time condition (one that depends on the input data): both branches are converted, each in its own
  scope (prefix "<node>/then/" and "<node>/else/"), and each output of the If becomes a WHERE selecting, by the
  condition (reshaped to a scalar, so it broadcasts to any output shape), between the two branches' values. This is
  exact because ONNX branches have no side effects; the cost is that both branches run, every time (a run-time If
  nested in a run-time branch doubles again: MAX_RUNTIME_IF_DEPTH bounds the nesting). Each output of the two
  branches must have the same shape and element type after shape inference at import (float, integer or bool: WHERE
  selects any of them); branches whose outputs differ in shape or type, and branches that cannot be converted
  ahead of the condition (a Loop or Scan inside whose trip count depends on the input data), are refused.
- Loop: the trip count must be a constant and the loop condition must fold to a constant on every iteration; the
  body is unrolled (up to MAX_UNROLL iterations), loop-carried values threaded through, scan outputs stacked on a
  new axis 0.
- Scan: the scan axis lengths are static; the body is unrolled per step (slices of the scan inputs in, states
  threaded through, scan outputs stacked along their axis, either direction). Scan-8 (opset 8: a batch axis 0 on
  every input and output, and a sequence_lens input) runs each batch item so and stacks the results; its
  sequence_lens must be absent or the full length.
Anything else (a data-dependent trip count or loop condition, If branches that a run-time condition cannot select
between) is an UnsupportedOpError naming the node and why.

Scoping (ONNX's lexical rules). A body reads any value of any enclosing graph, at any depth of nesting; the names
a body defines itself (its inputs, initializers and node outputs) hide outer values of the same name, for the body
and every graph nested in it. Each converted copy of a body gets its own value names (prefix "<node>/" for a
branch, "<node>/<k>/" for step k), so copies never collide; names from enclosing graphs keep theirs. When a node of
a copy is rebuilt, the graphs in its attributes are rewritten too (_rebind): each name such a graph reads from
outside itself becomes the name it has in this copy, so a nested body finds the enclosing body's values, shadowed
ones included. A body that is not converted (the If branch not taken, the body of a Loop or Scan that runs no step)
is checked against the same scope (check_scope): it may read only names defined there before its node. (The
branches of a run-time If are both converted, so both go through the ordinary scoping.)
Nodes are rebuilt as ONNX NodeProtos and go through the ordinary converters, so layout handling, constant folding
and nested control flow all apply.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from wasmrt.compile.onnx.context import Context, attributes, node_name
from wasmrt.errors import ModelFormatError, UnsupportedOpError

MAX_UNROLL = 4096
MAX_RUNTIME_IF_DEPTH = 8  # run-time Ifs nested in run-time branches: the innermost branches run 2**depth times over
ConvertNode = Callable[[Context, onnx.NodeProto], None]
CONTROL_FLOW_OPS = ("If", "Loop", "Scan")


def _defined(g: onnx.GraphProto) -> set[str]:
    """The names a graph defines itself: its inputs, initializers and node outputs. They hide (shadow) values of
    the same name in enclosing graphs, for the graph and every graph nested in it."""
    names = {i.name for i in g.input} | {i.name for i in g.initializer}
    for n in g.node:
        names.update(o for o in n.output if o)
    return names


def _subgraphs(node: onnx.NodeProto) -> list[onnx.GraphProto]:
    """The graphs in node's attributes (an If's branches, a Loop's or Scan's body, any GRAPHS attribute)."""
    out: list[onnx.GraphProto] = []
    for a in node.attribute:
        if a.type == onnx.AttributeProto.GRAPH:
            out.append(a.g)
        elif a.type == onnx.AttributeProto.GRAPHS:
            out.extend(a.graphs)
    return out


def _rebind(g: onnx.GraphProto, outer: Callable[[str], str]) -> None:
    """Rewrite, in place, every name that graph g (at any nesting depth) reads from an enclosing scope through
    `outer`; names defined on the way down (by g or a graph between g and the reader) are local and stay."""
    local = _defined(g)

    def scoped(name: str) -> str:
        return name if not name or name in local else outer(name)

    for n in g.node:
        for i, name in enumerate(n.input):
            n.input[i] = scoped(name)
        for sub in _subgraphs(n):
            _rebind(sub, scoped)
    for o in g.output:  # a body may return an enclosing value unchanged
        o.name = scoped(o.name)


def _renamer(prefix: str, g: onnx.GraphProto) -> Callable[[str], str]:
    local = _defined(g)
    return lambda name: (prefix + name) if name in local else name


def _copy_node(node: onnx.NodeProto, rename: Callable[[str], str], prefix: str) -> onnx.NodeProto:
    """node of a body copy: the values the body defines renamed, also where graphs nested in node read them."""
    new = onnx.NodeProto()
    new.CopyFrom(node)
    del new.input[:]
    del new.output[:]
    new.input.extend(rename(i) if i else "" for i in node.input)
    new.output.extend(rename(o) if o else "" for o in node.output)
    new.name = prefix + node.name if node.name else ""
    for sub in _subgraphs(new):
        _rebind(sub, rename)
    return new


def check_scope(ctx: Context, g: onnx.GraphProto, visible: Callable[[str], bool], where: str) -> None:
    """Check, without converting it, that every name graph g reads is defined where it is read: by g before the
    reading node (its inputs, initializers and earlier nodes' outputs), or by an enclosing scope (`visible`), at any
    depth of nesting. A body wasmrt does not convert (the If branch not taken, the body of a Loop or Scan that runs
    no step) is held to the scoping rules of the one it does."""
    known = {i.name for i in g.input} | {i.name for i in g.initializer}

    def seen(name: str) -> bool:
        return name in known or visible(name)

    for n in g.node:
        for name in n.input:
            if name and not seen(name):
                raise ModelFormatError(f"{ctx.source}: node {node_name(n)!r} in {where} reads {name!r}, which is "
                                       "neither an input, an initializer nor produced by an earlier node, in its "
                                       "graph or an enclosing one")
        for sub in _subgraphs(n):
            check_scope(ctx, sub, seen, where)
        known.update(o for o in n.output if o)
    for o in g.output:
        if not seen(o.name):
            raise ModelFormatError(f"{ctx.source}: output {o.name!r} of {where} is never produced")


def _run_body(ctx: Context, convert: ConvertNode, g: onnx.GraphProto, prefix: str,
              bound: dict[str, str | np.ndarray]) -> list[str]:
    """Convert one copy of a sub-graph: its inputs bound to outer values (a name) or constants; returns the (renamed)
    names of its outputs. Names the sub-graph reads from enclosing graphs have been rewritten into this scope's
    names already (_rebind, when the node holding it was copied); the ones it defines get the prefix."""
    rename = _renamer(prefix, g)
    for inp in g.input:
        src = bound.get(inp.name)
        if isinstance(src, str):
            ctx.alias(rename(inp.name), src)
        elif src is not None:
            ctx.set_const(rename(inp.name), src)
    for init in g.initializer:
        ctx.set_const(rename(init.name), numpy_helper.to_array(init))
    for n in g.node:
        convert(ctx, _copy_node(n, rename, prefix))
    outs = [rename(o.name) for o in g.output]
    for name in outs:
        if name not in ctx.values:
            raise ModelFormatError(f"{ctx.source}: sub-graph output {name!r} is never produced")
    return outs


def _emit(ctx: Context, convert: ConvertNode, op_type: str, inputs: list[str], output: str, **attrs: Any) -> str:
    convert(ctx, helper.make_node(op_type, inputs, [output], name=output, **attrs))
    return output


def _const(ctx: Context, name: str, value: Any) -> str:
    ctx.set_const(name, np.asarray(value))
    return name


def _stack(ctx: Context, convert: ConvertNode, parts: list[str], axis: int, out: str) -> None:
    """Concatenate values along a new axis (ONNX Reshape + Concat, as the converters know them; Reshape takes its
    shape as an input in every opset a Loop or Scan body can come from, unlike Unsqueeze's axes)."""
    if not parts:
        raise ValueError("no values to stack")
    ups = []
    for k, p in enumerate(parts):
        shape = ctx.values[p].shape
        new = _const(ctx, f"{out}/shape{k}", np.array([*shape[:axis], 1, *shape[axis:]], np.int64))
        ups.append(_emit(ctx, convert, "Reshape", [p, new], f"{out}/u{k}"))
    if len(ups) == 1:
        ctx.alias(out, ups[0])
    else:
        _emit(ctx, convert, "Concat", ups, out, axis=axis)


def convert_if(ctx: Context, convert: ConvertNode, node: onnx.NodeProto) -> None:
    cond = ctx.values[node.input[0]]
    if cond.shape and int(np.prod(cond.shape)) != 1:
        raise ctx.unsupported(node, f"condition of shape {list(cond.shape)} (must be a single value)")
    if not cond.is_const:
        _runtime_if(ctx, convert, node)
        return
    a = attributes(node)
    taken = bool(cond.const.reshape(-1)[0])
    branch, other = (a["then_branch"], a["else_branch"]) if taken else (a["else_branch"], a["then_branch"])
    check_scope(ctx, other, ctx.values.__contains__, f"the {'else' if taken else 'then'} branch of "
                                                     f"{node_name(node)!r}")
    outs = _run_body(ctx, convert, branch, f"{node_name(node)}/", {})
    if len(outs) != len(node.output):
        raise ctx.unsupported(node, f"the branch has {len(outs)} outputs, the node {len(node.output)}")
    for name, src in zip(node.output, outs, strict=True):
        if name:
            ctx.alias(name, src)


_runtime_depth: dict[int, int] = {}  # id(Context) -> run-time Ifs being converted, one inside the other


def _elem_type(ctx: Context, name: str) -> np.dtype:
    v = ctx.values[name]
    return v.const.dtype if v.const is not None else np.dtype(ctx.graph.tensors[v.ir].dtype)


def _same_type(a: np.dtype, b: np.dtype, both_runtime: bool) -> bool:
    """Whether WHERE can select between values of element types a and b: the same type for two run-time tensors;
    the same kind (float, integer, bool) when one is a constant, which the Where rule casts to the other's type
    (integer constants are int64 where the run-time tensor of the same ONNX type may be int32)."""
    if both_runtime:
        return a == b
    kind = {"f": "f", "i": "i", "u": "i", "b": "b"}
    return kind.get(a.kind, a.str) == kind.get(b.kind, b.str)


def _reason(e: UnsupportedOpError) -> str:
    return f"{e.op_type} node {e.node!r}: {e.detail}" if e.node else str(e)


def _declared(g: onnx.GraphProto, k: int) -> int:
    t = g.output[k].type
    return t.tensor_type.elem_type if t.HasField("tensor_type") else 0


def _runtime_if(ctx: Context, convert: ConvertNode, node: onnx.NodeProto) -> None:
    """An If whose condition is known only at run time: both branches converted, one WHERE per output."""
    a = attributes(node)
    label = node_name(node)
    depth = _runtime_depth.get(id(ctx), 0)
    if depth >= MAX_RUNTIME_IF_DEPTH:
        raise ctx.unsupported(node, f"run-time conditions nested {depth + 1} deep (wasmrt converts both branches of "
                                    f"a run-time If, so nesting doubles the work; at most {MAX_RUNTIME_IF_DEPTH})")
    results: dict[str, list[str]] = {}
    _runtime_depth[id(ctx)] = depth + 1
    try:
        for which in ("then", "else"):
            g: onnx.GraphProto = a[f"{which}_branch"]
            try:
                results[which] = _run_body(ctx, convert, g, f"{label}/{which}/", {})
            except UnsupportedOpError as e:
                raise ctx.unsupported(node, f"its condition depends on the input data, so wasmrt converts both "
                                            f"branches and selects their outputs at run time, and its {which} "
                                            f"branch cannot be converted: {_reason(e)}") from e
    finally:
        if depth:
            _runtime_depth[id(ctx)] = depth
        else:
            _runtime_depth.pop(id(ctx), None)
    then_outs, else_outs = results["then"], results["else"]
    for which, outs in results.items():
        if len(outs) != len(node.output):
            raise ctx.unsupported(node, f"the {which} branch has {len(outs)} outputs, the node {len(node.output)}")
    for k, (t, e) in enumerate(zip(then_outs, else_outs, strict=True)):
        tv, ev = ctx.values[t], ctx.values[e]
        what = f"output {k} ({node.output[k] or 'unused'!r})"
        if tv.shape != ev.shape:
            raise ctx.unsupported(node, f"its condition depends on the input data and the branches' {what} differ "
                                        f"in shape: {list(tv.shape)} (then) and {list(ev.shape)} (else); wasmrt "
                                        "selects at run time only between outputs of the same shape and type")
        dt, de = _elem_type(ctx, t), _elem_type(ctx, e)
        declared = (_declared(a["then_branch"], k), _declared(a["else_branch"], k))
        if (all(declared) and declared[0] != declared[1]) or not _same_type(dt, de, not tv.is_const
                                                                              and not ev.is_const):
            raise ctx.unsupported(node, f"its condition depends on the input data and the branches' {what} differ "
                                        f"in element type: {dt.name} (then) and {de.name} (else); wasmrt selects at "
                                        "run time only between outputs of the same shape and type")
    c = node.input[0]
    if ctx.values[c].rank:  # a scalar condition broadcasts to every output shape ([1] would add an axis to a scalar)
        c = _emit(ctx, convert, "Reshape", [c, _const(ctx, f"{label}/cond_shape", np.zeros(0, np.int64))],
                  f"{label}/cond")
    if _elem_type(ctx, c) != np.bool_:
        c = _emit(ctx, convert, "Cast", [c], f"{label}/cond_bool", to=onnx.TensorProto.BOOL)
    for name, t, e in zip(node.output, then_outs, else_outs, strict=True):
        if not name:
            continue
        if ctx.values[t] is ctx.values[e]:  # both branches pass the same value on
            ctx.alias(name, t)
        else:
            _emit(ctx, convert, "Where", [c, t, e], name)


def convert_loop(ctx: Context, convert: ConvertNode, node: onnx.NodeProto) -> None:
    body: onnx.GraphProto = attributes(node)["body"]
    label = node_name(node)
    if not ctx.has(node, 0) or not ctx.is_const(node.input[0]):
        raise ctx.unsupported(node, "its trip count is not a constant; wasmrt unrolls a Loop only when the number of "
                                    "iterations is known at conversion time")
    trips = int(ctx.values[node.input[0]].const.reshape(-1)[0])
    if trips > MAX_UNROLL:
        raise ctx.unsupported(node, f"{trips} iterations (wasmrt unrolls at most {MAX_UNROLL})")
    keep_going = True
    if ctx.has(node, 1):
        c = ctx.values[node.input[1]]
        if not c.is_const:
            raise ctx.unsupported(node, "its initial condition depends on the input data")
        keep_going = bool(c.const.reshape(-1)[0])
    carried = [n for n in node.input[2:]]
    n_carried, n_scan = len(carried), len(body.output) - 1 - len(carried)
    if len(body.input) != 2 + n_carried or n_scan < 0:
        raise ctx.unsupported(node, "its body's inputs/outputs do not match the loop-carried values")
    scans: list[list[str]] = [[] for _ in range(n_scan)]
    it = 0
    while keep_going and it < trips:
        bound: dict[str, str | np.ndarray] = {body.input[0].name: np.array(it, np.int64),
                                              body.input[1].name: np.array(True)}
        bound.update({b.name: v for b, v in zip(body.input[2:], carried, strict=True)})
        outs = _run_body(ctx, convert, body, f"{label}/{it}/", bound)
        cond = ctx.values[outs[0]]
        if not cond.is_const:
            raise ctx.unsupported(node, f"its loop condition depends on the input data (iteration {it}); wasmrt "
                                        "unrolls only loops whose trip count is known at conversion time")
        keep_going = bool(cond.const.reshape(-1)[0])
        carried = outs[1:1 + n_carried]
        for k in range(n_scan):
            scans[k].append(outs[1 + n_carried + k])
        it += 1
    if it == 0:  # the body never runs: it must still read only what its scope defines
        check_scope(ctx, body, ctx.values.__contains__, f"the body of {node_name(node)!r}")
    finals = list(node.output)
    for name, src in zip(finals[:n_carried], carried, strict=True):
        if name:
            ctx.alias(name, src)
    for name, parts in zip(finals[n_carried:], scans, strict=True):
        if not name:
            continue
        if not parts:
            raise ctx.unsupported(node, f"scan output {name!r} of a loop that runs no iteration (an empty tensor)")
        _stack(ctx, convert, parts, 0, name)


def convert_scan(ctx: Context, convert: ConvertNode, node: onnx.NodeProto) -> None:
    a = attributes(node)
    body: onnx.GraphProto = a["body"]
    label = node_name(node)
    n_scan_in = int(a["num_scan_inputs"])
    inputs = list(node.input)
    if ctx.opset < 9:  # Scan-8: a sequence_lens input first, and a batch axis 0 on every input and output
        lens, inputs = (inputs[0] if inputs else ""), inputs[1:]
    n_states = len(inputs) - n_scan_in
    states, scan_in = inputs[:n_states], inputs[n_states:]
    n_scan_out = len(body.output) - n_states
    if n_states < 0 or n_scan_out < 0 or len(body.input) != len(inputs) or len(node.output) > len(body.output):
        raise ctx.unsupported(node, "its body's inputs/outputs do not match the node's states and scan inputs")
    wanted = list(node.output) + [""] * (len(body.output) - len(node.output))
    if ctx.opset >= 9:
        in_axes = list(a.get("scan_input_axes", [0] * n_scan_in))
        in_dirs = list(a.get("scan_input_directions", [0] * n_scan_in))
        out_axes = list(a.get("scan_output_axes", [0] * n_scan_out))
        out_dirs = list(a.get("scan_output_directions", [0] * n_scan_out))
        _scan(ctx, convert, node, body, states, scan_in, (in_axes, in_dirs, out_axes, out_dirs), label, wanted)
        return
    batches = {ctx.values[n].shape[0] if ctx.values[n].rank else -1 for n in inputs}
    if len(batches) != 1 or -1 in batches:
        raise ctx.unsupported(node, f"Scan-8 inputs with different batch sizes {sorted(batches)}")
    batch = batches.pop()
    steps = {ctx.values[n].shape[1] for n in scan_in if ctx.values[n].rank > 1}
    if lens:
        if not ctx.is_const(lens):
            raise ctx.unsupported(node, "its sequence_lens is not a constant")
        if not np.all(ctx.values[lens].const == max(steps, default=0)):
            raise ctx.unsupported(node, "sequence_lens shorter than the scan inputs (wasmrt scans whole sequences)")
    dirs = list(a.get("directions", [0] * n_scan_in))
    axes = ([0] * n_scan_in, dirs, [0] * n_scan_out, [0] * n_scan_out)
    per_item: list[list[str]] = []
    for b in range(batch):  # each batch item on its own, its batch axis dropped, then the results stacked
        p = f"{label}#b{b}"
        item = [_emit(ctx, convert, "Gather", [n, _const(ctx, f"{p}/in{k}/i", np.array(b, np.int64))], f"{p}/in{k}",
                      axis=0) for k, n in enumerate(inputs)]
        outs = [f"{p}/out{j}" if name else "" for j, name in enumerate(wanted)]
        _scan(ctx, convert, node, body, item[:n_states], item[n_states:], axes, p, outs)
        per_item.append(outs)
    for j, name in enumerate(wanted):
        if name:
            _stack(ctx, convert, [outs[j] for outs in per_item], 0, name)


def _scan(ctx: Context, convert: ConvertNode, node: onnx.NodeProto, body: onnx.GraphProto, states: list[str],
          scan_in: list[str], axes: tuple[list[int], list[int], list[int], list[int]], label: str,
          out_names: list[str]) -> None:
    """Unroll one Scan (opset 9 semantics) over states and scan inputs, writing its outputs to out_names ("" for
    one not wanted)."""
    in_axes, in_dirs, out_axes, out_dirs = axes
    n_states = len(states)
    lengths = set()
    for k, name in enumerate(scan_in):
        rank = ctx.values[name].rank
        if rank == 0:
            raise ctx.unsupported(node, f"scan input {name!r} is a scalar")
        in_axes[k] %= rank
        lengths.add(ctx.values[name].shape[in_axes[k]])
    if len(lengths) != 1:
        raise ctx.unsupported(node, f"scan inputs of different lengths {sorted(lengths)}")
    steps = lengths.pop()
    if steps > MAX_UNROLL:
        raise ctx.unsupported(node, f"{steps} steps (wasmrt unrolls at most {MAX_UNROLL})")
    n_scan_out = len(out_names) - n_states
    outs_per_step: list[list[str]] = [[] for _ in range(n_scan_out)]
    for t in range(steps):
        bound: dict[str, str | np.ndarray] = dict(zip((b.name for b in body.input[:n_states]), states, strict=True))
        for k, name in enumerate(scan_in):
            idx = steps - 1 - t if in_dirs[k] else t
            p = f"{label}/{t}#in{k}"  # Gather of a scalar index: the step's slice without the axis, in any opset
            bound[body.input[n_states + k].name] = _emit(ctx, convert, "Gather",
                                                         [name, _const(ctx, p + "/i", np.array(idx, np.int64))], p,
                                                         axis=in_axes[k])
        outs = _run_body(ctx, convert, body, f"{label}/{t}/", bound)
        states = outs[:n_states]
        for k in range(n_scan_out):
            outs_per_step[k].append(outs[n_states + k])
    if steps == 0:
        check_scope(ctx, body, ctx.values.__contains__, f"the body of {node_name(node)!r}")
        if any(out_names[n_states:]):
            raise ctx.unsupported(node, "scan outputs of a scan over no step (empty tensors)")
    for name, src in zip(out_names[:n_states], states, strict=True):
        if name:
            ctx.alias(name, src)
    for k, name in enumerate(out_names[n_states:]):
        if not name:
            continue
        parts = outs_per_step[k][::-1] if out_dirs[k] else outs_per_step[k]
        _stack(ctx, convert, parts, out_axes[k] % (ctx.values[parts[0]].rank + 1), name)


CONVERTERS: dict[str, Callable[[Context, ConvertNode, onnx.NodeProto], None]] = {
    "If": convert_if, "Loop": convert_loop, "Scan": convert_scan,
}
