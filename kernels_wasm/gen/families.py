"""Kernel families: groups of generated kernels that a module built for given models (`wasmrt build --for`) may
leave out, each with the uses that need it. The one declaration of both: the generator guards each family's
kernels and table fields with `#if WRT_KF_<NAME>` (generated/wrt_families.h sets every macro to 1, so the full
modules hold everything), and wasmrt/dev/modules.py sets the macros of a trimmed module from the uses of its models.

A use is `OP:CLASS` (an op and the dtype class its inputs put it in: F32, QS8, OTHER, F32_SPARSE, the classes of
engine.h's op table), a path the planner may pick for a model's layer (`dwconv`, `winograd`, `qsparse`), or
`dynamic` (inputs sized at run time). RESIZE guards engine code rather than kernels: the same switch, for the same
question.

Some families refine another (`parent`): the depthwise kernels of one filter size within the depthwise path, the int8
depthwise kernel of any filter within the int8 kernels. Their guard tests both, so a kernel is never compiled without
the table field that calls it. Uses that say which variant a layer runs (its filter's taps, a binary op's operand
broadcast along the last axis: `OP:CLASS:scalar_b`) come from the models' shapes (wasmrt/dev/modules.py); a left-out
variant would run correctly by another path, never faster (a generic kernel, the engine's scalar loop). A family
that only adds speed (`speed_only`) is left out of a module built for models that would otherwise be over its
budget (`build_for(limit=)`)."""

from __future__ import annotations

from dataclasses import dataclass

from kernels_wasm.gen.kernels import dwconv, eltwise

HEADER = "wrt_families.h"


@dataclass(frozen=True)
class Family:
    name: str  # the macro WRT_KF_<name>
    needed_by: tuple[str, ...]  # uses (OP:CLASS or a path); a family is kept when a model has any of them
    what: str
    parent: str | None = None  # a family this one refines: kept only with it
    speed_only: bool = False  # without it the same models run the same bytes, slower: left out of a module over budget


# the deepest patch (taps x channels, bytes) with which an int8 KxK convolution runs as a GEMM on gathered patches
# (qconv.c QC_PATCH; generated/wrt_families.h WRT_QPATCH_K): a first layer of few channels
QPATCH_K = 32

# the recurrent ops' gates run the sigmoid, tanh and relu kernels
_RNN = ("LSTM:F32", "GRU:F32", "RNN:F32")


# the binary kernels (eltwise.BINARY) each op runs, vector and scalar-b forms; the vector addition is in every module
# (convolutions and GEMMs add their residual input with it)
BINARY_OPS = {"add": "ADD", "sub": "SUB", "rsub": "SUB", "mul": "MUL", "div": "DIV", "rdiv": "DIV", "max": "MAXIMUM",
              "min": "MINIMUM", "prelu": "PRELU"}


def binary_family(kernel: str, scalar_b: bool) -> str | None:
    """The family of a binary kernel (None: every module has it). The scalar-b forms (one operand broadcast along
    the rows) have their own: most models' binary ops have operands of the output's shape or a channel row."""
    if scalar_b:
        return f"BINARY_{kernel.upper()}_SCALAR"
    return None if kernel == "add" else f"BINARY_{kernel.upper()}"


def dwconv_family(ks: int) -> str:
    """The family of the float depthwise kernel for filters of ks taps (0: any filter)."""
    return f"DWCONV_{ks or 'ANY'}"


def dwconv_use(taps: int) -> str:
    """The use of a float depthwise layer of `taps` filter taps: the kernel the engine picks for it (conv.c
    pick_dwconv: the specialized size, else the one for any filter)."""
    return f"dwconv:{taps if taps in dwconv.SPECIALIZED_KS else 'any'}"


def _unary(op: str) -> Family:
    return Family(f"UNARY_{op.upper()}", (f"{op.upper()}:F32", *(_RNN if op in ("sigmoid", "tanh", "relu") else ())),
                  f"the float32 {op} kernel")


