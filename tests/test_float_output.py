"""A classifier's float output on the int8 path (FULLY_CONNECTED's float_output): the quantizer's choice, the
reference's definition element by element, and clear refusals of misuse by python_ref and the C engine. Bit-exactness
on every engine and thread count: the fully_connected_float / k_fc_float* / t_fc_float cases of tests/qgraphs.py."""

from __future__ import annotations

import numpy as np
import pytest
import qgraphs  # tests/ is on sys.path under pytest
from hostile_models import patched, write
from test_qat import net

from python_ref import Interpreter
from python_ref import quant as qm
from python_ref._fb import wrt_generated as fb
from wasmrt.compile import quantizer
from wasmrt.compile.converter import convert
from wasmrt.compile.ir import Graph
from wasmrt.engines import load
from wasmrt.errors import WasmrtError
from wasmrt.quantize import calibrate


def _quantized(float_output: bool) -> Graph:
    g = net()
    feeds = [{"x": np.random.default_rng(k).standard_normal((1, 8, 8, 3)).astype(np.float32)} for k in range(8)]
    ranges = calibrate.collect(calibrate.Tracer(g, calibrate.activations(g), engine="ref"), feeds, "minmax")
    return quantizer.quantize_graph(g, ranges, float_output=float_output)[0]


def test_the_classifier_writes_its_dequantized_sums_by_default() -> None:
    qg = _quantized(True)
    last = qg.nodes[-1]
    assert last.op == "FULLY_CONNECTED" and last.attrs["float_output"] and last.outputs == ["logits"]
    assert qg.tensors["logits"].dtype == np.float32 and qg.tensors["logits"].quant is None
    assert "DEQUANTIZE" not in [n.op for n in qg.nodes]
    old = _quantized(False)  # --int8-output: int8, then DEQUANTIZE
    assert [n.op for n in old.nodes][-2:] == ["FULLY_CONNECTED", "DEQUANTIZE"]
    assert not old.nodes[-2].attrs.get("float_output")


def test_float_output_is_the_accumulator_times_the_unit_then_the_clamp() -> None:
    g, feeds = qgraphs.quantized_op_graph("fully_connected_float", seed=3)
    y = Interpreter(convert(g).data).run(feeds)["y"]
    (node,) = g.nodes
    x, w, b = feeds["x"], g.tensors[node.inputs[1]].data, g.tensors[node.inputs[2]].data
    qx, qw = g.tensors["x"].quant, g.tensors[node.inputs[1]].quant
    assert y.dtype == np.float32
    for i in range(y.shape[0]):
        for c in range(y.shape[1]):
            acc = int(b[c]) + int(np.dot(x[i].astype(np.int64) - qx.z, w[c].astype(np.int64)))
            v = np.float32(np.float32(acc) * qm.mul_scale(qx.s, qw.s))
            assert y[i, c] == min(max(v, np.float32(-0.4)), np.float32(0.5)), (i, c)


def _broken(kind: str) -> bytes:
    """A valid FULLY_CONNECTED file whose float_output is then set: on a float input, or where the file declares an
    int8 output (a float output cannot carry quantization parameters: a float tensor never does)."""
    g = Graph()
    rng = np.random.default_rng(0)
    if kind == "float input":
        x = g.add_input("x", (1, 8))
        w = g.add_const("w", rng.standard_normal((3, 8)).astype(np.float32))
        g.add_node("FULLY_CONNECTED", [x, w], outputs=["y"])
    else:
        x = g.add_input("x", (1, 8), np.int8, qgraphs.QX)
        w = g.add_const("w", qgraphs._i8(rng, 3, 8, lo=-127), quant=qm.QuantParams.make(0.01, 0))
        g.add_node("FULLY_CONNECTED", [x, w], outputs=["y"], quant=[qgraphs.QY])
    g.outputs.append("y")

    def set_float_output(m: fb.ModelT) -> None:
        m.operators[0].options.floatOutput = True
    return patched(write(g), set_float_output)


@pytest.mark.parametrize(("kind", "message"), [("float input", "float_output needs an int8 or uint8 input"),
                                               ("int8 output", "output.*int8.*float32")])
def test_misused_float_output_is_refused_by_name(kind: str, message: str) -> None:
    data = _broken(kind)
    for engine, variant in (("ref", None), ("native", None), ("wasm", "simd")):
        with pytest.raises((ValueError, WasmrtError), match=message):
            load(data, engine, variant)
