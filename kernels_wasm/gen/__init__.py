"""wasmrt kernel generator: one Python definition per micro-kernel, C for every target.

`isa.py` holds the per-target vector-ops tables, `kernels/` the kernel definitions written against those tables,
`emit.py` assembles one C file per target (`python -m kernels_wasm.gen` writes kernels_wasm/generated/).
"""

from kernels_wasm.gen.emit import generate_all, generate_target
from kernels_wasm.gen.isa import TARGETS, Isa

__all__ = ["TARGETS", "Isa", "generate_all", "generate_target"]
