""".wrt seeds for the engine fuzzer's corpus (tests/fuzz_corpus/engine/), written by the Python tool chain.

    python -m wasmrt.fuzz.seeds tests/fuzz_corpus/engine

One small valid model per op of python_ref/opdefs.py (built with wasmrt.compile.ir, converted with
wasmrt.compile.converter), then hostile variants of each through the FlatBuffers object API, the classes the C recipes
also produce: the data input replaced by a constant, a dimension set to 0 or 2^20, groups and block sizes at 2^20, every
activation at arena offset 0, the arena declared as exactly 2^31 bytes, one tensor table repeated. The fuzzer loads .wrt
inputs as they are (bytes 4..8 "WRT0"), so libFuzzer mutates these bytes next to its recipes. """

from __future__ import annotations

import sys
from pathlib import Path

import flatbuffers
import numpy as np

from python_ref._fb import wrt_generated as fb
from python_ref.opdefs import OPS, UNARY
from wasmrt.compile.converter import convert
from wasmrt.compile.ir import Graph

F32 = np.float32


def _const(g: Graph, rng: np.random.Generator, *shape: int) -> str:
    return g.add_const("c", rng.uniform(-1, 1, shape).astype(F32))


def op_graphs() -> dict[str, Graph]:
    """One small graph per op, with the attributes its kernels branch on."""
    rng = np.random.default_rng(9)
    specs: dict[str, tuple[tuple[int, ...], list, dict]] = {
        "CONV_2D": ((1, 6, 6, 4), [(8, 3, 3, 4), (8,)], {"pads": (1, 1, 1, 1)}),
        "CONV_2D_dw": ((1, 6, 6, 4), [(4, 3, 3, 1)], {"groups": 4, "strides": (2, 2)}),
        "CONV_TRANSPOSE_2D": ((1, 3, 3, 4), [(2, 3, 3, 2)], {"groups": 2, "strides": (2, 2)}),
        "FULLY_CONNECTED": ((2, 8), [(4, 8), (4,)], {}),
        "MATMUL": ((2, 3, 4), [(4, 5)], {}),
        "ADD": ((1, 4, 4, 3), [(3,)], {"act_min": 0.0}),
        "POW": ((2, 3), [(3,)], {}),
        "PRELU": ((1, 2, 2, 3), [(3,)], {}),
        "MAX_POOL_2D": ((1, 5, 5, 2), [], {"kernel": (2, 2), "strides": (2, 2), "ceil_mode": True}),
        "AVERAGE_POOL_2D": ((1, 5, 5, 2), [], {"kernel": (3, 3), "pads": (1, 1, 1, 1), "count_include_pad": True}),
        "MEAN": ((1, 4, 4, 3), [], {"axes": (1, 2)}),
        "REDUCE_MAX": ((2, 3, 4), [], {"axes": (-1,), "keepdims": False}),
        "SOFTMAX": ((2, 5), [], {}),
        "RESHAPE": ((2, 3, 4), [], {"shape": (6, -1)}),
        "TRANSPOSE": ((2, 3, 4), [], {"perm": (2, 0, 1)}),
        "SLICE": ((4, 5), [], {"starts": (3, 0), "ends": (-1, 5), "steps": (-1, 2)}),
        "PAD": ((1, 3, 3, 2), [], {"pads": (0, 1, 1, 0, 0, 1, 1, 0), "mode": 1}),
        "RESIZE": ((1, 3, 3, 2), [], {"size": (5, 6), "mode": 0, "coord": 1}),
        "DEPTH_TO_SPACE": ((1, 2, 2, 8), [], {"block": 2}),
        "CLIP": ((3, 4), [], {"min": -0.5, "max": 0.5}),
        "HARD_SIGMOID": ((3, 4), [], {}),
    }
    out = {}
    for key, (shape, consts, attrs) in specs.items():
        g = Graph()
        x = g.add_input("x", shape)
        ins = [x, *(_const(g, rng, *s) for s in consts)]
        (y,) = g.add_node(key.split("_dw")[0], ins, attrs, name="op", outputs=["y"])
        g.outputs.append(y)
        out[key] = g
    g = Graph()
    x = g.add_input("x", (2, 3))
    (y,) = g.add_node("CONCATENATION", [x, _const(g, rng, 2, 3), x], {"axis": 0}, name="op", outputs=["y"])
    (z,) = g.add_node("GATHER", [y, g.add_const("i", np.array([[5, 0], [1, 2]], np.int32))], {"axis": 0},
                      name="gather", outputs=["z"])
    g.outputs.append(z)
    out["CONCATENATION_GATHER"] = g
    # every element-wise unary op of python_ref/opdefs.py (its declared family) not built above, with its defaults
    unary = [d.name for d in sorted(OPS.values(), key=lambda d: d.code) if d.family == UNARY and d.name not in specs]
    for op in (*unary, "SUB", "MUL", "DIV", "MAXIMUM", "MINIMUM"):
        g = Graph()
        x = g.add_input("x", (2, 5))
        ins = [x, _const(g, rng, 5)] if op in ("SUB", "MUL", "DIV", "MAXIMUM", "MINIMUM") else [x]
        (y,) = g.add_node(op, ins, name="op", outputs=["y"])
        g.outputs.append(y)
        out[op] = g
    return out


