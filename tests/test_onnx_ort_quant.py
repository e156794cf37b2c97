"""Models made by onnxruntime's own quantization tools, converted and run on every engine against onnxruntime:
quantize_dynamic on a Linear model and an LSTM exported from PyTorch (DynamicQuantizeLinear + MatMulInteger,
com.microsoft DynamicQuantizeLSTM), the same Linear model after onnxruntime's optimizer (com.microsoft
DynamicQuantizeMatMul), a hand-built MatMulIntegerToFloat, and a QOperator-format quantize_static CNN whose MaxPool
and Flatten run on uint8 between QLinear ops. DynamicQuantizeLinear itself is checked bit for bit against
python_ref.quant.dynamic_quantize, onnxruntime and onnx's reference evaluator."""

from __future__ import annotations

import functools
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic, quantize_static

from python_ref.quant import dynamic_quantize
from tests.test_engine import engine_model
from wasmrt.compile.converter import convert

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from ort_int8 import u8s8_saturates

TOLERANCE = 1e-4  # float outputs: relative to max |onnxruntime|
ENGINES = [("ref", None), ("native", None), ("wasm", "scalar"), ("wasm", "simd"), ("wasm", "relaxed")]
ENGINE_IDS = ["ref", "native", "wasm-scalar", "wasm-simd", "wasm-relaxed"]
WORK = Path(tempfile.mkdtemp(prefix="wasmrt_ort_quant_"))


def _ort(model: str | bytes, feeds: dict[str, np.ndarray], optimized: str = "") -> list[np.ndarray]:
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1  # onnxruntime quantizes an LSTM's batch rows per thread
    if optimized:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
        so.optimized_model_filepath = optimized
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"]).run(None, feeds)


def _convert_bytes(model: bytes, name: str) -> bytes:
    path = WORK / f"{name}.onnx"
    path.write_bytes(model)
    return convert(str(path)).data


def _run(data: bytes, engine: str, variant: str | None, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return engine_model(data, engine, variant).run(feeds)


# -- DynamicQuantizeLinear, bit for bit ------------------------------------------------------------------------------
def _dql_model() -> bytes:
    g = helper.make_graph([helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])], "dql",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, (4, 64))],
                          [helper.make_tensor_value_info("y", TensorProto.UINT8, (4, 64)),
                           helper.make_tensor_value_info("s", TensorProto.FLOAT, ()),
                           helper.make_tensor_value_info("z", TensorProto.UINT8, ())])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8).SerializeToString()


def _dql_inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    step = 2.0 ** -7  # scale exactly 2^-7 below: x / scale lands on .5 ties, which round to even
    ties = (rng.integers(-100, 154, (4, 64)) + 0.5) * step
    ties[0, :2] = (-100.5 * step, 154.5 * step)  # zero point 100.5 -> 100
    return {"normal": rng.standard_normal((4, 64)) * 3, "ties": ties, "positive": rng.random((4, 64)) + 0.5,
            "negative": -rng.random((4, 64)) - 0.25, "outlier": np.where(rng.random((4, 64)) < 0.01, 40.0,
                                                                          rng.standard_normal((4, 64)))}


@pytest.mark.parametrize(("engine", "variant"), ENGINES, ids=ENGINE_IDS)
def test_dynamic_quantize_linear_is_exact(engine: str, variant: str | None) -> None:
    model = _dql_model()
    data = _convert_bytes(model, "dql")
    evaluator = ReferenceEvaluator(onnx.load_from_string(model))
    for case, x in _dql_inputs().items():
        x = x.astype(np.float32)
        y, s, z = dynamic_quantize(x)
        for name, (wy, ws, wz) in {"onnxruntime": _ort(model, {"x": x}),
                                   "onnx reference": evaluator.run(None, {"x": x})}.items():
            assert np.array_equal(wy, y) and ws == s and wz == z, (case, name)
        got = _run(data, engine, variant, {"x": x})
        assert np.array_equal(got["y"], y), (case, int(np.abs(got["y"].astype(np.int64) - y).max()))
        assert float(got["s"]) == float(s) and float(got["z"]) == float(z), case
    assert np.abs(dynamic_quantize(_dql_inputs()["ties"].astype(np.float32))[0] % 2).sum() < 256  # ties were even


# -- models from onnxruntime's tools ---------------------------------------------------------------------------------
class _Linear(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = torch.nn.Linear(32, 64), torch.nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.relu(self.a(x)))


