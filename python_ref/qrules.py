"""The rules quantization parameters must follow, per tensor and per op: checked by the .wrt reader on load (a
hostile file gets a ModelFormatError naming the tensor or op), by python_ref.dispatch.run and by the graph IR. The C
reader enforces the same list (python_ref/README.md, "Quantized int8: what a reader verifies").

An op is quantized when one of its integer inputs carries quantization parameters (QUANTIZE, DEQUANTIZE and
LOOKUP always are); it then computes in the integer domain (python_ref/qops.py).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from python_ref.opdefs import OPS, Q_INTEGER, Q_MOVES, Q_NATIVE, Q_TABLE, Q_WEIGHTED, quant_form
from python_ref.quant import INT32_MAX, QUANT_DTYPES, QuantParams, qrange

Spec = tuple[tuple[int, ...], np.dtype, QuantParams | None]  # shape, dtype, quantization
I32 = np.dtype(np.int32)
F32 = np.dtype(np.float32)
TABLE_SIZE = 256

# the op families of the int8 rules, from each op's declared int8 form (python_ref/opdefs.py OpDef.quant); the C
# reader reads the same declaration (kernels_wasm/engine/generated/wrt_ops.h)
WEIGHTED = quant_form(Q_WEIGHTED)
SAME_PARAMS = quant_form(Q_MOVES)  # the output's parameters must equal the input's
QUANTIZED_OPS = quant_form(*Q_NATIVE)  # ops with an int8 form of their own
ALWAYS_QUANTIZED = quant_form(Q_INTEGER)
TABULATED = quant_form(Q_TABLE)  # quantized by converters as a LOOKUP table, no int8 form of their own
# ops that take int8/uint8 only as quantized tensors (python_ref.shapes lets these integers through)
NEEDS_QUANT = {name for name, d in OPS.items() if d.needs_quant}


def check_tensor(where: str, shape: tuple[int, ...], dtype: np.dtype, q: QuantParams | None) -> None:
    """Rules for one tensor's parameters; raises ValueError starting with `where`."""
    if q is None:
        return
    dtype = np.dtype(dtype)

    def check(cond: bool, msg: str) -> None:
        if not cond:
            raise ValueError(f"{where}: {msg}")

    check(dtype in QUANT_DTYPES or dtype == I32, f"quantization parameters on a {dtype} tensor (only int8, uint8 "
                                                  "and int32 tensors are quantized)")
    n = q.scale.size
    check(n >= 1, "quantization with no scale")
    check(q.zero_point.size in (0, 1, n), f"{n} scales but {q.zero_point.size} zero points (expected {n}, one "
                                          "shared by every channel, or none for all zeros)")
    check(bool(np.all(np.isfinite(q.scale)) and np.all(q.scale > 0)),
          f"scales must be finite and > 0, got {_few(q.scale)}")
    if q.axis < 0:
        check(q.axis == -1 and n == 1, f"per-tensor quantization (axis -1) with {n} scales" if q.axis == -1
              else f"quantization axis {q.axis}")
    else:
        check(q.axis < len(shape), f"quantization axis {q.axis} out of range for rank {len(shape)}")
        check(n == shape[q.axis], f"{n} per-channel scales for {shape[q.axis]} channels on axis {q.axis}")
    lo, hi = qrange(dtype) if dtype != I32 else (0, 0)
    check(bool(np.all((q.zero_point >= lo) & (q.zero_point <= hi))),
          f"zero points must be in [{lo}, {hi}] for {dtype}, got {_few(q.zero_point)}")


def _few(v: np.ndarray) -> str:
    items = [f"{float(x):.6g}" if v.dtype.kind == "f" else str(int(x)) for x in v.reshape(-1)[:4]]
    return "[" + ", ".join(items) + (", ...]" if v.size > 4 else "]")


def is_quantized(op: str, inputs: list[Spec | None]) -> bool:
    if op in ALWAYS_QUANTIZED:
        return True
    x = inputs[0] if inputs else None
    return x is not None and x[1] in QUANT_DTYPES and x[2] is not None


