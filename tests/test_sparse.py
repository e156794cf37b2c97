"""Block-sparse weights: python_ref's encoding, the converter's detection and pruning, and the C engine's sparse
variant of CONV_2D and FULLY_CONNECTED against python_ref on every native kernel path and wasm variant, with the
sparse kernels forced, the dense path forced and the engine's own choice (the reader checks and hostile files are
in tests/hostile_models.py)."""

from __future__ import annotations

import ctypes
import re
from pathlib import Path

import numpy as np
import pytest
from test_engine import ENGINE_IDS, ENGINES, close, engine_model

from python_ref import Interpreter, sparse
from python_ref.wrt_file import read_wrt
from wasmrt.compile.converter import convert
from wasmrt.compile.ir import Graph
from wasmrt.compile.planner import plan_memory
from wasmrt.compile.sparsity import first_layers, layers, prune, prune_weight, sparse_tensors
from wasmrt.compile.writer import write_wrt
from wasmrt.engines import load
from wasmrt.errors import OutOfMemoryError


def block_sparse(rng: np.random.Generator, shape: tuple[int, ...], sparsity: float) -> np.ndarray:
    rows, cols = sparse.matrix_shape(shape)
    keep = rng.random((sparse.block_rows(rows), cols)) >= sparsity
    w = rng.uniform(-1, 1, (sparse.block_rows(rows) * 4, cols)) * np.repeat(keep, 4, axis=0)
    return w[:rows].astype(np.float32).reshape(shape)


