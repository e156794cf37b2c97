#!/usr/bin/env bash
# The whole test suite, from a fresh clone: set-up (idempotent), lint, generated-code freshness, pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
echo "[test] ruff"
.venv/bin/ruff check .
echo "[test] pytest"
.venv/bin/python -m pytest -q -rfEs "$@"