def all_families() -> tuple[Family, ...]:
    """Every family, the element-wise ones from eltwise's tables as they stand (an op added to them has its family)."""
    return (
        Family("DWCONV", ("dwconv",), "float32 depthwise convolution tiles"),
        *(Family(dwconv_family(ks), (f"dwconv:{ks or 'any'}",), f"the float32 depthwise kernel for "
                 f"{f'{ks}-tap' if ks else 'any other'} filters", "DWCONV") for ks in (*dwconv.SPECIALIZED_KS, 0)),
        Family("MAXPOOL", ("MAX_POOL_2D:F32",), "float32 max pooling"),
        Family("AVGPOOL", ("AVERAGE_POOL_2D:F32",), "float32 average pooling"),
        Family("QS8", ("*:QS8",), "every int8 kernel: GEMM, indirect GEMM, depthwise, addition, packing"),
        Family("QDWCONV_ANY", ("qdwconv:any",), "the int8 depthwise kernels of any filter (the others run 3x3 "
               "filters)", "QS8"),
        Family("QPATCH", ("qpatch",), "the int8 convolution of small patches as a GEMM (engine: qconv.c QC_PATCH; "
               "else the indirect GEMM)", "QS8"),
        Family("QGEMM_ROW", ("qgemm_row",), "the int8 GEMM of a lone row (a GEMM of one row, or one past whole "
               "tiles: M odd, every target's MR being even)", "QS8"),
        Family("QADD_SCALAR", ("ADD:QS8:scalar_b",), "the int8 addition of a broadcast scalar", "QS8"),
        Family("SPARSE", ("CONV_2D:F32_SPARSE", "FULLY_CONNECTED:F32_SPARSE"), "float32 sparse GEMM and GEMV"),
        Family("QSPARSE", ("qsparse",), "int8 block-sparse GEMM"),
        Family("WINOGRAD", ("winograd",), "Winograd F(2x2,3x3) and F(4x4,3x3) transforms"),
        Family("RESIZE", ("dynamic",), "re-planning a model whose inputs are sized at run time (engine: planner.c, "
               "wrt_resize_inputs)"),
        Family("INTERLEAVE", ("TRANSPOSE:F32", "TRANSPOSE:QS8", "TRANSPOSE:OTHER"), "the 3-channel interleave of "
               "transposes (exact data movement: without it the generic loop gives the same bytes)"),
        Family("CHAINS", ("chain",), "element-wise ops in a row run block by block as one pass (engine: "
               "elementwise.c plan_chains; without it each op runs alone: the same bytes)", speed_only=True),
        Family("TRAIN", ("train",), "training: the gradient GEMM, activation gradients, SGD and Adam updates"),
        *(_unary(op) for op in eltwise.UNARY),
        *(Family(f"BINARY_{k.upper()}", (f"{op}:F32",), f"the float32 {k} kernel") for k, op in BINARY_OPS.items()
          if k != "add"),
        *(Family(f"BINARY_{k.upper()}_SCALAR", (f"{op}:F32:scalar_b",), f"the float32 {k} kernel of a broadcast "
                 "scalar") for k, op in BINARY_OPS.items()),
    )


def macro(family: str) -> str:
    if family not in {f.name for f in all_families()}:
        raise KeyError(f"no kernel family {family!r} in kernels_wasm/gen/families.py")
    return f"WRT_KF_{family}"


def condition(family: str) -> str:
    """The preprocessor test of a family: on unless a trimmed build set its macro to 0 (a family declared since
    wrt_families.h was generated is on too), and its parent's."""
    m = macro(family)
    own = f"!defined({m}) || {m}"
    parent = next(f.parent for f in all_families() if f.name == family)
    return own if parent is None else f"({own}) && ({condition(parent)})"


def guard(family: str | None, code: str) -> str:
    """code inside its family's guard (None: always built)."""
    return code if family is None else f"#if {condition(family)}\n{code}#endif\n"


def kept(uses: set[str]) -> dict[str, bool]:
    """Family -> whether a module for models with these uses needs it."""
    classes = {u.split(":", 1)[1] for u in uses if ":" in u}
    own = {f.name: any(n in uses or (n.startswith("*:") and n[2:] in classes) for n in f.needed_by)
           for f in all_families()}
    parents = {f.name: f.parent for f in all_families()}
    return {f: on and (parents[f] is None or own[parents[f]]) for f, on in own.items()}


def header() -> str:
    """generated/wrt_families.h: every family on unless the build of a trimmed module has set its macro."""
    lines = ["/* GENERATED from kernels_wasm/gen/families.py by python -m kernels_wasm.gen: do not edit.",
             " * Kernel families a module built for given models may leave out (wasmrt build --for sets their macros",
             " * to 0 in its generated wrt_trim.h); the full modules keep them all. */",
             "#ifndef WRT_FAMILIES_H", "#define WRT_FAMILIES_H", ""]
    for f in all_families():
        lines += [f"#ifndef {macro(f.name)} /* {f.what} */", f"#define {macro(f.name)} 1", "#endif"]
    lines += ["", f"#define WRT_QPATCH_K {QPATCH_K} /* bytes: the deepest patch of QC_PATCH (qconv.c) */"]
    return "\n".join([*lines, "", "#endif", ""])
