"""The shape of the code: the C engine's files and the Python packages form no import loop, every engine function
shared between files is declared in a header, and a dtype variant of an op is added the way the engine README says
(one function set, one entry in the op table) and is dispatched while paths that lack it stay cleanly unsupported."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from wasmrt.compile.converter import convert
from wasmrt.compile.ir import Graph
from wasmrt.dev import build

ROOT = Path(__file__).resolve().parents[1]
ENGINE = build.ENGINE
HEADERS = (*sorted(h.name for h in ENGINE.glob("*.h")), "generated/wrt_ops.h")  # the engine's headers
LIBC = {"memcpy", "memmove", "memset", "memcmp"}  # rt_mem.c provides them to the compiler in wasm


def _code(path: Path) -> str:
    """C source without comments, strings and preprocessor lines."""
    text = path.read_text()
    text = re.sub(r"/\*.*?\*/|//[^\n]*", " ", text, flags=re.S)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    return re.sub(r"^\s*#[^\n]*", "", text, flags=re.M)


DEF = re.compile(r"^(static\s+)?(?:inline\s+)?[A-Za-z_][\w \t\*]*?\b(\w+)\s*\(([^;{}]*)\)\s*\{", re.M)


def definitions(path: Path) -> tuple[set[str], set[str]]:
    """(exported, static) function names defined at file level."""
    exported, static = set(), set()
    for m in DEF.finditer(_code(path)):
        if m.group(2) in ("if", "for", "while", "switch", "return", "sizeof"):
            continue
        (static if m.group(1) else exported).add(m.group(2))
    return exported, static


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for d in sorted(graph.get(n, ())):
            if state.get(d) == 1:
                return [*stack[stack.index(d):], d]
            if d not in state and (c := visit(d)):
                return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state and (c := visit(n)):
            return c
    return None


def test_engine_files_form_no_loop() -> None:
    """File A depends on file B when A names a function B defines; the engine's files must be layered (model.c at
    the top, op modules below, support at the bottom), so each reads in isolation from those below it."""
    files = sorted(ENGINE.glob("*.c"))
    owner = {}
    for f in files:
        for name in definitions(f)[0]:
            assert name not in owner, f"{name} is defined in {owner.get(name)} and {f.name}"
            owner[name] = f.name
    graph: dict[str, set[str]] = {}
    for f in files:
        tokens = set(re.findall(r"\b\w+\b", _code(f)))
        graph[f.name] = {owner[t] for t in tokens if t in owner and owner[t] != f.name}
    cycle = _find_cycle(graph)
    assert cycle is None, "engine files call each other in a loop: " + " -> ".join(cycle)
    assert "model.c" not in set().union(*(graph[f] for f in graph if f not in ("profile.c",)))


def test_shared_engine_functions_are_declared_in_headers_only() -> None:
    headers = "".join(_code(ENGINE / h) for h in HEADERS)
    for f in sorted(ENGINE.glob("*.c")):
        exported, _ = definitions(f)
        for name in sorted(exported - LIBC):
            assert re.search(rf"\b{name}\s*\(", headers), f"{f.name}: {name} is not declared in a header"
        code = _code(f)
        for m in re.finditer(r"^[A-Za-z_][\w \t\*]*?\b(\w+)\s*\([^;{}]*\)\s*;", code, re.M):
            if m.group(1) not in LIBC and not m.group(0).lstrip().startswith(("return", "static", "typedef")):
                pytest.fail(f"{f.name} declares {m.group(1)} outside the headers: {m.group(0).strip()[:80]}")


PY_PACKAGES = ("wasmrt", "python_ref", "kernels_wasm", "tools", "tests")
JS_FOLDERS = ("js_bindings", "demo", "tests/js", "wasmrt/bench/js")


def _module_imports(path: Path, package_root: Path, modules: set[str]) -> set[str]:
    """Every module of the project that `path` imports, wherever the import stands: at module level, inside a
    function or under `if TYPE_CHECKING:` (an import inside a function is a dependency all the same, only a later
    one)."""
    tree = ast.parse(path.read_text())
    mod = ".".join(path.relative_to(package_root).with_suffix("").parts)
    is_pkg = path.name == "__init__.py"
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = mod.split(".")[: len(mod.split(".")) - node.level + (1 if is_pkg else 0)]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            # `from pkg import sub` depends on the submodule; `from pkg import name` on pkg (its __init__)
            out.update(f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                "import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant):
            out.add(str(node.args[0].value))
    return out


def python_import_graph(root: Path) -> dict[str, set[str]]:
    modules = {}
    for pkg in PY_PACKAGES:
        for p in (root / pkg).rglob("*.py"):
            if "_fb" in p.parts or "node_modules" in p.parts or "fuzz_corpus" in p.parts:
                continue
            name = ".".join(p.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
            modules[name] = p
    # tools/ and tests/ put their own folder on sys.path: `import ort_int8` in tools/ is tools.ort_int8
    local = {name.split(".", 1)[1]: name for name in modules if name.startswith(("tools.", "tests."))}
    graph = {}
    for name, p in modules.items():
        deps = set()
        for m in _module_imports(p, root, set(modules)):
            if name.startswith(("tools.", "tests.")) and m not in modules:
                m = f"{name.split('.')[0]}.{m}" if f"{name.split('.')[0]}.{m}" in modules else local.get(m, m)
            if m in modules and m != name:
                deps.add(m)
        graph[name] = deps
    return graph


JS_IMPORT = re.compile(  # import ... from "./x.js", import("./x.js"), require("./x.js"), export ... from "./x.js"
    r"""(?:\bimport\s*(?:[\w*{}\s,$]+\s*from\s*)?|\bimport\s*\(\s*|\brequire\s*\(\s*"""
    r"""|\bexport\s*[\w*{}\s,$]+\s*from\s*)["'](\.{1,2}/[^"']+)["']""")


def js_import_graph(root: Path) -> dict[str, set[str]]:
    files = {p.resolve() for f in JS_FOLDERS for p in (root / f).rglob("*") if p.suffix in (".js", ".mjs")
             and "node_modules" not in p.parts and "dist" not in p.parts}
    graph: dict[str, set[str]] = {}
    for p in files:
        deps = {(p.parent / m).resolve() for m in JS_IMPORT.findall(p.read_text(errors="replace"))}
        graph[str(p.relative_to(root))] = {str(d.relative_to(root)) for d in deps if d in files and d != p}
    return graph


def test_python_modules_form_no_import_loop() -> None:
    cycle = _find_cycle(python_import_graph(ROOT))
    assert cycle is None, "modules import each other in a loop: " + " -> ".join(cycle)


def test_js_modules_form_no_import_loop() -> None:
    graph = js_import_graph(ROOT)
    assert len(graph) > 30, "the JS files were not found"
    cycle = _find_cycle(graph)
    assert cycle is None, "JS modules import each other in a loop: " + " -> ".join(cycle)


def test_import_loop_check_sees_imports_inside_functions(tmp_path: Path) -> None:
    """The check must see a loop that hides behind an import inside a function, or behind a relative import."""
    for pkg in PY_PACKAGES:
        (tmp_path / pkg).mkdir()
    (tmp_path / "wasmrt" / "__init__.py").write_text("")
    (tmp_path / "wasmrt" / "a.py").write_text("from wasmrt import b\n")
    (tmp_path / "wasmrt" / "b.py").write_text("def f():\n    from . import a\n    return a\n")
    assert _find_cycle(python_import_graph(tmp_path)) is not None
    (tmp_path / "wasmrt" / "b.py").write_text(
        "def f():\n    import importlib\n    return importlib.import_module('wasmrt.a')\n")
    assert _find_cycle(python_import_graph(tmp_path)) is not None
    (tmp_path / "wasmrt" / "b.py").write_text("def f():\n    return 1\n")
    assert _find_cycle(python_import_graph(tmp_path)) is None
    (tmp_path / "js_bindings").mkdir()
    (tmp_path / "js_bindings" / "x.js").write_text('export async function f() { return import("./y.js"); }\n')
    (tmp_path / "js_bindings" / "y.js").write_text('import { f } from "./x.js";\n')
    assert _find_cycle(js_import_graph(tmp_path)) is not None


def test_wasmrt_folders_form_no_loop() -> None:
    """Arrows between wasmrt's folders (and its top-level modules) run one way: a folder never imports one that
    imports it back, through any module of either."""
    def unit(m: str) -> str:
        parts = m.split(".")
        return ".".join(parts[:2]) if parts[0] == "wasmrt" else parts[0]

    graph: dict[str, set[str]] = {}
    for m, deps in python_import_graph(ROOT).items():
        if m.startswith("wasmrt"):
            graph.setdefault(unit(m), set()).update(unit(d) for d in deps if unit(d) != unit(m))
    assert {"wasmrt.compile", "wasmrt.engines", "wasmrt.quantize", "wasmrt.cli"} <= set(graph)
    cycle = _find_cycle(graph)
    assert cycle is None, "wasmrt folders import each other in a loop: " + " -> ".join(cycle)


def test_wasmrt_keeps_at_most_ten_top_level_modules() -> None:
    top = sorted(p.name for p in (ROOT / "wasmrt").glob("*.py"))
    assert len(top) <= 10, f"wasmrt/ has {len(top)} top-level modules: {top}; give a concern its own folder"


def test_engines_never_build() -> None:
    """Loading an engine never compiles C: only `wasmrt build` and the package build do."""
    graph = python_import_graph(ROOT)
    for name in graph:
        if name.startswith(("wasmrt.engines", "wasmrt.paths", "wasmrt.compile", "wasmrt.stream")) or name == "wasmrt":
            assert "wasmrt.dev.build" not in graph[name], f"{name} imports the build driver"


# -- adding a dtype variant of an op, as the engine README says ---------------------------------------------------

NEG_I32 = """/* NEG on int32: a dtype variant added the README's way (one function set, one table entry). */
#include "engine.h"

static int plan_neg_i32(wrt_model* m, wrt_op* op, wrt_cost* c) {
  c->work += WORK_VEC * m->t[op->out].count;
  return WRT_OK;
}

static int run_neg_i32(wrt_model* m, wrt_op* op) {
  const int32_t* x = (const int32_t*)m->t[op->in[0]].data;
  int32_t* y = (int32_t*)m->t[op->out].data;
  for (uint64_t i = 0; i < m->t[op->out].count; i++) y[i] = (int32_t)(0u - (uint32_t)x[i]);
  return WRT_OK;
}

static const char* kernel_neg_i32(const wrt_op* op) {
  (void)op;
  return "neg int32";
}

const wrt_op_impl NEG_I32 = {plan_neg_i32, 0, run_neg_i32, kernel_neg_i32};
"""


def _int32_model(op: str) -> bytes:
    g = Graph()
    x = g.add_input("x", (5,), np.int32)
    (y,) = g.add_node(op, [x], name=op.lower(), outputs=["y"])
    g.outputs.append(y)
    return convert(g).data


def test_new_dtype_variant_through_the_op_table(tmp_path: Path) -> None:
    cc = shutil.which("gcc") or shutil.which("clang-19")
    if cc is None:
        pytest.skip("no C compiler (gcc or clang-19)")
    kw = tmp_path / "kernels_wasm"
    shutil.copytree(ENGINE, kw / "engine", ignore=shutil.ignore_patterns("*.md"))
    shutil.copytree(build.INCLUDE, kw / "include")
    shutil.copytree(build.GENERATED, kw / "generated")
    engine = kw / "engine"
    (engine / "neg_i32.c").write_text(NEG_I32)
    header = (engine / "engine.h").read_text()
    (engine / "engine.h").write_text(header.replace("const wrt_target* pick_target(void);",
                                                    "extern const wrt_op_impl NEG_I32;\n"
                                                    "const wrt_target* pick_target(void);"))
    ops = (engine / "ops.c").read_text()
    # NEG (float32 through its vector kernel, an element-wise unary op with no row of its own) gains an int32 row
    row = "    [OP_MAX_POOL_2D] = F32_QS8(MAX_POOL_2D, POOL, QPOOL),"
    assert row in ops and "[OP_NEG]" not in ops, "the op table changed shape: update this test and the engine README"
    variant = "    [OP_NEG] = {E(NEG, OTHER, NEG_I32)},\n" + row
    (engine / "ops.c").write_text(ops.replace(row, variant))
    driver = tmp_path / "wrt_driver"
    r = subprocess.run([cc, *build.CFLAGS[:1], "-O1", *build.CFLAGS[2:], "-I", str(kw / "include"),
                        *map(str, sorted(engine.glob("*.c"))), str(kw / "generated" / "scalar.c"),
                        str(engine / "test" / "driver.c"), "-o", str(driver), "-lm"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr

    (tmp_path / "neg.wrt").write_bytes(_int32_model("NEG"))
    (tmp_path / "abs.wrt").write_bytes(_int32_model("ABS"))
    x = np.array([3, -7, 0, 2**31 - 1, -(2**31)], np.int32)
    (tmp_path / "x.bin").write_bytes(x.tobytes())
    run = subprocess.run([str(driver), "run", str(tmp_path / "neg.wrt"), str(tmp_path), str(tmp_path / "x.bin")],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    y = np.frombuffer((tmp_path / "out0.bin").read_bytes(), np.int32)
    assert y.tolist() == [-3, 7, 0, -(2**31 - 1), -(2**31)]  # dispatched to the new variant (wrapping as numpy)
    check = subprocess.run([str(driver), "check", str(tmp_path / "abs.wrt")], capture_output=True, text=True)
    assert check.stdout.strip() == ("2\toperator 0 (ABS 'abs'): int32 inputs are not supported by the C engine "
                                    "(ABS has no int32 variant)")
