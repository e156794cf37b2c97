"""The `wasmrt` command: convert, inspect and run models.

Every failure ends in one readable line on stderr ("wasmrt: error: ...") and a non-zero exit code; set
WASMRT_DEBUG=1 to also see the Python traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from pathlib import Path

import numpy as np

from wasmrt.errors import InputError, WasmrtError


def _shape_arg(text: str) -> tuple[str, tuple[int, ...]]:
    name, sep, dims = text.partition("=")
    try:
        if not sep:
            raise ValueError
        return name, tuple(int(d) for d in dims.replace("x", ",").split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected NAME=D0,D1,... (got {text!r})") from None


def _input_arg(text: str) -> tuple[str, str]:
    name, sep, path = text.partition("=")
    if not sep or not name or not path:
        raise argparse.ArgumentTypeError(f"expected NAME=FILE (got {text!r})")
    return name, path


def _dynamic_arg(text: str) -> object:
    from wasmrt.dynamic import parse_dynamic

    try:
        return parse_dynamic(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def cmd_convert(args: argparse.Namespace) -> int:
    from wasmrt.converter import convert
    from wasmrt.models import load_labels, preset_for

    src = Path(args.model)
    shapes = dict(args.input_shape or [])
    preset = preset_for(src.name)
    preprocess, labels = None, None
    if preset is not None and not args.no_preset:
        print(f"using the bundled preset for {src.name} (input shapes, preprocessing, labels; --no-preset to skip)")
        shapes = {**preset.input_shapes, **shapes}
        preprocess = preset.preprocess
        labels = load_labels(preset.labels) if preset.labels else None
    if args.labels:
        labels = [ln.strip() for ln in Path(args.labels).read_text().splitlines() if ln.strip()]
    t0 = time.perf_counter()
    result = convert(src, input_shapes=shapes, preprocess=preprocess, labels=labels, weights=args.weights,
                     log=lambda m: print("  " + m), dynamic=args.dynamic or None, state=dict(args.state or []))
    out = Path(args.output or src.with_suffix(".wrt").name)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(result.data)
    print(f"wrote {out} ({len(result.data):,} bytes) in {time.perf_counter() - t0:.1f} s")
    return 0


def cmd_inspect(args: argparse.Namespace) -> int:
    from wasmrt.report import describe

    print(describe(args.model))
    return 0


def _load_input(spec, path: str, metadata: dict, index: int) -> np.ndarray:
    p = Path(path)
    if not p.exists():
        raise InputError(f"input {spec.name!r}: file {path} does not exist")
    if p.suffix.lower() == ".npy":
        return np.load(p)
    from wasmrt.preprocess import image_to_tensor, read_image

    pre = metadata["preprocess"].get(index)
    if pre is None:
        raise InputError(f"input {spec.name!r}: {p.name} is an image, but the model has no preprocessing hints "
                         f"for this input; give a .npy file of shape {list(spec.shape)}")
    from wasmrt.ir import Preprocess

    return image_to_tensor(read_image(p), Preprocess(**pre), spec.shape)


def _summarize(name: str, value: np.ndarray, labels: list[str]) -> str:
    line = f"  {name}  {list(value.shape)} {value.dtype}"
    if value.size:
        line += f"  min {value.min():.6g} max {value.max():.6g} mean {value.mean():.6g}"
    flat = value.reshape(-1)
    if labels and flat.size == len(labels):
        z = flat.astype(np.float64)
        p = np.exp(z - z.max())
        p /= p.sum()
        top = np.argsort(-flat)[:5]
        line += "\n" + "\n".join(f"    {k:4d} {labels[k]:<30s} score {flat[k]:.4f}  p {p[k]:.3f}" for k in top)
    return line


def cmd_run(args: argparse.Namespace) -> int:
    from python_ref import Interpreter
    from wasmrt.engines import load

    if args.variant and args.engine == "ref":
        raise WasmrtError("--variant applies to --engine native or wasm")
    model = Interpreter(args.model)  # the reference reader gives the metadata (labels, preprocessing hints)
    engine = model if args.engine == "ref" else load(args.model, args.engine, args.variant)
    given = dict(args.input or [])
    unknown = sorted(set(given) - {s.name for s in model.inputs})
    if unknown:
        raise InputError(f"unknown input {unknown[0]!r}; the model's inputs are {[s.name for s in model.inputs]}")
    feeds = {}
    rng = np.random.default_rng(args.seed)
    for k, spec in enumerate(model.inputs):
        if spec.name in given:
            feeds[spec.name] = _load_input(spec, given[spec.name], model.metadata, k)
        else:
            print(f"random input {spec.name!r} {list(spec.shape)} {spec.dtype} (seed {args.seed})")
            feeds[spec.name] = rng.standard_normal(spec.shape).astype(spec.dtype)
    t0 = time.perf_counter()
    outputs = engine.run(feeds)
    where = f"{args.engine} engine" + (f" ({engine.variant} kernels)" if args.engine != "ref" else "")
    print(f"ran {Path(args.model).name} on the {where} in {(time.perf_counter() - t0) * 1e3:.1f} ms")
    labels = model.metadata["labels"]
    for name, value in outputs.items():
        print(_summarize(name, value, labels))
    if args.output:
        out = Path(args.output)
        out.mkdir(parents=True, exist_ok=True)
        for name, value in outputs.items():
            np.save(out / (name.replace("/", "_").replace(":", "_") + ".npy"), value)
        print(f"wrote {len(outputs)} outputs to {out}/")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from wasmrt.demo_server import serve

    return serve(port=args.port, host=args.host, build=not args.no_build, verbose=args.verbose, url_file=args.url_file)


def cmd_build(args: argparse.Namespace) -> int:
    from wasmrt.build import build_all

    build_all(args.only, args.force)
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from wasmrt.bench.run import run

    return run(args)


def cmd_fuzz(args: argparse.Namespace) -> int:
    from wasmrt.fuzz import run

    return run(args)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="wasmrt", description="Convert and run neural-network models.")
    sub = ap.add_subparsers(dest="command", required=True)

    p = sub.add_parser("convert", help="convert an ONNX or TFLite model to .wrt")
    p.add_argument("model", help="model.onnx or model.tflite")
    p.add_argument("-o", "--output", help="output .wrt path (default: the model's name with .wrt)")
    p.add_argument("--input-shape", action="append", type=_shape_arg, metavar="NAME=D0,D1,...",
                   help="static shape for an input with dynamic dimensions (repeatable)")
    p.add_argument("--dynamic", action="append", type=_dynamic_arg, metavar="NAME=AXIS:MIN..MAX",
                   help="input dimension chosen at run time, within bounds (repeatable; axes of the model's own "
                        "layout, e.g. x=3:32..1280 for an ONNX NCHW width); --input-shape sets the size planned for")
    p.add_argument("--state", action="append", type=_input_arg, metavar="OUTPUT=INPUT",
                   help="a recurrent state the model returns as OUTPUT and takes back as INPUT on the next step "
                        "(repeatable): stored in the model for wasmrt.Stream / model.stream()")
    p.add_argument("--labels", help="text file with one class label per line, stored in the model")
    p.add_argument("--no-preset", action="store_true", help="ignore the bundled preset for known model files")
    p.add_argument("--weights", choices=["auto", "fp16", "fp32"], default="auto",
                   help="float weight storage: auto = fp16 where that is lossless (default), fp16 = always "
                        "(lossy, half the size), fp32 = never")
    p.set_defaults(fn=cmd_convert)

    p = sub.add_parser("inspect", help="show a .wrt model's inputs, outputs, ops, parameters and memory plan")
    p.add_argument("model")
    p.set_defaults(fn=cmd_inspect)

    p = sub.add_parser("run", help="run a .wrt model")
    p.add_argument("model")
    p.add_argument("--engine", default="ref", choices=["ref", "native", "wasm"])
    p.add_argument("--variant", choices=["scalar", "avx2", "avx512", "simd", "relaxed"],
                   help="kernels: native scalar|avx2|avx512 (default: best for this CPU), wasm scalar|simd|relaxed")
    p.add_argument("--input", action="append", type=_input_arg, metavar="NAME=FILE",
                   help="input from a .npy file, or an image preprocessed by the model's hints (repeatable); "
                        "inputs not given are random")
    p.add_argument("--seed", type=int, default=0, help="seed for random inputs")
    p.add_argument("-o", "--output", help="directory for NAME.npy per output")
    p.set_defaults(fn=cmd_run)

    p = sub.add_parser("build", help="compile the C engine: wasm modules, native library, test drivers")
    p.add_argument("--only", choices=["wasm", "native", "aarch64", "asan", "fuzz"])
    p.add_argument("--force", action="store_true", help="rebuild even when the sources are unchanged")
    p.set_defaults(fn=cmd_build)

    p = sub.add_parser("demo", help="build what is missing and serve the browser model playground on 127.0.0.1")
    p.add_argument("--port", type=int, default=8000, help="port (0: any free port; default 8000)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--no-build", action="store_true", help="serve as is, without building missing wasm or models")
    p.add_argument("--url-file", help="write the page URL to this file once serving (for scripts and tests)")
    p.add_argument("--verbose", action="store_true", help="log every request")
    p.set_defaults(fn=cmd_demo)
    from wasmrt.bench.run import add_arguments as bench_arguments

    p = sub.add_parser("bench", help="time our engine natively and as wasm, optionally against the peers")
    bench_arguments(p)
    p.set_defaults(fn=cmd_bench)
    from wasmrt.fuzz import add_arguments as fuzz_arguments

    p = sub.add_parser("fuzz", help="fuzz the C engine and the importers with hostile models (progress, findings)")
    fuzz_arguments(p)
    p.set_defaults(fn=cmd_fuzz)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.fn(args)
    except WasmrtError as e:
        print(f"wasmrt: error: {e}", file=sys.stderr)
        return 2
    except (OSError, ValueError) as e:
        print(f"wasmrt: error: {e}", file=sys.stderr)
        if os.environ.get("WASMRT_DEBUG"):
            traceback.print_exc()
        return 2
    except Exception as e:  # a bug of ours: still one readable line, the traceback on request
        print(f"wasmrt: internal error ({type(e).__name__}): {e}. Set WASMRT_DEBUG=1 for the traceback.",
              file=sys.stderr)
        if os.environ.get("WASMRT_DEBUG"):
            traceback.print_exc()
        return 3


if __name__ == "__main__":
    sys.exit(main())
