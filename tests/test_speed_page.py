"""The speed page (demo/web/speed.html) in Debian's Chromium, driven by playwright-core: our wasm builds timed in
the page against the native engine timed by the demo server (/api/native), and that API's validation."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from wasmrt.dev.demo_server import ROOT, DemoServer, missing_models, missing_wasm

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
NODE = shutil.which("node")
ARTIFACTS = ROOT / "build" / "artifacts"
SCREENSHOT = ARTIFACTS / "speed-page.png"

# Opens the page with URL parameters that start the run, waits for it, keeps a screenshot and prints the table.
# Run as `node --input-type=module -e` from the repository root, so "playwright-core" resolves to node_modules.
DRIVER = """
import { chromium } from "playwright-core";
const { url, chromium: executablePath, screenshot } = JSON.parse(process.argv[1]);
const browser = await chromium.launch({ executablePath, headless: true, args: ["--no-sandbox", "--disable-gpu",
  "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update",
  "--disable-sync"] });
const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
const logs = [];
page.on("console", (m) => { if (m.type() === "error") logs.push(`console: ${m.text()}`); });
page.on("pageerror", (e) => logs.push(`pageerror: ${e.message}`));
await page.goto(url);
await page.waitForFunction(() => ["done", "error"].includes(document.getElementById("status").dataset.state),
  null, { timeout: 45000, polling: 100 });
await page.screenshot({ path: screenshot, fullPage: true });
const result = await page.evaluate(() => ({
  state: document.getElementById("status").dataset.state,
  status: document.getElementById("status").textContent,
  error: document.getElementById("error").hidden ? null : document.getElementById("error").textContent,
  isolated: self.crossOriginIsolated,
  rows: [...document.querySelectorAll("#results tbody tr")].map((tr) => ({ ...tr.dataset,
    cells: [...tr.cells].map((td) => td.textContent) })),
}));
await browser.close();
console.log(JSON.stringify({ ...result, logs }));
"""


def _missing() -> str | None:
    if NODE is None or not Path(CHROMIUM).exists():
        return "needs node and Debian's chromium"
    if not (ROOT / "node_modules" / "playwright-core").is_dir():
        return "node_modules is missing: run scripts/setup.sh (npm ci)"
    if missing_wasm() or not (ROOT / "models" / "mobilenet_v2.wrt").is_file():
        return f"missing {missing_wasm() + missing_models()}: run `wasmrt build` and `python -m wasmrt.zoo.bundle`"
    return None


def _get_json(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_native_api_validates_its_parameters() -> None:
    with DemoServer(port=0) as server:
        api = server.origin + "/api/native"
        status, body = _get_json(api + "?model=../../pyproject&rounds=2")
        assert status == 400 and "unknown model '../../pyproject'" in body["error"], body
        assert "mobilenet_v2" in body["error"]  # the message lists the choices
        status, body = _get_json(api + "?rounds=2")
        assert status == 400 and "unknown model ''" in body["error"], body
        for query, why in (("rounds=100000", "rounds=100000: expected 1..200"), ("rounds=x", "expected an integer"),
                           ("warmup=-1", "warmup=-1: expected 0..50")):
            status, body = _get_json(f"{api}?model=mobilenet_v2&{query}")
            assert status == 400 and why in body["error"], (query, body)
        assert _get_json(server.origin + "/api/nope")[0] == 404
        status, body = _get_json(server.origin + "/api/models")
        assert status == 200 and all(m["macs"] > 0 and m["inputs"] for m in body["models"]), body


@pytest.mark.skipif(_missing() is not None, reason=str(_missing()))
def test_native_api_times_the_model() -> None:
    with DemoServer(port=0) as server:
        status, body = _get_json(server.origin + "/api/native?model=face_landmark&rounds=3&warmup=1")
    assert status == 200, body
    assert body["model"] == "face_landmark" and body["rounds"] == 3 and len(body["times_ms"]) == 3
    assert body["target"] and 0 < body["min_ms"] <= body["median_ms"]
    assert body["gflops"] == pytest.approx(2 * body["macs"] / (body["median_ms"] * 1e6))


@pytest.mark.skipif(_missing() is not None, reason=str(_missing()))
def test_speed_page_compares_wasm_with_native() -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    SCREENSHOT.unlink(missing_ok=True)
    with DemoServer(port=0) as server:
        macs = {m["name"]: m["macs"] for m in _get_json(server.origin + "/api/models")[1]["models"]}
        url = server.origin + "/demo/web/speed.html?models=mobilenet_v2&variants=simd,relaxed&rounds=2&warmup=1&run=1"
        cfg = json.dumps({"url": url, "chromium": CHROMIUM, "screenshot": str(SCREENSHOT)})
        r = subprocess.run([NODE, "--input-type=module", "-e", DRIVER, cfg], cwd=ROOT, capture_output=True,
                           text=True, timeout=90)
    assert r.returncode == 0, f"driver failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    page = json.loads(r.stdout.strip().splitlines()[-1])
    assert page["state"] == "done", (page["status"], page["error"], page["logs"])
    assert not page["logs"], page["logs"]
    assert page["isolated"] is True
    assert SCREENSHOT.is_file() and SCREENSHOT.stat().st_size > 10_000
    rows = page["rows"]
    print("\n" + "\n".join(" | ".join(row["cells"]) for row in rows))
    header = ("model", "host", "engine", "median", "min", "gflops", "x native")
    table = [dict(zip(header, row["cells"], strict=True)) | {"host_kind": row["host"], "target": row["target"]}
             for row in rows]
    native = [t for t in table if t["host_kind"] == "native"]
    wasm = {t["engine"]: t for t in table if t["host_kind"] == "browser"}
    assert len(native) == 1 and native[0]["model"] == "mobilenet_v2", table
    assert native[0]["target"] in ("avx512vnni", "avx512", "avx2", "scalar", "neon"), native[0]
    assert native[0]["target"] in native[0]["engine"] and float(native[0]["median"]) > 0
    assert set(wasm) == {"wasmrt SIMD128", "wasmrt relaxed SIMD"}, table
    for t in [*native, *wasm.values()]:
        median, gflops = float(t["median"]), float(t["gflops"])
        assert 0 < float(t["min"]) <= median, t
        assert gflops == pytest.approx(2 * macs["mobilenet_v2"] / (median * 1e6), rel=0.01), t
    for t in wasm.values():
        ratio = float(t["x native"].rstrip("×"))
        assert ratio == pytest.approx(float(t["median"]) / float(native[0]["median"]), rel=0.01), t
