#!/usr/bin/env bash
# The main job, from a fresh clone: set-up (idempotent), build the engine (three wasm variants + the native
# library), convert the bundled real models, classify two photos on every engine, print a native-vs-wasm speed
# comparison, then serve the demo pages on 127.0.0.1 (Ctrl-C stops it; WASMRT_NO_SERVE=1 skips serving).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export OPENBLAS_NUM_THREADS=1
WASMRT=.venv/bin/wasmrt

echo "[main] building the engine"
$WASMRT build
echo "[main] converting the bundled models"
.venv/bin/python -m wasmrt.zoo.bundle
$WASMRT inspect models/efficientnet_lite0.wrt

SAMPLES=$(.venv/bin/python -c "import skimage, pathlib; print(pathlib.Path(skimage.__file__).parent / 'data')")
for img in chelsea.png coffee.png; do
  for engine in "ref" "native" "wasm --variant relaxed" "wasm --variant simd"; do
    echo "[main] $img -> EfficientNet-Lite0 on $engine"
    # shellcheck disable=SC2086
    $WASMRT run models/efficientnet_lite0.wrt --engine $engine --input "input=$SAMPLES/$img" | sed -n '1,3p'
  done
done

echo "[main] native vs wasm (Node and headless Chromium), single thread"
$WASMRT bench mobilenet_v2 efficientnet_lite0 face_landmark --rounds 15 --warmup 3

if [ "${WASMRT_NO_SERVE:-}" = "1" ] || [ "${CI:-}" = "true" ]; then
  echo "[main] not serving the demo (WASMRT_NO_SERVE or CI set)"
else
  echo "[main] serving the demo (the server prints the URLs of its three pages; Ctrl-C to stop)"
  exec $WASMRT demo
fi
