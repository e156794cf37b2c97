"""`wasmrt bench`: our engine natively and as wasm (Node, headless Chromium), and with --peers the same graph in
LiteRT, onnxruntime, onnxruntime-web, TF.js (wasm backend) and LiteRT.js; one thread each (or each count of
--threads), warm-up first, engines interleaved round by round, outputs cross-checked against python_ref. Prints a
table, saves JSON and a PNG chart."""

from __future__ import annotations

import argparse
import os
import platform
import time
from datetime import datetime
from pathlib import Path

from wasmrt.bench.baseline import checkout as baseline_checkout
from wasmrt.errors import InputError

DEFAULT_MODELS = ("mobilenet_v2", "efficientnet_lite0", "face_landmark")
HOSTS = ("native", "node", "chromium")
ALL_HOSTS = (*HOSTS, "webgpu")  # webgpu: the WGSL kernels through wgpu-native (on request: a GPU or lavapipe)
VARIANTS = ("scalar", "simd", "relaxed")


# Idle pause before every run when engines run on several threads. Thread pools spin a while after a run before
# they sleep: onnxruntime's intra-op workers for 35-80 ms (measured natively on MobileNetV2; 2^20 pause steps), ours
# for well under 1 ms. A pool still spinning holds a core that the next engine in the interleaving would use, and
# its second thread then finds no core free: each engine must start on an idle machine, as it would on its own.
# The peers keep their default settings (spinning included: it speeds up their own back-to-back ops).
IDLE_GAP_MS = 100.0


def _csv(text: str, allowed: tuple[str, ...], what: str) -> list[str]:
    items = [t.strip() for t in text.split(",") if t.strip()]
    bad = [t for t in items if t not in allowed]
    if bad:
        raise InputError(f"unknown {what} {bad[0]!r}; choose from {', '.join(allowed)}")
    return items


