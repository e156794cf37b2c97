"""Replay hostile .wrt files on the other readers of the format: the wasm module (wasmtime) and python_ref.

The engine fuzzer runs natively under ASan; the same files must behave the same in wasm (the shipped build, where
a bad read is silent instead of a crash) and be judged alike by the reference reader. For each file:
- wasm: load with the fuzzer's budgets and run on zero inputs; a trap (WasmrtError "the engine crashed") or any
  exception that is not a WasmrtError is a finding;
- python_ref: read (and, when wasm accepted the model, run on the same zeros); any exception other than a
  WasmrtError, a ValueError from its shape rules (python_ref's way of refusing an op) or a RuntimeError from the
  interpreter's shape check is a finding;
- the verdicts agree: a model wasm runs must be one python_ref runs; a model python_ref runs (when its tensors fit
  in 64 MiB; python_ref has no budgets) may be refused by the C engine only as unsupported (a dtype, an op
  variant), over its budgets, or out of memory, never as corrupt.
Recipes (the engine fuzzer's inputs) are turned into .wrt files first by the fuzzer binary (WRT_FUZZ_DUMP).
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from wasmrt.errors import InputError, ModelFormatError, WasmrtError
from wasmrt.fuzz.engine import engine_env
from wasmrt.fuzz.records import MAX_MEMORY, Finding

MAX_WORK = 1 << 20  # the fuzzer's work budget: replays stay fast
REF_MAX_BYTES = 64 << 20  # python_ref runs a model only when all its tensors fit in this
_C_MAY_REFUSE = re.compile(r"not (?:supported|implemented) by the C engine|not supported|limit|out of memory|"
                           r"exceeds|budget", re.I)


@dataclass
class Verdict:
    kind: str  # ok | format | input | refused (budget, unsupported, memory) | crash
    message: str


def dump_recipes(binary: Path, recipes: list[Path], out_dir: Path) -> list[Path]:
    """The .wrt file each recipe generates (the fuzzer in dump mode: nothing is loaded)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    env = {**engine_env(), "WRT_FUZZ_DUMP": str(out_dir)}
    for k in range(0, len(recipes), 200):
        subprocess.run([str(binary), *map(str, recipes[k:k + 200])], env=env, capture_output=True, check=False)
    return sorted(out_dir.glob("*.wrt"))


def _zeros(specs: list) -> dict[str, np.ndarray]:
    return {s.name: np.zeros(s.shape, s.dtype) for s in specs}


def wasm_verdict(data: bytes, variant: str = "simd") -> tuple[Verdict, dict[str, np.ndarray] | None]:
    from wasmrt.engines.base import Limits
    from wasmrt.engines.wasm import WasmModel

    try:
        m = WasmModel(data, "fuzz", variant, limits=Limits(float(MAX_MEMORY), float(MAX_WORK)))
    except ModelFormatError as e:
        return Verdict("refused" if _C_MAY_REFUSE.search(str(e)) else "format", str(e)), None
    except WasmrtError as e:
        return Verdict("crash" if "crashed" in str(e) else "refused", str(e)), None
    try:
        out = m.run(_zeros(m.inputs))
        return Verdict("ok", ""), out
    except InputError as e:
        return Verdict("input", str(e)), None
    except WasmrtError as e:
        return Verdict("crash" if "crashed" in str(e) else "refused", str(e)), None
    finally:
        m.release()


def ref_verdict(data: bytes, run: bool) -> Verdict:
    """python_ref's verdict: read, then run on zeros when asked and the model's tensors are small enough to hold
    (python_ref has no budgets of its own: a hostile file could make it allocate gigabytes)."""
    from python_ref import Interpreter

    try:
        interp = Interpreter(data, "fuzz")
        if run and sum(t.nbytes for t in interp.model.tensors) <= REF_MAX_BYTES:
            interp.run(_zeros(interp.inputs))
        return Verdict("ok", "")
    except InputError as e:
        return Verdict("input", str(e))
    except (WasmrtError, ValueError, RuntimeError) as e:  # the reader's errors, shape rules, interpreter checks
        return Verdict("format", f"{type(e).__name__}: {e}")


def replay_file(path: Path, variant: str = "simd") -> Finding | None:
    data = path.read_bytes()
    try:
        w, _ = wasm_verdict(data, variant)
    except Exception as e:  # anything but a WasmrtError is a finding
        return Finding(str(path), "wasm exception", f"{type(e).__name__}: {e}")
    if w.kind == "crash":
        return Finding(str(path), "wasm trap", w.message)
    try:
        r = ref_verdict(data, run=w.kind in ("ok", "format"))
    except Exception as e:  # likewise
        return Finding(str(path), "python_ref exception", f"{type(e).__name__}: {e}")
    if w.kind == "ok" and r.kind != "ok":
        return Finding(str(path), "verdicts differ", f"wasm runs it, python_ref refuses: {r.message}")
    if w.kind == "format" and r.kind == "ok":
        return Finding(str(path), "verdicts differ", f"python_ref runs it, wasm calls it corrupt: {w.message}")
    return None


def replay(paths: list[Path], variant: str = "simd") -> tuple[list[Finding], dict[str, int]]:
    """Findings, and how many files got each wasm verdict."""
    findings, counts = [], {}
    for p in paths:
        f = replay_file(p, variant)
        if f:
            findings.append(f)
        counts["finding" if f else "agree"] = counts.get("finding" if f else "agree", 0) + 1
    return findings, counts


def replay_corpus(binary: Path, corpus: Path, sample: int, seed: int = 0) -> tuple[list[Finding], dict[str, int]]:
    """A sample of an engine corpus (recipes and .wrt files) through wasm and python_ref."""
    files = sorted(p for p in corpus.iterdir() if p.is_file())
    rng = np.random.default_rng(seed)
    if len(files) > sample:
        files = [files[i] for i in sorted(rng.choice(len(files), sample, replace=False))]
    wrt = [p for p in files if p.read_bytes()[4:8] == b"WRT0"]
    recipes = [p for p in files if p not in wrt]
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as d:
        return replay(wrt + dump_recipes(binary, recipes, Path(d)))
