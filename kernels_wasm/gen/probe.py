"""GEMM throughput probe (not a test): GFLOP/s of candidate MR x NR tiles per target, to justify the tile choices.

    python -m kernels_wasm.gen.probe [--size 256] [--targets avx2,wasm_relaxed] [--accuracy]

Each candidate is the generator's own GEMM micro-kernel at that tile, driven over a whole M x N x K product on packed
panels (the driver's CMD_GEMM_LOOP). Native targets run through ctypes; wasm runs in wasmtime (Cranelift) and, when
node is installed, in V8 (closer to browsers). NEON is not timed (qemu is an emulator).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from kernels_wasm.gen import accuracy, harness
from kernels_wasm.gen.emit import prelude
from kernels_wasm.gen.harness import Batch, Runner
from kernels_wasm.gen.isa import TARGETS
from kernels_wasm.gen.kernels.gemm import gemm, gemm_name

_WASM_TILES = [(2, 8), (3, 8), (4, 8), (5, 8), (6, 8), (2, 16), (3, 16), (4, 16)]
CANDIDATES: dict[str, list[tuple[int, int]]] = {  # probe name (platform + target) -> tiles
    "scalar": [(2, 4), (4, 4), (4, 2), (4, 1)],
    "wasm_scalar": [(2, 4), (4, 4), (4, 2), (4, 1)],
    "wasm_simd128": _WASM_TILES,
    "wasm_relaxed": _WASM_TILES,
    "avx2": [(4, 16), (6, 16), (8, 16), (4, 24), (3, 32)],
    "avx512": [(4, 32), (6, 32), (8, 32), (12, 32), (6, 48), (4, 64)],
}
PLATFORM_OF = {"scalar": "x86", "avx2": "x86", "avx512": "x86", "wasm_scalar": "wasm_scalar",
               "wasm_simd128": "wasm_simd128", "wasm_relaxed": "wasm_relaxed"}
ISA_OF = {"wasm_scalar": "scalar"}
NODE_FLAGS = {"wasm_relaxed": ["--experimental-wasm-relaxed-simd"]}  # Node 20 (V8 11.3); on by default in Node 22


def probe_source(target: str, tiles: list[tuple[int, int]]) -> tuple[str, list[str]]:
    """C source with one GEMM per tile and a minimal wrt_target table for each (only the gemm entry is set)."""
    isa = TARGETS[target]
    parts, tables = [prelude(isa)], []
    for mr, nr in tiles:
        parts.append(gemm(isa, mr, nr))
        name = f"probe_{target}_{mr}x{nr}"
        parts.append(f"const wrt_target {name} = {{.name = \"{target}\", .gemm_mr = {mr}, .gemm_nr = {nr}, "
                     f".gemm = {gemm_name(isa, mr, nr)}}};\n")
        tables.append(name)
    return "\n".join(parts), tables


def gemm_batch(t: int, mr: int, nr: int, size: int, reps: int) -> Batch:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size)).astype(np.float32)
    panels = -(-size // nr)
    w = np.zeros((panels, size + 1, nr), np.float32)
    w.reshape(panels, -1)[:] = rng.standard_normal((panels, (size + 1) * nr))
    b = Batch()
    b.cmd("gemm_loop", t, size, size, size, b.put(a), b.put(w), b.out(size * size), reps)
    return b


def time_runner(r: Runner, b: Batch, runs: int) -> float:
    """Best seconds per drv_run over runs (first run is a warm-up)."""
    image, cmd_off, n = b.image()
    best = float("inf")
    for i in range(runs + 1):
        t0 = time.perf_counter()
        status, _ = r._run(image, cmd_off, n)
        dt = time.perf_counter() - t0
        assert status == 0
        if i:
            best = min(best, dt)
    return best


def time_node(art: Path, b: Batch, runs: int, flags: list[str]) -> float | None:
    node = shutil.which("node")
    if node is None:
        return None
    image, cmd_off, n = b.image()
    with tempfile.NamedTemporaryFile(suffix=".bin") as f:
        f.write(image)
        f.flush()
        script = Path(__file__).parent / "testdriver" / "probe_node.mjs"
        r = subprocess.run([node, *flags, str(script), str(art), f.name, str(cmd_off), str(n), str(runs + 1)],
                           capture_output=True, text=True, timeout=600)
    if r.returncode:
        print(f"  node failed: {r.stderr.strip()[-300:]}")
        return None
    return min(float(x) for x in r.stdout.split()[1:]) / 1e3


def probe(name: str, size: int, runs: int) -> list[tuple[str, float, float | None]]:
    """(tile, GFLOP/s, GFLOP/s in V8 or None) per candidate."""
    plat = harness.PLATFORMS[PLATFORM_OF[name]]
    tiles = CANDIDATES[name]
    target = ISA_OF.get(name, name)
    src, tables = probe_source(target, tiles)
    art = harness.build(plat, {f"probe_{target}.c": src}, tables)
    r = harness.runner(plat.name, art)
    flop = 2.0 * size ** 3
    out = []
    for t, (mr, nr) in enumerate(tiles):
        reps = max(1, int(3e8 // flop)) if target != "scalar" else 1
        b = gemm_batch(t, mr, nr, size, reps)
        gf = reps * flop / time_runner(r, b, runs) / 1e9
        v8 = time_node(art, b, runs, NODE_FLAGS.get(target, [])) if plat.kind == "wasm" else None
        out.append((f"{mr}x{nr}", gf, None if v8 is None else reps * flop / v8 / 1e9))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kernels_wasm.gen.probe", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=256, help="M = N = K")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--targets", default=",".join(CANDIDATES))
    ap.add_argument("--accuracy", action="store_true", help="also measure sigmoid/tanh/exp errors (dense sweep)")
    args = ap.parse_args(argv)
    for name in args.targets.split(","):
        target = ISA_OF.get(name, name)
        plat = harness.PLATFORMS[PLATFORM_OF[name]]
        why = harness.missing_tools(plat) or harness.target_unsupported(target)
        if why:
            print(f"{name}: skipped ({why})")
            continue
        chosen = "{}x{}".format(*TARGETS[target].gemm_tile)
        for tile, gf, v8 in probe(name, args.size, args.runs):
            mark = " <- generated" if tile == chosen else ""
            v8s = f"  V8 {v8:6.1f}" if v8 is not None else ""
            print(f"{name:13s} {tile:6s} {gf:6.1f} GFLOP/s (wasmtime/native){v8s}{mark}", flush=True)
    if args.accuracy:
        for name in ("x86", "wasm_scalar", "wasm_simd128", "wasm_relaxed", "neon"):
            plat = harness.PLATFORMS[name]
            if harness.missing_tools(plat):
                continue
            r = harness.runner(name)
            for t, target in enumerate(plat.targets):
                if harness.target_unsupported(target):
                    continue
                errs = accuracy.measure(r, t, 2_000_000 if plat.kind != "qemu" else 200_000)
                print(f"{name}/{target}: " + ", ".join(f"{op} rel {e:.3g} at x={x:.6g}" for op, (e, x) in errs.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
