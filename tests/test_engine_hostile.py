"""Hostile .wrt files on the C engine: truncations, random byte flips, out-of-range offsets and indices, absurd
shapes, wrong identifier or version. Each must end in a clean error naming the problem (or, for harmless flips, a
model that loads and runs), natively, in wasm, and under AddressSanitizer + UBSan. Also: wasm memory stays flat
over 1000 load/run/release cycles."""

from __future__ import annotations

import functools
import re
import subprocess
from pathlib import Path

import flatbuffers
import numpy as np
import pytest
from graphs import conv_bn_relu_graph

from python_ref._fb import wrt_generated as fb
from python_ref.wrt_file import read_wrt
from wasmrt.compile.converter import convert
from wasmrt.compile.ir import Graph
from wasmrt.dev import build
from wasmrt.engines import load
from wasmrt.engines.wasm import WasmInstance, WasmModel
from wasmrt.errors import InputError, ModelFormatError, WasmrtError


def kitchen_sink() -> Graph:
    """One small graph whose file holds most option tables, so corruption reaches many parser paths."""
    rng = np.random.default_rng(5)
    g = Graph()

    def c(name: str, *shape: int) -> str:
        return g.add_const(name, (rng.standard_normal(shape) * 0.3).astype(np.float32))

    x = g.add_input("image", (1, 12, 12, 3))
    (y,) = g.add_node("CONV_2D", [x, c("w1", 8, 3, 3, 3), c("b1", 8)], {"pads": (1, 1, 1, 1), "act_min": 0.0},
                      name="conv1")
    (y,) = g.add_node("CONV_2D", [y, c("w2", 8, 3, 3, 1), c("b2", 8)], {"groups": 8, "strides": (2, 2),
                                                                          "pads": (0, 0, 1, 1)}, name="dw")
    (y,) = g.add_node("HARD_SWISH", [y], name="hswish")
    (y,) = g.add_node("MAX_POOL_2D", [y], {"kernel": (2, 2), "strides": (2, 2), "ceil_mode": True}, name="pool")
    (y,) = g.add_node("RESIZE", [y], {"size": (6, 6), "mode": 1}, name="up")
    (y,) = g.add_node("PAD", [y], {"pads": (0, 1, 1, 0, 0, 1, 1, 0), "mode": 1}, name="pad")
    (y,) = g.add_node("CONCATENATION", [y, c("k", 1, 8, 8, 2)], {"axis": 3}, name="cat")
    (y,) = g.add_node("MUL", [y, c("s", 10)], {"act_max": 4.0}, name="scale")
    (y,) = g.add_node("TRANSPOSE", [y], {"perm": (0, 3, 1, 2)}, name="nchw")
    (y,) = g.add_node("RESHAPE", [y], {"shape": (1, -1)}, name="flatten")
    (y,) = g.add_node("FULLY_CONNECTED", [y, c("fw", 6, 640), c("fb", 6)], name="fc")
    (y,) = g.add_node("GATHER", [y, g.add_const("idx", np.array([5, 0, 2, 1], np.int32))], {"axis": 1},
                      name="pick")
    (y,) = g.add_node("SOFTMAX", [y], name="softmax", outputs=["probs"])
    g.outputs.append(y)
    return g


