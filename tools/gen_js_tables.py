"""The JS package's tables, generated: the .wrt format as the JS reader reads it (js_bindings/src/format/generated.js,
from python_ref/opdefs.py and the schema's model tables) and the engine's error codes with the class each one raises
(js_bindings/src/error_codes.js and its types error_codes.d.ts, from python_ref/errors.py).

Called by tools/gen_schema.py (which writes the files and covers them with `--check`); not a command of its own.

format/generated.js holds:
- OP_NAMES (op code -> name) and OP_CODES (name -> op code): enum OpType;
- OPTIONS, by union Options type id (0 = NONE, null): [table name, fields], each field [name, kind, default] in slot
  order (field i is FlatBuffers slot i);
- TABLES, the model-level tables (Model, Tensor, Operator, Metadata, ...): {field: [slot, kind, default]}; a union
  field `x` takes two slots, `x_type` (u8) then `x`;
- TABLE_REFS, the table type of each table field: {table: {field: type}};
- ENUMS, the attribute enums: {Name: {VALUE: number}}.
Kinds: bool, i8, u8, i16, u16, i32, u32, i64, u64, f32, f64 (scalars, an enum as its underlying type), string,
table, union, and [kind] for a vector ([table] for a vector of tables).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from python_ref import errors, opdefs, wrt_file

FORMAT_JS_PATH = "js_bindings/src/format/generated.js"
ERRORS_JS_PATH = "js_bindings/src/error_codes.js"
ERRORS_DTS_PATH = "js_bindings/src/error_codes.d.ts"
TRIAL_JS_PATH = "js_bindings/src/trial.js"
TRAIN_JS_PATH = "js_bindings/src/train/constants.js"

SCALARS = {"bool": "bool", "byte": "i8", "ubyte": "u8", "short": "i16", "ushort": "u16", "int": "i32", "uint": "u32",
           "long": "i64", "ulong": "u64", "float": "f32", "double": "f64"}
ATTR_KINDS = {"int": "i32", "float": "f32", "bool": "bool", "ints": "[i32]", "floats": "[f32]"}
ENUM_KIND = "i8"  # the schema declares every attribute enum as `: byte`


def _js(v: Any) -> str:
    """A JS literal of a default value."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(int(v))
    if isinstance(v, float):
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
        if math.isnan(v):
            raise ValueError("NaN defaults are not representable")
        return repr(v).removesuffix(".0") if v.is_integer() else repr(v)
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_js(x) for x in v) + "]"
    raise TypeError(f"no JS literal for {v!r}")


def _field(name: str, kind: str, default: Any) -> str:
    return f"[{json.dumps(name)}, {json.dumps(kind)}, {_js(default)}]"


def _attr(a: opdefs.Attr) -> str:
    if a.kind in opdefs.ENUMS:
        return _field(a.name, ENUM_KIND, int(a.default))
    default = list(a.default or ()) if a.kind in ("ints", "floats") else a.default
    if a.kind == "float":
        default = float(default)
    return _field(a.name, ATTR_KINDS[a.kind], default)


def _schema_tables(schema: str, skip: set[str],
                   refs: dict[str, dict[str, str]] | None = None) -> dict[str, list[tuple[str, int, str, Any]]]:
    """Tables of the schema text (FlatBuffers IDL as tools/gen_schema.py writes it), except `skip`:
    {table: [(field, slot, kind, default)]}. refs, when given, is filled with the table type of each field of kind
    table or [table]: {table: {field: type}}."""
    refs = {} if refs is None else refs
    underlying = {m[1]: SCALARS[m[2]] for m in re.finditer(r"^enum (\w+) : (\w+)", schema, re.M)}
    unions = set(re.findall(r"^union (\w+)", schema, re.M))
    names = set(re.findall(r"^table (\w+)", schema, re.M))
    out: dict[str, list[tuple[str, int, str, Any]]] = {}
    for m in re.finditer(r"^table (\w+) \{\n(.*?)^\}", schema, re.M | re.S):
        if m[1] in skip:
            continue
        fields: list[tuple[str, int, str, Any]] = []
        slot = 0
        for line in m[2].splitlines():
            f = re.match(r"\s*(\w+):(\[?)(\w+)\]?\s*(?:=\s*([^;\s(]+))?\s*(?:\([^)]*\))?;", line)
            if not f:
                if line.strip() and not line.strip().startswith("//"):
                    raise ValueError(f"table {m[1]}: cannot read the field {line.strip()!r}")
                continue
            name, vec, typ, dflt = f[1], f[2], f[3], f[4]
            if typ in unions and not vec:
                fields.append((f"{name}_type", slot, "u8", 0))
                fields.append((name, slot + 1, "union", None))
                slot += 2
                continue
            if typ in SCALARS or typ in underlying:
                kind = SCALARS.get(typ) or underlying[typ]
            elif typ == "string":
                kind = "string"
            elif typ in names:
                kind = "table"
                refs.setdefault(m[1], {})[name] = typ
            else:
                raise ValueError(f"table {m[1]}: unknown type {typ!r} of field {name}")
            if vec:
                fields.append((name, slot, f"[{kind}]", None))
            elif kind in ("string", "table"):
                fields.append((name, slot, kind, None))
            elif kind == "bool":
                fields.append((name, slot, kind, dflt == "true"))
            elif kind.startswith("f"):
                fields.append((name, slot, kind, float(dflt or 0)))
            elif dflt is not None and not re.fullmatch(r"-?\d+", dflt):
                raise ValueError(f"table {m[1]}: default {dflt!r} of {name} (enum defaults are not supported here)")
            else:
                fields.append((name, slot, kind, int(dflt or 0)))
            slot += 1
        out[m[1]] = fields
    return out


