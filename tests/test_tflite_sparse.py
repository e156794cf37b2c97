"""TFLite sparse tensors (SparsityParameters + DENSIFY): small models against LiteRT (dense and CSR dimensions, block
maps, int32/uint16/uint8 index vectors, fp16 and fp32 values), hostile encodings refused with ModelFormatError, and
MediaPipe's two sparse models converted and run on every engine against LiteRT within 1e-4 relative."""

from __future__ import annotations

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as fb
from test_engine import ENGINE_IDS, ENGINES, engine_model
from test_tflite_import import assert_close, model_file
from tflite_oracle import ModelBuilder, options, run_litert

from python_ref import Interpreter
from python_ref.wrt_file import read_wrt
from wasmrt.compile.converter import convert
from wasmrt.compile.tflite.importer import import_tflite
from wasmrt.compile.tflite.sparse import encode
from wasmrt.engines import load
from wasmrt.errors import ModelFormatError, UnsupportedOpError

SPARSE_MODELS = ("face_detection_full_range_sparse.tflite", "pose_detection.tflite")


def sparse_conv_model(w: np.ndarray, dtype: np.dtype, block: int, index_type: str,
                      edit: object = None) -> bytes:
    """x [1,6,6,Cin] -> CONV_2D whose weights are a sparse constant through DENSIFY (then DEQUANTIZE for fp16)."""
    b = ModelBuilder()
    x = b.input("x", (1, 6, 6, w.shape[3]))
    sp, values = encode(fb, w.astype(dtype), block, index_type)
    if edit is not None:
        values = edit(sp, values)  # type: ignore[operator]
    ws = b.const("ws", np.asarray(values, dtype))
    b.graph.tensors[ws].shape, b.graph.tensors[ws].sparsity = list(w.shape), sp
    wd = b.tensor("wd", w.shape, dtype)
    b.op("DENSIFY", [ws], [wd])
    if dtype == np.float16:
        w32 = b.tensor("w32", w.shape)
        b.op("DEQUANTIZE", [wd], [w32])
        wd = w32
    y = b.tensor("y", (1, 6, 6, w.shape[0]))
    b.op("CONV_2D", [x, wd, b.const("bias", np.linspace(-1, 1, w.shape[0]).astype(np.float32))], [y],
         options("Conv2DOptions", padding=0, strideW=1, strideH=1, dilationWFactor=1, dilationHFactor=1))
    b.output(y)
    return b.build()


def sparse_weights(rng: np.random.Generator, shape: tuple[int, ...], block: int, density: float) -> np.ndarray:
    rows = shape[0] // (block or 1)
    keep = np.repeat(rng.random((rows, *shape[1:])) < density, block or 1, axis=0)
    return (rng.standard_normal(shape) * keep).astype(np.float32)


@pytest.mark.parametrize(("block", "index_type", "dtype"), [(0, "int32", np.float32), (0, "uint8", np.float16),
                                                            (4, "uint16", np.float32), (4, "uint8", np.float16),
                                                            (2, "int32", np.float32)])
def test_sparse_weights_match_litert(block: int, index_type: str, dtype: type) -> None:
    rng = np.random.default_rng(block + len(index_type))
    w = sparse_weights(rng, (8, 3, 3, 5), block, 0.3)
    data = sparse_conv_model(w, np.dtype(dtype), block, index_type)
    x = rng.standard_normal((1, 6, 6, 5)).astype(np.float32)
    (ref,) = run_litert(data, [x])
    g = import_tflite(data)
    assert [n.op for n in g.nodes] == ["CONV_2D"]
    np.testing.assert_array_equal(g.tensors[g.nodes[0].inputs[1]].data, w.astype(dtype).astype(np.float32))
    assert_close(g.evaluate({g.inputs[0]: x})[g.outputs[0]], ref, "sparse conv")


def _bad(what: str):
    def seg(sp: object, v: np.ndarray) -> np.ndarray:
        dm = sp.dimMetadata[3]  # type: ignore[attr-defined]
        if what == "segments decrease":
            dm.arraySegments.values = dm.arraySegments.values[::-1].copy()
        elif what == "index out of range":
            dm.arrayIndices.values[0] = 5
        elif what == "values short":
            return v[:-1]
        elif what == "traversal order":
            sp.traversalOrder = [0, 0, 1, 2]  # type: ignore[attr-defined]
        elif what == "dense size":
            sp.dimMetadata[1].denseSize = 4  # type: ignore[attr-defined]
        elif what == "segment count":
            dm.arraySegments.values = dm.arraySegments.values[:-2].copy()
        return v
    return seg