def _threads(text: str) -> list[int]:
    try:
        counts = sorted({int(t) for t in text.split(",") if t.strip()})
    except ValueError:
        counts = []
    if not counts or not all(1 <= n <= 64 for n in counts):
        raise InputError(f"--threads takes thread counts 1..64 such as 1,2 (got {text!r})")
    return counts


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("models", nargs="*", help="model.onnx, model.tflite, model.wrt or a bundled model name "
                                             f"(default: {', '.join(DEFAULT_MODELS)})")
    p.add_argument("--hosts", default=",".join(HOSTS), help="comma list of native, node, chromium, webgpu (default: "
                                                        "native,node,chromium)")
    p.add_argument("--variants", default=",".join(VARIANTS), help="wasm builds: scalar, simd, relaxed (default: all)")
    p.add_argument("--peers", action="store_true", help="also run LiteRT, onnxruntime, onnxruntime-web, TF.js wasm "
                                                        "and LiteRT.js (installed on first use)")
    p.add_argument("--rounds", type=int, default=None, help="timed rounds per engine and pass (default 30, --quick 5)")
    p.add_argument("--passes", type=int, default=None, help="passes of --rounds rounds, one after the other in the "
                                                            "same process; ratios are given per pass (default 3, "
                                                            "--quick 1)")
    p.add_argument("--peer-files", choices=("toolchain", "ours"), default="toolchain",
                   help="the peers' model files: made by their own toolchains where one exists (litert-torch, "
                        "torch.onnx.export, the source file; default), or all by wasmrt's exporter")
    p.add_argument("--threads", default="1", metavar="N[,N...]",
                   help="thread counts to run our engines at (default 1); peers run at the largest count, and "
                        "with more than one count a scaling table follows")
    p.add_argument("--idle-gap", type=float, default=None, metavar="MS",
                   help="idle pause before every run, so that the thread pools of the engine before have stopped "
                        f"spinning (default {IDLE_GAP_MS:g} ms when an engine runs on more than one thread, else 0)")
    p.add_argument("--warm-runs", type=int, default=0, metavar="K",
                   help="untimed runs of an engine right before each of its timed runs, after the idle pause: the "
                        "timed run then finds the engine's threads awake and its caches warm, as in a loop that runs "
                        "without pauses, while the pause still keeps each engine clear of the pools of the one "
                        "before (default 0)")
    p.add_argument("--warmup", type=int, default=None, help="untimed runs per engine first (default 5, --quick 1)")
    p.add_argument("--pyodide", action="store_true",
                   help="Python in Pyodide (wasmrt.web) vs JS on the same model in one Chromium page: median of "
                        "--rounds runs of each per pass, and their ratio (default model efficientnet_lite0, variant "
                        "relaxed)")
    p.add_argument("--quick", action="store_true", help="few rounds: a smoke test, not a measurement")
    p.add_argument("--int8", action="store_true",
                   help="also each model quantized to int8 (ours by wasmrt quantize's steps; with --peers LiteRT and "
                        "LiteRT.js on an AI Edge Quantizer int8 TFLite, onnxruntime(-web) on a quantize_static QDQ "
                        "model), with the int8 / float32 speed-up per engine; with --sparsity-sweep, the swept "
                        "files quantized to int8 (int8 sparse kernels against the dense int8 ones)")
    p.add_argument("--profile", action="store_true", help="per-op time and GFLOP/s, native and wasm side by side")
    p.add_argument("--baseline", metavar="DIR", help="also run an earlier build, interleaved with this one: a checkout "
                                                     "of it where `wasmrt build` ran (its wasm modules run with its "
                                                     "own JS binding; native: its build/native/libwasmrt.so)")
    p.add_argument("--baseline-conv", metavar="ALGO", choices=("igemm", "wino2", "wino4"),
                   help="also run this build with dense 3x3 convolutions forced to ALGO (igemm: the direct "
                        "convolution, as before Winograd), interleaved, as the @baseline rows")
    p.add_argument("--sparsity-sweep", action="store_true",
                   help="time models pruned in 1x4 blocks at several sparsities against the dense model (default: "
                        "MobileNetV1 and a 3x3 convolution, random weights), with a plot; --profile adds per-layer "
                        "times of the pruned layers at 90%%")
    p.add_argument("--vision", action="store_true",
                   help="the vision solutions per frame in headless Chromium (face mesh try-on, segmentation, hands "
                        "tracked; relaxed SIMD, one thread): pipeline total, each model against LiteRT.js on the "
                        "same .tflite and input in the same page, the work outside the models, and all three "
                        "together with one and two threads (--threads N for more); --rounds frames per pass")
    p.add_argument("--train", action="store_true",
                   help="a LeNet trained from scratch on digits (wasmrt.train.digits): our wasm engine in headless "
                        "Chromium (relaxed SIMD, one thread) with the test accuracy per epoch, TF.js's Layers API "
                        "fit in the same page, PyTorch on one thread and our native engine; epoch times, three "
                        "passes (--passes)")
    p.add_argument("--train-epochs", type=int, default=15, metavar="E", help="--train: epochs of each run (default 15)")
    p.add_argument("--train-tf-epochs", type=int, default=None, metavar="E",
                   help="--train: epochs of TF.js's runs (default: --train-epochs)")
    p.add_argument("--train-tf-backends", default="webgl,cpu", metavar="B,B",
                   help="--train: TF.js backends to time (default webgl,cpu)")
    p.add_argument("--train-samples", type=int, default=0, metavar="N",
                   help="--train: only the first N training samples (a smoke run, not a measurement)")
    p.add_argument("--sparsities", metavar="S,S,...", help="sweep sparsities (default 0.3,0.4,...,0.9,0.95)")
    p.add_argument("-o", "--output", help="JSON path (default build/bench/<timestamp>.json in a checkout; "
                                          "the chart goes next to it)")
    p.add_argument("--no-chart", action="store_true", help="skip the PNG chart")


