"""What the `wasmrt` command reads from its user, checked before any work starts: input shapes, frozen inputs,
image preprocessing flags and input files. Every problem becomes one InputError line in the command's own syntax
(`--input-shape x=1,3,H,W`), naming the file and the input."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from wasmrt.compile.ir import Preprocess
from wasmrt.errors import InputError, ModelFormatError

MAX_DIM = 1 << 20  # no real input is a million pixels on one side
MAX_INPUT_ELEMENTS = 1 << 28  # 1 GiB of float32 per input: far past what a page or a phone can hold
Warn = Callable[[str], None]


def warn(msg: str) -> None:
    print(f"wasmrt: warning: {msg}", file=sys.stderr)


def note(msg: str) -> None:
    print(f"wasmrt: note: {msg}", file=sys.stderr)


# -- --input-shape and --freeze ----------------------------------------------------------------------------------


def shape_arg(text: str) -> tuple[str, tuple[int, ...]]:
    """NAME=D0,D1,... with every dimension 1..MAX_DIM and at most MAX_INPUT_ELEMENTS in all."""
    name, sep, dims = text.partition("=")
    try:
        if not sep or not name:
            raise ValueError
        shape = tuple(int(d) for d in dims.replace("x", ",").split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected NAME=D0,D1,... such as x=1,3,224,224 (got {text!r})") from None
    bad = [d for d in shape if not 1 <= d <= MAX_DIM]
    if bad:
        raise argparse.ArgumentTypeError(f"{text}: dimension {bad[0]} is outside 1..{MAX_DIM:,}")
    n = math.prod(shape)
    if n > MAX_INPUT_ELEMENTS:
        raise argparse.ArgumentTypeError(f"{text}: {n:,} elements ({4 * n / (1 << 30):,.1f} GiB as float32) is more "
                                         f"than an input may hold ({MAX_INPUT_ELEMENTS:,} elements)")
    return name, shape


def freeze_arg(text: str) -> tuple[str, tuple[float, ...]]:
    """NAME=VALUE or NAME=V0,V1,... (numbers)."""
    name, sep, value = text.partition("=")
    try:
        if not sep or not name:
            raise ValueError
        return name, tuple(float(v) for v in value.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE such as sample_rate=16000 (got {text!r})") from None


@dataclass
class DeclaredInput:
    name: str
    dims: list[int | str]  # an int per fixed dimension; the symbol (or "?") of a dynamic one
    dtype: np.dtype


def declared_inputs(path: Path) -> tuple[str, list[DeclaredInput]]:
    """The runtime inputs a source model declares, read without converting it: (kind, inputs)."""
    from wasmrt.compile.converter import source_kind

    kind = source_kind(path)
    if kind == "wrt":
        raise ModelFormatError(f"{path}: already a .wrt model, neither an ONNX nor a TFLite model to convert "
                               "(run, inspect, bench and quantize take it as it is)")
    if kind == "tflite":
        from wasmrt.compile.tflite.reader import read_model

        m = read_model(path.read_bytes(), path.name)
        out = []
        for i in m.inputs:
            t = m.tensors[i]
            dims = t.signature or t.shape
            out.append(DeclaredInput(t.name, [d if d > 0 else "?" for d in dims], t.dtype or np.dtype(np.float32)))
        return kind, out
    import onnx
    from onnx import helper

    try:
        g = onnx.load(str(path), load_external_data=False).graph
    except Exception as e:  # protobuf's DecodeError and friends
        raise ModelFormatError(f"{path}: not a readable ONNX model ({type(e).__name__}: {e})") from None
    inits = {i.name for i in g.initializer}
    out = []
    for inp in g.input:
        if inp.name in inits or not inp.type.HasField("tensor_type"):
            continue
        tt = inp.type.tensor_type
        dims: list[int | str] = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else (d.dim_param or "?")
                                 for d in tt.shape.dim] if tt.HasField("shape") else ["?"]
        elem = tt.elem_type
        out.append(DeclaredInput(inp.name, dims, helper.tensor_dtype_to_np_dtype(elem) if elem else np.dtype("f4")))
    return kind, out


def _cli_shape(d: DeclaredInput, given: tuple[int, ...] | None = None) -> str:
    dims = given or [x if isinstance(x, int) else (1 if k == 0 else str(x)) for k, x in enumerate(d.dims)]
    return f"--input-shape {d.name}=" + ",".join(str(x) for x in dims)


def resolve_shapes(path: Path, given: dict[str, tuple[int, ...]], frozen: dict[str, tuple[float, ...]],
                   warn: Warn = warn) -> tuple[str, list[DeclaredInput]]:
    """Check the --input-shape and --freeze values against the model's inputs before converting: unknown names,
    dynamic dimensions left open (a leading one is the batch and becomes 1), rank mismatches; a changed static shape
    warns (TFLite) or is refused (ONNX, whose importer keeps fixed dims fixed)."""
    kind, inputs = declared_inputs(path)
    names = [d.name for d in inputs]
    for name in [*given, *frozen]:
        if name not in names:
            raise InputError(f"{path.name}: no input named {name!r}; its inputs are {names}")
    for d in inputs:
        if d.name in frozen:
            continue
        shape = given.get(d.name)
        if shape is None:
            open_dims = [x for k, x in enumerate(d.dims) if not isinstance(x, int) and k > 0]
            if open_dims:
                raise InputError(f"{path.name}: input {d.name!r} has dynamic dimensions "
                                 f"[{', '.join(str(x) for x in d.dims)}]: give them with {_cli_shape(d)}")
            continue
        if len(shape) != len(d.dims) and d.dims != ["?"]:
            raise InputError(f"{path.name}: input {d.name!r} has {len(d.dims)} dimensions "
                             f"[{', '.join(str(x) for x in d.dims)}], --input-shape gives {len(shape)}")
        changed = [k for k, x in enumerate(d.dims) if isinstance(x, int) and k < len(shape) and shape[k] != x]
        if changed and kind == "onnx":
            raise InputError(f"{path.name}: input {d.name!r} dimension {changed[0]} is fixed to {d.dims[changed[0]]} "
                             f"in the model; {_cli_shape(d, shape)} cannot change it")
        if changed:
            warn(f"{path.name}: input {d.name!r} is [{', '.join(str(x) for x in d.dims)}] in the model; using "
                 f"{list(shape)} as --input-shape says (the model may not be made for it)")
    return kind, inputs


def freeze_values(kind: str, inputs: list[DeclaredInput], frozen: dict[str, tuple[float, ...]],
                  path: Path) -> dict[str, np.ndarray]:
    """--freeze values as arrays of the input's dtype and shape (a scalar input takes one value)."""
    if frozen and kind != "onnx":
        raise InputError(f"{path.name}: --freeze works on ONNX models (their importer turns inputs into constants)")
    out = {}
    by_name = {d.name: d for d in inputs}
    for name, values in frozen.items():
        d = by_name[name]
        fixed = [x for x in d.dims if isinstance(x, int)]
        shape = tuple(fixed) if len(fixed) == len(d.dims) and d.dims != ["?"] else (len(values),)
        if math.prod(shape) != len(values):
            raise InputError(f"{path.name}: input {name!r} has shape {list(shape)}; --freeze {name}= gives "
                             f"{len(values)} value(s)")
        arr = np.asarray(values, dtype=np.float64)
        if (np.issubdtype(d.dtype, np.integer) or d.dtype == np.bool_) and not np.all(arr == np.round(arr)):
            raise InputError(f"{path.name}: input {name!r} is {d.dtype}; --freeze gives {list(values)}")
        out[name] = arr.astype(d.dtype).reshape(shape)
    return out