@pytest.mark.parametrize(("what", "message"), [
    ("segments decrease", "segments must start at 0, never decrease"),
    ("index out of range", "an index is outside dimension 3"),
    ("values short", "the buffer holds \\d+ values, the sparse encoding \\d+"),
    ("traversal order", "traversal order \\[0, 0, 1, 2\\] is not a permutation"),
    ("dense size", "dense dimension 1 has size 4, expected 3"),
    ("segment count", "71 segment bounds for 72 parent positions"),
])
def test_hostile_sparse_encoding_is_a_format_error(what: str, message: str) -> None:
    w = sparse_weights(np.random.default_rng(3), (8, 3, 3, 5), 0, 0.5)
    data = sparse_conv_model(w, np.dtype(np.float32), 0, "int32", _bad(what))
    with pytest.raises(ModelFormatError, match=f"sparse tensor 'ws': (level \\d: )?{message}"):
        import_tflite(data)


def test_sparse_expansion_is_bounded() -> None:
    """A few bytes of sparsity metadata may not stand for a huge dense tensor."""
    w = np.zeros((8, 1, 1, 5), np.float32)

    def huge(sp: object, v: np.ndarray) -> np.ndarray:
        return v
    data = sparse_conv_model(w, np.dtype(np.float32), 0, "int32", huge)
    from tflite_oracle import fb as tfb
    m = tfb.ModelT.InitFromPackedBuf(bytearray(data), 0)
    t = next(t for t in m.subgraphs[0].tensors if t.name == b"ws")
    t.shape = [1 << 14, 1, 1, 1 << 14]
    b = __import__("flatbuffers").Builder(1024)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    with pytest.raises(ModelFormatError, match="would expand to more than 67108864 values"):
        import_tflite(bytes(b.Output()))


def test_sparse_tensor_read_without_densify_is_refused() -> None:
    w = sparse_weights(np.random.default_rng(4), (4, 1, 1, 4), 0, 0.5)
    data = sparse_conv_model(w, np.dtype(np.float32), 0, "int32")
    m = fb.ModelT.InitFromPackedBuf(bytearray(data), 0)
    g = m.subgraphs[0]
    g.operators[1].inputs[1] = g.operators[0].inputs[0]  # the conv reads the sparse constant itself
    g.operators = g.operators[1:]
    b = __import__("flatbuffers").Builder(1024)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    with pytest.raises(UnsupportedOpError, match="tensor 'ws' is sparse; TFLite reads sparse tensors through DENSIFY"):
        import_tflite(bytes(b.Output()))


# -- MediaPipe's sparse models, every engine ----------------------------------------------------------------------
@pytest.fixture(scope="module", params=SPARSE_MODELS)
def mediapipe_sparse(request: pytest.FixtureRequest) -> tuple[str, dict[str, bytes], np.ndarray, list[np.ndarray]]:
    path = model_file(request.param)
    g = import_tflite(path)
    x = np.random.default_rng(7).uniform(-1, 1, g.tensors[g.inputs[0]].shape).astype(np.float32)
    refs = run_litert(path.read_bytes(), [x])
    # as converted (fp16 weights, stored sparse where that is smaller), and all fp32 (most weights then sparse)
    files = {w: convert(path, weights=w).data for w in ("auto", "fp32")}
    return request.param, files, x, refs


def test_mediapipe_sparse_model_converts(mediapipe_sparse: tuple) -> None:
    name, files, _, _ = mediapipe_sparse
    m = read_wrt(files["fp32"])
    assert sum(t.sparse is not None for t in m.tensors) >= 30, name  # 1x4 blocks of their 70-75% zeros
    assert {op.op for op in m.ops} <= {"CONV_2D", "ADD", "PAD", "MAX_POOL_2D", "RESHAPE", "CONCATENATION", "RESIZE",
                                       "DEPTH_TO_SPACE", "RELU"}


@pytest.mark.slow
@pytest.mark.parametrize(("engine", "variant"), [("ref", None), *ENGINES], ids=["ref", *ENGINE_IDS])
def test_mediapipe_sparse_model_matches_litert(mediapipe_sparse: tuple, engine: str, variant: str | None) -> None:
    name, files, x, refs = mediapipe_sparse
    for weights, data in files.items():
        policies = ["auto"] if engine == "ref" else ["auto", "always"]
        for policy in policies:
            if engine == "ref":
                m = Interpreter(data)
            else:
                engine_model(data, engine, variant)
                m = load(data, engine, variant, sparse=policy)
            outs = m.run({m.inputs[0].name: x})
            for (k, got), ref in zip(outs.items(), refs, strict=True):
                assert_close(got, ref, f"{name} {weights} {engine}-{variant} sparse={policy} {k}")
