"""What every engine's Model offers: input/output specs, feed checks, run()."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from python_ref.errors import InputError
from python_ref.interpreter import TensorSpec, check_feeds
from python_ref.wrt_file import DTYPES

__all__ = ["CONV_ALGOS", "DEFAULT_LIMITS", "DTYPES", "SPARSE_POLICIES", "Limits", "Model", "TensorSpec", "conv_algo",
           "sparse_policy"]


@dataclass(frozen=True)
class Limits:
    """A model's resource limits for the C engine (wrt_load_with_limits); 0 = the engine's default."""

    max_memory: float = 0.0
    max_work: float = 0.0

    @staticmethod
    def of(max_memory: float | None, max_work: float | None) -> Limits:
        for name, v in (("max_memory", max_memory), ("max_work", max_work)):
            if v is not None and not (isinstance(v, int | float) and v > 0):
                raise ValueError(f"{name} must be a positive number, got {v!r}")
        return Limits(float(max_memory or 0), float(max_work or 0))

    @staticmethod
    def threads_of(threads: int | str) -> int:
        """A thread count: a positive int, or "auto" for the CPUs this process may use (at most 16)."""
        if threads == "auto":
            cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
            return max(1, min(16, cpus))
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise ValueError(f"threads must be a positive int or 'auto', got {threads!r}")
        return threads


DEFAULT_LIMITS = Limits()
# which kernels run block-sparse weights (wrt_set_sparse_policy): at the target's break-even, always, or never
SPARSE_POLICIES = {"auto": 0, "always": 1, "never": 2}


def sparse_policy(sparse: str) -> int:
    if sparse not in SPARSE_POLICIES:
        raise ValueError(f"sparse must be one of {', '.join(SPARSE_POLICIES)}, got {sparse!r}")
    return SPARSE_POLICIES[sparse]


# which algorithm runs dense KxK convolutions (wrt_set_conv_algo): the engine's rules, the indirect GEMM, or Winograd
# F(2x2, 3x3) / F(4x4, 3x3) wherever it applies (python_ref/winograd.py ALGORITHMS)
CONV_ALGOS = {"auto": 0, "igemm": 1, "wino2": 2, "wino4": 3}


def conv_algo(conv: str) -> int:
    if conv not in CONV_ALGOS:
        raise ValueError(f"conv must be one of {', '.join(CONV_ALGOS)}, got {conv!r}")
    return CONV_ALGOS[conv]


class Model:
    """A loaded model: `inputs`, `outputs` (TensorSpec lists) and `run({name: array}) -> {name: array}`."""

    engine: str = ""
    variant: str = ""  # kernel target the engine picked (scalar, avx2, wasm_simd128, ...)
    threads: int = 1  # threads a run uses
    choice_source: str = "rules"  # how the C engine chose each op's algorithm: rules, deterministic, measured, cache
    choice_times: dict[int, list[float | None]]  # measured: per op with candidates, each one's median ms
    metadata: dict[str, Any]  # source, producer, preprocess hints, labels, props (python_ref.wrt_file's form)
    choice: dict[str, Any] | None = None  # engine="auto": {"engine", "reason", "ms": each engine's trial median}

    def __init__(self, inputs: list[TensorSpec], outputs: list[TensorSpec]) -> None:
        self.inputs = inputs
        self.outputs = outputs
        # One run at a time per model (its arena holds one run's tensors); release() waits for a run to finish.
        self._lock = threading.Lock()
        self.choice_times = {}

    def check_feeds(self, feeds: dict[str, Any] | Sequence[Any] | np.ndarray) -> list[np.ndarray]:
        """Feeds in input order, contiguous, with the exact dtype and shape the model declares. Takes {name: array},
        a list of arrays in input order, or one array for a model with one input."""
        names = [s.name for s in self.inputs]
        if isinstance(feeds, np.ndarray):
            if len(names) != 1:
                raise InputError(f"run() got one array, but the model has {len(names)} inputs {names}: "
                                 "pass {name: array}")
            feeds = {names[0]: feeds}
        elif isinstance(feeds, list | tuple):
            if len(feeds) != len(names):
                raise InputError(f"run() got {len(feeds)} arrays, the model has {len(names)} inputs {names}")
            feeds = dict(zip(names, feeds, strict=True))
        elif not isinstance(feeds, dict):
            raise InputError(f"run() takes {{input name: array}}, a list of arrays in input order or one array, "
                             f"not {type(feeds).__name__}")
        return check_feeds(self.inputs, feeds)

    def run(self, feeds: dict[str, Any] | Sequence[Any] | np.ndarray) -> dict[str, np.ndarray]:
        """Outputs by name. Inputs with run-time dimensions may take any size within their bounds: a new size
        re-plans the model first (as resize_inputs)."""
        arrays = self.check_feeds(feeds)
        with self._lock:
            if any(a.shape != s.shape for a, s in zip(arrays, self.inputs, strict=True)):
                self._resize_locked([a.shape for a in arrays])
            outs = self._run(arrays)
        return dict(zip((s.name for s in self.outputs), outs, strict=True))

    @property
    def dynamic(self) -> bool:
        """Some input takes its size at run time (a model converted with --dynamic)."""
        return any(s.bounds is not None for s in self.inputs)

    def resize_inputs(self, shapes: dict[str, Sequence[int]]) -> None:
        """New sizes for inputs with run-time dimensions (inputs not named keep theirs): the engine re-plans its
        arena and tables for them (the weights stay); `inputs` and `outputs` then give the new shapes. Sizes
        outside an input's bounds, or beyond the model's limits, raise an error and leave the model as it was."""
        names = [s.name for s in self.inputs]
        unknown = sorted(set(shapes) - set(names))
        if unknown:
            raise InputError(f"unknown input {unknown[0]!r}; the model's inputs are {sorted(names)}")
        new = []
        for s in self.inputs:
            shape = tuple(int(d) for d in shapes.get(s.name, s.shape))
            if not s.accepts(shape):
                raise InputError(f"input {s.name!r}: shape {list(shape)}, expected {s.describe()}")
            new.append(shape)
        with self._lock:
            self._resize_locked(new)

    def _resize_locked(self, shapes: list[tuple[int, ...]]) -> None:
        """Re-plan for these input shapes (under the model's lock) and refresh inputs/outputs."""
        raise NotImplementedError

    def _run(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        raise NotImplementedError

    def release(self) -> None:
        """Free the engine's memory now (also done when the object is garbage collected). Waits for a run in
        another thread to finish; later runs raise an error."""
        lock = self.__dict__.get("_lock")  # absent when __init__ failed early
        with lock if lock is not None else contextlib.nullcontext():
            self._free()

    def _free(self) -> None:
        """Free the engine's memory (called under the model's lock)."""

    def __enter__(self) -> Model:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __repr__(self) -> str:
        ins = ", ".join(f"{s.name}{list(s.shape)}" for s in self.inputs)
        return f"<wasmrt.Model engine={self.engine} variant={self.variant} inputs=[{ins}]>"