# -- image preprocessing flags --------------------------------------------------------------------------------------

LAYOUTS, COLORS, RESIZES = ("NCHW", "NHWC"), ("RGB", "BGR"), ("stretch", "letterbox", "crop")


def _floats(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number or three comma-separated numbers (got {text!r})") from None


def add_preprocess_arguments(p: argparse.ArgumentParser, stored: bool) -> None:
    g = p.add_argument_group(
        "image preprocessing (for models without hints, or to change them)",
        "How an image becomes the input tensor: its pixels (0..255) are mapped to --range, then (v - mean) / std "
        "per channel." + (" Stored in the .wrt as the input's hints, which `run` and the JS image helpers use." if
                          stored else " Applies to images given with --input, over the model's own hints."))
    g.add_argument("--image-input", metavar="NAME", help="the input the flags describe (default: the only 4-D input)")
    g.add_argument("--mean", type=_floats, metavar="M[,M,M]", help="per-channel mean, in --range units (default 0)")
    g.add_argument("--std", type=_floats, metavar="S[,S,S]", help="per-channel std, in --range units (default 1)")
    g.add_argument("--range", type=_floats, metavar="LO,HI", help="the value range pixels are mapped to first "
                                                                  "(default 0,255; e.g. 0,1 or -1,1)")
    g.add_argument("--layout", type=str.upper, choices=LAYOUTS, help="the input's layout (default: from its shape)")
    g.add_argument("--color", type=str.upper, choices=COLORS, help="channel order (default RGB)")
    g.add_argument("--resize", choices=RESIZES, help="stretch (default), letterbox (keep the aspect, black border) "
                                                     "or crop (centre crop, see --crop-fraction)")
    g.add_argument("--crop-fraction", type=float, help="with --resize crop: the part of the short side kept "
                                                       "(default 0.875)")


FLAG_NAMES = ("mean", "std", "range", "layout", "color", "resize", "crop_fraction")


def preprocess_given(args: argparse.Namespace) -> bool:
    return any(getattr(args, k) is not None for k in FLAG_NAMES)


def image_input(args: argparse.Namespace, inputs: list[tuple[str, tuple[int, ...]]], where: str) -> str:
    """The input the preprocessing flags describe."""
    names = [n for n, _ in inputs]
    if args.image_input:
        if args.image_input not in names:
            raise InputError(f"{where}: --image-input {args.image_input!r} is not an input; its inputs are {names}")
        return args.image_input
    four_d = [n for n, s in inputs if len(s) == 4]
    if len(four_d) != 1:
        raise InputError(f"{where}: {len(four_d)} four-dimensional inputs ({four_d or names}); say which one the "
                         "preprocessing flags describe with --image-input NAME")
    return four_d[0]


def _per_channel(values: tuple[float, ...], what: str) -> tuple[float, float, float]:
    if len(values) == 1:
        return (values[0],) * 3
    if len(values) != 3:
        raise InputError(f"--{what} takes one value or three (one per channel), got {len(values)}")
    return values[0], values[1], values[2]


def preprocess_from_args(args: argparse.Namespace, base: Preprocess | None, shape: tuple[int, ...],
                         where: str) -> Preprocess:
    """The hints the flags describe, on top of `base` (the model's own hints, if any): the fields the flags give
    replace base's; mean/std/range are given together as a group (each defaulting to 0, 1 and 0..255)."""
    pre = base or Preprocess(layout="NCHW" if len(shape) == 4 and shape[1] == 3 and shape[3] != 3 else "NHWC")
    if args.layout:
        pre = replace(pre, layout=args.layout)
    if args.color:
        pre = replace(pre, color=args.color)
    if args.resize:
        pre = replace(pre, resize=args.resize, crop_fraction=0.875 if args.resize == "crop" else 1.0)
    if args.crop_fraction is not None:
        if not 0 < args.crop_fraction <= 1:
            raise InputError(f"--crop-fraction {args.crop_fraction}: expected a value in (0, 1]")
        pre = replace(pre, crop_fraction=args.crop_fraction)
    if args.mean is not None or args.std is not None or args.range is not None:
        lo, hi = args.range if args.range is not None else (0.0, 255.0)
        if args.range is not None and (len(args.range) != 2 or not hi > lo):
            raise InputError(f"--range takes LO,HI with HI > LO, got {','.join(f'{v:g}' for v in args.range)}")
        mean = _per_channel(args.mean if args.mean is not None else (0.0,), "mean")
        std = _per_channel(args.std if args.std is not None else (1.0,), "std")
        if any(s == 0 for s in std):
            raise InputError("--std must not be 0")
        scale = (hi - lo) / 255.0  # pixel p -> lo + p * scale -> (v - mean) / std == (p - M) / S in pixel units
        pre = replace(pre, mean=tuple((m - lo) / scale for m in mean), std=tuple(s / scale for s in std))
    channels = shape[1] if pre.layout == "NCHW" else shape[-1]
    if len(shape) != 4 or channels != 3:
        raise InputError(f"{where}: an image input is [1,3,H,W] (NCHW) or [1,H,W,3] (NHWC), not {list(shape)} as "
                         f"{pre.layout}; check --layout or --image-input")
    return pre


# -- input files ------------------------------------------------------------------------------------------------------

NPY_MAGIC = b"\x93NUMPY"


def load_input(name: str, path: str, shape: tuple[int, ...], dtype: np.dtype, hints: Preprocess | None,
               warn: Warn = warn, note: Warn = note) -> np.ndarray:
    """A .npy array (float64 cast to float32 with a note) or an image preprocessed by `hints`; NaN/Inf warn."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"input {name!r}: file {path} does not exist")
    with open(p, "rb") as f:
        head = f.read(6)
    if head == NPY_MAGIC:
        try:
            value = np.load(p, allow_pickle=False)
        except (ValueError, OSError, EOFError) as e:
            raise InputError(f"input {name!r}: {path} is a damaged .npy file ({e})") from None
        if value.dtype == np.float64 and dtype == np.float32:
            note(f"input {name!r}: {path} holds float64; cast to float32")
            value = value.astype(np.float32)
        if np.issubdtype(value.dtype, np.floating) and not np.isfinite(value).all():
            bad = int((~np.isfinite(value)).sum())
            warn(f"input {name!r}: {path} has {bad:,} NaN or infinite value(s); the outputs will likely be NaN too")
        return value
    if p.suffix.lower() == ".npy":
        raise InputError(f"input {name!r}: {path} is not a .npy file (it starts with {head!r}, not {NPY_MAGIC!r}); "
                         "write arrays with numpy.save")
    from wasmrt.preprocess import image_to_tensor, read_image

    try:
        image = read_image(p)
    except ValueError:
        raise InputError(f"input {name!r}: {path} is neither a .npy array nor an image Pillow can read") from None
    if hints is None:
        raise InputError(f"input {name!r}: {p.name} is an image, but the model has no preprocessing hints for this "
                         f"input; describe it with --mean/--std/--range/--layout (see `wasmrt run --help`) or give a "
                         f".npy file of shape {list(shape)}")
    return image_to_tensor(image, hints, shape)

