"""The int8 reference against the rules of python_ref/README.md ("Quantized int8"), recomputed here one element at
a time with numpy float32 scalars (an independent transcription of the text, not of python_ref/qops.py), plus the
properties the rules promise and the checks a hostile .wrt file meets."""

from __future__ import annotations

import math

import numpy as np
import pytest
from qgraphs import CASES, quantized_op_graph

from python_ref import Interpreter, dispatch
from python_ref import quant as qm
from python_ref.errors import ModelFormatError
from python_ref.quant import QuantParams
from python_ref.wrt_file import read_wrt
from wasmrt.compile.converter import convert

F = np.float32


def rne(v: np.float32) -> int:
    return int(np.rint(v))


def bound(v: float, s: np.float32, z: int, lo: int = -128, hi: int = 127) -> int:
    if math.isinf(v):
        return lo if v < 0 else hi
    return rne(min(max(F(F(F(v) / s) + F(z)), F(lo)), F(hi)))


def requant(acc: int, m: np.float32, z: int, lo: int, hi: int) -> int:
    acc = (acc + 2**31) % 2**32 - 2**31
    return z + min(max(rne(F(F(acc) * m)), lo - z), hi - z)


def _run(case: str) -> tuple[object, dict, np.ndarray]:
    g, feeds = quantized_op_graph(case, seed=3)
    return g, feeds, Interpreter(convert(g).data).run(feeds)["y"]


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_case_runs_and_stays_in_range(case: str) -> None:
    g, _feeds, y = _run(case)
    t = g.tensors["y"]
    assert y.dtype == t.dtype and y.shape == t.shape
    if t.quant is not None:
        info = np.iinfo(y.dtype)
        assert info.min <= y.min() and y.max() <= info.max


def test_conv_element_by_element() -> None:
    g, feeds, y = _run("conv")
    (node,) = g.nodes
    x, w, b = feeds["x"], g.tensors[node.inputs[1]].data, g.tensors[node.inputs[2]].data
    qx, qw, qy = g.tensors["x"].quant, g.tensors[node.inputs[1]].quant, g.tensors["y"].quant
    (sh, sw), (pt, pl, _, _) = node.attrs["strides"], node.attrs["pads"]
    lo, hi = bound(node.attrs["act_min"], qy.s, qy.z), bound(node.attrs["act_max"], qy.s, qy.z)
    for oh in range(y.shape[1]):
        for ow in range(y.shape[2]):
            for c in range(y.shape[3]):
                acc = int(b[c])
                for kh in range(w.shape[1]):
                    for kw in range(w.shape[2]):
                        ih, iw = oh * sh - pt + kh, ow * sw - pl + kw
                        if 0 <= ih < x.shape[1] and 0 <= iw < x.shape[2]:
                            acc += int(np.dot(x[0, ih, iw].astype(np.int64) - qx.z, w[c, kh, kw].astype(np.int64)))
                m = F(F(qx.s * qw.scale[c]) / qy.s)
                assert y[0, oh, ow, c] == requant(acc, m, qy.z, lo, hi), (oh, ow, c)


@pytest.mark.parametrize("case", ["add", "sub"])
def test_add_sub_element_by_element(case: str) -> None:
    g, feeds, y = _run(case)
    qa, qb, qy = (g.tensors[n].quant for n in ("a", "b", "y"))
    lo, hi = bound(-1.0, qy.s, qy.z), bound(2.5, qy.s, qy.z)
    ra, rb = F(qa.s / qy.s), F(qb.s / qy.s) * (-1 if case == "sub" else 1)
    shift = 20 - (int(np.float32(max(abs(ra), abs(rb))).view(np.uint32)) >> 23) + 127
    ma = int(np.sign(ra)) * rne(F(abs(ra) * F(2.0**shift)))
    mb = int(np.sign(rb)) * rne(F(abs(rb) * F(2.0**shift)))
    a, b = np.broadcast_arrays(feeds["a"], feeds["b"])
    for idx in np.ndindex(y.shape):
        acc = 2 ** (shift - 1) - ma * qa.z - mb * qb.z + ma * int(a[idx]) + mb * int(b[idx])
        assert y[idx] == qy.z + min(max(acc >> shift, lo - qy.z), hi - qy.z), idx


def test_average_pool_and_mean_element_by_element() -> None:
    g, feeds, y = _run("mean")
    qx, qy = g.tensors["x"].quant, g.tensors["y"].quant
    x = feeds["x"].astype(np.int64) - qx.z
    n = x.shape[1] * x.shape[2]
    for c in range(x.shape[3]):
        assert y[0, 0, 0, c] == requant(int(x[0, :, :, c].sum()), F(qx.s / F(F(n) * qy.s)), qy.z, -128, 127)


def test_softmax_element_by_element() -> None:
    g, feeds, y = _run("softmax")
    t = g.tensors[g.nodes[0].inputs[1]].data.astype(np.int64)
    qy = g.tensors["y"].quant
    for r in range(y.shape[0]):
        x = feeds["x"][r].astype(np.int64)
        e = t[x.max() - x]
        rr = F(F(1) / F(F(int(e.sum())) * qy.s))
        for i in range(len(x)):
            assert y[r, i] == qy.z + min(max(rne(F(F(int(e[i])) * rr)), -128 - qy.z), 127 - qy.z)


