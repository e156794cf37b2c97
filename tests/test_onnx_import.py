"""ONNX importer: small models built with onnx.helper and the real PP-OCR models, run op by op with python_ref and
compared to onnxruntime (max|ours - ort| <= 1e-4 * max|ort|), plus layout, folding, metadata and error cases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from wasmrt.compile.ir import Graph
from wasmrt.compile.onnx.importer import import_onnx
from wasmrt.errors import ConversionError, ModelFormatError, UnsupportedOpError

ort = pytest.importorskip("onnxruntime")
RTOL = 1e-4
RNG = np.random.default_rng(7)


# -- helpers ------------------------------------------------------------------------------------------------------
def evaluate(graph: Graph, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    values = graph.evaluate(feeds)
    return {o: values[o] for o in graph.outputs}


def make_model(nodes: list[onnx.NodeProto], inputs: dict[str, list[Any]], outputs: list[str],
               inits: dict[str, np.ndarray] | None = None, opset: int = 13) -> onnx.ModelProto:
    g = helper.make_graph(
        nodes, "test",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="wasmrt-tests")
    model.ir_version = 8 if opset < 21 else 10
    return model


def ort_run(model: onnx.ModelProto | str, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    data = model if isinstance(model, str) else model.SerializeToString()
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def assert_close(ours: np.ndarray, ref: np.ndarray, what: str = "") -> None:
    assert ours.shape == ref.shape, f"{what}: shape {ours.shape} vs onnxruntime {ref.shape}"
    err, scale = float(np.abs(ours - ref).max(initial=0.0)), float(np.abs(ref).max(initial=0.0))
    assert err <= RTOL * scale + 1e-7, f"{what}: max|ours - ort| = {err:.3g}, max|ort| = {scale:.3g}"


def check(model: onnx.ModelProto, feeds: dict[str, np.ndarray] | None = None, **kw: Any) -> Graph:
    """Import, run with python_ref and compare every output with onnxruntime; returns the graph."""
    graph = import_onnx(model, **kw)
    if feeds is None:
        feeds = {i: RNG.standard_normal(graph.tensors[i].shape).astype(np.float32) for i in graph.inputs}
    ours = evaluate(graph, feeds)
    refs = ort_run(model, feeds)
    for out, ref in zip(model.graph.output, refs, strict=True):
        assert_close(ours[out.name], ref, out.name)
    return graph


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def op_counts(graph: Graph) -> dict[str, int]:
    counts: dict[str, int] = {}
    for n in graph.nodes:
        counts[n.op] = counts.get(n.op, 0) + 1
    return counts


# -- convolution blocks ----------------------------------------------------------------------------------------------
def test_conv_bn_relu() -> None:
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 0, 0], strides=[2, 2]),
        helper.make_node("BatchNormalization", ["c", "s", "t", "m", "v"], ["bn"], epsilon=1e-3),
        helper.make_node("Relu", ["bn"], ["y"]),
    ]
    inits = {"w": rand(6, 5, 3, 3), "b": rand(6), "s": RNG.uniform(0.5, 2, 6).astype(np.float32), "t": rand(6),
             "m": rand(6), "v": RNG.uniform(0.5, 2, 6).astype(np.float32)}
    g = check(make_model(nodes, {"x": [1, 5, 9, 9]}, ["y"], inits))
    counts = op_counts(g)
    assert counts["CONV_2D"] == 1 and counts["MUL"] == 1 and counts["ADD"] == 1 and counts["RELU"] == 1
    # one transpose in (graph input is NCHW) and one out (graph output is NCHW)
    assert counts["TRANSPOSE"] == 2
    assert g.tensors[g.nodes[1].inputs[1]].shape == (6, 3, 3, 5)  # OHWI weights


def test_depthwise_same_upper_prelu() -> None:
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], group=8, auto_pad="SAME_UPPER", strides=[2, 2],
                         kernel_shape=[3, 3]),
        helper.make_node("PRelu", ["c", "slope"], ["y"]),
    ]
    inits = {"w": rand(8, 1, 3, 3), "slope": RNG.uniform(0, 0.5, (8, 1, 1)).astype(np.float32)}
    g = check(make_model(nodes, {"x": [1, 8, 10, 7]}, ["y"], inits))
    conv = next(n for n in g.nodes if n.op == "CONV_2D")
    assert conv.attrs["groups"] == 8 and tuple(conv.attrs["pads"]) == (0, 1, 1, 1)
    prelu = next(n for n in g.nodes if n.op == "PRELU")
    assert g.tensors[prelu.inputs[1]].shape == (1, 1, 1, 8)  # slope re-broadcast for NHWC


def test_conv_1d_and_dilated() -> None:
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[2, 1], dilations=[2], strides=[1])]
    check(make_model(nodes, {"x": [2, 3, 11]}, ["y"], {"w": rand(4, 3, 3), "b": rand(4)}))


@pytest.mark.parametrize("kw", [
    {"strides": [2, 2], "output_padding": [1, 0], "pads": [1, 0, 0, 1]},
    {"strides": [2, 2], "group": 2},
    {"strides": [2, 2], "output_shape": [13, 12]},
    {"strides": [2, 2], "output_shape": [10, 9]},  # odd total padding: the extra pixel goes to the beginning
    {"strides": [2, 1], "auto_pad": "SAME_UPPER", "dilations": [1, 2]},
])
def test_conv_transpose(kw: dict[str, Any]) -> None:
    nodes = [helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], **kw)]
    check(make_model(nodes, {"x": [1, 4, 6, 5]}, ["y"], {"w": rand(4, 3, 3, 3), "b": rand(3 * kw.get("group", 1))}))


def test_gemm_after_global_pool_and_flatten() -> None:
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("GlobalAveragePool", ["c"], ["p"]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "fc", "bias"], ["y"], transB=1, alpha=0.5, beta=2.0),
    ]
    g = check(make_model(nodes, {"x": [1, 3, 8, 8]}, ["y"], {"w": rand(16, 3, 3, 3), "fc": rand(10, 16),
                                                            "bias": rand(10)}))
    assert "FULLY_CONNECTED" in op_counts(g) and "MATMUL" not in op_counts(g)


def test_gemm_runtime_b_and_matrix_c() -> None:
    nodes = [helper.make_node("Gemm", ["a", "b", "c"], ["y"], transA=1, alpha=1.5, beta=0.5)]
    check(make_model(nodes, {"a": [4, 3], "b": [4, 5]}, ["y"], {"c": rand(3, 5)}))


def test_matmul_batched_and_const() -> None:
    nodes = [helper.make_node("MatMul", ["a", "w"], ["h"]), helper.make_node("MatMul", ["h", "b"], ["y"])]
    g = check(make_model(nodes, {"a": [2, 3, 4], "b": [2, 6, 5]}, ["y"], {"w": rand(4, 6)}))
    assert op_counts(g) == {"FULLY_CONNECTED": 1, "MATMUL": 1}


# -- layout ------------------------------------------------------------------------------------------------------------
def test_layout_sensitive_reshape_of_4d() -> None:
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"]),
        helper.make_node("Reshape", ["c", "shape"], ["r"]),
        helper.make_node("Transpose", ["r"], ["y"], perm=[0, 2, 1]),
    ]
    inits = {"w": rand(4, 3, 1, 1), "shape": np.array([0, 4, -1], np.int64)}
    check(make_model(nodes, {"x": [1, 3, 5, 6]}, ["y"], inits))


def test_concat_over_channels_with_constant_broadcast() -> None:
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["a"]),
        helper.make_node("Conv", ["x", "w2"], ["b"]),
        helper.make_node("Concat", ["a", "b"], ["c"], axis=1),
        helper.make_node("Add", ["c", "bias"], ["d"]),  # [C,1,1] constant against NCHW
        helper.make_node("Softmax", ["d"], ["y"], axis=1),
    ]
    inits = {"w1": rand(2, 3, 1, 1), "w2": rand(5, 3, 3, 3), "bias": rand(7, 1, 1)}
    nodes[1].attribute.extend([helper.make_attribute("pads", [1, 1, 1, 1])])
    g = check(make_model(nodes, {"x": [1, 3, 6, 6]}, ["y"], inits))
    concat = next(n for n in g.nodes if n.op == "CONCATENATION")
    assert concat.attrs["axis"] == 3  # channels of NHWC
    assert op_counts(g)["TRANSPOSE"] == 2


def test_nhwc_exporter_transposes_cost_nothing() -> None:
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"]),
        helper.make_node("Transpose", ["c"], ["y"], perm=[0, 2, 3, 1]),
    ]
    g = check(make_model(nodes, {"x": [1, 3, 5, 5]}, ["y"], {"w": rand(4, 3, 1, 1)}))
    assert op_counts(g) == {"TRANSPOSE": 1, "CONV_2D": 1}  # only the input's


def test_layout_agnostic_ops_keep_nhwc() -> None:
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"]),
        helper.make_node("Pad", ["c", "pads"], ["p"], mode="reflect"),
        helper.make_node("Slice", ["p", "starts", "ends", "axes", "steps"], ["s"]),
        helper.make_node("ReduceMean", ["s"], ["m"], axes=[1], keepdims=1),
        helper.make_node("Sub", ["s", "m"], ["d"]),
        helper.make_node("Split", ["d", "split"], ["y1", "y2"], axis=2),
        helper.make_node("MaxPool", ["y1"], ["y3"], kernel_shape=[2, 2], ceil_mode=1),
    ]
    inits = {"w": rand(6, 3, 1, 1), "pads": np.array([0, 0, 1, 2, 0, 0, 2, 1], np.int64),
             "starts": np.array([-1, 1], np.int64), "ends": np.array([-100, 100], np.int64),
             "axes": np.array([3, 1], np.int64), "steps": np.array([-2, 2], np.int64),
             "split": np.array([3, 5], np.int64)}
    g = check(make_model(nodes, {"x": [1, 3, 5, 7]}, ["y1", "y2", "y3"], inits, opset=13))
    # one transpose in, one per graph output: nothing in between
    assert op_counts(g)["TRANSPOSE"] == 4


def test_pooling_variants() -> None:
    nodes = [
        helper.make_node("AveragePool", ["x"], ["a"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                         count_include_pad=1, ceil_mode=1),
        helper.make_node("AveragePool", ["x"], ["b"], kernel_shape=[3, 2], auto_pad="SAME_LOWER", strides=[2, 2]),
        helper.make_node("MaxPool", ["x"], ["c"], kernel_shape=[2, 2], dilations=[2, 2], pads=[1, 0, 1, 1]),
        helper.make_node("GlobalMaxPool", ["x"], ["d"]),
    ]
    check(make_model(nodes, {"x": [1, 3, 8, 9]}, ["a", "b", "c", "d"], opset=13))


# -- Resize and Softmax semantics --------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode,coord,nearest,use_sizes", [
    ("nearest", "asymmetric", "floor", False),
    ("nearest", "half_pixel", "round_prefer_ceil", True),
    ("linear", "half_pixel", "round_prefer_floor", False),
    ("linear", "align_corners", "round_prefer_floor", True),
    ("linear", "pytorch_half_pixel", "round_prefer_floor", True),
])
def test_resize(mode: str, coord: str, nearest: str, use_sizes: bool) -> None:
    inits = {"roi": np.zeros(0, np.float32)}
    if use_sizes:
        inits["scales"], inits["sizes"] = np.zeros(0, np.float32), np.array([1, 3, 7, 1], np.int64)
    else:
        inits["scales"] = np.array([1, 1, 2, 1.5], np.float32)
    node = helper.make_node("Resize", ["x", "roi", "scales"] + (["sizes"] if use_sizes else []), ["y"], mode=mode,
                            coordinate_transformation_mode=coord, nearest_mode=nearest)
    g = check(make_model([node], {"x": [1, 3, 4, 5]}, ["y"], inits))
    assert "RESIZE" in op_counts(g)


@pytest.mark.parametrize("scales", [[1, 1, 0.6, 0.6], [1, 1, 2, 3], [1, 1, 0.5, 1]])
@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_resize_opset10(mode: str, scales: list[float]) -> None:
    node = helper.make_node("Resize", ["x", "s"], ["y"], mode=mode)
    check(make_model([node], {"x": [1, 2, 5, 7]}, ["y"], {"s": np.array(scales, np.float32)}, opset=10))


def test_legacy_opset_attribute_forms() -> None:
    """Opset 9: Clip/Pad/Slice/Squeeze/Unsqueeze/ReduceMean take attributes, Upsample exists, Softmax coerces."""
    nodes = [
        helper.make_node("Clip", ["x"], ["a"], min=-0.5, max=0.5),
        helper.make_node("Pad", ["a"], ["b"], pads=[0, 0, 1, 0, 0, 0, 0, 2], mode="edge"),
        helper.make_node("Slice", ["b"], ["c"], starts=[1], ends=[-1], axes=[2]),
        helper.make_node("Upsample", ["c", "scales"], ["d"], mode="nearest"),
        helper.make_node("ReduceMean", ["d"], ["e"], axes=[3], keepdims=0),
        helper.make_node("Unsqueeze", ["e"], ["f"], axes=[0]),
        helper.make_node("Squeeze", ["f"], ["g"], axes=[0]),
        helper.make_node("Softmax", ["g"], ["y"]),
    ]
    check(make_model(nodes, {"x": [1, 3, 4, 5]}, ["y"], {"scales": np.array([1, 1, 2, 2], np.float32)}, opset=9))


def test_resize_cubic_is_unsupported_with_reason() -> None:
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="cubic", name="up")
    model = make_model([node], {"x": [1, 3, 4, 5]}, ["y"], {"scales": np.array([1, 1, 2, 2], np.float32)})
    with pytest.raises(UnsupportedOpError, match=r"Resize.*'up'.*cubic"):
        import_onnx(model)


@pytest.mark.parametrize("opset", [11, 13])
def test_softmax_opset_semantics(opset: int) -> None:
    # before opset 13, axis=1 on [2,3,4] is a softmax over the 12 flattened values of each batch row
    g = check(make_model([helper.make_node("Softmax", ["x"], ["y"], axis=1)], {"x": [2, 3, 4]}, ["y"],
                         opset=opset))
    assert ("RESHAPE" in op_counts(g)) == (opset < 13)


def test_depth_to_space_modes() -> None:
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]),
             helper.make_node("DepthToSpace", ["c"], ["y1"], blocksize=2, mode="DCR"),
             helper.make_node("DepthToSpace", ["c"], ["y2"], blocksize=2, mode="CRD")]
    check(make_model(nodes, {"x": [1, 3, 3, 4]}, ["y1", "y2"], {"w": rand(8, 3, 1, 1)}))


def test_elementwise_zoo_and_clip() -> None:
    nodes = [
        helper.make_node("Clip", ["x", "lo", "hi"], ["a"]),
        helper.make_node("HardSigmoid", ["a"], ["b"], alpha=0.3),
        helper.make_node("HardSwish", ["b"], ["c"]),
        helper.make_node("LeakyRelu", ["x"], ["d"], alpha=0.2),
        helper.make_node("Max", ["c", "d", "x"], ["e"]),
        helper.make_node("Div", ["e", "two"], ["f"]),
        helper.make_node("Pow", ["f", "two"], ["g"]),
        helper.make_node("Sigmoid", ["g"], ["h"]),
        helper.make_node("Mean", ["h", "x"], ["y"]),
    ]
    inits = {"lo": np.array(-0.5, np.float32), "hi": np.array(0.7, np.float32), "two": np.array(2.0, np.float32)}
    check(make_model(nodes, {"x": [2, 5]}, ["y"], inits, opset=14))


# -- constant folding and static shapes --------------------------------------------------------------------------------
def test_shape_subgraph_folds_away() -> None:
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "axes0"], ["n1"]),
        helper.make_node("Concat", ["n1", "minus1"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["r"]),
        helper.make_node("ConstantOfShape", ["target_shape"], ["ones"],
                         value=numpy_helper.from_array(np.array([1.0], np.float32))),
        helper.make_node("Mul", ["r", "ones"], ["y"]),
    ]
    inits = {"zero": np.array(0, np.int64), "axes0": np.array([0], np.int64), "minus1": np.array([-1], np.int64),
             "target_shape": np.array([1, 60], np.int64)}
    model = make_model(nodes, {"x": ["batch", 3, 4, 5]}, ["y"], inits)
    g = check(model, {"x": rand(1, 3, 4, 5)})
    assert op_counts(g) == {"RESHAPE": 1, "MUL": 1}


def test_freeze_inputs_and_input_shapes() -> None:
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["y"])]
    g = helper.make_graph(nodes, "t", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", "c"]),
                                       helper.make_tensor_value_info("shape", TensorProto.INT64, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(ConversionError, match=r"'x' dim 1 \('c'\)"):
        import_onnx(model, freeze_inputs={"shape": np.array([3, 2])})
    with pytest.raises(UnsupportedOpError, match=r"Reshape.*the target shape must be a constant"):
        import_onnx(model, input_shapes={"x": (2, 3)})  # an int64 input is a run-time tensor
    graph = import_onnx(model, input_shapes={"x": (2, 3)}, freeze_inputs={"shape": np.array([3, 2])})
    assert graph.inputs == ["x"] and graph.tensors["y"].shape == (3, 2)


# -- metadata and errors ----------------------------------------------------------------------------------------------
def test_metadata(tmp_path: Path) -> None:
    model = make_model([helper.make_node("Relu", ["x"], ["y"])], {"x": [1, 3, 4, 4]}, ["y"])
    pre = {"layout": "NCHW", "color": "BGR", "mean": [127.5] * 3, "std": [127.5] * 3}
    helper.set_model_props(model, {"wasmrt.preprocess.x": json.dumps(pre), "wasmrt.labels": '["a", "b"]',
                                   "wasmrt.task": "demo", "other": "ignored"})
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    g = import_onnx(path)
    assert g.metadata.source == "m.onnx" and g.metadata.producer == "onnx opset 13, wasmrt-tests"
    assert g.metadata.preprocess["x"].color == "BGR" and g.metadata.preprocess["x"].mean == (127.5,) * 3
    assert g.metadata.labels == ["a", "b"] and g.metadata.props == {"task": "demo"}


def test_unsupported_op_names_op_node_and_file(tmp_path: Path) -> None:
    model = make_model([helper.make_node("Det", ["x"], ["y"], name="the_det")], {"x": [2, 3, 3]}, ["y"])
    path = tmp_path / "det.onnx"
    onnx.save(model, path)
    with pytest.raises(UnsupportedOpError, match=r"det\.onnx: unsupported op 'Det' \(node 'the_det'\)") as e:
        import_onnx(path)
    assert e.value.op_type == "Det" and e.value.node == "the_det"


def test_maxpool_indices_unsupported() -> None:
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2])
    g = helper.make_graph([node], "t", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                           helper.make_tensor_value_info("i", TensorProto.INT64, None)])
    with pytest.raises(UnsupportedOpError, match="indices"):
        import_onnx(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]))


def test_truncated_and_garbage_files(tmp_path: Path) -> None:
    model = make_model([helper.make_node("Conv", ["x", "w"], ["y"])], {"x": [1, 3, 4, 4]}, ["y"],
                       {"w": rand(8, 3, 3, 3)})
    data = model.SerializeToString()
    for name, blob in (("cut.onnx", data[: len(data) // 2]), ("junk.onnx", b"\x08\x07garbage" * 10),
                       ("empty.onnx", b"")):
        (tmp_path / name).write_bytes(blob)
        with pytest.raises(ModelFormatError, match=name.replace(".", r"\.")):
            import_onnx(tmp_path / name)


def test_leading_symbolic_dim_defaults_to_one() -> None:
    model = make_model([helper.make_node("Relu", ["x"], ["y"])], {"x": ["batch", 3]}, ["y"])
    assert import_onnx(model).tensors["x"].shape == (1, 3)


def test_identity_output_and_constant_output() -> None:
    nodes = [helper.make_node("Identity", ["x"], ["y"]), helper.make_node("Shape", ["x"], ["s"])]
    g = helper.make_graph(nodes, "t", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                           helper.make_tensor_value_info("s", TensorProto.INT64, None)])
    graph = import_onnx(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]))
    out = evaluate(graph, {"x": rand(2, 3)})
    assert graph.outputs == ["y", "s"] and out["s"].tolist() == [2, 3]


# -- end to end through the converter and the .wrt interpreter ---------------------------------------------------------
def test_through_converter_and_interpreter(tmp_path: Path) -> None:
    from python_ref import Interpreter
    from wasmrt.compile.converter import convert

    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "s", "t", "m", "v"], ["bn"]),
             helper.make_node("Clip", ["bn", "lo", "hi"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["p"]),
             helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("Gemm", ["f", "fc"], ["y"], transB=1)]
    inits = {"w": rand(8, 3, 3, 3), "b": rand(8), "s": RNG.uniform(0.5, 2, 8).astype(np.float32), "t": rand(8),
             "m": rand(8), "v": RNG.uniform(0.5, 2, 8).astype(np.float32), "lo": np.array(0, np.float32),
             "hi": np.array(6, np.float32), "fc": rand(5, 8)}
    model = make_model(nodes, {"x": [1, 3, 8, 8]}, ["y"], inits)
    path = tmp_path / "small.onnx"
    onnx.save(model, path)
    x = rand(1, 3, 8, 8)
    ours = Interpreter(convert(path).data).run({"x": x})["y"]
    assert_close(ours, ort_run(model, {"x": x})[0], "y")


# -- real models -------------------------------------------------------------------------------------------------------
def _real_model(name: str) -> str:
    from wasmrt.zoo.models import CACHE

    for base in (CACHE, Path("/tmp/dl/x/rapidocr_onnxruntime/models")):
        if (base / name).is_file():
            return str(base / name)
    pytest.skip(f"{name} not available: run `python -m wasmrt.zoo.models fetch` (PyPI rapidocr-onnxruntime==1.4.4)")


def _text_image(h: int, w: int) -> np.ndarray:
    """A BGR-normalized [1,3,h,w] image of dark text on white, as PP-OCR expects (x/255 - 0.5) / 0.5."""
    pil = pytest.importorskip("PIL.Image")
    draw_mod = pytest.importorskip("PIL.ImageDraw")
    font_mod = pytest.importorskip("PIL.ImageFont")
    im = pil.new("RGB", (w, h), "white")
    draw_mod.Draw(im).text((6, h // 5), "Hello wasmrt 2024", fill="black", font=font_mod.load_default(size=h // 3))
    x = np.asarray(im, np.float32)[:, :, ::-1] / 127.5 - 1.0
    return np.ascontiguousarray(x.transpose(2, 0, 1)[None])


@pytest.mark.slow
@pytest.mark.parametrize("name,shape", [
    ("ch_ppocr_mobile_v2.0_cls_infer.onnx", (1, 3, 48, 192)),
    ("ch_PP-OCRv4_det_infer.onnx", (1, 3, 96, 320)),
    ("ch_PP-OCRv4_rec_infer.onnx", (1, 3, 48, 320)),  # not bundled: runs when the unpacked wheel is around
])
def test_ppocr_models(name: str, shape: tuple[int, ...]) -> None:
    path = _real_model(name)
    graph = import_onnx(path, input_shapes={"x": shape})
    assert graph.metadata.source == name and graph.metadata.producer.startswith("onnx opset 1")
    x = _text_image(shape[2], shape[3])
    ours = evaluate(graph, {"x": x})
    refs = ort_run(path, {"x": x})
    assert float(np.abs(refs[0]).max()) > 0.1  # the image must actually excite the model
    for out, ref in zip(graph.outputs, refs, strict=True):
        assert_close(ours[out], ref, f"{name}:{out}")
