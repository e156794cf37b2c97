"""onnxruntime's fused com.microsoft ops (wasmrt/compile/onnx/contrib.py) against onnxruntime, on python_ref and the
C engine (native and wasm):

- a small BERT-style encoder (token, position and segment embeddings, 2 encoder layers, hidden 64, 4 heads) exported
  by torch and fused by onnxruntime's transformers optimizer (Attention, EmbedLayerNormalization,
  SkipLayerNormalization, BiasGelu, FastGelu), with the 1-D mask index it writes for BERT and with raw 2-D masks;
- a small CNN saved by onnxruntime's own graph optimizer at ORT_ENABLE_EXTENDED (FusedConv with Relu, Clip, Sigmoid
  and LeakyRelu, FusedGemm, FusedMatMul);
- one hand-built node per op, with its optional inputs and outputs and attribute forms;
each compared with onnxruntime running the same file; and the forms that are refused, by name."""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper

from python_ref import Interpreter
from tests.test_engine import engine_model
from tests.test_onnx_semantics import single_node_model
from wasmrt.compile.converter import convert
from wasmrt.compile.onnx.importer import import_onnx
from wasmrt.errors import UnsupportedOpError

RTOL = 1e-4  # relative to max |onnxruntime|
ENGINES = [("ref", None), ("native", None), ("wasm", "simd")]
MS = "com.microsoft"
R = np.random.default_rng(41)


def arr(*shape: int, lo: float = -1.0, hi: float = 1.0) -> np.ndarray:
    return R.uniform(lo, hi, shape).astype(np.float32)


def ort_run(model: bytes | str, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    return ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"]).run(None, feeds)


def engine(data: bytes, name: str, variant: str | None) -> Any:
    return Interpreter(data) if name == "ref" else engine_model(data, name, variant)


def assert_close(got: np.ndarray, want: np.ndarray, what: str) -> float:
    """Asserts agreement (integers exactly, floats within RTOL of max |want|); returns the relative difference."""
    got = np.asarray(got)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got.astype(want.dtype), want, err_msg=what)
        return 0.0
    scale = max(float(np.abs(want).max(initial=0.0)), 1e-6)
    rel = float(np.abs(got.astype(np.float64) - want).max(initial=0.0)) / scale
    assert rel <= RTOL, f"{what}: max|ours - onnxruntime| / max|onnxruntime| = {rel:.3g}"
    return rel


# -- 1. a BERT-style encoder through onnxruntime's transformers optimizer ----------------------------------------
BATCH, SEQ, HIDDEN, HEADS = 2, 8, 64, 4


