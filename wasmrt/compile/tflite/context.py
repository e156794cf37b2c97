"""State of one TFLite import: the graph being built, where each TFLite tensor ended up in it, and the helpers the
op converters (ops.py, recurrent.py) call. The converter table is handed in, so this module knows no converter."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from python_ref import dispatch, qrules, shapes
from python_ref.opdefs import OPS, QuantType
from python_ref.quant import QuantParams, dequantize
from wasmrt.compile.ir import Graph
from wasmrt.compile.passes import MAX_FOLD_WORK, fold_work
from wasmrt.compile.tflite.reader import TflModel, TflOp, TflTensor
from wasmrt.errors import ConversionError, ModelFormatError, UnsupportedOpError, WasmrtError

# Tensor types an op may read or write; FLOAT16 only as the constant input of a DEQUANTIZE (folded to float32).
_PLAIN_TYPES = ("FLOAT32", "INT32", "INT64", "BOOL")
# ops whose variable tensors (recurrent state) become graph inputs and outputs (recurrent.py)
STATEFUL_OPS = ("UNIDIRECTIONAL_SEQUENCE_LSTM", "BIDIRECTIONAL_SEQUENCE_LSTM", "LSTM")
OpConverter = Callable[["Context", TflOp], None]


class Context:
    """State of one import: the graph being built and where each TFLite tensor ended up in it."""

    def __init__(self, model: TflModel, input_shapes: dict[str, Sequence[int]],
                 converters: Mapping[str, OpConverter]) -> None:
        self.model = model
        self.converters = converters
        self.source = model.source
        self.input_shapes = input_shapes
        self.graph = Graph()
        self.names: dict[int, str] = {}  # TFLite tensor index -> graph tensor name
        self.shapes_overridden = False  # when set, the file's recorded intermediate shapes may be stale
        self.state_outputs: list[tuple[str, str]] = []  # (graph tensor with a variable's new value, its input)

    # -- driver --------------------------------------------------------------------------------------------------
    def convert(self) -> Graph:
        g = self.graph
        g.metadata.source = self.source
        g.metadata.producer = f"tflite schema v{self.model.version}, {self.model.description}".rstrip(", ")
        self._add_inputs()
        for op in self.model.ops:
            self._check_types(op)
            converter = self.converters.get(op.custom_code if op.name == "CUSTOM" else op.name)
            if converter is None:
                kind = f"custom op {op.custom_code!r}" if op.name == "CUSTOM" else "this TFLite builtin"
                raise UnsupportedOpError(self.op_label(op), self.node_name(op), self.source,
                                         f"wasmrt has no conversion for {kind}")
            self._run_converter(converter, op)
            self._check_output_shapes(op)
        for i in self.model.outputs:
            if i not in self.names and self.model.tensors[i].data is None:
                raise ModelFormatError(f"{self.source}: graph output {self.model.tensors[i].name!r} is never produced")
        g.outputs = [self._output(i) for i in self.model.outputs]
        for src, state in self.state_outputs:  # variables' new values, after the model's own outputs
            out = self.graph.unique_name(f"{state}_next")
            self.graph.add_node("RESHAPE", [src], {"shape": self.graph.tensors[state].shape}, name=out, outputs=[out])
            g.outputs.append(out)
            g.metadata.props[f"state.{out}"] = state
        g.prune()
        g.validate()
        return g

    def _run_converter(self, converter: OpConverter, op: TflOp) -> None:
        try:
            converter(self, op)
        except WasmrtError:
            raise
        except (IndexError, KeyError, ValueError, TypeError, ZeroDivisionError) as e:
            # A corrupt file can decode into any combination of fields: report it as such, with the node.
            raise ModelFormatError(f"{self.source}: {self.op_label(op)} node {self.node_name(op)!r}: malformed "
                                   f"operator ({type(e).__name__}: {e})") from e

    def _add_inputs(self) -> None:
        by_name = {self.model.tensors[i].name: i for i in self.model.inputs}
        unknown = set(self.input_shapes) - set(by_name)
        if unknown:
            raise ConversionError(f"{self.source}: input_shapes names unknown inputs {sorted(unknown)}; "
                                  f"the model's inputs are {sorted(by_name)}")
        for name, i in by_name.items():
            t = self.model.tensors[i]
            quantized = t.quantized and t.type_name in ("INT8", "UINT8") and t.quant_scale
            if not quantized and (t.quantized or t.type_name not in ("FLOAT32", "INT32")):
                raise UnsupportedOpError("input", name, self.source, f"graph input of type {t.type_name}"
                                         f"{' (quantized)' if t.quantized else ''}; wasmrt takes float32, int32 and "
                                         "quantized int8/uint8 inputs")
            shape = tuple(int(d) for d in self.input_shapes.get(name, t.shape))
            if any(d <= 0 for d in shape):
                raise ConversionError(f"{self.source}: input {name!r} has dynamic shape {t.signature or t.shape}; "
                                      f"pass input_shapes={{{name!r}: (...)}}")
            self.shapes_overridden |= shape != t.shape
            if not quantized:
                self.names[i] = self.graph.add_input(self.graph.unique_name(name), shape, t.dtype)
                continue
            x = self.graph.add_input(self.graph.unique_name(name), shape, t.dtype, self._checked(t, shift=False))
            if t.type_name == "UINT8":  # uint8 runs as int8 inside: the same values minus 128, zero point - 128
                (x,) = self.graph.add_node("QUANTIZE", [x], name=f"{name}/to_int8", quant=[self.quant_of(t)],
                                           outputs=[self.graph.unique_name(f"{name}/int8")])
            self.names[i] = x

    def _output(self, index: int) -> str:
        """A graph output: a uint8 output of the model comes back from the int8 inside as uint8."""
        name, t = self.name(index), self.model.tensors[index]
        if t.type_name != "UINT8" or not t.quant_scale:
            return name
        (y,) = self.graph.add_node("QUANTIZE", [name], {"dtype": QuantType.UINT8}, name=f"{t.name}/to_uint8",
                                   quant=[self._checked(t, shift=False)],
                                   outputs=[self.graph.unique_name(f"{t.name}/uint8")])
        return y

    def quant_of(self, t: TflTensor, shift: bool = True) -> QuantParams | None:
        """Our parameters of a quantized TFLite tensor; uint8 becomes int8 (zero point - 128) when shift."""
        if not t.quant_scale or t.type_name not in ("INT8", "UINT8", "INT32"):
            return None
        zp = np.asarray(t.quant_zero_point or (0,), np.int64)
        if t.type_name == "UINT8" and shift:
            zp = zp - 128
        axis = t.quant_axis if len(t.quant_scale) > 1 else -1
        return QuantParams.make(np.asarray(t.quant_scale, np.float32), zp, axis)

    def _checked(self, t: TflTensor, shift: bool = True) -> QuantParams | None:
        q = self.quant_of(t, shift)
        dtype = np.int8 if t.type_name == "UINT8" and shift else t.dtype
        try:
            qrules.check_tensor(f"tensor {t.name!r}", t.shape, dtype, q)
        except ValueError as e:
            raise ModelFormatError(f"{self.source}: {e}") from None
        return q

    def _check_types(self, op: TflOp) -> None:
        for k, i in enumerate(op.inputs + op.outputs):
            if i < 0:
                continue
            t = self.model.tensors[i]
            const = t.data is not None or (i in self.names and self.graph.const(self.names[i]) is not None)
            fp16_weight = t.type_name == "FLOAT16" and (  # fp16 weights, possibly sparse: DENSIFY, then DEQUANTIZE
                (op.name == "DEQUANTIZE" and k == 0 and const)
                or (op.name == "DENSIFY" and (t.is_sparse or k == 1 or const)))
            if t.quantized and not (t.quant_scale and t.type_name in ("INT8", "UINT8", "INT32")):
                raise UnsupportedOpError(self.op_label(op), self.node_name(op), self.source,
                                         f"tensor {t.name!r} is quantized as {t.type_name}"
                                         f"{'' if t.quant_scale else ' without a scale'}; wasmrt reads int8 and "
                                         "uint8 quantization (int32 biases)")
            if t.type_name not in _PLAIN_TYPES and not fp16_weight and not t.quantized:
                raise UnsupportedOpError(self.op_label(op), self.node_name(op), self.source,
                                         f"tensor {t.name!r} has type {t.type_name}")
            if t.is_variable and op.name not in STATEFUL_OPS:
                raise UnsupportedOpError(self.op_label(op), self.node_name(op), self.source,
                                         f"tensor {t.name!r} is a variable")
            if t.is_sparse and not (op.name == "DENSIFY" and k == 0 and t.data is not None):
                raise UnsupportedOpError(self.op_label(op), self.node_name(op), self.source,
                                         f"tensor {t.name!r} is sparse; TFLite reads sparse tensors through DENSIFY")

    def _check_output_shapes(self, op: TflOp) -> None:
        """Our shape inference must reproduce the shapes the file records: a mismatch means a corrupt file (or an
        importer bug), and converting on would only fail later and further from the cause."""
        if self.shapes_overridden:
            return
        for i in op.outputs:
            t = self.model.tensors[i]
            ours = self.graph.tensors[self.names[i]].shape
            if ours != t.shape and (t.shape or not ours):
                raise ModelFormatError(f"{self.source}: {self.op_label(op)} node {t.name!r}: inconsistent model: "
                                       f"the file records output shape {t.shape}, its inputs give {ours}")

    # -- helpers for the op handlers -----------------------------------------------------------------------------
    @staticmethod
    def op_label(op: TflOp) -> str:
        return f"CUSTOM:{op.custom_code}" if op.name == "CUSTOM" else op.name

    def node_name(self, op: TflOp) -> str:
        return self.model.tensors[op.outputs[0]].name if op.outputs else f"operator_{op.index}"

    def unsupported(self, op: TflOp, detail: str) -> UnsupportedOpError:
        return UnsupportedOpError(self.op_label(op), self.node_name(op), self.source, detail)

    def tensor(self, op: TflOp, k: int) -> TflTensor | None:
        """The TFLite tensor of op input k, or None when the optional input is absent."""
        i = op.inputs[k] if k < len(op.inputs) else -1
        return self.model.tensors[i] if i >= 0 else None

    def name(self, index: int) -> str:
        """Graph name of TFLite tensor `index`, adding constants to the graph on first use."""
        if index not in self.names:
            t = self.model.tensors[index]
            if t.data is None:
                raise ModelFormatError(f"{self.source}: tensor {t.name!r} is read before any operator produces it")
            data = t.data
            if t.type_name == "UINT8" and t.quant_scale:
                data = (data.astype(np.int16) - 128).astype(np.int8)
            self.names[index] = self.graph.add_const(t.name, data, quant=self._checked(t))
        return self.names[index]

    def is_quantized(self, name: str) -> bool:
        return self.graph.tensors[name].quant is not None

    def input(self, op: TflOp, k: int, optional: bool = False) -> str:
        """Graph name of op input k; "" when an optional input is absent."""
        i = op.inputs[k] if k < len(op.inputs) else -1
        if i < 0 and not optional:
            raise ModelFormatError(f"{self.source}: {self.op_label(op)} node {self.node_name(op)!r}: "
                                   f"required input {k} is missing")
        return self.name(i) if i >= 0 else ""

    def shape(self, name: str) -> tuple[int, ...]:
        return self.graph.tensors[name].shape

    def const(self, op: TflOp, k: int, what: str) -> np.ndarray:
        """Value of op input k, which must be constant (possibly after folding)."""
        name = self.input(op, k, optional=True)
        value = self.graph.const(name) if name else None
        if value is None:
            raise self.unsupported(op, f"{what} (input {k}) must be constant")
        return value

    def emit(self, op: TflOp, kind: str, inputs: list[str], attrs: dict[str, Any] | None = None,
             final: bool = False, quantize: bool = False) -> str:
        """Add one of our ops (or its folded value). final binds the result to the TFLite op's output tensor;
        quantize: the output is quantized whatever the input (QUANTIZE)."""
        out_tensor = self.model.tensors[op.outputs[0]]
        base = out_tensor.name if final else f"{out_tensor.name}/{kind.lower()}"
        x = self.graph.tensors[inputs[0]] if inputs and inputs[0] else None
        if x is not None and x.quant is None and not quantize:
            inputs = [self._dequantized(i) for i in inputs]
        quant = None
        if quantize or (x is not None and x.quant is not None and kind != "DEQUANTIZE"):
            # a quantized op writes the TFLite output's parameters; steps inside one TFLite op move integers
            quant = self._checked(out_tensor) if final else x.quant
        try:
            constant = inputs and all(self.graph.const(i) is not None for i in inputs if i)
            if constant and self._cheap(kind, inputs, attrs):
                name = self._fold(kind, inputs, attrs or {}, base)
            else:
                (name,) = self.graph.add_node(kind, inputs, attrs, name=base, quant=[quant],
                                              outputs=[self.graph.unique_name(base)])
        except ValueError as e:  # shape inference rejects what the file describes
            raise ModelFormatError(f"{self.source}: {self.op_label(op)} node {out_tensor.name!r}: {e}") from e
        if final:
            self.names[op.outputs[0]] = name
        return name

    def state_input(self, op: TflOp, k: int, shape: tuple[int, ...], base: str) -> str:
        """Input k of a stateful op in `shape`: a variable becomes a graph input (once), anything else is read as
        usual; "" when absent."""
        i = op.inputs[k] if k < len(op.inputs) else -1
        if i < 0:
            return ""
        t = self.model.tensors[i]
        if t.is_variable and i not in self.names:
            self.names[i] = self.graph.add_input(self.graph.unique_name(t.name), t.shape, np.float32)
        return self.emit(op, "RESHAPE", [self.input(op, k)], {"shape": shape}) if self.shape(self.input(op, k)) \
            != shape else self.input(op, k)

    def state_output(self, op: TflOp, k: int, value: str) -> None:
        """The new value of variable input k (ignored when input k is not a variable)."""
        i = op.inputs[k] if k < len(op.inputs) else -1
        if i >= 0 and self.model.tensors[i].is_variable:
            self.state_outputs.append((value, self.names[i]))

    def bind_output(self, op: TflOp, k: int, name: str) -> None:
        """Output k of the TFLite op is graph tensor `name`."""
        self.names[op.outputs[k]] = name

    def _dequantized(self, name: str) -> str:
        """A float op's quantized constant operand (hybrid "dynamic range" models keep weights in int8) as the
        float32 constant it stands for; the op then computes in float."""
        t = self.graph.tensors[name] if name else None
        if t is None or t.quant is None or not t.is_const or t.dtype == np.int32:
            return name
        return self.graph.add_const(f"{name}/dequantized", dequantize(t.data, t.quant))

    def bind(self, op: TflOp, value: np.ndarray) -> None:
        """The TFLite op's output is the constant `value`."""
        self.names[op.outputs[0]] = self.graph.add_const(self.node_name(op), value)

    def _cheap(self, kind: str, inputs: list[str], attrs: dict[str, Any] | None) -> bool:
        """Whether folding it now is cheap (else it stays a node: a hostile file must not make the import hang)."""
        full = {**OPS[kind].defaults(), **(attrs or {})}
        values = [self.graph.const(i) if i else None for i in inputs]
        specs = shapes.infer(kind, [None if v is None else (v.shape, v.dtype) for v in values], full)
        return fold_work(kind, values, full, [s for s, _ in specs]) <= MAX_FOLD_WORK

    def _fold(self, kind: str, inputs: list[str], attrs: dict[str, Any], base: str) -> str:
        full = OPS[kind].defaults()
        full.update(attrs)
        values = [self.graph.const(i) if i else None for i in inputs]
        (value,) = dispatch.run(kind, values, full)  # quantized constants: integer data movement
        q = self.graph.tensors[inputs[0]].quant if inputs[0] else None
        keep = q is not None and q.per_tensor and kind in qrules.SAME_PARAMS
        return self.graph.add_const(base, value, quant=q if keep else None)
