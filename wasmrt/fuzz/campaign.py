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
import sys
from pathlib import Path

from wasmrt.errors import InputError
from wasmrt.fuzz.engine import run_engine
from wasmrt.fuzz.importers import run_importer
from wasmrt.fuzz.records import TARGETS, campaigns, record, totals


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
