"""`wasmrt bench --sparsity-sweep`: how block-sparse weights pay off against sparsity, natively and in wasm.

Each base model (default: MobileNetV1 and one 3x3 convolution layer, random weights built in code) is written dense
and pruned in 1x4 blocks (wasmrt.compile.sparsity.prune: every convolution but the first and the depthwise ones, and the
classifier) at each sparsity. Per host (and wasm variant) one interleaved run times: the dense file; each pruned
file as the engine loads it ("auto": sparse kernels from the target's break-even on, dense below); and each pruned
file with the sparse kernels forced ("sparse": where the raw kernels stand against dense). Every engine's first
output is checked against python_ref on its own file. With --profile, the dense and the 90% MobileNetV1 are also
profiled op by op, giving the time of the pruned layers on their own. With --int8 every file (the dense one too) is
quantized to int8 first, so the int8 sparse kernels run against the dense int8 ones. Results: a table, JSON and a
PNG plot.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from wasmrt.bench.prepare import WORK, Prepared
from wasmrt.compile.ir import Graph
from wasmrt.errors import InputError
from wasmrt.progress import Progress

SPARSITIES = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)
PROFILE_SPARSITY = 0.9


@dataclass
class SweepFile:
    id: str  # "dense" or "s90"
    sparsity: float | None  # None: the dense original
    path: Path
    reference: dict[str, np.ndarray]
    pruned: list[str] = field(default_factory=list)  # names of the pruned layers
    stored_sparse: int = 0  # weights the converter stored block-sparse


@dataclass
class Base:
    name: str
    folder: Path
    feeds: dict[str, np.ndarray]
    outputs: list[str]
    macs: int
    files: list[SweepFile]


def layer_bases() -> list[tuple[str, Graph, bool]]:
    """MobileNetV1's pruned layer shapes, one model each (for break-evens per layer)."""
    from wasmrt.bench.mobilenet_v1 import conv3x3_layer, fc_layer, pointwise_layer

    shapes = [(112, 32, 64), (56, 64, 128), (56, 128, 128), (28, 256, 256), (14, 512, 512), (7, 1024, 1024)]
    return ([(f"pw{s}x{c}-{o}", pointwise_layer(s, c, o), True) for s, c, o in shapes]
            + [("conv3x3-28x128", conv3x3_layer(28, 128), True), ("fc1024-1000", fc_layer(1024, 1000), True)])


def _bases(models: list[str], log: Any) -> list[tuple[str, Graph, bool]]:
    """(name, optimized graph, prune the first layer too) per base model."""
    if models == ["layers"]:
        return layer_bases()
    if not models:
        from wasmrt.bench.mobilenet_v1 import conv3x3_layer, mobilenet_v1

        return [("mobilenet_v1", mobilenet_v1(), False), ("conv3x3", conv3x3_layer(), True)]
    from wasmrt.bench.prepare import resolve
    from wasmrt.export.common import load_optimized

    out = []
    for m in models:
        name, src, shapes = resolve(m)
        log(f"{name}: importing {src.name}")
        if src.suffix == ".wrt":
            from wasmrt.compile.converter import graph_from_wrt

            out.append((name, graph_from_wrt(src), False))
        else:
            out.append((name, load_optimized(src, shapes), False))
    return out


def _int8(g: Graph, samples: list[dict[str, np.ndarray]]) -> Graph:
    """`wasmrt quantize`'s steps with the quick settings (min-max ranges, nearest rounding): the int8 weights keep the
    pruned zero blocks and are stored block-sparse."""
    from wasmrt.quantize.pipeline import post_training

    return post_training(g, samples, method="minmax", bias_correction=False, rounding="nearest")[0]


