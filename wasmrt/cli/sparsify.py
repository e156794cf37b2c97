"""`wasmrt sparsify`: magnitude pruning in 1x4 blocks, written as a .wrt with block-sparse weights.

    wasmrt sparsify model.wrt -o sparse.wrt --sparsity 0.9 [--block 1x4] [--skip NODE,...] [--include-first]

Every convolution (but grouped/depthwise ones and, unless --include-first, those reading a graph input) and every
fully connected layer loses its smallest 1x4 blocks (L2 norm) until it reaches --sparsity (wasmrt/compile/sparsity.py).
Pruning without fine-tuning costs accuracy: the result is for speed and size, or a start for fine-tuning in the
training framework. The per-layer report shows each layer's block sparsity before and after and its bytes.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from wasmrt.cli.inputs import shape_arg
from wasmrt.errors import InputError

WARNING = ("note: pruning without fine-tuning costs accuracy; fine-tune the pruned model in its training framework "
           "(keeping the zero blocks) and convert it again for a model to ship")


def add_parser(sub: argparse._SubParsersAction) -> None:
    from wasmrt.compile.sparsity import BLOCKS

    p = sub.add_parser("sparsify", help="prune weights in 1x4 blocks (magnitude) into a block-sparse .wrt",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("model", help="model.onnx, model.tflite or model.wrt (float)")
    p.add_argument("-o", "--output", help="output .wrt (default: <model>_sparse.wrt)")
    p.add_argument("--sparsity", type=float, required=True, help="block sparsity per pruned layer, 0 <= s < 1")
    p.add_argument("--block", choices=BLOCKS, default=BLOCKS[0], help="block shape (1 column x 4 output channels)")
    p.add_argument("--skip", default="", metavar="NODE,...", help="layers to keep dense")
    p.add_argument("--include-first", action="store_true", help="prune the layers that read a graph input too")
    p.add_argument("--weights", choices=("auto", "fp16", "fp32"), default="auto",
                   help="how float weights are stored, as in convert")
    p.add_argument("--input-shape", action="append", type=shape_arg, metavar="NAME=D0,D1,...",
                   help="static shape for an input with dynamic dimensions (repeatable)")
    p.set_defaults(fn=run)


def run(args: argparse.Namespace) -> int:
    from python_ref.wrt_file import read_wrt
    from wasmrt.compile.converter import convert
    from wasmrt.compile.sparsity import prune
    from wasmrt.quantize.pipeline import float_graph
    from wasmrt.report import layer_table
    from wasmrt.zoo.models import quantize_preset

    src = Path(args.model)
    if not src.is_file():
        raise InputError(f"{src}: no such model file")
    if not 0.0 <= args.sparsity < 1.0:
        raise InputError(f"--sparsity must be in [0, 1), got {args.sparsity}")
    out = Path(args.output or src.with_name(src.stem + "_sparse.wrt"))
    t0 = time.perf_counter()
    graph = float_graph(src, args.input_shape or [], lambda m: print("  " + m), quantize_preset(src.name))
    dense_bytes = len(convert(graph, weights=args.weights).data)  # convert optimizes in place: prune what runs
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    try:
        report = prune(graph, args.sparsity, args.block, skip, args.include_first)
    except ValueError as e:
        raise InputError(f"{src}: {e}") from None
    pruned = [(a, b) for a, b in report if b is not None]
    data = convert(graph, weights=args.weights).data
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(data)
    print(f"pruned {len(pruned)} of {len(report)} layers to {args.sparsity:.0%} block sparsity ({args.block}); "
          "kept dense: " + (", ".join(a.node for a, b in report if b is None) or "none"))
    print("layers (weights: stored dense or block-sparse in 1x4 blocks, block sparsity, bytes in the file):")
    print("\n".join(layer_table(read_wrt(data, str(out)))))
    print(f"wrote {out} ({len(data):,} bytes, {len(data) / dense_bytes:.2f}x the dense {dense_bytes:,}) in "
          f"{time.perf_counter() - t0:.1f} s")
    print(WARNING)
    return 0
