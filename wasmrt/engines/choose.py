"""Per-layer algorithm choice for the C engine (native and wasm): the rules, a deterministic choice, or candidates
timed on this machine and cached.

The engine lists each op's candidates (wrt_op_num_choices / wrt_op_choice_name; index 0 is always the dense path)
and keeps the measuring procedure's constants and decision (wrt_tune_*): this module loads, times op by op with the
host's clock (wasm has none) and feeds the times back, as the JS package does (js_bindings/src/choose.js).
Measured choices are cached in a file per key (model digest, engine build, device, threads) under the user cache
directory. The model digest is the one the writer stored in the file (read at no cost, so the entry is looked up
before the load and its choice forced at the one load); files without it are hashed after a rules' load. An entry
that is unreadable, of the wrong shape or that does not fit the loaded model is ignored and measured again.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from python_ref.wrt_file import stored_digest
from wasmrt.errors import WasmrtError

CHOOSE_MODES = ("rules", "measure", "deterministic")
CACHE_VERSION = 1
MAX_CACHE_BYTES = 4 << 20  # an entry larger than this is not read (a MobileNetV2 entry is about 3 KB)
MAX_CANDIDATES = 4  # wrt_tune_param(4): checked against the engine when an entry is read


class ChoiceModel(Protocol):
    """What a loaded C-engine model offers this module (NativeModel, WasmModel)."""

    choice_source: str
    choice_times: dict[int, list[float | None]]

    def op_count(self) -> int: ...
    def op_info(self, i: int) -> tuple[str, str, str, list[str], int]: ...  # type, name, kernel, candidates, chosen
    def op_choice(self, i: int) -> tuple[int, int]: ...  # candidate count (0 without alternatives), chosen index
    def run_ops(self, begin: int, end: int) -> None: ...
    def tune(self, name: str, *args: float) -> float: ...
    def release(self) -> None: ...


Loader = Callable[[Sequence[int], int], Any]  # (per-op forced indices, index forced on every other op) -> model


def check_mode(choose: str) -> str:
    if choose not in CHOOSE_MODES:
        raise ValueError(f"choose must be one of {', '.join(CHOOSE_MODES)}, got {choose!r}")
    return choose


def plan_of(model: ChoiceModel) -> list[dict[str, Any]]:
    """Per op in execution order: index, type, name, kernel, candidates, chosen (-1: no alternatives) and, when the
    choice was measured, each candidate's median time in ms (None where it was not timed)."""
    rows = []
    for i in range(model.op_count()):
        typ, name, kernel, cands, chosen = model.op_info(i)
        times = model.choice_times.get(i) if cands else None
        rows.append({"op": i, "type": typ, "name": name, "kernel": kernel, "candidates": cands, "chosen": chosen,
                     "times_ms": list(times[:len(cands)]) if times else None})
    return rows


def format_plan(rows: list[dict[str, Any]], source: str) -> str:
    """The ops with candidates, one a line: the chosen one marked with *, measured median times in ms."""
    lines = [f"algorithm choices ({source}):"]
    for r in rows:
        if not r["candidates"]:
            continue
        times = r["times_ms"] or [None] * len(r["candidates"])
        cands = ", ".join(("*" if k == r["chosen"] else "") + c + (f" {t:.3f} ms" if t is not None else "")
                          for k, (c, t) in enumerate(zip(r["candidates"], times, strict=True)))
        lines.append(f"  {r['op']:4d} {r['type']:<16s} {r['name'][:40]:<40s} {cands}")
    if len(lines) == 1:
        lines.append("  (no op has alternatives)")
    return "\n".join(lines)


def _counts(model: ChoiceModel) -> list[int]:
    return [model.op_choice(i)[0] for i in range(model.op_count())]


