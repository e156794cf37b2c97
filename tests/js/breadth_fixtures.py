"""Fixtures of the JavaScript breadth tests (Node: tests/js/breadth.test.mjs; Chromium: tests/test_breadth_browser.py):
models with run-time sizes, streamed recurrent models and transformer encoders, their inputs and their frameworks'
outputs (onnxruntime, LiteRT) as raw little-endian files, listed in breadth.json."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
OCR_WIDTHS = (160, 320, 640)


def _write(out: Path, name: str, a: np.ndarray) -> dict:
    a = np.ascontiguousarray(a)
    (out / name).write_bytes(a.astype(a.dtype.newbyteorder("<")).tobytes())
    return {"file": name, "shape": list(a.shape), "dtype": str(a.dtype)}


def write(out: Path) -> dict:
    sys.path.insert(0, str(ROOT / "tests"))
    import onnxruntime as ort
    import torch_models as tm
    from ai_edge_litert.interpreter import Interpreter as Lite
    from test_breadth_models import TFLITE_LSTMS, tflite_lstm
    from test_dynamic_shapes import text_line

    from wasmrt.compile.converter import convert
    from wasmrt.compile.tflite.importer import import_tflite
    from wasmrt.zoo import models

    out.mkdir(parents=True, exist_ok=True)
    m: dict = {"tolerance": 1e-4}
    rec = models.model_path("ch_PP-OCRv4_rec_infer.onnx")
    sess = ort.InferenceSession(str(rec), providers=["CPUExecutionProvider"])
    m["ocr"] = {"model": "models/ppocr_rec.wrt", "path": str(ROOT / "models" / "ppocr_rec.wrt"), "runs": []}
    for w in OCR_WIDTHS:
        x = text_line(w)
        m["ocr"]["runs"].append({"width": w, "x": _write(out, f"ocr.{w}.in", x),
                                 "want": _write(out, f"ocr.{w}.want", sess.run(None, {"x": x})[0])})
    m["ocr"]["alternate"] = [_write(out, f"ocr.alt{w}.in", text_line(w)) for w in (96, 200)]

    folder = out / "torch"
    folder.mkdir(exist_ok=True)
    path = tm.recurrent_onnx("lstm", True, str(folder))
    ins, outs = tm.RECURRENT[("lstm", True)]
    (out / "lstm_bi.wrt").write_bytes(convert(path, state=dict(zip(outs[1:], ins[1:], strict=True))).data)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    state = {n: np.zeros(tm.recurrent_state_shape(True), np.float32) for n in ins[1:]}
    steps = []
    rng = np.random.default_rng(5)
    for k in range(3):
        x = rng.standard_normal((tm.BATCH, tm.STEPS, tm.FEATURES)).astype(np.float32)
        want = dict(zip(outs, sess.run(None, {"x": x, **state}), strict=True))
        steps.append({"x": _write(out, f"lstm.{k}.x", x), "want": {o: _write(out, f"lstm.{k}.{o}", v)
                                                                    for o, v in want.items()}})
        state = {i: want[o] for o, i in zip(outs[1:], ins[1:], strict=True)}
    m["lstm"] = {"path": str(out / "lstm_bi.wrt"), "file": "lstm_bi.wrt", "steps": steps,
                 "pairs": dict(zip(outs[1:], ins[1:], strict=True))}

    tfl = tflite_lstm(**TFLITE_LSTMS["cifg_layernorm_cellclip"])
    (out / "tflite_lstm.wrt").write_bytes(convert(import_tflite(tfl)).data)
    lite = Lite(model_content=tfl, num_threads=1)
    lite.allocate_tensors()
    steps = []
    for k in range(3):
        x = rng.standard_normal(lite.get_input_details()[0]["shape"]).astype(np.float32)
        lite.set_tensor(lite.get_input_details()[0]["index"], x)
        lite.invoke()
        steps.append({"x": _write(out, f"tfl.{k}.x", x),
                      "want": {"y": _write(out, f"tfl.{k}.y", lite.get_tensor(lite.get_output_details()[0]["index"]))}})
    m["tflite_lstm"] = {"path": str(out / "tflite_lstm.wrt"), "file": "tflite_lstm.wrt", "steps": steps,
                        "pairs": {"h_state_next": "h_state", "c_state_next": "c_state"}}

    m["encoders"] = {}
    for name, path, feeds in (("vit", tm.vit_onnx(str(folder)), {"pixels": np.random.default_rng(4).standard_normal(
            tm.VIT_INPUT).astype(np.float32)}), ("bert", tm.bert_onnx(str(folder)), tm.bert_feeds(seed=9))):
        (out / f"{name}.wrt").write_bytes(convert(path).data)
        sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        want = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds), strict=True))
        m["encoders"][name] = {"path": str(out / f"{name}.wrt"),
                               "inputs": {k: _write(out, f"{name}.in.{k}", v) for k, v in feeds.items()},
                               "want": {k: _write(out, f"{name}.want.{k}", v) for k, v in want.items()}}
    (out / "breadth.json").write_text(json.dumps(m, indent=1))
    return m
