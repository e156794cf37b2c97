"""The webgpu engine (generated WGSL on wgpu-native; here Mesa's lavapipe) vs python_ref: every single-op case of
test_engine.py (float32 cases run and match, the others are refused at load naming the op or dtype, and run with
fallback="wasm"), every bundled real model within 1e-4 of the output range (with the wasm fallback for those with
ops the GPU lacks), and the refusals users see."""

from __future__ import annotations

import numpy as np
import pytest
from test_engine import CASES, close, converted
from test_engine_models import NO_WGSL, WEBGPU_MODELS, WEBGPU_REFUSED, reference
from test_engine_models import converted as converted_model

from python_ref.wrt_file import read_wrt
from wasmrt.compile.ir import Graph
from wasmrt.engines import load
from wasmrt.engines.webgpu import available
from wasmrt.engines.webgpu_plan import kernel_table, supported
from wasmrt.errors import UnsupportedOpError

OK, WHY = available()
pytestmark = pytest.mark.skipif(not OK, reason=f"no WebGPU adapter here: {WHY}")
MODEL_RTOL = 1e-4


def _runs_on_webgpu(data: bytes) -> str | None:
    """None when every op has a WGSL kernel and every tensor is float32, else what the engine must name."""
    m = read_wrt(data)
    for op in m.ops:
        if op.op not in supported():
            return op.op
        for i in [*op.inputs, *op.outputs]:
            if i >= 0 and m.tensors[i].dtype != np.float32:
                return str(m.tensors[i].dtype)
    return None


@pytest.mark.parametrize("name", sorted(CASES))
def test_op_case(name: str) -> None:
    data, feeds, ref = converted(name)
    refused = _runs_on_webgpu(data)
    if refused is not None:
        with pytest.raises(UnsupportedOpError, match=refused):
            load(data, "webgpu")
        m = load(data, "webgpu", fallback="wasm")  # on request, the op runs on wasm, reported
        assert any(o["type"] == refused or refused in o["reason"] for s in m.fallback for o in s["ops"])
        got = m.run(feeds)
        for k in ref:
            close(got[k], ref[k])
        m.release()
        return
    m = load(data, "webgpu")
    got = m.run(feeds)
    for k in ref:
        close(got[k], ref[k])
    got2 = m.run(feeds)  # a second run gives the same answer
    for k in ref:
        np.testing.assert_array_equal(got2[k], got[k])
    m.release()


@pytest.mark.parametrize("name", sorted(NO_WGSL))
def test_bundled_model_without_wgsl_kernels_is_refused_naming_the_op(name: str) -> None:
    with pytest.raises(UnsupportedOpError, match=NO_WGSL[name]):
        load(converted_model(name), "webgpu")


@pytest.mark.parametrize("name", sorted(WEBGPU_REFUSED))
def test_bundled_model_with_float16_activations_is_refused(name: str) -> None:
    with pytest.raises(UnsupportedOpError, match=WEBGPU_REFUSED[name]):
        load(converted_model(name), "webgpu")


@pytest.mark.slow
@pytest.mark.parametrize("name", WEBGPU_MODELS)
def test_bundled_model_matches_reference(name: str) -> None:
    feeds, ref = reference(name)
    m = load(converted_model(name), "webgpu")
    got = m.run(feeds)
    for k, r in ref.items():
        err = float(np.max(np.abs(got[k].astype(np.float64) - r)))
        scale = float(np.max(np.abs(r)))
        print(f"{name} {k}: max error / max|ref| = {err / max(scale, 1e-30):.2e}")
        assert err <= MODEL_RTOL * scale, f"{name} output {k!r}: max error {err:.3g}, output range {scale:.3g}"
    m.release()


