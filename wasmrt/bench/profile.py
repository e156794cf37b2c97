"""`wasmrt bench --profile`: time and GFLOP/s of every op inside the whole graph, native and wasm side by side.

The engine exposes its ops (wrt_num_ops, wrt_op_type, wrt_op_name, wrt_op_kernel). Natively, wrt_run_profiled
times each op with the engine's clock (through ctypes); in Node and Chromium the host steps through the graph with
wrt_run_ops(m, i, i + 1) and times each step with performance.now(), so the wasm modules stay import-free. Every
engine runs the same model with the same input, RUNS times after a warm-up; an op's time is the 10%-trimmed mean
over the runs (Chromium's clock is coarsened to 5 us with jitter: a mean stays unbiased where a median would not).
The sum over ops is shown next to the whole-run time measured the same way.
"""

from __future__ import annotations

import ctypes
from collections import defaultdict
from typing import Any

import numpy as np

from wasmrt.bench.prepare import Prepared

RUNS = 40
WARMUP = 3


def op_macs(model: Any, op: Any) -> int:
    """Multiply-accumulates of one op (as wasmrt.report.macs counts them for a whole model)."""
    t = model.tensors
    if op.op in ("CONV_2D", "CONV_TRANSPOSE_2D"):
        pixels = t[op.outputs[0] if op.op == "CONV_2D" else op.inputs[0]].shape[:3]
        return int(np.prod(pixels)) * int(np.prod(t[op.inputs[1]].shape))
    if op.op in ("FULLY_CONNECTED", "MATMUL"):
        return int(np.prod(t[op.outputs[0]].shape)) * t[op.inputs[0]].shape[-1]
    return 0


def describe(model: Any, op: Any) -> str:
    """A short kind for the table and the by-kind sums: "dw 3x3/2", "conv 1x1/1", "pad", ..."""
    if op.op == "CONV_2D":
        w = model.tensors[op.inputs[1]].shape
        kind = "dw" if op.attrs.get("groups", 1) > 1 and w[3] == 1 else "conv"
        return f"{kind} {w[1]}x{w[2]}/{op.attrs.get('strides', (1, 1))[0]}"
    return op.op.lower()


def trimmed_mean(samples: list[float] | np.ndarray, cut: float = 0.1) -> float:
    s = np.sort(np.asarray(samples, np.float64))
    k = int(len(s) * cut)
    return float(s[k:len(s) - k].mean()) if len(s) > 2 * k else float(s.mean())


def _ops_of(prep: Prepared) -> list[dict[str, Any]]:
    from python_ref.wrt_file import read_wrt

    m = read_wrt(prep.wrt.read_bytes(), "model.wrt")
    return [{"index": k, "type": op.op, "op": describe(m, op), "name": op.name,
             "shape": list(m.tensors[op.outputs[0]].shape), "macs": op_macs(m, op)} for k, op in enumerate(m.ops)]


def _profile_native(prep: Prepared, runs: int) -> dict[str, Any]:
    from wasmrt.bench.native import _CEngine
    from wasmrt.dev import build

    eng = _CEngine(build.build_native().path, prep.wrt.read_bytes())
    lib = eng.lib
    lib.wrt_num_ops.argtypes = [ctypes.c_void_p]
    for fn in ("wrt_op_type", "wrt_op_name", "wrt_op_kernel"):
        getattr(lib, fn).restype = ctypes.c_char_p
        getattr(lib, fn).argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.wrt_run_profiled.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_double), ctypes.c_int]
    n = lib.wrt_num_ops(eng.h)
    ops = [{"type": lib.wrt_op_type(eng.h, i).decode(), "name": lib.wrt_op_name(eng.h, i).decode(),
            "kernel": lib.wrt_op_kernel(eng.h, i).decode()} for i in range(n)]
    feeds = [np.ascontiguousarray(prep.feeds[i["name"]]).reshape(-1) for i in prep.inputs]
    ins = eng.buffers(0, [f.dtype for f in feeds])
    ms = (ctypes.c_double * max(n, 1))()
    samples = np.zeros((runs, n))
    for r in range(-WARMUP, runs):
        for dst, src in zip(ins, feeds, strict=True):
            dst[:] = src
        if lib.wrt_run_profiled(eng.h, ms, n) != n:
            return {"error": f"wrt_run_profiled failed: {lib.wrt_error_message().decode()}"}
        if r >= 0:
            samples[r] = np.frombuffer(ms, np.float64, n)
    eng.release()
    return {"target": eng.target, "ops": ops, "ms": [trimmed_mean(samples[:, i]) for i in range(n)],
            "whole_ms": trimmed_mean(samples.sum(axis=1))}


def _profile_wasm(prep: Prepared, host: str, variants: list[str], runs: int, bar: Any) -> dict[str, Any]:
    from wasmrt.bench.hosts import run_wasm_host

    results, _, _ = run_wasm_host(prep, host, variants, False, WARMUP, 3, lambda *a: None, bar.log,
                                      profile_runs=runs)
    out: dict[str, Any] = {}
    for v in variants:
        r = results.get(f"wasmrt-{v}", {})
        p = r.get("profile") or {"error": r.get("error", "no profile returned")}
        if "error" in p:
            out[v] = {"error": p["error"].splitlines()[0]}
            continue
        s = np.asarray(p["samples"], np.float64)
        out[v] = {"target": r.get("info", {}).get("target", v), "ops": p["ops"],
                  "ms": [trimmed_mean(x) for x in s], "whole_ms": trimmed_mean(p["whole_ms"])}
    return out


