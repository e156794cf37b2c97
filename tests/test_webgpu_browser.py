"""The JS WebGPU backend in Debian's Chromium (tests/js/webgpu_browser.mjs): with WebGPU on SwiftShader every bundled
model runs on backend "webgpu" and matches python_ref within 1e-4 of the output range, "auto" keeps each model on
the backend a trial finds faster (wasm, against SwiftShader), a Worker
runs it too, and an op without a WGSL kernel is refused naming it, or with {fallback: "wasm"} runs on wasm (the
bundled models with such ops too) with the boundaries reported as the Python engine reports them; without WebGPU
"auto" falls back to wasm and says why, and "webgpu" is an error that says why."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from python_ref import Interpreter
from python_ref.wrt_file import read_wrt
from wasmrt import paths
from wasmrt.zoo import models

sys.path.insert(0, str(Path(__file__).parent / "js"))
import js_fixtures as support
from test_engine_models import NO_WGSL, WEBGPU_MODELS

pytestmark = pytest.mark.slow
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
WORKER_MODEL = "face_detector"
RTOL = 1e-4


def page_inputs(interp: Interpreter) -> dict[str, np.ndarray]:
    """The inputs the page makes: x[i] = (i * 2654435761 mod 2^32) / 2^32 * 2 - 1, in float32."""
    out = {}
    for s in interp.inputs:
        i = np.arange(int(np.prod(s.shape)), dtype=np.uint64)
        u = (i * np.uint64(2654435761)) % np.uint64(2**32)
        out[s.name] = (u.astype(np.float64) / 2**32 * 2 - 1).astype(np.float32).reshape(s.shape)
    return out


def _unsupported_model() -> bytes:
    from wasmrt.compile.converter import convert
    from wasmrt.compile.ir import Graph

    g = Graph()
    a = g.add_input("a", (2, 3))
    b = g.add_input("b", (3, 4))
    (y,) = g.add_node("MATMUL", [a, b], {}, name="mm", outputs=["y"])
    g.outputs.append(y)
    return convert(g).data


def _fallback_model() -> bytes:
    """relu(a) @ b (MATMUL of two activations: no WGSL kernel) between GPU ops; y is an output and read by tanh."""
    from wasmrt.compile.converter import convert
    from wasmrt.compile.ir import Graph

    g = Graph()
    a = g.add_input("a", (2, 3))
    b = g.add_input("b", (3, 4))
    (ra,) = g.add_node("RELU", [a], {}, name="r1", outputs=["ra"])
    (y,) = g.add_node("MATMUL", [ra, b], {}, name="mm", outputs=["y"])
    (z,) = g.add_node("TANH", [y], {}, name="t", outputs=["z"])
    g.outputs += [z, y]
    return convert(g).data


CHAIN_X = (1, 12, 10, 8)


def _chain_models() -> tuple[bytes, bytes]:
    """a: x -> 3x3 convolution (8 -> 16 channels, bias, clamp 0..6) -> y; b: y -> add a constant -> sigmoid -> z."""
    from wasmrt.compile.converter import convert
    from wasmrt.compile.ir import Graph

    rng = np.random.default_rng(8)
    a = Graph()
    x = a.add_input("x", CHAIN_X)
    w = a.add_const("w", rng.uniform(-0.3, 0.3, (16, 3, 3, 8)).astype(np.float32))
    bias = a.add_const("bias", rng.uniform(-1, 1, (16,)).astype(np.float32))
    (y,) = a.add_node("CONV_2D", [x, w, bias], {"pads": (1, 1, 1, 1), "act_min": 0.0, "act_max": 6.0}, name="conv",
                      outputs=["y"])
    a.outputs.append(y)
    b = Graph()
    yi = b.add_input("features", (*CHAIN_X[:3], 16))
    c = b.add_const("c", rng.uniform(-3, 0, (16,)).astype(np.float32))
    (s,) = b.add_node("ADD", [yi, c], {}, name="add", outputs=["s"])
    (z,) = b.add_node("SIGMOID", [s], {}, name="sigmoid", outputs=["z"])
    b.outputs.append(z)
    return convert(a).data, convert(b).data


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict:
    why = support.missing_prerequisites()
    if why:
        pytest.skip(why)
    if not Path(CHROMIUM).exists():
        pytest.skip("chromium is not installed (apt-get install chromium)")
    missing = [n for n in models.BUNDLED if not (paths.models_dir() / models.BUNDLED[n].wrt).is_file()]
    if missing:
        pytest.skip(f"bundled models not converted ({', '.join(missing)}): python -m wasmrt.zoo.bundle")
    from wasmrt.dev.demo_server import DemoServer

    tmp = tmp_path_factory.mktemp("webgpu")
    jobs, res = tmp / "jobs.json", tmp / "results.json"
    with DemoServer(port=0) as server:
        jobs.write_text(json.dumps({"origin": server.origin, "chromium": CHROMIUM, "models": WEBGPU_MODELS,
                                    "workerModel": WORKER_MODEL,
                                    "unsupported": base64.b64encode(_unsupported_model()).decode(),
                                    "fallback": {"mixed": base64.b64encode(_fallback_model()).decode(),
                                                 **{n: f"/models/{n}.wrt" for n in NO_WGSL}},
                                    "chain": {k: base64.b64encode(v).decode()
                                              for k, v in zip("ab", _chain_models(), strict=True)}}))
        r = subprocess.run(["node", str(Path(__file__).parent / "js" / "webgpu_browser.mjs"), str(jobs), str(res)],
                           cwd=support.ROOT, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, f"browser driver failed:\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
    return json.loads(res.read_text())


def _check(name: str, got: dict, data: bytes | None = None) -> float:
    interp = Interpreter(data or (paths.models_dir() / models.BUNDLED[name].wrt).read_bytes())
    ref = interp.run(page_inputs(interp))
    worst = 0.0
    for k, r in ref.items():
        g = np.frombuffer(base64.b64decode(got[k]["b64"]), np.float32).reshape(got[k]["shape"])
        err = float(np.max(np.abs(g.astype(np.float64) - r)))
        scale = float(np.max(np.abs(r)))
        worst = max(worst, err / max(scale, 1e-30))
        assert err <= RTOL * scale, f"{name} output {k!r}: max error {err:.3g}, output range {scale:.3g}"
    return worst


@pytest.mark.parametrize("name", WEBGPU_MODELS)
def test_model_on_webgpu_in_chromium_matches_reference(results: dict, name: str) -> None:
    run = results["webgpu"]["webgpu"]
    assert run["init"].get("backend") == "webgpu", run["init"]
    got = run["models"][name]
    assert "error" not in got, got.get("error")
    assert got["backend"] == "webgpu"
    worst = _check(name, got["outputs"])
    second = f"{got['secondMs']:8.1f} ms" if got["secondMs"] is not None else "       -"
    print(f"\n  chromium webgpu (SwiftShader) {name:20s} first {got['firstMs']:8.1f} ms  second {second}  "
          f"max error / max|ref| {worst:.1e}")


def test_outputs_kept_on_the_gpu_chain_into_the_next_model(results: dict) -> None:
    """run(x, {outputs: "gpu"}) gives GpuTensors; read() equals the CPU output; fed to a second model they give
    python_ref's answer for the two models in a row; wrong shapes, destroyed tensors and bad options are errors."""
    ch = results["webgpu"]["webgpu"]["chain"]
    assert "error" not in ch, ch.get("error")
    da, db = _chain_models()
    ia, ib = Interpreter(da), Interpreter(db)
    ref_a = ia.run(page_inputs(ia))["y"]
    ref_b = ib.run({"features": ref_a.astype(np.float32)})["z"]

    def arr(k: str, shape: tuple[int, ...]) -> np.ndarray:
        return np.frombuffer(base64.b64decode(ch[k]), np.float32).reshape(shape)

    assert ch["kind"] == "GpuTensor" and tuple(ch["shapeA"]) == ref_a.shape
    np.testing.assert_array_equal(arr("readA", ref_a.shape), arr("cpuA", ref_a.shape))
    assert np.max(np.abs(arr("readA", ref_a.shape) - ref_a)) <= RTOL * float(np.max(np.abs(ref_a)))
    for k in ("outB", "readB"):
        assert np.max(np.abs(arr(k, ref_b.shape) - ref_b)) <= RTOL * float(np.max(np.abs(ref_b))), k
    assert ch["wrongShape"].startswith("InputError") and "'x'" in ch["wrongShape"] and "shape" in ch["wrongShape"]
    assert ch["destroyed"].startswith("InputError") and "destroyed" in ch["destroyed"], ch["destroyed"]
    assert ch["badOption"].startswith("InputError") and '"disk"' in ch["badOption"], ch["badOption"]


