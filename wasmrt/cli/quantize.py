"""`wasmrt quantize`: post-training int8 quantization of an ONNX, TFLite or .wrt model on calibration images.

    wasmrt quantize model.onnx -o model_int8.wrt --calib images/ [--method minmax|percentile|kl|mse] [--samples 200]
        [--skip NODE,...] [--keep-float N] [--rounding fitted|nearest] [--report]

1. The model is imported and optimized as `wasmrt convert` does (bundled presets apply by file name).
2. Calibration samples: images from the folder turned into tensors by the model's preprocessing hints, or .npy
   tensors. The float model runs on the native engine with every activation exposed, and each activation's range
   is chosen (--method: by default mse, the clip with the least error in the consumer layers,
   wasmrt/quantize/clipping.py; minmax keeps every value).
3. With --keep-float N, a sensitivity pass (wasmrt/quantize/sensitivity.py) finds the few layers (at most N) whose int8
   version costs the most output error and keeps them float. Off by default: a float layer is slower, and its
   float arithmetic (so the int8 values after it) is not bit-identical across engines.
4. The graph is rewritten to int8 (wasmrt/compile/quantizer.py), then, layer by layer on up to 64 of the samples, each
   convolution's int8 weights are rounded down or up to fit the float layer's output on the int8 model's inputs
   (wasmrt/quantize/rounding.py; --rounding nearest keeps round-to-nearest) and its bias is corrected
   (wasmrt/quantize/bias_correction.py; --no-bias-correction skips it). Only stored integers change: the int8 arithmetic
   is the same, bit-exact on every engine.
5. --report runs the int8 model (python_ref) against the float one on up to --report-samples samples: SQNR per
   layer, output agreement, size; prints it and saves OUT.report.png and OUT.report.json.
"""

from __future__ import annotations

import argparse
import copy
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from wasmrt.cli.inputs import shape_arg
from wasmrt.errors import ConversionError, InputError

if TYPE_CHECKING:
    from collections.abc import Callable

    from wasmrt.bench.progress import Progress
    from wasmrt.compile.ir import Graph
    from wasmrt.compile.quantizer import Plan

BIAS_SAMPLES = 64
ROUNDINGS = ("fitted", "nearest")


