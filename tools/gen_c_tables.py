"""The C engine's op tables (kernels_wasm/engine/generated/wrt_ops.h), generated from python_ref/opdefs.py, and its
error codes (a marked block of kernels_wasm/engine/wasmrt.h), generated from python_ref/errors.py.

Called by tools/gen_schema.py (which writes the file and covers it with `--check`); not a command of its own.
The header holds what the C reader needs to know about the format's op set, so adding an op never means editing
C tables by hand:

- op codes (`OP_<NAME>`), names, input arity (min, declared, variadic), output count, options union type id;
- union Options type ids (`OPTIONS_<Table>`, NONE = 0) in the order of the schema's `union Options` declaration;
- per options table, its fields: FlatBuffers slot (declaration order: vtable entry at byte 4 + 2 * slot), kind,
  scalar/element size, default; an ints/floats attribute with a non-empty default has exactly that many values;
- attribute names (`ATTR_<name>`) and enums (`WRT_ENUM_<Name>`, values `WRT_<Name>_<VALUE>`, valid range);
- the op families (OpDef.family, OpDef.quant): per op its family (`WRT_FAMILY_*`), its int8 form (`WRT_QUANT_*`,
  read by the reader's int8 rules), whether int8 inputs must be quantized, and for an element-wise unary op its
  vector kernel (`WRT_UN_<NAME>` of kernels_wasm/gen/kernels/eltwise.py UNARY, named like the op) with the float
  attributes the kernel takes as params (`WRT_UNARY_PARAMS`); the engine dispatches such an op to it by itself
  (`WRT_KEEP_UNARY_F32`: whether a module built for given models holds any).

The declarations are always visible; the table definitions are compiled where WRT_OPS_DEFINE_TABLES is defined
when the header is included again after engine.h (kernels_wasm/engine/support.c), once. A module built for given
models (engine.h WRT_KEEP_OP) keeps the fields of the options tables its ops read: another op's table is read as
empty, and the op is refused by the shape checks that follow.
"""

from __future__ import annotations

import math
from typing import Any

from kernels_wasm.gen.kernels import eltwise
from python_ref import errors, opdefs

C_HEADER_PATH = "kernels_wasm/engine/generated/wrt_ops.h"
API_HEADER_PATH = "kernels_wasm/engine/wasmrt.h"  # the public header: its error codes are a generated block
ERRORS_BEGIN = "/* Error codes: GENERATED from python_ref/errors.py by tools/gen_schema.py, do not edit */"
ERRORS_END = "/* end of the generated error codes */"

KINDS = {"int": "WRT_ATTR_INT", "float": "WRT_ATTR_FLOAT", "bool": "WRT_ATTR_BOOL", "ints": "WRT_ATTR_INTS",
         "floats": "WRT_ATTR_FLOATS"}
SIZES = {"int": 4, "float": 4, "bool": 1, "ints": 4, "floats": 4}  # FlatBuffers scalar / vector element bytes
ENUM_SIZE = 1  # the schema declares every attribute enum as `: byte`


def options_union() -> list[tuple[str, tuple[opdefs.Attr, ...]]]:
    """The members of `union Options`, in declaration order: type id = index + 1 (0 is NONE)."""
    return list(opdefs.options_tables().items())


def _float(v: float) -> str:
    if math.isinf(v):
        return "__builtin_inff()" if v > 0 else "-__builtin_inff()"
    if math.isnan(v):
        raise ValueError("NaN defaults are not representable")
    return f"{float(v)!r}f"


def _attr_names(union: list[tuple[str, tuple[opdefs.Attr, ...]]]) -> list[str]:
    names: list[str] = []
    for _, attrs in union:
        names += [a.name for a in attrs if a.name not in names]
    return names


