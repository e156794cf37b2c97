"""python_ref models behind a pipe, for the JS vision tests: the JS pipeline then gets exactly the model outputs the
Python pipeline gets, so any difference is in the pipeline code (geometry, decoding, masks), not in an engine.

Protocol on stdin/stdout: a request is one JSON line {"model": path, "inputs": {name: shape}} followed by the
float32 input bytes in that order; the answer is one JSON line {"outputs": {name: shape}} (or {"error": message})
followed by the float32 output bytes.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
from python_ref import Interpreter


def main() -> None:
    models: dict[str, Interpreter] = {}
    rd, wr = sys.stdin.buffer, sys.stdout.buffer
    while line := rd.readline():
        req = json.loads(line)
        feeds = {}
        for name, shape in req["inputs"].items():
            n = int(np.prod(shape)) * 4
            feeds[name] = np.frombuffer(rd.read(n), dtype=np.float32).reshape(shape)
        try:
            it = models.setdefault(req["model"], Interpreter(req["model"]))
            out = it.run(feeds)
        except Exception as e:  # report to the JS side instead of dying
            wr.write((json.dumps({"error": f"{type(e).__name__}: {e}"}) + "\n").encode())
            wr.flush()
            continue
        wr.write((json.dumps({"outputs": {k: list(v.shape) for k, v in out.items()}}) + "\n").encode())
        for v in out.values():
            wr.write(np.ascontiguousarray(v, dtype=np.float32).tobytes())
        wr.flush()


if __name__ == "__main__":
    main()
