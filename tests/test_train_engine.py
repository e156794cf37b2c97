"""wasmrt.train(..., engine="native" | "wasm"): the frozen layers on the engine, the trained chain's (fully connected,
convolution, max pooling, activations) forward, backward and optimizer steps in the C engine (train.c over the
generated training kernels), against the same run on python_ref (engine="ref", the specification).

Tolerance: the tuned weights after a few steps within 2e-5 * (max |w| + 1) of python_ref's (float32 chains of a few
hundred terms per step, tests/test_train_kernels.py's per-op bounds, compounded over 6 steps; Adam's normalised
step divides the gradients' rounding by their own size, hence the absolute part). Training accuracy and loss within
1e-4 of python_ref's per epoch.
"""

from __future__ import annotations

import numpy as np
import pytest
from aarch64_steps import CPUS, QemuSteps, request  # tests/ is on sys.path under pytest

import wasmrt
from python_ref.wrt_file import read_wrt
from wasmrt.errors import InputError, TrainingError, UnsupportedOpError
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
    relu6,
    sigmoid,
    tanh,
)
from wasmrt.train.engine_steps import Out, Steps
from wasmrt.train.trainer import trainable_layers

ENGINES = ["native", "wasm"]


def net() -> Sequential:
    return Sequential([conv(4, 3, activation="relu"), max_pool(2), flatten(), linear(24, activation="relu"),
                       linear(16), hard_swish(), linear(12), tanh(), linear(10), sigmoid(), linear(3)],
                      input_shape=(8, 8, 1))


def data(n: int = 40) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(5)
    return rng.standard_normal((n, 8, 8, 1)).astype(np.float32), rng.integers(0, 3, n)


def weights(wrt: bytes) -> dict[str, np.ndarray]:
    m = read_wrt(wrt)
    return {m.tensors[i].name: np.asarray(m.tensors[i].data) for k in trainable_layers(m)
            for i in m.ops[k].inputs[1:3] if i >= 0}


def assert_all_layers_train_as_python_ref(cnn: Sequential, x: np.ndarray, y: np.ndarray, engine: str,
                                          **kw: object) -> None:
    """train="all" for 2 epochs on the engine gives python_ref's weights, each of them changed by the training."""
    kw = {"train": "all", "epochs": 2, "progress": False, **kw}
    ref = wasmrt.train(cnn, (x, y), **kw)
    got = wasmrt.train(cnn, (x, y), engine=engine, **kw)
    w0 = weights(cnn.wrt(0))
    for name, r in weights(ref.wrt).items():
        assert not np.array_equal(r, w0[name]), name
        err = np.abs(weights(got.wrt)[name].astype(np.float64) - r).max()
        assert err <= 2e-5 * (np.abs(r).max() + 1), f"{engine} {name}: max err {err}"


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("train", "optimizer"), [("head", "sgd"), ("last:5", "adam"), ("last:5", "sgd")])
def test_engine_training_matches_python_ref(engine: str, train: str, optimizer: str) -> None:
    x, y = data()
    kw = {"train": train, "optimizer": optimizer, "epochs": 2, "batch_size": 16, "lr": 0.05, "weight_decay": 0.01,
          "progress": False, "seed": 3}
    ref = wasmrt.train(net(), (x, y), **kw)
    got = wasmrt.train(net(), (x, y), engine=engine, **kw)
    wr, wg = weights(ref.wrt), weights(got.wrt)
    assert wr.keys() == wg.keys()
    changed = 0
    for name, r in wr.items():
        err = np.abs(wg[name].astype(np.float64) - r).max()
        assert err <= 2e-5 * (np.abs(r).max() + 1), f"{engine} {train} {optimizer} {name}: max err {err}"
        changed += int(not np.array_equal(r, weights(net().wrt(3))[name]))
    assert changed >= 2, "training changed no weight: the comparison would prove nothing"
    for hr, hg in zip(ref.history, got.history, strict=True):
        assert abs(hr["loss"] - hg["loss"]) <= 1e-4 * max(1.0, hr["loss"])
        assert abs(hr["accuracy"] - hg["accuracy"]) <= 1e-4 + 1 / len(x)  # a logit on a tie may flip one sample