def kitchen_sink_2() -> Graph:
    """The other ops: transposed convolution, runtime MATMUL, slices, reductions, element-wise with broadcasting."""
    rng = np.random.default_rng(6)
    g = Graph()

    def c(name: str, *shape: int, lo: float = -0.5, hi: float = 0.5) -> str:
        return g.add_const(name, rng.uniform(lo, hi, shape).astype(np.float32))

    x, v = g.add_input("x", (1, 6, 6, 4)), g.add_input("v", (2, 8, 3))
    (y,) = g.add_node("CONV_TRANSPOSE_2D", [x, c("tw", 6, 3, 3, 2)], {"groups": 2, "strides": (2, 2),
                                                                       "pads": (1, 1, 1, 1), "output_padding": (1, 1)},
                      name="deconv")
    (y,) = g.add_node("AVERAGE_POOL_2D", [y], {"kernel": (3, 3), "strides": (2, 2), "pads": (1, 1, 1, 1),
                                               "count_include_pad": True, "ceil_mode": True}, name="avg")
    (y,) = g.add_node("PRELU", [y, c("slope", 6)], name="prelu")
    (y,) = g.add_node("SLICE", [y], {"starts": (0, 5, 0, 5), "ends": (1, -1, 6, -1), "steps": (1, -2, 2, -1)},
                      name="slice")
    (y,) = g.add_node("MEAN", [y], {"axes": (1,), "keepdims": False}, name="mean")  # [1, 3, 6]
    (z,) = g.add_node("MATMUL", [v, y], name="matmul")  # [2,8,3] @ [1,3,6] -> [2,8,6]
    (z,) = g.add_node("ABS", [z], name="abs")
    (z,) = g.add_node("POW", [z, c("p", 6, lo=1.0, hi=2.0)], name="pow")
    (z,) = g.add_node("LEAKY_RELU", [z], {"alpha": 0.1}, name="leaky")
    (z,) = g.add_node("DIV", [z, c("d", 8, 1, lo=1.0, hi=2.0)], name="div")
    (z,) = g.add_node("REDUCE_MAX", [z], {"axes": (0, -1)}, name="rmax")  # [1, 8, 1]
    (z,) = g.add_node("CLIP", [z], {"min": -1.0, "max": 1.0}, name="clip", outputs=["out"])
    g.outputs.append(z)
    return g


@functools.cache
def base() -> bytes:
    return convert(kitchen_sink()).data


@functools.cache
def base2() -> bytes:
    return convert(kitchen_sink_2()).data


def semantic_mutations(count: int = 500) -> list[bytes]:
    """Structurally valid files with one attribute, shape or tensor index changed to a random small value: these
    pass the FlatBuffers verifier, so only the semantic checks stand between them and the kernels."""
    rng = np.random.default_rng(77)
    out = []
    for i in range(count):
        root = fb.ModelT.InitFromPackedBuf(base() if i % 2 else base2(), 0)
        kind = rng.integers(0, 4)
        if kind == 0:  # an option field
            op = root.operators[rng.integers(len(root.operators))]
            if op.options is None:
                continue
            fields = [f for f in vars(op.options) if not f.startswith("_")]
            f = fields[rng.integers(len(fields))]
            old = getattr(op.options, f)
            if isinstance(old, list | np.ndarray) or old is None:
                new = [int(v) for v in rng.integers(-3, 12, rng.integers(0, 6))]
            elif isinstance(old, float):
                new = float(rng.choice([-1e30, -2.0, 0.0, 0.5, 3.0, np.inf, np.nan]))
            else:
                new = int(rng.integers(-3, 12))
            setattr(op.options, f, new)
        elif kind == 1:  # a tensor shape
            t = root.tensors[rng.integers(len(root.tensors))]
            t.shape = [int(v) for v in rng.integers(0, 14, rng.integers(0, 6))]
        elif kind == 2:  # an operator input
            op = root.operators[rng.integers(len(root.operators))]
            ins = list(op.inputs)
            ins[rng.integers(len(ins))] = int(rng.integers(-1, len(root.tensors)))
            op.inputs = ins
        else:  # the arena plan
            t = root.tensors[rng.integers(len(root.tensors))]
            if t.buffer == 0:
                t.arenaOffset = int(rng.integers(0, 64)) * 64
        try:
            out.append(repack(root))
        except (TypeError, ValueError, OverflowError):  # a value the field's type cannot hold (bool, unsigned)
            continue
    return out


def repack(root: fb.ModelT) -> bytes:
    b = flatbuffers.Builder(0)
    b.Finish(root.Pack(b), file_identifier=b"WRT0")
    return bytes(b.Output())


def edited(fn) -> bytes:
    root = fb.ModelT.InitFromPackedBuf(base(), 0)
    fn(root)
    return repack(root)


def op_index(root: fb.ModelT, name: str) -> int:
    return next(k for k, o in enumerate(root.operators) if o.name in (name, name.encode()))


