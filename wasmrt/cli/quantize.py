"""`wasmrt quantize`: post-training int8 quantization of an ONNX, TFLite or .wrt model on calibration images.

    wasmrt quantize model.onnx -o model_int8.wrt --calib images/ [--method minmax|percentile|kl|mse] [--samples 200]
        [--skip NODE,...] [--keep-float N] [--rounding fitted|nearest] [--int8-output] [--sparsity S] [--report]
        [--qat [--steps N] [--qat-layers N] [--qat-loss kl|mse]]

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
   is the same, bit-exact on every engine. A classifier (a FULLY_CONNECTED making a graph output) writes float32:
   its int32 sums dequantized, finer than an int8 output's 256 steps, still bit-exact (--int8-output: int8 then
   DEQUANTIZE, as before).
5. With --qat, the last int8 layers (--qat-layers, default 2) are fine-tuned by distillation from the float model on
   the calibration samples (wasmrt/quantize/qat.py): fake-quantized forward, straight-through gradients, --steps Adam
   steps; only the stored int8 weights and int32 biases change.
6. --report runs the int8 model (python_ref) against the float one on up to --report-samples samples: SQNR per
   layer, output agreement, size; prints it and saves OUT.report.png and OUT.report.json.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from wasmrt.cli.inputs import shape_arg

if TYPE_CHECKING:

    from wasmrt.compile.ir import Graph
    from wasmrt.compile.quantizer import Plan
    from wasmrt.progress import Progress
    from wasmrt.quantize.qat import Options as QatOptions



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
    p.add_argument("--rounding", choices=("fitted", "nearest"), default="fitted",
                   help="int8 weights rounded to fit each layer's float output on the samples (default), or to "
                        "nearest")
    p.add_argument("--sparsity", type=float, metavar="S",
                   help="prune the float model to block sparsity S (1x4 blocks, as `wasmrt sparsify`) first: an int8 "
                        "model with block-sparse weights")
    p.add_argument("--no-bias-correction", action="store_true", help="skip the empirical bias correction")
    p.add_argument("--int8-output", action="store_true",
                   help="a classifier (a fully-connected layer making a graph output) writes int8, then dequantizes "
                        "it; by default it writes its int32 sums dequantized to float32 (finer logits, bit-exact)")
    p.add_argument("--qat", action="store_true",
                   help="then fine-tune the last int8 layers by distillation from the float model on the calibration "
                        "samples (quantization-aware training; the same bit-exact int8 format)")
    p.add_argument("--steps", type=int, metavar="N", help="--qat: training steps (default 300)")
    p.add_argument("--qat-layers", type=int, metavar="N", help="--qat: layers trained, from the output (default 2)")
    p.add_argument("--qat-loss", choices=("kl", "mse"), help="--qat: distillation loss on the outputs (default kl)")
    p.add_argument("--report", action="store_true", help="measure the int8 model against the float one")
    p.add_argument("--report-samples", type=int, default=32, help="samples the report runs (default 32)")
    p.add_argument("--input-shape", action="append", type=shape_arg, metavar="NAME=D0,D1,...",
                   help="static shape for an input with dynamic dimensions (repeatable)")
    p.set_defaults(fn=run)


def run(args: argparse.Namespace) -> int:
    from wasmrt.progress import Progress
    from wasmrt.quantize.pipeline import quantize_file
    from wasmrt.zoo.models import quantize_preset

    src = Path(args.model)
    out = Path(args.output or src.with_name(src.stem + "_int8.wrt"))
    qat_options = _qat_options(args)
    bar = Progress(prefix="quantize")
    t0 = time.perf_counter()
    q = quantize_file(src, args.calib, samples=args.samples, method=args.method, skip=skip_arg(args.skip),
                      bias_correction=not args.no_bias_correction, keep_float=args.keep_float,
                      rounding=args.rounding, input_shapes=args.input_shape, preset=quantize_preset(src.name),
                      step=lambda label, d, n: _step(bar, label, d, n), log=bar.log, sparsity=args.sparsity,
                      qat_options=qat_options, float_output=not args.int8_output)
    data, float_bytes, plan = q.data, q.float_bytes, q.plan
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(data)
    bar.close()
    kept = plan.kept_float
    print(f"wrote {out} ({len(data):,} bytes, {len(data) / float_bytes:.3f}x the float32 model's "
          f"{float_bytes:,}): {len(plan.quantized)} ops int8, {len(kept)} float, in {time.perf_counter() - t0:.1f} s")
    for name, why in kept.items():
        print(f"  float: {name} ({why})")
    if args.report:
        _report(args, q.graph, q.int8_graph, plan, q.samples, out, float_bytes, len(data), bar)
    return 0


def _qat_options(args: argparse.Namespace) -> QatOptions | None:
    from wasmrt.errors import InputError
    from wasmrt.quantize.qat import Options

    given = {k: v for k, v in (("steps", args.steps), ("layers", args.qat_layers), ("loss", args.qat_loss))
             if v is not None}
    if not args.qat:
        if given:
            raise InputError(f"--{'qat-' if 'steps' not in given else ''}{next(iter(given))} needs --qat")
        return None
    o = Options(**given)
    o.check()
    return o


def skip_arg(text: str) -> set[str]:
    return {s.strip() for s in text.split(",") if s.strip()}


def _step(bar: Progress, label: str, done: int, total: int) -> None:
    if bar.label != label:
        bar.stage(label)
    bar.update(done, total)


def _report(args: argparse.Namespace, graph: Graph, qg: Graph, plan: Plan, samples: list[dict[str, np.ndarray]],
            out: Path, float_bytes: int, int8_bytes: int, bar: Progress) -> None:
    from wasmrt.quantize import report as quant_report
    from wasmrt.quantize.pipeline import spread

    sub = spread(samples, args.report_samples)
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
