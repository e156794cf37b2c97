"""The importer fuzzers behind `wasmrt fuzz --target onnx|tflite`.

A worker process (`python -m wasmrt.fuzz.importers worker ...`) converts one hostile model after another end to end
(import, passes, memory plan, .wrt writer, and python_ref's reader on the result). Inputs are fresh models from the
structure-aware generators (wasmrt.fuzz.onnx_files, wasmrt.fuzz.tflite_files), or
mutations of earlier inputs that gave a new
outcome (a new error message pattern, or a successful conversion of a new op set): novelty stands in for coverage.

The only acceptable failure is a WasmrtError (the importer's own clear error). Findings, one reproducer per class
(exception type + innermost frame of ours) in build/fuzz/findings/<target>/:
- any other exception (KeyError, IndexError, TypeError, numpy errors...);
- a conversion over 1 s (checked by a timer while it runs and by the clock after);
- a memory bomb: the worker's address space is capped at its size after start-up plus the budget, so an
  allocation beyond it fails with MemoryError instead of swapping the machine.
The worker reports progress and findings as JSON lines on stdout; run_importer turns them into a Campaign.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import resource
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from wasmrt.fuzz.records import MAX_MEMORY, ROOT, SEEDS, TIMEOUT_S, WORK, Campaign, Finding

SUFFIX = {"onnx": ".onnx", "tflite": ".tflite"}
MAX_POOL = 2000  # mutation pool of novel inputs kept in memory (and written to the corpus directory)


class Hang(Exception):
    """Raised by the watchdog timer inside a conversion that runs past the limit. The limit is on this process's
    CPU time (ITIMER_PROF), so a loaded machine does not turn a slow-but-bounded conversion into a finding."""


def _on_alarm(signum: int, frame: object) -> None:
    raise Hang(f"conversion still running after {TIMEOUT_S} s")


def convert_bytes(target: str, data: bytes) -> bytes:
    """The whole pipeline on one untrusted file: import, optimize, plan, write, read back."""
    from python_ref.wrt_file import read_wrt
    from wasmrt.compile.converter import convert

    if target == "onnx":
        from wasmrt.compile.onnx.importer import import_onnx

        graph = import_onnx(data)
    else:
        from wasmrt.compile.tflite.importer import import_tflite

        graph = import_tflite(data)
    out = convert(graph).data
    read_wrt(out)
    return out


def generator(target: str) -> tuple[Callable[[int, float], bytes], Callable[[bytes, random.Random], bytes]]:
    if target == "onnx":
        from wasmrt.fuzz import onnx_files as mod
    else:
        from wasmrt.fuzz import tflite_files as mod  # type: ignore[no-redef]
    return mod.generate, mod.mutate


_OURS = re.compile(r"/(wasmrt|python_ref)/")


def classify(exc: BaseException) -> tuple[str, str]:
    """(class key, one-line summary): the exception type and the innermost frame in our code."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if _OURS.search(f.filename)]
    where = f"{Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else "?"
    name = type(exc).__name__
    return f"{name}@{where}", f"{name} at {where}: {str(exc)[:200]}"


def signature(exc: BaseException | None, data_ok: bool) -> str:
    """An outcome, coarsely: numbers and quoted names removed, so 'new' means a new code path, mostly."""
    if exc is None:
        return "ok" if data_ok else "?"
    msg = re.sub(r"'[^']*'|\"[^\"]*\"|-?\d+(\.\d+)?", "_", str(exc))
    return f"{type(exc).__name__}:{msg[:120]}"


def _cap_memory(target: str) -> None:
    """The memory budget: the address space once the converter is loaded, plus the budget (and room for its
    temporaries)."""
    import wasmrt.compile.converter
    import wasmrt.compile.onnx.importer
    import wasmrt.compile.tflite.importer  # noqa: F401

    generator(target)
    vm = int(re.search(r"VmSize:\s+(\d+)", Path("/proc/self/status").read_text())[1]) * 1024
    resource.setrlimit(resource.RLIMIT_AS, (vm + MAX_MEMORY + (256 << 20), resource.RLIM_INFINITY))


def check_file(target: str, data: bytes) -> dict[str, object]:
    """One conversion under the watchdog: {"outcome": ok | error | finding, "message", "seconds"}."""
    from wasmrt.errors import WasmrtError

    start = time.process_time()
    signal.setitimer(signal.ITIMER_PROF, TIMEOUT_S)
    try:
        convert_bytes(target, data)
        outcome, message = "ok", ""
    except WasmrtError as e:
        outcome, message = "error", f"{type(e).__name__}: {e}"
    except Exception as e:
        outcome, message = "finding", classify(e)[1]
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
    return {"outcome": outcome, "message": message, "seconds": round(time.process_time() - start, 3)}


