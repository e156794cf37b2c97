"""The native host: our C engine (x86-64 .so), LiteRT (XNNPACK) and onnxruntime in this Python process, one thread
each, interleaved round by round. One timed run = copy the inputs in + run + read the outputs (peers.md)."""

from __future__ import annotations

import ctypes
import gc
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

from wasmrt import paths
from wasmrt.bench.prepare import Prepared
from wasmrt.errors import WasmrtError

Outputs = list[np.ndarray]


@dataclass
class Engine:
    id: str
    run: Callable[[], Outputs]
    info: dict


def suffix(threads: int) -> str:
    """Engine ids name their thread count beyond one: wasmrt-avx512-t2, onnxruntime-t2."""
    return f"-t{threads}" if threads > 1 else ""


def _ours_via_package(prep: Prepared, threads: int = 1, conv: str = "auto") -> Engine | None:
    """The engine binding of the wasmrt package, when it is there; conv: the dense convolutions' algorithm (not
    "auto": a @baseline row, bench --baseline-conv)."""
    import wasmrt

    load = getattr(wasmrt, "load", None)
    if load is None:
        return None
    model = load(str(prep.wrt), engine="native", threads=threads, conv=conv)
    feeds = prep.feeds

    def run() -> Outputs:
        res = model.run(feeds)
        return [res[o] for o in prep.outputs] if all(o in res for o in prep.outputs) else list(res.values())

    variant = getattr(model, "variant", "") or "native"
    tag = "@baseline" if conv != "auto" else ""
    return Engine(f"wasmrt-{variant}{suffix(threads)}{tag}", run,
                  {"variant": variant, "binding": "wasmrt.load", "threads": model.threads, "conv": conv})


class _CEngine:
    """A minimal ctypes binding of kernels_wasm/engine/wasmrt.h, used until wasmrt.load(engine='native') exists."""

    def __init__(self, lib_path: Path, model: bytes) -> None:
        lib = ctypes.CDLL(str(lib_path))
        lib.wrt_load.restype = ctypes.c_void_p
        lib.wrt_load.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_int)]
        for fn in ("wrt_run", "wrt_num_inputs", "wrt_num_outputs"):
            getattr(lib, fn).argtypes = [ctypes.c_void_p]
        for fn in ("wrt_input_ptr", "wrt_output_ptr"):
            getattr(lib, fn).restype = ctypes.c_void_p
            getattr(lib, fn).argtypes = [ctypes.c_void_p, ctypes.c_int]
        lib.wrt_tensor_bytes.restype = ctypes.c_size_t
        lib.wrt_tensor_bytes.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
        lib.wrt_error_message.restype = ctypes.c_char_p
        lib.wrt_target_name.restype = ctypes.c_char_p
        lib.wrt_release.argtypes = [ctypes.c_void_p]
        err = ctypes.c_int(0)
        self.lib, self.h = lib, lib.wrt_load(model, len(model), ctypes.byref(err))
        if not self.h:
            raise WasmrtError(f"native engine cannot load the model: {lib.wrt_error_message().decode()}")
        self.target = lib.wrt_target_name().decode()

    def buffers(self, which: int, dtypes: list[np.dtype]) -> list[np.ndarray]:
        """numpy views of the engine's input (0) or output (1) tensors, in place, of the tensors' dtypes."""
        n = (self.lib.wrt_num_inputs if which == 0 else self.lib.wrt_num_outputs)(self.h)
        ptr = self.lib.wrt_input_ptr if which == 0 else self.lib.wrt_output_ptr
        out = []
        for i in range(n):
            size = self.lib.wrt_tensor_bytes(self.h, which, i)
            raw = np.ctypeslib.as_array(ctypes.cast(ptr(self.h, i), ctypes.POINTER(ctypes.c_uint8)), (size,))
            out.append(raw.view(dtypes[i]))
        return out

    def run(self) -> None:
        if self.lib.wrt_run(self.h) != 0:
            raise WasmrtError(f"native engine run failed: {self.lib.wrt_error_message().decode()}")

    def release(self) -> None:
        if getattr(self, "h", None):
            self.lib.wrt_release(self.h)
            self.h = None

    __del__ = release