def profile_model(prep: Prepared, hosts: list[str], variants: list[str], bar: Any, runs: int = RUNS) -> dict:
    """{"ops": [...], "columns": [{"id", "host", "variant", "target", "whole_ms", "ms": [per op]}]}"""
    ops = _ops_of(prep)
    columns: list[dict[str, Any]] = []
    errors: list[str] = []
    if "native" in hosts:
        bar.stage(f"{prep.name}: per-op profile, native")
        nat = _profile_native(prep, runs)
        if "error" in nat:
            errors.append(f"native: {nat['error']}")
        else:
            columns.append({"id": "native", "host": "native", "variant": nat["target"], **nat})
    for host in ("node", "chromium"):
        if host not in hosts or not variants:
            continue
        bar.stage(f"{prep.name}: per-op profile, {host}")
        try:
            res = _profile_wasm(prep, host, variants, runs, bar)
        except Exception as e:  # a host that cannot run leaves its columns out, with the reason
            errors.append(f"{host}: {str(e).splitlines()[0]}")
            continue
        for v in variants:
            if "error" in res.get(v, {"error": "missing"}):
                errors.append(f"{host} {v}: {res.get(v, {}).get('error', 'missing')}")
                continue
            columns.append({"id": f"{host}-{v}", "host": host, "variant": v, **res[v]})
    for col in columns:  # the kernel path each engine took, per op (they can differ by target)
        if len(col["ops"]) != len(ops):
            errors.append(f"{col['id']}: {len(col['ops'])} ops, the model has {len(ops)}")
    columns = [c for c in columns if len(c["ops"]) == len(ops)]
    for k, op in enumerate(ops):
        op["kernel"] = {c["id"]: c["ops"][k]["kernel"] for c in columns}
    return {"ops": ops, "columns": [{k: v for k, v in c.items() if k != "ops"} for c in columns], "errors": errors,
            "runs": runs, "method": "in-graph: wrt_run_profiled natively, wrt_run_ops stepped and timed by the "
                                    "JS host in wasm; 10%-trimmed mean over runs"}


def _gf(macs: int, ms: float | None) -> str:
    return f"{2 * macs / (ms * 1e6):6.1f}" if ms and macs else "     -"


def _ms(ms: float | None) -> str:
    return f"{ms:8.3f}" if ms is not None else "       -"


def _ratio(a: float, b: float) -> str:
    return f"{a / b:6.2f}" if a and b else "     -"


def profile_table(prof: dict[str, Any], top: int | None = None) -> str:
    """Per op (the `top` slowest natively, or all), then sums by op kind and by type; `x nat` = wasm / native."""
    if "error" in prof:
        return prof["error"]
    cols = prof["columns"]
    if not cols:
        return "no engine could be profiled: " + "; ".join(prof.get("errors", []))
    base = cols[0]  # native when it ran
    head = f"{'#':>3}  {'op':<12} {'out shape':<16} {'MMAC':>7}" + "".join(
        f"  {c['id'] + ' ms':>16} {'GF/s':>6}" + ("" if c is base else f" {'x ' + base['id'][:3]:>6}") for c in cols)
    lines = [f"{prof['method']}; {prof['runs']} runs; columns: "
             + ", ".join(f"{c['id']} ({c['variant']})" for c in cols), head]

    def row(label: str, shape: str, macs: int, values: list[float]) -> str:
        line = f"{label:<17} {shape:<16} {macs / 1e6:7.2f}"
        for c, v in zip(cols, values, strict=True):
            line += f"  {_ms(v):>16} {_gf(macs, v)}" + ("" if c is base else f" {_ratio(v, values[0])}")
        return line

    order = list(range(len(prof["ops"])))
    if top:
        order = sorted(order, key=lambda k: -base["ms"][k])[:top]
    for k in order:
        op = prof["ops"][k]
        lines.append(row(f"{k:>3}  {op['op']:<12}", "x".join(map(str, op["shape"])), op["macs"],
                         [c["ms"][k] for c in cols]))
    for title, key in (("by op kind", "op"), ("by op type", "type")):
        lines += ["", f"{title} (sum over ops):"]
        groups: dict[str, list[int]] = defaultdict(list)
        for k, op in enumerate(prof["ops"]):
            groups[op[key]].append(k)
        for name, ks in sorted(groups.items(), key=lambda kv: -sum(base["ms"][k] for k in kv[1])):
            macs = sum(prof["ops"][k]["macs"] for k in ks)
            lines.append(row(f"     {name:<12}", f"{len(ks)} ops", macs, [sum(c["ms"][k] for k in ks) for c in cols]))
    macs = sum(op["macs"] for op in prof["ops"])
    lines.append(row(f"     {'sum of ops':<12}", "", macs, [sum(c["ms"]) for c in cols]))
    lines.append(row(f"     {'whole run':<12}", "", macs, [c["whole_ms"] for c in cols]))
    for e in prof.get("errors", []):
        lines.append(f"note: {e}")
    return "\n".join(lines)
