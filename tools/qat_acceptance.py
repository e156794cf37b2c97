"""The quantization-aware training figure: EfficientNet-Lite0 int8 top-1 agreement with the float model on the 600
evaluation crops (wasmrt/zoo/photos.py, photos calibration never sees), after `wasmrt quantize`'s post-training
steps (its defaults) and after `--qat` on the same calibration crops; the QAT model's bytes on python_ref, the native
engine and wasm. Saved as JSON.

    python tools/qat_acceptance.py [--out docs/dev/qat-accuracy.json] [--calib 200] [--eval 600] [--steps 300]
        [--layers 2] [--loss kl] [--int8-output] [--ptq-cache FILE]

--int8-output measures the classifier with an int8 output (then DEQUANTIZE) instead of the default float one;
--ptq-cache FILE keeps the post-training graph in FILE (pickle) and reuses it on the next run with the same options,
so QAT settings can be compared without the post-training steps.

Minutes on a 2-core machine: the post-training steps, then caching the tail's inputs, then the training steps.
"""

from __future__ import annotations

import argparse
import copy
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

from python_ref import Interpreter  # noqa: E402
from python_ref import quant as qm  # noqa: E402
from wasmrt.compile.converter import convert  # noqa: E402
from wasmrt.compile.ir import Graph  # noqa: E402
from wasmrt.engines import load  # noqa: E402
from wasmrt.quantize import calibrate, qat  # noqa: E402
from wasmrt.quantize.pipeline import post_training  # noqa: E402
from wasmrt.zoo import photos  # noqa: E402


def log(msg: str) -> None:
    print(f"[qat] {msg}", file=sys.stderr, flush=True)


def grid_ceiling(qg: Graph, fp32: np.ndarray) -> float | None:
    """Top-1 agreement of the float outputs themselves rounded to the int8 output tensor's grid: what an int8 model
    without any other error would reach (near ties fall on one step; np.argmax takes the first of equal values).
    None for a float output (FULLY_CONNECTED's float_output): no int8 grid."""
    (last,) = [n for n in qg.nodes if qg.outputs[0] in n.outputs]
    q = qg.tensors[last.inputs[0]].quant if last.op == "DEQUANTIZE" else qg.tensors[qg.outputs[0]].quant
    if q is None:
        return None
    grid = qm.quantize(fp32.astype(np.float32), q, np.int8)
    return qat.agreement(grid, fp32)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "dev" / "qat-accuracy.json")
    p.add_argument("--calib", type=int, default=200)
    p.add_argument("--eval", type=int, default=600)
    p.add_argument("--steps", type=int, default=qat.STEPS)
    p.add_argument("--layers", type=int, default=qat.LAYERS)
    p.add_argument("--loss", choices=qat.LOSSES, default="kl")
    p.add_argument("--lr", type=float, default=qat.LR)
    p.add_argument("--int8-output", action="store_true", help="the classifier writes int8 (then DEQUANTIZE)")
    p.add_argument("--ptq-cache", type=Path, help="pickle of the post-training graph: read if present, else written")
    a = p.parse_args(argv)
    g = float_graph("efficientnet_lite0")
    cal_dir, ev_dir = photos.folder("classifier", "calib", a.calib), photos.folder("classifier", "eval", a.eval)
    cal_photos = set(photos.manifest(cal_dir)["photos"])
    ev_photos = set(photos.manifest(ev_dir)["photos"])
    assert not cal_photos & ev_photos, "evaluation photos in the calibration set"
    calib, ev = samples(g, "classifier", "calib", a.calib), samples(g, "classifier", "eval", a.eval)
    o = g.outputs[0]
    trace = calibrate.Tracer(g, g.outputs)
    fp32 = np.stack([trace(s)[o] for s in ev])

    def agreement(qg: Graph) -> tuple[float, bytes, np.ndarray]:
        data = convert(copy.deepcopy(qg)).data
        m = load(data, "native")
        got = np.stack([m.run(s)[o] for s in ev])
        return qat.agreement(got, fp32), data, got

    def mse(got: np.ndarray) -> float:
        return float(np.mean((got.astype(np.float64) - fp32) ** 2))

    t0 = time.perf_counter()
    key = (a.calib, a.int8_output)
    if a.ptq_cache and a.ptq_cache.exists() and (cached := pickle.loads(a.ptq_cache.read_bytes()))[0] == key:
        qg, t_ptq = cached[1], cached[2]
        log(f"post-training graph from {a.ptq_cache} (made in {t_ptq:.0f} s)")
    else:
        qg, _ = post_training(g, calib, float_output=not a.int8_output)
        t_ptq = time.perf_counter() - t0
        if a.ptq_cache:
            a.ptq_cache.write_bytes(pickle.dumps((key, qg, t_ptq)))
    before, _, ptq_out = agreement(qg)
    ceiling = grid_ceiling(qg, fp32)
    if ceiling is not None:
        log(f"the float outputs rounded to the int8 output's grid agree on {100 * ceiling:.2f}%")
    log(f"post-training: {100 * before:.2f}% top-1 agreement on {len(ev)} evaluation crops ({t_ptq:.0f} s)")
    t0 = time.perf_counter()
    opts = qat.Options(a.steps, layers=a.layers, loss=a.loss, lr=a.lr)
    r = qat.distill(qg, g, calib, opts, log=log)
    t_qat = time.perf_counter() - t0
    after, data, native = agreement(qg)
    log(f"qat: {100 * after:.2f}% ({t_qat:.0f} s)")
    it = Interpreter(data)
    sub = list(range(0, len(ev), 20))
    ref_equal = all(np.array_equal(it.run(ev[k])[o], native[k]) for k in sub)
    wasm = {}
    for variant in ("scalar", "simd", "relaxed"):
        m = load(data, "wasm", variant)
        wasm[variant] = all(np.array_equal(m.run(ev[k])[o], native[k]) for k in sub)
    result = {
        "model": "efficientnet_lite0", "calibration_images": len(calib), "calibration_photos": sorted(cal_photos),
        "evaluation_images": len(ev), "evaluation_photos": sorted(ev_photos),
        "top1_agreement_post_training": before, "top1_agreement_qat": after,
        "logit_mse_post_training": mse(ptq_out), "logit_mse_qat": mse(native),
        "classifier_output": "int8" if ceiling is not None else "float32 (its int32 sums dequantized)",
        "top1_agreement_of_float_outputs_on_the_int8_grid": ceiling,
        "qat": {"steps": opts.steps, "layers": r.layers, "loss": opts.loss, "lr": opts.lr, "batch": opts.batch,
                "seed": opts.seed, "train_agreement_before": r.agreement_before,
                "train_agreement_after": r.agreement_after, "loss_first": r.loss[:5], "loss_last": r.loss[-5:]},
        "seconds_post_training": round(t_ptq, 1), "seconds_qat": round(t_qat, 1),
        "images_compared_across_engines": len(sub), "python_ref_equals_native": ref_equal,
        "wasm_equals_native": wasm, "int8_wrt_bytes": len(data),
    }
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if "photos" not in k}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
