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


def _sm_clock() -> float | None:
    """The GPU's SM clock now, in MHz, from nvidia-smi (None without one)."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=30).stdout.strip().splitlines()[0]
        return float(out)
    except (OSError, IndexError, ValueError, subprocess.SubprocessError):
        return None


def _stats(v: list[float]) -> dict[str, float]:
    a = np.asarray(v, np.float64)
    return {"median": float(np.median(a)), "min": float(a.min()), "max": float(a.max())}


def measure(path: Path, rounds: int, passes: int, warmup: int, native: bool, log: Callable[[str], None],
            gpu_warm_s: float = 0.0, storage: str = "f32") -> dict:
    import wasmrt
    from wasmrt.engines.webgpu import WebGPUModel

    data = path.read_bytes()
    t0 = time.perf_counter()
    gpu = WebGPUModel(data, path.name, timing=True, storage=storage)
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
    clocks: list[float | None] = []
    for _ in range(passes):
        for k, e in engines.items():
            ts, ks = [], []
            if k == "webgpu":
                # the GPU lowers its clocks while the CPU engine runs; a user's steady stream of runs keeps them up
                t0 = time.perf_counter()
                while time.perf_counter() - t0 < gpu_warm_s:
                    e.run(feeds)
            for _ in range(per[k]):
                t0 = time.perf_counter()
                e.run(feeds)
                ts.append((time.perf_counter() - t0) * 1e3)
                if k == "webgpu":
                    ks.append(gpu.kernel_seconds * 1e3)
            times[k].append(ts)
            if k == "webgpu":
                kern.append(ks)
                clocks.append(_sm_clock())
    flops = gpu.plan.flops
    res: dict[str, Any] = {
        "inputs": {s.name: list(s.shape) for s in gpu.inputs}, "dispatches": len(gpu.plan.dispatches),
        "gflop": flops / 1e9, "load_ms": load_ms, "max_rel_err_vs_native": err,
        "webgpu_ms": [_stats(p) for p in times["webgpu"]], "kernel_ms": [_stats(p) for p in kern],
        "rounds": per, "gpu_warm_s": gpu_warm_s, "sm_clock_mhz_after_pass": clocks,
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
    # the dispatches back to back, the GPU kept busy: the kernels' rate apart from uploads, readback and host gaps
    gpu.run(feeds)
    res["kernel_busy_ms"] = busy_kernel_ms(gpu, max(3, rounds // 4), passes, gpu_warm_s)
    res["sm_clock_mhz_busy"] = _sm_clock()
    res["gflops_kernel_busy"] = [flops / (t * 1e6) for t in res["kernel_busy_ms"]]
    prof: dict[str, dict[str, float]] = {}
    for _ in range(3):  # clocks up for the profile too
        gpu.time_dispatches(1)
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
        + (f"  SM {'/'.join(f'{c:.0f}' for c in clocks if c)} MHz" if any(clocks) else "")
        + f"\n  kernels back to back {min(res['kernel_busy_ms']):.3f}..{max(res['kernel_busy_ms']):.3f} ms"
        + f" (SM {res['sm_clock_mhz_busy']} MHz)"
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

    from wasmrt.compile.converter import convert
    from wasmrt.zoo.models import BUNDLED, model_path

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
    from wasmrt.compile.converter import convert
    from wasmrt.compile.ir import Graph

    g = Graph()
    x = g.add_input("x", (n, n))
    w = g.add_const("w", np.random.default_rng(5).uniform(-1, 1, (n, n)).astype(np.float32))
    (y,) = g.add_node("FULLY_CONNECTED", [x, w], {}, name="gemm", outputs=["y"])
    g.outputs.append(y)
    return convert(g).data


def busy_kernel_ms(m: Any, rounds: int, passes: int, warm_s: float = 0.5) -> list[float]:
    """Per pass, the median GPU time of one execution of the model's dispatches recorded back to back (enough of
    them per submit for about 20 ms of GPU work), after warm_s seconds of the same to bring the clocks up."""
    per = m.time_dispatches(1)
    reps = max(1, min(200, int(0.02 / max(per, 1e-6))))
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < warm_s:
        m.time_dispatches(reps)
    return [float(np.median([m.time_dispatches(reps) * 1e3 for _ in range(rounds)])) for _ in range(passes)]


# GEMM tiles --tune tries: (BM, BN, BK, TM, TN, stages) as kernels_wasm/gen/kernels/gpu.py GemmTile
TUNE_TILES = [(128, 128, 8, 8, 8, 2), (128, 128, 8, 8, 8, 1), (128, 128, 16, 8, 8, 1), (128, 128, 16, 8, 8, 2),
              (128, 64, 16, 8, 4, 2), (64, 128, 16, 4, 8, 2), (128, 128, 8, 4, 8, 2), (128, 128, 16, 4, 8, 2),
              (64, 64, 16, 4, 4, 2), (128, 128, 32, 8, 8, 1)]


def tune_gemm(n: int, rounds: int, passes: int, log: Callable[[str], None]) -> list[dict]:
    """The n^3 FULLY_CONNECTED with each GEMM tile of TUNE_TILES (needs the checkout's kernels_wasm): kernel time per
    pass and the largest difference from the shipped kernel's output."""
    from kernels_wasm.gen.kernels.gpu import GemmTile, gemm
    from wasmrt.engines.webgpu import WebGPUModel, device, pipeline

    m = WebGPUModel(gemm_model(n), f"gemm{n}", timing=True)
    feeds = {"x": np.random.default_rng(2).uniform(-1, 1, (n, n)).astype(np.float32)}
    want = m.run(feeds)["y"]
    limit = device()[1].limits["max-compute-workgroup-storage-size"]
    out = []
    for spec in TUNE_TILES:
        t = GemmTile(*spec)
        name = "gemm_{}x{}_k{}_{}x{}_s{}".format(*spec)
        if t.workgroup_bytes() > limit:
            log(f"{name}: needs {t.workgroup_bytes()} bytes of workgroup memory, this GPU gives {limit}")
            continue
        m.swap_kernel(0, pipeline(name, gemm(name, False, t).source()), (-(-n // t.bn), -(-n // t.bm), 1))
        err = float(np.max(np.abs(m.run(feeds)["y"] - want))) / float(np.max(np.abs(want)))
        ks = busy_kernel_ms(m, rounds, passes)
        clock = _sm_clock()
        tf = [2.0 * n ** 3 / (k * 1e-3) / 1e12 for k in ks]
        out.append({"tile": spec, "workgroup_bytes": t.workgroup_bytes(), "kernel_ms": ks, "tflops": tf,
                    "max_rel_diff": err, "sm_clock_mhz": clock})
        log(f"{name:<28s} kernel {min(ks):6.3f}..{max(ks):6.3f} ms  {min(tf):6.2f}..{max(tf):6.2f} TFLOP/s  "
            f"diff {err:.1e}  SM {clock} MHz")
    m.release()
    return out


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
    ap.add_argument("--gpu-warm", type=float, default=0.5, metavar="S",
                    help="seconds of GPU runs before each timed GPU pass (the clocks drop while the CPU engine runs)")
    ap.add_argument("--storage", choices=("f32", "f16"), default="f32", help="GPU storage of activations and weights")
    ap.add_argument("--tune", type=int, default=0, metavar="N", help="time the N^3 GEMM with each tile of TUNE_TILES")
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
                           "rounds": args.rounds, "passes": args.passes, "storage": args.storage, "models": {}}
    print(f"adapter: {adapter}; GPU {name}, fp32 peak {peak and peak / 1e12:.1f} TFLOP/s" if peak else
          f"adapter: {adapter}; GPU {name}", flush=True)
    if args.tune:
        doc["gemm_tune"] = tune_gemm(args.tune, args.rounds, args.passes, lambda s: print(s, flush=True))
    for path in sorted(args.dir.glob("*.wrt")):
        try:
            r = measure(path, args.rounds, args.passes, args.warmup, not args.no_native,
                        lambda s: print(s, flush=True), args.gpu_warm, args.storage)
        except Exception as e:  # report and go on with the next model
            print(f"{path.name}: {type(e).__name__}: {e}", flush=True)
            doc["models"][path.stem] = {"error": f"{type(e).__name__}: {e}"}
            continue
        if path.name.startswith("gemm") and peak:
            r["fp32_peak_share"] = [g * 1e9 / peak for g in r["gflops_kernel"]]
            r["fp32_peak_share_busy"] = [g * 1e9 / peak for g in r["gflops_kernel_busy"]]
            print(f"  GEMM kernel, one per run: {max(r['gflops_kernel']) / 1e3:.2f} TFLOP/s = "
                  f"{100 * max(r['fp32_peak_share']):.1f}% of fp32 peak; back to back, per pass: "
                  + ", ".join(f"{100 * v:.1f}%" for v in r["fp32_peak_share_busy"]), flush=True)
        doc["models"][path.stem] = r
    if args.output:
        args.output.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        print(f"results: {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