def run(args: argparse.Namespace) -> int:
    from wasmrt.bench import report
    from wasmrt.bench.prepare import WORK, prepare
    from wasmrt.progress import Progress

    hosts = _csv(args.hosts, ALL_HOSTS, "host")
    variants = _csv(args.variants, VARIANTS, "variant")
    threads = _threads(args.threads)
    rounds = args.rounds if args.rounds is not None else (5 if args.quick else 30)
    warmup = args.warmup if args.warmup is not None else (1 if args.quick else 5)
    passes = args.passes if args.passes is not None else (1 if args.quick else 3)
    if rounds < 1 or warmup < 0 or passes < 1:
        raise InputError("--rounds and --passes must be >= 1 and --warmup >= 0")
    gap_ms = args.idle_gap if args.idle_gap is not None else (IDLE_GAP_MS if max(threads) > 1 else 0.0)
    if gap_ms < 0 or args.warm_runs < 0:
        raise InputError("--idle-gap and --warm-runs must be >= 0")
    if args.pyodide:
        from wasmrt.bench.pyodide import run_pyodide

        return run_pyodide(args, variants, warmup, rounds, passes)
    if args.vision:
        from wasmrt.bench.vision import run_vision

        return run_vision(args, warmup, rounds, passes)
    if args.train:
        from wasmrt.bench.train import run_train

        return run_train(args, passes)
    if args.sparsity_sweep:
        return _sweep(args, hosts, variants, rounds, warmup, passes)
    if args.sparsities:
        raise InputError("--sparsities applies to --sparsity-sweep")
    models = args.models or list(DEFAULT_MODELS)
    if args.baseline and args.baseline_conv:
        raise InputError("--baseline and --baseline-conv both make the @baseline rows: give one")
    baseline = baseline_checkout(args.baseline) if args.baseline else None
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    out = Path(args.output) if args.output else WORK / f"{stamp}.json"
    bar = Progress()
    if args.peers:
        from wasmrt.bench.peers import ensure_python_peers

        ensure_python_peers(bar.log)
    rows: list[dict] = []
    doc: dict = {"created": stamp, "machine": {"platform": platform.platform(), "cpu": platform.processor(),
                                               "python": platform.python_version()},
                 "settings": {"hosts": hosts, "variants": variants, "peers": args.peers, "rounds": rounds,
                              "passes": passes, "peer_files": args.peer_files, "load_average": os.getloadavg(),
                              "warmup": warmup, "threads": threads, "tolerance": report.TOLERANCE,
                              "idle_gap_ms": gap_ms, "warm_runs": args.warm_runs,
                              "baseline": str(baseline) if baseline else None,
                              "baseline_conv": args.baseline_conv},
                 "models": {}, "hosts": {}, "notes": []}
    if gap_ms:
        doc["notes"].append(f"every run (warm-up and timed) follows an idle pause of {gap_ms:g} ms, untimed: thread "
                            "pools spin after a run before they sleep (onnxruntime's intra-op workers 35-80 ms), and "
                            "a pool still spinning would hold a core the next engine needs; peers keep their default "
                            "settings, spinning included")
    if args.baseline_conv:
        doc["notes"].append(f"@baseline rows: this build with dense 3x3 convolutions forced to {args.baseline_conv}")
    if args.warm_runs:
        doc["notes"].append(f"every timed run follows {args.warm_runs} untimed run(s) of the same engine, after the "
                            "idle pause: times of an engine running without pauses (threads awake, caches warm)")
    t_start = time.monotonic()
    for model in models:
        bar.stage(f"{model}: preparing")
        prep = prepare(model, args.peers, bar.log, peer_files=args.peer_files)
        preps = [prep]
        if args.int8:
            from wasmrt.bench.int8 import prepare_int8

            bar.stage(f"{model}: int8")
            preps.append(prepare_int8(prep, args.peers, bar.log))
        for p in preps:
            _describe(doc, p)
        for host in hosts:
            bar.stage(f"{prep.name}{' and int8' if args.int8 else ''} on {host}")
            rows += _run_host(preps, host, args, variants, warmup, rounds, passes, threads, baseline, bar, doc, gap_ms)
        if args.profile:
            from wasmrt.bench.profile import profile_model

            for p in preps:
                doc.setdefault("profile", {})[p.name] = profile_model(p, hosts, variants, bar)
    bar.close()
    report.add_ratios(rows)
    doc["rows"] = rows
    doc["seconds"] = round(time.monotonic() - t_start, 1)
    print(report.table(rows))
    print("\n" + report.pass_ratios(rows))
    if args.int8:
        from wasmrt.bench.int8 import speedups

        print("\n" + speedups(rows))
    if len(threads) > 1:
        print("\n" + report.scaling_table(rows, threads))
    print(f"machine load (1/5/15 min) at the start: {' '.join(f'{x:.1f}' for x in doc['settings']['load_average'])}, "
          f"at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    if "profile" in doc:
        from wasmrt.bench.profile import profile_table

        for name, prof in doc["profile"].items():
            print(f"\nper-op profile of {name}\n" + profile_table(prof))
    for n in doc["notes"]:
        print(f"note: {n}")
    if not args.no_chart:
        chart = out.with_suffix(".png")
        if report.save_chart(chart, rows, bar.log):
            doc["chart"] = chart
            print(f"chart: {chart}")
    report.save_json(out, doc)
    print(f"results: {out}")
    failed = [r for r in rows if not r["ok"] and "error" not in r]
    if failed:
        print("cross-check FAILED for: " + ", ".join(f"{r['model']}/{r['host']}/{r['engine']}" for r in failed))
        return 1
    return 0


def _describe(doc: dict, prep) -> None:
    from wasmrt.bench import report

    doc["models"][prep.name] = {"macs": prep.macs, "gflop": 2 * prep.macs / 1e9, "outputs": prep.outputs,
                                "inputs": [{"name": i["name"], "shape": i["shape"]} for i in prep.inputs],
                                "files": {"wrt": prep.wrt, **prep.peer_files}, "made_by": prep.peer_sources}
    doc["notes"] += [f"{prep.name}: {n}" for n in prep.notes]
    doc["notes"] += [f"{prep.name}: {report.PEERS_OF[k]} ran {Path(f).name}, made by {prep.peer_sources[k]}"
                     for k, f in prep.peer_files.items() if k in prep.peer_sources]


def _run_host(preps: list, host: str, args: argparse.Namespace, variants: list[str], warmup: int, rounds: int,
              passes: int, threads: list[int], baseline: Path | None, bar, doc: dict,
              gap_ms: float = 0.0) -> list[dict]:
    """A model (and its int8 counterpart, interleaved in the same run) on one host: their rows (and the host's
    description and notes into doc)."""
    from wasmrt.bench import report

    prep = preps[0]
    tag = "@int8"
    also = (preps[1], tag) if len(preps) > 1 else None
    if host == "native":
        from wasmrt.bench.native import run_native

        results, notes = run_native(prep, args.peers, warmup, rounds, bar.update, baseline, passes, threads, also,
                                    gap_ms, args.warm_runs, args.baseline_conv)
        info = {"kind": "native", "python": platform.python_version()}
    elif host == "webgpu":
        from wasmrt.bench.gpu import run_webgpu

        results, info, notes = run_webgpu(prep, warmup, rounds, bar.update, passes)
    else:
        from wasmrt.bench.hosts import run_wasm_host

        if not variants and not args.peers:
            return []
        results, info, notes = run_wasm_host(prep, host, variants, args.peers, warmup, rounds, bar.update, bar.log,
                                             baseline=baseline, passes=passes, threads=threads, also=also,
                                             gap_ms=gap_ms, warm_runs=args.warm_runs,
                                             baseline_conv=args.baseline_conv)
    doc["hosts"][host] = info
    doc["notes"] += [f"{prep.name}: {n}" for n in notes]
    rows = []
    for k, p in enumerate(preps):
        mine = {e.removesuffix(tag): r for e, r in results.items() if e.endswith(tag) == (k == 1)}
        rows += report.rows_for(p.name, p.macs, host, mine, p.outputs, p.reference, p.ours_tolerance,
                                p.peer_tolerance)
    return rows


def _sweep(args: argparse.Namespace, hosts: list[str], variants: list[str], rounds: int, warmup: int,
           passes: int) -> int:
    from wasmrt.bench import report, sweep

    if args.peers or args.baseline:
        raise InputError("--sparsity-sweep times our engine only (no --peers, --baseline)")
    out = Path(args.output).resolve() if args.output else sweep.default_output()  # the hosts run elsewhere
    res = sweep.run_sweep(args.models, hosts, variants, warmup, rounds, sweep.parse_sparsities(args.sparsities),
                          args.profile, out, passes, args.int8)
    doc = res["doc"]
    if not args.no_chart:
        chart = out.with_suffix(".png")
        if sweep.save_plot(chart, res["summaries"], res["bases"], res["profile"], res["bar"].log):
            doc["chart"] = chart
            print(f"plot: {chart}")
    report.save_json(out, doc)
    print(f"results: {out}")
    bad = [f"{s['base']}/{s['column']}/{eid}" for s in res["summaries"] for eid, r in s["rows"].items()
           if not r.get("ok", False)]
    if bad:
        print("cross-check FAILED or not run for: " + ", ".join(bad))
        return 1
    return 0
