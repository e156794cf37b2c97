"""onnxruntime's fused com.microsoft ops -> the .wrt ops they stand for.

Models "optimized for onnxruntime" carry these: the transformers optimizer (onnxruntime.transformers.optimizer) writes
Attention, EmbedLayerNormalization, SkipLayerNormalization, BiasGelu, FastGelu, QuickGelu, BiasAdd and
(Skip)SimplifiedLayerNormalization; onnxruntime's own graph optimizer, saved at ORT_ENABLE_EXTENDED, writes FusedConv,
FusedGemm and FusedMatMul. Each is composed of existing .wrt ops, with onnxruntime's semantics (its contrib operator
documentation and its CPU kernels' results):

- FusedConv / FusedGemm: Conv / Gemm, then + Z (FusedConv's optional residual, added before the activation), then the
  activation (Relu, Sigmoid, Tanh, LeakyRelu, HardSigmoid, and Clip for FusedConv; activation_params / activation_alpha
  and activation_beta hold their parameters). The passes fold Relu and Clip into the conv's output clamp again.
- FusedMatMul: alpha * op(A) @ op(B), where transA / transB swap the last two axes and transBatchA / transBatchB first
  move axis 0 behind the other batch axes (perm 1, ..., r-2, 0, r-1; both operands of the same rank >= 3).
- Gelu: erf GELU (ONNX's Gelu rule converts it); BiasGelu: Gelu(A + B); FastGelu: tanh GELU of X (+ bias);
  QuickGelu: x * sigmoid(alpha x), alpha 1.702 by default; BiasAdd: X + bias + skip.
- LayerNormalization (com.microsoft, or onnxruntime's default-domain one below opset 17): ONNX's LayerNormalization,
  its rule converts it. SkipLayerNormalization: LayerNormalization over the last axis of input + skip (+ bias),
  epsilon 1e-12 by default; its optional outputs are the mean and 1 / sqrt(var + epsilon) ([..., 1]) and the sum.
  SimplifiedLayerNormalization (epsilon 1e-5) and SkipSimplifiedLayerNormalization (1e-12): x / sqrt(mean(x^2) +
  epsilon) * scale, with the same optional outputs (no mean).
- EmbedLayerNormalization: word[input_ids] + position[position_ids, or 0..S-1] (+ segment[segment_ids]), layer
  normalized (epsilon 1e-12). Optional outputs: mask_index, the count of non-zero mask entries of each row (int32
  [B]; zeros without a mask), and the sum before normalization.
- Attention (self attention with merged Q/K/V weights [D, Hq + Hk + Hv], constant): per head,
  softmax(scale * q k^T + mask bias (+ attention_bias)) v, scale 1 / sqrt(head size) unless given. mask_index forms:
  none; [B] key lengths (right padding, what the transformers optimizer writes for BERT); [2B] ends then starts (left
  padding); [B, T] and [B, S, T] raw masks (a key counts where the mask is > 0). Masked keys get mask_filter_value
  (-10000) added, as onnxruntime does; unidirectional masks later keys the same way. The present output is computed
  when there is no past. Refused, naming the form: the [3B + 2] and 4-D masks, past state, past_sequence_length,
  rotary embedding, shared past/present buffers.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import onnx
from onnx import helper

from python_ref.opdefs import CastTo, GeluMode
from wasmrt.compile.onnx import ops
from wasmrt.compile.onnx.context import Context, node_name
from wasmrt.compile.onnx.ops import OpConverter
from wasmrt.compile.registry import registrar

MS_DOMAIN = "com.microsoft"
# The rules of com.microsoft nodes, by op type: importer.py looks a com.microsoft node up here, since some names are
# also ONNX ops of other semantics (ONNX's own Attention, opset 23, takes Q, K and V).
CONVERTERS: dict[str, OpConverter] = {}
# com.microsoft ops with the semantics of the ONNX op of the same name: ops.py's rule converts them
SAME_AS_ONNX = ("Gelu", "LayerNormalization")
F32 = np.float32

converts = registrar(CONVERTERS)


# -- helpers -----------------------------------------------------------------------------------------------------
def _onnx_rule(ctx: Context, node: onnx.NodeProto, op_type: str, inputs: list[str], output: str,
               attrs: dict[str, Any] | None = None, outputs: list[str] | None = None) -> str:
    """Convert an ONNX op built here (a part of a fused node) with ops.py's rule; returns its output's name."""
    synthetic = helper.make_node(op_type, inputs, outputs or [output], name=node_name(node))
    ops.CONVERTERS[op_type](ctx, synthetic, dict(attrs or {}))
    return output


def _add(ctx: Context, node: onnx.NodeProto, a: str, b: str, out: str) -> str:
    return _onnx_rule(ctx, node, "Add", [a, b], out)


def _const(ctx: Context, name: str, value: Any) -> str:
    ctx.set_const(name, np.asarray(value))
    return name


def _emit(ctx: Context, node: onnx.NodeProto, op: str, inputs: list[str], attrs: dict[str, Any] | None,
          out: str) -> str:
    """One IR node in ONNX layout, bound to ONNX name `out`."""
    ctx.bind(out, ctx.emit(op, inputs, attrs, out, node_name(node)), False)
    return out


def _tmp(node: onnx.NodeProto, tag: str) -> str:
    return f"{node.output[0]}/{tag}"


def _out(node: onnx.NodeProto, i: int) -> str:
    return node.output[i] if len(node.output) > i else ""


_ACTIVATIONS = ("Relu", "Sigmoid", "Tanh", "LeakyRelu", "HardSigmoid", "Clip")


def _activation(ctx: Context, node: onnx.NodeProto, x: str, kind: str, params: list[float], out: str) -> None:
    """FusedConv's / FusedGemm's activation of x, bound to out (x's layout kept)."""
    if kind not in _ACTIVATIONS:
        raise ctx.unsupported(node, f"activation {kind!r} (supported: {', '.join(_ACTIVATIONS)})")
    want = {"HardSigmoid": 2, "Clip": 2}.get(kind, 0)  # LeakyRelu's alpha defaults to 0.01
    if len(params) < want:
        raise ctx.unsupported(node, f"activation {kind} needs {want} parameters, the node gives {len(params)}")
    op = {"Relu": "RELU", "Sigmoid": "SIGMOID", "Tanh": "TANH", "LeakyRelu": "LEAKY_RELU",
          "HardSigmoid": "HARD_SIGMOID", "Clip": "CLIP"}[kind]
    attrs: dict[str, float] | None = None
    if kind == "LeakyRelu":
        attrs = {"alpha": params[0] if params else 0.01}
    elif kind == "HardSigmoid":
        attrs = {"alpha": params[0], "beta": params[1]}
    elif kind == "Clip":  # min > max: every value becomes max, as in ONNX
        attrs = {"min": min(params[0], params[1]), "max": params[1]}
    v = ctx.value(x)
    ctx.bind(out, ctx.emit(op, [ctx.ir(x, v.channels_last)], attrs, out, node_name(node)), v.channels_last)


# -- convolution and matrix products -----------------------------------------------------------------------------
@converts("FusedConv")
def _fused_conv(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    conv_attrs = {k: v for k, v in a.items() if k not in ("activation", "activation_params")}
    y = _onnx_rule(ctx, node, "Conv", list(node.input[:3]), _tmp(node, "conv"), conv_attrs)
    if ctx.has(node, 3):  # Z: added before the activation
        y = _add(ctx, node, y, node.input[3], _tmp(node, "z"))
    kind = a.get("activation", "")
    if kind:
        _activation(ctx, node, y, kind, [float(p) for p in a.get("activation_params", [])], node.output[0])
    else:
        ctx.alias(node.output[0], y)


@converts("FusedGemm")
def _fused_gemm(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    gemm_attrs = {k: a[k] for k in ("alpha", "beta", "transA", "transB") if k in a}
    y = _onnx_rule(ctx, node, "Gemm", list(node.input[:3]), _tmp(node, "gemm"), gemm_attrs)
    kind = a.get("activation", "")
    if kind == "Clip":
        raise ctx.unsupported(node, "activation 'Clip' of FusedGemm")
    if kind:
        params = [float(a[k]) for k in ("activation_alpha", "activation_beta") if k in a]
        if kind == "HardSigmoid":
            params = [float(a.get("activation_alpha", 0.2)), float(a.get("activation_beta", 0.5))]
        _activation(ctx, node, y, kind, params, node.output[0])
    else:
        ctx.alias(node.output[0], y)


def _batch_last(ctx: Context, node: onnx.NodeProto, i: int, batch: bool, trans: bool) -> str:
    """Operand i of FusedMatMul with transBatch (axis 0 moved behind the batch axes) and trans (last two swapped)."""
    name = node.input[i]
    if not (batch or trans):
        return name
    v = ctx.value(name)
    r = v.rank
    if r < 2 or (batch and r < 3):
        raise ctx.unsupported(node, f"transposing operand {i} of rank {r}")
    perm = list(range(r))
    if batch:
        perm = [*range(1, r - 1), 0, r - 1]
    if trans:
        perm[-1], perm[-2] = perm[-2], perm[-1]
    out = _tmp(node, f"op{i}")
    if v.is_const:
        return _const(ctx, out, v.const.transpose(perm))
    return _emit(ctx, node, "TRANSPOSE", [ctx.ir(name)], {"perm": tuple(perm)}, out)


@converts("FusedMatMul")
def _fused_matmul(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    batch_a, batch_b = bool(a.get("transBatchA", 0)), bool(a.get("transBatchB", 0))
    if (batch_a or batch_b) and ctx.value(node.input[0]).rank != ctx.value(node.input[1]).rank:
        raise ctx.unsupported(node, "transBatchA/transBatchB with operands of different ranks")
    lhs = _batch_last(ctx, node, 0, batch_a, bool(a.get("transA", 0)))
    rhs = _batch_last(ctx, node, 1, batch_b, bool(a.get("transB", 0)))
    alpha = float(a.get("alpha", 1.0))
    if alpha == 1.0:
        _onnx_rule(ctx, node, "MatMul", [lhs, rhs], node.output[0])
        return
    y = _onnx_rule(ctx, node, "MatMul", [lhs, rhs], _tmp(node, "ab"))
    _onnx_rule(ctx, node, "Mul", [y, _const(ctx, _tmp(node, "alpha"), np.array(alpha, F32))], node.output[0])


# -- activations -------------------------------------------------------------------------------------------------
def _gelu(ctx: Context, node: onnx.NodeProto, x: str, mode: GeluMode) -> None:
    v = ctx.value(x)
    ctx.bind(node.output[0], ctx.emit("GELU", [ctx.ir(x, v.channels_last)], {"mode": mode}, node.output[0],
                                      node_name(node)), v.channels_last)


@converts("BiasGelu")
def _bias_gelu(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    _gelu(ctx, node, _add(ctx, node, node.input[0], node.input[1], _tmp(node, "biased")), GeluMode.EXACT)


@converts("FastGelu")
def _fast_gelu(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    x = _add(ctx, node, node.input[0], node.input[1], _tmp(node, "biased")) if ctx.has(node, 1) else node.input[0]
    _gelu(ctx, node, x, GeluMode.TANH)


@converts("QuickGelu")
def _quick_gelu(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    alpha = float(a.get("alpha", 1.702))
    x = node.input[0]
    ax = x if alpha == 1.0 else _onnx_rule(ctx, node, "Mul", [x, _const(ctx, _tmp(node, "alpha"), np.array(
        alpha, F32))], _tmp(node, "ax"))
    s = _onnx_rule(ctx, node, "Sigmoid", [ax], _tmp(node, "sigmoid"))
    _onnx_rule(ctx, node, "Mul", [x, s], node.output[0])


@converts("BiasAdd")
def _bias_add(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    _add(ctx, node, _add(ctx, node, node.input[0], node.input[1], _tmp(node, "biased")), node.input[2],
         node.output[0])


# -- normalizations ----------------------------------------------------------------------------------------------
def _skip_sum(ctx: Context, node: onnx.NodeProto, bias_i: int) -> str:
    """input + skip (+ bias), bound to the optional sum output (index 3) when the model asks for it."""
    has_bias = ctx.has(node, bias_i)
    s = _add(ctx, node, node.input[0], node.input[1], _out(node, 3) if not has_bias and _out(node, 3)
             else _tmp(node, "sum"))
    if has_bias:
        s = _add(ctx, node, s, node.input[bias_i], _out(node, 3) or _tmp(node, "sum_bias"))
    return s


@converts("SkipLayerNormalization")
def _skip_layer_norm(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    s = _skip_sum(ctx, node, 4)
    ins = [s, node.input[2], node.input[3] if ctx.has(node, 3) else ""]
    _onnx_rule(ctx, node, "LayerNormalization", ins, node.output[0], {"axis": -1, "epsilon": a.get("epsilon", 1e-12)},
               outputs=[node.output[0], _out(node, 1), _out(node, 2)])


def _rms_norm(ctx: Context, node: onnx.NodeProto, x: str, scale: str, axis: int, eps: float, inv_out: str) -> None:
    v = ctx.value(x)
    axes = tuple(range(axis % v.rank, v.rank))
    label, x_ir = node_name(node), ctx.ir(x)
    sq = ctx.emit("MUL", [x_ir, x_ir], None, _tmp(node, "sq"), label)
    ms = ctx.emit("MEAN", [sq], {"axes": axes, "keepdims": True}, _tmp(node, "ms"), label)
    ms = ctx.emit("ADD", [ms, ctx.const_ir(np.array(eps, F32), _tmp(node, "eps"))], None, _tmp(node, "ms_eps"),
                  label)
    rms = ctx.emit("SQRT", [ms], None, _tmp(node, "rms"), label)
    _emit(ctx, node, "DIV", [x_ir, rms], None, _tmp(node, "normalized"))
    _onnx_rule(ctx, node, "Mul", [_tmp(node, "normalized"), scale], node.output[0])
    if inv_out:
        _emit(ctx, node, "DIV", [ctx.const_ir(np.array(1.0, F32), _tmp(node, "one")), rms], None, inv_out)


@converts("SimplifiedLayerNormalization")
def _simplified_layer_norm(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    _rms_norm(ctx, node, node.input[0], node.input[1], int(a.get("axis", -1)), float(a.get("epsilon", 1e-5)),
              _out(node, 1))


@converts("SkipSimplifiedLayerNormalization")
def _skip_simplified_layer_norm(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    if _out(node, 1):
        raise ctx.unsupported(node, "the mean output of SkipSimplifiedLayerNormalization (it normalizes no mean)")
    _rms_norm(ctx, node, _skip_sum(ctx, node, 3), node.input[2], -1, float(a.get("epsilon", 1e-12)), _out(node, 2))


@converts("EmbedLayerNormalization")
def _embed_layer_norm(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    ids = ctx.value(node.input[0])
    if ids.rank != 2:
        raise ctx.unsupported(node, f"input_ids of rank {ids.rank} (expected [batch, sequence])")
    batch, seq = ids.shape
    word = _onnx_rule(ctx, node, "Gather", [node.input[2], node.input[0]], _tmp(node, "word"))
    position = ctx.const(node, 3, "the position embedding")
    if ctx.has(node, 8) and ctx.is_const(node.input[8]):
        pos = _const(ctx, _tmp(node, "position"), np.take(position, np.asarray(ctx.value(node.input[8]).const),
                                                          axis=0).astype(F32))
    elif ctx.has(node, 8):
        pos = _onnx_rule(ctx, node, "Gather", [node.input[3], node.input[8]], _tmp(node, "position"))
    else:
        if position.shape[0] < seq:
            raise ctx.unsupported(node, f"{seq} positions, the position embedding has {position.shape[0]}")
        pos = _const(ctx, _tmp(node, "position"), position[None, :seq].astype(F32))
    total = _add(ctx, node, word, pos, _tmp(node, "word_position"))
    if ctx.has(node, 1) and ctx.has(node, 4):
        seg = _onnx_rule(ctx, node, "Gather", [node.input[4], node.input[1]], _tmp(node, "segment"))
        total = _add(ctx, node, total, seg, _tmp(node, "embedding_sum"))
    if _out(node, 2):
        ctx.alias(node.output[2], total)
    beta = node.input[6] if ctx.has(node, 6) else ""
    _onnx_rule(ctx, node, "LayerNormalization", [total, node.input[5], beta], node.output[0],
               {"axis": -1, "epsilon": a.get("epsilon", 1e-12)})
    if _out(node, 1):
        _embed_mask_index(ctx, node, batch)


def _embed_mask_index(ctx: Context, node: onnx.NodeProto, batch: int) -> None:
    """EmbedLayerNormalization's mask_index: the count of non-zero mask entries of each row, int32 [B]."""
    out = node.output[1]
    if not ctx.has(node, 7):
        ctx.set_const(out, np.zeros(batch, np.int32))
        return
    m = ctx.value(node.input[7])
    if m.is_const:
        ctx.set_const(out, np.count_nonzero(m.const, axis=1).astype(np.int32))
        return
    label = node_name(node)
    nz = ctx.emit("CAST", [ctx.ir(node.input[7], dtype=None)], {"to": CastTo.BOOL}, _tmp(node, "mask_nz"), label)
    nz = ctx.emit("CAST", [nz], {"to": CastTo.FLOAT32}, _tmp(node, "mask_f"), label)
    count = ctx.emit("REDUCE_SUM", [nz], {"axes": (1,), "keepdims": False}, _tmp(node, "mask_count"), label)
    _emit(ctx, node, "CAST", [count], {"to": CastTo.INT32}, out)


# -- attention ---------------------------------------------------------------------------------------------------
@converts("Attention")
def _attention(ctx: Context, node: onnx.NodeProto, a: dict) -> None:
    if a.get("do_rotary", 0):
        raise ctx.unsupported(node, "rotary embedding (do_rotary)")
    if a.get("past_present_share_buffer", 0):
        raise ctx.unsupported(node, "a past/present shared buffer (past_present_share_buffer)")
    if ctx.has(node, 4):
        raise ctx.unsupported(node, "past state (input 4, past): only self attention without a cache")
    if ctx.has(node, 6):
        raise ctx.unsupported(node, "past_sequence_length (input 6)")
    x = ctx.value(node.input[0])
    if x.rank != 3:
        raise ctx.unsupported(node, f"input of rank {x.rank} (expected [batch, sequence, hidden])")
    batch, seq, _ = x.shape
    w = np.asarray(ctx.const(node, 1, "the Q/K/V weights"), F32)
    heads = int(a["num_heads"])
    sizes = [int(s) for s in a.get("qkv_hidden_sizes", [])] or [w.shape[1] // 3] * 3
    if len(sizes) != 3 or sum(sizes) != w.shape[1] or sizes[0] != sizes[1] or any(s % heads for s in sizes):
        raise ctx.unsupported(node, f"Q/K/V sizes {sizes} for weights of shape {list(w.shape)} and {heads} heads")
    bias = np.asarray(ctx.const(node, 2, "the Q/K/V bias"), F32) if ctx.has(node, 2) else None
    head, head_v = sizes[0] // heads, sizes[2] // heads
    scale = float(a.get("scale", 0.0)) or 1.0 / math.sqrt(head)
    label, x_ir = node_name(node), ctx.ir(node.input[0])

    def project(k: int, tag: str) -> str:  # [B, S, size] -> [B, S, heads, size / heads]
        lo, hi = sum(sizes[:k]), sum(sizes[:k + 1])
        ins = [x_ir, ctx.const_ir(np.ascontiguousarray(w[:, lo:hi].T), _tmp(node, f"w_{tag}"))]
        if bias is not None:
            ins.append(ctx.const_ir(bias[lo:hi], _tmp(node, f"b_{tag}")))
        y = ctx.emit("FULLY_CONNECTED", ins, None, _tmp(node, tag), label)
        return ctx.emit("RESHAPE", [y], {"shape": (batch, seq, heads, (hi - lo) // heads)}, _tmp(node, tag), label)

    q = ctx.emit("TRANSPOSE", [project(0, "q")], {"perm": (0, 2, 1, 3)}, _tmp(node, "q_heads"), label)
    k = project(1, "k")
    v = ctx.emit("TRANSPOSE", [project(2, "v")], {"perm": (0, 2, 1, 3)}, _tmp(node, "v_heads"), label)
    k_t = ctx.emit("TRANSPOSE", [k], {"perm": (0, 2, 3, 1)}, _tmp(node, "k_heads_t"), label)
    scores = ctx.emit("MATMUL", [q, k_t], None, _tmp(node, "scores"), label)
    scores = ctx.emit("MUL", [scores, ctx.const_ir(np.array(scale, F32), _tmp(node, "scale"))], None,
                      _tmp(node, "scaled"), label)
    filler = float(a.get("mask_filter_value", -10000.0))
    mask = _mask_bias(ctx, node, batch, seq, filler)
    if a.get("unidirectional", 0):
        causal = np.where(np.arange(seq)[None, :] > np.arange(seq)[:, None], filler, 0.0).astype(F32)
        causal_ir = ctx.const_ir(causal, _tmp(node, "causal"))
        mask = causal_ir if mask is None else ctx.emit("MINIMUM", [mask, causal_ir], None, _tmp(node, "mask_causal"),
                                                       label)
    if mask is not None:
        scores = ctx.emit("ADD", [scores, mask], None, _tmp(node, "masked"), label)
    if ctx.has(node, 5):
        ctx.bind(_tmp(node, "scores_masked"), scores, False)
        _onnx_rule(ctx, node, "Add", [_tmp(node, "scores_masked"), node.input[5]], _tmp(node, "biased_scores"))
        scores = ctx.ir(_tmp(node, "biased_scores"))
    probs = ctx.emit("SOFTMAX", [scores], {"axis": 3}, _tmp(node, "probs"), label)
    ctx_heads = ctx.emit("MATMUL", [probs, v], None, _tmp(node, "context"), label)
    merged = ctx.emit("TRANSPOSE", [ctx_heads], {"perm": (0, 2, 1, 3)}, _tmp(node, "context_t"), label)
    ctx.bind(node.output[0], ctx.emit("RESHAPE", [merged], {"shape": (batch, seq, sizes[2])}, node.output[0], label),
             False)
    if _out(node, 1):  # present: (2, B, heads, S, head size) of K and V
        if head != head_v:
            raise ctx.unsupported(node, "the present output with different K and V head sizes")
        shape = (1, batch, heads, seq, head)
        k_h = ctx.emit("TRANSPOSE", [k], {"perm": (0, 2, 1, 3)}, _tmp(node, "k_heads"), label)
        parts = [ctx.emit("RESHAPE", [t], {"shape": shape}, _tmp(node, f"present_{n}"), label)
                 for t, n in ((k_h, "k"), (v, "v"))]
        _emit(ctx, node, "CONCATENATION", parts, {"axis": 0}, node.output[1])


def _mask_bias(ctx: Context, node: onnx.NodeProto, batch: int, seq: int, filler: float) -> str | None:
    """The additive mask [B, 1, 1|S, T] of Attention's mask_index (None without one): filler where a key is
    masked, else 0."""
    if not ctx.has(node, 3):
        return None
    m = ctx.value(node.input[3])
    keys = np.arange(seq)
    label = node_name(node)
    if m.shape == (batch,) or m.shape == (2 * batch,):  # key lengths (right padding), or ends then starts
        if m.is_const:
            ends = np.asarray(m.const).reshape(-1)
            starts = ends[batch:] if ends.size == 2 * batch else np.zeros(batch, np.int64)
            ok = (keys[None, :] < ends[:batch, None]) & (keys[None, :] >= starts[:, None])
            return ctx.const_ir(np.where(ok, 0.0, filler).astype(F32).reshape(batch, 1, 1, seq), _tmp(node, "mask"))
        idx = ctx.emit("CAST", [ctx.ir(node.input[3], dtype=None)], {"to": CastTo.FLOAT32}, _tmp(node, "mask_f"), label)
        idx = ctx.emit("RESHAPE", [idx], {"shape": (m.shape[0] // batch, batch, 1)}, _tmp(node, "mask_rows"), label)
        pos = ctx.const_ir(keys.astype(F32)[None, :], _tmp(node, "key_positions"))
        ends = ctx.emit("SLICE", [idx], {"starts": (0, 0, 0), "ends": (1, batch, 1), "steps": (1, 1, 1)},
                        _tmp(node, "mask_ends"), label)
        ok = ctx.emit("LESS", [pos, ends], None, _tmp(node, "mask_ok"), label)
        if m.shape[0] == 2 * batch:
            starts = ctx.emit("SLICE", [idx], {"starts": (1, 0, 0), "ends": (2, batch, 1), "steps": (1, 1, 1)},
                              _tmp(node, "mask_starts"), label)
            after = ctx.emit("GREATER_EQUAL", [pos, starts], None, _tmp(node, "mask_after_start"), label)
            ok = ctx.emit("AND", [ok, after], None, _tmp(node, "mask_window"), label)
        shape = (batch, 1, 1, seq)
    elif m.shape in ((batch, seq), (batch, seq, seq)):  # raw masks: a key counts where the mask is > 0
        shape = (batch, 1, 1, seq) if m.rank == 2 else (batch, 1, seq, seq)
        if m.is_const:
            return ctx.const_ir(np.where(np.asarray(m.const) > 0, 0.0, filler).astype(F32).reshape(shape),
                                _tmp(node, "mask"))
        mf = ctx.emit("CAST", [ctx.ir(node.input[3], dtype=None)], {"to": CastTo.FLOAT32}, _tmp(node, "mask_f"),
                      label)
        ok = ctx.emit("GREATER", [mf, ctx.const_ir(np.array(0.0, F32), _tmp(node, "zero"))], None,
                      _tmp(node, "mask_ok"), label)
    else:
        form = ("a [3 * batch + 2] index (packed sequences)" if m.shape == (3 * batch + 2,) else
                f"a 4-D mask {list(m.shape)}" if m.rank == 4 else f"shape {list(m.shape)}")
        raise ctx.unsupported(node, f"mask_index of {form}; supported: [batch] key lengths, [2 * batch] ends and "
                                    "starts, [batch, total_length] and [batch, sequence, total_length] masks")
    zero, fill = (ctx.const_ir(np.array(v, F32), _tmp(node, tag)) for v, tag in ((0.0, "zero"), (filler, "filler")))
    bias = ctx.emit("WHERE", [ok, zero, fill], None, _tmp(node, "mask_bias"), label)
    return ctx.emit("RESHAPE", [bias], {"shape": shape}, _tmp(node, "mask_bias"), label)


CONVERTERS.update({name: ops.CONVERTERS[name] for name in SAME_AS_ONNX})
# onnxruntime's ops of the default domain that ONNX does not define (importer.py merges them with ops.py's rules)
DEFAULT_DOMAIN: dict[str, OpConverter] = {"SimplifiedLayerNormalization": _simplified_layer_norm}
assert not set(DEFAULT_DOMAIN) & set(ops.CONVERTERS), "a contrib rule would replace an ONNX op's rule"
