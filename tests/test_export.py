"""The peer exporters (wasmrt/export): each export is run by its peer and compared with python_ref.

TFLite runs in LiteRT, ONNX in onnxruntime (both layouts), TF.js in Node with tfjs-backend-wasm (the bench's Node
runner, peers installed on demand into the user cache).
"""

from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest

from python_ref.opdefs import CoordMode, PadMode, ResizeMode
from wasmrt.compile.ir import Graph
from wasmrt.export.common import (
    ExportError,
    SpatialPads,
    max_rel_error,
    random_feeds,
    run_reference,
    window_padding,
)
from wasmrt.export.onnx_export import export_onnx
from wasmrt.export.tfjs import export_tfjs
from wasmrt.export.tflite import export_tflite

TOL = 1e-4


def _w(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return (rng.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32)


def vision_graph(seed: int = 0) -> Graph:
    """A small network touching every op the bundled models use, plus a few more, with awkward pads and clamps."""
    rng = np.random.default_rng(seed)
    g = Graph()
    x = g.add_input("image", (1, 3, 17, 17))
    (x,) = g.add_node("TRANSPOSE", [x], {"perm": (0, 2, 3, 1)})  # NCHW input, as PyTorch exports give
    # stride-2 conv with PyTorch's symmetric pads (not TF SAME): a PAD op in TFLite, EXPLICIT in TF.js
    (x,) = g.add_node("CONV_2D", [x, g.add_const("w0", _w(rng, 8, 3, 3, 3)), g.add_const("b0", _w(rng, 8))],
                      {"strides": (2, 2), "pads": (1, 1, 1, 1), "act_min": 0.0, "act_max": 6.0})
    (y,) = g.add_node("CONV_2D", [x, g.add_const("w1", _w(rng, 16, 3, 3, 1)), g.add_const("b1", _w(rng, 16))],
                      {"groups": 8, "pads": (1, 1, 1, 1), "act_min": 0.0})  # depthwise, multiplier 2
    (y,) = g.add_node("CONV_2D", [y, g.add_const("w2", _w(rng, 8, 1, 1, 16))], {})
    (x,) = g.add_node("ADD", [x, y], {"act_min": -1.0, "act_max": 2.0})  # a clamp no format fuses
    (x,) = g.add_node("PRELU", [x, g.add_const("slope", rng.uniform(0, 0.3, (1, 1, 8)).astype(np.float32))])
    (x,) = g.add_node("MAX_POOL_2D", [x], {"kernel": (3, 3), "strides": (2, 2), "pads": (1, 1, 1, 1)})
    (x,) = g.add_node("PAD", [x], {"pads": (0, 0, 0, 0, 0, 0, 0, 4), "mode": PadMode.CONSTANT})
    (x,) = g.add_node("HARD_SWISH", [x])
    (a,) = g.add_node("AVERAGE_POOL_2D", [x], {"kernel": (3, 3), "pads": (1, 1, 1, 1)})
    (b,) = g.add_node("SIGMOID", [x])
    (x,) = g.add_node("CONCATENATION", [a, b], {"axis": 3})
    (x,) = g.add_node("RESIZE", [x], {"size": (10, 10), "mode": ResizeMode.BILINEAR, "coord": CoordMode.HALF_PIXEL})
    (x,) = g.add_node("MEAN", [x], {"axes": (1, 2), "keepdims": True})
    (x,) = g.add_node("RESHAPE", [x], {"shape": (1, 24)})
    (x,) = g.add_node("FULLY_CONNECTED", [x, g.add_const("fw", _w(rng, 10, 24)), g.add_const("fb", _w(rng, 10))],
                      {"act_min": 0.0}, outputs=["logits"])
    (p,) = g.add_node("SOFTMAX", [x], {"axis": -1}, outputs=["probs"])
    g.outputs += [x, p]
    g.validate()
    return g


def detector_graph(seed: int = 1) -> Graph:
    """BlazeFace-like head: a SAME conv, reshape + concat of two branches, a reversing slice, depth_to_space."""
    rng = np.random.default_rng(seed)
    g = Graph()
    x = g.add_input("input", (1, 16, 16, 4))
    (x,) = g.add_node("CONV_2D", [x, g.add_const("w", _w(rng, 8, 5, 5, 4))],
                      {"strides": (2, 2), "pads": (1, 1, 2, 2), "act_min": 0.0})  # TF SAME split
    (d,) = g.add_node("DEPTH_TO_SPACE", [x], {"block": 2})
    (s,) = g.add_node("SLICE", [d], {"starts": (0, 0, 15, 1), "ends": (1, 16, -1, 2), "steps": (1, 1, -1, 1)})
    (r1,) = g.add_node("RESHAPE", [s], {"shape": (1, 256, 1)})
    (m,) = g.add_node("MAX_POOL_2D", [x], {"kernel": (2, 2), "strides": (2, 2)})
    (r2,) = g.add_node("RESHAPE", [m], {"shape": (1, 32, 4)})
    (r2,) = g.add_node("GATHER", [r2, g.add_const("idx", np.array([3], np.int32))], {"axis": 2})
    (y,) = g.add_node("CONCATENATION", [r1, r2], {"axis": 1}, outputs=["boxes"])
    g.outputs.append(y)
    g.validate()
    return g


GRAPHS = {"vision": vision_graph, "detector": detector_graph}


def test_window_padding_maps_explicit_pads():
    # TF SAME for a stride-2 3x3 on an even input pads only the bottom/right
    assert window_padding((224, 224), (112, 112), (3, 3), (2, 2), (1, 1), (0, 0, 1, 1)).padding == "SAME"
    # PyTorch's symmetric pad 1: the bottom pad is never read, the top one is: not SAME
    sp = window_padding((224, 224), (112, 112), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1))
    assert sp.padding == "VALID" and sp.extra == (1, 1, 0, 0)
    assert window_padding((7, 7), (5, 5), (3, 3), (1, 1), (1, 1), (0, 0, 0, 0)) == SpatialPads("VALID", None)


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_tflite_export_matches_reference(name):
    from ai_edge_litert.interpreter import Interpreter

    g = GRAPHS[name]()
    feeds = random_feeds(g)
    ref = run_reference(g, feeds)
    it = Interpreter(model_content=export_tflite(g), num_threads=1)
    it.allocate_tensors()
    for d, k in zip(it.get_input_details(), g.inputs, strict=True):
        it.set_tensor(d["index"], feeds[k])
    it.invoke()
    for d, k in zip(it.get_output_details(), g.outputs, strict=True):
        assert d["name"] == k
        assert max_rel_error(it.get_tensor(d["index"]), ref[k]) < TOL, k


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_onnx_export_matches_reference(name, layout):
    import onnxruntime as ort

    g = GRAPHS[name]()
    feeds = random_feeds(g)
    ref = run_reference(g, feeds)
    sess = ort.InferenceSession(export_onnx(g, layout=layout), providers=["CPUExecutionProvider"])
    for k, got in zip(g.outputs, sess.run(g.outputs, feeds), strict=True):
        assert max_rel_error(got, ref[k]) < TOL, k


