"""wasmrt.train and its layer API: a small CNN trained 10 steps gives PyTorch's weights (same initial weights and
batches, within 1e-4 relative), the tuned .wrt runs the same on every engine, frozen features are computed once, and
bad labels or a diverging loss are clear errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import wasmrt
from python_ref import dispatch
from python_ref.train import grads
from python_ref.wrt_file import WrtModel, read_wrt
from wasmrt.errors import InputError, TrainingError
from wasmrt.train import (
    Sequential,
    avg_pool,
    conv,
    depthwise,
    flatten,
    global_avg_pool,
    hard_swish,
    linear,
    max_pool,
    relu,
)
from wasmrt.train.trainer import trainable_layers

RTOL = 1e-4


def small_cnn() -> Sequential:
    return Sequential([conv(6, 3, activation="relu"), depthwise(3, stride=2, activation="relu6"), conv(8, 1),
                       hard_swish(), max_pool(2), conv(8, 3, padding=1, groups=2), relu(), avg_pool(2, 1), flatten(),
                       linear(16, activation="relu"), linear(4)], input_shape=(12, 12, 2))


def data(n: int = 80, classes: int = 4, shape: tuple[int, ...] = (12, 12, 2)) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(11)
    return rng.standard_normal((n, *shape)).astype(np.float32), rng.integers(0, classes, n)


def torch_forward(m: WrtModel, params: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    """The .wrt graph in PyTorch float32, NHWC tensors (what the small CNN uses)."""
    t = m.tensors
    vals: dict[int, torch.Tensor] = {m.inputs[0]: x}

    def get(i: int) -> torch.Tensor | None:
        if i < 0:
            return None
        return params[t[i].name] if t[i].name in params else vals[i] if i in vals else torch.tensor(t[i].data)

    def clamp(y: torch.Tensor, a: dict) -> torch.Tensor:
        lo, hi = a.get("act_min", -math.inf), a.get("act_max", math.inf)
        if hi == math.inf and lo == 0.0:
            return F.relu(y)
        return y if lo == -math.inf else F.hardtanh(y, lo, hi)

    for op in m.ops:
        xs, a = [get(i) for i in op.inputs], op.attrs
        if op.op == "CONV_2D":
            pt, pl, pb, pr = a["pads"]
            y = F.conv2d(F.pad(xs[0].permute(0, 3, 1, 2), (pl, pr, pt, pb)), xs[1].permute(0, 3, 1, 2),
                         xs[2] if len(xs) > 2 else None, stride=tuple(a["strides"]), groups=a["groups"])
            y = clamp(y.permute(0, 2, 3, 1), a)
        elif op.op == "FULLY_CONNECTED":
            y = clamp(F.linear(xs[0], xs[1], xs[2] if len(xs) > 2 else None), a)
        elif op.op in ("MAX_POOL_2D", "AVERAGE_POOL_2D"):
            pool = F.max_pool2d if op.op == "MAX_POOL_2D" else F.avg_pool2d
            y = pool(xs[0].permute(0, 3, 1, 2), tuple(a["kernel"]), tuple(a["strides"])).permute(0, 2, 3, 1)
        elif op.op == "RESHAPE":
            y = xs[0].reshape(xs[0].shape[0], -1)
        elif op.op == "MEAN":
            y = xs[0].mean(dim=(1, 2))
        else:
            y = {"RELU": F.relu, "HARD_SWISH": F.hardswish}[op.op](xs[0])
        vals[op.outputs[0]] = y
    return vals[m.outputs[0]]


def torch_train(wrt: bytes, x: np.ndarray, y: np.ndarray, optimizer: str, lr: float, wd: float,
                batch: int) -> dict[str, np.ndarray]:
    m = read_wrt(wrt)
    names = [m.tensors[i].name for k in trainable_layers(m) for i in m.ops[k].inputs[1:3] if i >= 0]
    params = {n: torch.tensor(next(t.data for t in m.tensors if t.name == n), requires_grad=True) for n in names}
    opt = (torch.optim.SGD(params.values(), lr, momentum=0.9, weight_decay=wd) if optimizer == "sgd"
           else torch.optim.Adam(params.values(), lr, weight_decay=wd))
    for s in range(0, len(x), batch):
        opt.zero_grad()
        loss = F.cross_entropy(torch_forward(m, params, torch.tensor(x[s:s + batch])), torch.tensor(y[s:s + batch]))
        loss.backward()
        opt.step()
    return {n: p.detach().numpy() for n, p in params.items()}


def weights(wrt: bytes, names: list[str]) -> dict[str, np.ndarray]:
    return {t.name: t.data for t in read_wrt(wrt).tensors if t.name in names}


def worst(ours: dict[str, np.ndarray], ref: dict[str, np.ndarray]) -> float:
    return max(float(np.max(np.abs(ours[n] - r))) / float(np.max(np.abs(r))) for n, r in ref.items())


@pytest.mark.parametrize(("optimizer", "lr", "wd"), [("sgd", 0.05, 1e-3), ("adam", 0.003, 0.0)])
def test_ten_steps_match_torch(optimizer: str, lr: float, wd: float) -> None:
    net = small_cnn()
    x, y = data()
    init = net.wrt(seed=3)
    ref = torch_train(init, x, y, optimizer, lr, wd, batch=8)
    tuned = wasmrt.train(init, (x, y), optimizer=optimizer, lr=lr, weight_decay=wd, batch_size=8, shuffle=False,
                         progress=False)
    got = weights(tuned.wrt, list(ref))
    assert set(got) == set(ref) and len(ref) == 12
    moved = worst(weights(init, list(ref)), ref)
    assert moved > 100 * RTOL, "training moved the weights too little for the comparison to mean anything"
    assert worst(got, ref) <= RTOL


def test_ten_steps_catch_a_broken_gradient(monkeypatch: pytest.MonkeyPatch) -> None:
    """A convolution weight gradient 1% off on one tap gives weights PyTorch does not."""
    good = grads.BACKWARD["CONV_2D"]

    def broken(xs: list, ys: list, gys: list, a: dict, need: list[bool]) -> list:
        out = good(xs, ys, gys, a, need)
        if out[1] is not None:
            out[1] = np.array(out[1])
            out[1][:, 0, 0] *= 1.01
        return out

    monkeypatch.setitem(grads.BACKWARD, "CONV_2D", broken)
    net = small_cnn()
    x, y = data()
    init = net.wrt(seed=3)
    ref = torch_train(init, x, y, "sgd", 0.05, 0.0, batch=8)
    tuned = wasmrt.train(init, (x, y), lr=0.05, batch_size=8, shuffle=False, progress=False)
    assert worst(weights(tuned.wrt, list(ref)), ref) > RTOL


def test_tuned_model_runs_the_same_on_every_engine() -> None:
    x, y = data(40)
    tuned = wasmrt.train(small_cnn(), (x, y), epochs=1, progress=False)
    head = wasmrt.train(tuned.wrt, (x, y % 3), train="head", head={"classes": ["a", "b", "c"]}, epochs=2,
                        optimizer="adam", progress=False)
    assert head.classes == ["a", "b", "c"] and head.load().metadata["labels"] == ["a", "b", "c"]
    for t in (tuned, head):
        ref = t.load("ref")
        name = ref.outputs[0].name
        for engine in ("native", "wasm"):
            m = t.load(engine)
            for k in range(3):
                want = ref.run({"input": x[k:k + 1]})[name]
                got = m.run({"input": x[k:k + 1]})[name]
                assert np.max(np.abs(got - want)) <= 1e-5 * max(1.0, float(np.max(np.abs(want)))), engine


def test_frozen_features_are_computed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    x, y = data(40)
    base = small_cnn().wrt(seed=1)
    first = read_wrt(base).ops[0].name
    runs = {"n": 0}
    real = dispatch.run

    def counting(op: str, inputs: list, attrs: dict, quant: object = None) -> list:
        if op == "CONV_2D" and inputs[1].shape == (6, 3, 3, 2):  # the first layer's weights
            runs["n"] += 1
        return real(op, inputs, attrs, quant)

    monkeypatch.setattr("python_ref.train.tape.dispatch.run", counting)
    tuned = wasmrt.train(base, (x, y), train="last:2", epochs=3, batch_size=10, progress=False)
    assert runs["n"] == 1 + 4  # the label probe, then 4 batches once, not 3 epochs x 4
    before, after = read_wrt(base), read_wrt(tuned.wrt)
    frozen = {t.name for t in before.tensors if t.data is not None and not t.name.startswith("linear")}
    for t0, t1 in zip(before.tensors, after.tensors, strict=True):
        if t0.name in frozen:
            assert np.array_equal(t0.data, t1.data), t0.name
        elif t0.name.endswith(".weight") and t0.data is not None:
            assert not np.array_equal(t0.data, t1.data), t0.name
    assert first


def test_transfer_head_on_global_pool_features() -> None:
    net = Sequential([conv(8, 3, stride=2, activation="relu"), global_avg_pool(), linear(5)], input_shape=(8, 8, 3))
    x, y = data(30, 2, (8, 8, 3))
    t = wasmrt.train(net, (x, y), train="head", head={"classes": ["cat", "dog"]}, epochs=3, optimizer="adam",
                     lr=0.05, progress=False)
    assert t.history[-1]["loss"] < t.history[0]["loss"]
    assert t.load().run({"input": x[:1]})["logits"].shape == (1, 2)


@pytest.mark.parametrize("labels", [np.full(20, 4), np.full(20, -1), np.linspace(0, 1, 20)])
def test_bad_labels(labels: np.ndarray) -> None:
    x, _ = data(20)
    with pytest.raises(InputError, match="label"):
        wasmrt.train(small_cnn(), (x, labels), progress=False)


def test_diverging_loss_is_an_error_not_a_model() -> None:
    x, _ = data(40)
    target = np.ones((40, 4), np.float32)
    net = Sequential([flatten(), linear(4)], input_shape=(12, 12, 2))
    with pytest.raises(TrainingError, match=r"diverged|not finite"):
        wasmrt.train(net, (x, target), loss="mse", lr=10.0, epochs=50, progress=False)


@pytest.mark.parametrize(("train", "match"), [("last:0", r"1\.\.6"), ("last:x", r"1\.\.6"), ("nope", "not 'all'")])
def test_bad_train_choice(train: str, match: str) -> None:
    x, y = data(8)
    with pytest.raises(ValueError, match=match):
        wasmrt.train(small_cnn(), (x, y), train=train, progress=False)


def test_bad_dataset() -> None:
    x, y = data(8)
    with pytest.raises(InputError, match="float32"):
        wasmrt.train(small_cnn(), (x.astype(np.float64), y), progress=False)
    with pytest.raises(InputError, match="labels"):
        wasmrt.train(small_cnn(), (x, y[:3]), progress=False)


def test_converted_reshape_with_a_fixed_batch_trains_in_batches() -> None:
    """Converters write the one-sample batch into RESHAPE targets ([1, K]); training batches keep their size."""
    from wasmrt.compile.ir import Graph
    from wasmrt.train import graph_from_wrt
    from wasmrt.train.export import write_graph

    rng = np.random.default_rng(2)
    g = Graph()
    x = g.add_input("input", (1, 6, 6, 2))
    w = g.add_const("c.weight", rng.standard_normal((5, 3, 3, 2)).astype(np.float32) * 0.3)
    y = g.add_node("CONV_2D", [x, w], {"act_min": 0.0})[0]
    y = g.add_node("MEAN", [y], {"axes": (1, 2), "keepdims": True})[0]
    y = g.add_node("RESHAPE", [y], {"shape": (1, 5)})[0]
    fw = g.add_const("fc.weight", rng.standard_normal((3, 5)).astype(np.float32))
    y = g.add_node("FULLY_CONNECTED", [y, fw], outputs=["logits"])[0]
    g.outputs = ["logits"]
    wrt = write_graph(g)
    xs, ys = data(24, 3, (6, 6, 2))
    tuned = wasmrt.train(wrt, (xs, ys), batch_size=8, epochs=2, progress=False)
    headed = wasmrt.train(wrt, (xs, ys % 2), train="head", head={"classes": ["no", "yes"]}, batch_size=8,
                          progress=False)
    for t in (tuned, headed):
        assert graph_from_wrt(read_wrt(t.wrt)).tensors["logits"].shape[0] == 1
        want = wasmrt.train.predict(t.wrt, xs[:8])
        got = np.concatenate([t.load("native").run({"input": xs[k:k + 1]})["logits"] for k in range(8)])
        assert np.max(np.abs(got - want)) <= 1e-5 * max(1.0, float(np.max(np.abs(want))))


def test_an_op_without_gradient_is_refused_before_any_work() -> None:
    from wasmrt.compile.ir import Graph
    from wasmrt.errors import UnsupportedOpError
    from wasmrt.train.export import write_graph

    rng = np.random.default_rng(4)
    g = Graph()
    x = g.add_input("input", (1, 4, 4, 2))
    y = g.add_node("CONV_2D", [x, g.add_const("c1", rng.standard_normal((3, 1, 1, 2)).astype(np.float32))],
                   name="first")[0]
    y = g.add_node("RESIZE", [y], {"size": (8, 8)}, name="up")[0]
    y = g.add_node("MEAN", [y], {"axes": (1, 2), "keepdims": False})[0]
    g.add_node("MATMUL", [y, g.add_const("m", rng.standard_normal((3, 2)).astype(np.float32))], outputs=["logits"])
    g.outputs = ["logits"]
    wrt = write_graph(g)
    xs, ys = data(8, 2, (4, 4, 2))
    with pytest.raises(UnsupportedOpError, match=r"RESIZE 'up'"):
        wasmrt.train(wrt, (xs, ys), progress=False)
    tuned = wasmrt.train(wrt, (xs, ys), train="head", optimizer="adam", lr=0.1, epochs=3, progress=False)
    assert tuned.history[-1]["loss"] < tuned.history[0]["loss"]


@pytest.mark.parametrize(("options", "match"), [({"lr": 0.0}, "learning rate"), ({"optimizer": "rmsprop"}, "optimizer"),
                                                ({"epochs": 0}, "epochs"), ({"loss": "hinge"}, "loss"),
                                                ({"momentum": 1.5}, "momentum")])
def test_bad_options(options: dict, match: str) -> None:
    x, y = data(8)
    with pytest.raises(ValueError, match=match):
        wasmrt.train(small_cnn(), (x, y), progress=False, **options)
