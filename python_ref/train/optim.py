"""Optimizers: the update of float32 parameters from their float32 gradients.

Each step computes in float64 from the float32 parameter, gradient and state, and rounds the new parameter and state
to float32 (what a float32 engine stores between steps). Weight decay is L2 regularisation: `weight_decay * p` is
added to the gradient before the update (PyTorch's `weight_decay` of SGD and Adam; not AdamW's decoupled decay).
"""

from __future__ import annotations

import numpy as np

F64 = np.float64
F32 = np.float32
DEFAULT_LR = {"sgd": 0.01, "adam": 0.001}
DEFAULT_MOMENTUM = 0.9  # the trainers' SGD momentum when none is given
ADAM_BETAS = (0.9, 0.999)
ADAM_EPS = 1e-8


class Optimizer:
    """step(params, grads) updates params (name -> float32 array) in place."""

    def __init__(self, lr: float, weight_decay: float = 0.0) -> None:
        if not lr > 0.0:
            raise ValueError(f"learning rate must be > 0, got {lr}")
        if weight_decay < 0.0:
            raise ValueError(f"weight_decay must be >= 0, got {weight_decay}")
        self.lr, self.weight_decay = float(lr), float(weight_decay)
        self.state: dict[str, dict[str, np.ndarray]] = {}
        self.steps = 0

    def _grad(self, p: np.ndarray, g: np.ndarray) -> np.ndarray:
        g = g.astype(F64)
        return g + self.weight_decay * p.astype(F64) if self.weight_decay else g

    def step(self, params: dict[str, np.ndarray], grads: dict[str, np.ndarray]) -> None:
        self.steps += 1
        for name, g in grads.items():
            p = params[name]
            p[...] = self._update(name, p, self._grad(p, g)).astype(F32)

    def _update(self, name: str, p: np.ndarray, g: np.ndarray) -> np.ndarray:
        raise NotImplementedError


class SGD(Optimizer):
    """buf = momentum * buf + g (buf = g at the first step); p -= lr * buf. No dampening, no Nesterov."""

    def __init__(self, lr: float = DEFAULT_LR["sgd"], momentum: float = 0.0, weight_decay: float = 0.0) -> None:
        super().__init__(lr, weight_decay)
        if not 0.0 <= momentum < 1.0:
            raise ValueError(f"momentum must be in [0, 1), got {momentum}")
        self.momentum = float(momentum)

    def _update(self, name: str, p: np.ndarray, g: np.ndarray) -> np.ndarray:
        if self.momentum:
            st = self.state.get(name)
            buf = g if st is None else self.momentum * st["buf"].astype(F64) + g
            self.state[name] = {"buf": buf.astype(F32)}
            g = buf
        return p.astype(F64) - self.lr * g


class Adam(Optimizer):
    """m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2; p -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)."""

    def __init__(self, lr: float = DEFAULT_LR["adam"], betas: tuple[float, float] = ADAM_BETAS, eps: float = ADAM_EPS,
                 weight_decay: float = 0.0) -> None:
        super().__init__(lr, weight_decay)
        if not all(0.0 <= b < 1.0 for b in betas):
            raise ValueError(f"betas must be in [0, 1), got {betas}")
        self.b1, self.b2 = float(betas[0]), float(betas[1])
        self.eps = float(eps)

    def _update(self, name: str, p: np.ndarray, g: np.ndarray) -> np.ndarray:
        st = self.state.get(name) or {"m": np.zeros(p.shape, F32), "v": np.zeros(p.shape, F32)}
        m = self.b1 * st["m"].astype(F64) + (1.0 - self.b1) * g
        v = self.b2 * st["v"].astype(F64) + (1.0 - self.b2) * g * g
        self.state[name] = {"m": m.astype(F32), "v": v.astype(F32)}
        t = self.steps
        mhat = m / (1.0 - self.b1 ** t)
        vhat = v / (1.0 - self.b2 ** t)
        return p.astype(F64) - self.lr * mhat / (np.sqrt(vhat) + self.eps)


OPTIMIZERS = {"sgd": SGD, "adam": Adam}
