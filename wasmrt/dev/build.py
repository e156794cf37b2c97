"""Build the C engine: the three WebAssembly variants, the native x86-64 library, and test binaries.

    wasmrt build [--only wasm|native|aarch64|asan|fuzz] [--force]

- js_bindings/dist/wasmrt-{scalar,simd,relaxed}.wasm: clang-19 --target=wasm32, freestanding (no libc, no
  emscripten), compiled and linked in two steps (a one-step clang link runs an old wasm-opt that rejects relaxed
  SIMD). The files are also copied into wasmrt/engines/dist/ so the Python package ships them.
- build/native/libwasmrt.so: engine + scalar/AVX2/AVX-512 kernels, picked at run time (WASMRT_FORCE_TARGET), beside
  libwasmrt.so.inputs.json (the sources it was built from, which the native engine checks). On an aarch64 machine,
  the NEON build instead. The recipe (sources, defines, flags) is wasmrt/dev/native_build.py, which the package
  build (setup.py) uses too.
- build/aarch64/wrt_driver: static aarch64 test driver (NEON kernels) for qemu-aarch64.
- build/aarch64/libwasmrt.so: the aarch64 native library (baseline ARMv8-A, NEON kernels) the aarch64 wheel ships.
- build/asan/wrt_driver: the native test driver under AddressSanitizer + UBSan (gcc, which ships libasan here).
- build/fuzz/wrt_fuzz_engine: the structure-aware libFuzzer target (kernels_wasm/fuzz/), clang-19 with
  -fsanitize=fuzzer,address,undefined (libFuzzer from Debian's libclang-rt-19-dev). Run it with `wasmrt fuzz`.

Each artefact is rebuilt only when a hash of its sources, flags and compiler changes. Engines never call this: they
load what it made, and say to run `wasmrt build` when that is missing or older than the C sources.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from wasmrt import paths
from wasmrt.dev import native_build
from wasmrt.dev.native_build import CFLAGS, NATIVE_THREADS, Recipe
from wasmrt.errors import WasmrtError

ROOT = paths.checkout() or paths.PACKAGE.parent  # installed: nothing to build, engine_sources() says so
ENGINE = ROOT / native_build.ENGINE
GENERATED = ROOT / native_build.GENERATED
INCLUDE = ROOT / native_build.INCLUDE
PROVISIONAL = ROOT / native_build.PROVISIONAL
DRIVER = ENGINE / "test" / "driver.c"
DRIVER_CALLS = ENGINE / "test" / "driver_calls.h"  # included by the driver (python -m kernels_wasm.gen)
FUZZ = ROOT / "kernels_wasm" / "fuzz"
BUILD = ROOT / "build"
DIST = ROOT / "js_bindings" / "dist"
PACKAGE_DIST = paths.SHIPPED_WASM
# bytes, every full module: 200 KB until the Winograd F(2x2)/F(4x4) transforms (about 10 KB per SIMD module, fully
# unrolled for speed) joined the kernels, 240 KB until the element-wise chains (about 5 KB) and the vision
# pipelines' image operations (about 7.5 KB), 256 KB until convolution and pooling training (about 4 KB), the int8
# classifier's float output (about 1.5 KB) and the vectorised image operations (about 2.3 KB); the segmentation's
# mask and compositing at -O2 (mask.c) fit within it. A page that wants less loads modules built for its models
# (--for), which leave the image operations out
SIMD_WASM_LIMIT = 272_000

EXPORTS = (
    "wrt_load", "wrt_release", "wrt_run", "wrt_error_message", "wrt_target_name", "wrt_model_target",
    "wrt_num_inputs", "wrt_num_outputs", "wrt_tensor_name", "wrt_tensor_rank", "wrt_tensor_dim", "wrt_tensor_dtype",
    "wrt_tensor_bytes", "wrt_input_ptr", "wrt_output_ptr", "wrt_arena_size", "wrt_weights_size", "wrt_alloc",
    "wrt_free", "wrt_num_ops", "wrt_op_type", "wrt_op_name", "wrt_op_kernel", "wrt_run_ops", "wrt_op_span",
    "wrt_tensor_data", "wrt_tensor_nbytes",
    "wrt_load_with_limits", "wrt_load_begin", "wrt_load_next", "wrt_memory_size", "wrt_work_estimate", "wrt_active_op",
    "wrt_current_op",
    "wrt_set_sparse_policy",
    "wrt_set_conv_algo",
    "wrt_op_num_choices", "wrt_op_choice_name", "wrt_op_chosen", "wrt_set_choices", "wrt_force_choice",
    "wrt_tune_param", "wrt_tune_begin", "wrt_tune_time", "wrt_tune_median", "wrt_tune_pick",
    "wrt_input_dim_min", "wrt_input_dim_max", "wrt_resize_inputs",
    "wrt_set_threads", "wrt_static_size",
)
# The vision pipelines' image operations (engine/image.c, mask.c): in the full modules only. A module built for given
# models (--for) leaves them out (7.5 KB: the face try-on's modules stay within their budget); the JS pipelines then use
# their JS code (js_bindings/vision/imgops.js finds the exports missing).
IMAGE_SOURCES = ("image.c", "mask.c")
IMAGE_EXPORTS = ("wrt_img_crop", "wrt_img_resize_mask", "wrt_img_smooth", "wrt_img_mask_frame",
                 "wrt_img_mask_composite", "wrt_img_composite", "wrt_img_box_blur_scratch", "wrt_img_box_blur")
EXPORTS = (*EXPORTS, *IMAGE_EXPORTS)
# training steps (train.c): left out of a module built for given models, which has no training kernels (TRAIN family)
TRAIN_EXPORTS = ("wrt_train_dense_forward", "wrt_train_dense_backward", "wrt_train_grad", "wrt_train_softmax_xent",
                 "wrt_train_mse", "wrt_train_sgd", "wrt_train_adam", "wrt_train_conv_forward",
                 "wrt_train_conv_backward", "wrt_train_pool")
# The wasm modules must stay small (SIMD_WASM_LIMIT): code that runs once per load (reading and checking the file,
# planning, support, error words) and the scalar loops of rare ops (integer tensors, MediaPipe's transforms) is
# built for the smallest size (-Oz); the portable int8 paths behind the generated kernels, data movement, the
# recurrent ops' glue, indirection and the generated kernels themselves for size (-Os): their tiles and
# unrolling are explicit; the sparse layers' packing and tile loops (the generated kernels do the work) at -Oz;
# -Os measured the same speed as -O3 (0.98-1.01x, MobileNetV2 and EfficientNet-Lite0 in Node, CPU clock).
# The int8 glue (pooling, data movement, element-wise setup, requantization tables), the recurrent ops' glue, the
# run loop, the allocator and the double-precision math (softmax, pow, erf: per element, never a model's bulk) at
# -Oz/-Os too: the generated kernels do their work (5.7 KB less, for the relaxed module's int8 dot-product kernels and
# the unrolled int8 depthwise kernels). The float convolution's glue (planning, packing, row loops) at -Os as well
# (3.1 KB less, for the relaxed module's int8 dot-product depthwise kernel; float32 in Chromium against -O3,
# interleaved, CPU clock: EfficientNet-Lite0 0.992-1.020x, MobileNetV2 0.988-1.008x wall clock). The element-wise
# glue (broadcast set-up and row loops around the generated kernels, scalar fallbacks of rare ops) and the reductions
# (a model's MEAN is its last pooling, 0.05-0.1 ms in Chromium) at -Oz (1 KB less than -Os, for the relaxed dot
# tables' depthwise kernel of any filter). The float GEMM's task loops at -Os (440 bytes less, for computing a lone
# last row with its panels while they are in cache), and the float pooling's glue (260 bytes less, for cutting
# depthwise rows into chunks whose weights stay in L1). The segmentation's mask and compositing (mask.c: every pixel
# of every frame) at -O2: 20% faster than -Os in Chromium (the mask resized and smoothed: 0.54 -> 0.43 ms for a
# 640x512 frame) for about 4 KB.
WASM_OPT_LEVEL = {"fb": "-Oz", "model_read": "-Oz", "shape_check": "-Oz", "qrules": "-Oz", "rt_err": "-Oz",
                  "support": "-Oz", "planner": "-Oz", "typed": "-Oz", "mediapipe": "-Oz", "profile": "-Oz",
                  "model": "-Oz", "ops": "-Os", "qconv": "-Os", "qelt": "-Oz", "qpool": "-Oz", "qdata": "-Oz",
                  "qmath": "-Oz", "recurrent": "-Oz", "data": "-Os", "sparse": "-Oz", "indirection": "-Os",
                  "target": "-Oz", "reduce": "-Oz", "rt_mem": "-Os", "rt_math": "-Oz", "conv": "-Os", "gemm": "-Os",
                  "elementwise": "-Oz", "pool": "-Os", "choice": "-Oz", "image": "-Os", "mask": "-O2",
                  "train": "-Oz"}
WASM_KERNEL_OPT = "-Os"  # the generated kernels


@dataclass(frozen=True)
class WasmVariant:
    name: str  # file suffix: wasmrt-<name>.wasm
    target: str  # wrt_target_<target> from kernels_wasm/generated/<target>.c
    flags: tuple[str, ...]
    threads: bool = False  # shared memory and atomics: Workers run parallel regions (wrt_worker_run)


# Threaded modules import a shared memory (its maximum is fixed when it is created: 2 GiB, what browsers allow for
# shared memory) and export their stack pointer, so each Worker's instance can be given its own stack.
THREADS_MAX_MEMORY = 2 << 30
THREADS_COMPILE = ("-matomics", "-mbulk-memory", "-DWRT_THREADS")
THREADS_LINK = ("-Wl,--shared-memory", "-Wl,--import-memory", "-Wl,--export-memory",
                f"-Wl,--max-memory={THREADS_MAX_MEMORY}", "-Wl,--export=__stack_pointer", "-Wl,--export=wrt_worker_run")

# The scalar module avoids every post-MVP feature, so it runs on the oldest hosts (mini-programs, old WebViews). The
# SIMD modules use bulk memory too (every host with SIMD128 has it): the compiler's copies and fills become
# memory.copy/fill, and the engine's own memcpy/memmove/memset loops drop out (3 KB).
WASM_VARIANTS: dict[str, WasmVariant] = {v.name: v for v in (
    WasmVariant("scalar", "scalar", ("-mcpu=mvp",)),
    WasmVariant("simd", "wasm_simd128", ("-msimd128", "-mbulk-memory")),
    WasmVariant("relaxed", "wasm_relaxed", ("-msimd128", "-mrelaxed-simd", "-mbulk-memory")),
    WasmVariant("simd-mt", "wasm_simd128", ("-msimd128", *THREADS_COMPILE), threads=True),
    WasmVariant("relaxed-mt", "wasm_relaxed", ("-msimd128", "-mrelaxed-simd", *THREADS_COMPILE), threads=True),
)}


@dataclass
class Artefact:
    path: Path
    built: bool  # False: up to date, skipped
    notes: list[str] = field(default_factory=list)

    @property
    def size(self) -> int:
        return self.path.stat().st_size


def engine_sources() -> list[Path]:
    paths.require_checkout("building the C engine")  # an installed package ships it built, not its sources
    return sorted(ENGINE.glob("*.c"))


def kernel_source(target: str) -> tuple[Path, tuple[str, ...], str | None]:
    """The generated kernels of a target, or the provisional scalar table standing in for it (with a note)."""
    gen = GENERATED / f"{target}.c"
    if gen.is_file():
        return gen, (), None
    defines = (f"-DWRT_PROVISIONAL_SYMBOL=wrt_target_{target}", f'-DWRT_PROVISIONAL_NAME="{target}"')
    return PROVISIONAL, defines, f"kernels_wasm/generated/{target}.c is missing: using the provisional scalar table"


def _tool(*names: str) -> str:
    for n in names:
        if shutil.which(n):
            return n
    raise WasmrtError(f"compiler not found: install {' or '.join(names)} (see docs/dev/toolchain.md)")


def _run(cmd: list[str]) -> None:
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise WasmrtError(f"build command failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr.strip()}")


def _stamp(sources: list[Path], *flags: object) -> str:
    h = hashlib.sha256()
    for p in sorted(set(sources)):
        h.update(str(p.relative_to(ROOT)).encode())
        h.update(p.read_bytes())
    for header in [*sorted(ENGINE.glob("*.h")), *sorted(ENGINE.glob("generated/*.h")), INCLUDE / "wrt_kernels.h",
                   *sorted(GENERATED.glob("*.h"))]:
        h.update(header.read_bytes())
    h.update(repr(flags).encode())
    return h.hexdigest()


def _cached(out: Path, stamp: str, force: bool, make: Callable[[Path], None]) -> bool:
    """Run make(tmp) and move the result to out unless out's stamp matches; True when built."""
    where = str(out.relative_to(ROOT)) if out.is_relative_to(ROOT) else hashlib.sha256(str(out).encode()).hexdigest()
    stamp_file = BUILD / "stamps" / (where.replace("/", "_") + ".hash")
    if not force and out.is_file() and stamp_file.is_file() and stamp_file.read_text().strip() == stamp:
        return False
    out.parent.mkdir(parents=True, exist_ok=True)
    stamp_file.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")  # concurrent builds never share a temporary
    make(tmp)
    tmp.replace(out)
    stamp_file.write_text(stamp + "\n")
    return True