def _ours_via_ctypes(prep: Prepared, lib: Path | None = None) -> Engine:
    """Our engine through a minimal binding; lib: an earlier build's library (bench --baseline)."""
    from python_ref import Interpreter
    from wasmrt.dev import build

    data = prep.wrt.read_bytes()
    spec = Interpreter(data)
    eng = _CEngine(lib or build.build_native().path, data)
    ins, outs = eng.buffers(0, [t.dtype for t in spec.inputs]), eng.buffers(1, [t.dtype for t in spec.outputs])
    feeds = [np.ascontiguousarray(prep.feeds[i["name"]]).reshape(-1) for i in prep.inputs]

    def run() -> Outputs:
        for dst, src in zip(ins, feeds, strict=True):
            dst[:] = src
        eng.run()
        return [o.copy() for o in outs]

    suffix = "@baseline" if lib is not None else ""
    return Engine(f"wasmrt-{eng.target}{suffix}", run, {"variant": eng.target, "binding": "ctypes"})


def _litert(prep: Prepared, threads: int = 1) -> Engine:
    from ai_edge_litert.interpreter import Interpreter

    interp = Interpreter(model_path=str(prep.peer_files["tflite"]), num_threads=threads)
    interp.allocate_tensors()
    ins = [(d["index"], prep.feeds[i["name"]]) for d, i in zip(interp.get_input_details(), prep.inputs, strict=True)]
    outs = [d["index"] for d in interp.get_output_details()]

    def run() -> Outputs:
        for idx, value in ins:
            interp.set_tensor(idx, value)
        interp.invoke()
        return [interp.get_tensor(o) for o in outs]

    import ai_edge_litert

    return Engine(f"litert{suffix(threads)}", run, {"version": getattr(ai_edge_litert, "__version__", ""),
                                                      "delegate": "XNNPACK", "threads": threads})


def _onnxruntime(prep: Prepared, threads: int = 1) -> Engine:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(str(prep.peer_files["onnx"]), so, providers=["CPUExecutionProvider"])
    feeds = {i["name"]: prep.feeds[i["name"]] for i in prep.inputs}

    def run() -> Outputs:
        return sess.run(prep.outputs, feeds)

    return Engine(f"onnxruntime{suffix(threads)}", run, {"version": ort.__version__, "threads": threads})


Maker = tuple[str, Callable[[], Engine]]


def engine_makers(prep: Prepared, peers: bool, baseline: Path | None = None,
                  threads: tuple[int, ...] = (1,), baseline_conv: str | None = None) -> list[Maker]:
    """(label, create) for every engine the run compares, in report order; create() loads the model."""
    makers: list[Maker] = [(f"native wasmrt{suffix(t)}", partial(_ours, prep, t)) for t in threads]
    if baseline is not None and paths.native_library(baseline).is_file():
        makers.append(("native wasmrt baseline", partial(_ours_via_ctypes, prep, paths.native_library(baseline))))
    if baseline_conv:
        makers.append((f"native wasmrt conv={baseline_conv}", partial(_ours_via_package, prep, 1, baseline_conv)))
    if peers:
        for kind, make in (("tflite", _litert), ("onnx", _onnxruntime)):
            if kind in prep.peer_files:
                makers += [(f"native {make.__name__.strip('_')}{suffix(t)}", partial(make, prep, t)) for t in threads]
    return makers


def _ours(prep: Prepared, threads: int) -> Engine:
    return _ours_via_package(prep, threads) or _ours_via_ctypes(prep)


def make_engines(makers: list[Maker], notes: list[str], first: int = 0) -> list[Engine | None]:
    """The engines, in the makers' order, created starting with makers[first] and wrapping around: in one process
    the engine created first runs a few percent slower than an identical one created after it (README, Speed), so
    each pass of the bench hands that place to another engine. None where one could not be created, with a note."""
    made: list[Engine | None] = [None] * len(makers)
    for k in range(len(makers)):
        i = (first + k) % len(makers)
        label, create = makers[i]
        try:
            made[i] = create()
        except Exception as e:  # the bench goes on with what runs, and says why something did not
            notes.append(f"{label}: {e}")
    return made


