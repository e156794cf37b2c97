"""Bench results -> rows (median, min, GFLOP/s, ratios, cross-check), a text table, JSON and a PNG chart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from wasmrt.export.common import max_rel_error
from wasmrt.progress import pyplot

TOLERANCE = 1e-3  # max |got - ref| / max |ref| per output: fp32 engines summing in other orders stay far below
OURS = "wasmrt"
PEERS_OF = {"tflite": "LiteRT and LiteRT.js", "onnx": "onnxruntime and onnxruntime-web", "tfjs": "TF.js"}


def _passes(values: list[float], passes: int) -> list[np.ndarray]:
    """The samples of each pass (every pass has the same number of rounds)."""
    v = np.asarray(values, np.float64)
    n = len(v) // max(passes, 1)
    return [v[p * n:(p + 1) * n] for p in range(passes)] if n else []


def rows_for(model: str, macs: int, host: str, results: dict[str, dict], outputs: list[str],
             reference: dict[str, np.ndarray], ours_tolerance: float | None = None,
             peer_tolerance: float | None = None) -> list[dict[str, Any]]:
    """One row per engine; ok: every output within the tolerance of the reference (TOLERANCE unless given: int8
    rows hold ours to 0, bit for bit, and the peers' own int8 models to a looser bound)."""
    rows = []
    for eid, r in results.items():
        row: dict[str, Any] = {"model": model, "host": host, "engine": eid, "ours": eid.startswith(OURS),
                               "info": r.get("info", {})}
        if "error" in r:
            row.update(error=r["error"].splitlines()[0][:300], ok=False)
            rows.append(row)
            continue
        errs = [max_rel_error(got, reference[name]) for got, name in zip(r["outputs"], outputs, strict=False)]
        times = np.asarray(r["times_ms"], np.float64)
        median = float(np.median(times)) if times.size else float("nan")
        passes = int(r.get("passes", 1))
        cpu = r.get("cpu_ms") or []
        row.update(
            median_ms=median, min_ms=float(times.min()) if times.size else float("nan"), runs=int(times.size),
            gflops=2.0 * macs / (median * 1e6) if times.size and median > 0 else float("nan"),
            max_rel_err=max(errs) if errs else float("nan"),
            pass_median_ms=[float(np.median(p)) for p in _passes(r["times_ms"], passes)],
        )
        if len(cpu) == times.size and times.size and min(cpu) > 0:  # a clock that saw a run take no time is broken
            row.update(cpu_median_ms=float(np.median(cpu)),
                       pass_cpu_median_ms=[float(np.median(p)) for p in _passes(cpu, passes)])
        wait = r.get("wait_ms") or []
        if wait:  # runs on several threads: their waits for a core (/proc), around the timed or warm-up runs
            row.update(wait_median_ms=float(np.median(wait)), waits_over_1ms=int(sum(w > 1.0 for w in wait)),
                       wait_runs=len(wait), wait_of=r.get("wait_of", "timed"))
        tol = (ours_tolerance if row["ours"] else peer_tolerance)
        row["tolerance"] = TOLERANCE if tol is None else tol
        row["ok"] = bool(errs) and row["max_rel_err"] <= row["tolerance"] and len(errs) == len(outputs)
        if "load_ms" in r:
            row["load_ms"] = r["load_ms"]
        rows.append(row)
    return rows


def add_ratios(rows: list[dict[str, Any]]) -> None:
    """vs_native: median / our native median (same model); vs_best_peer: median / the fastest peer on the same
    host (and vs_best_peer_any: / the fastest peer of any host)."""
    for model in {r["model"] for r in rows}:
        mine = [r for r in rows if r["model"] == model and "median_ms" in r]
        native = next((r["median_ms"] for r in mine if r["host"] == "native" and r["ours"]), None)
        peers = [r for r in mine if not r["ours"]]
        best_any = min((r["median_ms"] for r in peers), default=None)
        for r in mine:
            r["vs_native"] = r["median_ms"] / native if native else None
            same = [p["median_ms"] for p in peers if p["host"] == r["host"]]
            r["vs_best_peer"] = r["median_ms"] / min(same) if same else None
            r["vs_best_peer_any"] = r["median_ms"] / best_any if best_any else None


def _pairs(rows: list[dict[str, Any]]) -> list[tuple[dict, dict]]:
    """(ours, other) pairs worth a ratio: each of our engines against every peer of its host, our baseline build,
    and (wasm hosts) our native engine."""
    out = []
    for r in rows:
        if not r["ours"] or "pass_median_ms" not in r or r["engine"].endswith("@baseline"):
            continue
        same = [o for o in rows if o["model"] == r["model"] and "pass_median_ms" in o and o is not r]
        out += [(r, o) for o in same if o["host"] == r["host"] and (not o["ours"] or o["engine"] == r["engine"]
                                                                   + "@baseline")]
        if r["host"] != "native":
            out += [(r, o) for o in same
                    if o["host"] == "native" and o["ours"] and not o["engine"].endswith("@baseline")]
    return out


def pass_ratios(rows: list[dict[str, Any]]) -> str:
    """Per pass: ours / other of the pass medians, on the CPU clock (this thread's CPU time; what a loaded machine
    inflates least) and on the wall clock, with the spread over the passes."""
    lines = ["per-pass ratios (ours / other, the medians of each pass): cpu clock | wall clock"]
    for a, b in _pairs(rows):
        parts = []
        for key in ("pass_cpu_median_ms", "pass_median_ms"):
            if key not in a or key not in b or len(a[key]) != len(b[key]):
                parts.append("-")
                continue
            q = [x / y if y > 0 else float("nan") for x, y in zip(a[key], b[key], strict=True)]
            parts.append(" ".join(f"{x:.3f}" for x in q) + f"  (spread {min(q):.3f}-{max(q):.3f})")
        other = f"{b['host']} {b['engine']}" if b["host"] != a["host"] else b["engine"]
        lines.append(f"  {a['model']}  {a['host']}  {a['engine']} / {other}:  {parts[0]}  |  {parts[1]}")
    return "\n".join(lines)


def _base_and_threads(engine: str) -> tuple[str, int]:
    """("wasmrt-relaxed", 2) from "wasmrt-relaxed-t2"; ids without a -tN suffix ran on one thread."""
    head, sep, tail = engine.rpartition("-t")
    return (head, int(tail)) if sep and tail.isdigit() else (engine, 1)


def scaling_table(rows: list[dict[str, Any]], threads: list[int]) -> str:
    """Per engine (ours and peers): the median at each thread count and the speed-up over one thread, per pass
    with the spread over the passes (wall clock: a multi-threaded run's time is the wall clock's), and where the
    host could tell, how long the run's threads waited for a core: a run whose threads the OS put on one core
    waits milliseconds, and then no split of the work scales."""
    lines = ["thread scaling (wall clock; speed-up = one thread's pass median / N threads', per pass)"]
    groups: dict[tuple[str, str, str], dict[int, dict]] = {}
    for r in rows:
        if "pass_median_ms" in r and not r["engine"].endswith("@baseline"):
            base, n = _base_and_threads(r["engine"])
            groups.setdefault((r["model"], r["host"], base), {})[n] = r
    for (model, host, base), by_n in groups.items():
        if len(by_n) < 2 or 1 not in by_n:
            continue
        one = by_n[1]["pass_median_ms"]
        cells = []
        for n in sorted(by_n)[1:]:
            q = [a / b if b > 0 else float("nan") for a, b in zip(one, by_n[n]["pass_median_ms"], strict=False)]
            r = by_n[n]
            warm = " warm-up" if r.get("wait_of") == "warmup" else ""
            wait = (f"; the threads of its process waited for a core {r['wait_median_ms']:.2f} ms a run (median), "
                    f"over 1 ms in {r['waits_over_1ms']} of {r['wait_runs']}{warm} runs"
                    if "wait_median_ms" in r else "")
            cells.append(f"{n} threads {r['median_ms']:.2f} ms: x" + " ".join(f"{x:.2f}" for x in q)
                         + f" (spread {min(q):.2f}-{max(q):.2f}){wait}")
        lines.append(f"  {model}  {host}  {base}: 1 thread {by_n[1]['median_ms']:.2f} ms; " + "; ".join(cells))
    if len(lines) == 1:
        lines.append(f"  (no engine ran at 1 and at {max(threads)} threads)")
    return "\n".join(lines)


def _f(v: Any, fmt: str) -> str:
    return "-" if v is None or (isinstance(v, float) and np.isnan(v)) else format(v, fmt)


def table(rows: list[dict[str, Any]]) -> str:
    head = ("model", "host", "engine", "median ms", "min ms", "cpu ms", "GFLOP/s", "x native", "x best peer",
            "max rel err", "")
    lines = []
    for r in rows:
        if "error" in r:
            lines.append((r["model"], r["host"], r["engine"], *("-",) * 7, "FAILED: " + r["error"][:70]))
            continue
        lines.append((r["model"], r["host"], r["engine"], _f(r["median_ms"], ".2f"), _f(r["min_ms"], ".2f"),
                      _f(r.get("cpu_median_ms"), ".2f"), _f(r["gflops"], ".1f"), _f(r.get("vs_native"), ".2f"),
                      _f(r.get("vs_best_peer"), ".2f"), _f(r["max_rel_err"], ".1e"), "" if r["ok"] else "MISMATCH"))
    widths = [max(len(str(x[i])) for x in [head, *lines]) for i in range(len(head))]
    numeric = {3, 4, 5, 6, 7, 8, 9}

    def fmt(cells: tuple) -> str:
        return "  ".join(str(c).rjust(w) if i in numeric else str(c).ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    out = [fmt(head), "  ".join("-" * w for w in widths).rstrip()]
    prev = None
    for r, cells in zip(rows, lines, strict=True):
        if prev is not None and (r["model"], r["host"]) != prev:
            out.append("")
        prev = (r["model"], r["host"])
        out.append(fmt(cells))
    return "\n".join(out)


def save_json(path: Path, doc: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1, default=_jsonable))


def _jsonable(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, Path):
        return str(v)
    raise TypeError(f"not JSON serializable: {type(v).__name__}")


def save_chart(path: Path, rows: list[dict[str, Any]], log: Any) -> bool:
    """One panel per model: median ms per engine (bars), min ms (ticks), grouped by host; ours highlighted."""
    plt = pyplot(log)
    if plt is None:
        log("matplotlib is not available: no chart")
        return False
    models = list(dict.fromkeys(r["model"] for r in rows))
    height = sum(0.9 + 0.3 * sum(1 for r in rows if r["model"] == m and "median_ms" in r) for m in models)
    fig, axes = plt.subplots(len(models), 1, figsize=(10, height), squeeze=False)
    for ax, model in zip(axes[:, 0], models, strict=True):
        rs = [r for r in rows if r["model"] == model and "median_ms" in r]
        labels = [f"{r['host']} · {r['engine']}" for r in rs]
        y = np.arange(len(rs))[::-1]
        colors = ["#d9480f" if r["ours"] else "#868e96" for r in rs]
        ax.barh(y, [r["median_ms"] for r in rs], color=colors)
        ax.plot([r["min_ms"] for r in rs], y, "k|", markersize=10)
        for yi, r in zip(y, rs, strict=True):
            ax.text(r["median_ms"], yi, f" {r['median_ms']:.1f} ms, {r['gflops']:.0f} GFLOP/s", va="center",
                    fontsize=7)
        ax.set_yticks(y, labels, fontsize=7)
        ax.set_xlabel("ms per run (bar: median, tick: min; orange: wasmrt)", fontsize=8)
        ax.set_title(model, fontsize=9)
        ax.set_xlim(0, max(r["median_ms"] for r in rs) * 1.35)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True