def add_parser(sub: argparse._SubParsersAction) -> None:
    from wasmrt.quantize.calibrate import METHODS
    from wasmrt.quantize.sensitivity import MAX_LAYERS

    p = sub.add_parser("quantize", help="post-training int8 quantization on calibration images",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("model", help="model.onnx, model.tflite or model.wrt (float)")
    p.add_argument("-o", "--output", help="output .wrt (default: <model>_int8.wrt)")
    p.add_argument("--calib", required=True, metavar="DIR", help="folder of calibration images or .npy tensors")
    p.add_argument("--method", choices=METHODS, default="mse",
                   help="how activation ranges are chosen (default mse: the clip with the least error in the "
                        "consumer layers)")
    p.add_argument("--samples", type=int, default=200, help="calibration samples to use (default 200)")
    p.add_argument("--skip", default="", metavar="NODE,...", help="nodes (or tensors) to keep in float")
    p.add_argument("--keep-float", type=int, default=0, metavar="N",
                   help=f"keep at most N of the most sensitive layers float (default 0: none; {MAX_LAYERS} on "
                        "EfficientNet-Lite0 gives 2 points of top-1 agreement)")
    p.add_argument("--rounding", choices=ROUNDINGS, default="fitted",
                   help="int8 weights rounded to fit each layer's float output on the samples (default), or to "
                        "nearest")
    p.add_argument("--no-bias-correction", action="store_true", help="skip the empirical bias correction")
    p.add_argument("--report", action="store_true", help="measure the int8 model against the float one")
    p.add_argument("--report-samples", type=int, default=32, help="samples the report runs (default 32)")
    p.add_argument("--input-shape", action="append", type=shape_arg, metavar="NAME=D0,D1,...",
                   help="static shape for an input with dynamic dimensions (repeatable)")
    p.set_defaults(fn=run)


def run(args: argparse.Namespace) -> int:
    from wasmrt.bench.progress import Progress
    from wasmrt.compile.converter import convert
    from wasmrt.quantize import calibrate

    if args.keep_float < 0:
        raise InputError(f"--keep-float must be 0 or more, got {args.keep_float}")
    src = Path(args.model)
    out = Path(args.output or src.with_name(src.stem + "_int8.wrt"))
    bar = Progress(prefix="quantize")
    t0 = time.perf_counter()
    graph = float_graph(src, args.input_shape or [], bar.log)
    float_bytes = len(convert(copy.deepcopy(graph), weights="fp32").data)  # convert optimizes (fuses) in place
    files = calibrate.sample_files(args.calib, args.samples)
    bar.stage(f"loading {len(files)} calibration samples")
    samples = []
    for k, f in enumerate(files):
        samples.append(calibrate.load_sample(f, graph))
        bar.update(k + 1, len(files))
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    qg, plan = post_training(graph, samples, args.method, skip, not args.no_bias_correction,
                             lambda label, d, n: _step(bar, label, d, n), bar.log, args.keep_float, args.rounding)
    data = convert(qg).data
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(data)
    bar.close()
    kept = plan.kept_float
    print(f"wrote {out} ({len(data):,} bytes, {len(data) / float_bytes:.3f}x the float32 model's "
          f"{float_bytes:,}): {len(plan.quantized)} ops int8, {len(kept)} float, in {time.perf_counter() - t0:.1f} s")
    for name, why in kept.items():
        print(f"  float: {name} ({why})")
    if args.report:
        _report(args, graph, qg, plan, samples, out, float_bytes, len(data), bar)
    return 0


def post_training(graph: Graph, samples: list[dict[str, np.ndarray]], method: str = "mse",
                  skip: set[str] | None = None, bias_correction: bool = True,
                  step: Callable[[str, int, int], None] | None = None,
                  log: Callable[[str], None] | None = None, keep_float: int = 0, rounding: str = "fitted"
                  ) -> tuple[Graph, Plan]:
    """Steps 2-4 above on loaded samples: ranges, the most sensitive layers (at most keep_float of them, on up to
    sensitivity.SAMPLES samples), the int8 graph, bias correction on up to BIAS_SAMPLES of them."""
    from wasmrt.compile import quantizer
    from wasmrt.quantize import calibrate, sensitivity
    from wasmrt.quantize.bias_correction import bias_correct

    trace = calibrate.Tracer(graph, calibrate.activations(graph), log=log)
    if log:
        log(f"tracing {len(trace.names)} activations on the {trace.engine} engine ({method})")
    ranges = calibrate.collect(trace, samples, method, step)
    skip = set(skip or ())
    sensitive: dict[str, str] = {}
    if keep_float > 0:
        sens = sensitivity.measure(graph, ranges, _spread(samples, sensitivity.SAMPLES), skip, step)
        sensitive = {n: f"most sensitive layer: {100 * sens.gain(n):.0f}% of the int8 output error"
                     for n in sens.choose(keep_float)}
        if log:
            log(f"most sensitive layers, kept float: {', '.join(sensitive) or 'none'}")
    qg, plan = quantizer.quantize_graph(graph, ranges, skip | set(sensitive))
    plan.decisions.update(sensitive)
    if rounding not in ROUNDINGS:
        raise InputError(f"rounding must be one of {', '.join(ROUNDINGS)}, got {rounding!r}")
    if bias_correction or rounding == "fitted":
        bias_correct(qg, graph, _spread(samples, BIAS_SAMPLES), step, fit_rounding=rounding == "fitted",
                     correct_bias=bias_correction)
    return qg, plan


def _spread(samples: list[dict[str, np.ndarray]], n: int) -> list[dict[str, np.ndarray]]:
    """At most n of the samples, spread over the whole list."""
    return samples[:: max(1, len(samples) // n)][:n]


def _step(bar: Progress, label: str, done: int, total: int) -> None:
    if bar.label != label:
        bar.stage(label)
    bar.update(done, total)


def float_graph(src: Path, shape_args: list[tuple[str, tuple[int, ...]]], log: Callable[[str], None]) -> Graph:
    """The optimized float graph of a model file, with the bundled preset (shapes, preprocessing, labels)."""
    from wasmrt.compile.converter import load_graph, source_kind
    from wasmrt.compile.passes import optimize
    from wasmrt.zoo.models import load_labels, preset_for

    shapes = dict(shape_args)
    preset = preset_for(src.name) if source_kind(src) != "wrt" else None
    if preset is not None:
        log(f"using the bundled preset for {src.name} (input shapes, preprocessing, labels)")
        shapes = {**preset.input_shapes, **shapes}
    graph = load_graph(src, shapes or None)
    if preset is not None:
        graph.metadata.preprocess.update(preset.preprocess)
        if preset.labels:
            graph.metadata.labels = load_labels(preset.labels)
    if any(t.quant is not None for t in graph.tensors.values()):
        raise ConversionError(f"{src}: the model is already quantized; give the float model")
    optimize(graph, fuse_residuals=False)
    return graph


def _report(args: argparse.Namespace, graph: Graph, qg: Graph, plan: Plan, samples: list[dict[str, np.ndarray]],
            out: Path, float_bytes: int, int8_bytes: int, bar: Progress) -> None:
    from wasmrt.quantize import report as quant_report

    sub = _spread(samples, args.report_samples)
    report = quant_report.measure(graph, qg, plan, sub, lambda label, d, n: _step(bar, label, d, n))
    report.float_bytes, report.int8_bytes, report.kept_float = float_bytes, int8_bytes, plan.kept_float
    bar.close()
    print(report.text())
    png, js = out.with_suffix(".report.png"), out.with_suffix(".report.json")
    report.save_json(js)
    if quant_report.save_plot(png, report, f"{Path(args.model).name} -> {out.name} ({args.method})", bar.log):
        print(f"saved {png} and {js}")
    else:
        print(f"saved {js}")
