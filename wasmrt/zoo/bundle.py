"""Convert every bundled real model (wasmrt.zoo.models.BUNDLED) into models/*.wrt (a checkout's models/, or the user
cache when installed: wasmrt.paths.models_dir()), as the quick start's main job does.

    python -m wasmrt.zoo.bundle [--out DIR] [NAME ...]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from wasmrt import paths
from wasmrt.compile.converter import convert
from wasmrt.compile.dynamic import parse_dynamic
from wasmrt.zoo.models import BUNDLED, BundledModel, load_labels, model_path


def convert_bundled(model: BundledModel, out_dir: Path, log=print) -> Path:
    src = model_path(model.name)
    labels = load_labels(model.labels) if model.labels else None
    t0 = time.perf_counter()
    result = convert(src, input_shapes=model.input_shapes, preprocess=model.preprocess, labels=labels,
                     dynamic=[parse_dynamic(d) for d in model.dynamic] or None)
    out = out_dir / model.wrt
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(result.data)
    plan = result.plan
    log(f"{model.wrt:<26s} {len(result.data) / 1024:>8,.0f} KiB  {len(result.graph.nodes):>4d} ops  "
        f"arena {plan.arena_size / 1024:>7,.0f} KiB = {plan.arena_size / max(plan.lower_bound, 1):.3f} x lower bound"
        f"  ({time.perf_counter() - t0:.1f} s)")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m wasmrt.zoo.bundle", description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(paths.models_dir()), help=f"output directory (default: {paths.models_dir()})")
    ap.add_argument("names", nargs="*", help=f"models to convert (default: all of {', '.join(BUNDLED)})")
    args = ap.parse_args(argv)
    names = args.names or list(BUNDLED)
    unknown = [n for n in names if n not in BUNDLED]
    if unknown:
        ap.error(f"unknown model {unknown[0]!r}; bundled: {', '.join(BUNDLED)}")
    for k, name in enumerate(names, 1):
        print(f"[{k}/{len(names)}] ", end="", flush=True)
        convert_bundled(BUNDLED[name], Path(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
