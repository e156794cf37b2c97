"""Training kernels (kernels_wasm/gen/kernels/train.py) on every target vs python_ref/train.

Tolerances (python_ref computes in float64 and rounds once; the kernels compute in float32):
- tgemm (dW = dY^T X, dX = dY W, db = sum dY): 1e-6 * sqrt(K) * mag + 1e-30, mag = the same product on |inputs|
  (as the forward GEMM's: K float32 roundings in one chain).
- clamp gradient (relu, relu6, fused clamps): exact. hard-swish: 3 roundings, 4e-7 |dx| (and 1.2e-7 |dy| where the
  slope x/3 + 1/2 is near 0). sigmoid, tanh: 2 roundings of a product plus 1 - y (its cancellation bounded by
  1.2e-7 |dy| absolute): 3.6e-7 |dx| + 1.2e-7 |dy|.
- SGD, Adam: one step against python_ref.train.optim from the same state: 4e-7 * mag per element, mag the sum of the
  magnitudes of the terms of the new value (buf: momentum |buf| + |g| + wd |p|; p: |p| + lr * buf's mag; Adam: the
  same for m and v, and twice the step's magnitude for p); Adam's v is drawn away from 0, where the division by
  sqrt(v) + eps would amplify m's rounding beyond any useful bound.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_kernels import Case, case  # noqa: F401 - the per-target kernel fixture

from kernels_wasm.gen.harness import Batch
from kernels_wasm.gen.kernels.train import GRAD
from python_ref.train import grads, optim

RNG_SEED = 44


def _tgemm_case(b: Batch, cs: Case, m: int, n: int, k: int, a_t: bool, acc: bool,
                rng: np.random.Generator) -> tuple[int, np.ndarray, np.ndarray]:
    """C [m, n] = (acc ? C0 : 0) + A B; A stored transposed ([k, m]) when a_t. Returns (c offset, reference, mag)."""
    a = rng.standard_normal((m, k)).astype(np.float32)
    bm = rng.standard_normal((k, n + 3)).astype(np.float32)  # ldb = n + 3: a padded stride
    c0 = rng.standard_normal((m, n + 1)).astype(np.float32)
    a_store = np.ascontiguousarray(a.T) if a_t else a
    a_rs, a_cs = (1, m) if a_t else (k, 1)
    ao, bo = b.put(a_store), b.put(bm)
    co = b.out(m * (n + 1), 0.0)
    b.data[co:co + c0.nbytes] = c0.tobytes()
    b.cmd("tgemm", cs.t, m, n, k, ao, a_rs, a_cs, bo, n + 3, co, n + 1, int(acc))
    ref = a.astype(np.float64) @ bm[:, :n].astype(np.float64) + (c0[:, :n] if acc else 0.0)
    mag = np.abs(a).astype(np.float64) @ np.abs(bm[:, :n]) + (np.abs(c0[:, :n]) if acc else 0.0)
    return co, ref, mag


def test_tgemm(case: Case) -> None:  # noqa: F811
    """Shapes around the row tiles (2 in wasm, 4 elsewhere) and the column vectors, transposed and plain A,
    accumulating or not."""
    rng = np.random.default_rng(RNG_SEED)
    vl = case.isa.vl
    ms = [1, 3, 4, 5, 9] if not case.small else [1, 5]
    ns = sorted({1, vl - 1 or 1, vl, 2 * vl + 1, 4 * vl + 3}) if not case.small else [1, 2 * vl + 1]
    b, checks = Batch(), []
    for m in ms:
        for n in ns:
            for k in (1, 7, 64):
                for a_t in (False, True):
                    acc = bool((m + n + k) % 2)
                    co, ref, mag = _tgemm_case(b, case, m, n, k, a_t, acc, rng)
                    checks.append((co, ref, mag, (m, n, k, a_t, acc)))
    res = case.r.run(b)
    for co, ref, mag, what in checks:
        m, n, k = what[:3]
        got = res.f32(co, m * (n + 1)).reshape(m, n + 1)
        err = np.abs(got[:, :n] - ref)
        tol = 1e-6 * np.sqrt(k + 1) * mag + 1e-30
        assert (err <= tol).all(), f"{case.name} tgemm m,n,k,a_t,acc={what}: max err {err.max()}"


def test_tgemm_leaves_padding_alone(case: Case) -> None:  # noqa: F811
    """Columns past n and rows past m of C stay untouched (NaN-filled: any write shows)."""
    b = Batch()
    m, n, k = 5, 2 * case.isa.vl + 1, 3
    a = b.put(np.ones((m, k), np.float32))
    w = b.put(np.ones((k, n + 5), np.float32))
    co = b.out((m + 1) * (n + 5))  # NaN
    b.cmd("tgemm", case.t, m, n, k, a, k, 1, w, n + 5, co, n + 5, 0)
    got = case.r.run(b).f32(co, (m + 1) * (n + 5)).reshape(m + 1, n + 5)
    assert (got[:m, :n] == k).all()
    assert np.isnan(got[:m, n:]).all() and np.isnan(got[m]).all()


def test_dense_gradients_through_tgemm(case: Case) -> None:  # noqa: F811
    """A fully connected layer's dX, dW and db as the engine computes them (dW = dY^T X, dX = dY W, db = a 1 with
    both strides 0 times dY) vs python_ref.train.grads.fully_connected_backward."""
    rng = np.random.default_rng(RNG_SEED + 1)
    nb, cin, cout = (6, 37, 11) if not case.small else (3, 9, 5)
    x = rng.standard_normal((nb, cin)).astype(np.float32)
    w = rng.standard_normal((cout, cin)).astype(np.float32)
    gy = rng.standard_normal((nb, cout)).astype(np.float32)
    y = (x @ w.T).astype(np.float32)
    ref = grads.backward("FULLY_CONNECTED", [x, w, np.zeros(cout, np.float32)], [y], [gy], {}, [True, True, True])
    b = Batch()
    xo, wo, go, one = b.put(x), b.put(w), b.put(gy), b.put(np.ones(1, np.float32))
    dx, dw, db = b.out(nb * cin), b.out(cout * cin), b.out(cout)
    b.cmd("tgemm", case.t, nb, cin, cout, go, cout, 1, wo, cin, dx, cin, 0)
    b.cmd("tgemm", case.t, cout, cin, nb, go, 1, cout, xo, cin, dw, cin, 0)
    b.cmd("tgemm", case.t, 1, cout, nb, one, 0, 0, go, cout, db, cout, 0)
    res = case.r.run(b)
    for off, r, kk, mag in ((dx, ref[0], cout, np.abs(gy) @ np.abs(w)), (dw, ref[1], nb, np.abs(gy).T @ np.abs(x)),
                            (db, ref[2], nb, np.abs(gy).sum(0))):
        got = res.f32(off, r.size).reshape(r.shape)
        assert (np.abs(got - r) <= 1e-6 * np.sqrt(kk + 1) * mag + 1e-30).all(), case.name


def _grad_ref(op: str, v: np.ndarray, dy: np.ndarray, lo: float, hi: float) -> np.ndarray:
    if op == "clamp":
        x = v  # the clamp's output lies strictly inside exactly where its input does
        return grads.backward("CLIP", [x], [v], [dy], {"min": lo, "max": hi}, [True])[0]
    name = {"hard_swish": "HARD_SWISH", "sigmoid": "SIGMOID", "tanh": "TANH"}[op]
    xs = [v] if op == "hard_swish" else [np.zeros_like(v)]
    ys = [np.zeros_like(v)] if op == "hard_swish" else [v]
    return grads.backward(name, xs, ys, [dy], {}, [True])[0]


@pytest.mark.parametrize("op", list(GRAD))
def test_activation_gradient(case: Case, op: str) -> None:  # noqa: F811
    rng = np.random.default_rng(RNG_SEED + 2)
    vl = case.isa.vl
    lo, hi = 0.0, 6.0
    b, checks = Batch(), []
    for n in sorted({1, vl - 1 or 1, vl, 3 * vl + 1, 101}):
        if op == "clamp":  # values on the bounds and just inside them
            v = np.clip(rng.uniform(-2, 8, n), lo, hi).astype(np.float32)
            v[::5] = np.float32(lo)
            v[1::7] = np.nextafter(np.float32(lo), np.float32(1))
        elif op == "hard_swish":
            v = rng.uniform(-5, 5, n).astype(np.float32)
            v[::6] = np.float32(-3.0)
            v[1::6] = np.float32(3.0)
        elif op == "sigmoid":
            v = rng.uniform(0, 1, n).astype(np.float32)
        else:
            v = rng.uniform(-1, 1, n).astype(np.float32)
        dy = rng.standard_normal(n).astype(np.float32)
        vo, go, po = b.put(v), b.put(dy), b.put(np.array([lo, hi], np.float32))
        dx = b.out(n)
        b.cmd("grad", case.t, list(GRAD).index(op), n, vo, go, dx, po)
        checks.append((dx, _grad_ref(op, v, dy, lo, hi), dy))
    res = case.r.run(b)
    for dx, ref, dy in checks:
        got = res.f32(dx, ref.size)
        tol = {"clamp": 0.0, "hard_swish": 4e-7 * np.abs(ref) + 1.2e-7 * np.abs(dy)}.get(
            op, 3.6e-7 * np.abs(ref) + 1.2e-7 * np.abs(dy))
        err = np.abs(got.astype(np.float64) - ref)
        assert (err <= tol).all(), f"{case.name} {op} n={ref.size}: max err {err.max()}"


def _opt_case(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    p = rng.standard_normal(n).astype(np.float32)
    g = rng.standard_normal(n).astype(np.float32)
    s1 = rng.standard_normal(n).astype(np.float32)
    s2 = rng.uniform(0.5, 2.0, n).astype(np.float32)  # Adam's v: away from 0 (see the tolerance note)
    return {"p": p, "g": g, "s1": s1, "s2": s2}


@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_optimizer_step(case: Case, kind: str) -> None:  # noqa: F811
    """One step of each optimizer from a given state (step 3 for Adam's bias correction) vs python_ref's."""
    rng = np.random.default_rng(RNG_SEED + 3)
    lr, wd = 0.01, 0.05
    b, checks = Batch(), []
    for n in sorted({1, case.isa.vl + 1, 77}):
        d = _opt_case(rng, n)
        po = b.out(n, 0.0)
        b.data[po:po + 4 * n] = d["p"].tobytes()
        s1 = b.out(n, 0.0)
        b.data[s1:s1 + 4 * n] = d["s1"].tobytes()
        go = b.put(d["g"])
        if kind == "sgd":
            opt = optim.SGD(lr=lr, momentum=0.9, weight_decay=wd)
            opt.state["w"] = {"buf": d["s1"].copy()}
            prm = b.put(np.array([lr, 0.9, wd], np.float32))
            b.cmd("sgd", case.t, n, po, go, s1, prm)
        else:
            opt = optim.Adam(lr=lr, weight_decay=wd)
            opt.state["w"] = {"m": d["s1"].copy(), "v": d["s2"].copy()}
            opt.steps = 2
            s2 = b.out(n, 0.0)
            b.data[s2:s2 + 4 * n] = d["s2"].tobytes()
            t = 3
            prm = b.put(np.array([lr, 0.9, 0.999, 1e-8, wd, 1 - 0.9 ** t, 1 - 0.999 ** t], np.float32))
            b.cmd("adam", case.t, n, po, go, s1, s2, prm)
        params = {"w": d["p"].copy()}
        opt.step(params, {"w": d["g"]})
        st = opt.state["w"]
        # magnitudes of each new value's terms: a float32 sum of terms is within a few ulp of their |sum|
        gd = np.abs(d["g"].astype(np.float64)) + wd * np.abs(d["p"])
        if kind == "sgd":
            m1 = 0.9 * np.abs(d["s1"]) + gd
            refs = [(po, params["w"], np.abs(d["p"]) + lr * m1), (s1, st["buf"], m1)]
        else:
            m1 = 0.9 * np.abs(d["s1"]) + 0.1 * gd
            m2 = 0.999 * d["s2"] + 0.001 * gd * gd
            step = lr * (m1 / (1 - 0.9 ** 3)) / np.sqrt(m2 / (1 - 0.999 ** 3))
            refs = [(po, params["w"], np.abs(d["p"]) + 2 * step), (s1, st["m"], m1), (s2, st["v"], m2)]
        checks.append((n, refs))
    res = case.r.run(b)
    for n, refs in checks:
        for off, ref, mag in refs:
            err = np.abs(res.f32(off, n).astype(np.float64) - ref)
            assert (err <= 4e-7 * mag).all(), f"{case.name} {kind} n={n}: max err {err.max()}"


def test_sgd_first_step_from_zero_state_is_exact(case: Case) -> None:  # noqa: F811
    """buf starting at zeros: the first step's buf is g (+ wd p) exactly, python_ref's rule."""
    n = 9
    g = np.arange(1, n + 1, dtype=np.float32) / 7
    b = Batch()
    po = b.out(n, 1.0)
    buf = b.out(n, 0.0)
    b.cmd("sgd", case.t, n, po, b.put(g), buf, b.put(np.array([0.5, 0.9, 0.0], np.float32)))
    res = case.r.run(b)
    assert (res.f32(buf, n) == g).all()
