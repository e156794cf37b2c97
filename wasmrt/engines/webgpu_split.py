"""The WebGPU engine's wasm fallback (load(..., engine="webgpu", fallback="wasm")): the ops the GPU planner refuses
run on the wasm engine, which loads the same .wrt beside the GPU copy (its arena follows the file's memory plan, as
the GPU arena does, so every tensor the plan keeps live is live on both sides).

The op list is cut into segments of consecutive ops on one side. Before a wasm segment the tensors it reads that GPU
ops computed are read back and written into wasm memory (wrt_tensor_data); the segment runs with wrt_run_ops; the
tensors it computes that later GPU ops read are uploaded into the GPU arena. Graph inputs go to both sides, graph
outputs computed on wasm are read from wasm memory. Every crossing is in the model's `fallback` report: never a
silent CPU fallback. js_bindings/src/webgpu/split.js is the same in JS.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from python_ref.wrt_file import WrtModel
from wasmrt.engines.errors import engine_error
from wasmrt.errors import WasmrtError

FALLBACKS = (None, "wasm")


@dataclass
class Segment:
    first: int           # ops [first, end)
    end: int
    wasm: bool
    to_wasm: list[int]   # tensors GPU ops computed that this wasm segment reads: read back before it
    to_gpu: list[int]    # tensors this wasm segment computes that later GPU ops read: uploaded after it
    outputs: list[int]   # graph outputs this wasm segment computes: read from wasm memory after the run


def split(model: WrtModel, wasm_ops: dict[int, str]) -> list[Segment]:
    """The model's ops as GPU and wasm segments, with the tensors crossing at each boundary."""
    producer: dict[int, int] = {}
    consumers: dict[int, list[int]] = {}
    for k, op in enumerate(model.ops):
        for t in op.outputs:
            producer[t] = k
        for t in op.inputs:
            consumers.setdefault(t, []).append(k)
    segs, k, n = [], 0, len(model.ops)
    while k < n:
        side, end = k in wasm_ops, k
        while end < n and (end in wasm_ops) == side:
            end += 1
        if not side:
            segs.append(Segment(k, end, False, [], [], []))
        else:
            ins = {t for j in range(k, end) for t in model.ops[j].inputs}
            outs = {t for j in range(k, end) for t in model.ops[j].outputs}
            segs.append(Segment(
                k, end, True,
                sorted(t for t in ins if t in producer and producer[t] < k and producer[t] not in wasm_ops),
                sorted(t for t in outs if any(c >= end and c not in wasm_ops for c in consumers.get(t, []))),
                [t for t in model.outputs if t in outs]))
        k = end
    return segs


def report(model: WrtModel, wasm_ops: dict[int, str], segs: list[Segment]) -> list[dict[str, Any]]:
    """The wasm segments: their ops (index, type, name, why not on the GPU) and the tensors crossing (names)."""
    names = [t.name for t in model.tensors]
    return [{"first": s.first, "end": s.end,
             "ops": [{"index": k, "type": model.ops[k].op, "name": model.ops[k].name, "reason": wasm_ops[k]}
                     for k in range(s.first, s.end)],
             "to_wasm": [names[t] for t in s.to_wasm], "to_gpu": [names[t] for t in s.to_gpu],
             "outputs": [names[t] for t in s.outputs]} for s in segs if s.wasm]


class WasmSide:
    """The wasm engine's copy of the model: its inputs, tensors by file index, and ranges of ops."""

    def __init__(self, data: bytes, name: str) -> None:
        from wasmrt.engines.wasm import WasmModel

        self.model = WasmModel(data, name)
        self.w, self.p = self.model.wasm, self.model._ptr

    def _at(self, t: int, nbytes: int) -> int:
        t = int(t)
        got = self.w.ptr("wrt_tensor_nbytes", self.p, t)
        addr = self.w.ptr("wrt_tensor_data", self.p, t)
        if got != nbytes or not addr:
            raise WasmrtError(f"wasm fallback: tensor {t} has {got} bytes in the wasm engine, {nbytes} in the plan")
        return addr

    def feed(self, arrays: list[np.ndarray]) -> None:
        for i, a in enumerate(arrays):
            self.w.write(self.w.ptr("wrt_input_ptr", self.p, i), a)

    def write(self, t: int, a: np.ndarray) -> None:
        self.w.write(self._at(t, a.nbytes), a)

    def read(self, t: int, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        y = np.empty(shape, dtype)
        self.w.read_into(self._at(t, y.nbytes), y)
        return y

    def run(self, first: int, end: int) -> None:
        code = self.w.call("wrt_run_ops", self.p, int(first), int(end))
        if code:
            raise engine_error(code, self.w.error_message(), "")

    def release(self) -> None:
        self.model.release()