def build(models: list[str], sparsities: list[float], root: Path, log: Any, int8: bool = False) -> list[Base]:
    """Write every base model dense and pruned at each sparsity (each quantized to int8 with int8), with its
    python_ref outputs."""
    from python_ref import Interpreter
    from wasmrt.bench.prepare import _macs, _write_inputs
    from wasmrt.compile.converter import convert
    from wasmrt.compile.sparsity import prune
    from wasmrt.export.common import random_feeds

    bases = []
    for name, graph, first in _bases(models, log):
        folder = root / name
        folder.mkdir(parents=True, exist_ok=True)
        feeds = random_feeds(graph, 0)
        _write_inputs(folder, feeds)
        samples = [random_feeds(graph, k) for k in range(1, 3)] if int8 else []
        files = []
        for s in [None, *sparsities]:
            g = graph
            pruned: list[str] = []
            if s is not None:
                g = _copy(graph)
                pruned = [a.node for _, a in prune(g, s, include_first=first) if a is not None]
            if int8:
                g = _int8(g, samples)
            fid = "dense" if s is None else f"s{round(100 * s)}"
            path = folder / f"{fid}.wrt"
            path.write_bytes(convert(g).data)
            log(f"{name}: {fid}.wrt, {path.stat().st_size:,} bytes; python_ref outputs")
            interp = Interpreter(str(path))
            files.append(SweepFile(fid, s, path, interp.run(feeds), pruned,
                                   sum(t.sparse is not None for t in interp.model.tensors)))
        bases.append(Base(name, folder, feeds, list(graph.outputs), _macs(files[0].path.read_bytes()), files))
    return bases


def _copy(g: Graph) -> Graph:
    import copy

    return copy.deepcopy(g)


def engines_of(base: Base) -> list[tuple[str, SweepFile, str]]:
    """(engine id, file, sparse policy): the dense file, then each pruned file as loaded and with sparse forced."""
    out = [("dense", base.files[0], "auto")]
    for f in base.files[1:]:
        out += [(f.id, f, "auto"), (f"{f.id}-sparse", f, "always")]
    return out


def run_native(base: Base, warmup: int, rounds: int, passes: int, bar: Progress) -> tuple[dict[str, dict], str]:
    from wasmrt.engines import load

    engines = []
    for eid, f, policy in engines_of(base):
        m = load(f.path, "native", sparse=policy)
        engines.append((eid, m, m.run(base.feeds)))
    results: dict[str, dict] = {eid: {"times_ms": [], "cpu_ms": [], "passes": passes,
                                      "outputs": [out[o] for o in base.outputs]} for eid, _, out in engines}
    total, done = len(engines) * (warmup + passes * rounds), 0
    for r in range(-warmup, passes * rounds):
        for k in range(len(engines)):
            eid, m, _ = engines[(k + r) % len(engines)]
            c0, t0 = time.thread_time_ns(), time.perf_counter()
            m.run(base.feeds)
            t1, c1 = time.perf_counter(), time.thread_time_ns()
            if r >= 0:
                results[eid]["times_ms"].append((t1 - t0) * 1e3)
                results[eid]["cpu_ms"].append((c1 - c0) / 1e6)
            done += 1
            bar.update(done, total)
    target = engines[0][1].variant
    for _, m, _ in engines:
        m.release()
    return results, target


def run_wasm(base: Base, host: str, variants: list[str], warmup: int, rounds: int, passes: int, bar: Progress,
             profile_runs: int = 0, only: list[str] | None = None) -> dict[str, dict]:
    """{f"{variant}:{engine id}": result} from one Node or Chromium run of every engine."""
    from wasmrt.bench.hosts import host_fields, run_job

    inputs = [{"name": n, "shape": list(v.shape), "file": f"input{k}.bin"}
              for k, (n, v) in enumerate(base.feeds.items())]
    engines = [{"id": f"{v}:{eid}", "kind": "wasmrt", "variant": v, "model": f.path.name, "sparse": policy}
               for v in variants for eid, f, policy in engines_of(base) if only is None or eid in only]
    job = {"inputs": inputs, "outputs": base.outputs, "engines": engines, "warmup": warmup, "rounds": rounds,
           "passes": passes, "profile_runs": profile_runs, **host_fields(host, True)}
    results, _, notes = run_job(job, base.folder, host, f"sweep-{host}{'-profile' if profile_runs else ''}",
                                bar.update, bar.log)
    for n in notes:
        bar.log(n)
    return results


