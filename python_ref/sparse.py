"""Block-sparse constants: what Tensor.sparsity means in a .wrt file (schema/wrt.fbs, table BlockSparsity).

A tensor is seen as a matrix [rows = shape[0], cols = prod(shape[1:])]; for OHWI convolution weights a row is an
output channel and a column the flattened (kh, kw, ci) index, for FULLY_CONNECTED weights [N, K] a row is an output
feature. The matrix is cut into blocks of 4 consecutive rows x 1 column ("1x4" blocks along the output channels, as
in MNN). Only blocks holding a non-zero are stored: per block row r, `row_starts[r] ..< row_starts[r + 1]` index
the stored blocks, `columns` gives each one's column (increasing within a block row), and the tensor's buffer holds
4 values per stored block (rows past shape[0] hold 0).

A sparse tensor IS its dense equivalent (`expand`): every op computes exactly what it computes on the dense tensor,
so engines may run it dense or sparse as they see fit (an int8 CONV_2D or FULLY_CONNECTED on int8 block-sparse
weights gives, bit for bit, the bytes of the dense int8 op on the expansion). Readers verify the encoding completely
(`check`, with the same words in kernels_wasm/engine/model_read.c) and bound what all sparse constants of a file
expand to.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BLOCK = 4  # rows per block
# all block-sparse constants of one file expand to at most this many bytes of float32 (a tiny file must not unpack
# to gigabytes; the C engine has the same rule, and counts each dense expansion it makes against max_memory)
MAX_EXPANDED_BYTES = 1 << 30
SPARSE_OPS = ("CONV_2D", "FULLY_CONNECTED")  # ops whose weights (input 1) may be stored block-sparse
# the stored dtypes: float weights, and int8 weights of quantized layers (an absent block is the integer 0, which
# is the real 0 for the symmetric int8 weights the quantizer writes)
DTYPES = (np.dtype(np.float32), np.dtype(np.float16), np.dtype(np.int8))


@dataclass(frozen=True)
class BlockSparse:
    row_starts: np.ndarray  # int64 [block_rows + 1]
    columns: np.ndarray  # int64 [n_blocks]
    values: np.ndarray  # [n_blocks, 4] in the stored dtype

    @property
    def n_blocks(self) -> int:
        return len(self.columns)


def matrix_shape(shape: tuple[int, ...]) -> tuple[int, int]:
    return int(shape[0]), int(np.prod(shape[1:], dtype=np.int64))


def block_rows(rows: int) -> int:
    return -(-rows // BLOCK)


def _blocks(w: np.ndarray) -> np.ndarray:
    """[block_rows, 4, cols]: the matrix view of w, rows zero-padded to a multiple of 4."""
    rows, cols = matrix_shape(w.shape)
    m = np.zeros((block_rows(rows) * BLOCK, cols), w.dtype)
    m[:rows] = w.reshape(rows, cols)
    return m.reshape(block_rows(rows), BLOCK, cols)


def block_mask(w: np.ndarray) -> np.ndarray:
    """[block_rows, cols]: True where the 1x4 block holds a non-zero."""
    return (_blocks(w) != 0).any(axis=1)


def block_sparsity(w: np.ndarray) -> float:
    """The fraction of 1x4 blocks that are all zero (0 for an empty tensor)."""
    mask = block_mask(w)
    return 1.0 - float(mask.mean()) if mask.size else 0.0


def element_sparsity(w: np.ndarray) -> float:
    """The fraction of zero weights (0 for an empty tensor)."""
    return 1.0 - float(np.count_nonzero(w)) / w.size if w.size else 0.0


def channel_lists(w: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """The unstructured view engines may run a weight in (whether stored dense or block-sparse; the same tensor):
    per row of the matrix (output channel), the columns of its non-zeros in increasing order and their values.
    The C engine runs a layer so (`sparse gemm (unstructured)`) when the 1x4 blocks are too full for the block
    kernels but most single weights are zero (weights pruned one by one, as MediaPipe's sparse models)."""
    m = w.reshape(matrix_shape(w.shape))
    return [(np.nonzero(row)[0], row[row != 0]) for row in m]


def encode(w: np.ndarray) -> BlockSparse:
    """The block-sparse encoding of w (rank >= 1): exactly the blocks holding a non-zero."""
    b = _blocks(w)
    mask = (b != 0).any(axis=1)
    r, c = np.nonzero(mask)  # row-major: by block row, then increasing column
    starts = np.concatenate([[0], np.cumsum(mask.sum(axis=1))]).astype(np.int64)
    return BlockSparse(starts, c.astype(np.int64), np.ascontiguousarray(b[r, :, c]))


def expand(shape: tuple[int, ...], s: BlockSparse) -> np.ndarray:
    """The dense tensor the (verified) encoding stands for, in the values' dtype."""
    rows, cols = matrix_shape(shape)
    br = block_rows(rows)
    m = np.zeros((br, cols, BLOCK), s.values.dtype)
    r = np.repeat(np.arange(br), np.diff(s.row_starts))
    m[r, s.columns] = s.values
    return np.ascontiguousarray(m.transpose(0, 2, 1).reshape(br * BLOCK, cols)[:rows]).reshape(shape)


def check(shape: tuple[int, ...], row_starts: np.ndarray, columns: np.ndarray, n_bytes: int, itemsize: int,
          dtype_name: str) -> str | None:
    """What is wrong with an encoding (None: nothing), in the words both readers use. n_bytes: the buffer's size."""
    if len(shape) == 0:
        return "a block-sparse tensor needs rank 1 or more"
    rows, cols = matrix_shape(shape)
    br, nb = block_rows(rows), len(columns)
    if len(row_starts) != br + 1:
        return f"block-sparse: {len(row_starts)} row starts, expected {br + 1} (one per block of 4 rows, and one more)"
    rs = np.asarray(row_starts, np.int64)
    if rs[0] != 0 or np.any(np.diff(rs) < 0) or rs[-1] != nb:
        return f"block-sparse: row starts must begin at 0, never decrease and end at the {nb} stored blocks"
    col = np.asarray(columns, np.int64)
    row_of = np.repeat(np.arange(br), np.diff(rs))
    first = np.zeros(nb, bool)
    first[rs[:-1][rs[:-1] < rs[1:]]] = True  # the first block of each non-empty block row
    bad = (col < 0) | (col >= cols) | (~first & (np.diff(col, prepend=-1) <= 0))
    if bad.any():
        i = int(np.argmax(bad))
        return (f"block-sparse: block {i} (block row {row_of[i]}) is in column {col[i]}; columns must increase "
                f"within a block row and stay below {cols}")
    need = nb * BLOCK * itemsize
    if n_bytes != need:
        return f"block-sparse: the buffer holds {n_bytes} bytes, {nb} blocks of 4 {dtype_name} values need {need}"
    return None


def check_padding(shape: tuple[int, ...], s: BlockSparse) -> str | None:
    """Values of rows past shape[0] (in the last block row) must be 0: one file, one meaning."""
    rows = int(shape[0])
    if rows % BLOCK == 0:
        return None
    last = s.values[int(s.row_starts[-2]):, rows % BLOCK:]
    bad = np.nonzero((last != 0).any(axis=1))[0]
    if len(bad):
        return f"block-sparse: block {int(s.row_starts[-2]) + int(bad[0])} has a non-zero value past row {rows - 1}"
    return None