def _set(obj: object, attr: str, value: object) -> None:
    setattr(obj, attr, value)


# targeted corruptions: (id, bytes, regex the C message must match)
def targeted() -> list[tuple[str, bytes, str]]:
    d = base()
    u32 = lambda v: int(v).to_bytes(4, "little")  # noqa: E731
    cases = [
        ("identifier", d[:4] + b"XXXX" + d[8:], r"file identifier 'XXXX', expected 'WRT0'"),
        ("tiny", d[:5], r"only 5 bytes"),
        ("root_offset", u32(len(d) + 64) + d[4:], r"offset points outside the file"),
        ("version", edited(lambda r: _set(r, "version", 2)), r"format version 2, this reader knows 1"),
        ("input_index", edited(lambda r: _set(r.operators[op_index(r, "conv1")], "inputs", [0, 999, 2])),
         r"operator 0 \(CONV_2D 'conv1'\): input tensor index 999 out of range"),
        ("output_index", edited(lambda r: _set(r.operators[1], "outputs", [-5])), r"output tensor index -5"),
        ("graph_output", edited(lambda r: _set(r, "outputs", [12345])), r"graph output refers to tensor 12345"),
        ("absurd_shape", edited(lambda r: _set(r.tensors[0], "shape", [1 << 20, 1 << 20, 1 << 20])),
         r"absurd shape"),
        ("rank9", edited(lambda r: _set(r.tensors[0], "shape", [1] * 9)), r"rank 9 exceeds 8"),
        ("negative_dim", edited(lambda r: _set(r.tensors[0], "shape", [1, -12, 12, 3])), r"negative dimension"),
        ("dtype", edited(lambda r: _set(r.tensors[0], "dtype", 42)), r"unknown dtype code 42"),
        ("arena_offset", edited(lambda r: _set(r.tensors[0], "arenaOffset", 1 << 40)), r"outside the .*arena"),
        ("arena_size", edited(lambda r: _set(r.plan, "arenaSize", 64)), r"outside the 64-byte arena"),
        ("arena_alias", edited(lambda r: _set(r.tensors[0], "arenaOffset", 0)),  # the image under conv1's output
         r"operator 0 \(CONV_2D 'conv1'\): output tensor 3 \('conv1:0'\) shares arena bytes with input tensor 0 "
         r"\('image'\)"),
        ("buffer_index", edited(lambda r: _set(next(t for t in r.tensors if t.buffer), "buffer", 9999)),
         r"buffer 9999 of"),
        ("op_type", edited(lambda r: _set(r.operators[2], "type", 999)), r"operator 2: unknown op type code 999"),
        ("options_type", edited(lambda r: _set(r.operators[0], "optionsType", fb.Options.PadOptions)),
         r"operator 0 \(CONV_2D 'conv1'\): options of type 15 \(PadOptions\), expected Conv2DOptions"),
        ("declared_shape", edited(lambda r: _set(r.tensors[r.operators[0].outputs[0]], "shape", [1, 12, 12, 9])),
         r"operator 0 \(CONV_2D 'conv1'\): output tensor .* declared with shape \[1, 12, 12, 9\], but the op "
         r"produces \[1, 12, 12, 8\]"),
        ("order", edited(lambda r: r.operators.reverse()), r"reads tensor .* before any op writes it"),
        ("groups", edited(lambda r: _set(r.operators[1].options, "groups", 3)),
         r"operator 1 \(CONV_2D 'dw'\): 8 output channels are not divisible by groups=3"),
        ("strides", edited(lambda r: _set(r.operators[1].options, "strides", [0, 2])), r"strides must all be >= 1"),
        ("perm", edited(lambda r: _set(r.operators[op_index(r, "nchw")].options, "perm", [0, 3, 3, 2])),
         r"TRANSPOSE 'nchw'.*not a permutation"),
        ("reshape", edited(lambda r: _set(r.operators[op_index(r, "flatten")].options, "shape", [7, -1])),
         r"RESHAPE 'flatten'.*cannot reshape"),
        ("gather_index", edited(lambda r: _set(next(t for t in r.tensors if t.name in ("idx", b"idx")), "shape",
                                               [2, 2])),
         r"GATHER 'pick'"),
        ("pad_mode", edited(lambda r: _set(r.operators[op_index(r, "pad")].options, "mode", 7)),
         r"PAD 'pad'.*PadMode = 7 is not a valid PadMode"),
    ]
    return cases


