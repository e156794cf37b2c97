"""What long work shows: a one-line progress bar on stderr (plain lines when stderr is not a terminal, e.g. in CI
logs), and matplotlib for the pictures of results (quantization reports, bench charts)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from typing import Any


def pyplot(log: Any) -> Any:
    """matplotlib.pyplot on the Agg backend, installed with pip on first use; None when it cannot be had."""
    if importlib.util.find_spec("matplotlib") is None:
        log("installing matplotlib for the chart (pip, once)")
        r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "matplotlib"], capture_output=True,
                           text=True)
        if r.returncode != 0:
            return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


class Progress:
    def __init__(self, stream=None, prefix: str = "bench") -> None:
        self.stream = stream or sys.stderr
        self.prefix = prefix
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.label = ""
        self.last_pct = -1
        self.last_t = 0.0
        self.open = False

    def stage(self, label: str) -> None:
        """Start a new stage: a new bar (or one log line)."""
        self._end_line()
        self.label, self.last_pct = label, -1
        if not self.tty:
            self.stream.write(f"[{self.prefix}] {label}\n")
            self.stream.flush()

    def log(self, msg: str) -> None:
        self._end_line()
        self.stream.write(f"[{self.prefix}] {msg}\n")
        self.stream.flush()

    def update(self, done: int, total: int) -> None:
        pct = int(100 * done / total) if total else 100
        now = time.monotonic()
        if pct == self.last_pct or (self.tty and now - self.last_t < 0.1 and done != total):
            return
        self.last_pct, self.last_t = pct, now
        if self.tty:
            filled = pct * 30 // 100
            self.stream.write(f"\r[{'#' * filled}{'.' * (30 - filled)}] {pct:3d}% {self.label} ({done}/{total})")
            self.open = True
        elif pct % 25 == 0:
            self.stream.write(f"[{self.prefix}]   {self.label}: {pct}% ({done}/{total})\n")
        self.stream.flush()

    def _end_line(self) -> None:
        if self.open:
            self.stream.write("\n")
            self.open = False

    def close(self) -> None:
        self._end_line()