def test_resize_bilinear_element_by_element() -> None:
    _g, feeds, y = _run("resize_bilinear")
    x = feeds["x"].astype(np.int64)
    (h, w), (oh, ow) = x.shape[1:3], y.shape[1:3]

    def axis(o: int, n_in: int, n_out: int) -> tuple[int, int, int]:
        c = min(max(F(F(F(o) + F(0.5)) / F(F(n_out) / F(n_in))) - F(0.5), F(0)), F(n_in - 1))  # half-pixel
        i0 = int(np.floor(c))
        return i0, min(i0 + 1, n_in - 1), rne(F(F(c - F(i0)) * F(2048)))

    for i in range(oh):
        h0, h1, ah = axis(i, h, oh)
        for j in range(ow):
            w0, w1, aw = axis(j, w, ow)
            top = x[0, h0, w0] * (2048 - aw) + x[0, h0, w1] * aw
            bottom = x[0, h1, w0] * (2048 - aw) + x[0, h1, w1] * aw
            np.testing.assert_array_equal(y[0, i, j], (top * (2048 - ah) + bottom * ah + 2**21) >> 22)


def test_quantize_rounds_half_to_even_and_maps_nan_to_the_zero_point() -> None:
    q = QuantParams.make(0.5, 3)
    x = np.array([0.25, 0.75, -0.25, 1e9, -1e9, np.nan, np.inf, -np.inf, 63.0], np.float32)
    y = qm.quantize(x, q, np.int8)
    assert y.tolist() == [3, 5, 3, 127, -128, 3, 127, -128, 127]


def test_rescale_with_equal_parameters_is_the_identity() -> None:
    q = QuantParams.make(0.0123, -17)
    x = np.arange(-128, 128).astype(np.int8)
    np.testing.assert_array_equal(qm.rescale(x, q, q, -128, 127), x)


def test_relu6_bounds_follow_xnnpack() -> None:
    q = QuantParams.make(6 / 255, -128)
    assert qm.act_bounds({"act_min": 0.0, "act_max": 6.0}, q, np.int8) == (-128, 127)
    q = QuantParams.make(0.05, 10)
    assert qm.act_bounds({"act_min": 0.0, "act_max": 6.0}, q, np.int8) == (10, 127)
    assert qm.bound(1.0, QuantParams.make(0.4, 0), np.int8) == 2  # 2.5 rounds to even


def test_int32_accumulators_wrap() -> None:
    assert qm.wrap32(np.array([2**31, -(2**31) - 1])).tolist() == [-(2**31), 2**31 - 1]


@pytest.mark.parametrize(("edit", "message"), [
    (lambda t: setattr(t.quant, "scale", [0.0]), "scales must be finite and > 0"),
    (lambda t: setattr(t.quant, "scale", [float("nan")]), "scales must be finite and > 0"),
    (lambda t: setattr(t.quant, "zeroPoint", [300]), "zero points must be in [-128, 127]"),
    (lambda t: setattr(t.quant, "axis", 7), "quantization axis 7 out of range"),
    (lambda t: setattr(t.quant, "scale", [0.1, 0.2]), "per-tensor quantization (axis -1) with 2 scales"),
])
def test_hostile_quantization_parameters_are_refused(edit: object, message: str) -> None:
    import flatbuffers

    from python_ref._fb import wrt_generated as fb

    g, _ = quantized_op_graph("relu")
    m = fb.ModelT.InitFromPackedBuf(bytearray(convert(g).data), 0)
    (x,) = [t for t in m.tensors if t.name in (b"x", "x")]
    edit(x)
    b = flatbuffers.Builder(1024)
    b.Finish(m.Pack(b), file_identifier=b"WRT0")
    with pytest.raises(ModelFormatError, match=r"tensor \d+ \('x'\)") as e:
        read_wrt(bytes(b.Output()))
    assert message in str(e.value)


def test_op_rules_are_checked_on_load() -> None:
    import flatbuffers

    from python_ref._fb import wrt_generated as fb

    g, _ = quantized_op_graph("reshape")
    m = fb.ModelT.InitFromPackedBuf(bytearray(convert(g).data), 0)
    (y,) = [t for t in m.tensors if t.name in (b"y", "y")]
    y.quant.scale = [0.5]  # a reshape must keep its input's parameters
    b = flatbuffers.Builder(1024)
    b.Finish(m.Pack(b), file_identifier=b"WRT0")
    with pytest.raises(ModelFormatError, match=r"operator 0 \(RESHAPE 'reshape'\): input and output quantization"):
        read_wrt(bytes(b.Output()))


def test_quantized_ops_refuse_missing_parameters() -> None:
    x = np.zeros((1, 3, 3, 2), np.int8)
    with pytest.raises(ValueError, match=r"MEAN: input 0 .* has no quantization parameters"):
        dispatch.run("MEAN", [x], {"axes": (1, 2)})
    with pytest.raises(ValueError, match=r"SIGMOID: .*LOOKUP"):
        dispatch.run("SIGMOID", [x], {}, ([QuantParams.make(0.1)], [QuantParams.make(0.1)]))