@pytest.mark.parametrize("engine", ENGINES)
def test_cnn_all_layers_on_the_engine(engine: str) -> None:
    """train="all" of a CNN (convolutions with padding and stride, max pooling, flatten, fully connected): every
    layer's forward and backward on the engine, the same weights as python_ref's."""
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((20, 9, 9, 2)).astype(np.float32), rng.integers(0, 4, 20)
    cnn = Sequential([conv(5, 3, activation="relu"), max_pool(2), conv(6, 3, stride=2, padding="valid"), relu6(),
                      flatten(), linear(4)], input_shape=(9, 9, 2))
    assert_all_layers_train_as_python_ref(cnn, x, y, engine, optimizer="adam", batch_size=8, lr=0.01)


@pytest.mark.parametrize("engine", ENGINES)
def test_grouped_depthwise_and_average_pooling_on_the_engine(engine: str) -> None:
    """train="all" through a grouped convolution, a depthwise one (multiplier 2, stride 2), average and max pooling:
    the same weights as python_ref's."""
    rng = np.random.default_rng(4)
    x, y = rng.standard_normal((12, 8, 8, 2)).astype(np.float32), rng.integers(0, 3, 12)
    cnn = Sequential([conv(4, 3, groups=2, activation="relu"), depthwise(3, stride=2, multiplier=2),
                      avg_pool(3, 1), relu6(), conv(6, 1), max_pool(2), flatten(), linear(3)], input_shape=(8, 8, 2))
    m = read_wrt(cnn.wrt(0))
    assert [op.op for op in m.ops][:3] == ["CONV_2D", "CONV_2D", "AVERAGE_POOL_2D"]
    assert_all_layers_train_as_python_ref(cnn, x, y, engine, optimizer="sgd", batch_size=6, lr=0.05)


@pytest.mark.parametrize("engine", ENGINES)
def test_new_head_on_engine_features(engine: str) -> None:
    """head={"classes"}: a new head on the frozen network's features (computed by the engine), same as python_ref's."""
    x, y = data()
    kw = {"train": "head", "head": {"classes": ["a", "b"]}, "optimizer": "adam", "epochs": 3, "lr": 0.01,
          "progress": False}
    ref = wasmrt.train(net(), (x, y % 2), **kw)
    got = wasmrt.train(net(), (x, y % 2), engine=engine, **kw)
    for name, r in weights(ref.wrt).items():
        assert np.abs(weights(got.wrt)[name] - r).max() <= 2e-5 * (np.abs(r).max() + 1), name
    m = wasmrt.load(got.wrt, engine)
    assert m.run({m.inputs[0].name: x[:1]})["logits"].shape == (1, 2)


@pytest.mark.parametrize("engine", ENGINES)
def test_engine_bad_label_and_divergence(engine: str) -> None:
    x, y = data()
    bad = y.copy()
    bad[7] = 3
    with pytest.raises(InputError, match="label 3 of sample 7"):
        wasmrt.train(net(), (x, bad), train="head", engine=engine, progress=False)
    mlp = Sequential([flatten(), linear(16, activation="relu"), linear(3)], input_shape=(8, 8, 1))
    with pytest.raises(TrainingError, match="diverged"):
        wasmrt.train(mlp, (x * 1e4, y), optimizer="sgd", lr=1e8, epochs=3, engine=engine, progress=False)


@pytest.mark.parametrize("engine", ENGINES)
def test_engine_refuses_what_it_cannot_train(engine: str) -> None:
    x, y = data()
    gap = Sequential([conv(4, 3), global_avg_pool(), linear(3)], input_shape=(8, 8, 1))
    with pytest.raises(UnsupportedOpError, match=r"MEAN"):
        wasmrt.train(gap, (x[:4], y[:4]), train="all", engine=engine, progress=False)
    with pytest.raises(ValueError, match="engine must be"):
        wasmrt.train(net(), (x, y), engine="gpu", progress=False)


def test_engine_label_error_names_the_sample_in_the_engine() -> None:
    """The engine's own check (a caller bypassing python's check_labels): InputError naming the sample."""
    st = Steps("native")
    z = np.zeros((3, 4), np.float32)
    with pytest.raises(InputError, match="label 4 of sample 2"):
        st.call("wrt_train_softmax_xent", 3, 4, z, np.array([0, 1, 4], np.int32), Out(np.empty_like(z)),
                Out(np.zeros(1, np.float32)))
    with pytest.raises(wasmrt.errors.UnsupportedOpError, match="no activation gradient"):
        st.call("wrt_train_grad", 0, 4, z, z, Out(np.empty_like(z)), 0.0, 1.0)
    with pytest.raises(InputError, match="sizes must be positive"):
        st.call("wrt_train_dense_backward", 0, 4, 4, z, z, z, 0.0, 1.0, Out(z), None, Out(z), None)


