"""Run-time sizes and streaming state in Debian's Chromium, on every wasm variant. The OCR recogniser (ppocr_rec.wrt,
widths 32..1280 chosen at run time): one loaded model runs text lines of three widths, each against onnxruntime's
output, and the wasm memory stays flat over 100 alternations of two other widths. Streamed recurrent models (a
PyTorch bidirectional LSTM against onnxruntime, a TFLite LSTM against LiteRT, which keeps its state between invokes)
run three steps twice: through model.stream(), and by hand with the state fed as inputs and read back as outputs. The
page is plain ES modules over the demo server (the JS binding under /js_bindings/, the models under /models/); the
fixtures are tests/js/breadth_fixtures.py's, the same the Node tests (tests/js/breadth.test.mjs) read."""

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
VARIANTS = ("simd", "relaxed", "scalar")

PAGE = """<!doctype html><meta charset="utf-8"><title>OCR widths</title>
<script type="module">
import * as wasmrt from "/js_bindings/src/index.js";
const TYPED = { float32: Float32Array, int64: BigInt64Array, int32: Int32Array };
const read = async (e) => new TYPED[e.dtype](await (await fetch("/fx/" + e.file)).arrayBuffer());
const tensor = async (e) => new wasmrt.Tensor(e.dtype, await read(e), e.shape);
const relErr = (got, want) => {
  let err = 0, ref = 0;
  for (let i = 0; i < want.length; i++) {
    err = Math.max(err, Math.abs(got[i] - want[i]));
    ref = Math.max(ref, Math.abs(want[i]));
  }
  return err / ref;
};
// Three steps of a recurrent model, each output against its framework's, the state carried from step to step.
async function streamed(rt, m) {
  const model = await rt.load("/fx/" + m.file);
  const check = async (out, step) => {
    const errs = {};
    for (const [o, e] of Object.entries(step.want)) {
      errs[o] = { shape: out[o].shape, want: e.shape, rel: relErr(out[o].data, await read(e)) };
    }
    return errs;
  };
  const s = model.stream(), api = [];
  for (const step of m.steps) api.push(await check(await s.step({ x: await tensor(step.x) }), step));
  // By hand: zeros in, each step's state outputs fed back as the next step's state inputs.
  let state = {};
  for (const i of Object.values(m.pairs)) {
    const t = model.inputs.find((t) => t.name === i);
    state[i] = new wasmrt.Tensor("float32", new Float32Array(t.shape.reduce((a, b) => a * b, 1)), t.shape);
  }
  const byHand = [];
  for (const step of m.steps) {
    const out = await model.run({ x: await tensor(step.x), ...state });
    byHand.push(await check(out, step));
    state = Object.fromEntries(Object.entries(m.pairs).map(([o, i]) => [i, out[o]]));
  }
  const result = { pairs: s.pairs, api, byHand };
  model.release();
  return result;
}
const result = { variants: {} };
try {
  const B = await (await fetch("/fx/breadth.json")).json();
  for (const variant of VARIANTS) {
    const rt = await wasmrt.init({ variant });
    const model = await rt.load("/" + B.ocr.model);
    const runs = [];
    for (const r of B.ocr.runs) {
      const out = await model.run({ x: await tensor(r.x) });
      const y = out[model.outputs[0].name], want = await read(r.want);
      let err = 0, ref = 0;
      for (let i = 0; i < want.length; i++) {
        err = Math.max(err, Math.abs(y.data[i] - want[i]));
        ref = Math.max(ref, Math.abs(want[i]));
      }
      runs.push({ width: r.width, input: model.inputs[0].shape, shape: y.shape, want: r.want.shape, rel: err / ref });
    }
    const xs = await Promise.all(B.ocr.alternate.map(tensor)), mem = [];
    for (let k = 0; k < 100; k++) {
      model.runSync({ x: xs[k % 2] });
      mem.push(rt.memoryBytes);
    }
    const bounds = model.inputs[0].bounds;
    result.variants[variant] = { runs, bounds, mem: [mem[1], Math.min(...mem), Math.max(...mem)] };
    model.release();
    result.variants[variant].streams = {
      lstm: await streamed(rt, B.lstm), tflite_lstm: await streamed(rt, B.tflite_lstm),
    };
  }
  result.tolerance = B.tolerance;
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
    if not (support.ROOT / "models" / "ppocr_rec.wrt").exists():
        pytest.skip("models/ppocr_rec.wrt is missing: run python -m wasmrt.zoo.bundle")
    import breadth_fixtures

    from wasmrt.dev.demo_server import DemoServer

    fx = tmp_path_factory.mktemp("breadth-browser")
    fixtures = breadth_fixtures.write(fx)
    (fx / "ocr.html").write_text(PAGE.replace("VARIANTS", json.dumps(VARIANTS)))
    results = fx / "results.json"
    with DemoServer(port=0) as server:
        handler = server.httpd.RequestHandlerClass
        handler.routes = {**handler.routes, "/fx/": fx}
        r = subprocess.run(["node", str(support.ROOT / "tests" / "js" / "npm_page.mjs"),
                            f"{server.origin}/fx/ocr.html", str(results)], cwd=support.ROOT, capture_output=True,
                           text=True, timeout=600)
    assert r.returncode == 0, f"browser driver failed:\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
    out = json.loads(results.read_text())
    assert "error" not in out, f"{out['error']}\n{out['logs']}"
    support.ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (support.ARTIFACTS / "ocr-widths-browser.json").write_text(json.dumps(out, indent=1))
    out["pairs"] = {k: fixtures[k]["pairs"] for k in ("lstm", "tflite_lstm")}
    out["outputs"] = {k: sorted(fixtures[k]["steps"][0]["want"]) for k in ("lstm", "tflite_lstm")}
    return out


@pytest.mark.parametrize("variant", VARIANTS)
def test_ocr_three_widths_match_onnxruntime_in_chromium(page_result: dict, variant: str) -> None:
    v = page_result["variants"][variant]
    assert v["bounds"][3] == [32, 1280]
    assert [r["width"] for r in v["runs"]] == [160, 320, 640]
    for r in v["runs"]:
        assert r["input"] == [1, 3, 48, r["width"]]
        assert r["shape"] == r["want"] == [1, r["width"] // 8, 6625]
        assert r["rel"] <= page_result["tolerance"], (variant, r)


@pytest.mark.parametrize("variant", VARIANTS)
def test_ocr_width_changes_keep_memory_flat_in_chromium(page_result: dict, variant: str) -> None:
    first, low, high = page_result["variants"][variant]["mem"]
    assert low == high == first, f"{variant}: wasm memory moved between {low} and {high} bytes over 100 width changes"


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("model", ["lstm", "tflite_lstm"])
@pytest.mark.parametrize("how", ["api", "byHand"])
def test_streamed_lstm_matches_its_framework_in_chromium(page_result: dict, variant: str, model: str,
                                                         how: str) -> None:
    """Each of three steps, every output (the LSTM's sequence and its final states), within tolerance of onnxruntime
    (PyTorch's LSTM) or LiteRT (the TFLite LSTM), with the state carried by model.stream() or by hand."""
    s = page_result["variants"][variant]["streams"][model]
    assert s["pairs"] == page_result["pairs"][model]
    assert len(s[how]) == 3
    for k, step in enumerate(s[how]):
        assert sorted(step) == page_result["outputs"][model]
        for o, e in step.items():
            assert e["shape"] == e["want"], (model, how, k, o)
            assert e["rel"] <= page_result["tolerance"], (variant, model, how, k, o, e["rel"])