def _bert_module() -> Any:
    import torch

    torch.manual_seed(41)
    nn = torch.nn

    class Layer(nn.Module):
        def __init__(self, tanh_gelu: bool) -> None:
            super().__init__()
            self.q, self.k, self.v, self.o = (nn.Linear(HIDDEN, HIDDEN) for _ in range(4))
            self.up, self.down = nn.Linear(HIDDEN, 4 * HIDDEN), nn.Linear(4 * HIDDEN, HIDDEN)
            self.ln1, self.ln2 = nn.LayerNorm(HIDDEN, eps=1e-12), nn.LayerNorm(HIDDEN, eps=1e-12)
            self.approximate = "tanh" if tanh_gelu else "none"

        def forward(self, x: Any, bias: Any) -> Any:
            b, s, _ = x.shape

            def heads(t: Any) -> Any:
                return t.view(b, s, HEADS, HIDDEN // HEADS).permute(0, 2, 1, 3)

            scores = torch.matmul(heads(self.q(x)), heads(self.k(x)).transpose(-1, -2)) / (HIDDEN // HEADS) ** 0.5
            ctx = torch.matmul(torch.softmax(scores + bias, -1), heads(self.v(x))).permute(0, 2, 1, 3)
            x = self.ln1(self.o(ctx.reshape(b, s, HIDDEN)) + x)
            return self.ln2(self.down(nn.functional.gelu(self.up(x), approximate=self.approximate)) + x)

    class Encoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.word, self.pos, self.seg = nn.Embedding(50, HIDDEN), nn.Embedding(16, HIDDEN), nn.Embedding(2, HIDDEN)
            self.ln = nn.LayerNorm(HIDDEN, eps=1e-12)
            self.layers = nn.ModuleList([Layer(False), Layer(True)])
            with torch.no_grad():  # layer norms with their own scales and shifts (not the optimizer's shared 1 and 0)
                for m in self.modules():
                    if isinstance(m, nn.LayerNorm):
                        m.weight.uniform_(0.5, 1.5)
                        m.bias.uniform_(-0.5, 0.5)

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            positions = torch.arange(input_ids.shape[1]).unsqueeze(0)
            x = self.ln(self.word(input_ids) + self.pos(positions) + self.seg(token_type_ids))
            bias = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * -10000.0
            for layer in self.layers:
                x = layer(x, bias)
            return x

    return Encoder().eval()


def _bert_feeds() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    mask = np.ones((BATCH, SEQ), np.int64)
    mask[1, 5:] = 0  # the second sequence is right-padded
    segments = np.zeros((BATCH, SEQ), np.int64)
    segments[:, 4:] = 1
    return {"input_ids": rng.integers(0, 50, (BATCH, SEQ)).astype(np.int64), "attention_mask": mask,
            "token_type_ids": segments}


@pytest.fixture(scope="module")
def bert_exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch

    path = tmp_path_factory.mktemp("bert") / "bert.onnx"
    feeds = {k: torch.from_numpy(v) for k, v in _bert_feeds().items()}
    names = list(feeds)
    torch.onnx.export(_bert_module(), tuple(feeds.values()), str(path), input_names=names,
                      output_names=["hidden"], opset_version=14, dynamo=False,
                      dynamic_axes={n: {0: "batch", 1: "sequence"} for n in [*names, "hidden"]})
    return path


@functools.cache
def _optimized_bert(exported: Path, mask_form: str) -> tuple[bytes, Counter]:
    from onnxruntime.transformers.fusion_options import FusionOptions
    from onnxruntime.transformers.optimizer import optimize_model

    options = FusionOptions("bert")
    options.use_raw_attention_mask(mask_form == "raw_mask")
    model = optimize_model(str(exported), model_type="bert", num_heads=HEADS, hidden_size=HIDDEN, opt_level=0,
                           optimization_options=options).model
    ops = Counter(n.op_type for n in model.graph.node if n.domain == MS)
    return model.SerializeToString(), ops


@pytest.mark.parametrize("mask_form", ["mask_index", "raw_mask"])
@pytest.mark.parametrize(("engine_name", "variant"), ENGINES, ids=[e for e, _ in ENGINES])
def test_bert_through_the_transformers_optimizer(bert_exported: Path, mask_form: str, engine_name: str,
                                                 variant: str | None) -> None:
    data, fused = _optimized_bert(bert_exported, mask_form)
    assert fused == {"Attention": 2, "SkipLayerNormalization": 4, "EmbedLayerNormalization": 1, "BiasGelu": 1,
                     "FastGelu": 1}, fused
    mask_input = next(n.input[3] for n in onnx.load_from_string(data).graph.node if n.op_type == "Attention")
    assert ("Embed" in mask_input) == (mask_form == "mask_index"), mask_input  # the 1-D index, or the raw mask
    feeds = _bert_feeds()
    want = ort_run(data, feeds)[0]
    wrt = _converted_bert(data, mask_form)
    got = engine(wrt, engine_name, variant).run(feeds)["hidden"]
    assert_close(got, want, f"{mask_form} on {engine_name}")
    # padding is honoured: the padded sequence's real tokens do not depend on its padded tokens' ids
    changed = dict(feeds, input_ids=feeds["input_ids"].copy())
    changed["input_ids"][1, 5:] = (changed["input_ids"][1, 5:] + 1) % 50
    again = engine(wrt, engine_name, variant).run(changed)["hidden"]
    np.testing.assert_allclose(again[1, :5], got[1, :5], rtol=0, atol=1e-5)
    assert np.abs(again[1, 5:] - got[1, 5:]).max() > 1e-3


@functools.cache
def _converted_bert(data: bytes, mask_form: str) -> bytes:
    shapes = {n: (BATCH, SEQ) for n in ("input_ids", "attention_mask", "token_type_ids")}
    return convert(import_onnx(data, input_shapes=shapes)).data


# -- 2. a CNN saved by onnxruntime's graph optimizer -------------------------------------------------------------
def _cnn_module() -> Any:
    import torch

    torch.manual_seed(5)
    nn = torch.nn

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.c1, self.c2 = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 8, 3, padding=1, groups=8)
            self.c3, self.c4 = nn.Conv2d(8, 8, 1), nn.Conv2d(8, 16, 3, stride=2, padding=1)
            self.c5, self.fc = nn.Conv2d(16, 16, 3, padding=1), nn.Linear(16, 10)
            self.w = nn.Parameter(torch.randn(10, 12) * 0.3)

        def forward(self, x: Any) -> Any:
            x = torch.relu(self.c1(x))
            x = nn.functional.relu6(self.c2(x))
            x = torch.relu(self.c3(x) + x)
            x = nn.functional.leaky_relu(self.c5(torch.sigmoid(self.c4(x))), 0.1)
            pooled = torch.relu(self.fc(x.mean((2, 3))))
            flat = x.flatten(2)
            return pooled, torch.matmul(flat.transpose(1, 2), flat) * 0.25, torch.matmul(pooled, self.w)

    return Net().eval()


@pytest.fixture(scope="module")
def cnn_optimized(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch

    d = tmp_path_factory.mktemp("cnn")
    torch.onnx.export(_cnn_module(), (torch.zeros(1, 3, 8, 8),), str(d / "cnn.onnx"), input_names=["x"],
                      output_names=["pooled", "gram", "projected"], opset_version=17, dynamo=False)
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    opts.optimized_model_filepath = str(d / "cnn_ort.onnx")
    ort.InferenceSession(str(d / "cnn.onnx"), opts, providers=["CPUExecutionProvider"])
    return d / "cnn_ort.onnx"


@functools.cache
def _converted_cnn(path: Path) -> bytes:
    return convert(import_onnx(str(path))).data


@pytest.mark.parametrize(("engine_name", "variant"), ENGINES, ids=[e for e, _ in ENGINES])
def test_cnn_saved_by_onnxruntimes_optimizer(cnn_optimized: Path, engine_name: str, variant: str | None) -> None:
    model = onnx.load(str(cnn_optimized))
    fused = Counter(n.op_type for n in model.graph.node if n.domain == MS)
    activations = {helper.get_attribute_value(a).decode() for n in model.graph.node if n.op_type == "FusedConv"
                   for a in n.attribute if a.name == "activation"}
    assert fused["FusedConv"] >= 3 and fused["FusedMatMul"] and fused["FusedGemm"], fused
    assert {"Relu", "Clip"} <= activations, activations
    x = R.standard_normal((1, 3, 8, 8)).astype(np.float32)
    want = ort_run(str(cnn_optimized), {"x": x})
    got = engine(_converted_cnn(cnn_optimized), engine_name, variant).run({"x": x})
    for name, w in zip(("pooled", "gram", "projected"), want, strict=True):
        assert_close(got[name], w, name)


# -- 3. one node per op --------------------------------------------------------------------------------------------
class Case:
    """One node: runtime inputs (feeds), constants (initializers), attributes. The oracle is onnxruntime on the same
    node, or on it as oracle_op in oracle_domain where onnxruntime's CPU build lacks the form: it has no
    com.microsoft LayerNormalization (its own is the default domain's, below opset 17), no FusedGemm without an
    activation (that is Gemm) and no CPU BiasAdd (numpy computes its definition, X + bias + skip)."""

    def __init__(self, op: str, inputs: list[tuple[str, np.ndarray | None, bool]], n_out: int = 1,
                 outputs: list[str] | None = None, domain: str = MS, opset: int = 17, oracle_domain: str | None = None,
                 oracle_op: str | None = None, numpy_oracle: Callable[..., np.ndarray] | None = None,
                 **attrs: Any) -> None:
        self.op, self.inputs, self.domain, self.opset, self.attrs = op, inputs, domain, opset, attrs
        self.outputs = outputs if outputs is not None else [f"y{k}" for k in range(n_out)]
        self.oracle_domain, self.oracle_op, self.numpy_oracle = oracle_domain, oracle_op, numpy_oracle

    def model(self, domain: str | None = None, op: str | None = None) -> onnx.ModelProto:
        m = single_node_model(op or self.op, self.inputs, self.outputs, {"": self.opset, MS: 1},
                              self.domain if domain is None else domain, **self.attrs)
        m.graph.node[0].name = f"the_{self.op.lower()}"  # the node keeps its name when the oracle runs another op
        return m

    @property
    def feeds(self) -> dict[str, np.ndarray]:
        return {n: v for n, v, c in self.inputs if v is not None and not c}

    def oracle(self) -> list[np.ndarray]:
        if self.numpy_oracle is not None:
            return [self.numpy_oracle(*(v for _, v, _ in self.inputs))]
        return ort_run(self.model(self.oracle_domain, self.oracle_op).SerializeToString(), self.feeds)


CASES: dict[str, Callable[[], Case]] = {}


def case(name: str) -> Callable[[Callable[[], Case]], Callable[[], Case]]:
    def reg(fn: Callable[[], Case]) -> Callable[[], Case]:
        assert name not in CASES
        CASES[name] = fn
        return fn
    return reg


def _conv(activation: str | None, z: bool = False, **attrs: Any) -> Case:
    ins = [("x", arr(1, 4, 7, 7), False), ("w", arr(6, 4, 3, 3), True), ("b", arr(6), True)]
    if z:
        ins.append(("z", arr(1, 6, 7, 7), False))
    if activation:
        attrs["activation"] = activation
    return Case("FusedConv", ins, pads=[1, 1, 1, 1], **attrs)


case("fused_conv_relu")(lambda: _conv("Relu"))
case("fused_conv_clip")(lambda: _conv("Clip", activation_params=[-0.2, 0.5]))
case("fused_conv_leaky_relu")(lambda: _conv("LeakyRelu", activation_params=[0.2]))
case("fused_conv_sigmoid")(lambda: _conv("Sigmoid"))
case("fused_conv_tanh")(lambda: _conv("Tanh"))
case("fused_conv_hard_sigmoid")(lambda: _conv("HardSigmoid", activation_params=[0.3, 0.4]))
case("fused_conv_z_relu")(lambda: _conv("Relu", z=True))
case("fused_conv_no_activation")(lambda: _conv(None))
case("fused_conv_1d_no_bias")(lambda: Case("FusedConv", [("x", arr(2, 3, 9), False), ("w", arr(5, 3, 3), True)],
                                            strides=[2], activation="Relu"))
case("fused_gemm_relu")(lambda: Case("FusedGemm", [("a", arr(3, 6), False), ("b", arr(4, 6), True),
                                                   ("c", arr(4), True)], transB=1, activation="Relu"))
case("fused_gemm_leaky_relu_alpha_beta")(lambda: Case(
    "FusedGemm", [("a", arr(6, 3), False), ("b", arr(6, 4), True), ("c", arr(4), True)], transA=1, alpha=0.5,
    beta=2.0, activation="LeakyRelu", activation_alpha=0.3))
case("fused_gemm_plain")(lambda: Case("FusedGemm", [("a", arr(3, 6), False), ("b", arr(6, 4), True)],
                                     oracle_op="Gemm", oracle_domain=""))
case("fused_matmul_alpha_trans_a")(lambda: Case("FusedMatMul", [("a", arr(2, 5, 3), False), ("b", arr(2, 5, 4), False)],
                                                transA=1, alpha=0.25))
case("fused_matmul_const_trans_b")(lambda: Case("FusedMatMul", [("a", arr(3, 4, 6), False), ("b", arr(5, 6), True)],
                                                transB=1, alpha=-1.5))
case("fused_matmul_trans_batch_a")(lambda: Case("FusedMatMul", [("a", arr(4, 2, 3, 5), False),
                                                                 ("b", arr(2, 3, 5, 6), False)], transBatchA=1))
case("fused_matmul_trans_batch_b_trans_b")(lambda: Case(
    "FusedMatMul", [("a", arr(2, 3, 4, 5), False), ("b", arr(6, 2, 3, 5), False)], transBatchB=1, transB=1))
case("gelu")(lambda: Case("Gelu", [("x", arr(3, 40, lo=-5, hi=5), False)]))
case("fast_gelu")(lambda: Case("FastGelu", [("x", arr(3, 40, lo=-5, hi=5), False)]))
case("fast_gelu_bias")(lambda: Case("FastGelu", [("x", arr(2, 3, 8, lo=-5, hi=5), False), ("b", arr(8), True)]))
case("bias_gelu")(lambda: Case("BiasGelu", [("x", arr(2, 3, 8, lo=-5, hi=5), False), ("b", arr(8), True)]))
case("quick_gelu")(lambda: Case("QuickGelu", [("x", arr(3, 40, lo=-6, hi=6), False)]))
case("quick_gelu_alpha")(lambda: Case("QuickGelu", [("x", arr(3, 40, lo=-6, hi=6), False)], alpha=0.8))
case("bias_add")(lambda: Case("BiasAdd", [("x", arr(2, 9, 8), False), ("b", arr(8), True),
                                          ("s", arr(2, 9, 8), False)],
                                numpy_oracle=lambda x, b, s: x + b + s))


@case("skip_layer_norm_all_outputs")
def _skip_ln_all() -> Case:
    return Case("SkipLayerNormalization", [("x", arr(2, 5, 16), False), ("s", arr(2, 5, 16), False),
                                           ("g", arr(16), True), ("be", arr(16), True), ("bi", arr(16), True)], 4,
                epsilon=1e-5)


# small values: the default epsilon (1e-12) shows against any other
case("skip_layer_norm_no_beta_no_bias_default_epsilon")(lambda: Case(
    "SkipLayerNormalization", [("x", arr(2, 5, 16, lo=-1e-3, hi=1e-3), False),
                               ("s", arr(2, 5, 16, lo=-1e-3, hi=1e-3), False), ("g", arr(16), True)]))
case("skip_layer_norm_2d_skip_bias_sum")(lambda: Case(
    "SkipLayerNormalization", [("x", arr(2, 5, 16), False), ("s", arr(5, 16), True), ("g", arr(16), True),
                               ("be", None, True), ("bi", arr(16), True)], outputs=["y0", "", "", "y3"]))
case("layer_norm_microsoft_domain")(lambda: Case(
    "LayerNormalization", [("x", arr(2, 5, 16), False), ("g", arr(16), True), ("b", arr(16), True)], 3,
    opset=14, oracle_domain="", epsilon=1e-12))
case("layer_norm_onnxruntime_default_domain_opset14")(lambda: Case(
    "LayerNormalization", [("x", arr(3, 4, 6), False), ("g", arr(4, 6), True)], 3, domain="", opset=14, axis=1))
case("simplified_layer_norm_default_epsilon")(lambda: Case(
    "SimplifiedLayerNormalization", [("x", arr(2, 5, 16, lo=-3e-3, hi=3e-3), False), ("g", arr(16), True)], 2,
    domain=""))
case("skip_simplified_layer_norm")(lambda: Case(
    "SkipSimplifiedLayerNormalization", [("x", arr(2, 5, 16), False), ("s", arr(2, 5, 16), False),
                                         ("g", arr(16), True), ("bi", arr(16), True)], outputs=["y0", "", "y2", "y3"]))


def _embed(mask: bool = True, segments: bool = True, positions: bool = False, outputs: int | list[str] = 3,
           **attrs: Any) -> Case:
    ids = R.integers(0, 30, (2, 6)).astype(np.int32)
    m = np.array([[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0]], np.int32)
    return Case("EmbedLayerNormalization", [
        ("ids", ids, False), ("seg", R.integers(0, 2, (2, 6)).astype(np.int32) if segments else None, False),
        ("we", arr(30, 16), True), ("pe", arr(10, 16), True), ("se", arr(2, 16) if segments else None, True),
        ("g", arr(16), True), ("b", arr(16), True), ("m", m if mask else None, False),
        ("p", R.integers(0, 10, (2, 6)).astype(np.int32) if positions else None, False)],
        outputs=outputs if isinstance(outputs, list) else [f"y{k}" for k in range(outputs)], epsilon=1e-5, **attrs)


case("embed_layer_norm_all")(lambda: _embed())
case("embed_layer_norm_position_ids")(lambda: _embed(positions=True))
case("embed_layer_norm_no_segments_no_mask_sum")(lambda: _embed(mask=False, segments=False, outputs=["y0", "", "y2"]))
case("embed_layer_norm_default_epsilon")(lambda: Case("EmbedLayerNormalization", [
    ("ids", R.integers(0, 30, (2, 6)).astype(np.int32), False), ("seg", None, False),
    ("we", arr(30, 16, lo=-1e-3, hi=1e-3), True), ("pe", arr(10, 16, lo=-1e-3, hi=1e-3), True), ("se", None, True),
    ("g", arr(16), True), ("b", arr(16), True)], mask_index_type=0))
case("embed_layer_norm_one_output")(lambda: _embed(mask=False, outputs=1, mask_index_type=0))

B_, S_, D_ = 2, 5, 16


def _attention(mask: np.ndarray | None = None, bias: bool = True, sizes: tuple[int, int, int] | None = None,
               attention_bias: np.ndarray | None = None, outputs: int = 1, mask_const: bool = False,
               **attrs: Any) -> Case:
    total = sum(sizes) if sizes else 3 * D_
    if sizes:
        attrs["qkv_hidden_sizes"] = list(sizes)
    ins = [("x", arr(B_, S_, D_), False), ("w", arr(D_, total), True), ("b", arr(total) if bias else None, True),
           ("m", mask, mask_const), ("past", None, False), ("ab", attention_bias, False)]
    return Case("Attention", ins, outputs, num_heads=attrs.pop("num_heads", 2), **attrs)


LENGTHS = np.array([5, 3], np.int32)
RAW = np.array([[1, 1, 0, 1, 1], [1, 1, 1, 0, 0]], np.int32)
case("attention_no_mask")(lambda: _attention())
case("attention_key_lengths")(lambda: _attention(LENGTHS))
case("attention_key_lengths_constant")(lambda: _attention(LENGTHS, mask_const=True))
case("attention_ends_and_starts")(lambda: _attention(np.array([5, 4, 1, 2], np.int32)))
case("attention_raw_2d_mask")(lambda: _attention(RAW))
case("attention_raw_3d_mask")(lambda: _attention(R.integers(0, 2, (B_, S_, S_)).astype(np.int32) | np.eye(
    S_, dtype=np.int32)))
case("attention_unidirectional_with_mask")(lambda: _attention(LENGTHS, unidirectional=1))
case("attention_no_bias_scale_filter")(lambda: _attention(RAW, bias=False, scale=0.2, mask_filter_value=-30.0))
case("attention_qkv_sizes")(lambda: _attention(LENGTHS, sizes=(16, 16, 8), num_heads=4))
case("attention_bias_input")(lambda: _attention(RAW, attention_bias=arr(1, 2, S_, S_)))
case("attention_present")(lambda: _attention(LENGTHS, outputs=2))


@functools.cache
def prepared(name: str) -> tuple[Case, bytes, list[np.ndarray]]:
    c = CASES[name]()
    return c, convert(import_onnx(c.model())).data, c.oracle()


@pytest.mark.parametrize(("engine_name", "variant"), ENGINES, ids=[e for e, _ in ENGINES])
@pytest.mark.parametrize("name", sorted(CASES))
def test_node_matches_onnxruntime(name: str, engine_name: str, variant: str | None) -> None:
    c, data, want = prepared(name)
    got = engine(data, engine_name, variant).run(c.feeds)
    for out, w in zip([o for o in c.outputs if o], want, strict=True):
        assert_close(got[out], w, f"{name} {out}")


# -- refused forms -------------------------------------------------------------------------------------------------
def _refused(c: Case, *words: str) -> None:
    with pytest.raises(UnsupportedOpError) as e:
        import_onnx(c.model())
    for w in (c.op, f"the_{c.op.lower()}", *words):
        assert w in str(e.value), str(e.value)


def test_attention_masks_it_cannot_read_are_refused_by_form() -> None:
    _refused(_attention(np.zeros(3 * B_ + 2, np.int32)), "mask_index", "[3 * batch + 2]")
    _refused(_attention(np.ones((B_, 1, S_, S_), np.int32)), "mask_index", "4-D mask")


def test_attention_with_past_state_is_refused() -> None:
    c = _attention()
    c.inputs[4] = ("past", arr(2, B_, 2, 3, D_ // 2), False)
    _refused(c, "past state")
    _refused(_attention(do_rotary=1), "rotary")


def test_unknown_fused_activation_is_refused() -> None:
    _refused(_conv("Elu"), "activation 'Elu'")


def test_other_microsoft_ops_stay_refused_by_domain() -> None:
    _refused(Case("Rfft", [("x", arr(2, 8), False)]), "custom domain 'com.microsoft'")


def test_onnx_attention_is_not_read_as_onnxruntimes() -> None:
    """ONNX's own Attention (opset 23: Q, K and V inputs) shares the name, not the semantics: refused by name."""
    c = Case("Attention", [("q", arr(1, 2, 4, 8), False), ("k", arr(1, 2, 4, 8), False), ("v", arr(1, 2, 4, 8), False)],
             domain="", opset=23)
    _refused(c, "no wasmrt equivalent")