def check_files(target: str, paths: list[Path]) -> list[dict[str, object]]:
    """Reproducers converted in a separate, memory-capped process (a regression must not swap the machine)."""
    r = subprocess.run([sys.executable, "-m", "wasmrt.fuzz.importers", "check", target, *map(str, paths)],
                       capture_output=True, text=True, cwd=ROOT, env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    rows = [json.loads(ln) for ln in r.stdout.splitlines() if ln.startswith("{")]
    if r.returncode or len(rows) != len(paths):
        raise RuntimeError(f"the check process failed ({r.returncode}): {r.stderr[-2000:]}")
    return rows


def worker(target: str, seconds: float | None, runs: int | None, corpus: Path, findings: Path, seed: int) -> None:
    from wasmrt.errors import WasmrtError

    gen, mutate = generator(target)
    corpus.mkdir(parents=True, exist_ok=True)
    findings.mkdir(parents=True, exist_ok=True)
    pool = [p.read_bytes() for p in sorted(corpus.iterdir())[:MAX_POOL] if p.is_file()]
    seed_dir = SEEDS / target
    if seed_dir.is_dir():
        pool += [p.read_bytes() for p in sorted(seed_dir.iterdir()) if p.is_file()]
    _cap_memory(target)
    signal.signal(signal.SIGPROF, _on_alarm)
    flight = in_flight(findings, target)
    staging = flight.with_name(".next-" + flight.name)
    rng = random.Random(seed)
    seen: set[str] = set()
    classes: set[str] = set()
    counts: dict[str, int] = {}
    t0 = last = time.monotonic()
    n = 0
    slowest = 0.0

    def emit(**kw: object) -> None:
        sys.stdout.write(json.dumps(kw) + "\n")
        sys.stdout.flush()

    while (runs is None or n < runs) and (seconds is None or time.monotonic() - t0 < seconds):
        n += 1
        mutated = bool(pool) and rng.random() < 0.35
        data = mutate(rng.choice(pool), rng) if mutated else gen(rng.getrandbits(48), rng.choice((0.03, 0.08, 0.2)))
        exc: BaseException | None = None
        staging.write_bytes(data)
        os.replace(staging, flight)  # atomic: a signal at any point leaves one whole input there
        start = time.process_time()
        signal.setitimer(signal.ITIMER_PROF, TIMEOUT_S)
        try:
            convert_bytes(target, data)
        except WasmrtError as e:
            exc = e
        except BaseException as e:
            if isinstance(e, KeyboardInterrupt):
                raise
            exc = e
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
        took = time.process_time() - start
        slowest = max(slowest, took)
        bad = exc is not None and not isinstance(exc, WasmrtError)
        if took > TIMEOUT_S and not bad:
            exc, bad = Hang(f"conversion took {took:.2f} s"), True
        if bad:
            assert exc is not None
            key, summary = classify(exc)
            if isinstance(exc, MemoryError):
                key, summary = "memory bomb@" + key, "memory bomb: " + summary
            counts["finding"] = counts.get("finding", 0) + 1
            if key not in classes:
                classes.add(key)
                digest = hashlib.sha1(data).hexdigest()[:12]
                path = findings / f"{re.sub(r'[^A-Za-z0-9_.@-]', '_', key)}-{digest}{SUFFIX[target]}"
                path.write_bytes(data)
                path.with_suffix(".txt").write_text(
                    summary + "\n\n" + "".join(traceback.format_exception(exc)))
                emit(finding={"path": str(path), "kind": key, "summary": summary})
        else:
            kind = "ok" if exc is None else type(exc).__name__
            counts[kind] = counts.get(kind, 0) + 1
        sig = signature(exc, exc is None)
        if sig not in seen and not bad:
            seen.add(sig)
            if len(pool) < MAX_POOL:
                pool.append(data)
                (corpus / (hashlib.sha1(data).hexdigest()[:16] + SUFFIX[target])).write_bytes(data)
        if time.monotonic() - last >= 10:
            last = time.monotonic()
            emit(progress={"execs": n, "seconds": last - t0, "signatures": len(seen), "corpus": len(pool),
                           "counts": counts})
    emit(done={"execs": n, "seconds": time.monotonic() - t0, "signatures": len(seen), "corpus": len(pool),
               "counts": counts, "slowest_s": round(slowest, 3)})


def in_flight(findings: Path, target: str) -> Path:
    """The file the worker is converting right now, written before each conversion: a worker killed by a signal
    (a crash in a C extension, which no Python handler sees) leaves its input here."""
    return findings / f"in-flight{SUFFIX[target]}"


def _stream(p: subprocess.Popen[str], c: Campaign, base: dict[str, int], say: Callable[[str], None]) -> None:
    """Reads one worker's JSON lines into the campaign; base: executions and outcome counts of earlier workers."""
    assert p.stdout is not None
    for line in p.stdout:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if "finding" in msg:
            f = Finding(msg["finding"]["path"], msg["finding"]["kind"], msg["finding"]["summary"])
            c.findings.append(f)
            say(f"[fuzz {c.target}] FINDING {f.summary}  ({f.path})")
        state = msg.get("progress") or msg.get("done")
        if state:
            c.execs, c.corpus = base["execs"] + state["execs"], state["corpus"]
            outcomes = {k: base.get(k, 0) + state["counts"].get(k, 0) for k in {*base, *state["counts"]} - {"execs"}}
            c.notes.update(signatures=max(c.notes.get("signatures", 0), state["signatures"]), outcomes=outcomes)
            if "slowest_s" in state:
                c.notes["slowest_s"] = max(c.notes.get("slowest_s", 0.0), state["slowest_s"])
            if "progress" in msg:
                say(f"[fuzz {c.target}] {c.execs:>10,} execs  {c.execs / state['seconds']:,.0f}/s  "
                    f"outcomes {len(outcomes)}  signatures {state['signatures']}  corpus {c.corpus}")


def run_importer(target: str, seconds: float | None = None, runs: int | None = None, corpus: Path | None = None,
                 seed: int = 0, say: Callable[[str], None] = print) -> Campaign:
    """One campaign in a worker process. A worker killed by a signal is a finding (its input is kept) and a fresh
    worker, on another seed, goes on with the executions and time left."""
    corpus = corpus or WORK / "corpus" / target
    findings = WORK / "findings" / target
    c = Campaign(target, datetime.now().isoformat(timespec="seconds"))
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    seed = seed or int(time.time())
    t0 = time.monotonic()
    for restart in range(100):
        left = None if seconds is None else seconds - (time.monotonic() - t0)
        if (left is not None and left <= 0) or (runs and c.execs >= runs):
            break
        cmd = [sys.executable, "-m", "wasmrt.fuzz.importers", "worker", target, str(corpus), str(findings),
               str(seed + 7919 * restart)]
        cmd += ["--time", str(left)] if left is not None else []
        cmd += ["--runs", str(runs - c.execs)] if runs else []
        base = {"execs": c.execs, **c.notes.get("outcomes", {})}
        with subprocess.Popen(["nice", "-n", "10", *cmd], stdout=subprocess.PIPE, text=True, cwd=ROOT, env=env) as p:
            _stream(p, c, base, say)
        if p.returncode >= 0:
            if p.returncode:
                c.findings.append(Finding(" ".join(cmd), "worker failed", f"exit code {p.returncode}"))
            break
        kept = in_flight(findings, target)
        if kept.is_file():
            digest = hashlib.sha1(kept.read_bytes()).hexdigest()[:12]
            kept = kept.rename(findings / f"signal-{-p.returncode}-{digest}{SUFFIX[target]}")
        c.execs += 1  # the conversion it died in
        f = Finding(str(kept), "worker died", f"{signal.Signals(-p.returncode).name} while converting this file")
        c.findings.append(f)
        say(f"[fuzz {target}] FINDING {f.summary}  ({f.path}); going on in a fresh worker")
    c.seconds = time.monotonic() - t0
    files = [q for q in corpus.iterdir() if q.is_file()] if corpus.is_dir() else []
    c.corpus_bytes = sum(q.stat().st_size for q in files)
    return c


def main(argv: list[str]) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m wasmrt.fuzz.importers")
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("worker")
    w.add_argument("target", choices=sorted(SUFFIX))
    w.add_argument("corpus", type=Path)
    w.add_argument("findings", type=Path)
    w.add_argument("seed", type=int)
    w.add_argument("--time", type=float)
    w.add_argument("--runs", type=int)
    c = sub.add_parser("check", help="convert files one by one, print one JSON line each")
    c.add_argument("target", choices=sorted(SUFFIX))
    c.add_argument("files", nargs="+", type=Path)
    args = ap.parse_args(argv)
    if args.cmd == "check":
        _cap_memory(args.target)
        signal.signal(signal.SIGPROF, _on_alarm)
        for p in args.files:
            print(json.dumps({"path": str(p), **check_file(args.target, p.read_bytes())}), flush=True)
        return 0
    worker(args.target, args.time, args.runs, args.corpus, args.findings, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
