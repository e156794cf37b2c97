"""The int8 accuracy figures of issue 13, on real weights and real photos (wasmrt/zoo/photos.py), saved as JSON.

    python tools/int8_acceptance.py [--out build/int8_acceptance.json] [--eval 600] [--calib 200]

1. EfficientNet-Lite0 quantized as `wasmrt quantize` does (its defaults: mse ranges, fitted rounding, bias
   correction) on calibration photos, top-1 agreement with the float model on disjoint evaluation photos;
   onnxruntime's quantize_static (QDQ, per-channel, MinMax) on the same calibration and evaluation images. Sizes
   of the float32 and int8 .wrt.
2. face_landmark quantized on faces from calibration photos: mean distance of the 468 landmarks (x, y in pixels of
   the 192x192 crop) to the float model's, on faces from the evaluation photos.
3. Imported int8 models against the producing framework's own int8 run: onnxruntime's QDQ EfficientNet-Lite0, and a
   full-integer TFLite made by AI Edge Quantizer (wasmrt/bench/aeq_int8.py, in the peers' aeq-venv) from the
   same network exported to TFLite: differences in output steps and top-1 agreement.
Our int8 EfficientNet-Lite0 runs natively, checked against python_ref (the definition) on every 10th image; the
imported int8 models run on python_ref, the float ones natively.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ort_int8 import u8s8_saturates  # noqa: E402

from python_ref import Interpreter  # noqa: E402
from python_ref import quant as qm  # noqa: E402
from wasmrt.compile.converter import convert, load_graph  # noqa: E402
from wasmrt.compile.ir import Graph  # noqa: E402
from wasmrt.compile.passes import optimize  # noqa: E402
from wasmrt.engines import load  # noqa: E402
from wasmrt.quantize import calibrate  # noqa: E402
from wasmrt.quantize.pipeline import post_training  # noqa: E402
from wasmrt.zoo import photos  # noqa: E402
from wasmrt.zoo.models import BUNDLED, CACHE, model_path  # noqa: E402

WORK = CACHE / "int8"


def log(msg: str) -> None:
    print(f"[int8] {msg}", file=sys.stderr, flush=True)


def float_graph(name: str) -> Graph:
    m = BUNDLED[name]
    g = load_graph(model_path(name), m.input_shapes)
    g.metadata.preprocess.update(m.preprocess)
    optimize(g, fuse_residuals=False)
    return g


def samples(g: Graph, kind: str, split: str, n: int) -> list[dict[str, np.ndarray]]:
    return [calibrate.load_sample(f, g) for f in calibrate.sample_files(photos.folder(kind, split, n))]


def quantize(g: Graph, calib: list[dict[str, np.ndarray]]) -> bytes:
    """What `wasmrt quantize` does (its defaults)."""
    qg, _ = post_training(g, calib)
    return convert(qg).data


@functools.cache
def classifier_int8(n_calib: int) -> bytes:
    """EfficientNet-Lite0 quantized on the first n_calib calibration photos, once per process (it takes minutes;
    the accuracy tests share it)."""
    g = float_graph("efficientnet_lite0")
    t0 = time.perf_counter()
    data = quantize(g, samples(g, "classifier", "calib", n_calib))
    log(f"EfficientNet-Lite0 quantized in {time.perf_counter() - t0:.0f} s")
    return data


def agreement(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.mean(np.argmax(a.reshape(len(a), -1), 1) == np.argmax(b.reshape(len(b), -1), 1)))


def classifier(n_calib: int, n_eval: int) -> dict:
    g = float_graph("efficientnet_lite0")
    calib, ev = samples(g, "classifier", "calib", n_calib), samples(g, "classifier", "eval", n_eval)
    m_cal, m_ev = photos.manifest(photos.folder("classifier", "calib", n_calib)), photos.manifest(
        photos.folder("classifier", "eval", n_eval))
    o = g.outputs[0]
    native = calibrate.Tracer(g, g.outputs)
    fp32 = np.stack([native(s)[o] for s in ev])
    data = classifier_int8(n_calib)
    WORK.mkdir(parents=True, exist_ok=True)
    (WORK / "efficientnet_lite0_int8.wrt").write_bytes(data)
    fp32_bytes = len(convert(g, weights="fp32").data)
    m = load(data, "native")
    ours = np.stack([m.run(s)[o] for s in ev])
    it = Interpreter(data)  # the definition, on every 10th image: the native run must be its bytes
    ref_equal = all(np.array_equal(it.run(ev[k])[o], ours[k]) for k in range(0, len(ev), 10))
    ort_result = _onnxruntime(calib, ev)
    return {
        "calibration_images": len(calib), "calibration_photos": len(m_cal["photos"]),
        "evaluation_images": len(ev), "evaluation_photos": len(m_ev["photos"]),
        "top1_agreement_ours": agreement(ours, fp32), "native_equals_python_ref": ref_equal,
        "top1_agreement_onnxruntime": ort_result.pop("agreement"),
        "fp32_wrt_bytes": fp32_bytes, "int8_wrt_bytes": len(data), "size_ratio": len(data) / fp32_bytes,
        "onnxruntime_qdq_import": ort_result, "litert_int8_import": _litert(g, ev[::6]),
    }


def _onnxruntime(calib: list[dict[str, np.ndarray]], ev: list[dict[str, np.ndarray]]) -> dict:
    import onnxruntime as ort

    from wasmrt.bench.int8 import qdq_int8

    src = model_path("efficientnet_lite0")
    qdq = qdq_int8(src, calib, WORK / "efficientnet_lite0_qdq.onnx", log)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    f, q = ort.InferenceSession(str(src), so), ort.InferenceSession(str(qdq), so)
    fp32 = np.stack([f.run(None, s)[0] for s in ev])
    int8 = np.stack([q.run(None, s)[0] for s in ev])
    # the same QDQ model imported by wasmrt, on python_ref, against onnxruntime's int8 run
    m = BUNDLED["efficientnet_lite0"]
    it = Interpreter(convert(qdq, input_shapes=m.input_shapes).data)
    step = _output_step(it)
    sub = list(range(0, len(ev), 6))
    ours = np.stack([next(iter(it.run(ev[k]).values())) for k in sub])
    steps = np.abs(ours - int8[sub]) / step
    return {"agreement": agreement(int8, fp32), "images": len(sub), "max_steps": float(np.rint(steps.max())),
            "share_differing": float(np.mean(steps > 0.5)), "top1_agreement": agreement(ours, int8[sub]),
            "onnxruntime_saturates": u8s8_saturates()}


def _output_step(it: Interpreter) -> float:
    m = it.model
    out = m.outputs[0]
    (op,) = [o for o in m.ops if out in o.outputs]
    return float(m.tensors[op.inputs[0]].quant.s)


def _litert(g: Graph, ev: list[dict[str, np.ndarray]]) -> dict:
    from ai_edge_litert.interpreter import Interpreter as LiteRT

    from wasmrt.bench.peers import aeq_int8
    from wasmrt.errors import WasmrtError
    from wasmrt.export.tflite import export_tflite

    f32, int8, npy = WORK / "efficientnet_lite0.tflite", WORK / "efficientnet_lite0_aeq_int8.tflite", WORK / "npy"
    export_tflite(g, f32)
    npy.mkdir(exist_ok=True)
    calib = samples(g, "classifier", "calib", 200)[::2]
    for k, s in enumerate(calib):
        np.save(npy / f"{k:04d}.npy", s["input"])
    try:
        aeq_int8(f32, npy, int8, log)
    except WasmrtError as e:
        return {"skipped": str(e)}
    it = Interpreter(convert(int8).data)
    inp = it.model.tensors[it.model.inputs[0]]
    lr = LiteRT(model_path=str(int8), num_threads=1)
    lr.allocate_tensors()
    diffs, ours, theirs = [], [], []
    for s in ev:
        x = qm.quantize(s["input"], inp.quant, np.int8)
        a = next(iter(it.run({it.inputs[0].name: x}).values()))
        lr.set_tensor(lr.get_input_details()[0]["index"], x)
        lr.invoke()
        b = lr.get_tensor(lr.get_output_details()[0]["index"])
        diffs.append(np.abs(a.astype(np.int64) - b.astype(np.int64)))
        ours.append(a)
        theirs.append(b)
    d = np.stack(diffs)
    return {"images": len(ev), "max_steps": int(d.max()), "share_differing": float(np.mean(d > 0)),
            "top1_agreement": agreement(np.stack(ours), np.stack(theirs)), "tool": "ai-edge-quantizer static_wi8_ai8"}


def face_landmark(n_calib: int, n_eval: int) -> dict:
    g = float_graph("face_landmark")
    calib, ev = samples(g, "faces", "calib", n_calib), samples(g, "faces", "eval", n_eval)
    data = quantize(g, calib)
    WORK.mkdir(parents=True, exist_ok=True)
    (WORK / "face_landmark_int8.wrt").write_bytes(data)
    native = calibrate.Tracer(g, g.outputs)
    it = Interpreter(data)
    out = "conv2d_21"
    dist = []
    for s in ev:
        a = native(s)[out].reshape(468, 3)[:, :2]
        b = it.run(s)[out].reshape(468, 3)[:, :2]
        dist.append(np.linalg.norm(a - b, axis=1).mean())
    m = photos.manifest(photos.folder("faces", "eval", n_eval))
    return {"evaluation_faces": len(ev), "evaluation_photos": len(m["photos"]), "calibration_faces": len(calib),
            "mean_landmark_distance_px": float(np.mean(dist)), "worst_face_mean_px": float(np.max(dist)),
            "int8_wrt_bytes": len(data), "fp32_wrt_bytes": len(convert(g, weights="fp32").data)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "build" / "int8_acceptance.json"))
    ap.add_argument("--calib", type=int, default=200)
    ap.add_argument("--eval", type=int, default=600)
    args = ap.parse_args(argv)
    WORK.mkdir(parents=True, exist_ok=True)
    result = {"face_landmark": face_landmark(100, 200), "efficientnet_lite0": classifier(args.calib, args.eval)}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
