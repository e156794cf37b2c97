"""Post-training quantization of a float graph to int8, from calibrated activation ranges.

The scheme is TFLite/XNNPACK's: weights int8, symmetric, one scale per output channel, in [-127, 127]; biases int32
in units of input scale x weight scale; activations int8, asymmetric, one scale and zero point per tensor, the range
widened to include 0. The arithmetic the resulting ops perform is python_ref's (python_ref/README.md).

Ops are quantized one by one in graph order. A quantized op reads the int8 version of each input (a QUANTIZE is
inserted after a float producer or a graph input) and writes int8; an op that stays float (not quantizable, or named
in `skip`) reads float versions (a DEQUANTIZE is inserted after an int8 producer). Graph inputs and outputs stay
float32, so a quantized model is a drop-in replacement. Element-wise functions (sigmoid, tanh, hard-swish,
leaky-relu, exp, ...) become a LOOKUP whose 256-entry table is the float op applied to every input value.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from python_ref import dispatch, qrules, shapes
from python_ref import quant as qm
from python_ref.opdefs import OPS, Q_ARITHMETIC, Q_MOVES, Q_SELECTS, quant_form
from python_ref.quant import QuantParams
from wasmrt.compile.ir import Graph, Node, Tensor

# The op families, from each op's declared int8 form (python_ref/opdefs.py OpDef.quant):
WEIGHTED = qrules.WEIGHTED
# output keeps the input's parameters: the op only moves or selects values
SHARED = quant_form(Q_MOVES, Q_SELECTS)
ARITHMETIC = quant_form(Q_ARITHMETIC)
TABULATED = qrules.TABULATED  # quantized as a LOOKUP of the float op's table
QUANTIZABLE = WEIGHTED | SHARED | ARITHMETIC | TABULATED
# outputs whose range is known exactly: the parameters TFLite uses
FIXED = {name: d.qout for name, d in OPS.items() if d.qout is not None}


@dataclass
class Plan:
    """What the quantizer did: node name -> "int8" or the reason it stayed float."""

    decisions: dict[str, str] = field(default_factory=dict)
    int8: dict[str, str] = field(default_factory=dict)  # source tensor -> its int8 version in the new graph

    @property
    def quantized(self) -> list[str]:
        return [k for k, v in self.decisions.items() if v == "int8"]

    @property
    def kept_float(self) -> dict[str, str]:
        return {k: v for k, v in self.decisions.items() if v != "int8"}


def quantize_graph(graph: Graph, ranges: dict[str, tuple[float, float]] | None = None, skip: set[str] | None = None,
                   given: dict[str, QuantParams] | None = None, float_output: bool = True) -> tuple[Graph, Plan]:
    """The int8 version of an optimized float graph. ranges: [lo, hi] of every float activation (calibrate.py);
    or given: the parameters a quantized model (QDQ) states per tensor, in which case an op is quantized only
    where the model quantizes its inputs and output, and weights keep the integers they came from.
    float_output (calibrated graphs only): a FULLY_CONNECTED that makes a graph output read by no other op (a
    classifier) keeps its int8 inputs and weights but writes float32 (FULLY_CONNECTED's float_output): the int32
    accumulator dequantized, where an int8 output would round the logits to 256 steps and then dequantize them."""
    return _Quantizer(graph, ranges or {}, set(skip or ()), dict(given) if given is not None else None,
                      float_output).run()


def float_output_layers(graph: Graph) -> set[str]:
    """The FULLY_CONNECTED nodes of a float graph whose output is a graph output that no other op reads."""
    read = {i for n in graph.nodes for i in n.inputs}
    return {n.name for n in graph.nodes if n.op == "FULLY_CONNECTED" and n.outputs[0] in graph.outputs
            and n.outputs[0] not in read}


class _Quantizer:
    def __init__(self, graph: Graph, ranges: dict[str, tuple[float, float]], skip: set[str],
                 given: dict[str, QuantParams] | None = None, float_output: bool = True) -> None:
        self.src, self.ranges, self.skip, self.given = graph, ranges, skip, given
        self.float_out = float_output_layers(graph) if float_output and given is None else set()
        self.g = Graph(metadata=copy.deepcopy(graph.metadata))
        self.fver: dict[str, str] = {}  # source tensor -> float tensor in the new graph
        self.qver: dict[str, str] = {}  # source tensor -> int8 tensor in the new graph
        self.plan = Plan()
        unknown = skip - {n.name for n in graph.nodes} - {o for n in graph.nodes for o in n.outputs}
        if unknown:
            raise ValueError(f"--skip names no node or tensor of the model: {sorted(unknown)}")

    def run(self) -> tuple[Graph, Plan]:
        src, g = self.src, self.g
        for name in src.inputs:
            t = src.tensors[name]
            (self.fver if t.quant is None else self.qver)[name] = g.add_input(name, t.shape, t.dtype, t.quant)
        for node in src.nodes:
            reason = self._reason_to_keep_float(node)
            if reason is None:
                try:
                    self._quantized(node)
                    reason = "int8"
                except _KeepFloat as e:
                    reason = str(e)
            if reason != "int8":
                self._float(node)
            self.plan.decisions[node.name] = reason
        for o in src.outputs:
            self._output(o)
        g.validate()
        self.plan.int8 = {k: v for k, v in self.qver.items() if not self.src.tensors[k].is_const}
        return g, self.plan

    # -- tensors in the new graph -----------------------------------------------------------------------------
    def params(self, name: str) -> QuantParams:
        if self.given is not None:
            if name not in self.given:
                raise _KeepFloat(f"the model does not quantize {name!r}")
            return self.given[name]
        if name not in self.ranges:
            raise _KeepFloat(f"no calibrated range for {name!r}")
        return qm.params_for_range(*self.ranges[name])

    def fixed(self, op: str, out: str) -> QuantParams:
        """Outputs of known range (sigmoid, softmax, ...) take TFLite's parameters unless the model states some."""
        return self.params(out) if self.given is not None else QuantParams.make(*FIXED[op])

    def q(self, name: str) -> str:
        """The int8 version of source tensor `name` (QUANTIZE inserted after a float producer)."""
        if name not in self.qver:
            t = self.src.tensors[name]
            if t.is_const:
                data, qp = _quantize_const(t.data)
                self.qver[name] = self.g.add_const(f"{name}:int8", data, quant=qp)
            else:
                qp = self.params(name)
                (self.qver[name],) = self.g.add_node("QUANTIZE", [self.fver[name]], name=f"{name}:quantize",
                                                     outputs=[self.g.unique_name(f"{name}:int8")], quant=[qp])
        return self.qver[name]

    def f(self, name: str) -> str:
        """The float version of source tensor `name` (DEQUANTIZE inserted after an int8 producer)."""
        if name not in self.fver:
            t = self.src.tensors[name]
            if t.is_const:
                self.fver[name] = self.g.add_const(name, t.data, quant=t.quant)
            else:
                out = name if name in self.src.outputs else self.g.unique_name(f"{name}:float")
                (self.fver[name],) = self.g.add_node("DEQUANTIZE", [self.qver[name]], name=f"{name}:dequantize",
                                                     outputs=[out])
        return self.fver[name]

    def out_name(self, name: str) -> str:
        """The int8 output keeps the source name (reports map layers by it), unless it is a graph output, which
        must stay float under its own name."""
        return self.g.unique_name(f"{name}:int8" if name in self.src.outputs else name)

    # -- ops --------------------------------------------------------------------------------------------------
    def _reason_to_keep_float(self, node: Node) -> str | None:
        if node.name in self.skip or any(o in self.skip for o in node.outputs):
            return "skipped (--skip)"
        if node.op not in QUANTIZABLE:
            return f"{node.op} has no int8 variant"
        ins = [self.src.tensors[i] for i in node.inputs if i]
        if any(t.dtype != np.float32 for t in ins[:1]) or self.src.tensors[node.outputs[0]].dtype != np.float32:
            return "not a float32 op"
        if node.op in WEIGHTED and not all(t.is_const for t in ins[1:]):
            return "weights are not constant"
        if node.op in ("GATHER",) and not ins[1].is_const:
            return "indices are not constant"
        if node.op == "PAD" and not np.isfinite(node.attrs["value"]):
            return "pads with an infinite value"
        if self.given is not None:
            runtime = [i for i in node.inputs[: 1 if node.op in WEIGHTED else None] if i
                       and not self.src.tensors[i].is_const]
            missing = [t for t in [*runtime, node.outputs[0]] if t not in self.given
                       and not (node.op in SHARED and t == node.outputs[0])]
            if missing:
                return f"the model does not quantize {missing[0]!r}"
        return None

    def _float(self, node: Node) -> None:
        """The op as it is: float, or one of the model's own QUANTIZE/DEQUANTIZE at an integer border."""
        integer_in = node.op == "DEQUANTIZE" or (node.op == "QUANTIZE" and self.src.tensors[node.inputs[0]].quant)
        ins = [(self.q(i) if integer_in else self.f(i)) if i else "" for i in node.inputs]
        outs = self.g.add_node(node.op, ins, dict(node.attrs), name=node.name,
                               outputs=[self.g.unique_name(o) for o in node.outputs],
                               quant=[self.src.tensors[o].quant for o in node.outputs])
        for o, n in zip(node.outputs, outs, strict=True):
            (self.fver if self.src.tensors[o].quant is None else self.qver)[o] = n

    def _quantized(self, node: Node) -> None:
        op, a, out = node.op, dict(node.attrs), node.outputs[0]
        if op in TABULATED:
            self._lookup(node)
            return
        x = self.q(node.inputs[0])
        inputs = [x]
        if op in WEIGHTED:
            qx = self.g.tensors[x].quant
            w = self.src.tensors[node.inputs[1]]
            b = node.inputs[2] if len(node.inputs) > 2 else ""
            wq, qw = stated_integers(w) or qm.symmetric_weights(
                w.data, axis=0, min_scale=qm.bias_min_scale(self.src.tensors[b].data, qx.s) if b else 0.0)
            inputs.append(self.g.add_const(f"{node.inputs[1]}:int8", wq, quant=qw))
            if b:
                inputs.append(self.g.add_const(f"{b}:int32", bias_integers(self.src.tensors[b], qx.s, qw)))
            if node.name in self.float_out:
                (self.fver[out],) = self.g.add_node(op, inputs, {**a, "float_output": True}, name=node.name,
                                                    outputs=[out], quant=[None])
                return
            qy = self.params(out)
        elif op in SHARED:
            inputs += [self.src_const_or_q(i, op) for i in node.inputs[1:]]
            qy = self.g.tensors[x].quant
            if self.given is not None and out in self.given and self.given[out] != qy:
                self._requantized(node, inputs, qy)
                return
            if self.given is not None:
                self.given[out] = qy  # what the op moves keeps its parameters, for the ops that read it
        elif op == "SOFTMAX":
            n = self.src.tensors[node.inputs[0]].shape[int(a["axis"])]
            table = softmax_table(float(self.g.tensors[x].quant.s), n)
            inputs.append(self.g.add_const(f"{node.name}:exp_table", table))
            qy = self.fixed(op, out)
        elif op == "PRELU":
            inputs.append(self._slope(node.inputs[1], self.src.tensors[node.inputs[0]].shape))
            qy = self.params(out)
        else:
            inputs += [self.q(i) for i in node.inputs[1:]]
            qy = self.params(out)
            if op in ("ADD", "SUB"):
                try:
                    qm.add_params(*(qm.div_scale(self.g.tensors[i].quant.s, qy.s) for i in inputs))
                except ValueError as e:
                    raise _KeepFloat(str(e)) from None
        (y,) = self.g.add_node(op, inputs, a, name=node.name, outputs=[self.out_name(out)], quant=[qy])
        self.qver[out] = y

    def _requantized(self, node: Node, inputs: list[str], qx: QuantParams) -> None:
        """A data-movement op whose output the model quantizes differently from its input: move, then QUANTIZE."""
        out = node.outputs[0]
        (moved,) = self.g.add_node(node.op, inputs, dict(node.attrs), name=node.name, quant=[qx],
                                   outputs=[self.g.unique_name(f"{out}:moved")])
        (self.qver[out],) = self.g.add_node("QUANTIZE", [moved], name=f"{node.name}:requantize",
                                            outputs=[self.out_name(out)], quant=[self.given[out]])

    def src_const_or_q(self, name: str, op: str) -> str:
        """Secondary inputs of data-movement ops: integer constants (GATHER indices) as they are."""
        t = self.src.tensors[name]
        if t.is_const and t.dtype != np.float32:
            return self.g.add_const(name, t.data)
        raise _KeepFloat(f"{op} with a float second input")

    def _slope(self, name: str, x_shape: tuple[int, ...]) -> str:
        t = self.src.tensors[name]
        if not t.is_const:
            return self.q(name)
        s = np.asarray(t.data, np.float32)
        # one scale per channel when the slope varies only along the last axis (the usual [1, 1, C] PReLU)
        per_channel = s.ndim >= 1 and s.shape[-1] > 1 and all(d == 1 for d in s.shape[:-1])
        if per_channel:
            flat = s.reshape(-1)
            sq, qs = qm.symmetric_weights(flat, axis=0)
            return self.g.add_const(f"{name}:int8", sq.reshape(s.shape),
                                    quant=QuantParams(qs.scale, qs.zero_point, s.ndim - 1))
        data, qp = _quantize_const(s)
        return self.g.add_const(f"{name}:int8", data, quant=qp)

    def _lookup(self, node: Node) -> None:
        x = self.q(node.inputs[0])
        qx = self.g.tensors[x].quant
        out = node.outputs[0]
        qy = self.fixed(node.op, out) if node.op in FIXED else self.params(out)
        table = lookup_table(node.op, node.attrs, qx, qy)
        t = self.g.add_const(f"{node.name}:table", table)
        (y,) = self.g.add_node("LOOKUP", [x, t], name=node.name, outputs=[self.out_name(out)], quant=[qy])
        self.qver[out] = y

    def _output(self, name: str) -> None:
        if name in self.fver and self.fver[name] == name:
            self.g.outputs.append(name)
            return
        if name in self.qver:
            self.g.outputs.append(self.f(name))
            return
        f = self.f(name)  # produced float under another name (a name clash): copy under the output's name
        (y,) = self.g.add_node("RESHAPE", [f], {"shape": self.g.tensors[f].shape}, outputs=[name])
        self.g.outputs.append(y)


class _KeepFloat(Exception):
    """The op cannot be quantized after all; the message says why."""


def stated_integers(t: Tensor) -> tuple[np.ndarray, QuantParams] | None:
    """The int8 weights a float constant was dequantized from, when the model stated them (Tensor.source_q, set
    by importers of quantized models): recovered exactly, since each float is f32(f32(q - z) * scale)."""
    q = t.source_q
    if q is None or t.data is None:
        return None
    z, s = q.along(t.shape, q.zero_point), q.along(t.shape, q.scale).astype(np.float64)
    ints = np.rint(t.data.astype(np.float64) / s) + z
    if np.any(ints < -128) or np.any(ints > 127) or not np.array_equal(qm.dequantize(ints.astype(np.int8), q), t.data):
        return None
    return ints.astype(np.int8), q


def bias_integers(t: Tensor, sx: np.float32, qw: QuantParams) -> np.ndarray:
    """int32 bias in units of f32(sx * sw[c]): the model's own integers when it stated them in those units."""
    unit = qm.mul_scale(sx, qw.scale)
    q = t.source_q
    if q is not None and np.array_equal(q.along((unit.size,), q.scale) * np.ones(unit.size, np.float32), unit):
        return np.rint(t.data.astype(np.float64) / unit.astype(np.float64)).astype(np.int32)
    return qm.bias_int32(t.data, sx, qw.scale)


def _quantize_const(v: np.ndarray) -> tuple[np.ndarray, QuantParams]:
    """A float constant operand (of ADD, MUL, ...) quantized per tensor over its own range."""
    v = np.asarray(v, np.float32)
    qp = qm.params_for_range(float(v.min()) if v.size else 0.0, float(v.max()) if v.size else 0.0)
    return qm.quantize(v, qp, np.int8), qp


def lookup_table(op: str, attrs: dict[str, Any], qx: QuantParams, qy: QuantParams, dtype: Any = np.int8
                 ) -> np.ndarray:
    """table[i] = quantize(f(dequantize(qmin + i))): the float reference op on every representable input."""
    lo, _ = qm.qrange(dtype)
    xs = qm.dequantize(np.arange(lo, lo + 256).astype(dtype), qx)
    (fx,) = dispatch.run(op, [xs], {k: v for k, v in attrs.items() if k in shapes.OPS[op].defaults()})
    return qm.quantize(fx, qy, dtype)


def softmax_table(scale: float, n: int) -> np.ndarray:
    """The int32 exponential table of a quantized SOFTMAX over n values: round(exp(-scale * d) * 2^k), with k as
    large as int32 sums of n entries allow (at most 2^24, so every entry converts to float32 exactly)."""
    k = min(24, 30 - int(np.ceil(np.log2(max(n, 2)))))
    return np.rint(np.exp(-float(scale) * np.arange(256, dtype=np.float64)) * 2.0 ** k).astype(np.int32)