# -- WebAssembly -------------------------------------------------------------------------------------------------


def build_wasm(variant: str, force: bool = False, trim: str | None = None, out: Path | None = None) -> Artefact:
    """A full module (js_bindings/dist, copied into the Python package), or with `trim` (the wrt_trim.h text of
    wasmrt/dev/modules.py) one built for given models, written to `out`."""
    v = WASM_VARIANTS[variant]
    kern, kdefs, note = kernel_source(v.target)
    sources = [*engine_sources(), kern]
    exports = (*EXPORTS, *TRAIN_EXPORTS)
    if trim is not None:  # no image operations; the training steps only where the TRAIN kernels are in
        sources = [src for src in sources if src.name not in IMAGE_SOURCES]
        exports = tuple(e for e in EXPORTS if e not in IMAGE_EXPORTS)
        exports += TRAIN_EXPORTS if "#define WRT_KF_TRAIN 1" in trim else ()
    cc = _tool("clang-19")
    trim_flags: list[str] = []
    if trim is not None:  # the header sits in build/, named by its contents: the stamp then covers them
        header = BUILD / "trim" / f"wrt_trim_{hashlib.sha256(trim.encode()).hexdigest()[:16]}.h"
        header.parent.mkdir(parents=True, exist_ok=True)
        if not header.is_file() or header.read_text() != trim:
            header.write_text(trim)
        trim_flags = ["-include", str(header)]
    compile_flags = [*CFLAGS, "--target=wasm32", "-ffreestanding", "-nostdlib", *v.flags, *kdefs,
                     f"-DWRT_WASM_TARGET=wrt_target_{v.target}", "-I", str(INCLUDE), *trim_flags]
    link_flags = ["--target=wasm32", "-nostdlib", "-Wl,--no-entry", "-Wl,--strip-all", "-Wl,-z,stack-size=262144",
                  *(f"-Wl,--export={e}" for e in exports), *(THREADS_LINK if v.threads else ())]
    full = out is None
    out = DIST / f"wasmrt-{variant}.wasm" if out is None else out.resolve()

    def make(tmp: Path) -> None:
        with tempfile.TemporaryDirectory() as d:
            objs = []
            for i, src in enumerate(sources):
                obj = Path(d) / f"{i}_{src.stem}.o"
                opt = WASM_OPT_LEVEL.get(src.stem) if src.parent == ENGINE else WASM_KERNEL_OPT
                _run([cc, *compile_flags, *([opt] if opt else []), "-c", str(src), "-o", str(obj)])
                objs.append(str(obj))
            _run([cc, *link_flags, *objs, "-o", str(tmp)])

    stamp = _stamp(sources, compile_flags, link_flags, cc, WASM_OPT_LEVEL, WASM_KERNEL_OPT, trim or "")
    built = _cached(out, stamp, force, make)
    if not full:
        return Artefact(out, built, [note] if note else [])
    PACKAGE_DIST.mkdir(parents=True, exist_ok=True)
    pkg = PACKAGE_DIST / out.name
    if built or not pkg.is_file() or pkg.read_bytes() != out.read_bytes():
        shutil.copyfile(out, pkg)
    art = Artefact(out, built, [note] if note else [])
    if art.size > SIMD_WASM_LIMIT:
        raise WasmrtError(f"{out.name} is {art.size:,} bytes, over the {SIMD_WASM_LIMIT:,}-byte budget")
    return art


