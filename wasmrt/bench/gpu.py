"""The webgpu host of `wasmrt bench --hosts webgpu`, and a stand-alone GPU measurement for a machine with a real GPU:

    python -m wasmrt.bench.gpu DIR [-o results.json] [--rounds 20] [--passes 3]

runs every DIR/*.wrt on the webgpu engine (wgpu-native) and on our native engine (one thread), interleaved round by
round, and reports per model: end-to-end latency (inputs in, one command buffer, outputs read back) and kernel time
(GPU timestamps around the compute pass), dispatches and the GPU time per dispatch, GFLOP/s of the convolutions
and dense layers, and the speed-up over native. A file named gemm*.wrt (one FULLY_CONNECTED) gives the GEMM rate,
also as a share of the GPU's fp32 peak where nvidia-smi names the GPU.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from wasmrt.bench.prepare import Prepared

# fp32 lanes x 2 (FMA) per SM per clock, and SMs, of the GPUs we have measured on
FP32_PER_SM_CLOCK = 256
SMS = {"H100 80GB HBM3": 132, "H100 PCIe": 114, "H100 NVL": 132, "H200": 132}


def run_webgpu(prep: Prepared, warmup: int, rounds: int, progress: Callable[[int, int], None],
               passes: int = 1) -> tuple[dict, dict, list[str]]:
    """{engine id: {times_ms, kernel_ms, passes, outputs, info}} for `wasmrt bench --hosts webgpu`, host info, notes."""
    from wasmrt.engines.webgpu import WebGPUModel, available

    ok, why = available()
    if not ok:
        return {}, {"kind": "webgpu", "adapter": None}, [f"webgpu: {why}"]
    t0 = time.perf_counter()
    m = WebGPUModel(Path(prep.wrt).read_bytes(), str(prep.wrt), timing=True)
    load_ms = (time.perf_counter() - t0) * 1e3
    feeds = {i["name"]: prep.feeds[i["name"]] for i in prep.inputs}
    res = m.run(feeds)
    r: dict[str, Any] = {"outputs": [res[o] for o in prep.outputs], "times_ms": [], "kernel_ms": [], "passes": passes,
                         "load_ms": load_ms, "info": {"adapter": why, "dispatches": len(m.plan.dispatches)}}
    total = warmup + passes * rounds
    for k in range(total):
        t0 = time.perf_counter()
        m.run(feeds)
        if k >= warmup:
            r["times_ms"].append((time.perf_counter() - t0) * 1e3)
            r["kernel_ms"].append(m.kernel_seconds * 1e3)
        progress(k + 1, total)
    m.release()
    return {"wasmrt-webgpu": r}, {"kind": "webgpu", "adapter": why}, []


def _gpu_peak() -> tuple[str, float | None]:
    """(GPU name, fp32 peak in FLOP/s at the maximum SM clock) from nvidia-smi, or (name or '?', None)."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,clocks.max.sm", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=30).stdout.strip().splitlines()[0]
        name, mhz = (s.strip() for s in out.split(","))
    except (OSError, IndexError, ValueError, subprocess.SubprocessError):
        return "?", None
    sms = next((v for k, v in SMS.items() if k in name), None)
    return name, sms * FP32_PER_SM_CLOCK * float(mhz) * 1e6 if sms else None


def _stats(v: list[float]) -> dict[str, float]:
    a = np.asarray(v, np.float64)
    return {"median": float(np.median(a)), "min": float(a.min()), "max": float(a.max())}


