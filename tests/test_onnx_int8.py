"""Quantized ONNX models against onnxruntime's own int8 run: tiny float models quantized by onnxruntime's
quantize_static (QDQ and QOperator formats, per-channel int8 weights, uint8 activations as onnxruntime defaults to)
and quantize_dynamic (DynamicQuantizeLinear + MatMulInteger), imported and run on python_ref (more of onnxruntime's
tools, on every engine: tests/test_onnx_ort_quant.py).

Convolutions and matrix products compute what onnxruntime computes (fp32 requantization, round to nearest even):
equal. Where onnxruntime's uint8 x int8 products saturate (x86-64 without VNNI: tools/ort_int8.py), the weights are
quantized to 7 bits (reduce_range, its own remedy), so that its run stays exact. onnxruntime evaluates QLinearAdd,
QLinearMul and QLinearGlobalAveragePool with other float expressions, so those outputs differ by at most one step on
a few values (python_ref/README.md, "Differences to the peers")."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic, quantize_static

from python_ref import Interpreter
from wasmrt.compile.converter import convert

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from ort_int8 import u8s8_saturates

RNG = np.random.default_rng(5)
SHAPE = (1, 4, 8, 8)


def _model(nodes: list, inits: dict[str, np.ndarray], out_shape: tuple[int, ...]) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
                          [numpy_helper.from_array(v.astype(np.float32), k) for k, v in inits.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _w(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32) * 0.3


MODELS = {
    "conv_relu": lambda: _model([helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
                                 helper.make_node("Relu", ["c"], ["y"])], {"w": _w(6, 4, 3, 3), "b": _w(6)},
                                (1, 6, 8, 8)),
    "depthwise": lambda: _model([helper.make_node("Conv", ["x", "w", "b"], ["y"], group=4, pads=[1, 1, 1, 1],
                                                  strides=[2, 2])], {"w": _w(4, 1, 3, 3), "b": _w(4)},
                                (1, 4, 4, 4)),
    "conv_add": lambda: _model([helper.make_node("Conv", ["x", "w", "b"], ["c"]),
                                helper.make_node("Add", ["c", "x"], ["y"])], {"w": _w(4, 4, 1, 1), "b": _w(4)},
                               SHAPE),
    "conv_mul": lambda: _model([helper.make_node("Conv", ["x", "w", "b"], ["c"]),
                                helper.make_node("Mul", ["c", "x"], ["y"])], {"w": _w(4, 4, 1, 1), "b": _w(4)},
                               SHAPE),
    "gap_gemm": lambda: _model([helper.make_node("GlobalAveragePool", ["x"], ["p"]),
                                helper.make_node("Flatten", ["p"], ["f"]),
                                helper.make_node("Gemm", ["f", "w", "b"], ["y"], transB=1)],
                               {"w": _w(10, 4), "b": _w(10)}, (1, 10)),
    "pools_concat": lambda: _model([helper.make_node("MaxPool", ["x"], ["m"], kernel_shape=[2, 2], strides=[2, 2]),
                                    helper.make_node("AveragePool", ["x"], ["a"], kernel_shape=[2, 2],
                                                     strides=[2, 2]),
                                    helper.make_node("Concat", ["m", "a"], ["y"], axis=1)], {}, (1, 8, 4, 4)),
    "matmul_sigmoid": lambda: _model([helper.make_node("Reshape", ["x", "s"], ["r"]),
                                      helper.make_node("MatMul", ["r", "w"], ["m"]),
                                      helper.make_node("Sigmoid", ["m"], ["y"])],
                                     {"s": np.array([4, 64]), "w": _w(64, 16)}, (4, 16)),
}
# (largest |ours - onnxruntime| in output steps, largest share of differing outputs)
EXPECTED = {"conv_relu": (0, 0.0), "depthwise": (0, 0.0), "conv_add": (1, 0.05), "conv_mul": (1, 0.05),
            "gap_gemm": (1, 0.2), "pools_concat": (1, 0.3), "matmul_sigmoid": (1, 0.1)}


def _fix_int64(m: onnx.ModelProto) -> onnx.ModelProto:
    for init in m.graph.initializer:  # the reshape target was made float32 with the weights
        if init.name == "s":
            init.CopyFrom(numpy_helper.from_array(np.array([4, 64], np.int64), "s"))
    return m


class _Reader(CalibrationDataReader):
    def __init__(self) -> None:
        self.it = iter([{"x": RNG.standard_normal(SHAPE).astype(np.float32)} for _ in range(16)])

    def get_next(self) -> dict | None:
        return next(self.it, None)


def _ort(path: str, x: np.ndarray) -> np.ndarray:
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


def _quantized(tmp_path: object, case: str, fmt: QuantFormat) -> str:
    src, dst = str(tmp_path / f"{case}.onnx"), str(tmp_path / f"{case}_int8.onnx")
    onnx.save(_fix_int64(MODELS[case]()), src)
    quantize_static(src, dst, _Reader(), quant_format=fmt, per_channel=True, activation_type=QuantType.QUInt8,
                    weight_type=QuantType.QInt8, reduce_range=u8s8_saturates())
    return dst


def _output_step(interp: Interpreter) -> float:
    """The scale of the int8 tensor the model dequantizes into its output y."""
    m = interp.model
    (op,) = [o for o in m.ops if m.tensors[o.outputs[0]].name == "y"]
    assert op.op == "DEQUANTIZE"
    return float(m.tensors[op.inputs[0]].quant.s)


@pytest.mark.parametrize("fmt", [QuantFormat.QDQ, QuantFormat.QOperator], ids=["qdq", "qoperator"])
@pytest.mark.parametrize("case", sorted(MODELS))
def test_matches_onnxruntime_int8(tmp_path: object, case: str, fmt: QuantFormat) -> None:
    path = _quantized(tmp_path, case, fmt)
    interp = Interpreter(convert(path).data)
    step = _output_step(interp)
    assert not any(o.op in ("CONV_2D", "FULLY_CONNECTED", "MATMUL", "ADD", "MUL") and
                   interp.model.tensors[o.inputs[0]].dtype == np.float32 for o in interp.model.ops), \
        "an op onnxruntime runs in int8 stayed float"
    worst, share = 0.0, 0.0
    for _ in range(3):
        x = RNG.standard_normal(SHAPE).astype(np.float32)
        got, want = interp.run({"x": x})["y"], _ort(path, x)
        steps = np.abs(got.astype(np.float64) - want) / step
        worst, share = max(worst, float(steps.max())), max(share, float(np.mean(steps > 0.5)))
    max_steps, max_share = EXPECTED[case]
    assert worst <= max_steps + 1e-3 and share <= max_share, (case, worst, share)


def test_dynamic_quantization_matches_onnxruntime(tmp_path: object) -> None:
    """quantize_dynamic: DynamicQuantizeLinear + MatMulInteger + scale multiply. x is rounded to uint8 as the ONNX
    spec says (round half to even), so the product is onnxruntime's: equal up to the float32 rounding of the
    sigmoid; the float model, whose x is not rounded, is further away."""
    src, dst = str(tmp_path / "mm.onnx"), str(tmp_path / "mm_dyn.onnx")
    onnx.save(_fix_int64(MODELS["matmul_sigmoid"]()), src)
    quantize_dynamic(src, dst, weight_type=QuantType.QInt8, reduce_range=u8s8_saturates())
    ops = {n.op_type for n in onnx.load(dst).graph.node}
    assert {"DynamicQuantizeLinear", "MatMulInteger"} <= ops
    interp = Interpreter(convert(dst).data)
    x = RNG.standard_normal(SHAPE).astype(np.float32)
    got, want, flt = interp.run({"x": x})["y"], _ort(dst, x), _ort(src, x)
    assert np.abs(got - want).max() < 1e-6
    assert np.abs(got - flt).max() > 1e-4  # the rounding of x and of the weights shows
