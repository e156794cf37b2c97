"""int8 in Debian's Chromium: every one-op int8 graph of tests/qgraphs.py equals python_ref bit for bit on the SIMD128
and relaxed modules, and the relaxed module runs the int8 kernel table its host's relaxed dot product calls for
(tests/js/relaxed_dot.mjs measures that with a module of its own). On an x86 CPU with AVX-VNNI, Chromium's
i32x4.relaxed_dot_i8x16_i7x16_add_s is vpdpbusd (exact, second operand unsigned): the usdot table. Node and wasmtime
cover the other tables (tests/js/int8.test.mjs, tests/test_engine.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "js"))
import js_fixtures as support

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
VARIANTS = ("simd", "relaxed")

PAGE = """<!doctype html><meta charset="utf-8"><title>int8 bit-exact</title>
<script type="module">
import * as wasmrt from "/js_bindings/src/index.js";
import { relaxedDotKind, relaxedDotLanes } from "/fx/relaxed_dot.mjs";
const TYPED = { int8: Int8Array, uint8: Uint8Array, float32: Float32Array, int32: Int32Array };
const read = async (e) => new TYPED[e.dtype](await (await fetch("/fx/" + e.file)).arrayBuffer());
const result = { variants: {} };
try {
  const cases = await (await fetch("/fx/int8.json")).json();
  const lanes = await relaxedDotLanes();
  result.dot = { lanes, kind: relaxedDotKind(lanes) };
  for (const variant of VARIANTS) {
    const rt = await wasmrt.init({ variant });
    const mismatches = [];
    for (const c of cases) {
      const m = rt.loadBytes(new Uint8Array(await (await fetch("/fx/" + c.file)).arrayBuffer()));
      const feeds = {};
      for (const [k, e] of Object.entries(c.inputs)) feeds[k] = { data: await read(e), shape: e.shape };
      const out = m.runSync(feeds);
      for (const [k, e] of Object.entries(c.outputs)) {
        const want = await read(e), got = out[k].data;
        let bad = out[k].dtype !== e.dtype || got.length !== want.length;
        for (let i = 0; !bad && i < want.length; i++) bad = got[i] !== want[i];
        if (bad) mismatches.push(`${c.name}:${k}`);
      }
      m.release();
    }
    result.variants[variant] = { target: rt.target, cases: cases.length, mismatches };
  }
} catch (e) {
  result.error = String(e.stack || e);
}
window.result = result;
</script>
"""


@pytest.fixture(scope="module")
def page_result(tmp_path_factory: pytest.TempPathFactory) -> dict:
    why = support.missing_prerequisites()
    if why:
        pytest.skip(why)
    if not Path(CHROMIUM).exists():
        pytest.skip("chromium is not installed (apt-get install chromium)")
    from wasmrt.dev.demo_server import DemoServer

    fx = tmp_path_factory.mktemp("int8-browser")
    cases = support.write_int8(fx)
    for c in cases:
        c["file"] = Path(c.pop("path")).name
    (fx / "int8.json").write_text(json.dumps(cases))
    shutil.copyfile(Path(__file__).parent / "js" / "relaxed_dot.mjs", fx / "relaxed_dot.mjs")
    (fx / "int8.html").write_text(PAGE.replace("VARIANTS", json.dumps(VARIANTS)))
    results = fx / "results.json"
    with DemoServer(port=0) as server:
        handler = server.httpd.RequestHandlerClass
        handler.routes = {**handler.routes, "/fx/": fx}
        r = subprocess.run(["node", str(support.ROOT / "tests" / "js" / "npm_page.mjs"),
                            f"{server.origin}/fx/int8.html", str(results)], cwd=support.ROOT, capture_output=True,
                           text=True, timeout=600)
    assert r.returncode == 0, f"browser driver failed:\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
    out = json.loads(results.read_text())
    assert "error" not in out, f"{out['error']}\n{out.get('logs')}"
    support.ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (support.ARTIFACTS / "int8-browser.json").write_text(json.dumps(out, indent=1))
    return out


@pytest.mark.parametrize("variant", VARIANTS)
def test_int8_graphs_are_bit_exact_in_chromium(page_result: dict, variant: str) -> None:
    v = page_result["variants"][variant]
    assert v["cases"] > 40
    assert v["mismatches"] == [], f"{variant} ({v['target']}) differs from python_ref on {v['mismatches']}"


def test_relaxed_module_picks_the_int8_table_of_chromium(page_result: dict) -> None:
    tables = {"usdot": "wasm_relaxed_usdot", "sdot": "wasm_relaxed_sdot", "other": "wasm_relaxed"}
    dot = page_result["dot"]
    assert page_result["variants"]["relaxed"]["target"] == tables[dot["kind"]], dot
    assert page_result["variants"]["simd"]["target"] == "wasm_simd128"
