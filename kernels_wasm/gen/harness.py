"""Build the kernel test driver for each platform and run batches of kernel calls on it from Python.

Platforms: "x86" (shared library with the scalar, AVX2 and AVX-512 tables, ctypes), "wasm_scalar",
"wasm_simd128", "wasm_relaxed" (freestanding modules run by wasmtime), "neon" (static aarch64 program under qemu).
Artefacts are cached under build/kernels/<hash of sources and flags>/.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import struct
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from kernels_wasm.gen.emit import generate_all

ROOT = Path(__file__).resolve().parents[2]
INCLUDE = ROOT / "kernels_wasm" / "include"
DRIVER = Path(__file__).resolve().parent / "testdriver" / "driver.c"
BUILD = ROOT / "build" / "kernels"
CFLAGS = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-O3"]
WORDS = 16
CMD = {"info": 1, "gemm": 2, "igemm": 3, "dwconv": 4, "vbinary": 5, "vunary": 6, "pool": 7, "gemm_loop": 8,
       "spmm": 9, "spmv": 10, "sppack": 11, "spmmu": 12, "sppacku": 13, "interleave3": 14, "wino_in": 15,
       "wino_out": 16, "tgemm": 17, "grad": 18, "sgd": 19, "adam": 20}


@dataclass(frozen=True)
class Platform:
    name: str
    targets: tuple[str, ...]      # wrt_target names in driver order
    kind: str                     # "native", "wasm", "qemu"
    cflags: tuple[str, ...] = ()


PLATFORMS: dict[str, Platform] = {p.name: p for p in (
    Platform("x86", ("scalar", "avx2", "avx512"), "native"),
    Platform("wasm_scalar", ("scalar",), "wasm"),
    Platform("wasm_simd128", ("wasm_simd128",), "wasm", ("-msimd128",)),
    Platform("wasm_relaxed", ("wasm_relaxed",), "wasm", ("-msimd128", "-mrelaxed-simd")),
    Platform("neon", ("neon",), "qemu", ("-march=armv8.2-a+fp16+dotprod",)),
)}


def missing_tools(plat: Platform) -> str | None:
    """Why this platform cannot be built or run here, or None."""
    need = {"native": ["gcc"], "wasm": ["clang-19", "wasm-ld-19"],
            "qemu": ["aarch64-linux-gnu-gcc", "qemu-aarch64"]}[plat.kind]
    gone = [t for t in need if shutil.which(t) is None]
    return f"missing {', '.join(gone)}" if gone else None


def cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def target_unsupported(target: str) -> str | None:
    need = {"avx2": {"avx2", "fma"}, "avx512": {"avx512f", "avx512bw", "avx512vl"}}.get(target, set())
    gone = need - cpu_flags()
    return f"CPU lacks {', '.join(sorted(gone))}" if gone else None


def _run(cmd: list[str], **kw: object) -> None:
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)  # type: ignore[call-overload]
    if r.returncode:
        raise RuntimeError(f"{' '.join(cmd)}\n{r.stdout}{r.stderr}")


def build(plat: Platform, sources: dict[str, str] | None = None, tables: list[str] | None = None) -> Path:
    """Compile the driver with C sources (default: the generated files of plat's targets) exposing `tables`
    (default: wrt_target_<t> for plat's targets); returns the cached artefact path."""
    if sources is None:
        sources = {f"{t}.c": generate_all()[f"{t}.c"] for t in plat.targets}
    tables = tables or [f"wrt_target_{t}" for t in plat.targets]
    decls = "".join(f"extern const wrt_target {t};\n" for t in tables)
    sources = {**sources, "driver.c": f'#include "wrt_kernels.h"\n{decls}' + DRIVER.read_text()}
    tlist = ",".join(f"&{t}" for t in tables)
    flags = [*CFLAGS, *plat.cflags, f"-DDRV_TARGETS={tlist}"]
    h = hashlib.sha256(repr((plat, flags, sorted(sources.items()), (INCLUDE / "wrt_kernels.h").read_text())).encode())
    out = BUILD / f"{plat.name}-{h.hexdigest()[:16]}"
    art = out / {"native": "driver.so", "wasm": "driver.wasm", "qemu": "driver"}[plat.kind]
    if art.exists():
        return art
    out.mkdir(parents=True, exist_ok=True)
    for name, text in sources.items():
        (out / name).write_text(text)
    srcs = [str(out / n) for n in sources]
    inc = ["-I", str(INCLUDE)]
    tmp = art.with_suffix(".tmp")
    if plat.kind == "native":
        _run(["gcc", *flags, *inc, "-shared", "-fPIC", *srcs, "-o", str(tmp)])
    elif plat.kind == "qemu":
        _run(["aarch64-linux-gnu-gcc", *flags, *inc, "-DDRV_MAIN", "-static", *srcs, "-o", str(tmp)])
    else:  # two steps: a one-step clang link would run an old wasm-opt that rejects relaxed SIMD
        objs = []
        for s in srcs:
            o = s[:-2] + ".o"
            _run(["clang-19", "--target=wasm32", "-ffreestanding", *flags, *inc, "-c", s, "-o", o])
            objs.append(o)
        exports = [f"-Wl,--export={f}" for f in ("drv_base", "drv_arena_size", "drv_ntargets", "drv_run")]
        _run(["clang-19", "--target=wasm32", "-nostdlib", "-Wl,--no-entry", *exports, *objs, "-o", str(tmp)])
    tmp.rename(art)
    return art


# -- batches of calls --------------------------------------------------------------------------------------------------
def f32_bits(x: float) -> int:
    return int(np.array(x, np.float32).view(np.uint32))


@dataclass
class Batch:
    """Arena image under construction: inputs, output buffers with guard zones, and the command list."""
    data: bytearray = field(default_factory=bytearray)
    cmds: list[list[int]] = field(default_factory=list)
    guards: list[tuple[int, bytes]] = field(default_factory=list)

    GUARD = 64  # bytes of canary before and after each output

    def _align(self, a: int = 64) -> None:
        self.data.extend(b"\0" * (-len(self.data) % a))

    def put(self, arr: np.ndarray) -> int:
        self._align()
        off = len(self.data)
        self.data.extend(np.ascontiguousarray(arr).tobytes())
        return off

    def out(self, count: int, fill: float = np.nan) -> int:
        """An output of `count` floats pre-filled with fill, with canaries around it (checked by `check_guards`)."""
        canary = np.full(self.GUARD // 4, 0x7FA5A5A5, np.uint32).tobytes()
        self._align()
        self.guards.append((len(self.data), canary))
        self.data.extend(canary)
        off = len(self.data)
        self.data.extend(np.full(count, fill, np.float32).tobytes())
        self.guards.append((len(self.data), canary))
        self.data.extend(canary)
        return off

    def ptrs(self, offsets: list[int] | np.ndarray) -> int:
        return self.put(np.asarray(offsets, np.int64))

    def cmd(self, kind: str, target: int, *args: int, clamp: tuple[float, float] = (-np.inf, np.inf)) -> None:
        words = [CMD[kind], target, *args]
        assert len(words) <= WORDS - 2
        words += [0] * (WORDS - 2 - len(words)) + [f32_bits(clamp[0]), f32_bits(clamp[1])]
        self.cmds.append(words)

    def image(self) -> tuple[bytes, int, int]:
        cmd_off = self.put(np.asarray(self.cmds, np.int64).reshape(-1, WORDS))
        return bytes(self.data), cmd_off, len(self.cmds)


class Result:
    def __init__(self, image: bytes, batch: Batch) -> None:
        self.image = image
        bad = [off for off, canary in batch.guards if image[off:off + len(canary)] != canary]
        if bad:
            raise AssertionError(f"kernel wrote outside its output (guard zones at {bad[:5]} changed)")

    def f32(self, off: int, count: int) -> np.ndarray:
        return np.frombuffer(self.image, np.float32, count, off).copy()

    def i64(self, off: int, count: int) -> np.ndarray:
        return np.frombuffer(self.image, np.int64, count, off).copy()


# -- runners -----------------------------------------------------------------------------------------------------------
class Runner:
    def __init__(self, plat: Platform, art: Path) -> None:
        self.plat, self.art = plat, art

    def run(self, batch: Batch) -> Result:
        image, cmd_off, n = batch.image()
        status, out = self._run(image, cmd_off, n)
        if status:
            raise RuntimeError(f"driver rejected command {status - 1}")
        return Result(out, batch)

    def _run(self, image: bytes, cmd_off: int, n: int) -> tuple[int, bytes]:
        raise NotImplementedError


class NativeRunner(Runner):
    def __init__(self, plat: Platform, art: Path) -> None:
        super().__init__(plat, art)
        self.lib = ctypes.CDLL(str(art))
        self.lib.drv_base.restype = ctypes.c_void_p
        self.lib.drv_arena_size.restype = ctypes.c_size_t
        self.lib.drv_run.argtypes = [ctypes.c_size_t, ctypes.c_size_t]
        self.base = self.lib.drv_base()
        self.size = self.lib.drv_arena_size()

    def _run(self, image: bytes, cmd_off: int, n: int) -> tuple[int, bytes]:
        assert len(image) <= self.size, "batch larger than the driver arena"
        ctypes.memmove(self.base, image, len(image))
        status = self.lib.drv_run(cmd_off, n)
        return status, ctypes.string_at(self.base, len(image))


class WasmRunner(Runner):
    def __init__(self, plat: Platform, art: Path) -> None:
        import wasmtime

        super().__init__(plat, art)
        cfg = wasmtime.Config()
        cfg.wasm_simd = True
        cfg.wasm_relaxed_simd = True  # off by default in wasmtime: the relaxed build would not validate
        self.store = wasmtime.Store(wasmtime.Engine(cfg))
        module = wasmtime.Module.from_file(self.store.engine, str(art))
        inst = wasmtime.Instance(self.store, module, [])
        ex = inst.exports(self.store)
        self.mem, self.drv_run = ex["memory"], ex["drv_run"]
        self.base = ex["drv_base"](self.store)
        self.size = ex["drv_arena_size"](self.store)

    def _run(self, image: bytes, cmd_off: int, n: int) -> tuple[int, bytes]:
        assert len(image) <= self.size, "batch larger than the driver arena"
        self.mem.write(self.store, image, self.base)
        status = self.drv_run(self.store, cmd_off, n)
        return status, bytes(self.mem.read(self.store, self.base, self.base + len(image)))


class QemuRunner(Runner):
    def _run(self, image: bytes, cmd_off: int, n: int) -> tuple[int, bytes]:
        hdr = struct.pack("<3Q", len(image), cmd_off, n)
        r = subprocess.run(["qemu-aarch64", "-cpu", "max", str(self.art)], input=hdr + image, capture_output=True,
                           timeout=600, env={**os.environ, "QEMU_LD_PREFIX": "/usr/aarch64-linux-gnu"})
        if r.returncode or len(r.stdout) != 4 + len(image):
            raise RuntimeError(f"qemu driver failed ({r.returncode}): {r.stderr[-500:]!r}")
        return struct.unpack("<i", r.stdout[:4])[0], r.stdout[4:]


def runner(name: str, art: Path | None = None) -> Runner:
    plat = PLATFORMS[name]
    art = art or build(plat)
    cls = {"native": NativeRunner, "wasm": WasmRunner, "qemu": QemuRunner}[plat.kind]
    return cls(plat, art)
