"""Quantized models in QDQ form (onnxruntime's quantize_static, TFLite graphs with QUANTIZE/DEQUANTIZE around float
ops, ONNX QOperator ops imported as DEQUANTIZE -> float op -> QUANTIZE) become int8 ops.

Every QUANTIZE -> DEQUANTIZE pair with equal parameters on a float tensor says "this tensor is quantized with these
parameters": the pair is removed and the parameters recorded. The float graph left over is optimized as usual
(activations fuse into their producers, ...) and then quantized by wasmrt.compile.quantizer with exactly the stated
parameters: an op becomes int8 where the model quantized its inputs and output, weights keep the integers they were
dequantized from (Tensor.source_q), and everything else stays float with the model's own QUANTIZE/DEQUANTIZE at the
borders.
"""

from __future__ import annotations

import numpy as np

from python_ref.quant import QuantParams
from wasmrt.compile.ir import Graph


def has_qdq(graph: Graph) -> bool:
    """Does the graph hold QUANTIZE -> DEQUANTIZE pairs on float tensors (rather than int8 ops)?"""
    producers = graph.producers()
    return any(n.op == "DEQUANTIZE" and (p := producers.get(n.inputs[0])) is not None and p.op == "QUANTIZE"
               and graph.tensors[p.inputs[0]].dtype == np.float32 for n in graph.nodes)


def strip_pairs(graph: Graph) -> dict[str, QuantParams]:
    """Remove QUANTIZE -> DEQUANTIZE pairs in place; returns the parameters of each float tensor they quantized."""
    params: dict[str, QuantParams] = {}
    consumers = graph.consumers()
    for q in [n for n in graph.nodes if n.op == "QUANTIZE" and graph.tensors[n.inputs[0]].dtype == np.float32]:
        t, u = q.inputs[0], q.outputs[0]
        qp = graph.tensors[u].quant
        if qp is None or not qp.per_tensor:
            continue
        pairs = [d for d in consumers.get(u, []) if d.op == "DEQUANTIZE" and graph.tensors[d.inputs[0]].quant == qp]
        for d in pairs:
            t2 = d.outputs[0]
            graph.nodes.remove(d)
            if t2 in graph.outputs:  # the output keeps its name: the tensor t takes it
                graph.tensors.pop(t2, None)
                graph.rename(t, t2)
                t = t2
            else:
                _replace(graph, t2, t)
                graph.tensors.pop(t2, None)
        if pairs:
            params[t] = qp
        if not any(n for n in graph.nodes if u in n.inputs) and u not in graph.outputs:
            graph.nodes.remove(q)
    graph.prune()
    return params


def _replace(graph: Graph, old: str, new: str) -> None:
    for n in graph.nodes:
        n.inputs = [new if i == old else i for i in n.inputs]


def quantize_qdq(graph: Graph) -> Graph:
    """The int8 graph a QDQ graph describes."""
    from wasmrt.compile.passes import optimize
    from wasmrt.compile.quantizer import quantize_graph

    params = strip_pairs(graph)
    optimize(graph, fuse_residuals=False)
    qg, _ = quantize_graph(graph, given=params)
    return qg

