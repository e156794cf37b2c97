#!/usr/bin/env bash
# The main job, from a fresh clone: set-up (idempotent), convert the bundled real models to models/*.wrt,
# and classify two sample photos with the reference engine using the model's own preprocessing.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export OPENBLAS_NUM_THREADS=1
WASMRT=.venv/bin/wasmrt
echo "[main] converting the bundled models"
.venv/bin/python -m wasmrt.bundle
.venv/bin/wasmrt inspect models/efficientnet_lite0.wrt
SAMPLES=$(.venv/bin/python -c "import skimage, pathlib; print(pathlib.Path(skimage.__file__).parent / 'data')")
for img in chelsea.png coffee.png; do
  echo "[main] $img -> EfficientNet-Lite0 (reference engine)"
  $WASMRT run models/efficientnet_lite0.wrt --engine ref --input "input=$SAMPLES/$img"
done