class _Recurrent(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm, self.head = torch.nn.LSTM(16, 24, batch_first=True), torch.nn.Linear(24, 5)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y, (h, _) = self.lstm(x)
        return self.head(y), h


class _Cnn(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.c1, self.c2 = torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.Conv2d(8, 16, 3, padding=1)
        self.fc = torch.nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.nn.functional.max_pool2d(torch.relu(self.c1(x)), 2)
        x = torch.nn.functional.adaptive_avg_pool2d(torch.relu(self.c2(x)), 1)
        return self.fc(x.flatten(1))


SHAPES = {"linear": (2, 32), "lstm": (1, 7, 16), "cnn": (1, 3, 16, 16)}
MODULES = {"linear": _Linear, "lstm": _Recurrent, "cnn": _Cnn}


def _export(name: str) -> str:
    torch.manual_seed(0)
    path = str(WORK / f"{name}.onnx")
    outputs = ["y", "h"] if name == "lstm" else ["y"]
    torch.onnx.export(MODULES[name]().eval(), (torch.randn(*SHAPES[name]),), path, input_names=["x"],
                      output_names=outputs, opset_version=17, dynamo=False)
    return path


class _Calibration(CalibrationDataReader):
    def __init__(self) -> None:
        rng = np.random.default_rng(0)
        self.it = iter([{"x": rng.standard_normal(SHAPES["cnn"]).astype(np.float32)} for _ in range(4)])

    def get_next(self) -> dict | None:
        return next(self.it, None)


@functools.cache
def _quantized(case: str) -> tuple[str, str]:
    """(the model onnxruntime's tools wrote, the op that must be in it)."""
    reduce_range = u8s8_saturates()  # onnxruntime's own remedy where its u8 x s8 products saturate
    if case == "cnn_qoperator":
        out = str(WORK / "cnn_q.onnx")
        quantize_static(_export("cnn"), out, _Calibration(), quant_format=QuantFormat.QOperator, per_channel=True,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, reduce_range=reduce_range)
        return out, "QLinearConv"
    source = case.split("_")[0]
    dyn = str(WORK / f"{source}_dynamic.onnx")
    if not Path(dyn).exists():
        quantize_dynamic(_export(source), dyn, weight_type=QuantType.QInt8, reduce_range=reduce_range)
    if case == "linear_optimized":  # onnxruntime's optimizer fuses the pattern into DynamicQuantizeMatMul
        out = str(WORK / "linear_optimized.onnx")
        _ort(dyn, {"x": np.zeros(SHAPES["linear"], np.float32)}, optimized=out)
        return out, "DynamicQuantizeMatMul"
    return dyn, "DynamicQuantizeLSTM" if source == "lstm" else "MatMulInteger"


@functools.cache
def _converted(case: str) -> bytes:
    return convert(_quantized(case)[0]).data


def _output_step(path: str) -> float:
    """The scale of the last DequantizeLinear (the QOperator model's float output)."""
    m = onnx.load(path)
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    (dq,) = [n for n in m.graph.node if n.op_type == "DequantizeLinear"]
    return float(inits[dq.input[1]])


CASES = ["linear_dynamic", "linear_optimized", "lstm_dynamic", "cnn_qoperator"]


@pytest.mark.parametrize(("engine", "variant"), ENGINES, ids=ENGINE_IDS)
@pytest.mark.parametrize("case", CASES)
def test_matches_onnxruntime(case: str, engine: str, variant: str | None) -> None:
    path, op = _quantized(case)
    assert op in {n.op_type for n in onnx.load(path).graph.node}
    data = _converted(case)
    model = engine_model(data, engine, variant) if engine != "ref" else None
    rng = np.random.default_rng(11)
    for _ in range(3):
        x = rng.standard_normal(SHAPES[case.split("_")[0]]).astype(np.float32)
        wants = _ort(path, {"x": x})
        got = (model.run({"x": x}) if model else _run(data, "ref", None, {"x": x}))
        for name, want in zip([o.name for o in onnx.load(path).graph.output], wants, strict=True):
            err = np.abs(got[name].astype(np.float64).reshape(want.shape) - want)
            if case == "cnn_qoperator":  # a dequantized uint8 output: within one step
                assert err.max() <= _output_step(path) * (1 + 1e-5), (name, err.max() / _output_step(path))
            else:
                assert err.max() <= TOLERANCE * np.abs(want).max(), (name, err.max() / np.abs(want).max())


def test_matmul_integer_to_float() -> None:
    """com.microsoft MatMulIntegerToFloat after DynamicQuantizeLinear, per-column weight scales and zero points,
    with a bias: f32(sum (a - za)(b - zb) * f32(sa * sb)) + bias, as onnxruntime."""
    rng = np.random.default_rng(2)
    w = rng.integers(0, 256, (24, 12)).astype(np.uint8)
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(rng.random(12).astype(np.float32) * 0.01, "ws"),
             numpy_helper.from_array(rng.integers(100, 156, 12).astype(np.uint8), "wz"),
             numpy_helper.from_array(rng.standard_normal(12).astype(np.float32), "b")]
    g = helper.make_graph([helper.make_node("DynamicQuantizeLinear", ["x"], ["q", "s", "z"]),
                           helper.make_node("MatMulIntegerToFloat", ["q", "w", "s", "ws", "z", "wz", "b"], ["y"],
                                            domain="com.microsoft")], "mmitf",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, (3, 24))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, (3, 12))], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.microsoft", 1)],
                              ir_version=8).SerializeToString()
    data = _convert_bytes(model, "mmitf")
    for _ in range(3):
        x = rng.standard_normal((3, 24)).astype(np.float32)
        (want,) = _ort(model, {"x": x})
        for engine, variant in (("ref", None), ("native", None), ("wasm", "simd")):
            got = _run(data, engine, variant, {"x": x})["y"]
            assert np.abs(got - want).max() <= TOLERANCE * np.abs(want).max(), engine
