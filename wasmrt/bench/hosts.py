"""The wasm hosts: one Node process, or one headless Chromium page, running our wasm variants and the wasm peers
interleaved round by round (wasmrt/bench/js/engines.mjs). Results come back as JSON; progress as stderr lines."""

from __future__ import annotations

import base64
import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np

from wasmrt import paths
from wasmrt.bench import peers as peer_setup
from wasmrt.bench.baseline import binding_module
from wasmrt.bench.native import suffix
from wasmrt.bench.prepare import Prepared
from wasmrt.errors import WasmrtError

WASM_PEERS = (  # (id, kind, model file key, variant, runs threaded)
    ("onnxruntime-web", "ort", "onnx", None, True),
    ("tfjs-wasm", "tfjs", "tfjs", None, True),
    ("litert.js", "litert", "tflite", "relaxed", False),  # @litertjs/core's wasm accelerator runs on one thread
    ("litert.js-simd", "litert", "tflite", "compat", False),
)


def job_for(prep: Prepared, host: str, variants: list[str], peers: bool, warmup: int, rounds: int,
            profile_runs: int = 0, baseline: Path | None = None, passes: int = 1,
            threads: list[int] | None = None, gap_ms: float = 0.0, warm_runs: int = 0,
            baseline_conv: str | None = None) -> dict:
    """The JS host's job: our variants at every thread count, the peers at the largest (onnxruntime-web and TF.js
    fix their thread count once per page or process)."""
    counts = threads or [1]
    engines = [{"id": f"wasmrt-{v}{suffix(t)}", "kind": "wasmrt", "variant": v, "model": "model.wrt", "threads": t}
               for t in counts for v in variants]
    if baseline is not None:  # the same variants from an earlier build, with its own JS binding, interleaved
        engines += [{"id": f"wasmrt-{v}@baseline", "kind": "wasmrt", "variant": v, "model": "model.wrt",
                     "binding": "baseline"}
                    for v in variants if (paths.wasm_dir(baseline) / f"wasmrt-{v}.wasm").is_file()]
    if baseline_conv:  # this build with the dense convolutions' algorithm forced (bench --baseline-conv)
        engines += [{"id": f"wasmrt-{v}@baseline", "kind": "wasmrt", "variant": v, "model": "model.wrt",
                     "conv": baseline_conv} for v in variants]
    if peers:
        for eid, kind, key, variant, threaded in WASM_PEERS:
            f = prep.peer_files.get(key)
            if f is None:
                continue
            # TF.js starts its threads from blob: URLs, which Node's Worker refuses: one thread there
            t = max(counts) if threaded and not (host == "node" and kind == "tfjs") else 1
            engines.append({"id": eid + suffix(t), "kind": kind, "variant": variant, "threads": t,
                            "model": str(Path(f).relative_to(prep.dir))})
    return {"inputs": prep.inputs, "outputs": prep.outputs, "engines": engines, "warmup": warmup, "rounds": rounds,
            "passes": passes, "peer_threads": max(counts), "profile_runs": profile_runs, "gap_ms": gap_ms,
            "warm_runs": warm_runs,
            **host_fields(host, bool(variants), baseline)}


def host_fields(host: str, ours: bool, baseline: Path | None = None) -> dict:
    """What a job needs to find our binding and wasm builds (ours: it runs them) and the browser."""
    job: dict = {"wasmrt_root": str(paths.js_bindings())}
    if ours:
        job["wasmrt_module"] = str(paths.js_bindings() / "src" / "index.js")
        job["wasmrt_wasm_dir"] = str(paths.wasm_dir())
    if ours and baseline is not None:  # served at /baseline/ (its binding) and /baseline/dist/ in Chromium
        job["baseline_module"] = str(binding_module(baseline))
        job["baseline_root"] = str(paths.js_bindings(baseline))
        job["baseline_wasm_dir"] = str(paths.wasm_dir(baseline))
    if host == "chromium":
        job["chromium"] = peer_setup.chromium_path()
    return job


