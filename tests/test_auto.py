"""engine="auto" (wasmrt.engines.auto): the pick on fixed times, the trial's rules (trial.py, shared with the JS
backend "auto"), the fallbacks to the CPU engine with their reasons, the cache of picks (hostile entries ignored), and
a real trial on this machine's WebGPU adapter where there is one, whose results are the chosen engine's own. No assert
depends on how fast anything runs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from wasmrt.compile.converter import convert
from wasmrt.compile.ir import Graph
from wasmrt.engines import auto, load, trial, webgpu
from wasmrt.engines.trial import TRIAL, pick, run_trial


@pytest.fixture(autouse=True)
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("WASMRT_CACHE_DIR", str(tmp_path))
    return tmp_path


@pytest.fixture(scope="module")
def small() -> bytes:
    """x [1,8,8,4] -> 3x3 convolution (4->8) + ReLU: ops every engine runs."""
    rng = np.random.default_rng(3)
    g = Graph()
    x = g.add_input("x", (1, 8, 8, 4))
    w = g.add_const("w", (rng.standard_normal((8, 3, 3, 4)) * 0.3).astype(np.float32))
    b = g.add_const("b", rng.uniform(-0.2, 0.2, 8).astype(np.float32))
    (y,) = g.add_node("CONV_2D", [x, w, b], {"pads": (1, 1, 1, 1), "act_min": 0.0}, name="c", outputs=["y"])
    g.outputs.append(y)
    return convert(g).data


def test_the_faster_median_wins_and_a_tie_keeps_the_cpu() -> None:
    assert pick({"native": 2.0, "webgpu": 1.5}, "native") == (
        "webgpu", "webgpu: 1.50 ms a run against native 2.00 ms (median of a trial on this device)")
    assert pick({"native": 1.2, "webgpu": 30.0}, "native") == (
        "native", "native: 1.20 ms a run against WebGPU 30 ms (median of a trial on this device)")
    assert pick({"native": 3.0, "webgpu": 3.0}, "native")[0] == "native"


class Fake:
    """A model whose runs take the times given, on a clock the test moves."""

    def __init__(self, clock: list[float], times: list[float]) -> None:
        self.clock, self.times, self.runs = clock, list(times), 0

    def run(self, feeds: dict) -> dict:
        self.clock[0] += self.times[min(self.runs, len(self.times) - 1)] / 1e3
        self.runs += 1
        return {}


def test_the_trial_warms_up_then_interleaves_within_its_budget() -> None:
    clock = [0.0]
    # the warm-up run (1000 ms) is not timed; then each run counts, until the budget is spent after min_runs
    a, b = Fake(clock, [1000.0, 1.0, 3.0, 2.0]), Fake(clock, [1000.0, 4.0, 4.0, 4.0])
    ms = run_trial({"a": a, "b": b}, {}, clock=lambda: clock[0])
    assert a.runs == b.runs == TRIAL["warmup"] + TRIAL["runs"]  # 5 x 10 ms stay within the 400 ms budget
    assert ms == pytest.approx({"a": 2.0, "b": 4.0})  # the median of 1, 3, 2, 2, 2 and of 4 x 5
    slow = [0.0]
    a, b = Fake(slow, [0.0, 300.0]), Fake(slow, [0.0, 300.0])
    run_trial({"a": a, "b": b}, {}, clock=lambda: slow[0])
    assert a.runs == TRIAL["warmup"] + TRIAL["min_runs"]


def test_the_js_trial_declares_the_same_constants() -> None:
    text = (Path(__file__).resolve().parents[1] / "js_bindings" / "src" / "trial.js").read_text()
    assert (f"warmup: {TRIAL['warmup']}, runs: {TRIAL['runs']}, minRuns: {TRIAL['min_runs']}, "
            f"budgetMs: {TRIAL['budget_ms']}") in text
    assert 'import { TRIAL } from "./trial.js"' in (Path(__file__).resolve().parents[1] / "js_bindings" / "src" /
                                                    "auto.js").read_text()


def test_without_an_adapter_the_cpu_engine_runs_it_and_says_why(small: bytes,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(webgpu, "available", lambda: (False, "engine webgpu needs the `wgpu` package"))
    m = load(small, "auto")
    assert m.engine == "native"
    assert m.choice == {"engine": "native", "reason": "native: WebGPU is not available here (engine webgpu needs the "
                        "`wgpu` package)", "ms": {}}
    x = np.random.default_rng(0).standard_normal((1, 8, 8, 4)).astype(np.float32)
    assert np.array_equal(m.run({"x": x})["y"], load(small, "native").run({"x": x})["y"])


def fake_adapter(monkeypatch: pytest.MonkeyPatch, gpu_ms: float, cpu_ms: float) -> list[str]:
    """An adapter that works, WebGPU loads replaced by native ones, and the trial's times fixed; returns the log of
    trials."""
    trials: list[str] = []
    monkeypatch.setattr(webgpu, "available", lambda: (True, "test adapter"))
    monkeypatch.setattr(webgpu, "WebGPUModel", lambda data, name=None: load(data, "native"))

    def fixed(models: dict, feeds: dict) -> dict[str, float]:
        trials.append(",".join(models))
        return {"native": cpu_ms, "webgpu": gpu_ms}

    monkeypatch.setattr(auto, "run_trial", fixed)
    return trials


def test_the_pick_is_cached_and_a_hostile_entry_is_tried_again(small: bytes, cache_dir: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    trials = fake_adapter(monkeypatch, gpu_ms=1.0, cpu_ms=5.0)
    m = load(small, "auto")
    assert m.choice["engine"] == "webgpu" and m.choice["ms"] == {"native": 5.0, "webgpu": 1.0}
    assert "webgpu: 1.00 ms a run against native 5.00 ms" in m.choice["reason"]
    (path,) = (cache_dir / "engines").glob("*.json")
    again = load(small, "auto")
    assert len(trials) == 1 and again.choice["engine"] == "webgpu"
    assert again.choice["reason"].endswith("; remembered from an earlier load")
    for bad in ["{", "[]", json.dumps({"version": 1, "engine": "cuda", "reason": "", "ms": {}}),
                json.dumps({"version": 1, "engine": "native", "reason": 3, "ms": {}}),
                json.dumps({"version": 1, "engine": "native", "reason": "", "ms": {"native": "fast"}}),
                json.dumps({"version": 2, "engine": "native", "reason": "", "ms": {}}), "x" * (1 << 17)]:
        path.write_text(bad)
        n = len(trials)
        assert load(small, "auto").choice["engine"] == "webgpu" and len(trials) == n + 1, bad[:40]


def test_a_model_webgpu_cannot_run_stays_on_the_cpu_with_the_reason(small: bytes,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    trials = fake_adapter(monkeypatch, gpu_ms=1.0, cpu_ms=5.0)

    def refuse(data: bytes, name: str | None = None):
        raise webgpu.UnsupportedOpError("CONV_2D", "c", "<bytes> (engine webgpu)", "int8 inputs")

    monkeypatch.setattr(webgpu, "WebGPUModel", refuse)
    m = load(small, "auto")
    assert m.engine == "native" and not trials
    assert m.choice["reason"].startswith("native: WebGPU cannot run this model (") and "CONV_2D" in m.choice["reason"]


@pytest.mark.skipif(not webgpu.available()[0], reason=f"no WebGPU adapter here: {webgpu.available()[1]}")
def test_a_real_trial_on_this_adapter_keeps_the_faster_and_its_results(small: bytes) -> None:
    m = load(small, "auto")
    assert m.choice["engine"] in ("native", "webgpu") and set(m.choice["ms"]) == {"native", "webgpu"}
    assert m.engine == m.choice["engine"]
    assert m.choice["engine"] == trial.pick(m.choice["ms"], "native")[0]
    x = np.random.default_rng(1).standard_normal((1, 8, 8, 4)).astype(np.float32)
    own = load(small, m.choice["engine"])
    assert np.array_equal(m.run({"x": x})["y"], own.run({"x": x})["y"])


def test_auto_takes_no_variant(small: bytes) -> None:
    with pytest.raises(ValueError, match="engine 'auto' takes no variant"):
        load(small, "auto", "avx2")
