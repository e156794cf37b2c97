"""int8 CONV_2D / FULLY_CONNECTED with int8 1x4 block-sparse weights (python_ref/sparse.py,
kernels_wasm/gen/kernels/qsparse.py, engine qsparse.c): the bytes of python_ref's dense int8 op on the expanded
weights, on every engine and kernel target (native scalar, AVX2, AVX-512, AVX-512 VNNI, wasm scalar, SIMD128,
relaxed; NEON under qemu), with the sparse kernels forced, the dense ones forced, and as the target's break-even
picks, on 1-4 threads; and `wasmrt quantize --sparsity`.

Shapes cover tiles of 1..MR pixels and several tiles (AVX-512 VNNI: 64 pixels, loops for <= 16 and <= 32 of them),
channel counts off 4 (a partial last block row), block rows with no block, a number of blocks in a row off the
group size (padded with zero weights), KxK with stride and padding (taps through the indirection, padding reading
the zero point), FULLY_CONNECTED and 1x1 convolutions on one pixel (the spmv) and on several. Exact: int8 has one
answer.
"""

from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path

import numpy as np
import pytest
from qgraphs import QP, QX, QY, _bias, _i8
from test_engine import QENGINES, aarch64_driver, engine_model  # noqa: F401 (aarch64_driver: a fixture)

from python_ref import Interpreter, sparse
from wasmrt.compile.converter import convert
from wasmrt.compile.ir import Graph
from wasmrt.engines import load


def _sparse_i8(rng: np.random.Generator, shape: tuple[int, ...], density: float) -> np.ndarray:
    """int8 weights in [-127, 127] with about 1 - density of their 1x4 blocks zero, block row 1 empty."""
    rows, cols = sparse.matrix_shape(shape)
    br = sparse.block_rows(rows)
    keep = rng.random((br, cols)) < density
    if br > 1:
        keep[1] = False
    w = _i8(rng, br * 4, cols, lo=-127) * np.repeat(keep, 4, axis=0)
    return np.ascontiguousarray(w[:rows]).reshape(shape).astype(np.int8)


# name -> (op, input shape, weight shape, attributes)
CASES = {
    "pw_1px": ("CONV_2D", (1, 1, 1, 24), (8, 1, 1, 24), {}),
    "pw_tiles": ("CONV_2D", (1, 7, 11, 40), (22, 1, 1, 40), {"act_min": 0.0, "act_max": 6.0}),
    "pw_wide": ("CONV_2D", (1, 9, 8, 96), (64, 1, 1, 96), {}),
    "conv3x3_s2": ("CONV_2D", (1, 9, 10, 12), (13, 3, 3, 12), {"strides": (2, 2), "pads": (1, 1, 1, 1)}),
    "conv3x3_same": ("CONV_2D", (1, 8, 8, 16), (16, 3, 3, 16), {"pads": (1, 1, 1, 1), "act_min": 0.0}),
    "fc_row": ("FULLY_CONNECTED", (1, 70), (30, 70), {}),
    "fc_batch": ("FULLY_CONNECTED", (5, 33), (9, 33), {"act_max": 0.5}),
    "pw_threads": ("CONV_2D", (1, 24, 24, 64), (46, 1, 1, 64), {}),  # 9 VNNI tiles: work enough for every thread
}


def graph(name: str, density: float = 0.25, seed: int = 3) -> tuple[bytes, dict[str, np.ndarray]]:
    op, xs, ws, attrs = CASES[name]
    rng = np.random.default_rng(seed)
    g = Graph()
    x = g.add_input("x", xs, np.int8, QX)
    w = g.add_const("w", _sparse_i8(rng, ws, density), quant=QP(rng.uniform(0.002, 0.02, ws[0]), 0, 0))
    g.add_node(op, [x, w, _bias(g, rng, ws[0])], attrs, name=name, outputs=["y"], quant=[QY])
    g.outputs.append("y")
    return convert(g).data, {"x": _i8(rng, *xs)}


def test_int8_weights_are_stored_block_sparse_and_read_back_exactly() -> None:
    data, _ = graph("conv3x3_s2")
    w = next(t for t in Interpreter(data).model.tensors if t.name == "w")
    assert w.sparse is not None and w.sparse.values.dtype == np.int8
    assert sparse.block_sparsity(w.data) > 0.5


@pytest.mark.parametrize(("engine", "variant"), QENGINES, ids=[f"{e}-{v}" for e, v in QENGINES])
@pytest.mark.parametrize("name", sorted(CASES))
def test_sparse_int8_is_bit_exact(name: str, engine: str, variant: str) -> None:
    data, feeds = graph(name)
    want = Interpreter(data).run(feeds)["y"]
    engine_model(data, engine, variant)  # a skip where the host lacks the target
    for policy in ("always", "never", "auto"):
        m = load(data, engine, variant, sparse=policy)
        for _ in range(2):  # the second run finds the arena (and the packed tile) as the first left it
            np.testing.assert_array_equal(m.run(feeds)["y"], want, err_msg=f"{name} {engine}-{variant} {policy}")