def run_native(prep: Prepared, peers: bool, warmup: int, rounds: int, progress: Callable[[int, int], None],
               baseline: Path | None = None, passes: int = 1, threads: list[int] | None = None,
               also: tuple[Prepared, str] | None = None, gap_ms: float = 0.0,
               warm_runs: int = 0, baseline_conv: str | None = None) -> tuple[dict, list[str]]:
    """{engine id: {times_ms, cpu_ms, passes, outputs, info}} for the native host, plus notes on what could not
    run. gap_ms: the process sleeps that long before every run (warm-up and timed), so that the thread pools the
    engine before left spinning have gone to sleep (run.py IDLE_GAP_MS), then runs each engine warm_runs times
    untimed before its timed run. cpu_ms: this thread's CPU time per run,
    which a loaded machine inflates far less than the wall clock; only for single-threaded engines (the calling
    thread's time says nothing about a multi-threaded run).
    also: (another prepared model, tag): its engines too, interleaved with these, their ids ending in the tag."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    notes: list[str] = []
    makers = engine_makers(prep, peers, baseline, tuple(threads or (1,)), baseline_conv)
    if also is not None:
        other, tag = also
        makers += [(label + tag, partial(_tagged, create, tag))
                   for label, create in engine_makers(other, peers, baseline, tuple(threads or (1,)), baseline_conv)]
    results: dict[str, dict] = {}
    count = Counter(progress)
    for p in range(passes):
        _run_pass(make_engines(makers, notes if p == 0 else [], p), results, p, passes, warmup, rounds, gap_ms,
                  count, warm_runs)
        gc.collect()  # this pass's engines go before the next pass loads its own
    return results, notes


class Counter:
    """Progress over all passes; the total is known once the first pass has seen which engines run."""

    def __init__(self, report: Callable[[int, int], None]) -> None:
        self.report, self.done, self.total = report, 0, 0

    def step(self) -> None:
        self.done += 1
        self.report(self.done, self.total)


def _run_pass(made: list[Engine | None], results: dict[str, dict], p: int, passes: int, warmup: int, rounds: int,
              gap_ms: float, count: Counter, warm_runs: int = 0) -> None:
    """One pass over freshly loaded engines: (in the first pass) the first run, kept as the output to cross-check,
    then the warm-up and `rounds` timed rounds, the order rotated by one per round as the JS hosts do."""
    live = [e for e in made if e is not None and (p == 0 or "times_ms" in results.get(e.id, {}))]
    if p == 0:
        for e in list(live):
            t0 = time.perf_counter()
            try:
                results[e.id] = {"outputs": e.run(), "info": e.info, "times_ms": [], "cpu_ms": [], "passes": passes,
                                 "first_run_ms": (time.perf_counter() - t0) * 1e3}
            except Exception as err:
                results[e.id] = {"error": str(err)}
                live.remove(e)
        count.total = len(live) * passes * (warmup + rounds)
    gap = gap_ms / 1e3
    for _ in range(warmup):
        for e in live:
            if gap:
                time.sleep(gap)
            e.run()
            count.step()
    for r in range(rounds):
        for k in range(len(live)):
            e = live[(k + r) % len(live)]
            if gap:
                time.sleep(gap)
            for _ in range(warm_runs):
                e.run()
            single = e.info.get("threads", 1) == 1
            w0 = 0.0 if single else wait_ms()
            c0, t0 = time.thread_time_ns(), time.perf_counter()
            e.run()
            t1, c1 = time.perf_counter(), time.thread_time_ns()
            results[e.id]["times_ms"].append((t1 - t0) * 1e3)
            if single:
                results[e.id]["cpu_ms"].append((c1 - c0) / 1e6)
            elif w0 >= 0:
                results[e.id].setdefault("wait_ms", []).append(wait_ms() - w0)
            count.step()


def wait_ms() -> float:
    """How long this process's threads (the engines' pools too) have waited for a core while ready to run, in ms:
    the second field of each /proc/self/task/TID/schedstat; -1 without /proc. Two threads of a run that share one
    core show as waits of milliseconds."""
    total = 0
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return -1.0
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                total += int(f.read().split()[1])
        except (OSError, IndexError, ValueError):  # a thread that ended in between
            continue
    return total / 1e6


def _tagged(create: Callable[[], Engine], tag: str) -> Engine:
    e = create()
    return Engine(e.id + tag, e.run, e.info)
