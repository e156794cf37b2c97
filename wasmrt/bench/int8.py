"""`wasmrt bench --int8`: each model also in int8, as rows named "<model> int8" next to its float rows.

- ours: `wasmrt quantize`'s steps (its defaults; wasmrt.quantize.pipeline.post_training) on
  calibration samples: photos from registry packages (wasmrt.zoo.photos, classifier crops) through the model's
  preprocessing hints, or seeded random inputs for a model without hints;
- LiteRT and LiteRT.js: the float .tflite the float rows run, made full-integer by Google's AI Edge Quantizer
  (static_wi8_ai8: per-channel int8 weights, int8 activations, float input and output; peers.aeq_int8);
- onnxruntime and onnxruntime-web: the float .onnx the float rows run, quantized by onnxruntime's quantize_static
  (QDQ, per-channel int8 weights, uint8 activations: its fast path natively, as peers.md says), same samples.
TF.js has no int8 kernels and is left out. Float and int8 engines run interleaved in one run per host, on the
float rows' input.
Cross-check: our engines equal python_ref's run of our int8 model bit for bit; the peers run int8 models their own
tools calibrated, so theirs are only checked within PEER_TOLERANCE of it (a wrong layout or a broken model is far
outside).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from wasmrt.bench.prepare import Prepared, _macs, _write_inputs

CALIB_SAMPLES = 100
PEER_TOLERANCE = 0.25  # max |peer - ours| / max |ours| for the peers' own int8 models
SUFFIX = " int8"


def _samples(graph, n: int, split: str, seed: int) -> list[dict[str, np.ndarray]]:
    """Photos through the model's preprocessing hints, or seeded random inputs."""
    from wasmrt.export.common import random_feeds
    from wasmrt.quantize import calibrate
    from wasmrt.zoo import photos

    if len(graph.inputs) == 1 and graph.inputs[0] in graph.metadata.preprocess:
        folder = photos.folder("classifier", split, n)
        return [calibrate.load_sample(f, graph) for f in calibrate.sample_files(folder, n)]
    return [random_feeds(graph, seed + k) for k in range(n)]


def prepare_int8(prep: Prepared, peers: bool, log, n_calib: int = CALIB_SAMPLES) -> Prepared:
    """The int8 counterpart of a prepared float model (prepare.prepare), in <its folder>/int8."""
    from python_ref import Interpreter
    from wasmrt.compile.converter import convert
    from wasmrt.quantize.pipeline import float_graph, post_training
    from wasmrt.zoo.models import quantize_preset

    if prep.source is None:
        raise ValueError(f"{prep.name}: --int8 needs the float model's source file, not a .wrt")
    out = prep.dir / "int8"
    out.mkdir(exist_ok=True)
    shapes = [(i["name"], tuple(i["shape"])) for i in prep.inputs]
    graph = float_graph(prep.source, shapes, log, quantize_preset(prep.source.name))
    calib = _samples(graph, n_calib, "calib", 1000)
    log(f"{prep.name}: quantizing on {len(calib)} calibration samples (wasmrt quantize's defaults)")
    qg, _ = post_training(graph, calib)
    wrt = out / "model.wrt"
    wrt.write_bytes(convert(qg).data)
    feeds = prep.feeds  # the float rows' input: both run in one interleaved job
    ref = Interpreter(str(wrt)).run(feeds)
    q = Prepared(prep.name + SUFFIX, out, wrt, _write_inputs(out, feeds), list(ref), feeds, ref,
                 _macs(wrt.read_bytes()), source=prep.source, peer_tolerance=PEER_TOLERANCE, ours_tolerance=0.0)
    if peers:
        _peer_files(q, prep, calib, log)
    return q


def _peer_files(q: Prepared, prep: Prepared, calib: list[dict[str, np.ndarray]], log) -> None:
    from wasmrt.bench.peers import aeq_int8
    from wasmrt.errors import WasmrtError

    if "onnx" in prep.peer_files:
        try:
            q.peer_files["onnx"] = qdq_int8(prep.peer_files["onnx"], calib, q.dir / "qdq.onnx", log)
            q.peer_sources["onnx"] = ("onnxruntime quantize_static (QDQ, per-channel s8 weights, u8 activations, "
                                      f"MinMax) of {Path(prep.peer_files['onnx']).name}")
        except Exception as e:  # the bench goes on without this peer, and says why
            q.notes.append(f"onnxruntime's quantize_static failed, its int8 peers are left out: {e}")
    if "tflite" in prep.peer_files and len(q.inputs) == 1:
        npy = q.dir / "calib_npy"
        npy.mkdir(exist_ok=True)
        for k, s in enumerate(calib):
            np.save(npy / f"{k:04d}.npy", next(iter(s.values())))
        try:
            q.peer_files["tflite"] = aeq_int8(Path(prep.peer_files["tflite"]), npy, q.dir / "aeq_int8.tflite", log,
                                              len(calib), float_io=True)
            q.peer_sources["tflite"] = (f"AI Edge Quantizer static_wi8_ai8 of {Path(prep.peer_files['tflite']).name}")
        except WasmrtError as e:
            q.notes.append(f"the int8 TFLite for LiteRT could not be made, its int8 peers are left out: {e}")


def qdq_int8(src: Path, calib: list[dict[str, np.ndarray]], out: Path, log) -> Path:
    """onnxruntime's own post-training quantization of a float .onnx: QDQ, per-channel, MinMax."""
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )
    from onnxruntime.quantization.shape_inference import quant_pre_process

    log(f"{Path(src).name}: onnxruntime quantize_static (QDQ) on {len(calib)} calibration samples")
    pre = out.with_name(out.stem + "_pre.onnx")
    quant_pre_process(str(src), str(pre), skip_symbolic_shape=True)

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.it = iter(calib)

        def get_next(self) -> dict | None:
            return next(self.it, None)

    quantize_static(str(pre), str(out), Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                    calibrate_method=CalibrationMethod.MinMax)
    pre.unlink()
    return out


def speedups(rows: list[dict]) -> str:
    """float median / int8 median per host and engine, where a model has both rows (CPU clock where measured)."""
    lines = []
    for q in rows:
        if not q["model"].endswith(SUFFIX) or "median_ms" not in q:
            continue
        f = next((r for r in rows if r["model"] == q["model"][: -len(SUFFIX)] and r["host"] == q["host"]
                  and r["engine"] == q["engine"] and "median_ms" in r), None)
        if f is None:
            continue
        key = "pass_cpu_median_ms" if "pass_cpu_median_ms" in q and "pass_cpu_median_ms" in f else "pass_median_ms"
        per = [a / b for a, b in zip(f[key], q[key], strict=False) if b > 0]
        spread = f" (passes {min(per):.2f}-{max(per):.2f}x)" if len(per) > 1 else ""
        lines.append(f"  {q['model'][: -len(SUFFIX)]:20s} {q['host']:9s} {q['engine']:24s} "
                     f"{f['median_ms']:8.2f} -> {q['median_ms']:8.2f} ms  {f['median_ms'] / q['median_ms']:.2f}x"
                     f"{spread}")
    return "int8 speed-up over the same engine's float32 (median; per pass on the CPU clock where measured):\n" + \
        "\n".join(lines) if lines else ""
