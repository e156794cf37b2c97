"""python -m kernels_wasm.gen [--out DIR] [--check]: write (or verify) kernels_wasm/generated/<target>.c and the
element-wise op codes they share (wrt_eltwise.h), the WGSL kernels and the test driver's calls
(kernels_wasm/engine/test/driver_calls.h)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kernels_wasm.gen.driver_calls import generate_driver_calls
from kernels_wasm.gen.emit import generate_all
from kernels_wasm.gen.wgsl_emit import generate_wgsl

GENERATED = Path(__file__).resolve().parent.parent / "generated"


def check(out: Path) -> list[str]:
    """Names of files that are missing or differ from what the generator produces now."""
    bad = [name for name, text in generate_all().items()
           if not (out / name).is_file() or (out / name).read_text(encoding="utf-8") != text]
    stale = {p.name for p in [*out.glob("*.c"), *out.glob("*.h")]} - set(generate_all())
    bad += [str(p) for p, text in {**generate_wgsl(), **generate_driver_calls()}.items()
            if not p.is_file() or p.read_text(encoding="utf-8") != text]
    return sorted(bad) + sorted(f"{n} (not generated any more)" for n in stale)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kernels_wasm.gen", description=__doc__)
    ap.add_argument("--out", type=Path, default=GENERATED)
    ap.add_argument("--check", action="store_true", help="fail if the files in --out differ from a fresh generation")
    args = ap.parse_args(argv)
    if args.check:
        bad = check(args.out)
        for name in bad:
            print(f"stale generated file: {args.out / name}", file=sys.stderr)
        return 1 if bad else 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name, text in generate_all().items():
        (args.out / name).write_text(text, encoding="utf-8", newline="\n")
    # js_bindings/src/webgpu/kernels.js, which both WebGPU engines read; the test driver's calls
    for path, text in {**generate_wgsl(), **generate_driver_calls()}.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="\n")
    print(f"wrote {len(generate_all())} files to {args.out}, the WGSL kernels and the driver's calls")
    return 0


if __name__ == "__main__":
    sys.exit(main())
