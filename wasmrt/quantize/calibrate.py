"""Calibration for post-training quantization: sample inputs, and the range of every activation of a float graph.

Samples come from a folder of images (turned into tensors by the model's preprocessing hints, wasmrt/preprocess.py)
or of .npy tensors (.npz with one array per input name for models with several inputs).

Ranges are measured by running the float graph on the native C engine with every intermediate tensor made a graph
output (one run per sample gives all activations; python_ref is the fallback where the native engine cannot run the
graph). Methods:
- minmax: the smallest and largest value seen (onnxruntime's MinMax, TFLite's converter);
- percentile: the 0.01% and 99.99% quantiles of a 2048-bin histogram per tensor (cuts rare outliers);
- kl: TensorRT's entropy calibration on the histogram of |x|: the clipping threshold whose 128-level (256 for
  tensors >= 0) quantized distribution is closest to the measured one in KL divergence;
- mse: the range whose quantization error, weighted per channel by how much the consumer layers' outputs depend
  on it, is least (wasmrt/quantize/clipping.py).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from wasmrt.compile.ir import Graph
from wasmrt.errors import InputError, WasmrtError
from wasmrt.quantize import clipping

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".webp", ".gif", ".tif", ".tiff")
METHODS = ("minmax", "percentile", "kl", "mse")
BINS = 2048
PERCENTILE = 99.99


# -- samples -----------------------------------------------------------------------------------------------------
def sample_files(folder: str | Path, limit: int | None = None) -> list[Path]:
    root = Path(folder)
    if not root.is_dir():
        raise InputError(f"{folder}: not a folder of calibration images or .npy tensors")
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in (*IMAGE_SUFFIXES, ".npy", ".npz"))
    if not files:
        raise InputError(f"{folder}: no images ({', '.join(IMAGE_SUFFIXES)}) or .npy/.npz tensors in it")
    return files[:limit] if limit else files


def load_sample(path: Path, graph: Graph) -> dict[str, np.ndarray]:
    """Feeds of the graph's inputs from one file: an image (preprocessing hints), a .npy (single input) or .npz."""
    inputs = {n: graph.tensors[n] for n in graph.inputs}
    suffix = path.suffix.lower()
    if suffix == ".npz":
        with np.load(path) as z:
            missing = set(inputs) - set(z.files)
            if missing:
                raise InputError(f"{path}: no array for input(s) {sorted(missing)}")
            feeds = {n: z[n] for n in inputs}
    elif suffix == ".npy":
        if len(inputs) != 1:
            raise InputError(f"{path}: a .npy holds one tensor, the model has inputs {sorted(inputs)}; use .npz")
        feeds = {next(iter(inputs)): np.load(path)}
    else:
        from wasmrt.preprocess import image_to_tensor, read_image

        if len(inputs) != 1:
            raise InputError(f"{path}: images calibrate single-input models; give .npz files for {sorted(inputs)}")
        name = next(iter(inputs))
        pre = graph.metadata.preprocess.get(name)
        if pre is None:
            raise InputError(f"{path}: an image, but the model has no preprocessing hints for input {name!r}; "
                             f"give .npy tensors of shape {list(inputs[name].shape)} (or convert with a preset)")
        feeds = {name: image_to_tensor(read_image(path), pre, inputs[name].shape)}
    for n, v in feeds.items():
        t = inputs[n]
        if v.shape != t.shape:
            raise InputError(f"{path}: input {n!r} has shape {list(v.shape)}, the model takes {list(t.shape)}")
        feeds[n] = np.ascontiguousarray(v, t.dtype)
    return feeds


# -- running the float graph with every activation exposed -------------------------------------------------------
def activations(graph: Graph) -> list[str]:
    """The float tensors the quantizer needs ranges for: graph inputs and every op's float output."""
    names = [n for n in graph.inputs if graph.tensors[n].dtype == np.float32]
    for node in graph.nodes:
        names += [o for o in node.outputs if graph.tensors[o].dtype == np.float32 and o not in names]
    return names


