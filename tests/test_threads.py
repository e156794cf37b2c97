"""Threads: a run on N threads gives the same bytes as on one, for every bundled model, on every native kernel path
and threaded wasm variant (ops split into tasks fixed by their shapes, never by the thread count); the Python
engines report how many threads they got; the threaded wasm modules stay small."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import qgraphs  # tests/ is on sys.path under pytest

from python_ref import Interpreter
from wasmrt.compile.converter import convert
from wasmrt.compile.ir import Graph
from wasmrt.dev import build
from wasmrt.engines import load

ROOT = Path(__file__).resolve().parents[1]
MODELS = sorted((ROOT / "models").glob("*.wrt"))


def _feeds(model) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(11)
    return {s.name: rng.standard_normal(s.shape).astype(s.dtype) for s in model.inputs}


def _bits(outputs: dict[str, np.ndarray]) -> dict[str, bytes]:
    return {k: np.ascontiguousarray(v).tobytes() for k, v in outputs.items()}


@pytest.mark.parametrize("variant", ["scalar", "avx2", "avx512"])
def test_native_threads_give_the_same_bytes(variant: str) -> None:
    checked = 0
    for path in MODELS:
        try:
            one = load(path, "native", variant)
        except Exception as e:  # a path this CPU lacks
            pytest.skip(str(e))
        feeds = _feeds(one)
        want = _bits(one.run(feeds))
        for n in (2, 3, 4):
            m = load(path, "native", variant, threads=n)
            assert m.threads == n
            assert _bits(m.run(feeds)) == want, f"{path.name} on {n} threads"
            m.release()
            checked += 1
    assert checked == 3 * len(MODELS) > 0


@pytest.mark.parametrize("variant", ["simd", "relaxed"])
def test_wasm_threads_give_the_same_bytes(variant: str) -> None:
    for path in MODELS:
        one = load(path, "wasm", variant)
        feeds = _feeds(one)
        want = _bits(one.run(feeds))
        one.release()
        m = load(path, "wasm", variant, threads=2)
        assert m.threads == 2
        assert _bits(m.run(feeds)) == want, path.name
        m.release()


@pytest.mark.parametrize("case", sorted(qgraphs.THREAD_CASES))
def test_int8_threads_give_python_refs_bytes(case: str) -> None:
    """int8 kernels split into the same tasks: python_ref's bytes on any thread count, native and wasm."""
    g, feeds = qgraphs.quantized_op_graph(case)
    data = convert(g).data
    want = Interpreter(data).run(feeds)["y"]
    for engine, variant, n in [("native", "scalar", 3), ("native", None, 2), ("native", None, 4), ("wasm", "simd", 2)]:
        m = load(data, engine, variant, threads=n)
        assert m.threads == n or engine == "wasm"  # the wasm pool may still be starting its Workers
        np.testing.assert_array_equal(m.run(feeds)["y"], want, err_msg=f"{case} on {engine} {variant}, {n} threads")
        m.release()


def _dw_graph(batch: int, hw: int, stride: int, c: int) -> bytes:
    """a 5x5 depthwise convolution with a residual add and RELU6 (fused by the converter), fixed weights"""
    rng = np.random.default_rng(5)
    g = Graph()
    x = g.add_input("x", (batch, hw, hw, c))
    w = g.add_const("w", rng.uniform(-1, 1, (c, 5, 5, 1)).astype(np.float32))
    b = g.add_const("b", rng.uniform(-1, 1, c).astype(np.float32))
    (y,) = g.add_node("CONV_2D", [x, w, b], {"groups": c, "pads": (2, 2, 2, 2), "strides": (stride, stride)},
                      name="dw")
    r = g.add_input("r", g.tensors[y].shape)
    (y,) = g.add_node("ADD", [r, y], {"act_min": 0.0, "act_max": 6.0}, name="add", outputs=["y"])
    g.outputs.append(y)
    return convert(g).data


@pytest.mark.parametrize("hw,stride", [(7, 1), (14, 2)])
def test_depthwise_of_few_rows_split_by_channels(hw: int, stride: int) -> None:
    """A depthwise map of few rows (7 here) is cut by channel tiles as well as rows; every channel still gets the
    bytes of the whole-row path (the same image as batch 0 of three, 21 rows, which is cut by rows only), on any
    thread count, natively and in wasm."""
    c = 200  # not a multiple of any target's channel tile
    few, many = _dw_graph(1, hw, stride, c), _dw_graph(3, hw, stride, c)
    rng = np.random.default_rng(8)
    feeds3 = {"x": rng.standard_normal((3, hw, hw, c)).astype(np.float32),
              "r": rng.standard_normal((3, 7, 7, c)).astype(np.float32)}
    feeds1 = {k: v[:1] for k, v in feeds3.items()}
    ref = Interpreter(few).run(feeds1)["y"]
    for engine, variants in (("native", ("scalar", "avx2", "avx512")), ("wasm", ("simd", "relaxed"))):
        for variant in variants:
            try:
                rows = load(many, engine, variant)
            except Exception as e:  # a path this CPU lacks
                assert engine == "native", e
                continue
            want = np.ascontiguousarray(rows.run(feeds3)["y"][:1]).tobytes()
            rows.release()
            for n in (1, 2, 3):
                m = load(few, engine, variant, threads=n)
                got = m.run(feeds1)["y"]
                m.release()
                assert got.tobytes() == want, f"{engine} {variant} on {n} threads, {hw}x{hw}/{stride}"
            np.testing.assert_allclose(got, ref, rtol=2e-5, atol=2e-5 * float(np.abs(ref).max()))


# a process that runs MobileNetV2 on 2 threads after idle pauses long enough for the pool thread to sleep (it is
# then woken, kept off the caller's core), and prints whether each run gave the bytes of a 1-thread run
_AFTER_PAUSES = """
import os, sys, time
import numpy as np
from wasmrt.engines import load
if sys.argv[2] == "one-core":
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
one, two = load(sys.argv[1], "native"), load(sys.argv[1], "native", threads=2)
x = {s.name: np.random.default_rng(5).standard_normal(s.shape).astype(s.dtype) for s in one.inputs}
want = [v.tobytes() for v in one.run(x).values()]
for _ in range(3):
    time.sleep(0.3)
    print([v.tobytes() for v in two.run(x).values()] == want)
"""


@pytest.mark.parametrize("cores", ["all", "one-core"])
def test_native_threads_woken_after_pauses_give_the_same_bytes(cores: str) -> None:
    """The pool thread sleeps between runs; waking it moves it off the caller's core where there is another, and
    where there is none (a process pinned to one core) it still runs, on the caller's."""
    out = subprocess.run([sys.executable, "-c", _AFTER_PAUSES, str(ROOT / "models" / "mobilenet_v2.wrt"), cores],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True"] * 3


def test_threads_argument() -> None:
    path = MODELS[0]
    assert load(path, "wasm", "scalar", threads=2).threads == 1  # no threaded scalar build: one thread, no error
    assert load(path, "native", threads="auto").threads >= 1
    for bad in (0, -1, 1.5, "many", True):
        with pytest.raises(ValueError, match="threads must be a positive int or 'auto'"):
            load(path, "native", threads=bad)  # type: ignore[arg-type]


def test_threaded_modules_are_small() -> None:
    for variant in ("simd-mt", "relaxed-mt"):
        art = build.build_wasm(variant)
        assert art.size <= build.SIMD_WASM_LIMIT, f"{art.path.name}: {art.size} bytes"