def summarize(base: Base, column: str, results: dict[str, dict], prefix: str = "") -> dict[str, Any]:
    """Medians, speedups over the dense file and the cross-check of one host column."""
    from wasmrt.bench.report import TOLERANCE
    from wasmrt.export.common import max_rel_error

    files = {f.id: f for f in base.files}
    rows: dict[str, Any] = {}
    for eid, f, policy in engines_of(base):
        r = results.get(prefix + eid, {"error": "not run"})
        if "error" in r:
            rows[eid] = {"error": r["error"].splitlines()[0][:300]}
            continue
        err = max(max_rel_error(got, files[f.id].reference[o]) for got, o in zip(r["outputs"], base.outputs,
                                                                              strict=True))
        rows[eid] = {"sparsity": f.sparsity or 0.0, "policy": policy, "stored_sparse": f.stored_sparse,
                     **pass_medians(r), "max_rel_err": err, "ok": err <= TOLERANCE}
    dense = rows.get("dense", {}).get("pass_ms")
    for r in rows.values():
        if dense and "pass_ms" in r:
            ratios = [d / x for d, x in zip(dense, r["pass_ms"], strict=True)]
            r["pass_speedups"] = ratios
            r["speedup"] = float(np.median(ratios))
    return {"column": column, "rows": rows, "break_even": break_even(rows)}


def pass_medians(r: dict[str, Any]) -> dict[str, Any]:
    """The medians of each pass (rounds are interleaved across the engines, passes follow each other), on the CPU
    clock where the host has one (this thread's CPU time, which a loaded machine inflates far less), else the wall
    clock; a speedup is then the median of the passes' ratios, with their spread."""
    wall = np.asarray(r["times_ms"], np.float64)
    cpu = np.asarray(r.get("cpu_ms") or [], np.float64)
    clock, t = ("cpu", cpu) if len(cpu) == len(wall) and len(cpu) and cpu.min() > 0 else ("wall", wall)
    passes = max(int(r.get("passes", 1)), 1)
    return {"clock": clock, "median_ms": float(np.median(t)), "min_ms": float(t.min()),
            "wall_median_ms": float(np.median(wall)),
            "pass_ms": [float(np.median(c)) for c in np.array_split(t, passes)]}


def break_even(rows: dict[str, Any]) -> float | None:
    """The sparsity from which the sparse kernels (forced) beat the dense model, interpolated between the swept
    points; 0 when they win at every point, None when they never do."""
    pts = sorted((r["sparsity"], r["speedup"]) for r in rows.values()
                 if r.get("policy") == "always" and r.get("stored_sparse") and "speedup" in r)
    prev = None
    for s, x in pts:
        if x >= 1.0:
            if prev is None:
                return 0.0
            (s0, x0) = prev
            return s0 + (s - s0) * (1.0 - x0) / (x - x0)
        prev = (s, x)
    return None


