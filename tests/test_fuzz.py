"""Fuzzing in the test suite (about two minutes): a short run of each fuzzer that fails on any new finding, every
saved reproducer of an earlier finding, and the replay of the seed corpus on wasm and python_ref.

The long campaigns are `wasmrt fuzz` (see kernels_wasm/fuzz/FUZZING.md). Reproducers of bugs not fixed yet are
listed in tests/fuzz_regressions/OPEN.txt: they are expected to fail (strict), and short-run findings that match
them are reported, not failed.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from wasmrt.compile.ir import Graph
from wasmrt.compile.planner import plan_memory
from wasmrt.compile.writer import write_wrt
from wasmrt.errors import ConversionError
from wasmrt.fuzz import engine as fuzz
from wasmrt.fuzz import importers as fuzz_importers
from wasmrt.fuzz.importers import check_files, run_importer
from wasmrt.fuzz.records import TIMEOUT_S
from wasmrt.fuzz.replay import replay, replay_corpus, replay_file

HERE = Path(__file__).parent
REGRESSIONS = HERE / "fuzz_regressions"
CORPUS = HERE / "fuzz_corpus"


def open_entries() -> dict[str, re.Pattern[str]]:
    rows = [ln.split("\t") for ln in (REGRESSIONS / "OPEN.txt").read_text().splitlines()
            if ln.strip() and not ln.startswith("#")]
    return {r[0] if r[0] != "-" else f"-{k}": re.compile(r[1]) for k, r in enumerate(rows)}


OPEN = open_entries()


def known(summary: str) -> bool:
    return any(p.search(summary) for p in OPEN.values())


def expect(path: Path) -> list:
    rel = str(path.relative_to(REGRESSIONS))
    return [pytest.mark.xfail(strict=True, reason=f"open: {rel}")] if rel in OPEN else []


@pytest.fixture(scope="module")
def fuzzer() -> Path:
    return fuzz.fuzzer_binary()


def test_open_list_names_real_files() -> None:
    for rel in OPEN:
        assert rel.startswith("-") or (REGRESSIONS / rel).is_file(), rel


def test_engine_fuzz_short(fuzzer: Path, tmp_path: Path) -> None:
    """3000 executions of the structure-aware engine fuzzer from the committed seeds (a count, not a time, so a
    loaded machine runs the same amount; five minutes at most): no crash, hang or memory bomb."""
    corpus = tmp_path / "corpus"
    shutil.copytree(CORPUS / "engine", corpus)
    c = fuzz.run_engine(seconds=300, runs=3000, corpus=corpus, keep_going=True, say=print)
    print(c.line())
    assert c.execs > 2000 and c.cov > 1000, (c.line(), c.notes)
    new = [f for f in c.findings if not known(f.summary)]
    assert not new, "\n".join(f"{f.kind}: {f.summary} ({f.path})" for f in new)


@pytest.mark.parametrize("target", ["onnx", "tflite"])
def test_importer_fuzz_short(target: str, tmp_path: Path) -> None:
    """2500 executions per importer (five minutes at most): every hostile model converts or fails with a
    WasmrtError, within 1 s and the budget."""
    c = run_importer(target, seconds=300, runs=2500, corpus=tmp_path / "corpus", seed=1, say=print)
    print(c.line(), c.notes)
    assert c.execs > 2000 and c.notes["outcomes"].get("ok", 0) > 50, c.line()
    assert not c.findings, "\n".join(f"{f.kind}: {f.summary} ({f.path})" for f in c.findings)


@pytest.mark.parametrize("path", [pytest.param(p, marks=expect(p), id=p.name)
                                  for p in sorted((REGRESSIONS / "engine").glob("*.recipe"))])
def test_engine_reproducer(fuzzer: Path, path: Path) -> None:
    """Each saved engine finding, natively under ASan + UBSan with the fuzzer's budgets: a clean verdict."""
    r = subprocess.run([str(fuzzer), "-timeout=1", "-rss_limit_mb=2048", str(path)], capture_output=True, text=True,
                       env=fuzz.engine_env(), timeout=120)
    assert r.returncode == 0, fuzz.triage(fuzzer, path).summary


def test_triage_of_a_timeout_without_a_model(fuzzer: Path, tmp_path: Path) -> None:
    """A starved campaign once hit the time limit on a recipe the generator rejects: no engine code ran, so a quick
    rerun makes it a note (not reproduced), not a finding."""
    artifact = tmp_path / "timeout-rejected"
    shutil.copy(REGRESSIONS / "engine" / "timeout-recipe-the-generator-rejects.recipe", artifact)
    f = fuzz.triage(fuzzer, artifact)
    assert f.kind == fuzz.NOT_REPRODUCED and "makes no model" in f.summary, f


