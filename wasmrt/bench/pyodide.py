"""`wasmrt bench --pyodide`: what the bridge costs. A model run from Python in Pyodide (wasmrt.web) against the same
run from JS, on the same JS model in the same Chromium page (the demo's Pyodide page, demo/web/pyodide.html),
interleaved run by run; per pass the median of `rounds` runs of each and their ratio. Checkout only: it needs npm's
pyodide and builds the pure-Python wheel (wasmrt/dev/pyodide_files.py)."""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from wasmrt.errors import WasmrtError

# Run in the page's interpreter: per pass, `rounds` runs from Python and from JS, interleaved (warm-up first)
CODE = """
import json
from array import array

import wasmrt
from pyodide.code import run_js
from pyodide.ffi import to_js

js_run = run_js('''async (model, feeds) => {
  const t = performance.now(); await model.run(feeds); return performance.now() - t;
}''')
js_feeds = run_js('''(name, shape, n) => ({ [name]: { data: new Float32Array(n).fill(0.5), shape: [...shape] } })''')
clock = run_js("() => performance.now()")
rt = await wasmrt.web.init(variant=VARIANT)
results = []
for name in MODELS:
    m = await rt.load("../../models/" + name + ".wrt")
    (spec,) = m.inputs
    n = 1
    for d in spec.shape:
        n *= d
    feeds = {spec.name: (array("f", [0.5]) * n, list(spec.shape))}
    jf = js_feeds(spec.name, to_js(list(spec.shape)), n)
    for _ in range(WARMUP):
        await m.run(feeds)
        await js_run(m.js, jf)
    for p in range(PASSES):
        py_ms, js_ms = [], []
        for i in range(ROUNDS):
            if i % 2:  # which goes first alternates: neither always runs just after the other
                js_ms.append(await js_run(m.js, jf))
            t = clock()
            await m.run(feeds)
            py_ms.append(clock() - t)
            if not i % 2:
                js_ms.append(await js_run(m.js, jf))
        results.append({"model": name, "pass": p + 1, "python_ms": sorted(py_ms)[ROUNDS // 2],
                        "js_ms": sorted(js_ms)[ROUNDS // 2]})
    m.release()
json.dumps({"variant": rt.variant, "results": results})
"""


def code(models: list[str], variant: str, rounds: int, warmup: int, passes: int) -> str:
    """The Python the page runs (its last expression: the results as JSON)."""
    return "\n".join([f"MODELS = {models!r}", f"VARIANT = {variant!r}", f"ROUNDS = {rounds}", f"WARMUP = {warmup}",
                      f"PASSES = {passes}", CODE])


def run(models: list[str], variant: str, rounds: int, warmup: int, passes: int,
        log: Callable[[str], None] = print) -> dict:
    from wasmrt import paths
    from wasmrt.bench.peers import chromium_path, node_command
    from wasmrt.dev import pyodide_files
    from wasmrt.dev.demo_server import DemoServer, pyodide_wheels_dir

    root = paths.require_checkout("wasmrt bench --pyodide")
    pyodide_files.stage_wheels(pyodide_wheels_dir(), log=log)
    with tempfile.TemporaryDirectory() as tmp, DemoServer(port=0) as server:
        job, out = Path(tmp) / "job.json", Path(tmp) / "result.json"
        job.write_text(json.dumps({"url": server.origin + "/demo/web/pyodide.html", "chromium": chromium_path(),
                                   "code": code(models, variant, rounds, warmup, passes)}))
        log(f"pyodide: {', '.join(models)} on {variant}, {passes} passes of {rounds} runs from Python and from JS")
        r = subprocess.run([*node_command(), str(Path(__file__).parent / "js" / "pyodide.mjs"), str(job), str(out)],
                           cwd=root, capture_output=True, text=True, timeout=1800)
        if r.returncode != 0 or not out.is_file():
            raise WasmrtError(f"the Pyodide bench failed:\n{r.stderr[-3000:]}")
        return json.loads(out.read_text())


def table(data: dict) -> str:
    lines = [f"Python in Pyodide vs JS, same page, {data['variant']} build (median ms per pass)",
             f"{'model':20s} {'pass':>4s} {'python':>9s} {'js':>9s} {'ratio':>6s}"]
    for r in data["results"]:
        lines.append(f"{r['model']:20s} {r['pass']:4d} {r['python_ms']:9.2f} {r['js_ms']:9.2f} "
                     f"{r['python_ms'] / r['js_ms']:6.3f}")
    return "\n".join(lines)


def run_pyodide(args: argparse.Namespace, variants: list[str], warmup: int, rounds: int, passes: int) -> int:
    """`wasmrt bench --pyodide`: run, print the table, save the JSON (-o, else build/bench/pyodide-<stamp>.json)."""
    from wasmrt.bench.prepare import WORK

    data = run(args.models or ["efficientnet_lite0"], "relaxed" if len(variants) > 1 else variants[0],
               rounds, warmup, passes)
    print(table(data))
    out = Path(args.output) if args.output else WORK / f"pyodide-{datetime.now():%Y%m%d-%H%M%S}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1))
    print(f"saved {out}")
    return 0
