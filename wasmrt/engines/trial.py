"""The backend trial of engine="auto" (Python) and backend "auto" (JS, js_bindings/src/auto.js): each engine runs the
model on zeros of its inputs, interleaved run by run, and the faster median keeps the model. Its constants are
declared here once; tools/gen_schema.py writes them into js_bindings/src/trial.js."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping
from typing import Any

# warm-up runs of each engine (the first WebGPU run compiles its pipelines), then up to `runs` interleaved runs of
# each, stopping once `budget_ms` is spent after at least `min_runs`
TRIAL = {"warmup": 1, "runs": 5, "min_runs": 2, "budget_ms": 400}


def run_trial(models: Mapping[str, Any], feeds: dict[str, Any],
              clock: Callable[[], float] = time.perf_counter) -> dict[str, float]:
    """Each model's median run time in ms, runs interleaved so that drift on a shared machine falls on all."""
    for _ in range(TRIAL["warmup"]):
        for m in models.values():
            m.run(feeds)
    ms: dict[str, list[float]] = {k: [] for k in models}
    start = clock()
    for i in range(TRIAL["runs"]):
        for k, m in models.items():
            t0 = clock()
            m.run(feeds)
            ms[k].append((clock() - t0) * 1e3)
        if i + 1 >= TRIAL["min_runs"] and (clock() - start) * 1e3 > TRIAL["budget_ms"]:
            break
    return {k: statistics.median_high(v) for k, v in ms.items()}


def pick(ms: Mapping[str, float], cpu: str) -> tuple[str, str]:
    """(the faster engine, the reason with both medians); a tie keeps the CPU engine."""
    (gpu,) = [k for k in ms if k != cpu]
    faster = gpu if ms[gpu] < ms[cpu] else cpu
    slower = cpu if faster == gpu else gpu
    names = {"webgpu": "WebGPU"}
    return faster, (f"{faster}: {_fmt(ms[faster])} ms a run against {names.get(slower, slower)} {_fmt(ms[slower])} ms "
                    "(median of a trial on this device)")


def _fmt(x: float) -> str:
    return f"{x:.2f}" if x < 10 else f"{x:.0f}"
