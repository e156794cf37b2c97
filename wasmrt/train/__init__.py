"""Training in Python: `wasmrt.train(model, dataset, ...)` and the layer API for models built from scratch.

    from wasmrt.train import Sequential, conv, max_pool, flatten, linear
    net = Sequential([conv(8, 3, activation="relu"), max_pool(2), flatten(), linear(10)], input_shape=(16, 16, 1))
    tuned = wasmrt.train(net, (x, labels), optimizer="adam", epochs=5)
    wasmrt.load(tuned.wrt, "wasm")

docs/training.md is the user's guide; python_ref/train holds the semantics.
"""

import sys
import types

from wasmrt.train.export import graph_from_wrt
from wasmrt.train.layers import (
    Layer,
    Sequential,
    activation,
    avg_pool,
    conv,
    depthwise,
    flatten,
    global_avg_pool,
    hard_swish,
    linear,
    max_pool,
    relu,
    relu6,
    sigmoid,
    tanh,
)
from wasmrt.train.trainer import Trained, accuracy, predict, train

__all__ = ["Layer", "Sequential", "Trained", "accuracy", "activation", "avg_pool", "conv", "depthwise", "flatten",
           "global_avg_pool", "graph_from_wrt", "hard_swish", "linear", "max_pool", "predict", "relu", "relu6",
           "sigmoid", "tanh", "train"]


class _CallableModule(types.ModuleType):
    """`wasmrt.train(...)` calls train() while `wasmrt.train.Sequential` etc. stay reachable: one public name."""

    def __call__(self, *args, **kwargs) -> Trained:
        return train(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
