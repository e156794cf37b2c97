"""Element-wise chains (kernels_wasm/engine/elementwise.c): ops that follow one another over the same values run
as one pass, block by block, with the values between them in small buffers. The bytes must be those of the ops
run one by one (wrt_run_ops over one op at a time never runs a chain), on every engine; python_ref stays the
reference within the engines' usual tolerance. The graph pass that writes PP-OCR's decomposed hard-swish as one
HARD_SWISH (passes.fuse_hard_swish) is checked in tests/test_passes.py."""

from __future__ import annotations

import ctypes
from collections.abc import Callable

import numpy as np
import pytest
from test_engine import ENGINE_IDS, ENGINES, close, engine_model

from python_ref import Interpreter
from wasmrt.compile.converter import convert
from wasmrt.compile.ir import Graph

# 2 x 40 x 33 x 7 = 18,480 values: two tasks of the element-wise runs (16,384 each), blocks with a partial last one
SHAPE = (2, 40, 33, 7)
SMALL = (1, 5, 7, 9)  # fewer values than a block: never a chain


def _scalar(g: Graph, name: str, v: float) -> str:
    return g.add_const(name, np.full((1, 1, 1, 1), v, np.float32))


def hard_swish_affine(g: Graph, x: str) -> list[str]:
    """PP-OCRv4's activation after the pass: HARD_SWISH, then a learnt scale and offset"""
    (h,) = g.add_node("HARD_SWISH", [x])
    (s,) = g.add_node("MUL", [_scalar(g, "s", 0.75), h])
    (y,) = g.add_node("ADD", [s, _scalar(g, "b", -0.25)], outputs=["y"])
    return [y]


def long_chain(g: Graph, x: str) -> list[str]:
    """eight ops reading values from several ops back (buffers held across ops), a second full-size input, scalars
    on either side (the reversed kernels), clamps, a unary op with parameters"""
    z = g.add_input("z", SHAPE)
    (a,) = g.add_node("ADD", [x, z], {"act_min": -1.5, "act_max": 1.25})
    (b,) = g.add_node("MUL", [a, x])
    (c,) = g.add_node("DIV", [_scalar(g, "three", 3.0), b])
    (d,) = g.add_node("SUB", [c, a])
    (e,) = g.add_node("MAXIMUM", [d, b])
    (f,) = g.add_node("LEAKY_RELU", [e], {"alpha": 0.2})
    (h,) = g.add_node("SUB", [_scalar(g, "half", 0.5), f])
    (y,) = g.add_node("MINIMUM", [h, z], outputs=["y"])
    return [y]


def shared_value(g: Graph, x: str) -> list[str]:
    """a value that is also a graph output is written: the chain starts after the op that computes it"""
    (a,) = g.add_node("MUL", [x, _scalar(g, "k", 1.5)], outputs=["a"])
    (b,) = g.add_node("ADD", [a, x])
    (y,) = g.add_node("DIV", [b, _scalar(g, "d", 6.0)], outputs=["y"])
    return [a, y]


def squeeze_excite(g: Graph, x: str) -> list[str]:
    """values per channel (a squeeze-and-excitation scale, x + x * s, as PP-OCR's heads compute it) on either side;
    the blocks and tasks are then whole rows of 7 channels"""
    s = g.add_input("s", (1, 1, 1, SHAPE[-1]))
    (a,) = g.add_node("MUL", [s, x])
    (b,) = g.add_node("ADD", [x, a])
    (c,) = g.add_node("DIV", [b, s])
    (y,) = g.add_node("ADD", [c, _scalar(g, "k", 0.5)], outputs=["y"])
    return [y]


def small(g: Graph, x: str) -> list[str]:
    (a,) = g.add_node("MUL", [x, _scalar(g, "k", 1.5)])
    (y,) = g.add_node("ADD", [a, x], outputs=["y"])
    return [y]


# name -> (graph body, input shape, the longest chain the engine must form)
CASES: dict[str, tuple[Callable[[Graph, str], list[str]], tuple[int, ...], int]] = {
    "hard_swish_affine": (hard_swish_affine, SHAPE, 3),
    "long_chain": (long_chain, SHAPE, 8),
    "shared_value": (shared_value, SHAPE, 2),
    "small": (small, SMALL, 1),
    "squeeze_excite": (squeeze_excite, SHAPE, 4),
}


def model(name: str) -> tuple[bytes, dict[str, np.ndarray]]:
    body, shape, _ = CASES[name]
    g = Graph()
    x = g.add_input("x", shape)
    g.outputs.extend(body(g, x))
    rng = np.random.default_rng(3)
    feeds = {i: rng.uniform(-4, 4, g.tensors[i].shape).astype(np.float32) for i in g.inputs}
    return convert(g).data, feeds


def stepped(m, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The outputs with every op run alone (one wrt_run_ops call each)."""
    arrays = [feeds[s.name] for s in m.inputs]
    outs = [np.empty(s.shape, s.dtype) for s in m.outputs]
    if m.engine == "native":
        lib, p = m._lib, m._ptr
        for i, a in enumerate(arrays):
            ctypes.memmove(lib.wrt_input_ptr(p, i), a.ctypes.data, a.nbytes)
        for k in range(m.op_count()):
            m.run_ops(k, k + 1)
        for i, y in enumerate(outs):
            ctypes.memmove(y.ctypes.data, lib.wrt_output_ptr(p, i), y.nbytes)
    else:
        w, p = m.wasm, m._ptr
        for i, a in enumerate(arrays):
            w.write(w.ptr("wrt_input_ptr", p, i), a)
        for k in range(m.op_count()):
            m.run_ops(k, k + 1)
        for i, y in enumerate(outs):
            w.read_into(w.ptr("wrt_output_ptr", p, i), y)
    return outs


@pytest.mark.parametrize(("engine", "variant"), ENGINES, ids=ENGINE_IDS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_chain_bytes_equal_the_ops_run_alone(name: str, engine: str, variant: str) -> None:
    data, feeds = model(name)
    m = engine_model(data, engine, variant)
    spans = [m.op_span(k) for k in range(m.op_count())]
    assert max(spans) == CASES[name][2], spans
    kernels = [m.op_info(k)[2] for k in range(m.op_count())]
    assert all(("in one pass" in k) == (s > 1) for k, s in zip(kernels, spans, strict=True)), kernels
    fused = m.run(feeds)
    ref = Interpreter(data).run(feeds)
    for got, alone, spec in zip(fused.values(), stepped(m, feeds), m.outputs, strict=True):
        assert np.array_equal(got.view(np.uint32), alone.view(np.uint32)), f"{spec.name}: chained != op by op"
        close(got, ref[spec.name])


@pytest.mark.parametrize("engine", ["native", "wasm"])
@pytest.mark.parametrize("name", ["long_chain", "squeeze_excite"])
def test_chain_bytes_do_not_depend_on_threads(name: str, engine: str) -> None:
    from wasmrt.engines import load

    data, feeds = model(name)
    variant = "simd" if engine == "wasm" else None  # the threaded wasm build is simd-mt
    runs = [load(data, engine, variant, threads=t).run(feeds) for t in (1, 2)]
    for k in runs[0]:
        assert np.array_equal(runs[0][k].view(np.uint32), runs[1][k].view(np.uint32)), k
