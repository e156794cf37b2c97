"""Kernel families: groups of generated kernels that a module built for given models (`wasmrt build --for`) may
leave out, each with the uses that need it. The one declaration of both: the generator guards each family's
kernels and table fields with `#if WRT_KF_<NAME>` (generated/wrt_families.h sets every macro to 1, so the full
modules hold everything), and wasmrt/dev/modules.py sets the macros of a trimmed module from the uses of its models.

A use is `OP:CLASS` (an op and the dtype class its inputs put it in: F32, QS8, OTHER, F32_SPARSE, the classes of
engine.h's op table), a path the planner may pick for a model's layer (`dwconv`, `winograd`, `qsparse`), or
`dynamic` (inputs sized at run time). RESIZE guards engine code rather than kernels: the same switch, for the same
question."""

from __future__ import annotations

from dataclasses import dataclass

from kernels_wasm.gen.kernels import eltwise

HEADER = "wrt_families.h"


@dataclass(frozen=True)
class Family:
    name: str  # the macro WRT_KF_<name>
    needed_by: tuple[str, ...]  # uses (OP:CLASS or a path); a family is kept when a model has any of them
    what: str


# the recurrent ops' gates run the sigmoid, tanh and relu kernels
_RNN = ("LSTM:F32", "GRU:F32", "RNN:F32")


# the binary kernels (eltwise.BINARY) each op runs, vector and scalar-b forms; the vector addition is in every module
# (convolutions and GEMMs add their residual input with it)
BINARY_OPS = {"add": "ADD", "sub": "SUB", "rsub": "SUB", "mul": "MUL", "div": "DIV", "rdiv": "DIV", "max": "MAXIMUM",
              "min": "MINIMUM", "prelu": "PRELU"}


def binary_family(kernel: str, scalar_b: bool) -> str | None:
    """The family of a binary kernel (None: every module has it)."""
    return None if kernel == "add" and not scalar_b else f"BINARY_{kernel.upper()}"


def _unary(op: str) -> Family:
    return Family(f"UNARY_{op.upper()}", (f"{op.upper()}:F32", *(_RNN if op in ("sigmoid", "tanh", "relu") else ())),
                  f"the float32 {op} kernel")


def all_families() -> tuple[Family, ...]:
    """Every family, the element-wise ones from eltwise's tables as they stand (an op added to them has its family)."""
    return (
        Family("DWCONV", ("dwconv",), "float32 depthwise convolution tiles"),
        Family("POOL", ("MAX_POOL_2D:F32", "AVERAGE_POOL_2D:F32"), "float32 max and average pooling"),
        Family("QS8", ("*:QS8",), "every int8 kernel: GEMM, indirect GEMM, depthwise, addition, packing"),
        Family("SPARSE", ("CONV_2D:F32_SPARSE", "FULLY_CONNECTED:F32_SPARSE"), "float32 sparse GEMM and GEMV"),
        Family("QSPARSE", ("qsparse",), "int8 block-sparse GEMM"),
        Family("WINOGRAD", ("winograd",), "Winograd F(2x2,3x3) and F(4x4,3x3) transforms"),
        Family("RESIZE", ("dynamic",), "re-planning a model whose inputs are sized at run time (engine: planner.c, "
               "wrt_resize_inputs)"),
        Family("INTERLEAVE", ("TRANSPOSE:F32", "TRANSPOSE:QS8", "TRANSPOSE:OTHER"), "the 3-channel interleave of "
               "transposes (exact data movement: without it the generic loop gives the same bytes)"),
        Family("TRAIN", ("train",), "training: the gradient GEMM, activation gradients, SGD and Adam updates"),
        *(_unary(op) for op in eltwise.UNARY),
        *(Family(f"BINARY_{k.upper()}", (f"{op}:F32",), f"the float32 {k} kernels") for k, op in BINARY_OPS.items()),
    )


def macro(family: str) -> str:
    if family not in {f.name for f in all_families()}:
        raise KeyError(f"no kernel family {family!r} in kernels_wasm/gen/families.py")
    return f"WRT_KF_{family}"


def condition(family: str) -> str:
    """The preprocessor test of a family: on unless a trimmed build set its macro to 0 (a family declared since
    wrt_families.h was generated is on too)."""
    m = macro(family)
    return f"!defined({m}) || {m}"


def guard(family: str | None, code: str) -> str:
    """code inside its family's guard (None: always built)."""
    return code if family is None else f"#if {condition(family)}\n{code}#endif\n"


def kept(uses: set[str]) -> dict[str, bool]:
    """Family -> whether a module for models with these uses needs it."""
    classes = {u.split(":", 1)[1] for u in uses if ":" in u}
    return {f.name: any(n in uses or (n.startswith("*:") and n[2:] in classes) for n in f.needed_by)
            for f in all_families()}


def header() -> str:
    """generated/wrt_families.h: every family on unless the build of a trimmed module has set its macro."""
    lines = ["/* GENERATED from kernels_wasm/gen/families.py by python -m kernels_wasm.gen: do not edit.",
             " * Kernel families a module built for given models may leave out (wasmrt build --for sets their macros",
             " * to 0 in its generated wrt_trim.h); the full modules keep them all. */",
             "#ifndef WRT_FAMILIES_H", "#define WRT_FAMILIES_H", ""]
    for f in all_families():
        lines += [f"#ifndef {macro(f.name)} /* {f.what} */", f"#define {macro(f.name)} 1", "#endif"]
    return "\n".join([*lines, "", "#endif", ""])