# -- native -------------------------------------------------------------------------------------------------------


def _compile_library(r: Recipe, cc: str, out: Path) -> None:
    try:
        native_build.compile_library(r, [cc], out)
    except native_build.BuildError as e:
        raise WasmrtError(f"building {out.name} failed: {e}\n{e.output}") from None


def build_native(force: bool = False) -> Artefact:
    """build/native/libwasmrt.so for this machine (x86-64: run-time dispatch over scalar, AVX2 and AVX-512), built as
    the platform wheel ships it, and the record of its inputs beside it."""
    paths.require_checkout("building the C engine")
    cc = _tool("clang-19", "gcc")
    r = native_build.recipe(ROOT, wheel=True)
    out = BUILD / "native" / native_build.LIBRARY
    built = _cached(out, _stamp(list(r.sources), r.compile_flags, r.link_flags, cc), force,
                    lambda tmp: _compile_library(r, cc, tmp))
    native_build.record_inputs(r, out)
    return Artefact(out, built, list(r.notes))


def build_asan_driver(force: bool = False) -> Artefact:
    """The test driver (load/run model files) with AddressSanitizer and UBSan, aborting on the first report."""
    cc = _tool("gcc")
    ksrcs, kdefs, notes = native_build.kernels(ROOT, native_build.machine())
    sources = [*engine_sources(), *ksrcs, DRIVER]
    flags = [*CFLAGS[:1], "-O1", "-g", *CFLAGS[2:], *NATIVE_THREADS, "-fsanitize=address,undefined",
             "-fno-sanitize-recover=all",
             "-fno-omit-frame-pointer", *kdefs, "-I", str(INCLUDE)]
    out = BUILD / "asan" / "wrt_driver"

    def make(tmp: Path) -> None:
        _run([cc, *flags, *map(str, sources), "-o", str(tmp), "-lm"])

    return Artefact(out, _cached(out, _stamp([*sources, DRIVER_CALLS], flags, cc), force, make), notes)