# native: the best target of this CPU, then the scalar and AVX2 ones forced (WASMRT_FORCE_TARGET); wasm: each module;
# aarch64: the NEON build under qemu, per emulated CPU (tests/aarch64_steps.py)
TARGETS = [("native", None), ("native", "scalar"), ("native", "avx2"), ("wasm", "scalar"), ("wasm", "simd"),
           ("wasm", "relaxed"), *(("aarch64", cpu) for cpu in CPUS)]


def target_steps(engine: str, variant: str | None, monkeypatch: pytest.MonkeyPatch) -> Steps:
    """The training steps of one target of TARGETS (skips a native target this CPU lacks, or qemu where it lacks)."""
    if engine == "aarch64":
        assert variant is not None
        return QemuSteps(variant)
    if engine == "native" and variant:
        from wasmrt.engines import native

        monkeypatch.setenv("WASMRT_FORCE_TARGET", variant)
        if native.library().wrt_target_name().decode() != variant:
            pytest.skip(f"this CPU has no {variant} target")
    return Steps(engine, None if engine == "native" else variant)


@pytest.mark.parametrize(("engine", "variant"), TARGETS)
@pytest.mark.parametrize(("stride", "dilation", "pads", "groups"),
                         [(1, 1, (1, 1, 1, 1), 1), (2, 1, (0, 1, 1, 0), 3), (1, 2, (2, 0, 1, 2), 1),
                          (2, 1, (1, 1, 1, 1), 3)])