def measure(load: Loader, clock: Callable[[], float] = time.perf_counter, base: Any = None) -> ChoiceModel:
    """Time each candidate index on this machine and load the model with the fastest per op (the engine decides:
    wrt_tune_pick). The procedure's constants come from the engine (wrt_tune_param). base: the model already loaded
    with the rules' choice, if any."""
    start = clock()
    base = base if base is not None else load((), -1)  # the rules: which ops have candidates, which index they take
    n = base.op_count()
    info = [base.op_info(i) for i in range(n)]
    counts = [len(c) for _, _, _, c, _ in info]
    rules = [chosen for *_, chosen in info]
    base.choice_source = "measured"
    if max(counts, default=0) < 2:
        return base
    passes, warm, budget_ms = (int(base.tune("wrt_tune_param", j)) for j in range(3))
    ops = [i for i in range(n) if counts[i] >= 2]
    base.tune("wrt_tune_begin", n)
    timed = False
    for k in range(max(counts)):
        if timed and (clock() - start) * 1e3 > budget_ms:
            break  # ops not timed for k keep what was timed; wrt_tune_pick falls back to the rules
        model = base if all(rules[i] == k for i in range(n) if counts[i] > k) else load((), k)
        try:
            for p in range(warm + passes):  # the ops with a candidate k, each alone (wrt_tune_param's words)
                for i in ops:
                    if counts[i] > k:
                        t0 = clock()
                        model.run_ops(i, i + 1)
                        if p >= warm:
                            base.tune("wrt_tune_time", i, k, (clock() - t0) * 1e3)
            timed = True
        finally:
            if model is not base:
                model.release()
    vector = [int(base.tune("wrt_tune_pick", i, rules[i])) if counts[i] >= 2 else -1 for i in range(n)]
    times = {i: [_median(base, i, k) for k in range(counts[i])] for i in range(n) if counts[i] >= 2}
    if vector != [r if counts[i] >= 2 else -1 for i, r in enumerate(rules)]:
        base.release()
        base = load(vector, -1)
    base.choice_source, base.choice_times = "measured", times
    return base


def _median(model: ChoiceModel, i: int, k: int) -> float | None:
    t = model.tune("wrt_tune_median", i, k)
    return round(t, 6) if t >= 0 else None


# --- the cache of measured choices -----------------------------------------------------------------------------