def _field(table: str, slot: int, a: opdefs.Attr) -> tuple[str, str | None]:
    """One wrt_fielddef initializer, and the definition of its default vector (if any)."""
    is_enum = a.kind in opdefs.ENUMS
    kind = "WRT_ATTR_ENUM" if is_enum else KINDS[a.kind]
    size = ENUM_SIZE if is_enum else SIZES[a.kind]
    def_int, def_float, def_len, vec, vec_def = "0", "0.0f", 0, "0", None
    if a.kind in ("ints", "floats"):
        values: tuple[Any, ...] = tuple(a.default or ())
        def_len = len(values)
        if values:
            ctype, fmt = ("int32_t", lambda x: str(int(x))) if a.kind == "ints" else ("float", _float)
            vec = f"wrt_def_{table}_{a.name}"
            vec_def = f"static const {ctype} {vec}[{def_len}] = {{{', '.join(fmt(x) for x in values)}}};"
    elif a.kind == "float":
        def_float = _float(a.default)
    else:  # int, bool, enum
        def_int = str(int(a.default))
    ints, floats = (vec, "0") if a.kind == "ints" else ("0", vec)
    enum_id = f"WRT_ENUM_{a.kind}" if is_enum else "-1"
    init = (f"{{\"{a.name}\", ATTR_{a.name}, {slot}, {kind}, {size}, {enum_id}, "
            f"{def_int}, {def_float}, {def_len}, {ints}, {floats}}}")
    return init, vec_def


def unary_kernels() -> dict[str, str]:
    """Element-wise unary op -> its vector kernel (the UNARY entry of kernels_wasm/gen/kernels/eltwise.py named
    like the op, lower case)."""
    out = {}
    for k in eltwise.UNARY:
        d = opdefs.OPS.get(k.upper())
        if d is None or d.family != opdefs.UNARY:
            raise ValueError(f"vector kernel {k!r}: no element-wise unary op {k.upper()} in python_ref/opdefs.py")
        if eltwise.UNARY[k][1] != len(unary_params(d)):
            raise ValueError(f"vector kernel {k!r} reads {eltwise.UNARY[k][1]} params, {d.name} has "
                             f"{len(unary_params(d))} float attributes")
        out[d.name] = eltwise.unary_enum(k)
    return out


def unary_params(d: opdefs.OpDef) -> list[str]:
    """The float attributes of an element-wise unary op, in declaration order: the params of its vector kernel (the
    engine's wrt_attrs field of the same name)."""
    floats = [a.name for a in d.attrs if a.kind == "float"]
    if len(floats) > 2 or len(floats) != len(d.attrs):
        raise ValueError(f"{d.name}: an element-wise unary op passes at most 2 float attributes to its kernel")
    return floats


def _families(ops: list[opdefs.OpDef]) -> list[str]:
    """The family enums, the params macro of the unary ops' kernels."""
    kernels = unary_kernels()
    if len(opdefs.FAMILIES) > 4 or len(opdefs.QUANT_FORMS) > 8:
        raise ValueError("widen wrt_opdef.family / wrt_opdef.quant")
    out = ["/* op families (python_ref/opdefs.py OpDef.family, OpDef.quant) */",
           "enum { " + ", ".join(f"WRT_FAMILY_{(f or 'none').upper()} = {i}" for i, f in enumerate(opdefs.FAMILIES))
           + " };",
           "enum { " + ", ".join(f"WRT_QUANT_{(q or 'none').upper()} = {i}" for i, q in enumerate(opdefs.QUANT_FORMS))
           + " };",
           "/* an int8 form computed by the op itself (not a LOOKUP made by converters) */",
           "#define WRT_QUANT_NATIVE(q) (" + " || ".join(f"(q) == WRT_QUANT_{q.upper()}" for q in opdefs.Q_NATIVE)
           + ")",
           "/* p[] = the params of an element-wise unary op's vector kernel: its float attributes, in order */",
           "#define WRT_UNARY_PARAMS(type, a, p) \\", "  do { \\", "    switch (type) { \\"]
    for d in ops:
        params = unary_params(d) if d.name in kernels else []
        if params:
            out.append(f"      case OP_{d.name}: " + " ".join(f"(p)[{i}] = (a)->{n};" for i, n in enumerate(params))
                       + " break; \\")
    out += ["      default: break; \\", "    } \\", "  } while (0)",
            "/* whether the module holds a float32 element-wise unary op (engine.h WRT_KEEP: a module built for given",
            " * models may have none, and leaves their path out) */",
            "#define WRT_KEEP_UNARY_F32 (" + " || ".join(f"WRT_KEEP({d.name}, F32)" for d in ops
                                                          if d.family == opdefs.UNARY) + ")", ""]
    return out


