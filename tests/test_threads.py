"""Threads: a run on N threads gives the same bytes as on one, for every bundled model, on every native kernel path
and threaded wasm variant (ops split into tasks fixed by their shapes, never by the thread count); the Python
engines report how many threads they got; the threaded wasm modules stay small."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import qgraphs  # tests/ is on sys.path under pytest

from python_ref import Interpreter
from wasmrt import build
from wasmrt.converter import convert
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
        assert art.size <= 200_000, f"{art.path.name}: {art.size} bytes"