def truncations() -> list[bytes]:
    d = base()
    cuts = sorted(set(range(0, 96)) | set(np.linspace(96, len(d) - 1, 160).astype(int).tolist()))
    return [d[:c] for c in cuts]


def flips(count: int = 400) -> list[bytes]:
    d = base()
    rng = np.random.default_rng(2024)
    out = []
    for i in range(count):
        data = bytearray(d)
        # half the mutations hit the structure (the first and last kilobytes: root, vtables, op tables, names)
        region = (8, min(len(d), 2048)) if i % 2 else (8, len(d))
        for pos in rng.integers(*region, size=rng.integers(1, 9)):
            data[pos] = int(rng.integers(0, 256))
        out.append(bytes(data))
    # offsets overwritten with huge values at every 4-byte position of the tail (where FlatBuffers puts tables)
    for pos in range(max(8, len(d) - 1024), len(d) - 4, 4):
        data = bytearray(d)
        data[pos:pos + 4] = (0x7FFFFFF0).to_bytes(4, "little")
        out.append(bytes(data))
    return out


def all_hostile() -> list[bytes]:
    return [b for _, b, _ in targeted()] + truncations() + flips() + semantic_mutations()


def python_verdict(data: bytes) -> bool:
    try:
        read_wrt(data)
        return True
    except ModelFormatError:
        return False


def run_one(data: bytes, engine: str, wasm: WasmInstance | None = None) -> str:
    """'ok', or the error message. Any other exception (a wasm trap, a crash) fails the test."""
    try:
        m = WasmModel(data, variant="simd", instance=wasm) if engine == "wasm" else load(data, engine)
    except ModelFormatError as e:
        return str(e)
    try:
        m.run({s.name: np.zeros(s.shape, s.dtype) for s in m.inputs})
    except InputError as e:
        return str(e)
    finally:
        m.release()
    return "ok"


@pytest.mark.parametrize("engine", ["native", "wasm"])
def test_targeted_corruptions_are_named(engine: str) -> None:
    wasm = WasmInstance("simd") if engine == "wasm" else None
    for name, data, pattern in targeted():
        msg = run_one(data, engine, wasm)
        assert msg != "ok", f"{name}: loaded"
        assert re.search(pattern, msg), f"{name}: {msg!r} does not match {pattern!r}"


@pytest.mark.parametrize("engine", ["native", "wasm"])
def test_truncated_and_flipped_files(engine: str) -> None:
    """Every file either loads and runs, or fails with ModelFormatError; whatever python_ref rejects, so does C."""
    wasm = WasmInstance("simd") if engine == "wasm" else None
    counts = {"ok": 0, "error": 0}
    files = truncations() + flips() + semantic_mutations()
    for data in files:
        msg = run_one(data, engine, wasm)
        counts["ok" if msg == "ok" else "error"] += 1
        if msg == "ok":
            assert python_verdict(data), "the C engine accepted a file python_ref rejects"
    assert counts["error"] > len(files) // 2 and counts["ok"] > 0, counts
    if wasm is not None:  # failed loads return their memory too: a second pass does not grow the heap
        pages = wasm.pages
        for data in files[::3]:
            run_one(data, engine, wasm)
        assert wasm.pages == pages


@pytest.fixture(scope="module")
def asan_driver() -> Path:
    try:
        return build.build_asan_driver().path
    except WasmrtError as e:
        pytest.skip(str(e))


