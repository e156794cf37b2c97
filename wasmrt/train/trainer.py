"""wasmrt.train: fine-tune or train a .wrt model with python_ref's training semantics (python_ref/train), and write
the tuned model as a .wrt every engine runs.

Trainable layers are the CONV_2D, FULLY_CONNECTED and MATMUL ops with constant float32 weights, in graph order.
Frozen layers run once per sample: the activations the trained layers read (python_ref.train.Tape.frontier) are
computed for the whole data set before the first epoch and cached.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from python_ref.train import LOSSES, OPTIMIZERS, Optimizer, Tape
from python_ref.train.losses import check_labels
from python_ref.train.optim import DEFAULT_LR, DEFAULT_MOMENTUM
from python_ref.wrt_file import WrtModel, read_wrt
from wasmrt.errors import InputError, TrainingError, UnsupportedOpError
from wasmrt.progress import Progress
from wasmrt.train.engine_head import EngineHead, frozen_features
from wasmrt.train.export import graph_from_wrt, write_graph
from wasmrt.train.layers import Sequential

TRAINABLE_OPS = ("CONV_2D", "FULLY_CONNECTED", "MATMUL")  # MATMUL: when its second operand is a constant
ModelSource = bytes | bytearray | str | Path | Sequential | WrtModel


@dataclass
class Trained:
    """The result of wasmrt.train: the tuned model's .wrt bytes and the loss and accuracy of each epoch."""

    wrt: bytes
    history: list[dict[str, float]] = field(default_factory=list)
    classes: list[str] = field(default_factory=list)

    def load(self, engine: str = "ref", **options: Any) -> Any:
        from wasmrt.engines import load

        return load(self.wrt, engine, **options)

    def save(self, path: str | Path) -> None:
        Path(path).write_bytes(self.wrt)


def _read(model: ModelSource, seed: int) -> WrtModel:
    if isinstance(model, WrtModel):
        return model
    if isinstance(model, Sequential):
        return read_wrt(model.wrt(seed), "<Sequential>")
    if isinstance(model, bytes | bytearray | str | Path):
        return read_wrt(model)
    raise TypeError(f"model: a .wrt path or bytes, a Sequential or a parsed WrtModel, not {type(model).__name__}")


def trainable_layers(m: WrtModel) -> list[int]:
    """Indices of the ops that train: CONV_2D / FULLY_CONNECTED / MATMUL with constant float32 weights."""
    t = m.tensors
    return [k for k, op in enumerate(m.ops) if op.op in TRAINABLE_OPS and t[op.inputs[1]].data is not None
            and t[op.inputs[1]].dtype == np.float32 and t[op.inputs[1]].quant is None]


def _pick(m: WrtModel, layers: list[int], train: str) -> list[int]:
    """The layers `train` names: "all", "head" (the last), "last:N", or an op name (that layer and those after)."""
    if not layers:
        raise ValueError("the model has no trainable layer (CONV_2D, FULLY_CONNECTED or MATMUL with constant "
                         "float32 weights)")
    if train == "all":
        return layers
    if train == "head":
        return layers[-1:]
    if train.startswith("last:"):
        try:
            n = int(train[5:])
        except ValueError:
            n = 0
        if not 1 <= n <= len(layers):
            raise ValueError(f"train={train!r}: N must be 1..{len(layers)} (the model's trainable layers)")
        return layers[-n:]
    named = [k for k in layers if m.ops[k].name == train]
    if not named:
        names = ", ".join(repr(m.ops[k].name) for k in layers)
        raise ValueError(f"train={train!r}: not 'all', 'head', 'last:N' or a trainable layer's name ({names})")
    return [k for k in layers if k >= named[0]]


def new_head(m: WrtModel, classes: list[str], seed: int) -> WrtModel:
    """The model with its last trainable layer (and what follows it) replaced by a fully connected layer giving one
    logit per class, on the features that layer read (flattened); initial weights as layers.linear's."""
    layers = trainable_layers(m)
    if not layers:
        raise ValueError("head: the model has no classifier layer (CONV_2D or FULLY_CONNECTED) to replace")
    if len(classes) < 2:
        raise ValueError(f"head: at least two classes, got {classes}")
    last = layers[-1]
    g = graph_from_wrt(m)
    feats = g.nodes[last].inputs[0]
    g.nodes = g.nodes[:last]
    shape = g.tensors[feats].shape
    if len(shape) != 2:
        feats = g.add_node("RESHAPE", [feats], {"shape": (0, -1)}, name="head/flatten")[0]
    k = g.tensors[feats].shape[1]
    rng = np.random.default_rng(seed)
    bound = 1.0 / math.sqrt(k)
    w = g.add_const("head.weight", rng.uniform(-bound, bound, (len(classes), k)).astype(np.float32))
    b = g.add_const("head.bias", rng.uniform(-bound, bound, len(classes)).astype(np.float32))
    g.add_node("FULLY_CONNECTED", [feats, w, b], name="head", outputs=["logits"])
    g.outputs = ["logits"]
    g.metadata.labels = [str(c) for c in classes]
    return read_wrt(write_graph(g), "<with new head>")


