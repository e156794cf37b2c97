"""Running one op of the reference engine: shapes and quantization rules checked, then the float kernel
(python_ref/ops.py) or, when the op's integer inputs are quantized, the integer-domain kernel (python_ref/qops.py)."""

from __future__ import annotations

from typing import Any

import numpy as np

from python_ref import ops, qops, qrules, shapes
from python_ref.quant import QuantParams


def run(op: str, inputs: list[np.ndarray | None], attrs: dict[str, Any],
        quant: tuple[list[QuantParams | None], list[QuantParams | None]] | None = None) -> list[np.ndarray]:
    """Run one op. inputs holds None for an absent optional input; attrs has every attribute of the op.

    quant: the quantization parameters of each input and output (None where a tensor has none). An op whose
    integer inputs are quantized computes in the integer domain (python_ref/qops.py)."""
    a = shapes.full_attrs(op, attrs)
    xs = [None if x is None else np.asarray(x) for x in inputs]
    specs = shapes.infer(op, [None if x is None else (x.shape, x.dtype) for x in xs], a)
    qin, qout = quant or ([None] * len(xs), [None] * len(specs))
    qin = list(qin) + [None] * (len(xs) - len(qin))
    ins = [None if x is None else (x.shape, x.dtype, q) for x, q in zip(xs, qin, strict=True)]
    try:
        quantized = qrules.check_op(op, ins, [(s, d, q) for (s, d), q in zip(specs, qout, strict=True)], a, xs)
    except ValueError as e:
        raise ValueError(f"{op}: {e}") from None
    got = qops.run(op, xs, a, qin, list(qout), specs[0][1]) if quantized else ops.KERNELS[op](xs, a)
    outs = list(got) if isinstance(got, tuple | list) else [got]
    if len(outs) != len(specs):
        raise AssertionError(f"{op}: kernel produced {len(outs)} outputs, shape inference says {len(specs)}")
    result = []
    for out, (shape, dtype) in zip(outs, specs, strict=True):
        y = np.asarray(out, dtype=dtype)
        if y.shape != shape:
            raise AssertionError(f"{op}: kernel produced shape {y.shape}, shape inference says {shape}")
        result.append(y if y.flags.c_contiguous else y.copy())
    return result