def test_conv_and_pool_gradients_per_op(engine: str, variant: str | None, stride: int, dilation: int,
                                        pads: tuple[int, ...], groups: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine's convolution (dense, and depthwise with multiplier 2: 3 input channels, 6 outputs, 3 groups), max
    and average pooling steps against python_ref.train.grads on one op, natively, in every wasm module and on
    aarch64 NEON: stride, dilation and asymmetric padding; tolerance 1e-6 * sqrt(K) * (max |ref| + 1), as tgemm's."""
    from python_ref import dispatch, shapes
    from python_ref.train import grads

    rng = np.random.default_rng(stride * 10 + dilation + groups)
    n, h, w, cin, k = 2, 7, 6, 3, 3
    cout = 5 if groups == 1 else 6
    x = rng.standard_normal((n, h, w, cin)).astype(np.float32)
    wt = rng.standard_normal((cout, k, k, cin // groups)).astype(np.float32)
    b = rng.standard_normal(cout).astype(np.float32)
    a = {"strides": (stride, stride), "dilations": (dilation, dilation), "pads": pads, "act_min": 0.0,
         "groups": groups}
    y = dispatch.run("CONV_2D", [x, wt, b], a)[0]
    gy = rng.standard_normal(y.shape).astype(np.float32)
    ref = grads.backward("CONV_2D", [x, wt, b], [y], [gy], a, [True, True, True])
    st = target_steps(engine, variant, monkeypatch)
    oh, ow = y.shape[1:3]
    geo = np.array([oh, ow, k, k, stride, stride, dilation, dilation, pads[0], pads[1], groups], np.int32)
    cols = np.empty((n * oh * ow, k * k * cin), np.float32)
    yy = np.empty_like(y)
    st.call("wrt_train_conv_forward", n, h, w, cin, cout, geo, x, wt, b, 0.0, np.inf, Out(cols),
            np.empty(wt.size, np.float32), Out(yy))
    full = shapes.full_attrs("CONV_2D", a)
    assert full["pads"] == pads
    assert np.abs(yy - y).max() <= 1e-5 * (np.abs(y).max() + 1)
    dx, dw, db = np.empty_like(x), np.empty_like(wt), np.empty_like(b)
    st.call("wrt_train_conv_backward", n, h, w, cin, cout, geo, cols, wt, yy, 0.0, np.inf, Out(gy.copy()),
            Out(np.empty_like(cols)), Out(dx), Out(dw), Out(db))
    for got, want in ((dx, ref[0]), (dw, ref[1]), (db, ref[2])):
        assert np.abs(got - want).max() <= 1e-6 * np.sqrt(cols.size) * (np.abs(want).max() + 1)
    ppads = (min(pads[0], 1), min(pads[1], 2), min(pads[2], 1), min(pads[3], 2))  # within the 2 x 3 window
    pa = {"kernel": (2, 3), "strides": (stride, stride), "pads": ppads}
    py = dispatch.run("MAX_POOL_2D", [x], pa)[0]
    pgy = rng.standard_normal(py.shape).astype(np.float32)
    pref = grads.backward("MAX_POOL_2D", [x], [py], [pgy], pa, [True])[0]
    pgeo = np.array([*py.shape[1:3], 2, 3, stride, stride, 1, 1, ppads[0], ppads[1], 0], np.int32)
    got_y, got_dx = np.empty_like(py), np.empty_like(x)
    st.call("wrt_train_pool", n, h, w, cin, pgeo, x, None, Out(got_y))
    st.call("wrt_train_pool", n, h, w, cin, pgeo, x, pgy, Out(got_dx))
    assert np.array_equal(got_y, py)  # a max: exact
    assert np.abs(got_dx - pref).max() <= 1e-6 * (np.abs(pref).max() + 1)  # up to 6 overlapping windows summed
    for incl in (False, True):
        aa = {**pa, "count_include_pad": incl}
        ay = dispatch.run("AVERAGE_POOL_2D", [x], aa)[0]
        aref = grads.backward("AVERAGE_POOL_2D", [x], [ay], [pgy], aa, [True])[0]
        ageo = np.array([*pgeo[:10], 1 + int(incl), ppads[2], ppads[3]], np.int32)
        st.call("wrt_train_pool", n, h, w, cin, ageo, x, None, Out(got_y))
        st.call("wrt_train_pool", n, h, w, cin, ageo, None, pgy, Out(got_dx))
        assert np.abs(got_y - ay).max() <= 1e-6 * (np.abs(ay).max() + 1), incl
        assert np.abs(got_dx - aref).max() <= 1e-6 * (np.abs(aref).max() + 1), incl
    with pytest.raises(InputError, match="bad window geometry"):
        bad = pgeo.copy()
        bad[4] = 0
        st.call("wrt_train_pool", n, h, w, cin, bad, x, None, Out(got_y))


@pytest.mark.parametrize(("engine", "variant"), TARGETS)
def test_dense_loss_and_optimizer_steps_per_op(engine: str, variant: str | None,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A fully connected layer with a fused relu6 (forward, and backward against python_ref.train.grads), both
    losses, and one SGD (momentum, weight decay) and one Adam step (step 3) over the layer's weights from a given
    state, against python_ref.train.losses / optim, on every target. Tolerances: tgemm's for the layer; the losses
    are computed in float64 and rounded once (2 ulp); the optimizers' 4e-7 * mag of tests/test_train_kernels.py."""
    from python_ref import dispatch
    from python_ref.train import grads, losses, optim

    st = target_steps(engine, variant, monkeypatch)
    rng = np.random.default_rng(44)
    rows, cin, cout = 6, 11, 5
    x = rng.standard_normal((rows, cin)).astype(np.float32)
    w = rng.standard_normal((cout, cin)).astype(np.float32)
    b = rng.standard_normal(cout).astype(np.float32)
    a = {"act_min": 0.0, "act_max": 6.0}
    y = dispatch.run("FULLY_CONNECTED", [x, w, b], a)[0]
    assert (y == 0).sum() > 0 and (y > 0).sum() > rows  # the clamp masks some gradients, not all
    got_y = np.empty_like(y)
    st.call("wrt_train_dense_forward", rows, cin, cout, x, w, b, 0.0, 6.0, np.empty(w.size, np.float32), Out(got_y))
    assert np.abs(got_y - y).max() <= 1e-6 * np.sqrt(cin) * (np.abs(y).max() + 1)
    gy = rng.standard_normal(y.shape).astype(np.float32)
    ref = grads.backward("FULLY_CONNECTED", [x, w, b], [y], [gy], a, [True, True, True])
    dx, dw, db = np.empty_like(x), np.empty_like(w), np.empty_like(b)
    st.call("wrt_train_dense_backward", rows, cin, cout, x, w, got_y, 0.0, 6.0, Out(gy.copy()), Out(dx), Out(dw),
            Out(db))
    for got, want, k in ((dx, ref[0], cout), (dw, ref[1], rows), (db, ref[2], rows)):
        assert np.abs(got - want).max() <= 1e-6 * np.sqrt(k) * (np.abs(want).max() + 1)

    labels = np.array([0, 4, 2, 2, 1, 3], np.int32)
    loss, dz = np.zeros(1, np.float32), np.empty_like(y)
    st.call("wrt_train_softmax_xent", rows, cout, y, labels, Out(dz), Out(loss))
    want_loss, want_dz = losses.softmax_cross_entropy(y, labels)
    assert abs(loss[0] - want_loss) <= 2.4e-7 * abs(want_loss)
    assert (np.abs(dz - want_dz) <= 2.4e-7 * np.abs(want_dz)).all()
    st.call("wrt_train_mse", y.size, y, gy, Out(dz), Out(loss))
    want_loss, want_dz = losses.mean_squared_error(y, gy)
    assert abs(loss[0] - want_loss) <= 2.4e-7 * abs(want_loss)
    assert (np.abs(dz - want_dz) <= 2.4e-7 * np.abs(want_dz)).all()

    # the engine takes float32 hyperparameters: python_ref gets the same values (0.999 as a float32 moves Adam's
    # 1 - b2 by 1.3e-5 relative, beyond the bound on v where |g| is large)
    lr, wd, g = float(np.float32(0.01)), float(np.float32(0.05)), ref[1]
    b1, b2, eps = (float(np.float32(h)) for h in (*optim.ADAM_BETAS, optim.ADAM_EPS))
    s1 = rng.standard_normal(w.shape).astype(np.float32)
    s2 = rng.uniform(0.5, 2.0, w.shape).astype(np.float32)  # Adam's v away from 0, as the kernel test's
    gd = np.abs(g.astype(np.float64)) + wd * np.abs(w)
    for kind in ("sgd", "adam"):
        p, m, v = w.copy(), s1.copy(), s2.copy()
        params = {"w": w.copy()}
        if kind == "sgd":
            opt: optim.Optimizer = optim.SGD(lr=lr, momentum=b1, weight_decay=wd)
            opt.state["w"] = {"buf": s1.copy()}
            st.call("wrt_train_sgd", p.size, Out(p), g, Out(m), lr, b1, wd)
            m1 = b1 * np.abs(s1) + gd
            checks = [(p, "w", np.abs(w) + lr * m1), (m, "buf", m1)]
        else:
            opt = optim.Adam(lr=lr, betas=(b1, b2), eps=eps, weight_decay=wd)
            opt.state["w"] = {"m": s1.copy(), "v": s2.copy()}
            opt.steps = 2
            st.call("wrt_train_adam", p.size, Out(p), g, Out(m), Out(v), lr, b1, b2, eps, wd, 3)
            m1 = b1 * np.abs(s1) + (1 - b1) * gd
            m2 = b2 * s2 + (1 - b2) * gd * gd
            step = lr * (m1 / (1 - b1 ** 3)) / np.sqrt(m2 / (1 - b2 ** 3))
            checks = [(p, "w", np.abs(w) + 2 * step), (m, "m", m1), (v, "v", m2)]
        opt.step(params, {"w": g})
        assert not np.array_equal(p, w), kind
        for got, name, mag in checks:
            want = params["w"] if name == "w" else opt.state["w"][name]
            assert (np.abs(got.astype(np.float64) - want) <= 4e-7 * mag).all(), f"{kind} {name}"


def test_aarch64_driver_refuses_a_bad_call() -> None:
    """The driver's `call` names what is wrong with a request instead of calling with misread arguments; an engine
    error comes back as the export's code and message."""
    st = QemuSteps("max")
    blob = np.zeros(4, np.float32).tobytes()
    with pytest.raises(RuntimeError, match=r"wrt_train_sgd takes \(zaaafff\), the host sent \(zaaff\)"):
        st.request(request("wrt_train_sgd", "zaaff", [1, 0, 0, 0, 0], blob))
    with pytest.raises(RuntimeError, match="wrt_load is not a training or image export"):
        st.request(request("wrt_load", "", [], b""))
    with pytest.raises(RuntimeError, match="argument 1 lies past the blob"):
        st.request(request("wrt_train_mse", "zaaaa", [1, 64, 0, 0, 0], blob))
    with pytest.raises(RuntimeError, match="a short or malformed request"):
        st.request(request("wrt_train_mse", "zaaaa", [1, 0, 0, 0, 0], blob)[:20])
    with pytest.raises(InputError, match="sgd: lr > 0"):
        st.call("wrt_train_sgd", 1, Out(np.zeros(1, np.float32)), np.zeros(1, np.float32),
                Out(np.zeros(1, np.float32)), 0.0, 0.9, 0.0)