# f16 storage (variant "f16"): error bounds relative to the output's largest magnitude, per kind of op. One f16
# rounding of the result is 2^-11 of it; element-wise ops add their inputs' roundings; sums over many terms
# (convolutions, dense layers, reductions, softmax) and exp amplify the rounding of their inputs and weights.
F16_MOVE = {"RESHAPE", "TRANSPOSE", "CONCATENATION", "SLICE", "PAD", "DEPTH_TO_SPACE", "MAX_POOL_2D", "REDUCE_MAX",
            "RELU", "NEG", "ABS", "CLIP", "LEAKY_RELU", "MAXIMUM", "MINIMUM"}
F16_SUMS = {"CONV_2D", "CONV_TRANSPOSE_2D", "FULLY_CONNECTED", "MEAN", "REDUCE_SUM", "SOFTMAX", "EXP"}
F16_RTOL = {"move": 5e-4, "elementwise": 1.5e-3, "sums": 8e-3}
# whole models: f16 errors compound over tens to hundreds of ops; the mean error stays small, the largest may not
# (PP-OCRv4 det's probability map: 0.13 at a pixel whose logit sits on the sigmoid's slope)
F16_MODEL_MEAN, F16_MODEL_MAX = 5e-3, 0.2


def _f16_rtol(data: bytes) -> float:
    ops = {o.op for o in read_wrt(data).ops}
    return F16_RTOL["sums" if ops & F16_SUMS else "move" if ops <= F16_MOVE else "elementwise"]


def _has_f16() -> bool:
    from wasmrt.engines.webgpu import _DEVICE

    return "shader-f16" in _DEVICE.get("features", [])


@pytest.mark.parametrize("name", sorted(CASES))
def test_op_case_f16_storage(name: str) -> None:
    if not _has_f16():
        pytest.skip("the adapter has no shader-f16")
    data, feeds, ref = converted(name)
    if _runs_on_webgpu(data) is not None:
        return
    m = load(data, "webgpu", "f16")
    got = m.run(feeds)
    tol = _f16_rtol(data)
    for k, r in ref.items():
        r = np.asarray(r, np.float64)
        g = got[k].astype(np.float64)
        fin = np.isfinite(r)
        np.testing.assert_array_equal(np.isfinite(g), fin, err_msg=f"{name} {k}: non-finite values differ")
        scale = max(float(np.max(np.abs(r[fin]))) if fin.any() else 0.0, 1e-30)
        err = float(np.max(np.abs(g[fin] - r[fin]))) if fin.any() else 0.0
        assert err <= tol * scale, f"{name} {k}: f16 error {err:.3g} > {tol} x output range {scale:.3g}"
    assert m.variant.endswith("(f16)")
    m.release()


@pytest.mark.slow
@pytest.mark.parametrize("name", WEBGPU_MODELS)
def test_bundled_model_f16_storage(name: str) -> None:
    if not _has_f16():
        pytest.skip("the adapter has no shader-f16")
    feeds, ref = reference(name)
    m = load(converted_model(name), "webgpu", "f16")
    got = m.run(feeds)
    for k, r in ref.items():
        d = np.abs(got[k].astype(np.float64) - r)
        scale = float(np.max(np.abs(r)))
        mean, worst = float(np.mean(d)) / scale, float(np.max(d)) / scale
        print(f"{name} {k}: f16 mean error / max|ref| {mean:.1e}, max {worst:.1e}")
        assert mean <= F16_MODEL_MEAN and worst <= F16_MODEL_MAX, f"{name} {k}: mean {mean:.2e}, max {worst:.2e}"
    m.release()


