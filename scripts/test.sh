#!/usr/bin/env bash
# The whole test suite, from a fresh clone: set-up (idempotent), the engine build and the bundled models the
# browser, vision and mini-program tests run on, lint, pytest (generated-code freshness is one of its tests).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
echo "[test] building the engine and converting the bundled models (incremental)"
.venv/bin/wasmrt build
.venv/bin/python -m wasmrt.zoo.bundle
echo "[test] ruff"
.venv/bin/ruff check .
echo "[test] pytest"
# The slowest tests are listed so that the suite's time budget can be watched from CI's output.
.venv/bin/python -m pytest -q -rfEs --durations=30 "$@"
