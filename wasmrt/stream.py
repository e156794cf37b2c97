"""Step-by-step runs of a model whose state is an input and an output (recurrent layers: an LSTM's h and c).

    s = wasmrt.Stream(model)                  # pairs from the model: TFLite LSTM state, `wasmrt convert --state`
    for chunk in chunks:
        out = s.step({"x": chunk})             # the state from the previous step (zeros at first) fed back

pairs maps each state output to the input it feeds: {output name: input name}. Models record theirs in metadata
props "state.<output>" = "<input>".
"""

from __future__ import annotations

from typing import Any

import numpy as np

from wasmrt.engines.base import Model
from wasmrt.errors import InputError


def state_pairs(metadata: dict[str, Any]) -> dict[str, str]:
    props = metadata.get("props", {}) if metadata else {}
    return {k[len("state."):]: v for k, v in props.items() if k.startswith("state.")}


class Stream:
    def __init__(self, model: Model, pairs: dict[str, str] | None = None) -> None:
        self.model = model
        self.pairs = dict(pairs if pairs is not None else state_pairs(getattr(model, "metadata", {})))
        if not self.pairs:
            raise InputError("this model has no state pairs: give Stream(model, {state_output: state_input})")
        ins = {s.name: s for s in model.inputs}
        outs = {s.name for s in model.outputs}
        for o, i in self.pairs.items():
            if o not in outs or i not in ins:
                raise InputError(f"state pair {o} -> {i}: the model has no output {o!r} or no input {i!r}")
        self.state: dict[str, np.ndarray] = {}
        self.reset()

    def reset(self) -> None:
        """Back to the zero state."""
        specs = {s.name: s for s in self.model.inputs}
        self.state = {i: np.zeros(specs[i].shape, specs[i].dtype) for i in self.pairs.values()}

    def step(self, feeds: dict[str, Any]) -> dict[str, np.ndarray]:
        """One run: feeds holds the other inputs; returns every output and keeps the new state."""
        out = self.model.run({**feeds, **self.state})
        self.state = {i: out[o] for o, i in self.pairs.items()}
        return out
