"""TFLite's LSTM ops -> our LSTM (python_ref/opdefs.py): UNIDIRECTIONAL_SEQUENCE_LSTM, BIDIRECTIONAL_SEQUENCE_LSTM
(as a forward and a reverse LSTM) and the one-step LSTM (full kernel).

TFLite gates come as separate tensors in the order input, forget, cell, output; ours are stacked i, o, f, c.
CIFG models (no input-gate weights) couple i = 1 - f; peepholes, the projection with its clip, the cell clip, layer
normalization and diagonal recurrent weights map one to one. Float32 weights only (hybrid int8 LSTMs are not).

TFLite keeps an LSTM's state in variable tensors that persist from one invoke to the next. Each one becomes a graph
input (the state before the run, zero for a fresh interpreter) and a graph output named "<input>_next" (the state
after it); metadata props "state.<output>" = "<input>" pair them, so wasmrt's streaming helpers carry the state from
run to run as LiteRT does.
"""

from __future__ import annotations

import numpy as np

from python_ref.opdefs import Activation, Coupling, Direction
from wasmrt.compile.registry import registrar
from wasmrt.compile.tflite.context import Context, OpConverter
from wasmrt.compile.tflite.reader import TflOp

CONVERTERS: dict[str, OpConverter] = {}
converts = registrar(CONVERTERS)

F32 = np.float32
# TfLiteFusedActivation -> the LSTM's cell and output activation
_ACTS = {0: Activation.IDENTITY, 1: Activation.RELU, 3: Activation.RELU6, 4: Activation.TANH, 6: Activation.SIGMOID}


def _opt(ctx: Context, op: TflOp, k: int, what: str) -> np.ndarray | None:
    if k >= len(op.inputs) or op.inputs[k] < 0:
        return None
    return np.asarray(ctx.const(op, k, what), F32)


def _lstm_weights(ctx: Context, op: TflOp, base: int, ln_base: int | None, diagonal: bool) -> dict[str, np.ndarray]:
    """Our w, r, b, p, proj_w, proj_b, ln constants (direction axis of 1) from the 17 (+4) TFLite inputs at base."""
    names = ["input_to_input", "input_to_forget", "input_to_cell", "input_to_output", "recurrent_to_input",
             "recurrent_to_forget", "recurrent_to_cell", "recurrent_to_output", "cell_to_input", "cell_to_forget",
             "cell_to_output", "input_gate_bias", "forget_gate_bias", "cell_gate_bias", "output_gate_bias",
             "projection_weights", "projection_bias"]
    v = {n: _opt(ctx, op, base + k, n) for k, n in enumerate(names)}
    for n in ("input_to_forget", "input_to_cell", "input_to_output", "recurrent_to_forget", "recurrent_to_cell",
              "recurrent_to_output", "forget_gate_bias", "cell_gate_bias", "output_gate_bias"):
        if v[n] is None:
            raise ctx.unsupported(op, f"the required {n} tensor is missing")
    h, i = v["input_to_forget"].shape
    if diagonal:  # recurrent weights given as their diagonals
        for n in ("recurrent_to_input", "recurrent_to_forget", "recurrent_to_cell", "recurrent_to_output"):
            if v[n] is not None:
                v[n] = np.diag(v[n].reshape(-1))
    p = v["recurrent_to_forget"].shape[1]
    zeros = {"w": np.zeros((h, i), F32), "r": np.zeros((h, p), F32), "v": np.zeros(h, F32)}
    w = np.stack([v["input_to_input"] if v["input_to_input"] is not None else zeros["w"], v["input_to_output"],
                  v["input_to_forget"], v["input_to_cell"]]).reshape(1, 4 * h, i)
    r = np.stack([v["recurrent_to_input"] if v["recurrent_to_input"] is not None else zeros["r"],
                  v["recurrent_to_output"], v["recurrent_to_forget"], v["recurrent_to_cell"]]).reshape(1, 4 * h, p)
    bi = v["input_gate_bias"] if v["input_gate_bias"] is not None else zeros["v"]
    out = {"w": w, "r": r, "b": np.concatenate([bi, v["output_gate_bias"], v["forget_gate_bias"],
                                                v["cell_gate_bias"], np.zeros(4 * h, F32)])[None]}
    peeps = [v["cell_to_input"], v["cell_to_output"], v["cell_to_forget"]]
    if any(x is not None for x in peeps):
        out["p"] = np.concatenate([x.reshape(-1) if x is not None else zeros["v"] for x in peeps])[None]
    if v["projection_weights"] is not None:
        out["proj_w"] = v["projection_weights"][None]
        pb = v["projection_bias"]
        out["proj_b"] = (pb if pb is not None else np.zeros(p, F32))[None]
    if ln_base is not None:
        ln = [_opt(ctx, op, ln_base + k, n + "_layer_norm_coefficients")
              for k, n in enumerate(("input", "forget", "cell", "output"))]
        if any(x is not None for x in ln):
            ones = np.ones(h, F32)
            out["ln"] = np.stack([x if x is not None else ones for x in (ln[0], ln[3], ln[1], ln[2])])[None]
    out["cifg"] = np.array(v["input_to_input"] is None)
    return out


