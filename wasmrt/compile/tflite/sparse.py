"""TFLite sparse tensors (SparsityParameters) -> dense numpy arrays.

TFLite stores a sparse constant in the TACO style: the tensor's n dimensions, some of them split into blocks
(block_map names the original dimension of each of the k block dimensions), are traversed in `traversal_order`
(n + k levels); each level is DENSE (dense_size positions) or SPARSE_CSR (per parent position, a segment of the
`array_indices` list, bounded by `array_segments`). The buffer holds one value per leaf of that traversal. Every
length, index and bound is checked here, so a hostile file gives a ModelFormatError, never a wrong tensor or an
expansion to gigabytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import tflite

from wasmrt.errors import ModelFormatError

MAX_DENSE_ELEMENTS = 1 << 26  # one sparse constant may expand to at most this many values (256 MiB of float32)
_INDEX_VECTORS = {1: tflite.Int32Vector, 2: tflite.Uint16Vector, 3: tflite.Uint8Vector}


@dataclass
class Level:
    dense: bool
    dense_size: int = 0
    segments: np.ndarray | None = None
    indices: np.ndarray | None = None


@dataclass
class Sparsity:
    traversal_order: list[int]
    block_map: list[int]
    levels: list[Level]


def _index_vector(kind: int, table: Any, where: str) -> np.ndarray:
    cls = _INDEX_VECTORS.get(int(kind))
    if cls is None or table is None:
        raise ModelFormatError(f"{where}: missing or unknown index vector (type {kind})")
    v = cls()
    v.Init(table.Bytes, table.Pos)
    return np.zeros(0, np.int64) if v.ValuesIsNone() else v.ValuesAsNumpy().astype(np.int64)


def read_sparsity(sp: Any, where: str) -> Sparsity:
    """The SparsityParameters table of a tensor, decoded eagerly."""
    levels = []
    for k in range(sp.DimMetadataLength()):
        dm = sp.DimMetadata(k)
        if int(dm.Format()) == tflite.DimensionType.DENSE:
            levels.append(Level(True, int(dm.DenseSize())))
        elif int(dm.Format()) == tflite.DimensionType.SPARSE_CSR:
            levels.append(Level(False, 0, _index_vector(dm.ArraySegmentsType(), dm.ArraySegments(), where),
                                _index_vector(dm.ArrayIndicesType(), dm.ArrayIndices(), where)))
        else:
            raise ModelFormatError(f"{where}: dimension {k} has unknown format {dm.Format()}")
    order = [int(x) for x in sp.TraversalOrderAsNumpy()] if not sp.TraversalOrderIsNone() else []
    bmap = [int(x) for x in sp.BlockMapAsNumpy()] if not sp.BlockMapIsNone() else []
    return Sparsity(order, bmap, levels)


def densify(sp: Sparsity, shape: tuple[int, ...], values: np.ndarray, where: str) -> np.ndarray:
    """The dense tensor of `shape` that the sparse encoding describes (values: the buffer, in traversal order)."""
    n, k = len(shape), len(sp.block_map)
    order = sp.traversal_order
    if any(d < 0 for d in shape):
        raise ModelFormatError(f"{where}: a sparse constant needs a static shape, not {list(shape)}")
    if len(order) != n + k or sorted(order) != list(range(n + k)) or sorted(order[:n]) != list(range(n)):
        raise ModelFormatError(f"{where}: traversal order {order} is not a permutation of the {n} dimensions "
                               f"followed by the {k} block dimensions")
    if len(sp.levels) != n + k:
        raise ModelFormatError(f"{where}: {len(sp.levels)} dimension metadata entries, expected {n + k}")
    if len(set(sp.block_map)) != k or any(not 0 <= d < n for d in sp.block_map):
        raise ModelFormatError(f"{where}: block map {sp.block_map} must name distinct dimensions of {n}")
    if int(np.prod(shape, dtype=object)) > MAX_DENSE_ELEMENTS:
        raise ModelFormatError(f"{where}: a sparse constant of shape {list(shape)} would expand to more than "
                               f"{MAX_DENSE_ELEMENTS} values")
    # sizes of the n + k expanded dimensions: blocked dimensions hold shape / block, block dimensions the block
    block = {}
    for j, d in enumerate(sp.block_map):
        lvl = sp.levels[order.index(n + j)]
        if not lvl.dense or lvl.dense_size <= 0 or shape[d] % lvl.dense_size:
            raise ModelFormatError(f"{where}: block dimension {n + j} must be dense with a size dividing "
                                   f"dimension {d} ({shape[d]})")
        block[d] = lvl.dense_size
    sizes = [shape[d] // block.get(d, 1) for d in range(n)] + [block[d] for d in sp.block_map]
    # walk the levels: for every position of the current level, its parent-local coordinates so far
    pos = np.zeros(1, np.int64)  # position ids of the current level's entries
    coords = np.zeros((0, 1), np.int64)  # one row per traversed dimension
    for lvl_i, lvl in enumerate(sp.levels):
        dim = order[lvl_i]
        size = sizes[dim]
        if lvl.dense:
            if lvl.dense_size != size:
                raise ModelFormatError(f"{where}: dense dimension {dim} has size {lvl.dense_size}, expected {size}")
            new_pos = (pos[:, None] * size + np.arange(size)).reshape(-1)
            c = np.tile(np.arange(size), len(pos))
            parent = np.repeat(np.arange(len(pos)), size)
        else:
            seg, idx = lvl.segments, lvl.indices
            assert seg is not None and idx is not None
            if len(seg) != (int(pos.max()) + 2 if len(pos) else 1):
                raise ModelFormatError(f"{where}: level {lvl_i}: {len(seg)} segment bounds for "
                                       f"{int(pos.max()) + 1 if len(pos) else 0} parent positions")
            if seg[0] != 0 or np.any(np.diff(seg) < 0) or seg[-1] != len(idx):
                raise ModelFormatError(f"{where}: level {lvl_i}: segments must start at 0, never decrease and end "
                                       f"at the {len(idx)} indices")
            if len(idx) and (idx.min() < 0 or idx.max() >= size):
                raise ModelFormatError(f"{where}: level {lvl_i}: an index is outside dimension {dim} (size {size})")
            counts = seg[pos + 1] - seg[pos]
            parent = np.repeat(np.arange(len(pos)), counts)
            starts = np.repeat(seg[pos], counts)
            new_pos = starts + (np.arange(len(parent)) - np.repeat(np.cumsum(counts) - counts, counts))
            c = idx[new_pos]
        coords = np.concatenate([coords[:, parent], c[None, :]], axis=0)
        pos = new_pos
        if len(pos) > MAX_DENSE_ELEMENTS:
            raise ModelFormatError(f"{where}: the sparse encoding has more than {MAX_DENSE_ELEMENTS} entries")
    if len(values) != len(pos):
        raise ModelFormatError(f"{where}: the buffer holds {len(values)} values, the sparse encoding "
                               f"{len(pos)}")
    full = np.zeros((n + k, len(pos)), np.int64)
    full[order] = coords
    index = [full[d] * block.get(d, 1) for d in range(n)]
    for j, d in enumerate(sp.block_map):
        index[d] = index[d] + full[n + j]
    flat = np.ravel_multi_index(tuple(index), shape) if n else np.zeros(len(pos), np.int64)
    if len(np.unique(flat)) != len(flat):
        raise ModelFormatError(f"{where}: the sparse encoding names an element twice")
    dense = np.zeros(int(np.prod(shape, dtype=np.int64)), values.dtype)
    dense[flat] = values  # leaf positions are 0, 1, ... in traversal order: the buffer's order
    return dense.reshape(shape)


def encode(fb: Any, dense: np.ndarray, block: int = 0, index_type: str = "int32") -> tuple[Any, np.ndarray]:
    """The inverse of densify, for tests and the importer fuzzer: (SparsityParametersT of the TFLite schema module
    `fb`, the values in traversal order). Every dimension is dense but the last, which is CSR (TFLite's usual
    encoding of sparse weights); block > 0 splits dimension 0 into blocks of that many rows (a trailing dense block
    dimension, as TFLite encodes 4x1 blocks)."""
    n = dense.ndim
    e = dense
    if block:
        e = dense.reshape(dense.shape[0] // block, block, *dense.shape[1:])
        e = np.moveaxis(e, 1, -1)  # [O/b, d1 .. d_{n-1}, b]
    lead = e.shape[: n - 1]
    b_size = block or 1
    m = e.reshape(int(np.prod(lead, dtype=np.int64)), dense.shape[-1], b_size)
    nz = (m != 0).any(axis=2)
    segments = np.concatenate([[0], np.cumsum(nz.sum(axis=1))])
    p, i = np.nonzero(nz)
    values = m[p, i].reshape(-1)
    kinds = {"int32": (fb.SparseIndexVector.Int32Vector, fb.Int32VectorT, np.int32),
             "uint16": (fb.SparseIndexVector.Uint16Vector, fb.Uint16VectorT, np.uint16),
             "uint8": (fb.SparseIndexVector.Uint8Vector, fb.Uint8VectorT, np.uint8)}
    kind, cls, dt = kinds[index_type]

    def vec(a: np.ndarray) -> Any:
        v = cls()
        v.values = a.astype(dt)
        return v

    levels = []
    for d in range(n + (1 if block else 0)):
        dm = fb.DimensionMetadataT()
        if d == n - 1:
            dm.format = fb.DimensionType.SPARSE_CSR
            dm.arraySegmentsType, dm.arraySegments = kind, vec(segments)
            dm.arrayIndicesType, dm.arrayIndices = kind, vec(i)
        else:
            dm.format = fb.DimensionType.DENSE
            dm.denseSize = int(e.shape[d])
        levels.append(dm)
    sp = fb.SparsityParametersT()
    sp.traversalOrder = list(range(n + (1 if block else 0)))
    sp.blockMap = [0] if block else []
    sp.dimMetadata = levels
    return sp, values
