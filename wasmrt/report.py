"""`wasmrt inspect`: what a .wrt file holds, as text."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np

from python_ref import sparse
from python_ref.wrt_file import TensorInfo, WrtModel, read_wrt


def macs(model: WrtModel) -> int:
    """Multiply-accumulates of the convolution and dense layers (the usual FLOP count is twice this)."""
    total = 0
    for op in model.ops:
        if op.op in ("CONV_2D", "CONV_TRANSPOSE_2D"):
            # One MAC per weight per output pixel (conv) or per input pixel (transposed conv), weights OHWI/g.
            pixels = model.tensors[op.outputs[0] if op.op == "CONV_2D" else op.inputs[0]].shape[:3]
            total += int(np.prod(pixels)) * int(np.prod(model.tensors[op.inputs[1]].shape))
        elif op.op in ("FULLY_CONNECTED", "MATMUL"):
            out = model.tensors[op.outputs[0]].shape
            k = model.tensors[op.inputs[0]].shape[-1]
            total += int(np.prod(out)) * k
    return total


def _fmt_shape(shape: tuple[int, ...]) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


def _kib(n: int) -> str:
    return f"{n / 1024:,.1f} KiB" if n < 1 << 20 else f"{n / (1 << 20):,.2f} MiB"


def stored_bytes(t: TensorInfo) -> int:
    """Bytes a constant takes in the file (block-sparse: values, columns and row starts)."""
    item = (t.stored_dtype or t.dtype).itemsize
    if t.sparse is not None:
        return t.sparse.values.size * item + 4 * (len(t.sparse.columns) + len(t.sparse.row_starts))
    return int(np.prod(t.shape)) * item


def layer_table(m: WrtModel) -> list[str]:
    """One line per CONV_2D / FULLY_CONNECTED: its weight stored dense or block-sparse, block sparsity, bytes."""
    lines = []
    for op in m.ops:
        if op.op not in sparse.SPARSE_OPS:
            continue
        w = m.tensors[op.inputs[1]]
        if w.data is None:
            continue
        kind = "fc" if op.op == "FULLY_CONNECTED" else (
            f"{'dw' if op.attrs['groups'] > 1 else 'conv'} {w.shape[1]}x{w.shape[2]}")
        how = "sparse 1x4" if w.sparse is not None else "dense"
        lines.append(f"  {op.name:<28} {kind:<9} {_fmt_shape(w.shape):<18} {how:<10} "
                     f"{sparse.block_sparsity(w.data):6.1%}  {_kib(stored_bytes(w)):>12}"
                     f"  {(w.stored_dtype or w.dtype).name}")
    return lines


def describe(path: str | Path, layers: bool = False) -> str:
    data = Path(path).read_bytes() if not isinstance(path, bytes) else path
    m = read_wrt(data, str(path))
    md = m.metadata
    lines = [f"{Path(path).name}: .wrt format v{m.version}, {_kib(len(data))}"]
    if md["source"]:
        lines.append(f"source: {md['source']}" + (f" ({md['producer']})" if md["producer"] else ""))
    if md["props"].get("note"):
        lines.append(f"note: {md['props']['note']}")  # e.g. MobileNetV2's random weights
    lines.append("inputs:")
    for k, i in enumerate(m.inputs):
        t = m.tensors[i]
        line = f"  {t.name}  {_fmt_shape(t.shape)} {t.dtype}"
        if t.bounds is not None:
            line += "   sized at run time: " + "[" + ", ".join(
                str(lo) if lo == hi else f"{lo}..{hi}" for lo, hi in t.bounds) + "]"
        pre = md["preprocess"].get(k)
        if pre:
            mean = ",".join(f"{v:g}" for v in pre["mean"])
            std = ",".join(f"{v:g}" for v in pre["std"])
            line += (f"   image: {pre['color']} {pre['layout']}, (pixel - [{mean}]) / [{std}], {pre['resize']}"
                     + (f" {pre['crop_fraction']:g}" if pre["resize"] == "crop" else ""))
        lines.append(line)
    lines.append("outputs:")
    lines += [f"  {m.tensors[i].name}  {_fmt_shape(m.tensors[i].shape)} {m.tensors[i].dtype}" for i in m.outputs]
    counts = Counter(op.op for op in m.ops)
    lines.append(f"ops: {len(m.ops)}  (" + ", ".join(f"{k} {v}" for k, v in counts.most_common()) + ")")
    consts = [t for t in m.tensors if t.data is not None]
    params = sum(int(np.prod(t.shape)) for t in consts)
    stored = sum(stored_bytes(t) for t in consts)
    halves = sum(1 for t in consts if t.stored_dtype == np.float16)
    sparse_n = sum(1 for t in consts if t.sparse is not None)
    lines.append(f"params: {params:,} in {len(consts)} constants ({_kib(stored)} stored"
                 + (f", {halves} of them as fp16" if halves else "")
                 + (f", {sparse_n} block-sparse" if sparse_n else "") + ")")
    quantized = [t for t in m.tensors if t.quant is not None]
    if quantized:
        per_channel = sum(1 for t in quantized if not t.quant.per_tensor)
        lines.append(f"quantized: {len(quantized)} tensors int8/uint8/int32 ({per_channel} per channel), "
                     f"{sum(1 for op in m.ops if op.op in ('QUANTIZE', 'DEQUANTIZE'))} QUANTIZE/DEQUANTIZE, "
                     f"{sum(1 for op in m.ops if op.op == 'LOOKUP')} LOOKUP tables")
    lines.append(f"compute: {macs(m) / 1e6:,.1f} M multiply-adds")
    ratio = m.arena_size / m.lower_bound if m.lower_bound else 1.0
    lines.append(f"arena: {m.arena_size:,} bytes, lower bound {m.lower_bound:,} bytes ({ratio:.3f}x)")
    if md["labels"]:
        lines.append(f"labels: {len(md['labels'])} (" + ", ".join(repr(x) for x in md["labels"][:3]) + ", ...)")
    if layers or sparse_n:
        lines.append("layers (weights: stored dense or block-sparse in 1x4 blocks, block sparsity, bytes in the file):")
        lines += layer_table(m)
    return "\n".join(lines)
