"""The post-training int8 pipeline that `wasmrt quantize` runs (wasmrt/cli/quantize.py says what each step does):
the float graph, activation ranges from calibration samples, the most sensitive layers kept float on request, the
int8 rewrite (wasmrt/compile/quantizer.py), fitted rounding and bias correction."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from wasmrt.compile import quantizer
from wasmrt.compile.converter import convert, load_graph, source_kind
from wasmrt.compile.ir import Graph, Preprocess
from wasmrt.compile.passes import optimize
from wasmrt.compile.quantizer import Plan
from wasmrt.compile.sparsity import prune
from wasmrt.errors import ConversionError, InputError
from wasmrt.quantize import calibrate, qat, sensitivity
from wasmrt.quantize.bias_correction import bias_correct

BIAS_SAMPLES = 64
ROUNDINGS = ("fitted", "nearest")


@dataclass
class Preset:
    """What a model file lacks and the user (or a bundled model's entry) supplies."""

    input_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    preprocess: dict[str, Preprocess] = field(default_factory=dict)
    labels: list[str] | None = None


def post_training(graph: Graph, samples: list[dict[str, np.ndarray]], method: str = "mse",
                  skip: set[str] | None = None, bias_correction: bool = True,
                  step: Callable[[str, int, int], None] | None = None,
                  log: Callable[[str], None] | None = None, keep_float: int = 0, rounding: str = "fitted",
                  float_output: bool = True) -> tuple[Graph, Plan]:
    """Steps 2-4 above on loaded samples: ranges, the most sensitive layers (at most keep_float of them, on up to
    sensitivity.SAMPLES samples), the int8 graph, bias correction on up to BIAS_SAMPLES of them. float_output: a
    classifier writes its dequantized int32 sums (quantizer.quantize_graph)."""
    trace = calibrate.Tracer(graph, calibrate.activations(graph), log=log)
    if log:
        log(f"tracing {len(trace.names)} activations on the {trace.engine} engine ({method})")
    ranges = calibrate.collect(trace, samples, method, step)
    skip = set(skip or ())
    sensitive: dict[str, str] = {}
    if keep_float > 0:
        sens = sensitivity.measure(graph, ranges, spread(samples, sensitivity.SAMPLES), skip, step)
        sensitive = {n: f"most sensitive layer: {100 * sens.gain(n):.0f}% of the int8 output error"
                     for n in sens.choose(keep_float)}
        if log:
            log(f"most sensitive layers, kept float: {', '.join(sensitive) or 'none'}")
    qg, plan = quantizer.quantize_graph(graph, ranges, skip | set(sensitive), float_output=float_output)
    plan.decisions.update(sensitive)
    if rounding not in ROUNDINGS:
        raise InputError(f"rounding must be one of {', '.join(ROUNDINGS)}, got {rounding!r}")
    if bias_correction or rounding == "fitted":
        bias_correct(qg, graph, spread(samples, BIAS_SAMPLES), step, fit_rounding=rounding == "fitted",
                     correct_bias=bias_correction)
    return qg, plan


@dataclass
class Quantized:
    """What quantize_file made: the float and int8 graphs, the plan, the samples it loaded, the .wrt bytes."""

    graph: Graph
    int8_graph: Graph
    plan: Plan
    samples: list[dict[str, np.ndarray]]
    data: bytes
    float_bytes: int


def quantize_file(src: Path, calib: Path | str, *, samples: int = 200, method: str = "mse",
                  skip: set[str] | None = None, bias_correction: bool = True, keep_float: int = 0,
                  rounding: str = "fitted", input_shapes: list[tuple[str, tuple[int, ...]]] | None = None,
                  preset: Preset | None = None, step: Callable[[str, int, int], None] | None = None,
                  log: Callable[[str], None] = lambda _: None, sparsity: float | None = None,
                  qat_options: qat.Options | None = None, float_output: bool = True) -> Quantized:
    """A model file and a folder of calibration images or .npy tensors -> the int8 .wrt (steps 1-4). sparsity: first
    prune the float model in 1x4 blocks as `wasmrt sparsify` does (its defaults); the zero blocks stay zero through
    quantization (rounding.fit) and the int8 weights are stored block-sparse. qat_options: then fine-tune the last
    layers by distillation from the float model on the same samples (wasmrt/quantize/qat.py)."""
    if keep_float < 0:
        raise InputError(f"--keep-float must be 0 or more, got {keep_float}")
    if qat_options is not None:
        qat_options.check()
        if sparsity is not None:
            raise InputError("--qat with --sparsity: training would fill the pruned blocks; quantize without --qat")
    if sparsity is not None and not 0.0 <= sparsity < 1.0:
        raise InputError(f"--sparsity must be in [0, 1), got {sparsity}")
    graph = float_graph(src, input_shapes or [], log, preset)
    float_bytes = len(convert(copy.deepcopy(graph), weights="fp32").data)  # convert optimizes (fuses) in place
    if sparsity is not None:
        pruned = [a.node for a, b in prune(graph, sparsity) if b is not None]
        log(f"pruned {len(pruned)} layers to {sparsity:.0%} block sparsity (1x4)")
    files = calibrate.sample_files(calib, samples)
    loaded = []
    for k, f in enumerate(files):
        loaded.append(calibrate.load_sample(f, graph))
        if step:
            step(f"loading {len(files)} calibration samples", k + 1, len(files))
    qg, plan = post_training(graph, loaded, method, skip, bias_correction, step, log, keep_float, rounding,
                             float_output)
    if qat_options is not None:
        qat.distill(qg, graph, loaded, qat_options, step=step, log=log)
    return Quantized(graph, qg, plan, loaded, convert(qg).data, float_bytes)


def spread(samples: list[dict[str, np.ndarray]], n: int) -> list[dict[str, np.ndarray]]:
    """At most n of the samples, spread over the whole list."""
    return samples[:: max(1, len(samples) // n)][:n]


def float_graph(src: Path, shape_args: list[tuple[str, tuple[int, ...]]], log: Callable[[str], None],
                preset: Preset | None = None) -> Graph:
    """The optimized float graph of a model file, with a preset's input shapes, preprocessing and labels (the
    bundled models' presets: wasmrt.zoo.models.preset_for)."""
    shapes = dict(shape_args)
    if preset is not None and source_kind(src) != "wrt":
        log(f"using the preset for {src.name} (input shapes, preprocessing, labels)")
        shapes = {**preset.input_shapes, **shapes}
    else:
        preset = None
    graph = load_graph(src, shapes or None)
    if preset is not None:
        graph.metadata.preprocess.update(preset.preprocess)
        if preset.labels:
            graph.metadata.labels = preset.labels
    if any(t.quant is not None for t in graph.tensors.values()):
        raise ConversionError(f"{src}: the model is already quantized; give the float model")
    optimize(graph, fuse_residuals=False)
    return graph