def test_onnx_nchw_layout_drops_the_input_transpose():
    import onnx

    m = onnx.load_from_string(export_onnx(vision_graph()))
    ops = [n.op_type for n in m.graph.node]
    assert ops[0] == "Conv"  # the NCHW -> NHWC transpose of the input cancels against the layout change
    assert ops.count("Transpose") <= 1  # only before the flatten


def test_tfjs_topology_names_and_weights(tmp_path):
    g = vision_graph()
    path = export_tfjs(g, tmp_path)
    model = json.loads(path.read_text())
    nodes = model["modelTopology"]["node"]
    names = [n["name"] for n in nodes]
    assert len(names) == len(set(names)) and not any(":" in n for n in names)
    ops = {n["op"] for n in nodes}
    assert {"_FusedConv2D", "FusedDepthwiseConv2dNative", "_FusedMatMul", "Placeholder", "Const"} <= ops
    manifest = model["weightsManifest"][0]["weights"]
    size = sum(int(np.prod(w["shape"])) * 4 for w in manifest)
    assert size == (tmp_path / "weights.bin").stat().st_size
    assert set(model["userDefinedMetadata"]["wasmrt"]["outputs"]) == {"logits", "probs"}


def test_unsupported_op_is_a_readable_error():
    g = Graph()
    x = g.add_input("x", (1, 4, 4, 2))
    (y,) = g.add_node("PAD", [x], {"pads": (0, 1, 1, 0, 0, 1, 1, 0), "mode": PadMode.EDGE})
    g.outputs.append(y)
    with pytest.raises(ExportError, match="EDGE"):
        export_tflite(g)


@pytest.mark.slow
def test_tfjs_and_wasm_peers_match_reference(tmp_path):
    """TF.js graph model in tfjs-backend-wasm, .onnx in onnxruntime-web, .tflite in LiteRT.js, all in Node."""
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed")
    from wasmrt.bench import peers

    bench_js = peers.ensure_npm_peers(lambda _m: None)
    g = vision_graph()
    feeds = random_feeds(g)
    ref = run_reference(g, feeds)
    export_tfjs(g, tmp_path / "tfjs")
    export_onnx(g, tmp_path / "model.onnx")
    export_tflite(g, tmp_path / "model.tflite")
    feeds["image"].tofile(tmp_path / "in.bin")
    job = {"inputs": [{"name": "image", "shape": [1, 3, 17, 17], "file": "in.bin"}], "outputs": g.outputs,
           "warmup": 0, "rounds": 1,
           "engines": [{"id": "tfjs", "kind": "tfjs", "model": "tfjs/model.json"},
                       {"id": "ort", "kind": "ort", "model": "model.onnx"},
                       {"id": "litert", "kind": "litert", "variant": "compat", "model": "model.tflite"}]}
    (tmp_path / "job.json").write_text(json.dumps(job))
    subprocess.run([*peers.node_command(), str(bench_js / "node_runner.mjs"), str(tmp_path / "job.json"),
                    str(tmp_path / "out.json")], check=True, capture_output=True, cwd=bench_js, timeout=300)
    import base64

    res = json.loads((tmp_path / "out.json").read_text())["engines"]
    for eid, r in res.items():
        assert "error" not in r, f"{eid}: {r.get('error')}"
        for k, o in zip(g.outputs, r["outputs"], strict=True):
            assert max_rel_error(np.frombuffer(base64.b64decode(o), np.float32), ref[k]) < TOL, (eid, k)


def test_tflite_operators_are_in_execution_order(tmp_path):
    """Every operator reads only graph inputs, constants or tensors written by earlier operators (XNNPACK would
    reorder a wrong file silently, the plain interpreter and our importer would not)."""
    from wasmrt.compile.converter import load_graph

    for name, make in GRAPHS.items():
        data = export_tflite(make())
        path = tmp_path / f"{name}.tflite"
        path.write_bytes(data)
        load_graph(path)  # raises when a tensor is read before it is produced
