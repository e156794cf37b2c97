"""Small models built in code with PyTorch and exported to ONNX (the legacy TorchScript exporter, opset 17): the
recurrent layers, a ViT-style and a BERT-style encoder. Seeded, so every run exports the same model."""

from __future__ import annotations

import functools
import warnings
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
OPSET = 17


def _export(model: torch.nn.Module, args: tuple, path: Path, inputs: list[str], outputs: list[str]) -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model.eval(), args, str(path), dynamo=False, opset_version=OPSET, input_names=inputs,
                          output_names=outputs)
    return path


class Recurrent(torch.nn.Module):
    """Two stacked recurrent layers and a linear head; the state in and out (streaming)."""

    def __init__(self, kind: str, bidirectional: bool, features: int = 12, hidden: int = 24) -> None:
        super().__init__()
        cls = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU, "rnn": torch.nn.RNN}[kind]
        self.kind = kind
        self.rnn = cls(features, hidden, num_layers=2, batch_first=True, bidirectional=bidirectional)
        self.head = torch.nn.Linear(hidden * (2 if bidirectional else 1), 5)

    def forward(self, x: torch.Tensor, *state: torch.Tensor) -> tuple[torch.Tensor, ...]:
        y, s = self.rnn(x, tuple(state) if self.kind == "lstm" else state[0])
        return (self.head(y), *(s if self.kind == "lstm" else (s,)))


# kind, bidirectional -> the ONNX input and output names
RECURRENT = {("lstm", False): (["x", "h0", "c0"], ["y", "hn", "cn"]),
             ("lstm", True): (["x", "h0", "c0"], ["y", "hn", "cn"]),
             ("gru", False): (["x", "h0"], ["y", "hn"]),
             ("gru", True): (["x", "h0"], ["y", "hn"])}
BATCH, STEPS, FEATURES, HIDDEN = 2, 7, 12, 24


def recurrent_state_shape(bidirectional: bool) -> tuple[int, int, int]:
    return (2 * (2 if bidirectional else 1), BATCH, HIDDEN)


@functools.cache
def recurrent_onnx(kind: str, bidirectional: bool, folder: str) -> Path:
    torch.manual_seed(1)
    m = Recurrent(kind, bidirectional, FEATURES, HIDDEN)
    ins, outs = RECURRENT[(kind, bidirectional)]
    x = torch.randn(BATCH, STEPS, FEATURES)
    state = tuple(torch.zeros(recurrent_state_shape(bidirectional)) for _ in ins[1:])
    name = f"{kind}{'_bi' if bidirectional else ''}.onnx"
    return _export(m, (x, *state), Path(folder) / name, ins, outs)


class ViT(torch.nn.Module):
    """Patch embedding (a strided conv), class token, position embedding, pre-norm encoder layers, a linear head."""

    def __init__(self, img: int = 32, patch: int = 4, dim: int = 64, heads: int = 4, layers: int = 3,
                 ffn: int = 128, classes: int = 10) -> None:
        super().__init__()
        self.patch = torch.nn.Conv2d(3, dim, patch, patch)
        n = (img // patch) ** 2
        self.cls = torch.nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos = torch.nn.Parameter(torch.randn(1, n + 1, dim) * 0.02)
        layer = torch.nn.TransformerEncoderLayer(dim, heads, ffn, dropout=0.0, activation="gelu", batch_first=True,
                                                 norm_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = torch.nn.LayerNorm(dim)
        self.head = torch.nn.Linear(dim, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        p = self.patch(x).flatten(2).transpose(1, 2)
        h = torch.cat([self.cls.expand(x.shape[0], -1, -1), p], 1) + self.pos
        return self.head(self.norm(self.encoder(h))[:, 0])


class Bert(torch.nn.Module):
    """Token, position and segment embeddings, post-norm encoder layers with an attention mask, a pooler."""

    def __init__(self, vocab: int = 1000, dim: int = 128, heads: int = 4, layers: int = 2, ffn: int = 512,
                 seq: int = 32) -> None:
        super().__init__()
        self.tok = torch.nn.Embedding(vocab, dim)
        self.pos = torch.nn.Embedding(seq, dim)
        self.seg = torch.nn.Embedding(2, dim)
        self.norm = torch.nn.LayerNorm(dim)
        layer = torch.nn.TransformerEncoderLayer(dim, heads, ffn, dropout=0.0, activation="gelu", batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.pool = torch.nn.Linear(dim, dim)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor, segments: torch.Tensor) -> tuple[torch.Tensor, ...]:
        pos = torch.arange(ids.shape[1]).unsqueeze(0)
        h = self.norm(self.tok(ids) + self.pos(pos) + self.seg(segments))
        h = self.encoder(h, src_key_padding_mask=mask == 0)
        return h, torch.tanh(self.pool(h[:, 0]))


VIT_INPUT = (1, 3, 32, 32)
BERT_BATCH, BERT_SEQ, BERT_VOCAB = 2, 32, 1000


@functools.cache
def vit_onnx(folder: str) -> Path:
    torch.manual_seed(2)
    return _export(ViT(), (torch.randn(*VIT_INPUT),), Path(folder) / "vit.onnx", ["pixels"], ["logits"])


def bert_feeds(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    mask = np.ones((BERT_BATCH, BERT_SEQ), np.int64)
    mask[1, BERT_SEQ // 2 + 3:] = 0  # padding at the end of the second sequence
    seg = np.zeros((BERT_BATCH, BERT_SEQ), np.int64)
    seg[:, BERT_SEQ // 2:] = 1
    return {"ids": rng.integers(0, BERT_VOCAB, (BERT_BATCH, BERT_SEQ)).astype(np.int64), "mask": mask,
            "segments": seg}


@functools.cache
def bert_onnx(folder: str) -> Path:
    torch.manual_seed(3)
    f = {k: torch.from_numpy(v) for k, v in bert_feeds().items()}
    return _export(Bert(), (f["ids"], f["mask"], f["segments"]), Path(folder) / "bert.onnx",
                   ["ids", "mask", "segments"], ["hidden", "pooled"])
