"""The WGSL target of the kernel definitions: the `Isa` table with one f32 lane, in WGSL syntax.

The element-wise definitions (kernels/eltwise.py BINARY/UNARY) are written against `Isa`; with this table they emit
WGSL expressions, so the GPU kernels compute the same arithmetic as the C ones (exp, sigmoid and tanh excepted:
kernels/gpu.py says why). min/max keep the pmin/pmax rule of the C targets (a select, not WGSL's min/max,
whose NaN behaviour is unspecified).
"""

from __future__ import annotations

from dataclasses import dataclass

from kernels_wasm.gen.isa import Expr, Isa
from kernels_wasm.gen.kernels import approx


@dataclass(frozen=True)
class WgslIsa(Isa):
    def decl(self, name: str, value: Expr, const: bool = True) -> str:
        return f"{'let' if const else 'var'} {name}: f32 = {value};"


WGSL = WgslIsa(
    name="wgsl", vl=1, vtype="f32", tail="none", unroll=1,
    ops={
        "zero": "0.0", "dup": "{0}", "fma": "fma({0}, {1}, {2})", "add": "({0} + {1})", "sub": "({0} - {1})",
        "mul": "({0} * {1})", "div": "({0} / {1})",
        "min": "select({0}, {1}, {1} < {0})", "max": "select({0}, {1}, {0} < {1})",
        "sel_lt": "select({3}, {2}, {0} < {1})",
        "abs": "abs({0})", "neg": "(-({0}))", "sqrt": "sqrt({0})",
        "shl23": "bitcast<f32>(bitcast<u32>({0}) << 23u)",
    },
    notes=("WGSL, one f32 per invocation",),
)


def const_value(name: str) -> str:
    """A constant of approx.CONSTS as a WGSL literal (C's hex float literals with an f suffix are WGSL too)."""
    return approx.CONSTS[name]