def format_module_text(schema: str, version: int) -> str:
    """js_bindings/src/format/generated.js for the schema text `schema` (written from opdefs.py)."""
    ident = re.search(r'^file_identifier "(\w{4})";', schema, re.M)
    if not ident:
        raise ValueError("the schema declares no file_identifier")
    ops = sorted(opdefs.OPS.values(), key=lambda d: d.code)
    union = list(opdefs.options_tables().items())  # type id = index + 1, as in the schema and the C tables
    out = ["// GENERATED by tools/gen_schema.py (tools/gen_js_tables.py) from python_ref/opdefs.py and the model",
           "// tables of schema/wrt.fbs: do not edit. Regenerate: python tools/gen_schema.py",
           "// The .wrt format as the JS reader (./reader.js) reads it. A field: [slot, kind, default] (TABLES) or",
           "// [name, kind, default] in slot order (OPTIONS); kinds: bool, i8, u8, i16, u16, i32, u32, i64, u64, f32,",
           "// f64, string, table, union, [kind] for a vector.", "",
           f"export const FORMAT_VERSION = {version};",
           f"export const FILE_IDENTIFIER = {json.dumps(ident[1])};",
           "/** Metadata.props key of the writer's content digest (python_ref/wrt_file.py), and its value's prefix */",
           f"export const DIGEST_PROP = {json.dumps(wrt_file.DIGEST_PROP)};",
           f"export const DIGEST_PREFIX = {json.dumps(wrt_file.DIGEST_PREFIX)};", "",
           "/** enum OpType: op code -> name */", "export const OP_NAMES = Object.freeze({"]
    out += [f"  {d.code}: {json.dumps(d.name)}," for d in ops]
    out += ["});", "", "/** enum OpType: name -> op code */",
            "export const OP_CODES = Object.freeze(Object.fromEntries(Object.entries(OP_NAMES).map(([c, n]) => "
            "[n, Number(c)])));", "",
            "/** union Options by type id (0 = NONE): [table name, fields in slot order] */",
            "export const OPTIONS = Object.freeze([", "  null,"]
    for name, attrs in union:
        out.append(f"  [{json.dumps(name)}, [")
        out += [f"    {_attr(a)}," for a in attrs]
        out.append("  ]],")
    out += ["]);", "", "/** The model-level tables: {field: [slot, kind, default]} */",
            "export const TABLES = Object.freeze({"]
    refs: dict[str, dict[str, str]] = {}
    for table, fields in _schema_tables(schema, {name for name, _ in union}, refs).items():
        out.append(f"  {table}: Object.freeze({{")
        out += [f"    {name}: [{slot}, {json.dumps(kind)}, {_js(dflt)}]," for name, slot, kind, dflt in fields]
        out.append("  }),")
    out += ["});", "", "/** The table type of each field of kind table or [table] (the writer, ./writer.js, walks "
            "them): {table: {field: type}} */", "export const TABLE_REFS = Object.freeze({"]
    for table, fields in refs.items():
        out.append(f"  {table}: Object.freeze({{ " + ", ".join(f"{f}: {json.dumps(t)}" for f, t in fields.items())
                   + " }),")
    out += ["});", "", "/** Enums of op attributes: {Name: {VALUE: number}} */", "export const ENUMS = Object.freeze({"]
    for name, cls in opdefs.ENUMS.items():
        out.append(f"  {name}: Object.freeze({{ " + ", ".join(f"{m.name}: {int(m)}" for m in cls) + " }),")
    out += ["});", ""]
    return "\n".join(out)


