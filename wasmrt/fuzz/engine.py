"""The engine target of `wasmrt fuzz`: libFuzzer on the C engine's .wrt reader (kernels_wasm/fuzz), with triage
of each finding (report class and innermost engine frames)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from wasmrt.fuzz.records import MAX_MEMORY, ROOT, SEEDS, SYMBOLIZER, TIMEOUT_S, WORK, Campaign, Finding

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


