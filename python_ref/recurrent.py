"""Reference of the recurrent ops LSTM, GRU and RNN (python_ref/opdefs.py has their inputs and layouts).

ONNX semantics (onnxruntime's where the spec is silent): time-major x [T, B, I]; for batch row b only the first
seq_lens[b] steps run (a reverse direction runs them backwards from seq_lens[b] - 1); outputs past them are 0, and
the final states of a row with seq_lens[b] == 0 are 0. clip bounds each gate's input after its bias. Everything is
computed in float64 and rounded once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from python_ref import shapes
from python_ref.opdefs import Activation, Coupling, Direction

F64 = np.float64
LN_EPSILON = 1e-8  # TFLite's layer-normalized LSTM
DEFAULT_ACTIVATIONS = {"LSTM": (Activation.SIGMOID, Activation.TANH, Activation.TANH),
                       "GRU": (Activation.SIGMOID, Activation.TANH), "RNN": (Activation.TANH,)}
# alpha, beta of each activation when the op gives none (ONNX's defaults)
DEFAULT_PARAMS = {Activation.AFFINE: (1.0, 0.0), Activation.LEAKY_RELU: (0.01, 0.0),
                  Activation.THRESHOLDED_RELU: (1.0, 0.0), Activation.SCALED_TANH: (1.0, 1.0),
                  Activation.HARD_SIGMOID: (0.2, 0.5), Activation.ELU: (1.0, 0.0)}


def _sigmoid(x: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def activation(code: int, alpha: float, beta: float) -> Callable[[np.ndarray], np.ndarray]:
    a = Activation(code)
    with np.errstate(over="ignore"):
        return {
            Activation.SIGMOID: _sigmoid,
            Activation.TANH: np.tanh,
            Activation.RELU: lambda x: np.maximum(x, 0.0),
            Activation.AFFINE: lambda x: alpha * x + beta,
            Activation.LEAKY_RELU: lambda x: np.where(x >= 0, x, alpha * x),
            Activation.THRESHOLDED_RELU: lambda x: np.where(x > alpha, x, 0.0),
            Activation.SCALED_TANH: lambda x: alpha * np.tanh(beta * x),
            Activation.HARD_SIGMOID: lambda x: np.clip(alpha * x + beta, 0.0, 1.0),
            Activation.ELU: lambda x: np.where(x >= 0, x, alpha * np.expm1(np.minimum(x, 0.0))),
            Activation.SOFTSIGN: lambda x: x / (1.0 + np.abs(x)),
            Activation.SOFTPLUS: lambda x: np.logaddexp(0.0, x),
            Activation.RELU6: lambda x: np.clip(x, 0.0, 6.0),
            Activation.IDENTITY: lambda x: x,
        }[a]


def activations(op: str, a: dict[str, Any], d: int) -> list[list[Callable[[np.ndarray], np.ndarray]]]:
    """Per direction, the op's activation functions with their alpha and beta."""
    codes = [int(c) for c in a["activations"]] or [int(c) for c in DEFAULT_ACTIVATIONS[op]] * d
    alphas, betas = list(a["activation_alpha"]), list(a["activation_beta"])
    fns = []
    for k, c in enumerate(codes):
        da, db = DEFAULT_PARAMS.get(Activation(c), (0.0, 0.0))
        fns.append(activation(c, float(alphas[k]) if alphas else da, float(betas[k]) if betas else db))
    n = len(codes) // d
    return [fns[i * n:(i + 1) * n] for i in range(d)]


def _reverse(a: dict[str, Any], d: int) -> bool:
    direction = Direction(int(a["direction"]))
    return direction == Direction.REVERSE or (direction == Direction.BIDIRECTIONAL and d == 1)


def _inputs(xs: list[np.ndarray | None], n: int) -> list[np.ndarray | None]:
    return [xs[k] if k < len(xs) else None for k in range(n)]


def _lengths(seq: np.ndarray | None, t: int, b: int, op: str) -> np.ndarray:
    if seq is None:
        return np.full(b, t, np.int64)
    lens = seq.astype(np.int64)
    if np.any((lens < 0) | (lens > t)):
        raise ValueError(f"{op}: seq_lens {lens.tolist()} must be in [0, {t}]")
    return lens


def _clip(x: np.ndarray, c: float) -> np.ndarray:
    return np.clip(x, -c, c) if np.isfinite(c) else x


def _layer_norm(g: np.ndarray, coef: np.ndarray) -> np.ndarray:
    mean = g.mean()
    return (g - mean) / np.sqrt(((g - mean) ** 2).mean() + LN_EPSILON) * coef