def _pack(m: fb.ModelT) -> bytes:
    b = flatbuffers.Builder(0)
    b.Finish(m.Pack(b), file_identifier=b"WRT0")
    return bytes(b.Output())


def hostile_variants(data: bytes) -> dict[str, bytes]:
    """The same model with one hostile edit each (the FlatBuffer stays well formed)."""
    out = {}

    def edit(name: str, fn) -> None:  # type: ignore[no-untyped-def]
        m = fb.ModelT.InitFromPackedBuf(data, 0)
        if fn(m) is not False:
            out[name] = _pack(m)

    def const_data_input(m: fb.ModelT) -> bool:
        x = m.tensors[m.operators[0].inputs[0]]
        count = int(np.prod(x.shape)) if x.shape is not None else 1
        buf = fb.BufferT()
        buf.data = np.zeros(count * 4, np.uint8)
        m.buffers.append(buf)
        x.buffer, x.arenaOffset = len(m.buffers) - 1, -1
        m.inputs = [m.inputs[0]]  # the graph keeps an input (now a constant)
        return True

    def zero_dim(m: fb.ModelT) -> None:
        for t in m.tensors:
            if t.buffer == 0 and t.shape is not None and len(t.shape):
                t.shape = [0, *list(t.shape)[1:]]

    def huge_dim(m: fb.ModelT) -> None:
        for t in m.tensors:
            if t.buffer == 0 and t.shape is not None and len(t.shape) > 1:
                t.shape = [0, 1 << 20, *list(t.shape)[2:]]

    def big_attrs(m: fb.ModelT) -> None:
        o = m.operators[0].options
        for field in ("groups", "block", "axis"):
            if o is not None and hasattr(o, field):
                setattr(o, field, 1 << 20)

    def offsets_zero(m: fb.ModelT) -> None:
        for t in m.tensors:
            if t.buffer == 0:
                t.arenaOffset = 0

    def arena_2g(m: fb.ModelT) -> None:
        m.plan.arenaSize = 1 << 31

    def repeated_tensor(m: fb.ModelT) -> None:
        m.tensors = list(m.tensors) + [m.tensors[0]] * 16  # the C recipes share one table 250k times

    for name, fn in (("const-input", const_data_input), ("zero-dim", zero_dim), ("huge-dim", huge_dim),
                     ("big-attrs", big_attrs), ("offsets-0", offsets_zero), ("arena-2g", arena_2g),
                     ("repeated-tensor", repeated_tensor)):
        edit(name, fn)
    return out


def write_seeds(out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for key, g in op_graphs().items():
        data = convert(g, weights="fp32").data
        for variant, blob in {"valid": data, **hostile_variants(data)}.items():
            p = out_dir / f"{key.lower()}-{variant}.wrt"
            p.write_bytes(blob)
            written.append(p)
    return written


if __name__ == "__main__":
    paths = write_seeds(Path(sys.argv[1]))
    print(f"{len(paths)} seeds, {sum(p.stat().st_size for p in paths):,} bytes in {sys.argv[1]}")
