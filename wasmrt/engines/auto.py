"""engine="auto" (wasmrt.load): where a WebGPU adapter works, the model is loaded on the native engine (the best CPU
engine) and on WebGPU, each runs a short interleaved trial on zeros of its inputs (trial.py, the same as the JS
backend "auto"), and the faster keeps it; `model.choice` says which and why, with both medians. WebGPU is slower
than the CPU on small models (per-dispatch and read-back costs; a software adapter always), so this is measured,
not assumed. Without wgpu or an adapter, or where WebGPU cannot run the model, the CPU engine runs it and says why.
The pick is cached per model digest, adapter and CPU engine build in the user cache directory (engines/)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from python_ref.wrt_file import stored_digest
from wasmrt.engines import webgpu
from wasmrt.engines.base import Model
from wasmrt.engines.choose import cache_dir, device_identity
from wasmrt.engines.trial import pick, run_trial

CPU = "native"
ENGINES = (CPU, "webgpu")
CACHE_VERSION = 1
MAX_ENTRY_BYTES = 1 << 16


def _key(data: bytes, adapter: str, cpu_ident: str) -> str:
    model = stored_digest(data) or hashlib.sha256(data).hexdigest()
    return hashlib.sha256("\n".join([model, adapter, cpu_ident, device_identity()]).encode()).hexdigest()


def _read(path: Path) -> dict[str, Any] | None:
    """A cached pick, or None: missing, too large, not JSON or of the wrong shape (then the trial runs again)."""
    try:
        if path.stat().st_size > MAX_ENTRY_BYTES:
            return None
        e = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    ok = (isinstance(e, dict) and e.get("version") == CACHE_VERSION and e.get("engine") in ENGINES
          and isinstance(e.get("reason"), str) and isinstance(e.get("ms"), dict)
          and all(k in ENGINES and type(v) in (int, float) and 0 <= v < 1e9 for k, v in e["ms"].items()))
    return e if ok else None


def _write(path: Path, choice: dict[str, Any]) -> None:
    try:  # best effort: a cache that cannot be written only costs a trial next time
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"version": CACHE_VERSION, **choice}))
        os.replace(tmp, path)
    except OSError:
        pass


def _keep(model: Model, engine: str, reason: str, ms: dict[str, float]) -> Model:
    model.choice = {"engine": engine, "reason": reason, "ms": dict(ms)}
    return model


def zeros_feeds(model: Model) -> dict[str, np.ndarray]:
    return {s.name: np.zeros(s.shape, s.dtype) for s in model.inputs}


def load_auto(data: bytes, cpu_load: Callable[[], Model], gpu_load: Callable[[], Model], cpu_ident: str) -> Model:
    """cpu_load / gpu_load: the model loaded on the native / WebGPU engine; cpu_ident: the native build (cache key)."""
    ok, adapter = webgpu.available()
    if not ok:
        return _keep(cpu_load(), CPU, f"{CPU}: WebGPU is not available here ({adapter})", {})
    path = cache_dir() / "engines" / f"{_key(data, adapter, cpu_ident)}.json"
    known = _read(path)
    if known is not None:
        why = f"{known['reason']}; remembered from an earlier load"
        if known["engine"] == "webgpu":
            try:
                return _keep(gpu_load(), "webgpu", why, known["ms"])
            except Exception:  # tried again below, where the CPU engine names what is wrong
                pass
        else:
            return _keep(cpu_load(), CPU, why, known["ms"])
    cpu = cpu_load()  # a bad file is refused here, in the C engine's words
    try:
        gpu = gpu_load()
    except Exception as e:  # an op without a WGSL kernel, a dtype, or the adapter itself
        return _keep(cpu, CPU, f"{CPU}: WebGPU cannot run this model ({e})", {})
    try:
        ms = run_trial({CPU: cpu, "webgpu": gpu}, zeros_feeds(cpu))
    except Exception as e:  # a model that needs real inputs to run: the CPU is the safe side
        gpu.release()
        return _keep(cpu, CPU, f"{CPU}: the trial run failed ({e})", {})
    faster, reason = pick(ms, CPU)
    (gpu if faster == CPU else cpu).release()
    _write(path, {"engine": faster, "reason": reason, "ms": ms})
    return _keep(cpu if faster == CPU else gpu, faster, reason, ms)