def run_wasm_host(prep: Prepared, host: str, variants: list[str], peers: bool, warmup: int, rounds: int,
                  progress: Callable[[int, int], None], log: Callable[[str], None],
                  profile_runs: int = 0, baseline: Path | None = None,
                  passes: int = 1, threads: list[int] | None = None,
                  also: tuple[Prepared, str] | None = None, gap_ms: float = 0.0,
                  warm_runs: int = 0, baseline_conv: str | None = None) -> tuple[dict, dict, list[str]]:
    """({engine id: result}, host info, notes) for host "node" or "chromium"; with profile_runs, our engines also
    return per-op samples of that many in-graph runs (engines.mjs profileOps). also: (another prepared model in a
    folder under prep.dir, with the same inputs and output names; tag): its engines too, in the same job,
    interleaved, their ids ending in the tag. gap_ms: an idle pause before every run (run.py IDLE_GAP_MS);
    warm_runs: untimed runs between the pause and each timed run."""
    job = job_for(prep, host, variants, peers, warmup, rounds, profile_runs, baseline, passes, threads, gap_ms,
                  warm_runs, baseline_conv)
    if also is not None:
        other, tag = also
        if other.outputs != prep.outputs or [i["shape"] for i in other.inputs] != [i["shape"] for i in prep.inputs]:
            raise ValueError(f"{other.name}: inputs or outputs differ from {prep.name}'s: cannot share a job")
        sub = other.dir.relative_to(prep.dir)
        other_job = job_for(other, host, variants, peers, warmup, rounds, profile_runs, baseline, passes, threads,
                            baseline_conv=baseline_conv)
        for e in other_job["engines"]:
            job["engines"].append({**e, "id": e["id"] + tag, "model": str(sub / e["model"])})
    return run_job(job, prep.dir, host, f"{host}-profile" if profile_runs else host, progress, log, peers)


def run_job(job: dict, folder: Path, host: str, tag: str, progress: Callable[[int, int], None],
            log: Callable[[str], None], peers: bool = False) -> tuple[dict, dict, list[str]]:
    """Run a job (engines.mjs runJob: files relative to `folder`) in Node or Chromium (peers: the job runs the wasm
    peers too, whose npm packages are then installed)."""
    bench_js = peer_setup.ensure_npm_peers(log, peers)
    job_path = folder / f"job-{tag}.json"
    result_path = folder / f"result-{tag}.json"
    job_path.write_text(json.dumps(job, indent=1))
    result_path.unlink(missing_ok=True)
    script = "node_runner.mjs" if host == "node" else "chromium_driver.mjs"
    cmd = [*peer_setup.node_command(), str(bench_js / script), str(job_path), str(result_path)]
    log_path = folder / f"log-{tag}.txt"
    with open(log_path, "w") as logf:
        proc = subprocess.Popen(cmd, cwd=bench_js, stdout=logf, stderr=subprocess.PIPE, text=True)
        assert proc.stderr is not None
        for line in proc.stderr:  # "@progress {...}" lines drive the bar; the rest is the engines' own chatter
            if line.startswith("@progress "):
                p = json.loads(line[len("@progress "):])
                if "total" in p:
                    progress(p["done"], p["total"])
            else:
                logf.write(line)
        code = proc.wait()
    if code != 0 or not result_path.is_file():
        tail = log_path.read_text()[-1500:]
        raise WasmrtError(f"the {host} host failed (exit {code}); log: {log_path}\n{tail}")
    data = json.loads(result_path.read_text())
    notes = []
    for eid, r in data["engines"].items():
        if "outputs" in r:
            r["outputs"] = [np.frombuffer(base64.b64decode(o), np.float32) for o in r["outputs"]]
        if "error" in r:
            notes.append(f"{host} {eid}: {r['error'].splitlines()[0]}")
    return data["engines"], data["host"], notes