def logits_tensor(m: WrtModel) -> int:
    """The tensor the loss reads: the first output, or the input of a SOFTMAX that makes it."""
    out = m.outputs[0]
    for op in m.ops:
        if out in op.outputs and op.op == "SOFTMAX":
            return op.inputs[0]
    return out


def _dataset(m: WrtModel, dataset: Any) -> tuple[np.ndarray, np.ndarray]:
    if not isinstance(dataset, tuple | list) or len(dataset) != 2:
        raise InputError("dataset: (inputs, labels) with inputs [N, ...] float32 and labels [N]")
    x, y = np.asarray(dataset[0]), np.asarray(dataset[1])
    if len(m.inputs) != 1:
        raise InputError(f"dataset: the model has {len(m.inputs)} inputs; training takes models with one input")
    spec = m.tensors[m.inputs[0]]
    if x.dtype != np.float32 or x.ndim != len(spec.shape) or x.shape[1:] != spec.shape[1:]:
        raise InputError(f"dataset inputs: {x.dtype} {list(x.shape)}, expected float32 [N, "
                         f"{', '.join(map(str, spec.shape[1:]))}]")
    if len(y) != len(x) or len(x) == 0:
        raise InputError(f"dataset: {len(x)} inputs and {len(y)} labels (need the same number, at least one)")
    if not np.isfinite(x).all():
        raise InputError("dataset inputs hold NaN or infinity")
    return np.ascontiguousarray(x), y


def _batches(tape: Tape, feeds: dict[int, np.ndarray], start: int, batch: int) -> dict[int, np.ndarray]:
    """The frontier of op `start` for every sample, computed batch by batch (frozen layers run once)."""
    front = tape.frontier(start)
    if start == 0:
        return {i: feeds[i] for i in front}
    n = len(next(iter(feeds.values())))
    parts: dict[int, list[np.ndarray]] = {i: [] for i in front}
    for s in range(0, n, batch):
        vals = tape.forward({i: v[s:s + batch] for i, v in feeds.items()}, 0, start)
        for i in front:
            parts[i].append(vals[i])
    return {i: np.concatenate(p) for i, p in parts.items()}