def measure(path: Path, rounds: int, passes: int, warmup: int, native: bool, log: Callable[[str], None]) -> dict:
    import wasmrt
    from wasmrt.engines.webgpu import WebGPUModel

    data = path.read_bytes()
    t0 = time.perf_counter()
    gpu = WebGPUModel(data, path.name, timing=True)
    load_ms = (time.perf_counter() - t0) * 1e3
    rng = np.random.default_rng(11)
    feeds = {s.name: rng.uniform(-1, 1, s.shape).astype(s.dtype) for s in gpu.inputs}
    engines: dict[str, Any] = {"webgpu": gpu}
    if native:
        engines["native"] = wasmrt.load(data, engine="native", max_work=1e13)
    first = {k: e.run(feeds) for k, e in engines.items()}
    err = None
    if "native" in first:
        err = max(float(np.max(np.abs(first["webgpu"][k] - v))) / max(float(np.max(np.abs(v))), 1e-30)
                  for k, v in first["native"].items())
    for _ in range(warmup):
        for e in engines.values():
            e.run(feeds)
    # the CPU engine gets fewer rounds on big models (its runs take seconds); passes stay interleaved
    per = {k: rounds for k in engines}
    if "native" in engines:
        t0 = time.perf_counter()
        engines["native"].run(feeds)
        per["native"] = max(3, min(rounds, int(6.0 / max(time.perf_counter() - t0, 1e-3))))
    times: dict[str, list[list[float]]] = {k: [] for k in engines}
    kern: list[list[float]] = []
    for _ in range(passes):
        for k, e in engines.items():
            ts, ks = [], []
            for _ in range(per[k]):
                t0 = time.perf_counter()
                e.run(feeds)
                ts.append((time.perf_counter() - t0) * 1e3)
                if k == "webgpu":
                    ks.append(gpu.kernel_seconds * 1e3)
            times[k].append(ts)
            if k == "webgpu":
                kern.append(ks)
    flops = gpu.plan.flops
    res: dict[str, Any] = {
        "inputs": {s.name: list(s.shape) for s in gpu.inputs}, "dispatches": len(gpu.plan.dispatches),
        "gflop": flops / 1e9, "load_ms": load_ms, "max_rel_err_vs_native": err,
        "webgpu_ms": [_stats(p) for p in times["webgpu"]], "kernel_ms": [_stats(p) for p in kern],
        "rounds": per,
    }
    e2e = [p["median"] for p in res["webgpu_ms"]]
    kms = [p["median"] for p in res["kernel_ms"]]
    res["gflops_end_to_end"] = [flops / (t * 1e6) for t in e2e]
    res["gflops_kernel"] = [flops / (t * 1e6) for t in kms if t == t and t > 0]
    res["kernel_us_per_dispatch"] = [t * 1e3 / max(1, len(gpu.plan.dispatches)) for t in kms]
    res["overhead_ms"] = [a - b for a, b in zip(e2e, kms, strict=True)]
    if "native" in times:
        res["native_ms"] = [_stats(p) for p in times["native"]]
        res["native_variant"] = engines["native"].variant
        res["speedup_vs_native"] = [n["median"] / g for n, g in zip(res["native_ms"], e2e, strict=True)]
    prof: dict[str, dict[str, float]] = {}
    for _, kernel, sec in gpu.profile(feeds):
        p = prof.setdefault(kernel, {"ms": 0.0, "dispatches": 0})
        p["ms"] += sec * 1e3
        p["dispatches"] += 1
    res["profile"] = dict(sorted(prof.items(), key=lambda kv: -kv[1]["ms"]))
    for e in engines.values():
        e.release()
    spd = res.get("speedup_vs_native")
    log(f"{path.name:<32s} gpu {min(e2e):8.2f}..{max(e2e):8.2f} ms  kernel {min(kms):8.2f}..{max(kms):8.2f} ms  "
        f"{len(gpu.plan.dispatches):4d} dispatches  {flops / 1e9:7.2f} GFLOP"
        + (f"  native {min(n['median'] for n in res['native_ms']):9.1f} ms  x{min(spd):.1f}..{max(spd):.1f}"
           if spd else "")
        + "\n  GPU time by kernel (a pass per dispatch): "
        + ", ".join(f"{k} {v['ms']:.2f} ms/{v['dispatches']}" for k, v in list(res["profile"].items())[:6]))
    return res


def _batched_source(name: str, src: Path, tmp: Path) -> Path:
    """An ONNX model whose inputs' first dimension is symbolic, so input_shapes can set the batch."""
    if src.suffix != ".onnx":
        return src  # TFLite: input_shapes rewrites the static shape (with a warning)
    import onnx

    m = onnx.load(str(src))
    for i in m.graph.input:
        i.type.tensor_type.shape.dim[0].dim_param = "N"
    out = tmp / f"{name}.onnx"
    onnx.save(m, str(out))
    return out


