"""Quantization-aware fine-tuning of an int8 graph by distillation from its float model (`wasmrt quantize --qat`).

After the post-training steps, the last `layers` int8 convolutions / fully-connected layers train on the calibration
samples (no labels): the int8 model's inputs to that tail are computed once per sample on the native engine, the
float model's outputs are the targets, and the tail runs fake-quantized (python_ref/train/fakequant.py: the int8 ops
themselves, straight-through gradients) under Adam. Weights move in units of their scale and biases in output steps;
scales and zero points stay the quantizer's, so the result is the same bit-exact int8 format. Only a tail trains
because its inputs can be cached, which keeps a run to minutes in numpy; the last layers can then undo a drift of
the features the layers before them leave. Whether that carries over to new images depends on how well the
calibration images stand for them (docs/quantize.md has EfficientNet-Lite0's figures).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from python_ref import quant as qm
from python_ref.quant import QuantParams
from python_ref.train.fakequant import TRAINED, FakeQuant, QOp
from python_ref.train.losses import mean_squared_error
from python_ref.train.optim import Adam
from wasmrt.compile.ir import Graph
from wasmrt.errors import InputError
from wasmrt.quantize.calibrate import Tracer

LOSSES = ("mse", "kl")
LAYERS = 2  # trained layers, counted from the output
LR = 0.02  # Adam, in weight-scale units (and output steps for biases) per step
BATCH = 32
STEPS = 300
TEMPERATURE = 1.0  # of the kl loss


@dataclass
class Options:
    """`wasmrt quantize --qat` settings: Adam steps, layers trained (from the output), loss, learning rate, batch."""

    steps: int = STEPS
    layers: int = LAYERS
    loss: str = "kl"
    lr: float = LR
    batch: int = BATCH
    seed: int = 0

    def check(self) -> None:
        if self.steps < 1:
            raise InputError(f"--steps must be 1 or more, got {self.steps}")
        if self.layers < 1:
            raise InputError(f"--qat-layers must be 1 or more, got {self.layers}")
        if self.loss not in LOSSES:
            raise InputError(f"loss must be one of {', '.join(LOSSES)}, got {self.loss!r}")
        if not (self.lr > 0 and np.isfinite(self.lr)):
            raise InputError(f"the learning rate must be > 0, got {self.lr}")
        if self.batch < 1:
            raise InputError(f"the batch must be 1 or more, got {self.batch}")


@dataclass
class Result:
    """What distill did: steps run, loss and top-1 agreement with the float model on the samples, before/after."""

    layers: list[str]
    steps: int
    loss: list[float] = field(default_factory=list)
    agreement_before: float = 0.0
    agreement_after: float = 0.0


def kl_loss(z: np.ndarray, t: np.ndarray, temperature: float = TEMPERATURE) -> tuple[np.float32, np.ndarray]:
    """T^2 KL(softmax(t/T) || softmax(z/T)), mean over the samples; gradient T (softmax(z/T) - softmax(t/T)) / N."""
    n = z.shape[0]
    zt, tt = z.reshape(n, -1).astype(np.float64) / temperature, t.reshape(n, -1).astype(np.float64) / temperature
    lz = zt - zt.max(1, keepdims=True)
    lz -= np.log(np.exp(lz).sum(1, keepdims=True))
    lt = tt - tt.max(1, keepdims=True)
    lt -= np.log(np.exp(lt).sum(1, keepdims=True))
    pt = np.exp(lt)
    loss = temperature ** 2 * np.sum(pt * (lt - lz)) / n
    grad = temperature * (np.exp(lz) - pt) / n
    return np.float32(loss), grad.reshape(z.shape).astype(np.float32)


def tail(qg: Graph, layers: int) -> tuple[list[QOp], list[int], list[str]]:
    """The ops from the first of the last `layers` trainable int8 layers to the end, the indices of those layers
    among them, and their names."""
    candidates = [k for k, n in enumerate(qg.nodes) if n.op in TRAINED and qg.tensors[n.inputs[0]].quant is not None
                  and qg.tensors[n.inputs[1]].is_const]
    if not candidates:
        raise InputError("the int8 model has no int8 convolution or fully-connected layer to fine-tune")
    chosen = candidates[-layers:]
    start = chosen[0]
    ops = [QOp(n.op, list(n.inputs), list(n.outputs), dict(n.attrs), qg.quant_of(n)) for n in qg.nodes[start:]]
    return ops, [k - start for k in chosen], [qg.nodes[k].name for k in chosen]


def agreement(a: np.ndarray, b: np.ndarray) -> float:
    n = len(a)
    return float(np.mean(np.argmax(a.reshape(n, -1), 1) == np.argmax(b.reshape(n, -1), 1)))


def distill(qg: Graph, src: Graph, samples: list[dict[str, np.ndarray]], options: Options | None = None, *,
            step: Callable[[str, int, int], None] | None = None,
            log: Callable[[str], None] | None = None) -> Result:
    """Fine-tune the last `options.layers` int8 layers of qg (quantized from src) in place by distillation on the
    samples: `options.steps` Adam steps on batches of `options.batch` samples drawn with `options.seed`."""
    o = options or Options()
    o.check()
    if not samples:
        raise InputError("quantization-aware training needs calibration samples")
    if len(src.outputs) != 1 or len(qg.outputs) != 1:
        raise InputError("quantization-aware training distills a model with one output")
    ops, trained, names = tail(qg, o.layers)
    consts = {n: t.data for n, t in qg.tensors.items() if t.is_const and t.data is not None}
    fq = FakeQuant(ops, consts, trained)
    out = qg.outputs[0]
    if out not in ops[-1].outputs:
        raise InputError("quantization-aware training needs the model's output made by its last op")
    # the tail's inputs on the int8 model and the float model's outputs, once per sample (native engine)
    qtrace, ftrace = Tracer(qg, fq.inputs), Tracer(src, list(src.outputs))
    feeds: dict[str, list[np.ndarray]] = {n: [] for n in fq.inputs}
    targets = []
    for k, s in enumerate(samples):
        for n, v in qtrace(s).items():
            feeds[n].append(v)
        targets.append(ftrace(s)[src.outputs[0]])
        if step:
            step("qat: caching the int8 tail's inputs and the float outputs", k + 1, len(samples))
    cache = {n: np.concatenate(v) for n, v in feeds.items()}
    target = np.concatenate(targets).astype(np.float32)
    # a float output (a classifier's) moves its bias in the steps an int8 output over the targets' range would
    # have, so the learning rate means what it means for an int8 output
    fq.float_step = float(qm.params_for_range(float(target.min()), float(target.max())).s)
    result = train(fq, cache, target, qg.tensors[out].quant, out, o, names, step, log)
    _store(qg, fq, trained, ops)
    return result


def train(fq: FakeQuant, cache: dict[str, np.ndarray], target: np.ndarray, qy: QuantParams | None, out: str,
          o: Options, names: list[str], step: Callable[[str, int, int], None] | None = None,
          log: Callable[[str], None] | None = None) -> Result:
    """The training loop on cached tail inputs (a batch of samples along the first dimension) and float outputs."""

    def real(v: np.ndarray) -> np.ndarray:
        return qm.dequantize(v, qy) if qy is not None else v.astype(np.float32)

    n_samples = target.shape[0]

    def outputs() -> np.ndarray:
        got = [fq.forward({n: v[i:i + 64] for n, v in cache.items()})[out] for i in range(0, n_samples, 64)]
        return real(np.concatenate(got))

    result = Result(names, o.steps, agreement_before=agreement(outputs(), target))
    if log:
        log(f"qat: fine-tuning {', '.join(names)} on {n_samples} samples ({o.loss} distillation, {o.steps} steps); "
            f"top-1 agreement on them before: {100 * result.agreement_before:.1f}%")
    rng = np.random.default_rng(o.seed)
    opt = Adam(o.lr)
    lossfn = mean_squared_error if o.loss == "mse" else kl_loss
    order = rng.permutation(n_samples)
    pos = 0
    for k in range(o.steps):
        if pos + min(o.batch, n_samples) > n_samples:
            order, pos = rng.permutation(n_samples), 0
        idx = np.sort(order[pos:pos + o.batch])
        pos += o.batch
        values = fq.forward({n: v[idx] for n, v in cache.items()})
        value, grad = lossfn(real(values[out]), target[idx])
        if not np.isfinite(value):
            raise InputError(f"quantization-aware training diverged at step {k + 1} (loss {value}); lower the "
                             "learning rate")
        result.loss.append(float(value))
        opt.step(fq.params, fq.gradients(values, {out: grad}))
        if step:
            step(f"qat: distillation (loss {float(value):.4g})", k + 1, o.steps)
    result.agreement_after = agreement(outputs(), target)
    if log:
        log(f"qat: top-1 agreement on the training samples after: {100 * result.agreement_after:.1f}%")
    return result


def _store(qg: Graph, fq: FakeQuant, trained: list[int], ops: list[QOp]) -> None:
    """Write the trained integers into qg: the int8 weights and int32 biases the fake-quantized pass used."""
    nodes = {n.outputs[0]: n for n in qg.nodes}
    for k in trained:
        w, b = fq.stored(k)
        node = nodes[ops[k].outputs[0]]
        qg.tensors[node.inputs[1]].data = w
        if len(node.inputs) > 2 and node.inputs[2]:
            qg.tensors[node.inputs[2]].data = b
        else:
            node.inputs = [*node.inputs[:2], qg.add_const(f"{node.name}:bias", b)]
