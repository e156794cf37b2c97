"""`wasmrt bench --profile`: time and GFLOP/s per op, native and wasm side by side.

The C engine has no per-op timer yet (the hook asked for is `wrt_run_profiled`, see the bench README), so each op
is timed in isolation: the op alone becomes a one-op .wrt (its real weights and attributes, random inputs of its
real shapes), and only wrt_run is timed, natively through the C API and in Node through the JS binding's engine
exports. Isolated ops start with warm caches; the sum over ops is shown next to the whole-model median so the
difference (op boundaries, cache effects, the copies in and out) stays visible.
"""

from __future__ import annotations

import ctypes
import json
import subprocess
import time
from collections import defaultdict
from typing import Any

import numpy as np

from wasmrt.bench import peers as peer_setup
from wasmrt.bench.prepare import Prepared
from wasmrt.ir import Graph, Node

TARGET_MS = 30.0  # time budget per op and engine; at least MIN_REPS runs
MIN_REPS, MAX_REPS = 5, 300


def op_macs(graph: Graph, n: Node) -> int:
    """Multiply-accumulates of one op (as wasmrt.report.macs counts them for a whole model)."""
    t = graph.tensors
    if n.op in ("CONV_2D", "CONV_TRANSPOSE_2D"):
        pixels = t[n.outputs[0] if n.op == "CONV_2D" else n.inputs[0]].shape[:3]
        return int(np.prod(pixels)) * int(np.prod(t[n.inputs[1]].shape))
    if n.op in ("FULLY_CONNECTED", "MATMUL"):
        return int(np.prod(t[n.outputs[0]].shape)) * t[n.inputs[0]].shape[-1]
    return 0


def describe(graph: Graph, n: Node) -> str:
    if n.op == "CONV_2D":
        w = graph.tensors[n.inputs[1]].shape
        kind = "dw" if n.attrs["groups"] > 1 and w[3] == 1 else "conv"
        return f"{kind} {w[1]}x{w[2]}/{n.attrs['strides'][0]}"
    return n.op.lower()


def one_op_graph(graph: Graph, n: Node) -> Graph:
    g = Graph()
    ins = []
    for i in n.inputs:
        t = graph.tensors.get(i) if i else None
        if t is None:
            ins.append("")
        elif t.is_const:
            ins.append(g.add_const(i, t.data))
        else:
            if i not in g.tensors:
                g.add_input(i, t.shape, t.dtype)
            ins.append(i)
    g.outputs = g.add_node(n.op, ins, dict(n.attrs), name=n.name or n.op.lower())
    return g


def _write_ops(prep: Prepared) -> list[dict[str, Any]]:
    from wasmrt.converter import convert

    assert prep.graph is not None
    folder = prep.dir / "ops"
    folder.mkdir(exist_ok=True)
    rng = np.random.default_rng(1)
    ops = []
    for k, n in enumerate(prep.graph.nodes):
        entry: dict[str, Any] = {"index": k, "op": describe(prep.graph, n), "name": n.name,
                                 "shape": list(prep.graph.tensors[n.outputs[0]].shape),
                                 "macs": op_macs(prep.graph, n)}
        try:
            g = one_op_graph(prep.graph, n)
            (folder / f"op{k:03d}.wrt").write_bytes(convert(g).data)
            feeds = []
            for j, name in enumerate(g.inputs):
                t = g.tensors[name]
                f = f"op{k:03d}_in{j}.bin"
                rng.uniform(-1, 1, t.shape).astype(t.dtype).tofile(folder / f)
                feeds.append(f)
            entry.update(model=f"op{k:03d}.wrt", inputs=feeds)
        except Exception as e:  # an op the one-op model cannot express is reported, not fatal
            entry["error"] = str(e)[:200]
        ops.append(entry)
    return ops


def _reps(first_ms: float) -> int:
    return int(min(MAX_REPS, max(MIN_REPS, TARGET_MS / max(first_ms, 1e-3))))


def _time_native(prep: Prepared, ops: list[dict[str, Any]]) -> tuple[str, dict[int, float]]:
    from wasmrt import build
    from wasmrt.bench.native import _CEngine

    lib = build.build_native().path
    out: dict[int, float] = {}
    target = ""
    for op in ops:
        if "model" not in op:
            continue
        eng = _CEngine(lib, (prep.dir / "ops" / op["model"]).read_bytes())
        target = eng.target
        for buf, f in zip(eng.buffers(0), op["inputs"], strict=True):
            buf[:] = np.fromfile(prep.dir / "ops" / f, np.float32)
        eng.run()  # warm-up (and weight packing, if the engine defers it)
        t0 = time.perf_counter()
        eng.run()
        times = []
        for _ in range(_reps((time.perf_counter() - t0) * 1e3)):
            t0 = time.perf_counter()
            eng.run()
            times.append((time.perf_counter() - t0) * 1e3)
        out[op["index"]] = float(np.median(times))
        eng.lib.wrt_release(ctypes.c_void_p(eng.h))
    return target, out