def test_f16_storage_runs_where_the_adapter_has_shader_f16_else_says_so(results: dict) -> None:
    """load(..., {storage: "f16"}): on an adapter with shader-f16 the model runs within tests/test_webgpu.py's
    whole-model f16 bounds; SwiftShader has no shader-f16, so there it is an error naming the feature."""
    from test_webgpu import F16_MODEL_MAX, F16_MODEL_MEAN

    f = results["webgpu"]["webgpu"]["f16"]
    if not f["adapterHasF16"]:
        assert f.get("error", "").startswith("WasmrtError") and "shader-f16" in f["error"], f
        return
    assert "error" not in f, f["error"]
    assert f["storage"] == "f16"
    interp = Interpreter((paths.models_dir() / models.BUNDLED[WORKER_MODEL].wrt).read_bytes())
    for k, r in interp.run(page_inputs(interp)).items():
        g = np.frombuffer(base64.b64decode(f["outputs"][k]["b64"]), np.float32).reshape(r.shape)
        d = np.abs(g.astype(np.float64) - r) / float(np.max(np.abs(r)))
        assert float(np.mean(d)) <= F16_MODEL_MEAN and float(np.max(d)) <= F16_MODEL_MAX, k


def test_auto_measures_each_model_and_keeps_the_faster(results: dict) -> None:
    """Where WebGPU works, "auto" holds both backends and keeps each model on the one a trial finds faster: on
    SwiftShader (a CPU emulating the GPU) that is wasm, by a wide margin, with both times in the reason; a second
    load of the file is not measured again."""
    run = results["webgpu"]["auto"]
    assert run["init"]["backend"] == "auto" and "present and working" in run["init"]["reason"], run["init"]
    got = run["models"][WORKER_MODEL]
    assert "error" not in got, got.get("error")
    choice = got["choice"]
    assert choice["backend"] == "wasm" and got["backend"] == "wasm", choice
    assert choice["ms"]["webgpu"] > choice["ms"]["wasm"] > 0, choice
    assert choice["reason"].startswith("wasm: ") and "against WebGPU" in choice["reason"], choice
    _check(WORKER_MODEL, got["outputs"])
    again = run["again"]
    assert again["backend"] == "wasm" and "remembered" in again["reason"] and again["ms"] == choice["ms"], again


