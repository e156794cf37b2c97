"""The `wasmrt` command: convert, inspect and run models; build, bench, package and demo from a checkout.

Every failure ends in one readable line on stderr ("wasmrt: error: ...") naming the file and the problem, and a
non-zero exit code; set WASMRT_DEBUG=1 to also see the Python traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
import traceback
from pathlib import Path

import numpy as np

from wasmrt.cli import inputs as cli_inputs
from wasmrt.errors import InputError, WasmrtError


def _input_arg(text: str) -> tuple[str, str]:
    name, sep, path = text.partition("=")
    if not sep or not name or not path:
        raise argparse.ArgumentTypeError(f"expected NAME=FILE (got {text!r})")
    return name, path


def _dynamic_arg(text: str) -> object:
    from wasmrt.compile.dynamic import parse_dynamic

    try:
        return parse_dynamic(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def cmd_convert(args: argparse.Namespace) -> int:
    from wasmrt.compile.converter import convert, load_graph
    from wasmrt.zoo.models import load_labels, preset_for

    src = Path(args.model)
    if not src.is_file():
        raise InputError(f"{src}: no such model file")
    shapes = dict(args.input_shape or [])
    frozen = dict(args.freeze or [])
    preset = preset_for(src.name)
    preprocess, labels = {}, None
    if preset is not None and not args.no_preset:
        print(f"using the bundled preset for {src.name} (input shapes, preprocessing, labels; --no-preset to skip)")
        shapes = {**preset.input_shapes, **shapes}
        preprocess = dict(preset.preprocess)
        labels = load_labels(preset.labels) if preset.labels else None
    kind, declared = cli_inputs.resolve_shapes(src, shapes, frozen)
    if args.labels:
        try:
            labels = [ln.strip() for ln in Path(args.labels).read_text().splitlines() if ln.strip()]
        except (OSError, UnicodeDecodeError) as e:
            raise InputError(f"--labels {args.labels}: cannot read it as text ({e})") from None
    t0 = time.perf_counter()
    freeze = cli_inputs.freeze_values(kind, declared, frozen, src)
    if args.dynamic:  # imported at several sizes, the size-dependent attributes restated (wasmrt/compile/dynamic.py)
        from wasmrt.compile.dynamic import dynamic_graph

        print(f"  importing {src.name} with run-time sizes {[f'{d.input}[{d.axis}]' for d in args.dynamic]}")
        graph = dynamic_graph(lambda at: load_graph(src, at, freeze), shapes, args.dynamic,
                              lambda m: print("  " + m))
    else:
        print(f"  importing {src.name}")
        graph = load_graph(src, shapes, freeze)
    if cli_inputs.preprocess_given(args):
        inputs = [(n, graph.tensors[n].shape) for n in graph.inputs]
        name = cli_inputs.image_input(args, inputs, src.name)
        base = preprocess.get(name) or graph.metadata.preprocess.get(name)
        preprocess[name] = cli_inputs.preprocess_from_args(args, base, graph.tensors[name].shape, src.name)
    result = convert(graph, preprocess=preprocess, labels=labels, weights=args.weights,
                     log=lambda m: print("  " + m), state=dict(args.state or []))
    out = Path(args.output or src.with_suffix(".wrt").name)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(result.data)
    print(f"wrote {out} ({len(result.data):,} bytes) in {time.perf_counter() - t0:.1f} s")
    return 0


def cmd_inspect(args: argparse.Namespace) -> int:
    from wasmrt.report import describe

    print(describe(args.model))
    if args.choices:
        from wasmrt.engines import load
        from wasmrt.engines.choose import format_plan

        engine, _ = pick_engine(args.engine, args.variant)
        if engine == "ref":
            raise WasmrtError("--choices needs the C engine (native or wasm)")
        model = load(args.model, engine, args.variant, threads=args.threads, choose=args.choices)
        print(f"\n{engine} {model.variant}, {model.threads} thread(s)")
        print(format_plan(model.plan(), model.choice_source))
    return 0


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


NATIVE_VARIANTS, WASM_VARIANTS = ("avx2", "avx512", "avx512vnni"), ("simd", "relaxed")


def pick_engine(requested: str, variant: str | None) -> tuple[str, str]:
    """(engine, why) for --engine auto: native when its library loads here, else wasm (wasmtime), else ref."""
    if requested != "auto":
        return requested, "as asked"
    if variant in WASM_VARIANTS:
        return "wasm", f"--variant {variant} is a wasm build"
    skipped = []
    try:
        from wasmrt.engines.native import library

        library()
        return "native", "the fastest here"
    except (WasmrtError, OSError) as e:
        skipped.append(f"native: {e}")
    if variant not in NATIVE_VARIANTS:
        try:
            import wasmtime  # noqa: F401

            return "wasm", "the fastest here; " + "; ".join(skipped)
        except ImportError:
            skipped.append("wasm: wasmtime is not installed")
    if variant:
        raise WasmrtError(f"--variant {variant}: its engine is not available here ({'; '.join(skipped)})")
    return "ref", "the only one available here; " + "; ".join(skipped)


def _threads_said(engine: object) -> str:
    n = getattr(engine, "threads", 1)
    return f"{n} thread" + ("s" if n != 1 else "")


def threads_arg(text: str) -> int | str:
    """--threads: a count 1..64 or auto."""
    if text == "auto":
        return text
    try:
        n = int(text)
    except ValueError:
        n = 0
    if not 1 <= n <= 64:
        raise argparse.ArgumentTypeError(f"expected a thread count 1..64 or auto (got {text!r})")
    return n


def cmd_run(args: argparse.Namespace) -> int:
    from python_ref import Interpreter
    from wasmrt.engines import load
    from wasmrt.preprocess import from_dict

    if args.variant and args.engine == "ref":
        raise WasmrtError("--variant applies to --engine native or wasm")
    model = Interpreter(args.model)  # the reference reader gives the metadata (labels, preprocessing hints)
    engine_name, why = pick_engine(args.engine, args.variant)
    if args.threads != 1 and engine_name == "ref":
        raise WasmrtError("--threads applies to --engine native or wasm (the reference engine runs on one thread)")
    engine = model if engine_name == "ref" else load(args.model, engine_name, args.variant, threads=args.threads)
    names = [s.name for s in model.inputs]
    given = dict(args.input or [])
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise InputError(f"unknown input {unknown[0]!r}; the model's inputs are {names}")
    hints = {model.inputs[k].name: from_dict(h) for k, h in model.metadata["preprocess"].items()}
    if cli_inputs.preprocess_given(args):
        name = cli_inputs.image_input(args, [(s.name, tuple(s.shape)) for s in model.inputs], Path(args.model).name)
        spec = next(s for s in model.inputs if s.name == name)
        hints[name] = cli_inputs.preprocess_from_args(args, hints.get(name), tuple(spec.shape), Path(args.model).name)
    if model.metadata["props"].get("note"):
        print(f"note: {model.metadata['props']['note']}")
    feeds = {}
    rng = np.random.default_rng(args.seed)
    for spec in model.inputs:
        if spec.name in given:
            feeds[spec.name] = cli_inputs.load_input(spec.name, given[spec.name], tuple(spec.shape),
                                                     np.dtype(spec.dtype), hints.get(spec.name))
        else:
            print(f"random input {spec.name!r} {list(spec.shape)} {spec.dtype} (seed {args.seed})")
            feeds[spec.name] = rng.standard_normal(spec.shape).astype(spec.dtype)
    t0 = time.perf_counter()
    outputs = engine.run(feeds)
    where = f"{engine_name} engine" + (f" ({engine.variant} kernels, {_threads_said(engine)})"
                                       if engine_name != "ref" else "")
    print(f"ran {Path(args.model).name} on the {where}, {why}, in {(time.perf_counter() - t0) * 1e3:.1f} ms")
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
    from wasmrt.dev.demo_server import serve

    return serve(port=args.port, host=args.host, build=not args.no_build, verbose=args.verbose, url_file=args.url_file,
                 int8=args.int8)


def cmd_build(args: argparse.Namespace) -> int:
    if args.models:  # modules holding only what these models need
        from wasmrt.dev.modules import build_for

        out = Path(args.output or "wasmrt-modules")
        for variant, path in build_for([Path(m) for m in args.models], out, args.variant, args.force,
                                       args.max_bytes).items():
            print(f"wasm-{variant:10s} {path.stat().st_size:>10,d} bytes  {path}")
        print(f"manifest: {out / 'wasmrt-modules.json'}")
        return 0
    from wasmrt.dev.build import build_all

    build_all(args.only, args.force)
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from wasmrt.bench.run import run

    return run(args)


def cmd_fuzz(args: argparse.Namespace) -> int:
    from wasmrt.fuzz.campaign import run

    return run(args)


def cmd_package(args: argparse.Namespace) -> int:
    from wasmrt.dev.package import run

    return run(args)


class Parser(argparse.ArgumentParser):
    """Usage mistakes are one line too (`wasmrt run --help` shows the usage)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"wasmrt: error: {self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    from wasmrt import __version__

    ap = Parser(prog="wasmrt", description="Convert and run neural-network models: ONNX and TFLite "
                                 "in, .wrt out, run by the reference, native or WebAssembly engine.")
    ap.add_argument("--version", action="version", version=f"wasmrt {__version__}")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("convert", help="convert an ONNX or TFLite model to .wrt")
    p.add_argument("model", help="model.onnx or model.tflite")
    p.add_argument("-o", "--output", help="output .wrt path (default: the model's name with .wrt)")
    p.add_argument("--input-shape", action="append", type=cli_inputs.shape_arg, metavar="NAME=D0,D1,...",
                   help="static shape for an input with dynamic dimensions (repeatable)")
    p.add_argument("--dynamic", action="append", type=_dynamic_arg, metavar="NAME=AXIS:MIN..MAX",
                   help="input dimension chosen at run time, within bounds (repeatable; axes of the model's own "
                        "layout, e.g. x=3:32..1280 for an ONNX NCHW width); --input-shape sets the size planned for")
    p.add_argument("--state", action="append", type=_input_arg, metavar="OUTPUT=INPUT",
                   help="a recurrent state the model returns as OUTPUT and takes back as INPUT on the next step "
                        "(repeatable): stored in the model for wasmrt.Stream / model.stream()")
    p.add_argument("--freeze", action="append", type=cli_inputs.freeze_arg, metavar="NAME=VALUE",
                   help="make an input a constant (a sample rate, a flag; ONNX; repeatable)")
    p.add_argument("--labels", help="text file with one class label per line, stored in the model")
    p.add_argument("--no-preset", action="store_true", help="ignore the bundled preset for known model files")
    p.add_argument("--weights", choices=["auto", "fp16", "fp32"], default="auto",
                   help="float weight storage: auto = fp16 where that is lossless (default), fp16 = always "
                        "(lossy, half the size), fp32 = never")
    cli_inputs.add_preprocess_arguments(p, stored=True)
    p.set_defaults(fn=cmd_convert)

    p = sub.add_parser("inspect", help="show a .wrt model's inputs, outputs, ops, parameters and memory plan")
    p.add_argument("model")
    p.add_argument("--choices", nargs="?", const="rules", choices=["rules", "measure", "deterministic"],
                   help="also load it on the C engine and list each op's algorithm candidates and the chosen one "
                        "(rules, the default; measure: timed here, cached; deterministic)")
    p.add_argument("--engine", default="auto", choices=["auto", "native", "wasm"],
                   help="with --choices: auto (default) native > wasm")
    p.add_argument("--variant", choices=["scalar", "avx2", "avx512", "avx512vnni", "simd", "relaxed"])
    p.add_argument("--threads", type=int, default=1, help="with --choices: threads (measured choices depend on it)")
    p.set_defaults(fn=cmd_inspect)

    p = sub.add_parser("run", help="run a .wrt model")
    p.add_argument("model")
    p.add_argument("--engine", default="auto", choices=["auto", "ref", "native", "wasm"],
                   help="auto (default): the fastest available here, native > wasm > ref")
    p.add_argument("--variant", choices=["scalar", "avx2", "avx512", "avx512vnni", "simd", "relaxed"],
                   help="kernels: native scalar|avx2|avx512|avx512vnni (default: best for this CPU), "
                        "wasm scalar|simd|relaxed")
    p.add_argument("--input", action="append", type=_input_arg, metavar="NAME=FILE",
                   help="input from a .npy file, or an image preprocessed by the model's hints (repeatable); "
                        "inputs not given are random")
    p.add_argument("--seed", type=int, default=0, help="seed for random inputs")
    p.add_argument("--threads", type=threads_arg, default=1, metavar="N|auto",
                   help="threads a run may use (native and wasm; default 1); the results are the same bytes")
    p.add_argument("-o", "--output", help="directory for NAME.npy per output")
    cli_inputs.add_preprocess_arguments(p, stored=False)
    p.set_defaults(fn=cmd_run)

    p = sub.add_parser("build", help="compile the C engine: wasm modules, native library, test drivers (checkout)")
    p.add_argument("--only", choices=["wasm", "native", "aarch64", "asan", "fuzz"])
    p.add_argument("--force", action="store_true", help="rebuild even when the sources are unchanged")
    p.add_argument("--for", dest="models", nargs="+", metavar="MODEL.wrt",
                   help="build wasm modules holding only the ops and kernels these models need (beside the full ones)")
    p.add_argument("-o", "--output", help="with --for: the folder for the modules and their manifest "
                   "(default wasmrt-modules)")
    p.add_argument("--variant", action="append", choices=["scalar", "simd", "relaxed", "simd-mt", "relaxed-mt"],
                   help="with --for: only this variant (repeat for more; default all)")
    p.add_argument("--max-bytes", type=int, metavar="N",
                   help="with --for: each module's budget; over it, the kernels that only add speed are left out "
                        "(the same results), and a module still over it is refused")
    p.set_defaults(fn=cmd_build)

    p = sub.add_parser("demo", help="serve the demo pages (playground, try-on, speed) on 127.0.0.1")
    p.add_argument("--port", type=int, default=8000, help="port (0: any free port; default 8000)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--no-build", action="store_true", help="serve as is, without building missing wasm or models")
    p.add_argument("--url-file", help="write the page URL to this file once serving (for scripts and tests)")
    p.add_argument("--verbose", action="store_true", help="log every request")
    p.add_argument("--int8", action="store_true",
                   help="the try-on runs int8 face models (quantized from the float ones when missing)")
    p.set_defaults(fn=cmd_demo)
    from wasmrt.cli.quantize import add_parser as add_quantize
    from wasmrt.cli.sparsify import add_parser as add_sparsify

    add_quantize(sub)
    add_sparsify(sub)
    from wasmrt.bench.run import add_arguments as bench_arguments

    p = sub.add_parser("bench", help="time our engine natively and as wasm, optionally against the peers")
    bench_arguments(p)
    p.set_defaults(fn=cmd_bench)
    from wasmrt.fuzz.campaign import add_arguments as fuzz_arguments

    p = sub.add_parser("fuzz", help="fuzz the C engine and the importers with hostile models (progress, findings)")
    fuzz_arguments(p)
    p.set_defaults(fn=cmd_fuzz)
    from wasmrt.dev.package import add_arguments as package_arguments

    p = sub.add_parser("package", help="build the platform wheels, the sdist and the npm tarball into dist/ (checkout)")
    package_arguments(p)
    p.set_defaults(fn=cmd_package)
    return ap


def _fail(msg: str, code: int) -> int:
    print(f"wasmrt: {msg}", file=sys.stderr)
    if os.environ.get("WASMRT_DEBUG"):
        traceback.print_exc()
    return code


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    try:
        return args.fn(args)
    except BrokenPipeError:  # `wasmrt run ... | head`: the reader left; say so once, without a traceback
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - the interpreter flushes it at exit
        return _fail("stopped: the output pipe was closed", 1)
    except WasmrtError as e:
        return _fail(f"error: {e}", 2)
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        return _fail(f"error: {where}{e.strerror or e}", 2)
    except ValueError as e:
        return _fail(f"error: {e}", 2)
    except Exception as e:  # a bug of ours: still one readable line, the traceback on request
        return _fail(f"internal error ({type(e).__name__}): {e}. Set WASMRT_DEBUG=1 for the traceback.", 3)


if __name__ == "__main__":
    sys.exit(main())
