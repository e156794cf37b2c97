"""What fuzz campaigns record: findings, campaign figures (build/fuzz/campaigns.jsonl) and the limits every target
shares."""

from __future__ import annotations

import json
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the checkout
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