def header_text() -> str:
    ops = sorted(opdefs.OPS.values(), key=lambda d: d.code)
    kernels = unary_kernels()
    union = options_union()
    union_id = {name: i + 1 for i, (name, _) in enumerate(union)}
    enum_ids = {name: i for i, name in enumerate(opdefs.ENUMS)}
    attr_names = _attr_names(union)
    for d in ops:
        if len(d.inputs) > 254 or len(d.outputs) > 255:
            raise ValueError(f"{d.name}: too many inputs or outputs for the C tables")

    out = ["/* GENERATED from python_ref/opdefs.py by tools/gen_schema.py (tools/gen_c_tables.py): do not edit.",
           " * The op set of the .wrt format as the C engine reads it: op codes and arity, the union Options type",
           " * ids, each options table's FlatBuffers fields (slot = declaration index, vtable entry at byte",
           " * 4 + 2 * slot; kind; default), attribute names and enum ranges. Regenerate: python tools/gen_schema.py",
           " * The tables are defined where WRT_OPS_DEFINE_TABLES is defined (support.c, after engine.h). */",
           "#ifndef WRT_GENERATED_OPS_H", "#define WRT_GENERATED_OPS_H", "", "#include <stdint.h>", "",
           "/* enum OpType */", "enum {"]
    out += [f"  OP_{d.name} = {d.code}," for d in ops]
    out += [f"  OP_MAX_CODE = {ops[-1].code + 1} /* one past the largest op code */", "};",
            f"#define WRT_NUM_OPS {len(ops)}", "",
            "/* union Options type ids, in schema declaration order */", "enum {", "  OPTIONS_NONE = 0,"]
    out += [f"  OPTIONS_{name} = {union_id[name]}," for name, _ in union]
    out += [f"  OPTIONS_COUNT = {len(union) + 1}", "};", "",
            "/* attribute names of every options table */", "enum {"]
    out += [f"  ATTR_{n} = {i}," for i, n in enumerate(attr_names)]
    out += [f"  WRT_NUM_ATTRS = {len(attr_names)}", "};", "", "/* enums of attributes */", "enum {"]
    out += [f"  WRT_ENUM_{n} = {i}," for n, i in enum_ids.items()]
    out += [f"  WRT_NUM_ENUMS = {len(enum_ids)}", "};"]
    for name, cls in opdefs.ENUMS.items():
        out.append("enum { " + ", ".join(f"WRT_{name}_{m.name} = {int(m)}" for m in cls) + " };")
    out += ["", "typedef enum { WRT_ATTR_INT, WRT_ATTR_FLOAT, WRT_ATTR_BOOL, WRT_ATTR_INTS, WRT_ATTR_FLOATS, "
                "WRT_ATTR_ENUM } wrt_attr_kind;", "",
            "typedef struct {",
            "  const char* name;",
            "  uint16_t code;",
            "  uint8_t min_in;   /* required inputs (a variadic input is required once) */",
            "  uint8_t max_in;   /* declared inputs (trailing ones optional); variadic: the last one repeats */",
            "  uint8_t variadic; /* any number >= min_in, all present */",
            "  uint8_t n_out;    /* outputs; variadic_out: at least one, any number up to WRT_MAX_OP_OUTPUTS */",
            "  uint8_t variadic_out;",
            "  uint8_t options;  /* OPTIONS_* type id, OPTIONS_NONE for an op without attributes */",
            "  uint16_t const_in; /* bit i: input i must be a constant (packed at load) */",
            "  uint8_t family : 2;      /* WRT_FAMILY_* */",
            "  uint8_t quant : 3;       /* WRT_QUANT_*: its int8 form */",
            "  uint8_t needs_quant : 1; /* takes int8/uint8 inputs only as quantized tensors */",
            "  int8_t unary;     /* element-wise unary op: its vector kernel WRT_UN_* (wrt_eltwise.h), else -1 */",
            "} wrt_opdef;", "", *_families(ops),
            "typedef struct {",
            "  const char* name;          /* as in opdefs.py */",
            "  uint8_t attr;              /* ATTR_* */",
            "  uint8_t slot;              /* FlatBuffers field index: vtable entry at byte 4 + 2 * slot */",
            "  uint8_t kind;              /* wrt_attr_kind */",
            "  uint8_t size;              /* bytes of the scalar, or of one vector element */",
            "  int8_t enum_id;            /* WRT_ENUM_* for WRT_ATTR_ENUM, else -1 */",
            "  int32_t def_int;           /* default of an int, bool or enum field (absent = default) */",
            "  float def_float;           /* default of a float field */",
            "  uint8_t def_len;           /* ints/floats: default values; > 0: the vector has exactly this many */",
            "  const int32_t* def_ints;",
            "  const float* def_floats;",
            "} wrt_fielddef;", "",
            "typedef struct {",
            "  const char* name;",
            "  uint8_t n_fields;",
            "  const wrt_fielddef* fields; /* in slot order */",
            "} wrt_optionsdef;", "",
            "typedef struct {",
            "  const char* name;",
            "  int32_t min, max; /* valid values */",
            "} wrt_enumdef;", "",
            "extern const wrt_opdef WRT_OPDEFS[OP_MAX_CODE];         /* by op code; name NULL for unused codes */",
            "extern const wrt_optionsdef WRT_OPTIONS[OPTIONS_COUNT]; /* by union type id; [0] = NONE */",
            "extern const wrt_enumdef WRT_ENUMS[WRT_NUM_ENUMS];",
            "const wrt_opdef* wrt_opdef_of(int code);                /* NULL for unknown codes */", "",
            "#endif /* WRT_GENERATED_OPS_H */", "",
            "/* the tables, where engine.h (WRT_KEEP_OP: a module built for given models) is already included */",
            "#if defined(WRT_OPS_DEFINE_TABLES) && !defined(WRT_GENERATED_OPS_TABLES)",
            "#define WRT_GENERATED_OPS_TABLES", '#include "../../generated/wrt_eltwise.h" /* WRT_UN_* */',
            "const wrt_opdef WRT_OPDEFS[OP_MAX_CODE] = {"]
    for d in ops:
        opt = f"OPTIONS_{d.options}" if d.options else "OPTIONS_NONE"
        min_in = d.min_inputs + int(d.variadic)  # 'xs...': one or more
        fam = f"WRT_FAMILY_{(d.family or 'none').upper()}, WRT_QUANT_{(d.quant or 'none').upper()}"
        out.append(f"    [OP_{d.name}] = {{\"{d.name}\", {d.code}, {min_in}, {len(d.inputs)}, "
                   f"{int(d.variadic)}, {len(d.outputs)}, {int(d.variadic_outputs)}, {opt}, {d.const_mask}, "
                   f"{fam}, {int(d.needs_quant)}, {kernels.get(d.name, '-1')}}},")
    out.append("};")
    tables = []
    for name, attrs in union:
        inits, vecs = zip(*(_field(name, slot, a) for slot, a in enumerate(attrs)), strict=True)
        out += [v for v in vecs if v]
        out.append(f"static const wrt_fielddef wrt_fields_{name}[{len(attrs)}] = {{")
        out += [f"    {i}," for i in inits]
        out.append("};")
        keep = " || ".join(f"WRT_KEEP_OP({d.name})" for d in ops if d.options == name) or "0"
        tables.append(f"    [OPTIONS_{name}] = {{\"{name}\", ({keep}) ? {len(attrs)} : 0, "
                      f"({keep}) ? wrt_fields_{name} : 0}},")
    out += ["const wrt_optionsdef WRT_OPTIONS[OPTIONS_COUNT] = {", '    [OPTIONS_NONE] = {"NONE", 0, 0},', *tables,
            "};", "const wrt_enumdef WRT_ENUMS[WRT_NUM_ENUMS] = {"]
    for name, cls in opdefs.ENUMS.items():
        values = [int(m) for m in cls]
        if values != list(range(min(values), max(values) + 1)):
            raise ValueError(f"enum {name}: values must be contiguous for the C range check")
        out.append(f"    [WRT_ENUM_{name}] = {{\"{name}\", {min(values)}, {max(values)}}},")
    out += ["};", "#endif /* WRT_OPS_DEFINE_TABLES */", ""]
    return "\n".join(out)


def api_header_text(current: str) -> str:
    """wasmrt.h (the text `current`) with its block of error codes generated from python_ref/errors.py."""
    begin, end = current.find(ERRORS_BEGIN), current.find(ERRORS_END)
    if begin < 0 or end < begin:
        raise ValueError(f"{API_HEADER_PATH}: the markers of the generated error codes are missing")
    items = [(f"WRT_OK = {errors.OK},", "no error")]
    items += [(f"WRT_ERR_{e.name} = {e.code},", e.doc) for e in errors.ENGINE_ERRORS]
    width = max(len(code) for code, _ in items)
    block = [ERRORS_BEGIN, "enum {", *(f"  {code:<{width}} /* {doc} */" for code, doc in items), "};", ""]
    return current[:begin] + "\n".join(block) + current[end:]
