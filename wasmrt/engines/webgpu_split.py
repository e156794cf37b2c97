"""The WebGPU engine's wasm fallback (load(..., engine="webgpu", fallback="wasm")): the ops the GPU planner refuses
run on the wasm engine, which loads the same .wrt beside the GPU copy (its arena follows the file's memory plan, as
the GPU arena does, so every tensor the plan keeps live is live on both sides).

The plan (webgpu_plan.py, from the JS planner's split.js) cuts the op list into segments of consecutive ops on one
side. Before a wasm segment the tensors it reads that GPU ops computed are read back and written into wasm memory
(wrt_tensor_data); the segment runs with wrt_run_ops; the tensors it computes that later GPU ops read are uploaded
into the GPU arena. Graph inputs go to both sides, graph outputs computed on wasm are read from wasm memory. Every
crossing is in the model's `fallback` report: never a silent CPU fallback.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from python_ref.wrt_file import WrtModel
from wasmrt.engines.errors import engine_error
from wasmrt.engines.webgpu_plan import Plan
from wasmrt.errors import WasmrtError

FALLBACKS = (None, "wasm")


def report(model: WrtModel, p: Plan) -> list[dict[str, Any]]:
    """The wasm segments: their ops (index, type, name, why not on the GPU) and the tensors crossing (names)."""
    names = [t.name for t in model.tensors]

    def why(k: int) -> str:  # in this reader's op names
        return p.wasm_ops[k].replace(p.wasm_op_types[k], model.ops[k].op)

    return [{"first": s.first, "end": s.end,
             "ops": [{"index": k, "type": model.ops[k].op, "name": model.ops[k].name, "reason": why(k)}
                     for k in range(s.first, s.end)],
             "to_wasm": [names[t] for t in s.to_wasm], "to_gpu": [names[t] for t in s.to_gpu],
             "outputs": [names[t] for t in s.outputs]} for s in p.segments if s.wasm]


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
