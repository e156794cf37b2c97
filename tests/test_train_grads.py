"""python_ref/train gradients against PyTorch autograd, op by op, plus the losses and the optimizers.

Each case runs our op forward (python_ref.dispatch), our backward with a random output gradient, and the same op in
PyTorch on the NCHW / OIHW transposed tensors in float64 (autograd through the transposes gives the gradients in our
layout). Tolerance: max|ours - torch| <= 1e-4 * max|torch| per gradient (python_ref/train/README.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from python_ref import dispatch, shapes
from python_ref.train import SGD, Adam, grads, mean_squared_error, softmax_cross_entropy
from python_ref.train.grads import backward

RTOL = 1e-4
INF = math.inf


def rel_err(ours: np.ndarray, ref: np.ndarray) -> float:
    scale = float(np.max(np.abs(ref))) if ref.size else 0.0
    return float(np.max(np.abs(ours.astype(np.float64) - ref))) / max(scale, 1e-30)


def nchw(t: torch.Tensor) -> torch.Tensor:
    return t.permute(0, 3, 1, 2)


def nhwc(t: torch.Tensor) -> torch.Tensor:
    return t.permute(0, 2, 3, 1)


def clamp(y: torch.Tensor, a: dict[str, Any]) -> torch.Tensor:
    lo, hi = a.get("act_min", -INF), a.get("act_max", INF)
    if lo == -INF and hi == INF:
        return y
    if hi == INF:
        return F.threshold(y, lo, lo)  # x > lo passes, as relu
    return F.hardtanh(y, lo, hi)


def torch_conv(xs: list[torch.Tensor], a: dict[str, Any]) -> torch.Tensor:
    x, w = xs[0], xs[1]
    pt, pl, pb, pr = a.get("pads", (0, 0, 0, 0))
    xp = F.pad(nchw(x), (pl, pr, pt, pb))
    y = F.conv2d(xp, w.permute(0, 3, 1, 2), xs[2] if len(xs) > 2 else None, stride=a.get("strides", (1, 1)),
                 dilation=a.get("dilations", (1, 1)), groups=a.get("groups", 1))
    y = nhwc(y)
    if len(xs) > 3:
        y = y + xs[3]
    return clamp(y, a)


def conv_case(n: int, h: int, w: int, cin: int, cout: int, k: int, stride: int = 1, dil: int = 1,
              pads: tuple[int, int, int, int] = (0, 0, 0, 0), groups: int = 1, bias: bool = True,
              residual: bool = False, act: tuple[float, float] = (-INF, INF)) -> tuple:
    rng = np.random.default_rng(n * 1000 + h * 100 + cin * 10 + k + stride + groups)
    x = rng.standard_normal((n, h, w, cin)).astype(np.float32)
    wt = rng.standard_normal((cout, k, k, cin // groups)).astype(np.float32)
    a = {"strides": (stride, stride), "dilations": (dil, dil), "pads": pads, "groups": groups, "act_min": act[0],
         "act_max": act[1]}
    xs = [x, wt]
    if bias or residual:
        xs.append(rng.standard_normal(cout).astype(np.float32))
    if residual:
        oh = shapes.conv_out(h, k, stride, dil, pads[0], pads[2])
        ow = shapes.conv_out(w, k, stride, dil, pads[1], pads[3])
        xs.append(rng.standard_normal((n, oh, ow, cout)).astype(np.float32))
    return "CONV_2D", xs, a, torch_conv


def torch_pool(kind: str) -> Callable[[list[torch.Tensor], dict[str, Any]], torch.Tensor]:
    def run(xs: list[torch.Tensor], a: dict[str, Any]) -> torch.Tensor:
        pt, pl, pb, pr = a["pads"]
        assert pt == pb and pl == pr, "torch pools take symmetric padding"
        x = nchw(xs[0])
        if kind == "max":
            y = F.max_pool2d(x, a["kernel"], a["strides"], (pt, pl), a.get("dilations", (1, 1)),
                             ceil_mode=a["ceil_mode"])
        else:
            y = F.avg_pool2d(x, a["kernel"], a["strides"], (pt, pl), ceil_mode=a["ceil_mode"],
                             count_include_pad=a["count_include_pad"])
        return clamp(nhwc(y), a)
    return run


def pool_case(kind: str, k: int, s: int, p: int, ceil: bool = False, include: bool = False, dil: int = 1,
              act: tuple[float, float] = (-INF, INF)) -> tuple:
    rng = np.random.default_rng(k * 100 + s * 10 + p + ceil * 7 + include)
    x = rng.standard_normal((2, 9, 8, 3)).astype(np.float32)
    a = {"kernel": (k, k), "strides": (s, s), "pads": (p, p, p, p), "ceil_mode": ceil, "count_include_pad": include,
         "dilations": (dil, dil), "act_min": act[0], "act_max": act[1]}
    return ("MAX_POOL_2D" if kind == "max" else "AVERAGE_POOL_2D"), [x], a, torch_pool(kind)


def _rand(*shape: int, lo: float = -4.0, hi: float = 4.0, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed + sum(shape)).uniform(lo, hi, shape).astype(np.float32)


UNARY = {
    "RELU": ({}, F.relu),
    "CLIP": ({"min": 0.0, "max": 6.0}, lambda x: F.hardtanh(x, 0.0, 6.0)),
    "LEAKY_RELU": ({"alpha": 0.1}, lambda x: F.leaky_relu(x, 0.1)),
    "HARD_SWISH": ({}, F.hardswish),
    "HARD_SIGMOID": ({"alpha": 0.25, "beta": 0.4}, lambda x: F.hardtanh(0.25 * x + 0.4, 0.0, 1.0)),
    "SIGMOID": ({}, torch.sigmoid),
    "TANH": ({}, torch.tanh),
    "EXP": ({}, torch.exp),
}


def binary(fn: Callable) -> Callable:
    return lambda xs, a: clamp(fn(xs[0], xs[1]), a)


CASES: dict[str, tuple] = {
    "conv1x1": conv_case(2, 5, 5, 4, 6, 1),
    "conv3x3": conv_case(2, 6, 7, 3, 5, 3, pads=(1, 1, 1, 1)),
    "conv3x3_s2": conv_case(2, 9, 8, 4, 4, 3, stride=2, pads=(1, 1, 1, 1)),
    "conv3x3_s2_asym": conv_case(1, 8, 8, 3, 4, 3, stride=2, pads=(0, 0, 1, 1)),
    "conv3x3_dil2": conv_case(1, 9, 9, 2, 3, 3, dil=2, pads=(2, 1, 2, 0)),
    "conv5x5_s2": conv_case(2, 12, 11, 3, 8, 5, stride=2, pads=(2, 2, 2, 2), bias=False),
    "conv_groups2": conv_case(2, 6, 6, 4, 6, 3, pads=(1, 1, 1, 1), groups=2),
    "depthwise": conv_case(2, 7, 7, 5, 5, 3, pads=(1, 1, 1, 1), groups=5),
    "depthwise_s2": conv_case(2, 8, 8, 4, 4, 3, stride=2, pads=(0, 0, 1, 1), groups=4),
    "depthwise_mult2": conv_case(1, 6, 6, 3, 6, 3, pads=(1, 1, 1, 1), groups=3),
    "depthwise_dil2_s2_mult2": conv_case(2, 9, 10, 3, 6, 3, stride=2, dil=2, pads=(2, 1, 1, 2), groups=3),
    "conv_relu": conv_case(2, 6, 6, 3, 4, 3, pads=(1, 1, 1, 1), act=(0.0, INF)),
    "conv_relu6_residual": conv_case(2, 5, 5, 4, 4, 3, pads=(1, 1, 1, 1), residual=True, act=(0.0, 6.0)),
    "fc": ("FULLY_CONNECTED", [_rand(3, 7), _rand(5, 7, seed=1), _rand(5, seed=2)], {},
           lambda xs, a: clamp(F.linear(*xs), a)),
    "fc_rank3_relu": ("FULLY_CONNECTED", [_rand(2, 3, 7), _rand(4, 7, seed=1), _rand(4, seed=2)],
                      {"act_min": 0.0, "act_max": INF}, lambda xs, a: clamp(F.linear(*xs), a)),
    "fc_nobias": ("FULLY_CONNECTED", [_rand(4, 6), _rand(3, 6, seed=1)], {}, lambda xs, a: F.linear(*xs)),
    "matmul": ("MATMUL", [_rand(2, 3, 4), _rand(4, 5, seed=1)], {}, lambda xs, a: xs[0] @ xs[1]),
    "matmul_batch_bcast": ("MATMUL", [_rand(1, 3, 4), _rand(2, 4, 5, seed=1)], {}, lambda xs, a: xs[0] @ xs[1]),
    "add_bcast_relu": ("ADD", [_rand(2, 3, 4), _rand(4, seed=1)], {"act_min": 0.0, "act_max": INF},
                       binary(torch.add)),
    "add_same": ("ADD", [_rand(2, 3, 4), _rand(2, 3, 4, seed=1)], {}, binary(torch.add)),
    "sub_bcast": ("SUB", [_rand(2, 3, 4), _rand(2, 1, 4, seed=1)], {}, binary(torch.sub)),
    "mul_bcast": ("MUL", [_rand(2, 3, 4), _rand(3, 1, seed=1)], {}, binary(torch.mul)),
    "div": ("DIV", [_rand(2, 3, 4), _rand(2, 3, 4, lo=0.5, hi=3.0, seed=1)], {}, binary(torch.div)),
    **{op.lower(): (op, [_rand(3, 4, 5)], attrs, (lambda f: lambda xs, a: f(xs[0]))(fn))
       for op, (attrs, fn) in UNARY.items()},
    "maxpool2": pool_case("max", 2, 2, 0),
    "maxpool3_s2_p1": pool_case("max", 3, 2, 1),
    "maxpool3_s2_ceil": pool_case("max", 3, 2, 0, ceil=True),
    "maxpool3_dil2": pool_case("max", 3, 1, 1, dil=2),
    "maxpool2_relu": pool_case("max", 2, 2, 0, act=(0.0, INF)),
    "avgpool2": pool_case("avg", 2, 2, 0),
    "avgpool3_s2_p1": pool_case("avg", 3, 2, 1),
    "avgpool3_s2_p1_include": pool_case("avg", 3, 2, 1, include=True),
    "avgpool3_s2_ceil": pool_case("avg", 3, 2, 1, ceil=True),
    "global_average": ("MEAN", [_rand(2, 5, 4, 3)], {"axes": (1, 2), "keepdims": True},
                       lambda xs, a: xs[0].mean(dim=(1, 2), keepdim=True)),
    "reduce_sum": ("REDUCE_SUM", [_rand(2, 5, 4)], {"axes": (-1,), "keepdims": False},
                   lambda xs, a: xs[0].sum(dim=-1)),
    "softmax": ("SOFTMAX", [_rand(3, 6)], {"axis": -1}, lambda xs, a: torch.softmax(xs[0], -1)),
    "reshape": ("RESHAPE", [_rand(2, 3, 4, 2)], {"shape": (0, -1)}, lambda xs, a: xs[0].reshape(2, -1)),
    "transpose": ("TRANSPOSE", [_rand(2, 3, 4)], {"perm": (2, 0, 1)}, lambda xs, a: xs[0].permute(2, 0, 1)),
    "concat": ("CONCATENATION", [_rand(2, 3, 4), _rand(2, 1, 4, seed=1)], {"axis": 1},
               lambda xs, a: torch.cat(xs, 1)),
}


def generated_cases(count: int = 24, seed: int = 2026) -> dict[str, tuple]:
    """Seeded random convolutions (kernel, stride, dilation, asymmetric pads, groups incl. depthwise, bias, residual,
    fused clamp) and pools (kernel, stride, pads, dilation, ceil_mode, count_include_pad), as the forward tests'
    breadth samples."""
    rng = np.random.default_rng(seed)
    out: dict[str, tuple] = {}
    while len(out) < count:
        k, s, d = int(rng.choice([1, 2, 3, 5])), int(rng.integers(1, 4)), int(rng.choice([1, 1, 2]))
        ke = d * (k - 1) + 1
        pads = tuple(int(p) for p in rng.integers(0, ke, 4))
        h, w = int(rng.integers(ke, ke + 8)), int(rng.integers(ke, ke + 8))
        cin = int(rng.integers(1, 7))
        kind = rng.choice(["dense", "grouped", "depthwise"])
        groups = {"dense": 1, "grouped": next((g for g in (3, 2) if cin % g == 0), 1), "depthwise": cin}[kind]
        cout = groups * int(rng.integers(1, 4))
        act = [(-INF, INF), (0.0, INF), (0.0, 6.0)][int(rng.integers(0, 3))]
        residual = bool(rng.random() < 0.2)
        out[f"gen_conv{len(out)}_k{k}s{s}d{d}g{groups}"] = conv_case(
            int(rng.integers(1, 3)), h, w, cin, cout, k, s, d, pads, groups, bool(rng.random() < 0.7), residual, act)
    for n in range(count // 2):
        k, s, d = int(rng.integers(1, 4)), int(rng.integers(1, 4)), int(rng.choice([1, 1, 2]))
        kind = "max" if n % 2 == 0 else "avg"
        if kind == "avg":
            d = 1  # torch's avg_pool2d has no dilation
        p = int(rng.integers(0, k // 2 + 1))  # torch's limit on pads
        out[f"gen_{kind}pool{n}_k{k}s{s}p{p}d{d}"] = pool_case(kind, k, s, p, bool(rng.random() < 0.5),
                                                                bool(rng.random() < 0.5), d)
    return out


CASES.update(generated_cases())


def check_case(op: str, xs: list[np.ndarray], attrs: dict[str, Any], fn: Callable) -> list[float]:
    """Relative error of each input's gradient against PyTorch's."""
    ys = dispatch.run(op, xs, attrs)
    gy = np.random.default_rng(7).standard_normal(ys[0].shape).astype(np.float32)
    ours = backward(op, xs, ys, [gy], attrs, [True] * len(xs))
    ts = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in xs]
    y = fn(ts, attrs)
    assert rel_err(ys[0], y.detach().numpy()) < 1e-5, f"{op}: the forward ops disagree"
    y.backward(torch.tensor(gy, dtype=torch.float64))
    errs = []
    for g, t in zip(ours, ts, strict=True):
        assert g is not None and g.dtype == np.float32 and g.shape == t.shape
        errs.append(rel_err(g, t.grad.numpy()))
    return errs


@pytest.mark.parametrize("name", list(CASES))
def test_gradient_matches_torch(name: str) -> None:
    errs = check_case(*CASES[name])
    assert max(errs) <= RTOL, f"{name}: relative errors per input {errs}"


def test_every_trainable_op_has_a_case() -> None:
    assert {c[0] for c in CASES.values()} == set(grads.BACKWARD)


@pytest.mark.parametrize(("name", "which"), [("conv3x3_s2", 0), ("conv3x3_s2", 1), ("conv3x3_s2", 2),
                                             ("depthwise_dil2_s2_mult2", 0), ("depthwise_dil2_s2_mult2", 1),
                                             ("conv_relu6_residual", 3), ("maxpool3_s2_p1", 0),
                                             ("avgpool3_s2_p1", 0), ("fc", 0), ("fc", 1), ("sigmoid", 0)])
def test_broken_gradient_fails(name: str, which: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison catches one element of one input's gradient off by 1% of that gradient's scale."""
    op = CASES[name][0]
    good = grads.BACKWARD[op]

    def broken(xs: list, ys: list, gys: list, a: dict, need: list[bool]) -> list:
        bad = [None if g is None else np.array(g, np.float64) for g in good(xs, ys, gys, a, need)]
        flat = bad[which].reshape(-1)
        flat[len(flat) // 2] += 0.01 * np.max(np.abs(flat)) + 1e-3
        return bad

    monkeypatch.setitem(grads.BACKWARD, op, broken)
    errs = check_case(*CASES[name])
    assert errs[which] > RTOL and max(errs[:which] + errs[which + 1:], default=0.0) <= RTOL


def test_losses_match_torch() -> None:
    rng = np.random.default_rng(3)
    logits = rng.standard_normal((6, 5)).astype(np.float32) * 3
    labels = rng.integers(0, 5, 6)
    loss, g = softmax_cross_entropy(logits, labels)
    t = torch.tensor(logits, dtype=torch.float64, requires_grad=True)
    ref = F.cross_entropy(t, torch.tensor(labels))
    ref.backward()
    assert abs(float(loss) - ref.item()) <= 1e-6 * abs(ref.item())
    assert rel_err(g, t.grad.numpy()) <= RTOL
    out, target = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal((4, 3)).astype(np.float32)
    loss, g = mean_squared_error(out, target)
    t = torch.tensor(out, dtype=torch.float64, requires_grad=True)
    ref = F.mse_loss(t, torch.tensor(target, dtype=torch.float64))
    ref.backward()
    assert abs(float(loss) - ref.item()) <= 1e-6 * ref.item()
    assert rel_err(g, t.grad.numpy()) <= RTOL


@pytest.mark.parametrize("labels", [np.array([0, 5]), np.array([-1, 0]), np.array([0.0, 1.0]), np.array([0])])
def test_bad_labels_are_input_errors(labels: np.ndarray) -> None:
    from python_ref.errors import InputError

    with pytest.raises(InputError, match="label"):
        softmax_cross_entropy(np.zeros((2, 5), np.float32), labels)


@pytest.mark.parametrize("kind", ["sgd", "sgd_momentum_wd", "adam", "adam_wd"])
def test_optimizers_match_torch(kind: str) -> None:
    rng = np.random.default_rng(5)
    p0 = rng.standard_normal((4, 3)).astype(np.float32)
    gs = [rng.standard_normal((4, 3)).astype(np.float32) for _ in range(6)]
    wd = 0.01 if kind.endswith("wd") else 0.0
    if kind.startswith("sgd"):
        mom = 0.9 if "momentum" in kind else 0.0
        ours, make = SGD(0.1, momentum=mom, weight_decay=wd), lambda p: torch.optim.SGD(p, 0.1, mom, weight_decay=wd)
    else:
        ours, make = Adam(0.01, weight_decay=wd), lambda p: torch.optim.Adam(p, 0.01, weight_decay=wd)
    params = {"p": p0.copy()}
    tp = torch.tensor(p0, requires_grad=True)
    opt = make([tp])
    for g in gs:
        ours.step(params, {"p": g})
        tp.grad = torch.tensor(g)
        opt.step()
    assert rel_err(params["p"], tp.detach().numpy().astype(np.float64)) <= 1e-6


@pytest.mark.parametrize("name", ["conv3x3_s2", "conv_groups2", "conv5x5_s2"])
def test_convolution_gradient_in_slices_of_samples(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Large batches go through the patch matrix one slice of samples at a time: here one sample a slice."""
    monkeypatch.setattr(grads, "_COLS_BYTES", 1)
    errs = check_case(*CASES[name])
    assert max(errs) <= RTOL, errs