def test_js_f16_conversion_is_numpys(tmp_path) -> None:
    """The JS backend's float32 -> binary16 rounding (inputs of f16 models) and binary16 -> float32 (outputs) agree
    with numpy's float16 bit for bit: normals, subnormals, ties, overflow, zeros, infinities and NaN."""
    import shutil
    import subprocess
    from pathlib import Path

    node = shutil.which("node")
    if node is None:
        pytest.skip("node not found")
    rng = np.random.default_rng(6)
    f16 = np.arange(65536, dtype=np.uint16).view(np.float16)
    ties = (f16[np.isfinite(f16)].astype(np.float64)[:-1] + f16[np.isfinite(f16)].astype(np.float64)[1:]) / 2
    values = np.concatenate([
        rng.standard_normal(20000) * 10.0 ** rng.integers(-9, 6, 20000), ties,
        [0.0, -0.0, 65504.0, 65519.99, 65520.0, 1e9, -1e9, 2.0 ** -24, 2.0 ** -25, 2.0 ** -25 * 1.01, 2.0 ** -26,
         5.9e-8, 6.1e-5, np.inf, -np.inf, np.nan]]).astype(np.float32)
    (tmp_path / "v.f32").write_bytes(values.tobytes())
    script = Path(__file__).parent / "js" / "webgpu_f16.mjs"
    r = subprocess.run([node, str(script), *(str(tmp_path / f) for f in ("v.f32", "b.u16", "a.f32"))],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    got = np.frombuffer((tmp_path / "b.u16").read_bytes(), np.uint16)
    with np.errstate(over="ignore"):
        want = values.astype(np.float16).view(np.uint16)
    nan = np.isnan(values)
    bad = np.flatnonzero((got != want) & ~nan)
    assert bad.size == 0, f"{bad.size} values differ, e.g. {values[bad[:5]]}: {got[bad[:5]]} vs {want[bad[:5]]}"
    assert np.all(np.isnan(got[nan].view(np.float16)))
    back = np.frombuffer((tmp_path / "a.f32").read_bytes(), np.float32)
    np.testing.assert_array_equal(back, f16.astype(np.float32))


def test_storage_variant_is_checked() -> None:
    data, _, _ = converted(sorted(CASES)[0])
    with pytest.raises(ValueError, match="'f32' or 'f16'"):
        load(data, "webgpu", "bf16")


def test_unsupported_op_is_refused_at_load_naming_it() -> None:
    g = Graph()
    a = g.add_input("a", (2, 3))
    b = g.add_input("b", (3, 4))
    (y,) = g.add_node("MATMUL", [a, b], {}, name="mm", outputs=["y"])
    g.outputs.append(y)
    from wasmrt.compile.converter import convert

    with pytest.raises(UnsupportedOpError, match=r"'MATMUL' \(node 'mm'\).*no WGSL kernel"):
        load(convert(g).data, "webgpu")


def _matmul_between_gpu_ops() -> bytes:
    """relu(a) @ b on wasm (no WGSL kernel for MATMUL of two activations) between GPU ops; y is both a graph output and
    read by a GPU op; the int32 `n` goes straight from the feeds to wasm (a dtype the GPU does not run)."""
    g = Graph()
    a = g.add_input("a", (2, 3))
    b = g.add_input("b", (3, 4))
    n = g.add_input("n", (4,), np.dtype(np.int32))
    (ra,) = g.add_node("RELU", [a], {}, name="r1", outputs=["ra"])
    (y,) = g.add_node("MATMUL", [ra, b], {}, name="mm", outputs=["y"])
    (z,) = g.add_node("TANH", [y], {}, name="t", outputs=["z"])
    (nn,) = g.add_node("ADD", [n, n], {}, name="twice", outputs=["nn"])
    g.outputs += [z, y, nn]
    from wasmrt.compile.converter import convert

    return convert(g).data


FALLBACK_REPORT = [
    {"first": 1, "end": 2, "ops": [{"index": 1, "type": "MATMUL", "name": "mm"}], "to_wasm": ["ra"],
     "to_gpu": ["y"], "outputs": ["y"]},
    {"first": 3, "end": 4, "ops": [{"index": 3, "type": "ADD", "name": "twice"}], "to_wasm": [], "to_gpu": [],
     "outputs": ["nn"]},
]


@pytest.mark.parametrize("storage", ["f32", "f16"])
def test_fallback_runs_missing_ops_on_wasm_and_reports_the_boundaries(storage: str) -> None:
    if storage == "f16" and not _has_f16():
        pytest.skip("the adapter has no shader-f16")
    data = _matmul_between_gpu_ops()
    rng = np.random.default_rng(3)
    feeds = {"a": rng.standard_normal((2, 3), np.float32), "b": rng.standard_normal((3, 4), np.float32),
             "n": np.array([1, -2, 3, 1 << 20], np.int32)}
    ref = load(data, "ref").run(feeds)
    with pytest.raises(UnsupportedOpError, match=r"'MATMUL' \(node 'mm'\).*no WGSL kernel"):
        load(data, "webgpu", storage)  # without the option: refused at load, naming the op
    m = load(data, "webgpu", storage, fallback="wasm")
    report = [{**s, "ops": [{k: o[k] for k in ("index", "type", "name")} for o in s["ops"]]} for s in m.fallback]
    assert report == FALLBACK_REPORT
    assert "no WGSL kernel for MATMUL" in m.fallback[0]["ops"][0]["reason"]
    assert "int32" in m.fallback[1]["ops"][0]["reason"]
    for _ in range(2):  # a second run starts from the first's leftovers on both sides
        got = m.run(feeds)
        np.testing.assert_array_equal(got["nn"], ref["nn"])
        for k in ("y", "z"):
            if storage == "f32":
                close(got[k], ref[k])
            else:  # y rounds to f16 on its way to the GPU's tanh, a and relu(a) on their way to wasm
                np.testing.assert_allclose(got[k], ref[k], rtol=0, atol=F16_RTOL["sums"] * np.abs(ref[k]).max())
    m.release()


def test_fallback_is_empty_when_every_op_runs_on_the_gpu() -> None:
    name = next(n for n in sorted(CASES) if _runs_on_webgpu(converted(n)[0]) is None)
    data, feeds, ref = converted(name)
    m = load(data, "webgpu", fallback="wasm")
    assert m.fallback == []
    for k in ref:
        close(m.run(feeds)[k], ref[k])
    m.release()


def test_fallback_option_is_checked() -> None:
    data, _, _ = converted(sorted(CASES)[0])
    with pytest.raises(ValueError, match="None or 'wasm'"):
        load(data, "webgpu", fallback="cpu")
    with pytest.raises(ValueError, match="applies to engine 'webgpu'"):
        load(data, "wasm", fallback="wasm")


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(NO_WGSL))
def test_bundled_model_without_wgsl_kernels_runs_with_fallback(name: str) -> None:
    feeds, ref = reference(name)
    m = load(converted_model(name), "webgpu", fallback="wasm")
    ran = {o["type"] for s in m.fallback for o in s["ops"]}
    assert ran and all(t.startswith(tuple(NO_WGSL[name].split("|"))) for t in ran), ran
    assert all(s["to_wasm"] and s["to_gpu"] for s in m.fallback)  # each wasm segment sits between GPU ops
    got = m.run(feeds)
    for k, r in ref.items():
        err = float(np.max(np.abs(got[k].astype(np.float64) - r)))
        scale = float(np.max(np.abs(r)))
        assert err <= MODEL_RTOL * scale, f"{name} output {k!r}: max error {err:.3g}, output range {scale:.3g}"
    m.release()