@pytest.mark.parametrize("path", [pytest.param(p, marks=expect(p), id=f"{p.parent.name}/{p.name}")
                                  for p in sorted(REGRESSIONS.glob("*/*.wrt"))])
def test_reproducer_on_wasm_and_python_ref(path: Path) -> None:
    """Saved findings as .wrt files: the wasm module neither traps nor disagrees with python_ref's verdict."""
    finding = replay_file(path)
    assert finding is None, f"{finding.kind}: {finding.summary}"


def test_importer_worker_killed_by_a_signal_keeps_its_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A crash inside a C extension kills the worker with no Python traceback: the campaign keeps the file being
    converted as the finding and a fresh worker does the executions left."""
    monkeypatch.setattr(fuzz_importers, "WORK", tmp_path)
    flight = fuzz_importers.in_flight(tmp_path / "findings" / "onnx", "onnx")

    def crash_the_worker() -> None:
        for _ in range(600):
            if flight.is_file() and flight.stat().st_size:
                subprocess.run(["pkill", "-SEGV", "-f", f"fuzz.importers worker onnx {tmp_path}"])
                return
            time.sleep(0.1)

    killer = threading.Thread(target=crash_the_worker)
    killer.start()
    c = run_importer("onnx", runs=800, seed=5, say=print)
    killer.join()
    assert [f.kind for f in c.findings] == ["worker died"], c.findings
    assert "SIGSEGV" in c.findings[0].summary and Path(c.findings[0].path).stat().st_size > 0
    assert c.execs == 800 == sum(c.notes["outcomes"].values()) + 1, (c.execs, c.notes)


@pytest.mark.parametrize("target", ["onnx", "tflite"])
def test_importer_reproducers(target: str) -> None:
    """Every file that once crashed, hung or exhausted memory in an importer now gets a clear error (or converts),
    under a second, in a memory-capped process; errors name the node or the input."""
    paths = sorted((REGRESSIONS / target).glob(f"*.{target}"))
    assert paths
    rows = check_files(target, paths)
    bad = [r for r in rows if r["outcome"] == "finding" or r["seconds"] > TIMEOUT_S]
    assert not bad, bad
    for r in rows:
        if r["outcome"] == "error":
            assert re.search(r"node '|input '|tensor '|initializer '|hints", str(r["message"])), r


def test_writer_refuses_a_dimension_the_format_cannot_hold() -> None:
    """The last line of defence behind the importers' shape checks (the ONNX fuzzer found an initializer whose dims
    numpy wrapped to (0, 2^40)): a named error, not the FlatBuffers builder's TypeError."""
    g = Graph()
    g.outputs = [g.add_input("x", (1, 4)), g.add_const("huge", np.zeros((0, 1 << 40), np.float32))]
    with pytest.raises(ConversionError, match=r"tensor 'huge': shape \[0, 1099511627776\] has a dimension outside"):
        write_wrt(g, plan_memory(g))


def test_seed_corpus_replays_on_wasm_and_python_ref(fuzzer: Path) -> None:
    """A sample of the committed seeds (recipes and .wrt files) through wasm and python_ref: no trap, verdicts
    agree except where a known open finding explains it."""
    findings, counts = replay_corpus(fuzzer, CORPUS / "engine", sample=80, seed=3)
    print(counts)
    assert counts.get("agree", 0) >= 40, counts
    new = [f for f in findings if not known(f.summary)]
    assert not new, "\n".join(f"{f.kind}: {f.summary} ({f.path})" for f in new[:10])


def test_replay_flags_a_disagreement(tmp_path: Path) -> None:
    """The replay is not blind: a file python_ref runs and the C engine calls corrupt is reported."""
    seeds = sorted((CORPUS / "engine").glob("*-valid.wrt"))
    assert seeds and replay(seeds[:5])[1].get("agree") == 5
    from python_ref._fb import wrt_generated as fb
    from wasmrt.fuzz.seeds import _pack

    m = fb.ModelT.InitFromPackedBuf((CORPUS / "engine" / "relu-valid.wrt").read_bytes(), 0)
    m.version = 7  # every reader refuses this: agreement
    p = tmp_path / "v7.wrt"
    p.write_bytes(_pack(m))
    assert replay_file(p) is None