def _lstm_attrs(ctx: Context, op: TflOp, cifg: bool) -> dict:
    o = op.options
    code = int(o.get("FusedActivationFunction", 4))
    if code not in _ACTS:
        raise ctx.unsupported(op, f"fused activation {code} as the LSTM's cell activation")
    if o.get("AsymmetricQuantizeInputs", False):
        raise ctx.unsupported(op, "hybrid (quantized-weight) LSTMs")
    act = _ACTS[code]
    attrs = {"activations": (int(Activation.SIGMOID), int(act), int(act))}
    for key, name in (("CellClip", "cell_clip"), ("ProjClip", "proj_clip")):
        if float(o.get(key, 0.0)) > 0:
            attrs[name] = float(o[key])
    if cifg:
        attrs["coupling"] = Coupling.INPUT_FROM_FORGET
    return attrs


def _lstm(ctx: Context, op: TflOp, x: str, weights: dict[str, np.ndarray], attrs: dict, states: tuple[int, int],
          tag: str) -> tuple[str, str, str]:
    """One LSTM over x [T, B, I]: (y [T, B, P], h [B, P], c [B, H]); the variable states fed in and written back."""
    t, b, _ = ctx.shape(x)
    base = f"{ctx.node_name(op)}/{tag}"
    consts = {k: ctx.graph.add_const(f"{base}/{k}", v) for k, v in weights.items() if k != "cifg"}
    h0 = ctx.state_input(op, states[0], (1, b, weights["r"].shape[2]), f"{base}/h0")
    c0 = ctx.state_input(op, states[1], (1, b, weights["w"].shape[1] // 4), f"{base}/c0")
    ins = [x, consts["w"], consts["r"], consts["b"], "", h0, c0, consts.get("p", ""), consts.get("proj_w", ""),
           consts.get("proj_b", ""), consts.get("ln", "")]
    while ins[-1] == "":
        ins.pop()
    try:
        y, yh, yc = ctx.graph.add_node("LSTM", ins, attrs, name=base,
                                      outputs=[ctx.graph.unique_name(f"{base}/{k}") for k in ("y", "y_h", "y_c")])
    except ValueError as e:
        raise ctx.unsupported(op, str(e)) from None
    p = ctx.shape(yh)[2]
    y = ctx.emit(op, "RESHAPE", [y], {"shape": (t, b, p)})
    ctx.state_output(op, states[0], yh)
    ctx.state_output(op, states[1], yc)
    return y, yh, yc


def _time_major(ctx: Context, op: TflOp, x: str) -> tuple[str, bool]:
    tm = bool(op.options.get("TimeMajor", False))
    if len(ctx.shape(x)) != 3:
        raise ctx.unsupported(op, f"input of rank {len(ctx.shape(x))} (expected 3)")
    return (x if tm else ctx.emit(op, "TRANSPOSE", [x], {"perm": (1, 0, 2)})), tm


@converts("UNIDIRECTIONAL_SEQUENCE_LSTM")
def unidirectional_sequence_lstm(ctx: Context, op: TflOp) -> None:
    x, tm = _time_major(ctx, op, ctx.input(op, 0))
    w = _lstm_weights(ctx, op, 1, 20, bool(op.options.get("DiagonalRecurrentTensors", False)))
    y, _, _ = _lstm(ctx, op, x, w, _lstm_attrs(ctx, op, bool(w["cifg"])), (18, 19), "lstm")
    ctx.emit(op, "RESHAPE" if tm else "TRANSPOSE", [y], {"shape": ctx.shape(y)} if tm else {"perm": (1, 0, 2)},
            final=True)


@converts("BIDIRECTIONAL_SEQUENCE_LSTM")
def bidirectional_sequence_lstm(ctx: Context, op: TflOp) -> None:
    if len(op.inputs) > 39 and op.inputs[39] >= 0:
        raise ctx.unsupported(op, "an auxiliary input")
    x, tm = _time_major(ctx, op, ctx.input(op, 0))
    outs = []
    for k, (base, states, direction) in enumerate(((1, (35, 36), Direction.FORWARD),
                                                   (18, (37, 38), Direction.REVERSE))):
        w = _lstm_weights(ctx, op, base, None, False)
        attrs = _lstm_attrs(ctx, op, bool(w["cifg"])) | {"direction": direction}
        outs.append(_lstm(ctx, op, x, w, attrs, states, ("fw", "bw")[k])[0])
    merge = bool(op.options.get("MergeOutputs", False))
    if merge:
        outs = [ctx.emit(op, "CONCATENATION", outs, {"axis": 2})]
    for k, y in enumerate(outs):
        if not tm:
            y = ctx.emit(op, "TRANSPOSE", [y], {"perm": (1, 0, 2)})
        ctx.bind_output(op, k, y)


@converts("LSTM")
def lstm_step(ctx: Context, op: TflOp) -> None:
    if op.options.get("KernelType", 0) != 0:
        raise ctx.unsupported(op, "the BASIC LSTM kernel (5 inputs)")
    x = ctx.input(op, 0)
    b, i = ctx.shape(x)
    x = ctx.emit(op, "RESHAPE", [x], {"shape": (1, b, i)})
    w = _lstm_weights(ctx, op, 1, 20, False)
    _, yh, _ = _lstm(ctx, op, x, w, _lstm_attrs(ctx, op, bool(w["cifg"])), (18, 19), "lstm")
    ctx.emit(op, "RESHAPE", [yh], {"shape": (b, ctx.shape(yh)[2])}, final=True)