def train(model: ModelSource, dataset: tuple[np.ndarray, np.ndarray], train: str = "all", optimizer: str = "sgd",
          epochs: int = 1, batch_size: int = 32, lr: float | None = None, momentum: float = DEFAULT_MOMENTUM,
          weight_decay: float = 0.0, loss: str = "cross_entropy", head: dict[str, Any] | None = None, seed: int = 0,
          shuffle: bool = True, progress: bool = True,
          on_epoch: Callable[[dict[str, float]], None] | None = None, engine: str = "ref") -> Trained:
    """Train a model and return the tuned one (Trained: .wrt bytes, per-epoch loss and accuracy, .load()).

    model: a .wrt path or bytes, or a Sequential (written with `seed`). dataset: (inputs [N, ...] float32, labels)
    with integer class labels [N] for loss="cross_entropy" (the model's output are logits, or the probabilities of
    a SOFTMAX whose input is then read as logits), or targets of the output's shape for loss="mse".
    train: "all", "head" (the last trainable layer), "last:N" or a layer's name (it and the layers after it).
    head={"classes": [...]}: replace the classifier by a new fully connected layer with one output per class (its
    weights seeded by `seed`), on the features the old one read; train="head" trains it on frozen features.
    optimizer: "sgd" (momentum, default lr 0.01) or "adam" (default lr 0.001); weight_decay is L2 (added to the
    gradient). Batches are drawn from a permutation seeded by `seed` each epoch (the last may be smaller).
    A loss or gradient that is not finite raises TrainingError (no model is returned); a label that is not a class
    index raises InputError.
    engine: "ref" (python_ref's numerics, the specification) or "native" / "wasm": the C engine runs the frozen
    layers and the trained ones (a chain of fully connected layers and activations: engine_head.py), in float32
    within the tolerances of tests/test_train_kernels.py."""
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {sorted(OPTIMIZERS)}, got {optimizer!r}")
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {sorted(LOSSES)}, got {loss!r}")
    if engine not in ("ref", "native", "wasm"):
        raise ValueError(f"engine must be 'ref', 'native' or 'wasm', got {engine!r}")
    if epochs < 1 or batch_size < 1:
        raise ValueError(f"epochs and batch_size must be >= 1, got {epochs} and {batch_size}")
    m = _read(model, seed)
    if head is not None:
        m = new_head(m, list(head.get("classes", [])), seed)
    chosen = _pick(m, trainable_layers(m), train)
    params = [m.tensors[i].name for k in chosen for i in m.ops[k].inputs[1:3] if i >= 0]
    tape = Tape(m, params)
    x, y = _dataset(m, dataset)
    out = logits_tensor(m)
    blocked = tape.without_gradient(out)
    if blocked:
        ops = ", ".join(f"op {k} ({m.ops[k].op} {m.ops[k].name!r})" for k in blocked)
        raise UnsupportedOpError(f"train={train!r}: no gradient through {ops}; train only layers after it "
                                 "(train='last:N' or a layer's name)")
    feeds = tape.feeds({m.tensors[m.inputs[0]].name: x})
    probe = tape.forward({i: v[:1] for i, v in feeds.items()})[out]
    if loss == "cross_entropy":
        if probe.ndim != 2:
            raise InputError(f"cross-entropy needs logits [batch, classes]; the model gives {list(probe.shape)}")
        y = check_labels(y, len(x), probe.shape[1])
    else:
        y = np.asarray(y, np.float32)
        if y.shape[1:] != probe.shape[1:]:
            raise InputError(f"mse targets: shape {list(y.shape)}, the model's output is [N, "
                             f"{', '.join(map(str, probe.shape[1:]))}]")
    opt: Optimizer = OPTIMIZERS[optimizer](lr=DEFAULT_LR[optimizer] if lr is None else lr, weight_decay=weight_decay,
                                           **({"momentum": momentum} if optimizer == "sgd" else {}))
    bar = Progress(prefix="train") if progress else None
    start = tape.first
    if bar and start > 0:
        bar.log(f"frozen layers: features of {len(x)} samples computed once (ops 0..{start - 1})")
    head: EngineHead | None = None
    if engine == "ref":
        cache = _batches(tape, feeds, start, batch_size)
    else:
        head = EngineHead(m, start, tape.params, out, loss, optimizer, opt.lr, momentum, weight_decay, engine)
        front = tape.frontier(start)
        cache = {front[0] if front else m.inputs[0]: frozen_features(m, start, front, x, engine)}
    rng = np.random.default_rng(seed)
    history: list[dict[str, float]] = []
    steps = math.ceil(len(x) / batch_size)
    for epoch in range(epochs):
        order = rng.permutation(len(x)) if shuffle else np.arange(len(x))
        total, correct = 0.0, 0
        if bar:
            bar.stage(f"epoch {epoch + 1}/{epochs}")
        for s in range(steps):
            idx = order[s * batch_size:(s + 1) * batch_size]
            if head is None:
                values = tape.forward({i: v[idx] for i, v in cache.items()}, start)
                value, grad = LOSSES[loss](values[out], y[idx])
                logits = values[out]
            else:
                value, logits, grads = head.step(next(iter(cache.values()))[idx], y[idx])
            if not np.isfinite(value):
                raise TrainingError(f"the loss diverged ({value}) at epoch {epoch + 1}, step {s + 1}: lower the "
                                    f"learning rate (lr={opt.lr}) or check the data")
            if head is None:
                grads = tape.gradients(values, {out: grad}, start)
            bad = [n for n, g in grads.items() if not np.isfinite(g).all()]
            if bad:
                raise TrainingError(f"the gradient of {bad[0]!r} is not finite at epoch {epoch + 1}, step {s + 1}")
            if head is None:
                opt.step(tape.params, grads)
            else:
                head.update(grads)
            total += float(value) * len(idx)
            if loss == "cross_entropy":
                correct += int(np.sum(np.argmax(logits, axis=1) == y[idx]))
            if bar:
                bar.update(s + 1, steps)
        stats = {"epoch": float(epoch + 1), "loss": total / len(x)}
        if loss == "cross_entropy":
            stats["accuracy"] = correct / len(x)
        history.append(stats)
        if bar:
            bar.log(f"epoch {epoch + 1}: loss {stats['loss']:.4f}" +
                    (f", train accuracy {stats['accuracy']:.4f}" if "accuracy" in stats else ""))
        if on_epoch:
            on_epoch(stats)
    if bar:
        bar.close()
    bad_params = [n for n, p in tape.params.items() if not np.isfinite(p).all()]
    if bad_params:
        raise TrainingError(f"parameter {bad_params[0]!r} is not finite after training")
    g = graph_from_wrt(m, tape.params)
    g.metadata.props["wasmrt.train"] = f"{train}, {optimizer}, {epochs} epochs"
    return Trained(write_graph(g), history, list(m.metadata.get("labels", [])))


def predict(model: ModelSource, inputs: np.ndarray, batch_size: int = 256) -> np.ndarray:
    """The model's first output for a batch of inputs, with the reference ops (batched)."""
    m = _read(model, 0)
    tape = Tape(m, [])
    name = m.tensors[m.inputs[0]].name
    outs = []
    for s in range(0, len(inputs), batch_size):
        vals = tape.forward(tape.feeds({name: np.asarray(inputs[s:s + batch_size])}))
        outs.append(vals[m.outputs[0]])
    return np.concatenate(outs)


def accuracy(model: ModelSource, inputs: np.ndarray, labels: np.ndarray, batch_size: int = 256) -> float:
    """The fraction of inputs whose largest output is their label."""
    return float(np.mean(np.argmax(predict(model, inputs, batch_size), axis=1) == np.asarray(labels)))