def check_op(op: str, inputs: list[Spec | None], outputs: list[Spec], attrs: dict[str, Any],
             consts: list[np.ndarray | None] | None = None) -> bool:
    """Check the quantization rules of one op; returns whether it is quantized. Raises ValueError naming the
    problem (the caller prefixes the op). consts: the constant value of each input, where known."""
    consts = consts or [None] * len(inputs)
    if not is_quantized(op, inputs):
        x = inputs[0] if inputs else None
        if op in NEEDS_QUANT and x is not None and x[1] in QUANT_DTYPES:
            raise ValueError(f"input 0 ({x[1]}) has no quantization parameters; {op} takes integers only as "
                             "quantized tensors")
        if op == "CONCATENATION" and x is not None and x[1].kind != "f" and (
                float(attrs["act_min"]) != -math.inf or float(attrs["act_max"]) != math.inf):
            raise ValueError("a fused clamp on plain (unquantized) integers")
        for k, s in enumerate(inputs):
            if s is not None and s[2] is not None and not (op in WEIGHTED and k > 0):
                raise ValueError(f"input {k} is quantized but input 0 is not: mixing quantized and plain tensors")
        for s in outputs:
            if s[2] is not None:
                raise ValueError("the output is quantized but the inputs are not")
        return False
    if op not in QUANTIZED_OPS:
        hint = " (converters express quantized element-wise functions as a LOOKUP table)" \
            if op in TABULATED else ""
        raise ValueError(f"has no quantized variant: quantized input 0{hint}")
    y = outputs[0]
    _check_act(attrs)
    if op == "DEQUANTIZE":
        _need(inputs[0], 0, per_tensor=False)
        if y[2] is not None:
            raise ValueError("the float output of DEQUANTIZE has quantization parameters")
        return True
    if attrs.get("float_output"):  # the int32 accumulator dequantized: a plain float32 output
        if y[2] is not None:
            raise ValueError("the float output (float_output) has quantization parameters")
    else:
        _need(y, "the output", per_tensor=True)
    if op == "QUANTIZE":
        if inputs[0][1] != F32:
            _need(inputs[0], 0, per_tensor=True)
        elif inputs[0][2] is not None:
            raise ValueError("a float input with quantization parameters")
        return True
    if op == "LOOKUP":
        _need(inputs[0], 0, per_tensor=True)
        _check_table(consts[1], inputs[1], y[1], "LOOKUP")
        return True
    _need(inputs[0], 0, per_tensor=True)
    if op in WEIGHTED:
        _check_weights(inputs, y)
    elif op == "SOFTMAX":
        _check_softmax_table(inputs, consts, attrs)
    else:
        for k, s in enumerate(inputs[1:], start=1):
            if op == "GATHER":
                break
            _need(s, k, per_tensor=op != "PRELU")
    if op in ("ADD", "SUB"):
        from python_ref.quant import add_params, div_scale

        add_params(div_scale(inputs[0][2].s, y[2].s), div_scale(inputs[1][2].s, y[2].s))
    if op in SAME_PARAMS and inputs[0][2] != y[2]:
        raise ValueError(f"input and output quantization differ ({inputs[0][2]} vs {y[2]}); {op} moves integers "
                         "unchanged, so both must be equal (requantize with QUANTIZE first)")
    return True


def _need(s: Spec | None, what: Any, per_tensor: bool) -> None:
    name = f"input {what}" if isinstance(what, int) else what
    if s is None:
        raise ValueError(f"{name} is missing")
    if s[1] not in QUANT_DTYPES:
        raise ValueError(f"{name} is {s[1]}, expected int8 or uint8 in a quantized op")
    if s[2] is None:
        raise ValueError(f"{name} ({s[1]}) has no quantization parameters")
    if per_tensor and not s[2].per_tensor:
        raise ValueError(f"{name} must be quantized per tensor, it has {s[2].scale.size} scales on axis "
                         f"{s[2].axis}")


def _check_weights(inputs: list[Spec | None], y: Spec) -> None:
    w = inputs[1]
    _need(w, 1, per_tensor=False)
    if not w[2].per_tensor and w[2].axis != 0:
        raise ValueError(f"weights must be quantized per tensor or per output channel (axis 0), not axis "
                         f"{w[2].axis}")
    b = inputs[2] if len(inputs) > 2 else None
    if b is not None:
        if b[1] != I32:
            raise ValueError(f"the bias of a quantized op must be int32, got {b[1]}")
        if b[2] is not None and (np.any(b[2].zero_point != 0) or b[2].axis not in (-1, 0)):
            raise ValueError("a quantized bias must have zero point 0 (per tensor or per output channel)")


def _check_table(value: np.ndarray | None, spec: Spec | None, out_dtype: np.dtype, op: str) -> None:
    if spec is None:
        raise ValueError(f"{op} needs its table input")
    if value is None:
        raise ValueError(f"the {op} table must be a constant")
    if spec[0] != (TABLE_SIZE,) or spec[1] != out_dtype:
        raise ValueError(f"the {op} table must be [{TABLE_SIZE}] of {out_dtype}, got {list(spec[0])} of {spec[1]}")


def _check_softmax_table(inputs: list[Spec | None], consts: list[np.ndarray | None], attrs: dict[str, Any]) -> None:
    t = consts[1] if len(consts) > 1 else None
    _check_table(t, inputs[1] if len(inputs) > 1 else None, I32, "quantized SOFTMAX")
    n = inputs[0][0][int(attrs["axis"]) % max(len(inputs[0][0]), 1)] if inputs[0][0] else 1
    t = t.astype(np.int64)
    if not (t[0] >= 1 and np.all(t >= 0) and np.all(t <= t[0])):
        raise ValueError("the SOFTMAX table must hold values in [0, table[0]] with table[0] >= 1")
    if t[0] * max(n, 1) > INT32_MAX:
        raise ValueError(f"the SOFTMAX table's table[0] = {int(t[0])} times {n} values along the axis "
                         "overflows int32")


def _check_act(attrs: dict[str, Any]) -> None:
    for k in ("act_min", "act_max", "min", "max"):
        if k in attrs and math.isnan(float(attrs[k])):
            raise ValueError(f"{k} is NaN")