def build_fuzz(force: bool = False) -> Artefact:
    """The engine fuzzer: every engine source and native kernel, the recipe generator and the libFuzzer target, under
    ASan + UBSan with -O1 (the sanitizers' usual trade of speed for clear reports)."""
    cc = _tool("clang-19")
    ksrcs, kdefs, notes = native_build.kernels(ROOT, native_build.machine())
    fuzz = sorted(FUZZ.glob("*.c"))
    sources = [*engine_sources(), *ksrcs, *fuzz]
    flags = [*CFLAGS[:1], "-O1", "-g", *CFLAGS[2:], "-fsanitize=fuzzer,address,undefined", "-fno-sanitize-recover=all",
             "-fno-omit-frame-pointer", *kdefs, "-I", str(INCLUDE)]
    out = BUILD / "fuzz" / "wrt_fuzz_engine"

    def make(tmp: Path) -> None:
        with tempfile.TemporaryDirectory() as d:  # one object per source: the kernels compile in parallel
            objs = [Path(d) / f"{i}_{src.stem}.o" for i, src in enumerate(sources)]
            procs = [subprocess.Popen([cc, *flags, "-c", str(src), "-o", str(obj)], stderr=subprocess.PIPE, text=True)
                     for src, obj in zip(sources, objs, strict=True)]
            errors = [p.communicate()[1] for p in procs if p.wait() != 0]
            if errors:
                raise WasmrtError(f"building the fuzzer failed:\n{errors[0].strip()}")
            _run([cc, *flags, *map(str, objs), "-o", str(tmp), "-lm"])

    stamp = _stamp([*sources, *FUZZ.glob("*.h")], flags, cc)
    return Artefact(out, _cached(out, stamp, force, make), notes)


