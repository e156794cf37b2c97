"""Block-sparse weights on the converter side (the format: python_ref/sparse.py).

- `sparse_tensors`: which constants the writer stores block-sparse. A weight qualifies when its 1x4 block sparsity
  reaches the threshold of its op kind and the sparse encoding is smaller than the dense one; weights a pruned model
  brings (ONNX, TFLite, a .wrt) are found this way, with no flag.
- `prune`: magnitude pruning in 1x4 blocks (`wasmrt sparsify`): per layer, the blocks with the smallest L2 norm are
  zeroed until the layer reaches the requested sparsity. Pruning without fine-tuning costs accuracy.
- `layers`: per-layer facts for reports (`wasmrt inspect`, `wasmrt sparsify`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from python_ref import sparse
from wasmrt.compile.ir import Graph, Node
from wasmrt.compile.writer import stored_constant

BLOCKS = ("1x4",)  # 1 input column x 4 output channels
# the block sparsity from which a weight is stored sparse, per op kind (the engines then decide per target whether the
# sparse kernels beat the dense ones: kernels_wasm/README.md); grouped/depthwise convolutions always run dense, so
# only a clearly smaller file is worth an expansion at load
STORE_THRESHOLD = {"fc": 0.2, "conv 1x1": 0.2, "conv KxK": 0.2, "grouped": 0.5}


@dataclass
class Layer:
    node: str
    op: str
    kind: str  # fc, conv 1x1, conv KxK, grouped
    weight: str
    shape: tuple[int, ...]
    sparsity: float  # fraction of 1x4 blocks that are all zero
    dense_bytes: int  # in the file, stored dense (fp16 where the weights mode stores it so)
    sparse_bytes: int  # in the file, stored block-sparse: values, int32 columns and row starts

    @property
    def prunable(self) -> bool:
        return self.kind != "grouped"


def _kind(g: Graph, n: Node) -> str:
    if n.op == "FULLY_CONNECTED":
        return "fc"
    w = g.tensors[n.inputs[1]].shape
    if n.attrs.get("groups", 1) != 1:
        return "grouped"
    return "conv 1x1" if w[1] == w[2] == 1 else "conv KxK"


def file_bytes(w: np.ndarray, weights: str = "auto") -> tuple[int, int]:
    """Bytes w takes in a .wrt stored dense and stored block-sparse (values, one int32 column per block, the row
    starts), each as the writer stores it under `weights` (fp16 where lossless with "auto")."""
    enc = sparse.encode(w)
    values = stored_constant(enc.values, weights)
    return (stored_constant(w, weights).nbytes,
            values.nbytes + 4 * enc.n_blocks + 4 * len(enc.row_starts))


def layers(g: Graph, weights: str = "auto") -> list[Layer]:
    """The weights that may be stored block-sparse: float32 or int8 constants read only as input 1 of CONV_2D or
    FULLY_CONNECTED (the format's rule), with their op and block sparsity."""
    uses: dict[str, list[tuple[Node, int]]] = {}
    for n in g.nodes:
        for slot, i in enumerate(n.inputs):
            if i:
                uses.setdefault(i, []).append((n, slot))
    out = []
    for name, t in g.tensors.items():
        us = uses.get(name, [])
        if (t.data is None or t.dtype not in (np.float32, np.int8) or len(t.shape) < 2 or not us or name in g.outputs
                or any(n.op not in sparse.SPARSE_OPS or slot != 1 for n, slot in us)):
            continue
        out.append(_layer(g, us[0][0], name, weights))
    return out


def _layer(g: Graph, n: Node, weight: str, weights: str = "auto") -> Layer:
    w = np.asarray(g.tensors[weight].data)
    return Layer(n.name, n.op, _kind(g, n), weight, tuple(w.shape), sparse.block_sparsity(w), *file_bytes(w, weights))


def sparse_tensors(g: Graph, weights: str = "auto") -> set[str]:
    """Constants worth storing block-sparse: at or above their kind's threshold, and smaller so."""
    return {ly.weight for ly in layers(g, weights)
            if ly.sparsity >= STORE_THRESHOLD[ly.kind] and ly.sparse_bytes < ly.dense_bytes}


def first_layers(g: Graph) -> set[str]:
    """Layers that read a graph input directly: they see raw pixels, and pruning them costs the most accuracy for
    the least work saved, so `prune` keeps them dense unless asked."""
    return {n.name for n in g.nodes if n.op in sparse.SPARSE_OPS and n.inputs[0] in g.inputs}


def prune_weight(w: np.ndarray, sparsity: float) -> np.ndarray:
    """w with its round(sparsity * blocks) smallest 1x4 blocks (L2 norm) zeroed; ties broken by position."""
    rows, cols = sparse.matrix_shape(w.shape)
    br = sparse.block_rows(rows)
    m = np.zeros((br * sparse.BLOCK, cols), np.float64)
    m[:rows] = w.reshape(rows, cols)
    norms = np.sqrt((m.reshape(br, sparse.BLOCK, cols) ** 2).sum(axis=1)).reshape(-1)
    k = round(sparsity * norms.size)
    keep = np.ones(norms.size, bool)
    keep[np.argsort(norms, kind="stable")[:k]] = False
    mask = np.repeat(keep.reshape(br, cols), sparse.BLOCK, axis=0)[:rows]
    return (w.reshape(rows, cols) * mask).astype(w.dtype).reshape(w.shape)


def prune(g: Graph, sparsity: float, block: str = "1x4", skip: set[str] | None = None,
          include_first: bool = False) -> list[tuple[Layer, Layer | None]]:
    """Prune every convolution (groups == 1) and fully connected layer of g in place to `sparsity` (0 <= s < 1)
    in blocks of `block`; layers named in skip, grouped/depthwise ones and (unless include_first) those reading a
    graph input stay as they are. Returns (before, after) per candidate layer; after is None for a kept layer."""
    if block not in BLOCKS:
        raise ValueError(f"block {block!r} is not supported; the format stores blocks of {', '.join(BLOCKS)} "
                         "(1 input column x 4 output channels)")
    if not 0.0 <= sparsity < 1.0:
        raise ValueError(f"sparsity must be in [0, 1), got {sparsity}")
    keep = set(skip or ()) | (set() if include_first else first_layers(g))
    unknown = set(skip or ()) - {n.name for n in g.nodes}
    if unknown:
        raise ValueError(f"--skip names no layer of the model: {sorted(unknown)}")
    report = []
    for ly in layers(g):
        if not ly.prunable or ly.node in keep:
            report.append((ly, None))
            continue
        t = g.tensors[ly.weight]
        t.data = prune_weight(np.asarray(t.data), max(sparsity, 0.0))
        report.append((ly, _layer(g, next(n for n in g.nodes if n.name == ly.node), ly.weight)))
    return report