def _time_wasm(prep: Prepared, ops: list[dict[str, Any]], variants: list[str], log: Any) -> dict[str, dict]:
    from wasmrt.bench.hosts import ROOT, _wasm_dir

    peers_dir = peer_setup.ensure_npm_peers(log)
    job = {"ops": [o for o in ops if "model" in o], "variants": variants, "dir": str(prep.dir / "ops"),
           "wasmrt_module": str(ROOT / "js_bindings" / "src" / "index.js"), "wasmrt_wasm_dir": str(_wasm_dir()),
           "target_ms": TARGET_MS, "min_reps": MIN_REPS, "max_reps": MAX_REPS}
    job_path, result_path = prep.dir / "profile-job.json", prep.dir / "profile-result.json"
    job_path.write_text(json.dumps(job))
    cmd = [*peer_setup.node_command(), str(peers_dir / "bench" / "profile_runner.mjs"), str(job_path),
           str(result_path)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        log(f"wasm profile failed: {r.stderr.strip()[-500:]}")
        return {}
    return json.loads(result_path.read_text())


def profile_model(prep: Prepared, hosts: list[str], variants: list[str], bar: Any) -> dict[str, Any]:
    if prep.graph is None:
        return {"error": "--profile needs the source model (.onnx/.tflite): a .wrt has no graph to split"}
    ops = _write_ops(prep)
    target, native = _time_native(prep, ops) if "native" in hosts else ("", {})
    wasm = _time_wasm(prep, ops, variants, bar.log) if variants and ({"node", "chromium"} & set(hosts)) else {}
    for op in ops:
        op["native_ms"] = native.get(op["index"])
        op["wasm_ms"] = {v: wasm.get(v, {}).get(str(op["index"])) for v in variants}
    return {"native_target": target, "variants": variants if wasm else [], "ops": ops,
            "method": "each op alone as a one-op model, wrt_run timed (inputs set once); wasm in Node"}


def _gf(macs: int, ms: float | None) -> str:
    return f"{2 * macs / (ms * 1e6):6.1f}" if ms and macs else "     -"


def _ms(ms: float | None) -> str:
    return f"{ms:8.3f}" if ms is not None else "       -"


def profile_table(prof: dict[str, Any]) -> str:
    if "error" in prof:
        return prof["error"]
    variants = prof["variants"]
    head = f"{'#':>3}  {'op':<12} {'out shape':<18} {'MMAC':>7}  {'native ms':>9} {'GF/s':>6}" + "".join(
        f"  {v + ' ms':>11} {'GF/s':>6} {'x nat':>6}" for v in variants)
    lines = [f"native target: {prof['native_target']}; {prof['method']}", head]
    by_type: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0] + [0.0] * len(variants))
    for op in prof["ops"]:
        nat = op.get("native_ms")
        line = f"{op['index']:>3}  {op['op']:<12} {'x'.join(map(str, op['shape'])):<18} {op['macs'] / 1e6:7.2f}  " \
               f"{_ms(nat):>9} {_gf(op['macs'], nat)}"
        agg = by_type[op["op"].split()[0]]
        agg[0] += op["macs"]
        agg[1] += nat or 0.0
        for j, v in enumerate(variants):
            w = op["wasm_ms"].get(v)
            agg[2 + j] += w or 0.0
            ratio = f"{w / nat:6.2f}" if w and nat else "     -"
            line += f"  {_ms(w):>11} {_gf(op['macs'], w)} {ratio}"
        if "error" in op:
            line += f"  (skipped: {op['error'][:60]})"
        lines.append(line)
    lines.append("")
    lines.append("by op type (sum over ops):")
    for kind, agg in sorted(by_type.items(), key=lambda kv: -kv[1][1]):
        line = f"     {kind:<12} {'':<18} {agg[0] / 1e6:7.2f}  {_ms(agg[1]):>9} {_gf(int(agg[0]), agg[1])}"
        for j in range(len(variants)):
            w = agg[2 + j]
            line += f"  {_ms(w):>11} {_gf(int(agg[0]), w)} {w / agg[1] if agg[1] else 0:6.2f}"
        lines.append(line)
    total = [sum(v[i] for v in by_type.values()) for i in range(2 + len(variants))]
    line = f"     {'total':<12} {'':<18} {total[0] / 1e6:7.2f}  {_ms(total[1]):>9} {_gf(int(total[0]), total[1])}"
    for j in range(len(variants)):
        line += f"  {_ms(total[2 + j]):>11} {_gf(int(total[0]), total[2 + j])} " \
                f"{total[2 + j] / total[1] if total[1] else 0:6.2f}"
    lines.append(line)
    return "\n".join(lines)