def test_webgpu_in_a_worker(results: dict) -> None:
    w = results["webgpu"]["worker"]
    assert "error" not in w, w.get("error")
    assert w["backend"] == "webgpu"
    interp = Interpreter((paths.models_dir() / models.BUNDLED[WORKER_MODEL].wrt).read_bytes())
    ref = interp.run(page_inputs(interp))
    for k, head in w["head"].items():
        r = ref[k].reshape(-1)[:16]
        assert np.max(np.abs(np.asarray(head) - r)) <= RTOL * float(np.max(np.abs(ref[k]))), k


def test_op_without_wgsl_kernel_is_refused_naming_it(results: dict) -> None:
    msg = results["webgpu"]["webgpu"]["unsupported"]
    assert msg.startswith("UnsupportedOpError") and "'MATMUL'" in msg and "no WGSL kernel" in msg, msg


def _python_report(data: bytes) -> list[dict]:
    """The Python engine's fallback report (the same planner run under Node: no GPU needed), in the JS field names."""
    from wasmrt.engines.webgpu_plan import plan
    from wasmrt.engines.webgpu_split import report

    return [{"first": s["first"], "end": s["end"], "ops": [(o["index"], o["type"], o["name"]) for o in s["ops"]],
             "toWasm": s["to_wasm"], "toGpu": s["to_gpu"], "outputs": s["outputs"]}
            for s in report(read_wrt(data), plan(data))]


@pytest.mark.parametrize("name", ["mixed", *sorted(NO_WGSL)])
def test_fallback_runs_missing_ops_on_wasm_and_reports_the_boundaries(results: dict, name: str) -> None:
    """load(..., {fallback: "wasm"}) in Chromium: matches python_ref within 1e-4, and model.fallback lists the ops
    and crossing tensors the Python engine lists (op types from the wasm engine, which knows every op)."""
    got = results["webgpu"]["webgpu"]["fallback"][name]
    assert "error" not in got, got["error"]
    data = _fallback_model() if name == "mixed" else (paths.models_dir() / models.BUNDLED[name].wrt).read_bytes()
    js = [{**s, "ops": [(o["index"], o["type"], o["name"]) for o in s["ops"]]} for s in got["report"]]
    assert js == _python_report(data)
    assert all(o["reason"] for s in got["report"] for o in s["ops"])
    worst = _check(name, got["outputs"], data)
    print(f"\n  chromium webgpu + wasm fallback {name}: {len(js)} wasm segment(s), max error / max|ref| {worst:.1e}")
    if name == "mixed":
        assert js[0]["ops"] == [(1, "MATMUL", "mm")] and js[0]["toWasm"] == ["ra"] and js[0]["toGpu"] == ["y"]
        assert "no WGSL kernel for MATMUL" in got["report"][0]["ops"][0]["reason"]
        _check(name, got["gpuOutputs"], data)  # outputs kept on the GPU: y computed on wasm, uploaded
        assert got["second"] == got["outputs"]
        assert got["badOption"].startswith("InputError") and '"cpu"' in got["badOption"], got["badOption"]


def test_auto_without_webgpu_falls_back_to_wasm_and_says_why(results: dict) -> None:
    run = results["nogpu"]["auto"]
    assert run["init"]["backend"] == "wasm", run["init"]
    assert "WebGPU not used:" in run["init"]["reason"], run["init"]
    got = run["models"][WORKER_MODEL]
    assert "error" not in got, got.get("error")
    _check(WORKER_MODEL, got["outputs"])  # the wasm engine gives the same answers


def test_webgpu_without_webgpu_is_an_error_saying_why(results: dict) -> None:
    err = results["nogpu"]["webgpu"]["init"].get("error", "")
    assert err.startswith("WasmrtError") and "WebGPU" in err and ("adapter" in err or "navigator.gpu" in err), err
