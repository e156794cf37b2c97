"""The WebGPU engine: the generated WGSL kernels on wgpu-native (the `wgpu` package), any Vulkan/Metal/D3D12 GPU,
or Mesa's lavapipe on a machine without one.

Load uploads the packed constants once and builds one pipeline per kernel (cached per process), one bind group per
op (arena, constants, that op's parameters); a run writes the inputs into the arena, records every dispatch in one
compute pass of one command buffer, copies the outputs into a mapped buffer and reads them back. With
fallback="wasm" the ops without a WGSL kernel run on the wasm engine instead of being refused (webgpu_split.py).
The plan and the kernels are the JS backend's (webgpu_plan.py): one planner and one kernel file for both engines.
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from python_ref.wrt_file import read_wrt
from wasmrt.engines.base import Model, TensorSpec
from wasmrt.engines.webgpu_plan import F32, Plan, Segment, WebGPUUnavailable, kernel_table, plan
from wasmrt.engines.webgpu_split import FALLBACKS, WasmSide, report
from wasmrt.errors import UnsupportedOpError, WasmrtError

UNIFORM_ALIGN = 256


_DEVICE: dict[str, Any] = {}


def _wgpu() -> Any:
    try:
        import wgpu
    except ImportError as e:
        raise WebGPUUnavailable(f"engine webgpu needs the `wgpu` package (pip install wgpu): {e}") from None
    return wgpu


def device() -> tuple[Any, Any]:
    """The process's (adapter, device), created on first use with the adapter's largest buffer limits."""
    if "device" not in _DEVICE:
        wgpu = _wgpu()
        os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")  # the Vulkan loader complains on headless machines
        try:
            adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
        except Exception as e:  # wgpu-native raises when no backend finds an adapter
            raise WebGPUUnavailable(f"no WebGPU adapter: {e} (install a GPU driver, or Mesa's lavapipe: "
                                    "apt-get install mesa-vulkan-drivers)") from None
        if adapter is None:
            raise WebGPUUnavailable("no WebGPU adapter (install a GPU driver, or Mesa's lavapipe: "
                                    "apt-get install mesa-vulkan-drivers)")
        lim = adapter.limits
        limits = {k: lim[k] for k in ("max-storage-buffer-binding-size", "max-buffer-size",
                                      "max-compute-workgroup-storage-size") if k in lim}
        feats = [f for f in ("timestamp-query", "shader-f16") if f in adapter.features]
        _DEVICE.update(adapter=adapter, device=adapter.request_device_sync(required_features=feats,
                                                                           required_limits=limits),
                       pipelines={}, features=feats)
    return _DEVICE["adapter"], _DEVICE["device"]


def available() -> tuple[bool, str]:
    """(True, adapter description) when a WebGPU device works here, else (False, why not)."""
    try:
        adapter, _ = device()
    except WebGPUUnavailable as e:
        return False, str(e)
    info = adapter.info
    return True, f"{info.get('device', '?')} ({info.get('backend_type', '?')}, {info.get('adapter_type', '?')})"


def _layout(dev: Any, wgpu: Any) -> Any:
    if "layout" not in _DEVICE:
        bgl = dev.create_bind_group_layout(entries=[
            {"binding": 0, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": "storage"}},
            {"binding": 1, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": "read-only-storage"}},
            {"binding": 2, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": "uniform"}},
        ])
        _DEVICE["bgl"] = bgl
        _DEVICE["layout"] = dev.create_pipeline_layout(bind_group_layouts=[bgl])
    return _DEVICE["layout"]


def pipeline(name: str, code: str | None = None, storage: str = "f32") -> Any:
    """The compute pipeline of one generated kernel over f32 or f16 buffers (compiled once per process); `code` gives
    the WGSL of a kernel outside the table (a tuning candidate) under a name of its own."""
    wgpu = _wgpu()
    _, dev = device()
    cache = _DEVICE["pipelines"]
    if (name, storage) not in cache:
        table = kernel_table()
        code = code or table["kernels"][name]["code"]
        head = table["storage"]["f32"]
        code = table["storage"][storage] + code[len(head):] if code.startswith(head) else code
        module = dev.create_shader_module(label=name, code=code)
        cache[name, storage] = dev.create_compute_pipeline(label=name, layout=_layout(dev, wgpu),
                                                           compute={"module": module, "entry_point": "main"})
    return cache[name, storage]


class WebGPUModel(Model):
    engine = "webgpu"

    def __init__(self, data: bytes, name: str | None = None, *, timing: bool = False, storage: str = "f32",
                 fallback: str | None = None) -> None:
        """storage "f16" keeps activations and weights as f16 in GPU memory (adapters with `shader-f16`; arithmetic
        stays f32): half the memory traffic, about 3 significant digits (tests/test_webgpu.py F16_RTOL).
        fallback "wasm": the ops without a WGSL kernel run on the wasm engine (else they are refused at load); the
        wasm segments and the tensors crossing are in `self.fallback` (empty when everything runs on the GPU)."""
        wgpu = _wgpu()
        if storage not in ("f32", "f16"):
            raise ValueError(f"engine webgpu: variant (storage) is 'f32' or 'f16', not {storage!r}")
        if fallback not in FALLBACKS:
            raise ValueError(f"engine webgpu: fallback is None or 'wasm', not {fallback!r}")
        self.label = name or "<bytes>"
        model = read_wrt(data, name)
        t = model.tensors
        super().__init__([TensorSpec(t[i].name, t[i].shape, t[i].dtype) for i in model.inputs],
                         [TensorSpec(t[i].name, t[i].shape, t[i].dtype) for i in model.outputs])
        self.metadata = model.metadata
        self.plan: Plan = plan(data, self.label)
        if self.plan.wasm_ops and fallback != "wasm":  # refused before the GPU, naming the first op it cannot run
            k = min(self.plan.wasm_ops)
            why = self.plan.wasm_ops[k].replace(self.plan.wasm_op_types[k], model.ops[k].op)
            raise UnsupportedOpError(model.ops[k].op, model.ops[k].name or f"#{k}", f"{self.label} (engine webgpu)",
                                     why)
        self._tensors = t
        self._segments = self.plan.segments
        self.fallback: list[dict[str, Any]] = report(model, self.plan)
        self._wasm: WasmSide | None = None
        adapter, dev = device()
        if storage == "f16" and "shader-f16" not in _DEVICE["features"]:
            raise WebGPUUnavailable(f"{self.label}: f16 storage needs the `shader-f16` feature, which the adapter "
                                    f"{adapter.info.get('device', '?')} does not have (use variant 'f32')")
        self.storage = storage
        self.variant = f"{adapter.info.get('device', 'gpu')} ({storage})"
        self._dev = dev
        # element offsets and counts are the plan's (f32 bytes / 4); an element takes 2 bytes in f16 storage
        self._es = 2 if storage == "f16" else 4
        self._dt = np.dtype("<f2") if storage == "f16" else np.dtype("<f4")
        self._in = [(t[i].arena_offset // 4 * self._es, t[i].nbytes // 4 * self._es) for i in model.inputs]
        self._out = [(t[i].arena_offset // 4 * self._es, t[i].nbytes // 4 * self._es) for i in model.outputs]
        crossing = [i for g in self._segments for i in (*g.to_wasm, *g.to_gpu)]
        for i, (off, _) in zip([*model.inputs, *model.outputs, *crossing],
                               [*self._in, *self._out, *map(self._span, crossing)], strict=True):
            if off % 4 and t[i].dtype == F32:
                raise WasmrtError(f"{self.label}: tensor {t[i].name!r} at arena byte {t[i].arena_offset} is not "
                                  f"8-byte aligned, which {storage} storage needs for the copies in and out")
        limit = dev.limits["max-storage-buffer-binding-size"]
        for what, size in (("activation arena", self.plan.arena_bytes), ("constants", self.plan.constants.nbytes)):
            if size > limit:
                raise WasmrtError(f"{self.label}: the {what} needs {size / 2**20:.0f} MiB, more than this GPU "
                                  f"binds in one buffer ({limit / 2**20:.0f} MiB)")
        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_DST | wgpu.BufferUsage.COPY_SRC
        arena = -(-self.plan.arena_bytes // 4) * self._es
        self._arena = dev.create_buffer(label="arena", size=max(16, -(-arena // 16) * 16), usage=usage)
        consts = self.plan.constants.astype(self._dt).tobytes()
        self._consts = dev.create_buffer_with_data(label="constants", data=consts + bytes(-len(consts) % 4),
                                                   usage=wgpu.BufferUsage.STORAGE)
        blocks = [d.uniform for d in self.plan.dispatches]
        offsets, size = [], 0
        for b in blocks:
            offsets.append(size)
            size += -(-len(b) // UNIFORM_ALIGN) * UNIFORM_ALIGN
        ubuf = bytearray(max(size, 16))
        for off, b in zip(offsets, blocks, strict=True):
            ubuf[off:off + len(b)] = b
        self._uniforms = dev.create_buffer_with_data(label="params", data=bytes(ubuf),
                                                     usage=wgpu.BufferUsage.UNIFORM)
        pipelines = {k: pipeline(k, storage=storage) for k in self.plan.kernels()}
        self._steps = []
        for d, off, b in zip(self.plan.dispatches, offsets, blocks, strict=True):
            bg = dev.create_bind_group(layout=_DEVICE["bgl"], entries=[
                {"binding": 0, "resource": {"buffer": self._arena, "offset": 0, "size": self._arena.size}},
                {"binding": 1, "resource": {"buffer": self._consts, "offset": 0, "size": self._consts.size}},
                {"binding": 2, "resource": {"buffer": self._uniforms, "offset": off, "size": len(b)}},
            ])
            self._steps.append((pipelines[d.kernel], bg, d.groups))
        self._out_bytes = -(-sum(-(-n // 4) * 4 for _, n in self._out) // 8) * 8
        self._timing = timing and "timestamp-query" in _DEVICE["features"] and not self.fallback
        # each segment with its dispatches [d0, d1)
        ops = [d.op for d in self.plan.dispatches]
        self._parts = [(g, sum(o < g.first for o in ops), sum(o < g.end for o in ops)) for g in self._segments]
        wasm_outs = {i for g in self._segments for i in g.outputs}
        self._wasm_outs = [i in wasm_outs for i in model.outputs]
        self._out_ids = list(model.outputs)
        if self.fallback:
            self._wasm = WasmSide(data, self.label)
        # one mapped buffer per run: the outputs, then the pass's two timestamps (timing=True)
        self._readback = dev.create_buffer(label="outputs", size=max(16, self._out_bytes + 16 * self._timing),
                                           usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
        if self._timing:
            self._qs = dev.create_query_set(type=wgpu.QueryType.timestamp, count=2)
            self._qbuf = dev.create_buffer(size=16, usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC)
        self.kernel_seconds = float("nan")  # GPU time of the last run's compute pass (timing=True)
        self.run_seconds = float("nan")     # the last run end to end: upload, dispatches, readback

    def _run(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        if self._dev is None:
            raise WasmrtError(f"{self.label}: the model was released")
        wgpu = _wgpu()
        t0 = time.perf_counter()
        q = self._dev.queue
        for (off, _), a in zip(self._in, arrays, strict=True):
            if a.dtype == F32:  # (others are read by wasm ops only)
                q.write_buffer(self._arena, off, self._stored(a))
        if self._wasm:
            self._wasm.feed(arrays)
        enc = self._dev.create_command_encoder()
        for seg, d0, d1 in self._parts:
            if seg.wasm:  # the GPU work so far, then this segment on wasm
                q.submit([enc.finish()])
                self._run_wasm(seg)
                enc = self._dev.create_command_encoder()
            else:
                self._encode(enc, self._steps[d0:d1])
        at = 0
        for (off, n), on_wasm in zip(self._out, self._wasm_outs, strict=True):
            if not on_wasm:
                enc.copy_buffer_to_buffer(self._arena, off, self._readback, at, -(-n // 4) * 4)
            at += -(-n // 4) * 4
        if self._timing:
            enc.resolve_query_set(self._qs, 0, 2, self._qbuf, 0)
            enc.copy_buffer_to_buffer(self._qbuf, 0, self._readback, self._out_bytes, 16)
        q.submit([enc.finish()])
        self._readback.map_sync(wgpu.MapMode.READ)
        raw = bytes(self._readback.read_mapped())
        self._readback.unmap()
        outs, at = [], 0
        for spec, (_, n), i, on_wasm in zip(self.outputs, self._out, self._out_ids, self._wasm_outs, strict=True):
            if on_wasm and self._wasm:
                outs.append(self._wasm.read(i, spec.shape, spec.dtype))
            else:
                got = np.frombuffer(raw, self._dt, count=n // self._es, offset=at)
                outs.append(got.astype(spec.dtype).reshape(spec.shape))
            at += -(-n // 4) * 4
        if self._timing:
            ts = np.frombuffer(raw, np.uint64, count=2, offset=self._out_bytes)
            self.kernel_seconds = float(ts[1] - ts[0]) * 1e-9  # Vulkan timestamp periods: 1 ns on NVIDIA, lavapipe
        self.run_seconds = time.perf_counter() - t0
        return [o.copy() for o in outs]

    def _encode(self, enc: Any, steps: list[tuple[Any, Any, tuple[int, int, int]]]) -> None:
        """One compute pass of these dispatches (timed with timing=True)."""
        tw = {"query_set": self._qs, "beginning_of_pass_write_index": 0, "end_of_pass_write_index": 1} \
            if self._timing else None
        cp = enc.begin_compute_pass(timestamp_writes=tw) if tw else enc.begin_compute_pass()
        last = None
        for pipe, bg, groups in steps:
            if pipe is not last:  # consecutive dispatches of one kernel keep the pipeline
                cp.set_pipeline(pipe)
                last = pipe
            cp.set_bind_group(0, bg)
            cp.dispatch_workgroups(*groups)
        cp.end()

    def _span(self, i: int) -> tuple[int, int]:
        """(byte offset, bytes) of activation i in the GPU arena."""
        t = self._tensors[i]
        return t.arena_offset // 4 * self._es, t.nbytes // 4 * self._es

    def _run_wasm(self, seg: Segment) -> None:
        """A wasm segment: the GPU tensors it reads in, its ops, the tensors later GPU ops read out."""
        assert self._wasm is not None
        q = self._dev.queue
        for i in seg.to_wasm:
            off, n = self._span(i)
            raw = q.read_buffer(self._arena, off, -(-n // 4) * 4)
            self._wasm.write(i, np.frombuffer(raw, self._dt, count=n // self._es).astype(F32))
        self._wasm.run(seg.first, seg.end)
        for i in seg.to_gpu:
            q.write_buffer(self._arena, self._span(i)[0], self._stored(self._wasm.read(i, self._tensors[i].shape, F32)))

    def _stored(self, a: np.ndarray) -> bytes:
        """An input's bytes as the arena holds them, padded to 4 bytes (an f16 tensor of odd size)."""
        b = np.ascontiguousarray(a, self._dt).tobytes()
        return b + bytes(-len(b) % 4)

    def time_dispatches(self, repeat: int) -> float:
        """GPU seconds per execution of the model's dispatches, recorded `repeat` times back to back in one timed
        pass over the arena as it is (no upload, no readback): the kernels' rate with the GPU kept busy, as a stream
        of runs keeps it (timing=True)."""
        if self.fallback:
            raise WasmrtError("time_dispatches() times the GPU's part of a run: a model with ops on the wasm "
                              "fallback has no such part")
        if not self._timing:
            raise WasmrtError("time_dispatches() needs a model loaded with timing=True on a GPU with timestamp-query")
        wgpu = _wgpu()
        enc = self._dev.create_command_encoder()
        cp = enc.begin_compute_pass(timestamp_writes={"query_set": self._qs, "beginning_of_pass_write_index": 0,
                                                      "end_of_pass_write_index": 1})
        for _ in range(repeat):
            for pipe, bg, groups in self._steps:
                cp.set_pipeline(pipe)
                cp.set_bind_group(0, bg)
                cp.dispatch_workgroups(*groups)
        cp.end()
        enc.resolve_query_set(self._qs, 0, 2, self._qbuf, 0)
        enc.copy_buffer_to_buffer(self._qbuf, 0, self._readback, self._out_bytes, 16)
        self._dev.queue.submit([enc.finish()])
        self._readback.map_sync(wgpu.MapMode.READ, self._out_bytes, 16)
        ts = np.frombuffer(bytes(self._readback.read_mapped(self._out_bytes, 16)), np.uint64)
        self._readback.unmap()
        return float(ts[1] - ts[0]) * 1e-9 / repeat

    def swap_kernel(self, index: int, pipe: Any, groups: tuple[int, int, int]) -> None:
        """Run dispatch `index` with another pipeline of the same parameter layout and grid (kernel tuning)."""
        _, bg, _ = self._steps[index]
        self._steps[index] = (pipe, bg, groups)

    def profile(self, feeds: dict[str, np.ndarray]) -> list[tuple[int, str, float]]:
        """One run with each dispatch in its own timed compute pass: [(op index, kernel, GPU seconds)]. Slower than
        run() (a pass per dispatch); for finding where the time goes. GPU dispatches only: ops on the wasm fallback
        do not run, so the GPU ops after them read what the arena holds."""
        if "timestamp-query" not in _DEVICE["features"]:
            raise WasmrtError("profile() needs the GPU's timestamp-query feature")
        wgpu = _wgpu()
        arrays = self.check_feeds(feeds)
        n = len(self._steps)
        qs = self._dev.create_query_set(type=wgpu.QueryType.timestamp, count=2 * n)
        qbuf = self._dev.create_buffer(size=16 * n, usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC)
        with self._lock:
            for (off, _), a in zip(self._in, arrays, strict=True):
                self._dev.queue.write_buffer(self._arena, off, self._stored(a))
            enc = self._dev.create_command_encoder()
            for k, (pipe, bg, groups) in enumerate(self._steps):
                cp = enc.begin_compute_pass(timestamp_writes={"query_set": qs, "beginning_of_pass_write_index": 2 * k,
                                                              "end_of_pass_write_index": 2 * k + 1})
                cp.set_pipeline(pipe)
                cp.set_bind_group(0, bg)
                cp.dispatch_workgroups(*groups)
                cp.end()
            enc.resolve_query_set(qs, 0, 2 * n, qbuf, 0)
            self._dev.queue.submit([enc.finish()])
            ts = np.frombuffer(bytes(self._dev.queue.read_buffer(qbuf)), np.uint64).reshape(n, 2)
        qbuf.destroy()
        return [(d.op, d.kernel, float(t1 - t0) * 1e-9) for d, (t0, t1) in zip(self.plan.dispatches, ts, strict=True)]

    def _free(self) -> None:
        if self.__dict__.get("_wasm"):
            self._wasm.release()
            self._wasm = None
        for name in ("_arena", "_consts", "_uniforms", "_readback", "_qbuf"):
            buf = self.__dict__.pop(name, None)
            if buf is not None:
                buf.destroy()
        self._steps = []
        self._dev = None