def _lstm(xs: list[np.ndarray | None], a: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x, w, r, b, seq, h0, c0, p, pw, pb, ln = [None if v is None else v.astype(F64) if v.dtype.kind == "f" else v
                                              for v in _inputs(xs, 11)]
    t_n, b_n, _ = x.shape
    d_n, h4, _ = w.shape
    h_n = h4 // 4
    p_n = r.shape[2]
    lens = _lengths(seq, t_n, b_n, "LSTM")
    clip, cell_clip, proj_clip = float(a["clip"]), float(a["cell_clip"]), float(a["proj_clip"])
    coupling = Coupling(int(a["coupling"]))
    y = np.zeros((t_n, d_n, b_n, p_n))
    yh, yc = np.zeros((d_n, b_n, p_n)), np.zeros((d_n, b_n, h_n))
    for d, (f, g, hf) in enumerate(activations("LSTM", a, d_n)):
        bias = np.zeros(4 * h_n) if b is None else b[d, :4 * h_n] + b[d, 4 * h_n:]
        peep = np.zeros((3, h_n)) if p is None else p[d].reshape(3, h_n)  # i, o, f

        def gate(k: int, pre: np.ndarray, fn: Callable[[np.ndarray], np.ndarray], d: int = d,
                 bias: np.ndarray = bias) -> np.ndarray:
            if ln is not None:
                pre = _layer_norm(pre, ln[d, k])
            return fn(_clip(pre + bias[k * h_n:(k + 1) * h_n], clip))

        for bi in range(b_n):
            h = np.zeros(p_n) if h0 is None else h0[d, bi]
            c = np.zeros(h_n) if c0 is None else c0[d, bi]
            steps = range(int(lens[bi]))
            for t in (reversed(steps) if _reverse(a, d) else steps):
                pre = w[d] @ x[t, bi] + r[d] @ h
                gi, go, gf, gc = (pre[k * h_n:(k + 1) * h_n] for k in range(4))
                if coupling != Coupling.INPUT_FROM_FORGET:
                    i = gate(0, gi + peep[0] * c, f)
                if coupling != Coupling.FORGET_FROM_INPUT:
                    fg = gate(2, gf + peep[2] * c, f)
                if coupling == Coupling.FORGET_FROM_INPUT:
                    fg = 1.0 - i
                elif coupling == Coupling.INPUT_FROM_FORGET:
                    i = 1.0 - fg
                c = _clip(fg * c + i * gate(3, gc, g), cell_clip)
                h = gate(1, go + peep[1] * c, f) * hf(c)
                if pw is not None:
                    h = _clip(pw[d] @ h + (0.0 if pb is None else pb[d]), proj_clip)
                y[t, d, bi] = h
            if lens[bi] > 0:
                yh[d, bi], yc[d, bi] = h, c
    dt = xs[0].dtype
    return y.astype(dt), yh.astype(dt), yc.astype(dt)


def _gru(xs: list[np.ndarray | None], a: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    x, w, r, b, seq, h0 = [None if v is None else v.astype(F64) if v.dtype.kind == "f" else v
                           for v in _inputs(xs, 6)]
    t_n, b_n, _ = x.shape
    d_n, h3, _ = w.shape
    h_n = h3 // 3
    lens = _lengths(seq, t_n, b_n, "GRU")
    clip, lbr = float(a["clip"]), bool(a["linear_before_reset"])
    y, yh = np.zeros((t_n, d_n, b_n, h_n)), np.zeros((d_n, b_n, h_n))
    for d, (f, g) in enumerate(activations("GRU", a, d_n)):
        wb = np.zeros(3 * h_n) if b is None else b[d, :3 * h_n]
        rb = np.zeros(3 * h_n) if b is None else b[d, 3 * h_n:]
        rz, rr, rh = (r[d, k * h_n:(k + 1) * h_n] for k in range(3))
        for bi in range(b_n):
            h = np.zeros(h_n) if h0 is None else h0[d, bi]
            steps = range(int(lens[bi]))
            for t in (reversed(steps) if _reverse(a, d) else steps):
                xw = w[d] @ x[t, bi] + wb
                z = f(_clip(xw[:h_n] + rz @ h + rb[:h_n], clip))
                rt = f(_clip(xw[h_n:2 * h_n] + rr @ h + rb[h_n:2 * h_n], clip))
                rec = rt * (rh @ h + rb[2 * h_n:]) if lbr else rh @ (rt * h) + rb[2 * h_n:]
                hh = g(_clip(xw[2 * h_n:] + rec, clip))
                h = (1.0 - z) * hh + z * h
                y[t, d, bi] = h
            if lens[bi] > 0:
                yh[d, bi] = h
    dt = xs[0].dtype
    return y.astype(dt), yh.astype(dt)


def _rnn(xs: list[np.ndarray | None], a: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    x, w, r, b, seq, h0 = [None if v is None else v.astype(F64) if v.dtype.kind == "f" else v
                           for v in _inputs(xs, 6)]
    t_n, b_n, _ = x.shape
    d_n, h_n, _ = w.shape
    lens = _lengths(seq, t_n, b_n, "RNN")
    clip = float(a["clip"])
    y, yh = np.zeros((t_n, d_n, b_n, h_n)), np.zeros((d_n, b_n, h_n))
    for d, (f,) in enumerate(activations("RNN", a, d_n)):
        bias = np.zeros(h_n) if b is None else b[d, :h_n] + b[d, h_n:]
        for bi in range(b_n):
            h = np.zeros(h_n) if h0 is None else h0[d, bi]
            steps = range(int(lens[bi]))
            for t in (reversed(steps) if _reverse(a, d) else steps):
                h = f(_clip(w[d] @ x[t, bi] + r[d] @ h + bias, clip))
                y[t, d, bi] = h
            if lens[bi] > 0:
                yh[d, bi] = h
    dt = xs[0].dtype
    return y.astype(dt), yh.astype(dt)


KERNELS: dict[str, Callable[[list[np.ndarray | None], dict[str, Any]], Any]] = {
    "LSTM": _lstm, "GRU": _gru, "RNN": _rnn,
}
assert set(KERNELS) == set(shapes.RNN_GATES)