def error_codes_text() -> str:
    """js_bindings/src/error_codes.js, from python_ref/errors.py's ENGINE_ERRORS."""
    codes = ", ".join([f"OK: {errors.OK}", *(f"{e.name}: {e.code}" for e in errors.ENGINE_ERRORS)])
    out = ["// GENERATED by tools/gen_schema.py (tools/gen_js_tables.py) from python_ref/errors.py: do not edit.",
           "// The C engine's error codes (kernels_wasm/engine/wasmrt.h) and the error class each one raises.", "",
           "/** Codes of kernels_wasm/engine/wasmrt.h */",
           f"export const ERROR_CODES = Object.freeze({{ {codes} }});", "",
           "/** Engine error code -> the name of the class of ./errors.js it raises */",
           "export const ERROR_CLASS_OF_CODE = Object.freeze({"]
    out += [f"  {e.code}: {json.dumps(e.error.__name__)}, // {e.name}: {e.doc}" for e in errors.ENGINE_ERRORS]
    out += ["});", ""]
    return "\n".join(out)


def error_codes_dts_text() -> str:
    """js_bindings/src/error_codes.d.ts: the types of error_codes.js (index.d.ts re-exports ERROR_CODES)."""
    codes = "; ".join([f"OK: {errors.OK}", *(f"{e.name}: {e.code}" for e in errors.ENGINE_ERRORS)])
    classes = "; ".join(f"{e.code}: {json.dumps(e.error.__name__)}" for e in errors.ENGINE_ERRORS)
    return "\n".join([
        "// GENERATED by tools/gen_schema.py (tools/gen_js_tables.py) from python_ref/errors.py: do not edit.",
        "// The types of ./error_codes.js.", "",
        "/** Codes of kernels_wasm/engine/wasmrt.h */",
        f"export declare const ERROR_CODES: Readonly<{{ {codes} }}>;", "",
        "/** Engine error code -> the name of the error class it raises */",
        f"export declare const ERROR_CLASS_OF_CODE: Readonly<{{ {classes} }}>;", ""])


def trial_module_text() -> str:
    """js_bindings/src/trial.js: the backend trial's constants (wasmrt/engines/trial.py), in JS's camelCase."""
    from wasmrt.engines.trial import TRIAL

    camel = {re.sub(r"_(\w)", lambda m: m[1].upper(), k): v for k, v in TRIAL.items()}
    fields = ", ".join(f"{k}: {json.dumps(v)}" for k, v in camel.items())
    return "\n".join([
        "// @ts-check",
        "// GENERATED by tools/gen_schema.py (tools/gen_js_tables.py) from wasmrt/engines/trial.py: do not edit.",
        "",
        "/** How long backend \"auto\"'s trial may take: warm-up runs (the first WebGPU run compiles its pipelines),",
        " * then up to `runs` interleaved runs of each, stopping once `budgetMs` is spent after at least `minRuns`. */",
        f"export const TRIAL = Object.freeze({{ {fields} }});", ""])


def train_module_text() -> str:
    """js_bindings/src/train/constants.js: what the JS trainers share with Python's (the optimizers' defaults of
    python_ref/train/optim.py, the layers a new head may replace, the writer's smallest float16 constant)."""
    from python_ref.train.optim import ADAM_BETAS, ADAM_EPS, DEFAULT_LR, DEFAULT_MOMENTUM
    from wasmrt.compile.writer import MIN_FP16_ELEMENTS
    from wasmrt.train.engine_head import ACTIVATIONS, POOL_KIND_COUNT_PAD, POOL_KINDS
    from wasmrt.train.trainer import TRAINABLE_OPS

    return "\n".join([
        "// @ts-check",
        "// GENERATED by tools/gen_schema.py (tools/gen_js_tables.py) from python_ref/train/optim.py,",
        "// wasmrt/train/trainer.py, wasmrt/train/engine_head.py and wasmrt/compile/writer.py: do not edit.",
        "",
        "/** Learning rate when none is given, per optimizer. */",
        f"export const DEFAULT_LR = Object.freeze({json.dumps(DEFAULT_LR)});",
        "/** SGD's momentum when none is given. */",
        f"export const DEFAULT_MOMENTUM = {DEFAULT_MOMENTUM};",
        "/** Adam's beta1, beta2 and epsilon. */",
        f"export const ADAM = Object.freeze({{ b1: {ADAM_BETAS[0]}, b2: {ADAM_BETAS[1]}, eps: {ADAM_EPS} }});",
        "/** The ops whose constant weights train (and which a new head replaces). */",
        f"export const TRAINABLE_OPS = Object.freeze({json.dumps(list(TRAINABLE_OPS))});",
        "/** Activations with an engine gradient (wrt_train_grad). */",
        f"export const ACTIVATIONS = Object.freeze({json.dumps(list(ACTIVATIONS))});",
        "/** Pooling ops -> their kind in wrt_train_pool's geometry; an average pooling counting its padding. */",
        f"export const POOL_KINDS = Object.freeze({json.dumps(POOL_KINDS)});",
        f"export const POOL_KIND_COUNT_PAD = {POOL_KIND_COUNT_PAD};",
        "/** Float32 constants smaller than this stay float32 in a written file (the rest may be float16). */",
        f"export const MIN_FP16_ELEMENTS = {MIN_FP16_ELEMENTS};", ""])