def test_hostile_files_under_asan(asan_driver: Path, tmp_path: Path) -> None:
    """The native loader under AddressSanitizer + UBSan (abort on the first report) on every hostile file."""
    files = [*all_hostile(), base()]
    paths = []
    for i, data in enumerate(files):
        p = tmp_path / f"{i:04d}.wrt"
        p.write_bytes(data)
        paths.append(str(p))
    r = subprocess.run([str(asan_driver), "check", *paths], capture_output=True, text=True, timeout=600,
                       env={"ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0", "PATH": "/usr/bin:/bin"})
    assert "AddressSanitizer" not in r.stderr and "runtime error" not in r.stderr, r.stderr[-4000:]
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.splitlines()
    assert len(lines) == len(files)
    assert lines[-1] == "0\tok"  # the intact model loads and runs
    native = [run_one(d, "native") for d in files]
    for line, expect in zip(lines, native, strict=True):
        code, msg = line.split("\t", 1)
        assert (code == "0") == (expect == "ok")
        if code != "0":
            assert msg in expect


# -- memory reuse -------------------------------------------------------------------------------------------------


def test_wasm_memory_flat_over_1000_cycles() -> None:
    """wasm memory never shrinks: release must hand every byte back to the allocator for the next load."""
    inst = WasmInstance("simd")
    data = base()
    feeds = None
    pages = []
    for cycle in range(1000):
        m = WasmModel(data, instance=inst)
        if feeds is None:
            feeds = {s.name: np.random.default_rng(0).uniform(-1, 1, s.shape).astype(s.dtype) for s in m.inputs}
        m.run(feeds)
        m.release()
        if cycle in (0, 1, 9, 99, 999):
            pages.append(inst.pages)
    print(f"wasm pages after cycles 1, 2, 10, 100, 1000: {pages} ({pages[0] * 64} KiB)")
    assert len(set(pages)) == 1, pages


def _vm_size_kib() -> int:
    return next(int(line.split()[1]) for line in Path("/proc/self/status").read_text().splitlines()
                if line.startswith("VmSize:"))


def test_native_memory_flat_over_cycles() -> None:
    """Natively a model's planned memory is one mapping (rt_map): release must unmap it. 6 MB planned per load, so a
    leaked mapping would grow the address space by 600 MB over 100 cycles."""
    g = Graph()
    x = g.add_input("x", (1, 128, 128, 32))
    rng = np.random.default_rng(5)
    w = g.add_const("w", rng.standard_normal((64, 1, 1, 32)).astype(np.float32))
    (y,) = g.add_node("CONV_2D", [x, w], {"strides": (1, 1), "pads": (0, 0, 0, 0)}, name="conv", outputs=["y"])
    g.outputs.append(y)
    data = convert(g).data
    feeds = {"x": rng.standard_normal((1, 128, 128, 32)).astype(np.float32)}
    sizes = []
    for cycle in range(110):
        m = load(data, "native")
        out = m.run(feeds)
        m.release()
        if cycle in (9, 109):
            sizes.append(_vm_size_kib())
    want = np.einsum("nhwc,oc->nhwo", feeds["x"].astype(np.float64), g.tensors["w"].data[:, 0, 0, :].astype(np.float64))
    np.testing.assert_allclose(next(iter(out.values())), want, rtol=1e-4, atol=1e-4)
    assert sizes[1] - sizes[0] < 64 * 1024, f"address space grew {sizes[1] - sizes[0]} KiB over 100 cycles"


def test_wasm_memory_flat_when_alternating_models() -> None:
    """Two models of different sizes, loaded and released in turn, reuse the same memory (no fragmentation creep)."""
    inst = WasmInstance("scalar")
    small = convert(conv_bn_relu_graph()).data
    pages = []
    for cycle in range(200):
        for data in (base(), small):
            m = WasmModel(data, instance=inst)
            m.run({s.name: np.ones(s.shape, s.dtype) for s in m.inputs})
            m.release()
        if cycle in (0, 199):
            pages.append(inst.pages)
    assert pages[0] == pages[1], pages


def test_native_loader_rejects_null_and_garbage() -> None:
    with pytest.raises(ModelFormatError, match=r"not a \.wrt model"):
        load(b"", "native")
    with pytest.raises(ModelFormatError, match=r"not a \.wrt model"):
        load(b"\0" * 4096, "wasm")