class Tracer:
    """Runs a graph and returns the value of every tensor in `names` (native C engine, else python_ref)."""

    def __init__(self, graph: Graph, names: list[str], engine: str = "auto",
                 log: Callable[[str], None] | None = None) -> None:
        self.graph, self.names = graph, names
        self.model = None
        if engine in ("auto", "native"):
            try:
                self.model = self._native(graph, names)
            except WasmrtError as e:
                if engine == "native":
                    raise
                if log:
                    log(f"the native engine cannot run this graph ({e}); tracing with python_ref (slower)")
        self.engine = "native" if self.model is not None else "ref"

    @staticmethod
    def _native(graph: Graph, names: list[str]) -> Any:
        from wasmrt.compile.planner import plan_memory
        from wasmrt.compile.writer import write_wrt
        from wasmrt.engines import load

        g = copy.copy(graph)
        g.outputs = list(dict.fromkeys([*graph.outputs, *(n for n in names if n not in graph.inputs)]))
        return load(write_wrt(g, plan_memory(g), weights="fp32"), "native")

    def __call__(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if self.model is not None:
            out = self.model.run(feeds)
            out.update(feeds)
        else:
            out = self.graph.evaluate(feeds)
        return {n: out[n] for n in self.names}


# -- statistics --------------------------------------------------------------------------------------------------
@dataclass
class Stats:
    lo: float = np.inf
    hi: float = -np.inf
    hist: np.ndarray | None = None  # BINS counts of |x| over [0, amax]
    amax: float = 0.0

    def add_range(self, v: np.ndarray) -> None:
        if v.size:
            self.lo, self.hi = min(self.lo, float(v.min())), max(self.hi, float(v.max()))

    def add_hist(self, v: np.ndarray) -> None:
        if self.hist is None:
            self.amax = max(abs(self.lo), abs(self.hi), 1e-12)
            self.hist = np.zeros(BINS, np.int64)
        a = np.abs(v.reshape(-1).astype(np.float64))
        idx = np.minimum((a * (BINS / self.amax)).astype(np.int64), BINS - 1)
        self.hist += np.bincount(idx, minlength=BINS)


def collect(trace: Tracer, samples: list[dict[str, np.ndarray]], method: str,
            progress: Callable[[str, int, int], None] | None = None) -> dict[str, tuple[float, float]]:
    """[lo, hi] of every traced tensor over the samples, by `method`."""
    if method not in METHODS:
        raise ValueError(f"unknown calibration method {method!r}; expected one of {', '.join(METHODS)}")
    stats = {n: Stats() for n in trace.names}
    errors: dict[str, clipping.ErrorHistogram] = {}
    passes = ["range"] if method == "minmax" else ["range", "histogram"]
    for p in passes:
        if p == "histogram" and method == "mse":
            readers = trace.graph.consumers()
            errors = {n: clipping.ErrorHistogram(s.lo, s.hi, clipping.importance(trace.graph, n, readers.get(n, [])))
                      for n, s in stats.items() if np.isfinite(s.lo)}
        for k, feeds in enumerate(samples):
            for n, v in trace(feeds).items():
                v = np.asarray(v)
                if n in errors:  # keeps its shape (channels): a non-finite value counts as an exact zero
                    errors[n].add(np.where(np.isfinite(v), v, 0.0))
                    continue
                if not np.isfinite(v).all():
                    v = v[np.isfinite(v)]
                if p == "range":
                    stats[n].add_range(v)
                else:
                    stats[n].add_hist(v)
            if progress:
                progress(f"calibration ({p})", k + 1, len(samples))
    # graph outputs keep their whole range: clipping a classifier's top logit changes its answer
    outputs = set(trace.graph.outputs)
    return {n: errors[n].best_range() if n in errors and n not in outputs
            else choose_range(s, "minmax" if n in outputs or method == "mse" else method) for n, s in stats.items()}


def choose_range(s: Stats, method: str) -> tuple[float, float]:
    if not np.isfinite(s.lo):
        return 0.0, 0.0
    if method == "minmax" or s.hist is None or s.hist.sum() == 0:
        return s.lo, s.hi
    width = s.amax / BINS
    if method == "percentile":
        t = (np.searchsorted(np.cumsum(s.hist), s.hist.sum() * PERCENTILE / 100.0) + 1) * width
    else:
        t = (kl_threshold(s.hist, 256 if s.lo >= 0 else 128) + 1) * width
    return max(s.lo, -t), min(s.hi, t)


def kl_threshold(hist: np.ndarray, levels: int) -> int:
    """Index of the last histogram bin kept (TensorRT's entropy calibration): the reference P is the histogram
    clipped there with the outliers folded into its last bin; the candidate Q is the clipped histogram without
    them, merged into `levels` groups and spread back evenly over each group's non-empty bins; the clip with the
    smallest KL(P || Q) wins."""
    hist = hist.astype(np.float64)
    hist[0] = 0.0  # values near 0 (the ReLU spike) quantize well at any clip; left in, they pull it to 0
    best, best_i = np.inf, len(hist) - 1
    for i in range(levels, len(hist) + 1, max(1, (len(hist) - levels) // 256)):
        p = hist[:i].copy()
        p[-1] += hist[i:].sum()
        nz = hist[:i] > 0
        q = np.zeros(i)
        for grp in np.array_split(np.arange(i), levels):
            mask = nz[grp]
            if mask.any():
                q[grp[mask]] = hist[grp].sum() / mask.sum()
        nz = p > 0
        ps, qs = p[nz] / p.sum(), q[nz] / q.sum()
        d = float(np.sum(ps * np.log(ps / np.maximum(qs, 1e-30))))
        if d < best:
            best, best_i = d, i - 1
    return best_i


def iter_samples(files: list[Path], graph: Graph) -> Iterator[dict[str, np.ndarray]]:
    for f in files:
        yield load_sample(f, graph)