# -- python_ref: the encoding is exactly the dense tensor ------------------------------------------------------------
@pytest.mark.parametrize("shape", [(1,), (4, 3), (10, 12), (7, 3, 3, 5), (8, 1, 1, 16), (0, 5), (5, 0), (3, 1, 2)])
def test_encode_expand_round_trip(shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(1)
    w = block_sparse(rng, shape, 0.5) if len(shape) > 1 else np.array([0.5], np.float32)
    enc = sparse.encode(w)
    rows, _ = sparse.matrix_shape(shape)
    assert len(enc.row_starts) == sparse.block_rows(rows) + 1 and enc.values.shape == (enc.n_blocks, 4)
    assert sparse.check(shape, enc.row_starts, enc.columns, enc.values.nbytes, 4, "float32") is None
    assert sparse.check_padding(shape, enc) is None
    np.testing.assert_array_equal(sparse.expand(shape, enc), w)
    assert enc.n_blocks == int(sparse.block_mask(w).sum())


def test_block_sparsity_counts_whole_blocks() -> None:
    w = np.zeros((8, 3), np.float32)
    w[1, 0] = 1.0  # one non-zero makes its block of 4 rows non-zero
    w[7, 2] = -2.0
    assert sparse.block_sparsity(w) == pytest.approx(4 / 6)


# -- the converter: which weights are stored sparse, pruning --------------------------------------------------------
def conv_fc_graph(rng: np.random.Generator, sparsities: dict[str, float]) -> Graph:
    """x [1,8,8,16] -> conv 1x1 (16->24) -> conv 3x3 (24->20) -> dw 3x3 -> reshape -> fc (->12), ReLU6 fused."""
    g = Graph()
    x = g.add_input("x", (1, 8, 8, 16))
    specs = [("pw", (24, 1, 1, 16), {}), ("conv", (20, 3, 3, 24), {"pads": (1, 1, 1, 1), "strides": (2, 2)}),
             ("dw", (20, 3, 3, 1), {"pads": (1, 1, 1, 1), "groups": 20})]
    for name, shape, attrs in specs:
        w = g.add_const(f"{name}/w", block_sparse(rng, shape, sparsities.get(name, 0.0)))
        b = g.add_const(f"{name}/b", rng.uniform(-0.5, 0.5, shape[0]).astype(np.float32))
        (x,) = g.add_node("CONV_2D", [x, w, b], {**attrs, "act_min": 0.0, "act_max": 6.0}, name=name)
    (x,) = g.add_node("RESHAPE", [x], {"shape": (1, 4 * 4 * 20)}, name="flat")
    w = g.add_const("fc/w", block_sparse(rng, (12, 320), sparsities.get("fc", 0.0)))
    (y,) = g.add_node("FULLY_CONNECTED", [x, w], name="fc", outputs=["y"])
    g.outputs.append(y)
    return g


def test_detection_threshold_per_op_kind() -> None:
    rng = np.random.default_rng(2)
    g = conv_fc_graph(rng, {"pw": 0.1, "conv": 0.6, "dw": 0.4, "fc": 0.9})
    assert sparse_tensors(g, "fp32") == {"conv/w", "fc/w"}  # pw below 0.2; dw (grouped) below 0.5
    g2 = conv_fc_graph(rng, {"dw": 0.7})
    assert sparse_tensors(g2, "fp32") == {"dw/w"}  # grouped: stored sparse when clearly smaller, run dense
    # a weight any other op reads stays dense (the format allows sparse weights of CONV_2D/FULLY_CONNECTED only)
    w = g.tensors["fc/w"]
    (z,) = g.add_node("ADD", [g.add_input("z", w.shape), "fc/w"], name="uses_w")
    g.outputs.append(z)
    assert "fc/w" not in sparse_tensors(g, "fp32")


def test_detection_weighs_fp16_storage() -> None:
    """fp16 weights (lossless 'auto') at 25% block sparsity are smaller dense: 8 bytes per block vs 8 + 4."""
    rng = np.random.default_rng(3)
    g = conv_fc_graph(rng, {"fc": 0.25})
    g.tensors["fc/w"].data = g.tensors["fc/w"].data.astype(np.float16).astype(np.float32)
    assert "fc/w" in sparse_tensors(g, "fp32") and "fc/w" not in sparse_tensors(g, "auto")


def test_prune_reaches_the_sparsity_by_block_magnitude() -> None:
    rng = np.random.default_rng(4)
    w = rng.standard_normal((10, 3, 3, 8)).astype(np.float32)
    p = prune_weight(w, 0.75)
    mask = sparse.block_mask(p)
    assert sparse.block_sparsity(p) == pytest.approx(round(0.75 * mask.size) / mask.size)
    kept = sparse.block_mask(w) & mask
    np.testing.assert_array_equal(p.reshape(10, -1)[np.repeat(kept, 4, axis=0)[:10]],
                                  w.reshape(10, -1)[np.repeat(kept, 4, axis=0)[:10]])  # kept blocks unchanged
    norms = np.sqrt((np.concatenate([w.reshape(10, -1), np.zeros((2, 72), np.float32)]).reshape(3, 4, 72) ** 2)
                    .sum(axis=1))
    assert norms[mask].min() >= norms[~mask].max()  # the smallest blocks went


def test_prune_skips_first_and_grouped_layers() -> None:
    g = conv_fc_graph(np.random.default_rng(5), {})
    assert first_layers(g) == {"pw"}
    report = {before.node: after for before, after in prune(g, 0.8)}
    assert report["pw"] is None and report["dw"] is None
    assert report["conv"].sparsity == pytest.approx(0.8, abs=0.01) and report["fc"].sparsity == pytest.approx(0.8)
    with pytest.raises(ValueError, match="block '2x2' is not supported"):
        prune(g, 0.5, block="2x2")
    with pytest.raises(ValueError, match="names no layer"):
        prune(g, 0.5, skip={"nope"})


# -- the engine: sparse == dense on every path --------------------------------------------------------------------
def sparse_graphs() -> dict[str, tuple[Graph, dict[str, np.ndarray]]]:
    rng = np.random.default_rng(6)
    out = {}

    def conv(name: str, x_shape: tuple[int, ...], w_shape: tuple[int, ...], attrs: dict, s: float = 0.6,
             residual: tuple[int, ...] | None = None) -> None:
        """residual: the output's shape, added as CONV_2D's input r (a fused residual ADD) before the clamp"""
        g = Graph()
        x = g.add_input("x", x_shape)
        w = g.add_const("w", block_sparse(rng, w_shape, s))
        b = g.add_const("b", rng.uniform(-1, 1, w_shape[0]).astype(np.float32))
        ins = [x, w, b] + ([g.add_input("r", residual)] if residual else [])
        (y,) = g.add_node("CONV_2D", ins, {"act_min": -1.0, "act_max": 1.5, **attrs}, name="c", outputs=["y"])
        g.outputs.append(y)
        feeds = {"x": rng.uniform(-1, 1, x_shape).astype(np.float32)}
        if residual:
            feeds["r"] = rng.uniform(-1, 1, residual).astype(np.float32)
        out[name] = (g, feeds)

    def fc(name: str, x_shape: tuple[int, ...], n: int, s: float = 0.6, bias: bool = True) -> None:
        g = Graph()
        x = g.add_input("x", x_shape)
        ins = [x, g.add_const("w", block_sparse(rng, (n, x_shape[-1]), s))]
        if bias:
            ins.append(g.add_const("b", rng.uniform(-1, 1, n).astype(np.float32)))
        (y,) = g.add_node("FULLY_CONNECTED", ins, name="fc", outputs=["y"])
        g.outputs.append(y)
        out[name] = (g, {"x": rng.uniform(-1, 1, x_shape).astype(np.float32)})

    conv("pointwise", (1, 7, 9, 24), (36, 1, 1, 24), {})
    conv("pointwise_rows_not_x4", (1, 5, 5, 9), (13, 1, 1, 9), {})
    conv("pointwise_strided_padded", (1, 9, 8, 16), (20, 1, 1, 16), {"strides": (2, 2), "pads": (1, 0, 1, 1)})
    conv("conv3x3", (1, 10, 11, 12), (19, 3, 3, 12), {"pads": (1, 1, 1, 1)})
    conv("conv3x3_stride2_dilated", (1, 13, 12, 8), (16, 3, 3, 8), {"strides": (2, 2), "dilations": (2, 1),
                                                                   "pads": (2, 1, 1, 2)})
    conv("conv5x5_batch2", (2, 9, 9, 5), (7, 5, 5, 5), {"pads": (2, 2, 2, 2)})
    conv("conv3x3_one_pixel", (1, 3, 3, 10), (12, 3, 3, 10), {})  # one output pixel: the gemv path, gathered
    conv("pointwise_one_pixel", (1, 1, 1, 40), (30, 1, 1, 40), {})
    conv("depthwise", (1, 6, 6, 16), (16, 3, 3, 1), {"groups": 16, "pads": (1, 1, 1, 1)})  # runs dense
    conv("grouped", (1, 6, 6, 16), (24, 3, 3, 4), {"groups": 4, "pads": (1, 1, 1, 1)})  # runs dense
    conv("pointwise_residual", (1, 7, 9, 24), (36, 1, 1, 24), {}, residual=(1, 7, 9, 36))
    conv("conv3x3_residual", (1, 10, 11, 12), (19, 3, 3, 12), {"pads": (1, 1, 1, 1)}, residual=(1, 10, 11, 19))
    conv("one_pixel_residual", (1, 1, 1, 40), (30, 1, 1, 40), {}, residual=(1, 1, 1, 30))
    conv("all_zero", (1, 4, 4, 8), (12, 1, 1, 8), {}, s=1.0)
    conv("dense_as_sparse", (1, 4, 4, 8), (12, 3, 3, 8), {"pads": (1, 1, 1, 1)}, s=0.0)
    fc("fc_batch1", (1, 70), 33)
    fc("fc_batch3_no_bias", (3, 50), 13, bias=False)
    fc("fc_batch40", (40, 37), 16)
    fc("fc_rank3", (2, 5, 24), 9)
    return out


GRAPHS = sparse_graphs()
STORED = {name: write_wrt(g, plan_memory(g), "fp32", {"w"}) for name, (g, _) in GRAPHS.items()}


@pytest.mark.parametrize(("engine", "variant"), ENGINES, ids=ENGINE_IDS)
@pytest.mark.parametrize("policy", ["always", "never", "auto"])
@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_sparse_equals_dense_reference(name: str, policy: str, engine: str, variant: str) -> None:
    data, feeds = STORED[name], GRAPHS[name][1]
    assert next(t for t in read_wrt(data).tensors if t.name == "w").sparse is not None
    ref = Interpreter(data).run(feeds)["y"]
    engine_model(data, engine, variant)  # skips a target this host lacks
    got = load(data, engine, variant, sparse=policy).run(feeds)["y"]
    close(got, ref)


def test_fp16_values_widen_exactly() -> None:
    g, feeds = GRAPHS["conv3x3"]
    g.tensors["w"].data = g.tensors["w"].data.astype(np.float16).astype(np.float32)  # fp16 lossless
    data = write_wrt(g, plan_memory(g), "auto", {"w"})
    w = next(t for t in read_wrt(data).tensors if t.name == "w")
    assert w.sparse is not None and w.sparse.values.dtype == np.float16 and w.stored_dtype == np.float16
    ref = Interpreter(data).run(feeds)["y"]
    for engine, variant in (("native", None), ("wasm", "relaxed")):
        close(load(data, engine, variant, sparse="always").run(feeds)["y"], ref)


def kernels(m: object) -> list[str]:
    """The path each op of a native model runs (wrt_op_kernel)."""
    lib = m._lib  # type: ignore[attr-defined]
    lib.wrt_op_kernel.restype = ctypes.c_char_p
    lib.wrt_op_kernel.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.wrt_num_ops.argtypes = [ctypes.c_void_p]
    return [lib.wrt_op_kernel(m._ptr, i).decode() for i in range(lib.wrt_num_ops(m._ptr))]  # type: ignore[attr-defined]


def test_auto_runs_sparse_kernels_from_the_break_even_on() -> None:
    from kernels_wasm.gen.kernels.sparse import TILES

    rng = np.random.default_rng(8)
    for s, want in ((0.95, "sparse"), (0.05, "gemm")):
        g = Graph()
        x = g.add_input("x", (1, 8, 8, 64))
        (y,) = g.add_node("CONV_2D", [x, g.add_const("w", block_sparse(rng, (64, 1, 1, 64), s))], name="c",
                          outputs=["y"])
        g.outputs.append(y)
        m = load(write_wrt(g, plan_memory(g), "fp32", {"w"}), "native")
        assert want in kernels(m)[0], (s, kernels(m), TILES[m.variant].min_sparsity)
        assert "sparse" in kernels(load(write_wrt(g, plan_memory(g), "fp32", {"w"}), "native", sparse="always"))[0]


def test_sparse_path_claims_less_memory_and_the_dense_one_counts_its_expansion() -> None:
    rng = np.random.default_rng(9)
    g = Graph()
    x = g.add_input("x", (1, 4, 4, 512))
    (y,) = g.add_node("CONV_2D", [x, g.add_const("w", block_sparse(rng, (512, 1, 1, 512), 0.9))], name="c",
                      outputs=["y"])
    g.outputs.append(y)
    data = write_wrt(g, plan_memory(g), "fp32", {"w"})
    sp, dn = load(data, "native", sparse="always"), load(data, "native", sparse="never")
    assert sp.memory_size < dn.memory_size / 3
    # the dense path's plan counts the transient expansion (1 MiB here) on top of what it keeps
    with pytest.raises(OutOfMemoryError, match=r"beyond its memory limit"):
        load(data, "native", sparse="never", max_memory=dn.memory_size + (1 << 20) - 4096)
    load(data, "native", sparse="never", max_memory=dn.memory_size + (1 << 20) + 4096).release()


def test_converted_pruned_model_stores_sparse_and_agrees() -> None:
    g = conv_fc_graph(np.random.default_rng(10), {})
    dense = convert(g).data
    report = prune(g, 0.9)
    assert sorted(after.node for _, after in report if after) == ["conv", "fc"]
    conv = convert(g)
    m = read_wrt(conv.data)
    assert {t.name for t in m.tensors if t.sparse is not None} == {ly.weight for ly in layers(g) if ly.sparsity > 0.5}
    assert len(conv.data) < len(dense)
    feeds = {"x": np.random.default_rng(11).uniform(-1, 1, (1, 8, 8, 16)).astype(np.float32)}
    ref = g.evaluate(feeds)["y"]
    close(Interpreter(conv.data).run(feeds)["y"], ref)
    close(load(conv.data, "native").run(feeds)["y"], ref)


def test_sparsify_command_prunes_reports_and_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from wasmrt.bench.mobilenet_v1 import mobilenet_v1
    from wasmrt.cli.main import main

    dense = tmp_path / "m.wrt"
    dense.write_bytes(convert(mobilenet_v1(size=32, classes=16)).data)
    out = tmp_path / "s.wrt"
    assert main(["sparsify", str(dense), "-o", str(out), "--sparsity", "0.8", "--skip", "pw13"]) == 0
    text = capsys.readouterr().out
    assert "kept dense: conv0, dw1" in text and "pw13" in text and "fine-tuning" in text
    assert re.search(r"pw1 +conv 1x1 +\[64,1,1,32\] +sparse 1x4 +80\.\d%", text)
    m = read_wrt(out.read_bytes())
    stored = {t.name: sparse.block_sparsity(t.data) for t in m.tensors if t.sparse is not None}
    assert len(stored) == 13 and all(s == pytest.approx(0.8, abs=0.01) for s in stored.values())  # pw1..pw12, fc
    assert out.stat().st_size < 0.6 * dense.stat().st_size  # pw13 (4 MiB) stays dense
    feeds = {m.tensors[m.inputs[0]].name: np.random.default_rng(12).uniform(-1, 1, (1, 32, 32, 3)).astype(np.float32)}
    close(load(out.read_bytes(), "native").run(feeds)["logits"], Interpreter(out.read_bytes()).run(feeds)["logits"])
    assert main(["sparsify", str(dense), "--sparsity", "1.5"]) == 2
    assert "--sparsity must be in [0, 1), got 1.5" in capsys.readouterr().err
    assert main(["sparsify", str(dense), "--sparsity", "0.5", "--skip", "nope"]) == 2
    assert "--skip names no layer of the model: ['nope']" in capsys.readouterr().err


@pytest.mark.parametrize(("engine", "variant"), [("native", "scalar"), ("native", "avx2"), ("native", "avx512"),
                                                 ("wasm", "simd"), ("wasm", "relaxed")])
def test_sparse_kernels_give_the_same_bytes_on_any_thread_count(engine: str, variant: str) -> None:
    """Layers big enough to run in parallel tasks: rows read in place (tiles as tasks), gathered 3x3 and one-pixel
    layers (one thread), a fused residual; sparse forced."""
    rng = np.random.default_rng(13)
    g = Graph()
    x = g.add_input("x", (1, 40, 40, 64))
    (a,) = g.add_node("CONV_2D", [x, g.add_const("w1", block_sparse(rng, (64, 1, 1, 64), 0.6))],
                      {"act_min": 0.0, "act_max": 6.0}, name="pw")
    (b,) = g.add_node("CONV_2D", [a, g.add_const("w2", block_sparse(rng, (64, 3, 3, 64), 0.7)), None, x],
                      {"pads": (1, 1, 1, 1)}, name="conv3x3")
    (c,) = g.add_node("MEAN", [b], {"axes": (1, 2), "keepdims": False}, name="pool")
    (y,) = g.add_node("FULLY_CONNECTED", [c, g.add_const("w3", block_sparse(rng, (100, 64), 0.5))], name="fc",
                      outputs=["y"])
    g.outputs.append(y)
    data = write_wrt(g, plan_memory(g), "fp32", {"w1", "w2", "w3"})
    feeds = {"x": rng.uniform(-1, 1, (1, 40, 40, 64)).astype(np.float32)}
    one = engine_model(data, engine, variant)  # skips a target this host lacks
    one.release()
    one = load(data, engine, variant, sparse="always")
    want = one.run(feeds)["y"]
    close(want, Interpreter(data).run(feeds)["y"])
    for n in (2, 3) if engine == "native" else (2,):
        m = load(data, engine, variant, sparse="always", threads=n)
        assert m.threads == n
        assert m.run(feeds)["y"].tobytes() == want.tobytes(), f"{n} threads"
        m.release()
