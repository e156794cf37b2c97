"""`wasmrt fuzz`: hostile-input campaigns against the C engine and the ONNX / TFLite importers.

    wasmrt fuzz [--target engine|onnx|tflite] [--time S | --runs N] [--keep-going] [--jobs N]

- engine: the libFuzzer target build/fuzz/wrt_fuzz_engine (kernels_wasm/fuzz/: recipes -> well-formed .wrt files
  with hostile meaning, loaded with a 256 MiB memory budget, run, released, under ASan + UBSan). A finding is a
  sanitizer report, a run over 1 s (-timeout=1), more than the budget held at once, or a verifier failure of a
  generated file.
- onnx / tflite: wasmrt.fuzz.importers (structure-aware generation and mutation of ModelProtos and TFLite
  FlatBuffers, each converted end to end). A finding is any exception other than a WasmrtError, a conversion over
  1 s, or an allocation beyond the budget.

Each campaign resumes from build/fuzz/corpus/<target>/ (seeded from tests/fuzz_corpus/<target>/), prints progress,
writes findings to build/fuzz/findings/<target>/ with a one-line triage each, and appends its figures (executions,
exec/s, coverage, corpus, findings) to build/fuzz/campaigns.jsonl. The exit code is 1 when anything was found.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path

from wasmrt.errors import InputError

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "build" / "fuzz"
SEEDS = ROOT / "tests" / "fuzz_corpus"
CAMPAIGNS = WORK / "campaigns.jsonl"
TARGETS = ("engine", "onnx", "tflite")
MAX_MEMORY = 256 << 20  # bytes a model may hold at once (the engine's budget in the harness)
TIMEOUT_S = 1
SYMBOLIZER = "/usr/bin/llvm-symbolizer"


@dataclass
class Finding:
    path: str  # the reproducer
    kind: str  # crash, timeout, oom, memory bomb, sanitizer report class, exception type...
    summary: str  # one line: the first report line and the innermost engine frame


@dataclass
class Campaign:
    target: str
    started: str
    seconds: float = 0.0
    execs: int = 0
    cov: int = 0  # libFuzzer: covered edges (engine); lines of wasmrt/importers (importers, when measured)
    ft: int = 0  # libFuzzer features
    corpus: int = 0
    corpus_bytes: int = 0
    findings: list[Finding] = field(default_factory=list)
    notes: dict[str, object] = field(default_factory=dict)

    @property
    def exec_per_s(self) -> float:
        return self.execs / self.seconds if self.seconds else 0.0

    def line(self) -> str:
        return (f"{self.target}: {self.execs:,} execs in {self.seconds:,.0f} s ({self.exec_per_s:,.0f}/s), "
                f"cov {self.cov:,} ft {self.ft:,}, corpus {self.corpus:,} ({self.corpus_bytes / 1024:,.0f} KiB), "
                f"{len(self.findings)} finding(s)")


def _git_commit() -> str:
    r = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return r.stdout.strip()


def record(c: Campaign, path: Path = CAMPAIGNS) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    row = {**asdict(c), "exec_per_s": round(c.exec_per_s, 1), "commit": _git_commit()}
    with path.open("a") as f:
        f.write(json.dumps(row) + "\n")


def campaigns(path: Path = CAMPAIGNS) -> list[dict]:
    """Every recorded campaign chunk, oldest first."""
    if not path.is_file():
        return []
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]


def totals(rows: list[dict]) -> dict[str, dict[str, float]]:
    """Per target: executions, seconds and findings summed over chunks; coverage and corpus of the latest chunk."""
    out: dict[str, dict[str, float]] = {}
    for r in rows:
        t = out.setdefault(r["target"], {"execs": 0, "seconds": 0.0, "findings": 0, "chunks": 0})
        t["execs"] += r["execs"]
        t["seconds"] += r["seconds"]
        t["findings"] += len(r["findings"])
        t["chunks"] += 1
        t.update(cov=r["cov"], ft=r["ft"], corpus=r["corpus"])
    return out


# -- the engine target (libFuzzer) ------------------------------------------------------------------------------------
_STATUS = re.compile(r"^#(\d+):?\s+(?:\w+\s+)?cov: (\d+) ft: (\d+) corp: (\d+)(?:/(\d+)(b|Kb|Mb))?.*?exec/s: (\d+)")
_FINAL = re.compile(r"^stat::(\w+):\s+(\d+)")


def engine_env(max_memory: int = MAX_MEMORY) -> dict[str, str]:
    env = dict(os.environ)
    env.update(WRT_FUZZ_MAX_MEMORY=str(max_memory), ASAN_SYMBOLIZER_PATH=SYMBOLIZER,
               ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1:malloc_context_size=20",
               UBSAN_OPTIONS="print_stacktrace=1")
    return env


def fuzzer_binary() -> Path:
    from wasmrt.dev.build import build_fuzz

    return build_fuzz().path


def _corpus_dirs(target: str, corpus: Path | None) -> tuple[Path, Path]:
    work = corpus or WORK / "corpus" / target
    work.mkdir(parents=True, exist_ok=True)
    return work, SEEDS / target


def _dir_stats(d: Path) -> tuple[int, int]:
    files = [p for p in d.iterdir() if p.is_file()] if d.is_dir() else []
    return len(files), sum(p.stat().st_size for p in files)


def run_engine(seconds: float | None = None, runs: int | None = None, corpus: Path | None = None,
               keep_going: bool = False, say: Callable[[str], None] = print, max_len: int = 8192,
               jobs: int = 1) -> Campaign:
    """One libFuzzer campaign chunk over the engine target; resumable (the corpus directory persists)."""
    binary = fuzzer_binary()
    work, seeds = _corpus_dirs("engine", corpus)
    findings_dir = WORK / "findings" / "engine"
    findings_dir.mkdir(parents=True, exist_ok=True)
    before = {p.name for p in findings_dir.iterdir()}
    c = Campaign("engine", datetime.now().isoformat(timespec="seconds"))
    cmd = ["nice", "-n", "10", str(binary), str(work), *([str(seeds)] if seeds.is_dir() else []),
           f"-timeout={TIMEOUT_S}", "-rss_limit_mb=2048", f"-max_len={max_len}", "-print_final_stats=1",
           "-reload=0", f"-artifact_prefix={findings_dir}/"]
    if seconds is not None:
        cmd.append(f"-max_total_time={max(1, int(seconds))}")
    if runs is not None:
        cmd.append(f"-runs={runs}")
    if keep_going or jobs > 1:  # worker processes that survive findings (each is still written and triaged)
        cmd += [f"-fork={max(1, jobs)}", "-ignore_crashes=1", "-ignore_ooms=1", "-ignore_timeouts=1"]
    t0 = last = time.monotonic()
    execs_base = 0  # fork mode restarts the count per job; libFuzzer's own total is in its status lines
    with subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, errors="replace",
                          env=engine_env()) as p:
        assert p.stderr is not None
        tail: list[str] = []
        for line in p.stderr:
            tail = [*tail[-19:], line.rstrip()]
            m = _STATUS.match(line)
            if m:
                c.execs = execs_base + int(m[1])
                c.cov, c.ft, c.corpus = int(m[2]), int(m[3]), int(m[4])
                if time.monotonic() - last >= 10:
                    last = time.monotonic()
                    say(f"[fuzz engine] {c.execs:>12,} execs  cov {c.cov:,}  ft {c.ft:,}  corpus {c.corpus:,}  "
                        f"{m[7]} exec/s  {time.monotonic() - t0:,.0f} s")
                continue
            m = _FINAL.match(line)
            if m and m[1] == "number_of_executed_units":
                c.execs = max(c.execs, int(m[2]))
            elif m and m[1] == "peak_rss_mb":
                c.notes["peak_rss_mb"] = int(m[2])
            elif m and m[1] == "slowest_unit_time_sec":
                c.notes["slowest_unit_s"] = int(m[2])
    c.seconds = time.monotonic() - t0
    if not c.execs:  # libFuzzer never started fuzzing: keep what it said
        c.notes["stderr_tail"] = tail
    c.corpus, c.corpus_bytes = _dir_stats(work)
    for p_ in sorted(findings_dir.iterdir()):
        if p_.name not in before and p_.is_file():
            f = triage(binary, p_)
            if f.kind in NOTED:  # noted, not a finding: the shipped builds are well within the limit
                c.notes.setdefault(NOTED[f.kind], []).append(f"{f.summary} ({f.path})")
                continue
            c.findings.append(f)
            say(f"[fuzz engine] FINDING {f.kind}: {f.summary}  ({p_})")
    return c


_REPORT = re.compile(r"==wrt-fuzz== FINDING: (.*)|ERROR: (AddressSanitizer: [\w-]+)|runtime error: (.*)|"
                     r"ERROR: libFuzzer: ([\w-]+)|(Out-of-memory) \(used|==\d+== ERROR: libFuzzer: (timeout)")
_ALLOCATORS = {"m_alloc", "m_scratch", "rt_alloc", "rt_calloc", "const_data"}
_HOOKS = {"finding", "on_malloc"}  # the harness's own frames above the engine's allocation in a memory-bomb report
_FRAME = re.compile(r"#\d+ 0x[0-9a-f]+ in (\w+) .*?(kernels_wasm/(?:engine|generated|fuzz)/[\w/.]+:\d+)")


ASAN_ONLY = "slow under ASan only"
NOT_REPRODUCED = "timeout not reproduced"
NOTED = {ASAN_ONLY: "slow_under_asan_only", NOT_REPRODUCED: "timeout_not_reproduced"}  # kind -> campaign note
_RELEASE_RUN = """
import sys, time, numpy as np
from wasmrt.engines import load
data = open(sys.argv[1], "rb").read()
t = time.process_time()  # CPU time: a busy machine must not turn a fast load into a hang
try:
    m = load(data, engine="native", max_memory=float(sys.argv[2]), max_work=float(sys.argv[3]))
    m.run({s.name: np.zeros(s.shape, s.dtype) for s in m.inputs})