def _kernel(data: bytes, policy: str) -> str:
    m = load(data, "native", sparse=policy)
    lib = m._lib
    lib.wrt_op_kernel.restype, lib.wrt_op_kernel.argtypes = ctypes.c_char_p, [ctypes.c_void_p, ctypes.c_int]
    return lib.wrt_op_kernel(m._ptr, 0).decode()


def test_forcing_picks_the_sparse_or_the_dense_kernel() -> None:
    data, _ = graph("pw_tiles")
    assert _kernel(data, "always") == "qs8 sparse gemm"
    assert "sparse" not in _kernel(data, "never")
    data, _ = graph("conv3x3_s2")
    assert _kernel(data, "always") == "qs8 sparse gemm (im2col)"
    assert _kernel(graph("pw_wide", density=0.05)[0], "auto") == "qs8 sparse gemm"  # 95%: past every break-even
    assert "sparse" not in _kernel(graph("pw_wide", density=0.9)[0], "auto")  # stored dense: 10% sparse


def test_pruned_then_quantized_model_keeps_its_zero_blocks_and_stores_int8_sparse() -> None:
    """`wasmrt quantize --sparsity`'s steps: prune (include_first: this layer reads the input), quantize with fitted
    rounding, int8 weights stored block-sparse with the pruned sparsity; the engine runs them to python_ref's bytes."""
    from wasmrt.bench.mobilenet_v1 import conv3x3_layer
    from wasmrt.compile.sparsity import prune
    from wasmrt.export.common import random_feeds
    from wasmrt.quantize.pipeline import post_training

    g = conv3x3_layer(8, 16)
    ((_, after),) = prune(g, 0.9, include_first=True)
    qg, _ = post_training(g, [random_feeds(g, k) for k in range(4)], method="minmax", bias_correction=False)
    data = convert(qg).data
    ws = [t for t in Interpreter(data).model.tensors if t.sparse is not None]
    assert len(ws) == 1 and ws[0].data.dtype == np.int8
    assert after is not None and sparse.block_sparsity(ws[0].data) >= after.sparsity > 0.89
    feeds = random_feeds(g, 9)
    want = Interpreter(data).run(feeds)
    for variant in (None, "scalar"):
        got = load(data, "native", variant, sparse="always").run(feeds)
        for k in want:
            np.testing.assert_array_equal(got[k], want[k])


THREADED = [("native", "scalar"), ("native", "avx2"), ("native", "avx512"), ("native", "avx512vnni"),
            ("wasm", "simd"), ("wasm", "relaxed")]


@pytest.mark.parametrize(("engine", "variant"), THREADED, ids=[f"{e}-{v}" for e, v in THREADED])
@pytest.mark.parametrize("name", ["pw_threads", "conv3x3_same"])
def test_sparse_int8_gives_the_same_bytes_on_any_thread_count(name: str, engine: str, variant: str) -> None:
    """Tiles in tasks fixed by the shape, each with its own part of the scratch: python_ref's bytes on 1-4 threads."""
    data, feeds = graph(name)
    want = Interpreter(data).run(feeds)["y"]
    engine_model(data, engine, variant)
    for n in (1, 2, 3, 4) if engine == "native" else (1, 2):
        m = load(data, engine, variant, sparse="always", threads=n)
        for _ in range(2):
            np.testing.assert_array_equal(m.run(feeds)["y"], want, err_msg=f"{name} {engine}-{variant} {n} threads")
        m.release()


def test_sparse_int8_neon_under_qemu(aarch64_driver: Path, tmp_path: Path) -> None:  # noqa: F811
    """The NEON kernels (tile, pack, one-pixel spmv) on an emulated aarch64: 95% sparse, past the break-even of every
    case's K, so the driver's automatic choice runs them sparse."""
    for name in sorted(CASES):
        data, feeds = graph(name, density=0.05)
        want = Interpreter(data).run(feeds)["y"]
        d = tmp_path / name
        d.mkdir()
        (d / "m.wrt").write_bytes(data)
        (d / "in0.bin").write_bytes(np.ascontiguousarray(feeds["x"]).tobytes())
        r = subprocess.run(["qemu-aarch64", "-cpu", "max", str(aarch64_driver), "run", str(d / "m.wrt"), str(d),
                            str(d / "in0.bin")], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0 and r.stdout.strip() == "neon", f"{name}: {r.stderr}"
        got = np.fromfile(d / "out0.bin", want.dtype).reshape(want.shape)
        np.testing.assert_array_equal(got, want, err_msg=name)