def prepare(out: Path, names: list[str], batches: tuple[int, ...] = (1, 8)) -> None:
    """Convert bundled models at each batch size into out/NAME.bN.wrt. Weights are stored as fp16 (the engines
    widen them to fp32 at load): the files travel to the GPU machine, and speed does not depend on the values."""
    import tempfile

    from wasmrt.converter import convert
    from wasmrt.models import BUNDLED, model_path

    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            bm = BUNDLED[name]
            src = _batched_source(name, model_path(name), Path(tmp))
            base = convert(src, input_shapes=dict(bm.input_shapes) or None, weights="fp16")
            for b in batches:
                shp = {n: (b, *base.graph.tensors[n].shape[1:]) for n in base.graph.inputs}
                data = convert(src, input_shapes=shp, weights="fp16").data
                (out / f"{name}.b{b}.wrt").write_bytes(data)
                print(f"{name}.b{b}.wrt {len(data) / 2**20:.1f} MiB", flush=True)


def gemm_model(n: int) -> bytes:
    """One FULLY_CONNECTED [n, n] x [n, n]^T: the GEMM rate of the tiled kernel."""
    from wasmrt.converter import convert
    from wasmrt.ir import Graph

    g = Graph()
    x = g.add_input("x", (n, n))
    w = g.add_const("w", np.random.default_rng(5).uniform(-1, 1, (n, n)).astype(np.float32))
    (y,) = g.add_node("FULLY_CONNECTED", [x, w], {}, name="gemm", outputs=["y"])
    g.outputs.append(y)
    return convert(g).data


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m wasmrt.bench.gpu", description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path, help="folder of .wrt files")
    ap.add_argument("-o", "--output", type=Path, default=None, help="JSON results")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--no-native", action="store_true", help="GPU only")
    ap.add_argument("--prepare", metavar="NAMES", help="first write these bundled models (comma list) at batch 1 "
                                                        "and 8 into DIR (needs the model sources)")
    ap.add_argument("--gemm", type=int, default=0, metavar="N", help="also write DIR/gemmN.wrt and measure it")
    args = ap.parse_args(argv)
    if args.prepare:
        prepare(args.dir, args.prepare.split(","))
        return 0
    if args.gemm:
        args.dir.mkdir(parents=True, exist_ok=True)
        (args.dir / f"gemm{args.gemm}.wrt").write_bytes(gemm_model(args.gemm))
    from wasmrt.engines.webgpu import available

    ok, adapter = available()
    if not ok:
        print(f"webgpu: {adapter}", file=sys.stderr)
        return 1
    name, peak = _gpu_peak()
    doc: dict[str, Any] = {"adapter": adapter, "gpu": name, "fp32_peak_tflops": peak and peak / 1e12,
                           "cpu": platform.processor() or platform.machine(), "platform": platform.platform(),
                           "rounds": args.rounds, "passes": args.passes, "models": {}}
    print(f"adapter: {adapter}; GPU {name}, fp32 peak {peak and peak / 1e12:.1f} TFLOP/s" if peak else
          f"adapter: {adapter}; GPU {name}", flush=True)
    for path in sorted(args.dir.glob("*.wrt")):
        try:
            r = measure(path, args.rounds, args.passes, args.warmup, not args.no_native,
                        lambda s: print(s, flush=True))
        except Exception as e:  # report and go on with the next model
            print(f"{path.name}: {type(e).__name__}: {e}", flush=True)
            doc["models"][path.stem] = {"error": f"{type(e).__name__}: {e}"}
            continue
        if path.name.startswith("gemm") and peak:
            r["fp32_peak_share"] = [g * 1e9 / peak for g in r["gflops_kernel"]]
            print(f"  GEMM kernel: {max(r['gflops_kernel']) / 1e3:.2f} TFLOP/s = "
                  f"{100 * max(r['fp32_peak_share']):.1f}% of fp32 peak", flush=True)
        doc["models"][path.stem] = r
    if args.output:
        args.output.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        print(f"results: {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