def profile_pruned(bases: list[Base], hosts: list[str], variants: list[str], bar: Progress) -> dict[str, Any] | None:
    """Per-op profiles of the dense and the PROFILE_SPARSITY model of the first base, and the pruned layers' sums."""
    from wasmrt.bench.profile import profile_model

    base = bases[0]
    sparse_file = next((f for f in base.files if f.sparsity == PROFILE_SPARSITY), None)
    if sparse_file is None:
        return None
    inputs = [{"name": n, "shape": list(v.shape), "file": f"input{k}.bin"}
              for k, (n, v) in enumerate(base.feeds.items())]
    profiles = {}
    for f in (base.files[0], sparse_file):
        d = base.folder / f"profile-{f.id}"
        d.mkdir(exist_ok=True)
        (d / "model.wrt").write_bytes(f.path.read_bytes())
        for k, v in enumerate(base.feeds.values()):
            np.ascontiguousarray(v, np.float32).tofile(d / f"input{k}.bin")
        prep = Prepared(f"{base.name}-{f.id}", d, d / "model.wrt", inputs, base.outputs, base.feeds, f.reference,
                        base.macs)
        profiles[f.id] = profile_model(prep, hosts, variants, bar)
    dense, sp = profiles["dense"], profiles[sparse_file.id]
    pruned = set(sparse_file.pruned)
    layers = [k for k, op in enumerate(dense["ops"]) if op["name"] in pruned]
    columns = []
    for cd in dense["columns"]:
        cs = next((c for c in sp["columns"] if c["id"] == cd["id"]), None)
        if cs is None:
            continue
        d_ms = [cd["ms"][k] for k in layers]
        s_ms = [cs["ms"][k] for k in layers]
        columns.append({"id": cd["id"], "variant": cd["variant"], "pruned_dense_ms": sum(d_ms),
                        "pruned_sparse_ms": sum(s_ms), "pruned_speedup": sum(d_ms) / sum(s_ms),
                        "whole_dense_ms": cd["whole_ms"], "whole_sparse_ms": cs["whole_ms"],
                        "layers": [{"name": dense["ops"][k]["name"], "op": dense["ops"][k]["op"],
                                    "kernel": sp["ops"][k]["kernel"].get(cd["id"], ""), "dense_ms": a,
                                    "sparse_ms": b, "speedup": a / b if b else None}
                                   for k, a, b in zip(layers, d_ms, s_ms, strict=True)]})
    return {"model": base.name, "sparsity": PROFILE_SPARSITY, "columns": columns,
            "errors": dense.get("errors", []) + sp.get("errors", [])}


def table(summaries: list[dict[str, Any]], bases: list[Base]) -> str:
    lines = []
    for base in bases:
        cols = [s for s in summaries if s["base"] == base.name]
        ids = [eid for eid, _, _ in engines_of(base)]
        lines.append(f"\n{base.name}: median ms, speedup over dense (median of the passes' ratios) [spread over the "
                     "passes]; CPU clock where the host has one; 'auto' = as loaded, 'sparse' = sparse kernels forced")
        lines.append(f"{'file':<14}{'bytes':>12}" + "".join(f"{c['column']:>32}" for c in cols))
        sizes = {f.id: f.path.stat().st_size for f in base.files}
        for eid in ids:
            fid = eid.removesuffix("-sparse")
            label = eid if eid == "dense" else f"{fid} {'sparse' if eid.endswith('-sparse') else 'auto'}"
            cells = ""
            for c in cols:
                r = c["rows"].get(eid, {})
                if "median_ms" not in r:
                    cells += f"{'FAILED' if 'error' in r else '-':>32}"
                    continue
                flag = "" if r["ok"] else " MISMATCH"
                sp = r.get("pass_speedups") or [0.0]
                cells += f"{r['median_ms']:>11.3f} {r.get('speedup', 0):5.2f}x [{min(sp):.2f}-{max(sp):.2f}]{flag}"
            lines.append(f"{label:<14}{sizes[fid] if not eid.endswith('-sparse') else '':>12}{cells}")
        lines.append(f"{'break-even':<26}" + "".join(
            f"{'-' if c['break_even'] is None else format(c['break_even'], '.2f'):>32}" for c in cols))
    return "\n".join(lines)


def profile_text(prof: dict[str, Any]) -> str:
    lines = [f"\npruned layers of {prof['model']} at {prof['sparsity']:.0%} (sum of per-op times, in-graph profile):"]
    for c in prof["columns"]:
        lines.append(f"  {c['id']:<22} pruned layers {c['pruned_dense_ms']:8.3f} -> {c['pruned_sparse_ms']:8.3f} ms "
                     f"({c['pruned_speedup']:.2f}x)   whole run {c['whole_dense_ms']:8.3f} -> "
                     f"{c['whole_sparse_ms']:8.3f} ms ({c['whole_dense_ms'] / c['whole_sparse_ms']:.2f}x)   "
                     f"slowest layer speedup {min(ly['speedup'] for ly in c['layers']):.2f}x")
    for e in prof.get("errors", []):
        lines.append(f"  note: {e}")
    return "\n".join(lines)


