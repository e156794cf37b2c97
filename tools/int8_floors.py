"""Where EfficientNet-Lite0's int8 error comes from: the float model run with only part of the int8 model's rounding,
top-1 agreement with the float model on the 600 evaluation crops (wasmrt/zoo/photos.py) and the logits' mean squared
error. Saved as JSON.

    python tools/int8_floors.py [--out docs/dev/int8-floors.json] [--eval 600] [--ptq-cache FILE]

Variants (each runs python_ref's float ops in numpy, batches of 50, minutes each on a 2-core machine):
- `activations`: float weights; every tensor the int8 model holds as int8 is rounded to its grid (scale, zero
  point, clamped to the int8 range). What no training of the weights can go below while the scales stay.
- `weights`: the int8 model's weights and int32 biases, dequantized; float activations.
- `both`: both roundings (the int8 model but for float sums and requantization details; a check of the others).
- `activations+N`: activations on grids 2^N times finer over the same real ranges (8+N bits), float weights: how
  many bits the activations would need.
--ptq-cache: a pickle written by tools/qat_acceptance.py (the post-training graph); without it the post-training
steps run first (about a minute).
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from int8_acceptance import float_graph, samples  # noqa: E402

from python_ref import dispatch  # noqa: E402
from python_ref import quant as qm  # noqa: E402
from python_ref.quant import QuantParams  # noqa: E402
from python_ref.train.fakequant import QOp, batch_attrs  # noqa: E402
from wasmrt.compile.ir import Graph, Node  # noqa: E402
from wasmrt.quantize import calibrate, qat  # noqa: E402
from wasmrt.quantize.pipeline import post_training  # noqa: E402

WEIGHTED = ("CONV_2D", "FULLY_CONNECTED")
BATCH = 50


def log(msg: str) -> None:
    print(f"[floors] {msg}", file=sys.stderr, flush=True)


def rounded(y: np.ndarray, q: QuantParams, finer: int) -> np.ndarray:
    """y on q's grid made 2^finer times finer over the same real range (finer 0: q's own int8 grid)."""
    lo, hi = (-128 - q.z) * float(q.s), (127 - q.z) * float(q.s)
    step = float(q.s) / 2 ** finer
    return (np.round((np.clip(y, lo, hi) - lo) / step) * step + lo).astype(np.float32)


def int8_weights(qg: Graph, node: Node) -> tuple[np.ndarray, np.ndarray | None]:
    """The int8 model's weights and bias of the layer making node's output, in real values."""
    qn = next(n for n in qg.nodes if n.outputs[0] == node.outputs[0])
    wt = qg.tensors[qn.inputs[1]]
    w = qm.dequantize(wt.data, wt.quant).astype(np.float32)
    if len(qn.inputs) < 3 or not qn.inputs[2]:
        return w, None
    sw = wt.quant.scale if not wt.quant.per_tensor else np.full(w.shape[0], wt.quant.s)
    unit = qm.mul_scale(qg.tensors[qn.inputs[0]].quant.s, sw).astype(np.float64)
    return w, (qg.tensors[qn.inputs[2]].data * unit).astype(np.float32)


def run(g: Graph, qg: Graph, x: np.ndarray, acts: int | None, weights: bool) -> np.ndarray:
    """The float graph on x, activations rounded as said (None: float) and the int8 weights when `weights`."""
    grids = {n: t.quant for n, t in qg.tensors.items() if t.quant is not None and not t.is_const and n in g.tensors
             and n not in g.outputs}
    consts = {n: t.data for n, t in g.tensors.items() if t.is_const}
    swapped = {n.name: int8_weights(qg, n) for n in g.nodes if weights and n.op in WEIGHTED
               and n.inputs[1] in consts}
    # the int8 model's input: its QUANTIZE's grid
    qin = next((qg.tensors[n.outputs[0]].quant for n in qg.nodes if n.op == "QUANTIZE" and n.inputs[0] == g.inputs[0]),
               None)
    values = {g.inputs[0]: rounded(x, qin, acts) if acts is not None and qin is not None else x}
    for n in g.nodes:
        xs = [None if not i else values[i] if i in values else consts[i] for i in n.inputs]
        if n.name in swapped:
            w, b = swapped[n.name]
            xs[1] = w
            if b is not None:
                xs[2] = b
        ys = dispatch.run(n.op, xs, batch_attrs(QOp(n.op, n.inputs, n.outputs, n.attrs, ([], [])), xs[0]), None)
        for o, y in zip(n.outputs, ys, strict=True):
            values[o] = rounded(y, grids[o], acts) if acts is not None and o in grids else y
    return values[g.outputs[0]]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "dev" / "int8-floors.json")
    p.add_argument("--calib", type=int, default=200)
    p.add_argument("--eval", type=int, default=600)
    p.add_argument("--finer", type=int, nargs="*", default=[1, 2, 4], help="extra activation bits to try")
    p.add_argument("--ptq-cache", type=Path)
    a = p.parse_args(argv)
    g = float_graph("efficientnet_lite0")
    ev = samples(g, "classifier", "eval", a.eval)
    if a.ptq_cache and a.ptq_cache.exists():
        qg = pickle.loads(a.ptq_cache.read_bytes())[1]
    else:
        qg, _ = post_training(g, samples(g, "classifier", "calib", a.calib))
    inp, out = g.inputs[0], g.outputs[0]
    trace = calibrate.Tracer(g, [out])
    fp32 = np.stack([trace(s)[out] for s in ev])
    x = np.concatenate([s[inp] for s in ev])
    variants = {"activations": (0, False), "weights": (None, True), "both": (0, True),
                **{f"activations+{k}": (k, False) for k in a.finer}}
    result: dict = {"model": "efficientnet_lite0", "evaluation_images": len(ev), "variants": {}}
    for name, (acts, weights) in variants.items():
        t0 = time.perf_counter()
        got = np.concatenate([run(g, qg, x[i:i + BATCH], acts, weights) for i in range(0, len(x), BATCH)])
        got = got.reshape(fp32.shape)
        mse = float(np.mean((got.astype(np.float64) - fp32) ** 2))
        result["variants"][name] = {"top1_agreement": qat.agreement(got, fp32), "logit_mse": mse}
        log(f"{name}: {100 * qat.agreement(got, fp32):.2f}% top-1 agreement, logit MSE {mse:.5f} "
            f"({time.perf_counter() - t0:.0f} s)")
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