def cache_dir() -> Path:
    """$WASMRT_CACHE_DIR, else $XDG_CACHE_HOME/wasmrt, else ~/.cache/wasmrt."""
    if os.environ.get("WASMRT_CACHE_DIR"):
        return Path(os.environ["WASMRT_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "wasmrt"


def device_identity() -> str:
    """The CPU as far as Python can tell: machine, model name, logical CPUs."""
    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.lower().startswith(("model name", "cpu model", "hardware")):
                cpu = line.split(":", 1)[-1].strip()
                break
    except OSError:
        pass
    return f"{platform.system()} {platform.machine()} {cpu} x{os.cpu_count() or 0}"


def cache_key(model: str, engine: str, threads: int) -> str:
    """model: the file's digest (the one its writer stored, else the SHA-256 of its bytes)."""
    parts = [model, engine, device_identity(), f"threads={threads}"]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def cache_path(model: str, engine: str, threads: int) -> Path:
    return cache_dir() / "choices" / f"{cache_key(model, engine, threads)}.json"


def _valid_entry(entry: Any) -> bool:
    if not isinstance(entry, dict) or entry.get("version") != CACHE_VERSION:
        return False
    choices, counts, times = entry.get("choices"), entry.get("counts"), entry.get("times")
    if not (isinstance(choices, list) and isinstance(counts, list) and isinstance(times, dict)):
        return False
    if len(choices) != len(counts) or len(counts) > 1 << 20:
        return False
    for c, n in zip(choices, counts, strict=True):
        if type(c) is not int or type(n) is not int or not 0 <= n <= MAX_CANDIDATES or not -1 <= c < max(n, 0):
            return False
        if n < 2 and c != -1:
            return False
    for key, row in times.items():
        if not (isinstance(key, str) and key.isdigit() and int(key) < len(counts) and isinstance(row, list)
                and len(row) == counts[int(key)]
                and all(t is None or (type(t) in (int, float) and 0 <= t < 1e9) for t in row)):
            return False
    return True


def read_cache(path: Path) -> dict[str, Any] | None:
    """The entry at path, or None when it is missing, too large, not JSON or of the wrong shape."""
    try:
        if path.stat().st_size > MAX_CACHE_BYTES:
            return None
        entry = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    return entry if _valid_entry(entry) else None


def write_cache(path: Path, model: ChoiceModel) -> None:
    """Best effort: a cache that cannot be written only costs a measurement next time."""
    counts = _counts(model)
    entry = {"version": CACHE_VERSION, "counts": counts, "choices": _chosen(model),
             "times": {str(i): t for i, t in model.choice_times.items()}}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(entry, separators=(",", ":")))
        os.replace(tmp, path)
    except OSError:
        pass


def load_chosen(load: Loader, choose: str, model_bytes: bytes, engine: str, threads: int) -> Any:
    """A model loaded with the choice `choose` names (see wasmrt.load); engine: the build's identity for the cache
    key (module or library digest and kernel target)."""
    check_mode(choose)
    if choose in ("rules", "deterministic"):
        model = load((), -1 if choose == "rules" else 0)
        model.choice_source = choose
        return model
    digest = stored_digest(model_bytes)
    if digest is None:
        return _load_measured_hashing(load, model_bytes, engine, threads)
    # The writer's digest names the file at no cost: a cached choice is forced at the one load, before the weights
    # are packed. It counts only if the engine's candidates and choices then match it (else measured again).
    path = cache_path(digest, engine, threads)
    entry = read_cache(path)
    if entry is not None:
        try:
            model = load(entry["choices"], -1)
        except WasmrtError:
            model = None  # a vector the engine refuses (longer than its op limit): measured again
        if model is not None and _fits(model, entry):
            return _cached(model, entry)
        if model is not None:
            model.release()
    model = load((), -1)
    if max(_counts(model), default=0) >= 2:
        model = measure(load, base=model)
    else:  # no alternatives: nothing to measure; the entry saves the next load asking each op (one engine call)
        model.choice_source = "measured"
    write_cache(path, model)
    return model


def _fits(model: ChoiceModel, entry: dict[str, Any]) -> bool:
    """The loaded model has the entry's op count, and each op the entry gives candidates has as many and took the
    entry's choice (two engine calls an op with candidates: a call costs about 0.2 ms through wasmtime)."""
    counts = entry["counts"]
    return model.op_count() == len(counts) and all(
        model.op_choice(i) == (n, entry["choices"][i]) for i, n in enumerate(counts) if n >= 2)


def _cached(model: Any, entry: dict[str, Any]) -> Any:
    model.choice_source = "cache"
    model.choice_times = {int(i): t for i, t in entry["times"].items()}
    return model


def _load_measured_hashing(load: Loader, model_bytes: bytes, engine: str, threads: int) -> Any:
    """A file without the writer's digest (written by an older wasmrt): the rules' load first, so a model without
    alternatives (most) costs nothing more, not even its digest; then its SHA-256, and a second load where the cached
    choice differs from the rules'."""
    rules = load((), -1)
    counts = _counts(rules)
    if max(counts, default=0) < 2:
        rules.choice_source = "measured"
        return rules
    path = cache_path(hashlib.sha256(model_bytes).hexdigest(), engine, threads)
    entry = read_cache(path)
    if entry is not None and entry["counts"] == counts:
        fits = _chosen(rules) == entry["choices"]
        model = rules if fits else load(entry["choices"], -1)
        if fits or (_counts(model) == counts and _chosen(model) == entry["choices"]):
            if model is not rules:
                rules.release()
            return _cached(model, entry)
        model.release()  # it does not fit this model or engine: measure again
    model = measure(load, base=rules)
    write_cache(path, model)
    return model


def _chosen(model: ChoiceModel) -> list[int]:
    return [k if n >= 2 else -1 for n, k in (model.op_choice(i) for i in range(model.op_count()))]