def build_aarch64(force: bool = False) -> Artefact:
    """Static aarch64 test driver with the NEON kernels, for qemu-aarch64."""
    cc = _tool("aarch64-linux-gnu-gcc")
    kern, defs, notes = native_build.kernels(ROOT, "aarch64")
    sources = [*engine_sources(), *kern, DRIVER]
    flags = [*CFLAGS, *NATIVE_THREADS, "-march=armv8.2-a+fp16+dotprod", "-static", *defs, "-I", str(INCLUDE)]
    out = BUILD / "aarch64" / "wrt_driver"

    def make(tmp: Path) -> None:
        _run([cc, *flags, *map(str, sources), "-o", str(tmp), "-lm"])

    return Artefact(out, _cached(out, _stamp([*sources, DRIVER_CALLS], flags, cc), force, make), notes)


def build_aarch64_library(force: bool = False) -> Artefact:
    """build/aarch64/libwasmrt.so: baseline ARMv8-A (NEON is part of it; the kernels use nothing newer), so the
    aarch64 wheel runs on every 64-bit ARM Linux."""
    paths.require_checkout("building the C engine")
    cc = _tool("aarch64-linux-gnu-gcc")
    r = native_build.recipe(ROOT, "aarch64", wheel=True, system="linux")
    out = BUILD / "aarch64" / native_build.LIBRARY
    built = _cached(out, _stamp(list(r.sources), r.compile_flags, r.link_flags, cc), force,
                    lambda tmp: _compile_library(r, cc, tmp))
    return Artefact(out, built, list(r.notes))


def build_all(only: str | None = None, force: bool = False,
              log: Callable[[str], None] = print) -> dict[str, Artefact]:
    steps: dict[str, Callable[[], Artefact]] = {
        **{f"wasm-{v}": (lambda v=v: build_wasm(v, force)) for v in WASM_VARIANTS},
        "native": lambda: build_native(force),
        "aarch64": lambda: build_aarch64(force),
        "aarch64-lib": lambda: build_aarch64_library(force),
        "asan": lambda: build_asan_driver(force),
        "fuzz": lambda: build_fuzz(force),
    }
    out = {}
    for name, step in steps.items():
        if only and not name.startswith(only):
            continue
        art = step()
        for n in art.notes:
            log(f"  note: {n}")
        state = "built" if art.built else "up to date"
        log(f"{name:14s} {art.size:>10,d} bytes  {state:10s} {art.path.relative_to(ROOT)}")
        out[name] = art
    return out


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="wasmrt build", description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=["wasm", "native", "aarch64", "asan", "fuzz"])
    ap.add_argument("--force", action="store_true")
    args = ap.parse_args(argv)
    build_all(args.only, args.force)
    return 0


if __name__ == "__main__":
    sys.exit(main())