def test_released_model_refuses_runs() -> None:
    data, feeds, _ = converted(sorted(CASES)[0])
    if _runs_on_webgpu(data) is not None:
        pytest.skip("first case does not run on webgpu")
    m = load(data, "webgpu")
    m.release()
    with pytest.raises(Exception, match="released"):
        m.run(feeds)


def test_generated_kernels_compile() -> None:
    """Every generated kernel is valid WGSL for this device (naga + the driver), not only the ones models use."""
    from wasmrt.engines.webgpu import pipeline

    for name in kernel_table()["kernels"]:
        assert pipeline(name) is not None


@pytest.mark.parametrize(("rows", "k", "n"), [(1100, 136, 200), (1030, 7, 129), (64, 2048, 1000)])
def test_dense_layer_tiles(rows: int, k: int, n: int) -> None:
    """FULLY_CONNECTED through each GEMM tile (the 128x128 vector tile needs >= 1024 rows and >= 128 columns),
    with partial tiles at every edge, against python_ref."""
    from python_ref import Interpreter
    from wasmrt.compile.converter import convert

    rng = np.random.default_rng(3)
    g = Graph()
    x = g.add_input("x", (rows, k))
    w = g.add_const("w", rng.uniform(-1, 1, (n, k)).astype(np.float32))
    b = g.add_const("b", rng.uniform(-1, 1, (n,)).astype(np.float32))
    (y,) = g.add_node("FULLY_CONNECTED", [x, w, b], {"act_min": -0.5, "act_max": 3.0}, name="fc", outputs=["y"])
    g.outputs.append(y)
    data = convert(g).data
    feeds = {"x": rng.uniform(-1, 1, (rows, k)).astype(np.float32)}
    m = load(data, "webgpu")
    assert m.plan.dispatches[0].kernel.startswith("gemm_")
    close(m.run(feeds)["y"], Interpreter(data).run(feeds)["y"])


