"""Well-formed .wrt files with hostile meaning, one or more per class of attack found against the engine: they pass
the FlatBuffers verifier, so only the engine's semantic checks and resource budgets stand between them and a crash,
a hang, a memory bomb or another model's data. Used by tests/test_hostile_models.py (native, wasm, python_ref,
ASan+UBSan) and by the Node tests (tests/js/hostile.test.mjs, through js_fixtures.py).

Each case says what must happen: "ok" (loads, runs, and equals python_ref), or an error pattern the C engines'
message must match (and, for format errors, python_ref's too).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import flatbuffers
import numpy as np

from python_ref._fb import wrt_generated as fb
from python_ref.quant import QuantParams
from python_ref.wrt_file import IDENTIFIER
from wasmrt.compile.ir import Graph
from wasmrt.compile.planner import plan_memory
from wasmrt.compile.writer import _AlignedBufferT, write_wrt


@dataclass(frozen=True)
class Case:
    name: str
    kind: str  # the attack class: const-input, memory, hang, limits, format, aliasing
    data: bytes
    expect: str  # "ok", or a regex the C engine's error must match
    python_rejects: bool = False  # python_ref's reader refuses it with the same message


def feeds_for(inputs) -> dict[str, np.ndarray]:
    """The fixed input every engine runs a case with (TensorSpec list -> arrays)."""
    rng = np.random.default_rng(3)
    return {s.name: (rng.uniform(-1, 1, s.shape) if s.dtype.kind == "f" else np.zeros(s.shape)).astype(s.dtype)
            for s in inputs}


def write(g: Graph) -> bytes:
    """The graph as it stands (no passes: constant folding would remove the point of most cases)."""
    return write_wrt(g, plan_memory(g), "fp32")


def patched(data: bytes, fn: Callable[[fb.ModelT], None]) -> bytes:
    """A model re-serialized after fn(ModelT) changed it: shapes, plans and attributes no writer would produce."""
    m = fb.ModelT.InitFromPackedBuf(bytearray(data), 0)
    m.buffers = [_AlignedBufferT(b"" if b.data is None else bytes(bytearray(b.data))) for b in m.buffers]
    fn(m)
    b = flatbuffers.Builder(len(data) + 4096)
    b.Finish(m.Pack(b), file_identifier=IDENTIFIER)
    return bytes(b.Output())


def _rng() -> np.random.Generator:
    return np.random.default_rng(9)


def const_input(op: str, shape: tuple[int, ...], attrs: dict | None = None, extra: list[np.ndarray] | None = None,
                size_bytes: int = 0) -> bytes:
    """op applied to a constant where an activation usually is, plus a graph input added to the result: engines
    must copy the constant in (it used to stay a NULL pointer: address 0 of wasm memory, another model's data)."""
    rng = _rng()
    g = Graph()
    if size_bytes:  # a big constant (the leak case: the engine read this much from address 0)
        n = size_bytes // 4 // int(np.prod(shape[1:]))
        shape = (n, *shape[1:]) if op not in ("CONV_2D", "MAX_POOL_2D", "AVERAGE_POOL_2D") else shape
    c = g.add_const("data", rng.uniform(-1, 1, shape).astype(np.float32))
    ins = [c] + [g.add_const(f"p{i}", e) for i, e in enumerate(extra or [])]
    (y,) = g.add_node(op, ins, attrs or {}, name=f"{op.lower()}_of_const")
    x = g.add_input("x", g.tensors[y].shape)
    (z,) = g.add_node("ADD", [y, x], name="plus_input", outputs=["out"])
    g.outputs.append(z)
    return write(g)


def const_input_cases() -> list[Case]:
    rng = _rng()
    w_dw = rng.uniform(-1, 1, (8, 3, 3, 1)).astype(np.float32)
    w_1x1 = rng.uniform(-1, 1, (4, 1, 1, 8)).astype(np.float32)
    specs = [
        ("CONV_2D", (1, 6, 6, 8), {"groups": 8, "pads": (1, 1, 1, 1)}, [w_dw]),  # depthwise (the crash in run_conv)
        ("CONV_2D", (1, 6, 6, 8), {}, [w_1x1]),  # 1x1 GEMM
        ("MAX_POOL_2D", (1, 6, 6, 8), {"kernel": (2, 2), "strides": (2, 2)}, []),
        ("AVERAGE_POOL_2D", (1, 6, 6, 8), {"kernel": (3, 3), "pads": (1, 1, 1, 1)}, []),
        ("FULLY_CONNECTED", (3, 8), {}, [rng.uniform(-1, 1, (5, 8)).astype(np.float32)]),
        ("SOFTMAX", (2, 7), {}, []),
        ("MEAN", (2, 3, 4), {"axes": (1,)}, []),
        ("REDUCE_MAX", (2, 3, 4), {"axes": (2,)}, []),
        ("RESIZE", (1, 3, 3, 2), {"size": (5, 7)}, []),
        ("TRANSPOSE", (2, 3, 4), {"perm": (2, 0, 1)}, []),
        ("SIGMOID", (4, 5), {}, []),
    ]
    cases = [Case(f"const_{op.lower()}_{i}", "const-input", const_input(op, shape, attrs, extra), "ok")
             for i, (op, shape, attrs, extra) in enumerate(specs)]
    # the 2 MiB file that returned 4 MiB of linear memory: a softmax over a 2 MiB constant
    cases.append(Case("const_softmax_2mib", "const-input", const_input("SOFTMAX", (1, 1024), size_bytes=2 << 20),
                      "ok"))
    # convolution weights that are an activation: a format error, the same in every reader
    g = Graph()
    x = g.add_input("x", (1, 4, 4, 2))
    w = g.add_input("w", (3, 1, 1, 2))
    (y,) = g.add_node("CONV_2D", [x, w], name="conv", outputs=["y"])
    g.outputs.append(y)
    cases.append(Case("conv_weights_activation", "const-input", write(g),
                      r"operator 0 \(CONV_2D 'conv'\): input 1 \(tensor \d+ 'w'\) must be a constant",
                      python_rejects=True))
    cases += residual_cases(rng)
    return cases


def residual_cases(rng: np.random.Generator) -> list[Case]:
    """CONV_2D's residual input (a fused ADD): a constant must be copied in; a residual whose declared shape is not
    the output's must be refused, never read past its end."""
    def graph(r_const: bool) -> bytes:
        g = Graph()
        x = g.add_input("x", (1, 4, 4, 2))
        w = g.add_const("w", rng.uniform(-1, 1, (3, 1, 1, 2)).astype(np.float32))
        r = (g.add_const("r", rng.uniform(-1, 1, (1, 4, 4, 3)).astype(np.float32)) if r_const
             else g.add_input("r", (1, 4, 4, 3)))
        (y,) = g.add_node("CONV_2D", [x, w, "", r], name="conv", outputs=["y"])
        g.outputs.append(y)
        return write(g)

    def shrink(m: fb.ModelT) -> None:
        for t in m.tensors:
            if (t.name.decode() if isinstance(t.name, bytes) else t.name) == "r":
                t.shape = [1, 1, 1, 3]
    return [Case("conv_residual_const", "const-input", graph(True), "ok"),
            Case("conv_residual_wrong_shape", "memory", patched(graph(False), shrink),
                 r"operator 0 \(CONV_2D 'conv'\): residual r must have the output's shape \[1, 4, 4, 3\]")]


def _tiny(op: str, x_shape: tuple[int, ...], attrs: dict, declared: tuple[int, ...] | None = None,
          extra: list[np.ndarray] | None = None, x_edit: tuple[int, ...] | None = None) -> bytes:
    """A one-op graph, then its input (and output) shapes replaced by hostile ones in the file."""
    g = Graph()
    x = g.add_input("x", x_shape)
    ins = [x] + [g.add_const(f"p{i}", e) for i, e in enumerate(extra or [])]
    (y,) = g.add_node(op, ins, attrs, name=op.lower(), outputs=["y"])
    g.outputs.append(y)
    data = write(g)
    if x_edit is None and declared is None:
        return data

    def edit(m: fb.ModelT) -> None:
        names = {(t.name.decode() if isinstance(t.name, bytes) else t.name): t for t in m.tensors}
        if x_edit is not None:
            names["x"].shape = list(x_edit)
        if declared is not None:  # empty tensors: everything at offset 0 of a small arena
            names["y"].shape = list(declared)
            names["y"].arenaOffset = 0
            names["x"].arenaOffset = 0
            m.plan.arenaSize = 1 << 16
    return patched(data, edit)


def memory_cases() -> list[Case]:
    big = (1 << 31) - 1
    cases = [
        # zero elements, huge other dimensions: used to size the padding buffers (2 x 8 GiB)
        Case("zero_elements_huge_channels_pool", "memory",
             _tiny("MAX_POOL_2D", (1, 2, 2, 4), {"kernel": (2, 2)}, declared=(0, 1, 1, big),
                   x_edit=(0, 2, 2, big)), "ok"),
        Case("zero_elements_huge_channels_dwconv", "memory",
             _tiny("CONV_2D", (1, 3, 3, 2), {"groups": 2, "pads": (1, 1, 1, 1)}, declared=(1, 3, 3, 0),
                   x_edit=(1, 3, 3, 0), extra=[np.ones((2, 3, 3, 1), np.float32)]), r"input has 0 channels"),
        # resize/pad tables sized from an empty output's other dimensions
        Case("resize_empty_output_huge_size", "memory",
             _tiny("RESIZE", (1, 2, 2, 1), {"size": (1 << 20, 1 << 20)}, declared=(1, 1 << 20, 1 << 20, 0),
                   x_edit=(1, 2, 2, 0)), "ok"),
        Case("pad_empty_output_huge_pads", "memory",
             _tiny("PAD", (2, 3), {"pads": (1 << 24, 0, 1 << 24, 0)}, declared=((1 << 25) + 2, 0),
                   x_edit=(2, 0)), "ok"),
        # a legitimate-looking plan beyond the memory budget: refused before allocating, naming the limit
        Case("resize_1gib_output", "memory", _tiny("RESIZE", (1, 2, 2, 1), {"size": (1 << 14, 1 << 14)}),
             r"beyond its memory limit of 1073741824 bytes \(max_memory\)"),
        Case("arena_2gib", "memory",
             patched(_tiny("RELU", (1, 4), {}), lambda m: setattr(m.plan, "arenaSize", 1 << 31)),
             r"the arena|beyond its memory limit of 1073741824 bytes \(max_memory\)"),
        Case("shared_tensor_table", "memory", shared_tensor_table(1 << 14), "ok"),
        # 4096 float16 constants on one 256 KiB buffer: widened once, not into 2 GiB of copies
        Case("shared_f16_buffer", "memory", shared_f16_buffer(1 << 12), "ok"),
        # shared tables that would unpack to gigabytes: refused from their lengths, by every reader alike
        Case("shared_name_bomb", "memory", shared_tensor_table(1 << 15, name_len=1 << 12),
             r"tensor and operator names take 134217728 bytes in all \(limit 67108864\)", python_rejects=True),
        Case("shared_inputs_bomb", "memory", shared_tensor_table(2, n_ops=1 << 13, n_inputs=4096),
             r"the operators have 335\d+ inputs and outputs in all \(limit 16777216\)", python_rejects=True),
    ]
    return cases


def shared_f16_buffer(n: int) -> bytes:
    """A fully-connected layer with float16 weights [256, 512], and n more constant tensors on the same buffer."""
    g = Graph()
    x = g.add_input("x", (1, 512))
    w = g.add_const("w", _rng().uniform(-1, 1, (256, 512)).astype(np.float32))
    (y,) = g.add_node("FULLY_CONNECTED", [x, w], {}, name="fc", outputs=["y"])
    g.outputs.append(y)

    def more(m: fb.ModelT) -> None:
        wt = next(t for t in m.tensors if t.name in (b"w", "w"))
        for i in range(n):
            t = copy.copy(wt)
            t.name = f"w{i}"
            m.tensors.append(t)
    return patched(write_wrt(g, plan_memory(g), "fp16"), more)


def shared_tensor_table(n: int, name_len: int = 2048, n_ops: int = 1, n_inputs: int = 1) -> bytes:
    """One Tensor table (with a long name) referenced n times: tensor i of the model is that table (tensor 1, the
    output, a second one with the same name, at offset 64); one Operator table referenced n_ops times, reading
    tensor 0 n_inputs times (a CONCATENATION when n_inputs > 1, else a RELU). Names and input lists used to be copied
    once per reference."""
    b = flatbuffers.Builder(4 * (n + n_ops) + name_len + 8192)
    name = b.CreateString("t" * name_len)
    fb.TensorStartShapeVector(b, 2)
    b.PrependInt32(4)
    b.PrependInt32(1)
    shape = b.EndVector()
    tables = []
    for offset in (0, 64):  # the op's output (tensor 1) in bytes of its own: no op may write over what it reads
        fb.TensorStart(b)
        fb.TensorAddName(b, name)
        fb.TensorAddShape(b, shape)
        fb.TensorAddArenaOffset(b, offset)
        tables.append(fb.TensorEnd(b))
    fb.ModelStartTensorsVector(b, n)
    for i in reversed(range(n)):
        b.PrependUOffsetTRelative(tables[i == 1])
    tensors = b.EndVector()

    def ivec(start: Callable[[flatbuffers.Builder, int], None], vals: list[int]) -> int:
        start(b, len(vals))
        for v in reversed(vals):
            b.PrependInt32(v)
        return b.EndVector()

    ins, outs = ivec(fb.OperatorStartInputsVector, [0] * n_inputs), ivec(fb.OperatorStartOutputsVector, [1])
    opts = 0
    if n_inputs > 1:
        fb.ConcatenationOptionsStart(b)
        opts = fb.ConcatenationOptionsEnd(b)
    fb.OperatorStart(b)
    fb.OperatorAddType(b, fb.OpType.RELU if n_inputs == 1 else fb.OpType.CONCATENATION)
    fb.OperatorAddInputs(b, ins)
    fb.OperatorAddOutputs(b, outs)
    if opts:
        fb.OperatorAddOptionsType(b, fb.Options.ConcatenationOptions)
        fb.OperatorAddOptions(b, opts)
    op = fb.OperatorEnd(b)
    fb.ModelStartOperatorsVector(b, n_ops)
    for _ in range(n_ops):
        b.PrependUOffsetTRelative(op)
    ops = b.EndVector()
    gin, gout = ivec(fb.ModelStartInputsVector, [0]), ivec(fb.ModelStartOutputsVector, [1])
    fb.MemoryPlanStart(b)
    fb.MemoryPlanAddArenaSize(b, 128)
    fb.MemoryPlanAddAlignment(b, 64)
    plan = fb.MemoryPlanEnd(b)
    fb.ModelStart(b)
    fb.ModelAddVersion(b, 1)
    fb.ModelAddTensors(b, tensors)
    fb.ModelAddOperators(b, ops)
    fb.ModelAddInputs(b, gin)
    fb.ModelAddOutputs(b, gout)
    fb.ModelAddPlan(b, plan)
    b.Finish(fb.ModelEnd(b), file_identifier=IDENTIFIER)
    return bytes(b.Output())


def hang_cases() -> list[Case]:
    ones = np.ones((1 << 10, 1, 1, 1), np.float16)  # weights stay small: 2 KiB
    return [
        # 512 groups of a grouped convolution over an empty batch
        Case("grouped_conv_empty_output", "hang",
             _tiny("CONV_2D", (1, 2, 2, 512), {"groups": 512}, extra=[ones.astype(np.float32)],
                   declared=(0, 2, 2, 1024), x_edit=(0, 2, 2, 512)), "ok"),
        # CONCATENATION of 4000 inputs empty on the axis, over 2^20 rows: 2^32 zero-byte copies per run
        Case("concat_many_empty_inputs", "hang", concat_many_empty(4000, 1 << 20),
             r"beyond the model's work limit of \d+ \(max_work\)"),
        # GATHER of 2^22 run-time indices into rows of zero bytes: the output is empty
        Case("gather_empty_rows", "hang", gather_empty_rows(1 << 22), "ok"),
    ]


def gather_empty_rows(k: int) -> bytes:
    g = Graph()
    x = g.add_input("x", (4, 1))
    i = g.add_input("i", (16,), np.int32)
    (y,) = g.add_node("GATHER", [x, i], {"axis": 0}, name="gather", outputs=["y"])
    g.outputs.append(y)

    def edit(m: fb.ModelT) -> None:
        for t in m.tensors:
            t.arenaOffset = 0
            t.shape = {b"x": [4, 0], b"i": [k], b"y": [k, 0]}[bytes(t.name)]
        m.plan.arenaSize = 4 * k
    return patched(write(g), edit)


def concat_many_empty(n: int, rows: int) -> bytes:
    g = Graph()
    x = g.add_input("x", (rows, 1))
    e = g.add_input("e", (rows, 0))
    (y,) = g.add_node("CONCATENATION", [x] + [e] * n, {"axis": 1}, name="cat", outputs=["y"])
    g.outputs.append(y)
    return write(g)


def limit_cases() -> list[Case]:
    """Real work, but more than the default budget allows: refused at load, naming the op."""
    g = Graph()
    x = g.add_input("x", (1, 1024, 1024, 32))
    w = g.add_const("w", np.zeros((32, 9, 9, 32), np.float32))
    (y,) = g.add_node("CONV_2D", [x, w], {"pads": (4, 4, 4, 4)}, name="huge_conv", outputs=["y"])
    g.outputs.append(y)
    return [Case("conv_beyond_work_limit", "limits", write(g),
                 r"one run would take about \d+ operations \(the largest, operator 0 \(CONV_2D 'huge_conv'\)")]


def _sparse_fc(n: int = 10, k: int = 12, density: float = 0.4, op: str = "FULLY_CONNECTED") -> bytes:
    """x [2, k] -> op with a block-sparse weight [n, k] (4 rows per block; the last block row partial)."""
    rng = _rng()
    keep = np.repeat(rng.random((-(-n // 4), k)) < density, 4, axis=0)[:n]
    w = (rng.uniform(-1, 1, (n, k)) * keep).astype(np.float32)
    g = Graph()
    x = g.add_input("x", (2, k) if op == "FULLY_CONNECTED" else (n, k))
    (y,) = g.add_node(op, [x, g.add_const("w", w)], name=op.lower(), outputs=["y"])
    g.outputs.append(y)
    return write_wrt(g, plan_memory(g), "fp32", {"w"})


def _sparse_qfc(n: int = 10, k: int = 12) -> bytes:
    """An int8 FULLY_CONNECTED, x [2, k] int8, with int8 block-sparse weights [n, k] (the last block row partial)."""
    rng = _rng()
    keep = np.repeat(rng.random((-(-n // 4), k)) < 0.4, 4, axis=0)[:n]
    w = (rng.integers(-127, 128, (n, k)) * keep).astype(np.int8)
    g = Graph()
    x = g.add_input("x", (2, k), np.int8, QuantParams.make(0.05, 3))
    wt = g.add_const("w", w, quant=QuantParams.make(np.full(n, 0.01), 0, 0))
    (y,) = g.add_node("FULLY_CONNECTED", [x, wt], name="qfc", outputs=["y"], quant=[QuantParams.make(0.2, -1)])
    g.outputs.append(y)
    return write_wrt(g, plan_memory(g), "fp32", {"w"})


def _edit_w(data: bytes, fn: Callable[[fb.TensorT], None]) -> bytes:
    def edit(m: fb.ModelT) -> None:
        fn(next(t for t in m.tensors if bytes(t.name) == b"w"))
    return patched(data, edit)


def _edit_w_values(data: bytes, fn: Callable[[bytearray], bytes]) -> bytes:
    def edit(m: fb.ModelT) -> None:
        t = next(t for t in m.tensors if bytes(t.name) == b"w")
        m.buffers[t.buffer] = _AlignedBufferT(fn(bytearray(m.buffers[t.buffer].raw)))
    return patched(data, edit)


def _nonzero_padding(raw: bytearray) -> bytes:
    raw[-4:] = np.float32(1.0).tobytes()  # 10 rows: the last value of the last block is row 11's
    return bytes(raw)


def _nonzero_padding_i8(raw: bytearray) -> bytes:
    raw[-1] = 1  # 10 rows: the last value of the last block is row 11's
    return bytes(raw)


def _big_sparse(rows: int, cols: int, op: str = "FULLY_CONNECTED", groups: int = 1) -> bytes:
    """A weight [rows, cols] (conv: [rows, 1, 1, cols]) stored with no blocks at all: a file of a few KiB that
    stands for rows * cols zeros."""
    g = Graph()
    if op == "FULLY_CONNECTED":
        x = g.add_input("x", (1, 4))
        w = g.add_const("w", np.ones((4, 4), np.float32))
        (y,) = g.add_node(op, [x, w], name="big", outputs=["y"])
    else:
        x = g.add_input("x", (1, 1, 1, 4 * groups))
        w = g.add_const("w", np.ones((4 * groups, 1, 1, 4), np.float32))
        (y,) = g.add_node(op, [x, w], {"groups": groups}, name="big", outputs=["y"])
    g.outputs.append(y)

    def edit(m: fb.ModelT) -> None:
        names = {bytes(t.name): t for t in m.tensors}
        w, x, y = names[b"w"], names[b"x"], names[b"y"]
        w.shape = [rows, cols] if op == "FULLY_CONNECTED" else [rows, 1, 1, cols]
        w.sparsity = fb.BlockSparsityT()
        w.sparsity.rowStarts, w.sparsity.columns = [0] * (-(-rows // 4) + 1), []
        m.buffers[w.buffer] = _AlignedBufferT(b"")
        x.shape = [1, cols * groups] if op == "FULLY_CONNECTED" else [1, 1, 1, cols * groups]
        y.shape = [1, rows] if op == "FULLY_CONNECTED" else [1, 1, 1, rows]
        x.arenaOffset, y.arenaOffset = 0, 4 * cols * groups + (-4 * cols * groups) % 64
        m.plan.arenaSize = y.arenaOffset + 4 * rows
    return patched(write(g), edit)


def sparse_cases() -> list[Case]:
    """Block-sparse weights (python_ref/sparse.py): encodings that lie, and sizes that would expand to gigabytes."""
    base, qbase = _sparse_fc(), _sparse_qfc()
    fmt = r"tensor \d+ \('w'\): .*"  # the exact words: python_ref must say the same (python_rejects)

    def starts(f: Callable) -> Callable:  # edit the row starts with f(list)
        return lambda t: setattr(t.sparsity, "rowStarts", f(list(t.sparsity.rowStarts)))

    def cols(f: Callable) -> Callable:
        return lambda t: setattr(t.sparsity, "columns", f(list(t.sparsity.columns)))

    bad = [
        ("sparse_row_starts_count", _edit_w(base, starts(lambda s: s[:-1])), "block-sparse: 3 row starts, expected 4"),
        ("sparse_row_starts_decrease", _edit_w(base, starts(lambda s: [s[0], s[2], s[1], s[3]])),
         r"row starts must begin at 0, never decrease and end at the \d+ stored blocks"),
        ("sparse_row_starts_past_blocks", _edit_w(base, starts(lambda s: [*s[:-1], s[-1] + 1])),
         r"row starts must begin at 0, never decrease and end at the \d+ stored blocks"),
        ("sparse_column_out_of_range", _edit_w(base, cols(lambda c: [*c[:-1], 12])),
         "is in column 12; columns must increase"),
        ("sparse_column_negative", _edit_w(base, cols(lambda c: [-1, *c[1:]])),
         "is in column -1; columns must increase"),
        ("sparse_columns_not_increasing", _edit_w(base, cols(lambda c: [c[0], c[0], *c[2:]])),
         "columns must increase within a block row and stay below 12"),
        ("sparse_values_short", _edit_w_values(base, lambda raw: bytes(raw[:-16])),
         r"block-sparse: the buffer holds \d+ bytes, \d+ blocks of 4 float32 values need \d+"),
        ("sparse_padding_nonzero", _edit_w_values(base, _nonzero_padding), "has a non-zero value past row 9"),
        ("sparse_not_a_constant", _edit_w(base, lambda t: (setattr(t, "buffer", 0), setattr(t, "arenaOffset", 0))),
         "block-sparse, but not a constant"),
        ("sparse_int32", _edit_w(base, lambda t: setattr(t, "dtype", fb.DType.INT32)),
         "block-sparse tensors must be float32, float16 or int8, not int32"),
        ("sparse_int8_column_out_of_range", _edit_w(qbase, cols(lambda c: [*c[:-1], 12])),
         "is in column 12; columns must increase"),
        ("sparse_int8_columns_not_increasing", _edit_w(qbase, cols(lambda c: [c[0], c[0], *c[2:]])),
         "columns must increase within a block row and stay below 12"),
        ("sparse_int8_row_starts_past_blocks", _edit_w(qbase, starts(lambda s: [*s[:-1], s[-1] + 1])),
         r"row starts must begin at 0, never decrease and end at the \d+ stored blocks"),
        ("sparse_int8_values_short", _edit_w_values(qbase, lambda raw: bytes(raw[:-4])),
         r"block-sparse: the buffer holds \d+ bytes, \d+ blocks of 4 int8 values need \d+"),
        ("sparse_int8_padding_nonzero", _edit_w_values(qbase, _nonzero_padding_i8), "has a non-zero value past row 9"),
        ("sparse_rank_0", _edit_w(base, lambda t: setattr(t, "shape", [])),
         "a block-sparse tensor needs rank 1 or more"),
    ]
    cases = [Case(name, "format", data, fmt + msg, python_rejects=True) for name, data, msg in bad]
    # a sparse tensor read where no sparse variant exists
    cases.append(Case("sparse_input_of_add", "format", _sparse_fc(op="ADD"),
                      "operator 0 \\(ADD 'add'\\): input 1 \\(tensor \\d+ 'w'\\) is block-sparse; only the weights of "
                      "CONV_2D and FULLY_CONNECTED may be", python_rejects=True))
    # a few KiB standing for 8 GiB of zeros: refused from the lengths, before anything is expanded
    cases.append(Case("sparse_expansion_bomb", "memory", _big_sparse(1 << 16, 1 << 15),
                      "block-sparse constants expand to 8589934592 bytes in all \\(limit 1073741824\\)",
                      python_rejects=True))
    # 64 MiB of zeros run sparse: output = bias, nothing expanded
    cases.append(Case("sparse_empty_weight_64mib", "memory", _big_sparse(1 << 14, 1 << 10), "ok"))
    # a grouped convolution runs dense: its expansion (512 MiB) and packing count against max_memory
    cases.append(Case("sparse_dense_fallback_beyond_memory", "memory",
                      _big_sparse(1 << 14, 1 << 13, "CONV_2D", groups=2),
                      "beyond its memory limit of 1073741824 bytes \\(max_memory\\)"))
    return cases


def alias_cases() -> list[Case]:
    """Plans where GATHER's output lies over its indices (found by the engine fuzzer): the kernel checked the indices,
    then its own writes changed them and it read far outside the input."""
    here = Path(__file__).parent / "fuzz_regressions" / "engine"
    msg = r"operator 0 \(GATHER 'op0'\): output tensor 2 \('t2'\) shares arena bytes with input tensor 1 \('t1'\)"
    return [Case(f"gather_{w}_indices_under_output", "aliasing",
                 (here / f"gather-{w}-indices-share-output-bytes.wrt").read_bytes(), msg, python_rejects=True)
            for w in ("i32", "i64")]


def all_cases() -> list[Case]:
    return [*const_input_cases(), *memory_cases(), *hang_cases(), *limit_cases(), *sparse_cases(), *alias_cases()]
