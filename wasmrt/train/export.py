"""A parsed .wrt back to the graph the writer takes: trained weights swapped in, a new classifier head, written
again as a .wrt every engine runs."""

from __future__ import annotations

import numpy as np

from python_ref.wrt_file import WrtModel
from wasmrt.compile.ir import Graph, Metadata, Node, Preprocess, Tensor
from wasmrt.compile.planner import plan_memory
from wasmrt.compile.writer import write_wrt


def graph_from_wrt(model: WrtModel, params: dict[str, np.ndarray] | None = None) -> Graph:
    """The model as a Graph; params (tensor name -> array) replace those constants' values."""
    params = params or {}
    g = Graph()
    for t in model.tensors:
        data = t.data
        if t.name in params:
            data = np.ascontiguousarray(params[t.name], t.dtype)
            if data.shape != t.shape:
                raise ValueError(f"{t.name!r}: new value of shape {list(data.shape)}, the model's is {list(t.shape)}")
        g.tensors[t.name] = Tensor(t.name, tuple(t.shape), np.dtype(t.dtype), data, t.quant, bounds=t.bounds)
    names = [t.name for t in model.tensors]
    for op in model.ops:
        g.nodes.append(Node(op.op, [names[i] if i >= 0 else "" for i in op.inputs], [names[i] for i in op.outputs],
                            dict(op.attrs), op.name))
    g.inputs = [names[i] for i in model.inputs]
    g.outputs = [names[i] for i in model.outputs]
    md = model.metadata or {}
    g.metadata = Metadata(source=md.get("source", ""), producer=md.get("producer", ""),
                          preprocess={g.inputs[k]: Preprocess(**p) for k, p in md.get("preprocess", {}).items()},
                          labels=list(md.get("labels", [])), props=dict(md.get("props", {})))
    return g


def write_graph(graph: Graph) -> bytes:
    """The graph as .wrt bytes: constants as fp16 only where that is lossless (writer's "auto")."""
    graph.prune()
    graph.validate()
    return write_wrt(graph, plan_memory(graph), weights="auto")