def test_convolution_with_residual_on_the_large_tile() -> None:
    """A 3x3 convolution with bias, fused residual and clamp on the 128x128 im2col tile."""
    from python_ref import Interpreter
    from wasmrt.compile.converter import convert

    rng = np.random.default_rng(4)
    g = Graph()
    x = g.add_input("x", (1, 40, 36, 24))
    r = g.add_input("r", (1, 40, 36, 160))
    w = g.add_const("w", rng.uniform(-0.3, 0.3, (160, 3, 3, 24)).astype(np.float32))
    b = g.add_const("b", rng.uniform(-1, 1, (160,)).astype(np.float32))
    (y,) = g.add_node("CONV_2D", [x, w, b, r], {"pads": (1, 1, 1, 1), "act_min": 0.0, "act_max": 6.0}, name="conv",
                      outputs=["y"])
    g.outputs.append(y)
    data = convert(g).data
    feeds = {"x": rng.uniform(-1, 1, (1, 40, 36, 24)).astype(np.float32),
             "r": rng.uniform(-2, 2, (1, 40, 36, 160)).astype(np.float32)}
    m = load(data, "webgpu")
    assert [d.kernel for d in m.plan.dispatches] == ["conv_128x128"]
    close(m.run(feeds)["y"], Interpreter(data).run(feeds)["y"])


def test_plan_comes_from_the_js_planner_and_names_what_it_lacks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine's plan is the JS backend's (plan-cli.mjs under Node): its constants and uniform blocks as that
    planner packs them; without Node the engine says what it needs instead of failing obscurely."""
    import wasmrt.engines.webgpu_plan as wp

    data = next(d for d in (converted(n)[0] for n in sorted(CASES)) if _runs_on_webgpu(d) is None)
    p = wp.plan(data, "m")
    assert p.dispatches and all(len(d.uniform) % 16 == 0 and len(d.uniform) >= 16 for d in p.dispatches)
    assert p.constants.dtype == np.float32 and p.constants.size % 64 == 0
    assert [s.wasm for s in p.segments] == [False] * len(p.segments)
    assert {"CONV_2D", "FULLY_CONNECTED", "ADD"} <= set(supported()) and "MATMUL" not in supported()
    monkeypatch.setattr(wp.shutil, "which", lambda _name: None)
    monkeypatch.setattr(wp, "_checkout_node", lambda: None)
    wp.node.cache_clear()
    try:
        with pytest.raises(wp.WebGPUUnavailable, match=r"needs Node\.js"):
            wp.plan(data)
    finally:
        wp.node.cache_clear()
    monkeypatch.setattr(wp.paths, "SHIPPED_WEB", wp.paths.SHIPPED_WEB / "nowhere")
    monkeypatch.setattr(wp.paths, "checkout", lambda: None)  # an installed package without its web/ folder
    with pytest.raises(wp.WebGPUUnavailable, match=r"JS binding's WebGPU files.*plan-cli\.mjs is missing"):
        wp.plan(data)