def save_plot(path: Path, summaries: list[dict[str, Any]], bases: list[Base], prof: dict[str, Any] | None,
              log: Any) -> bool:
    from wasmrt.progress import pyplot

    plt = pyplot(log)
    if plt is None:
        log("matplotlib is not available: no plot")
        return False
    panels = len(bases) + (1 if prof and prof["columns"] else 0)
    fig, axes = plt.subplots(1, panels, figsize=(6.2 * panels, 4.6), squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, base in zip(axes[0], bases, strict=False):
        for k, s in enumerate(c for c in summaries if c["base"] == base.name):
            for policy, style in (("auto", "-o"), ("sparse", "--x")):
                pts = sorted((r["sparsity"], r["speedup"]) for eid, r in s["rows"].items()
                             if eid != "dense" and "speedup" in r and r["policy"] == ("auto" if policy == "auto"
                                                                                      else "always"))
                if pts:
                    ax.plot(*zip(*pts, strict=True), style, color=colors[k % len(colors)], markersize=4,
                            label=f"{s['column']} ({policy})")
        ax.axhline(1.0, color="gray", linewidth=0.8)
        ax.set_xlabel("block sparsity (1x4 blocks)")
        ax.set_ylabel("speedup over the dense model")
        ax.set_title(f"{base.name}: whole model", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    if panels > len(bases):
        ax = axes[0][-1]
        cols = prof["columns"]
        names = [ly["name"] for ly in cols[0]["layers"]]
        width = 0.8 / len(cols)
        for k, c in enumerate(cols):
            ax.bar(np.arange(len(names)) + k * width, [ly["speedup"] for ly in c["layers"]], width,
                   label=f"{c['id']} (all pruned: {c['pruned_speedup']:.2f}x)", color=colors[k % len(colors)])
        ax.set_xticks(np.arange(len(names)) + 0.4, names, rotation=70, fontsize=7)
        ax.axhline(1.0, color="gray", linewidth=0.8)
        ax.set_ylabel("layer speedup, sparse vs dense")
        ax.set_title(f"{prof['model']} at {prof['sparsity']:.0%}: pruned layers", fontsize=10)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def parse_sparsities(text: str | None) -> list[float]:
    if not text:
        return list(SPARSITIES)
    try:
        vals = [float(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise InputError(f"--sparsities: expected numbers like 0.5,0.9 (got {text!r})") from None
    bad = [v for v in vals if not 0.0 < v < 1.0]
    if bad or not vals:
        raise InputError(f"--sparsities: each value must be in (0, 1), got {bad or text!r}")
    return sorted(set(vals))


def run_sweep(models: list[str], hosts: list[str], variants: list[str], warmup: int, rounds: int,
              sparsities: list[float], profile: bool, out: Path, passes: int = 1, int8: bool = False) -> dict[str, Any]:
    bar = Progress()
    root = out.with_suffix("")
    bases = build(models, sparsities, root, bar.log, int8)
    summaries: list[dict[str, Any]] = []
    for base in bases:
        for host in hosts:
            bar.stage(f"{base.name} on {host}")
            if host == "native":
                results, target = run_native(base, warmup, rounds, passes, bar)
                summaries.append({"base": base.name, **summarize(base, f"native {target}", results)})
                continue
            if not variants:
                continue
            results = run_wasm(base, host, variants, warmup, rounds, passes, bar)
            for v in variants:
                summaries.append({"base": base.name, **summarize(base, f"{host} {v}", results, f"{v}:")})
    prof = profile_pruned(bases, hosts, variants, bar) if profile else None
    bar.close()
    doc = {"sparsities": sparsities, "settings": {"hosts": hosts, "variants": variants, "rounds": rounds,
                                                  "passes": passes, "warmup": warmup, "threads": 1,
                                                  "int8": int8},
           "files": {b.name: {f.id: {"sparsity": f.sparsity, "bytes": f.path.stat().st_size, "path": f.path}
                              for f in b.files} for b in bases},
           "summaries": summaries, "profile": prof}
    print(table(summaries, bases))
    if prof:
        print(profile_text(prof))
    return {"doc": doc, "bases": bases, "summaries": summaries, "profile": prof, "bar": bar}


def default_output() -> Path:
    return WORK / f"sweep-{time.strftime('%Y%m%d-%H%M%S')}.json"