except Exception:
    pass
print(time.process_time() - t)
"""


def release_seconds(binary: Path, recipe: Path, timeout_s: float = 300) -> float:
    """Load + run time of the file a recipe generates on the optimized native engine, with the fuzzer's budgets: the
    1 s limit is a promise about the shipped builds, and ASan slows some paths (verification of big files) 10x.
    NaN when the recipe makes no model (the generator rejects it): then no engine code ran at all."""
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        if recipe.read_bytes()[4:8] == b"WRT0":
            wrt = recipe
        else:
            subprocess.run([str(binary), str(recipe)], env={**engine_env(), "WRT_FUZZ_DUMP": d}, capture_output=True,
                           timeout=timeout_s)
            files = list(Path(d).glob("*.wrt"))
            if not files:
                return float("nan")
            wrt = files[0]
        try:
            r = subprocess.run([sys.executable, "-c", _RELEASE_RUN, str(wrt), str(MAX_MEMORY), str(1 << 20)],
                               capture_output=True, text=True, timeout=timeout_s, cwd=ROOT)
            return float(r.stdout.strip().splitlines()[-1])
        except (subprocess.TimeoutExpired, ValueError, IndexError):
            return float("inf")


def triage(binary: Path, artifact: Path, timeout_s: float = 60) -> Finding:
    """Run one input again and name what happened: the first report line and the innermost engine frame."""
    try:
        r = subprocess.run([str(binary), "-timeout=5", "-rss_limit_mb=4096", str(artifact)], capture_output=True,
                           text=True, errors="replace", env=engine_env(), timeout=timeout_s)
        out = r.stdout + r.stderr
    except subprocess.TimeoutExpired:
        return Finding(str(artifact), "timeout", f"still running after {timeout_s:.0f} s")
    kind = artifact.name.split("-", 1)[0]
    summary = "no report when run again (flaky or load-dependent)"
    for line in out.splitlines():
        m = _REPORT.search(line)
        if m:
            summary = next(g for g in m.groups() if g)
            break
    frames = [f for f in _FRAME.findall(out) if f[0] not in _ALLOCATORS | _HOOKS][:2]
    if frames:
        summary += " at " + " < ".join(f"{fn} ({loc})" for fn, loc in frames)
    if "memory bomb" in summary:
        kind = "memory bomb"
    if frames and "kernels_wasm/fuzz/" in frames[0][1]:
        kind = "harness bug"  # the generator or the target itself, not the engine
    if kind == "timeout":
        ms = re.search(r"Executed .* in (\d+) ms", out)
        asan = int(ms[1]) / 1000 if ms else float("inf")
        native = release_seconds(binary, artifact)
        if native != native:  # no model: the time limit was hit by a starved process, if the rerun is quick
            summary = f"{asan:.2f} s under ASan when run again; the recipe makes no model (the generator rejects it)"
            if asan < TIMEOUT_S / 2:
                kind = NOT_REPRODUCED
        else:
            summary = (f"{asan:.2f} s under ASan, {native:.3f} s of CPU on the optimized native engine"
                       + (f"; {summary}" if "no report" not in summary else ""))
            if native < TIMEOUT_S / 2:
                kind = ASAN_ONLY
    return Finding(str(artifact), kind, re.sub(r"\s+", " ", summary).strip())


# -- the CLI ----------------------------------------------------------------------------------------------------------
def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--target", choices=TARGETS, action="append",
                   help="what to fuzz (repeatable; default: all three)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--time", type=float, help="seconds per target (default 60)")
    g.add_argument("--runs", type=int, help="executions per target")
    p.add_argument("--corpus", help="corpus directory (default build/fuzz/corpus/<target>; one target only)")
    p.add_argument("--keep-going", action="store_true",
                   help="engine: keep fuzzing after a finding (libFuzzer -fork=1), for long campaigns")
    p.add_argument("--jobs", type=int, default=1,
                   help="engine: parallel worker processes (libFuzzer -fork=N; implies --keep-going)")
    p.add_argument("--seed", type=int, default=0, help="importers: random seed of the generator")
    p.add_argument("--summary", action="store_true", help="print the recorded campaigns' totals and exit")


def run(args: argparse.Namespace) -> int:
    if args.summary:
        for target, t in totals(campaigns()).items():
            print(f"{target:7s} {t['execs']:>14,.0f} execs  {t['seconds'] / 3600:6.2f} h  cov {t['cov']:,}  "
                  f"ft {t['ft']:,}  corpus {t['corpus']:,}  findings {t['findings']:.0f}  ({t['chunks']:.0f} chunks)")
        return 0
    targets = args.target or list(TARGETS)
    if args.corpus and len(targets) > 1:
        raise InputError("--corpus needs exactly one --target")
    seconds = None if args.runs else (args.time or 60.0)
    found = 0
    for target in targets:
        corpus = Path(args.corpus) if args.corpus else None
        if target == "engine":
            c = run_engine(seconds, args.runs, corpus, args.keep_going, jobs=args.jobs)
        else:
            from wasmrt.fuzz.importers import run_importer

            c = run_importer(target, seconds, args.runs, corpus, args.seed)
        record(c)
        print(c.line())
        for f in c.findings:
            print(f"  {f.kind}: {f.summary}\n    {f.path}")
        found += len(c.findings)
    return 1 if found else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="wasmrt fuzz", description=__doc__.splitlines()[0])
    add_arguments(ap)
    return run(ap.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
