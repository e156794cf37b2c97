"""Tensors between Python and the JS runtime, with no numpy needed: a feed is a numpy array (when numpy is there) or
any buffer (memoryview, array.array, bytes) with a shape; outputs are numpy arrays when numpy is loaded, else
memoryviews of that shape. Pure Python, so CPython tests it too; the JS side is wasmrt.web.bridge."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from wasmrt.errors import InputError

# dtype -> (struct format of a Python buffer, PyBuffer type of Pyodide's getBuffer: the JS typed array). float16 has
# no memoryview format: its buffers hold the binary16 bits ('H'), as the JS runtime's Uint16Array does.
FORMATS: dict[str, tuple[str, str]] = {
    "float32": ("f", "f32"), "float16": ("H", "u16"), "int8": ("b", "i8"), "uint8": ("B", "u8"),
    "int32": ("i", "i32"), "int64": ("q", "i64"), "bool": ("?", "u8"),
}
# float64: no model dtype, but the JS vision pipelines' results (landmarks) are Float64Arrays
HOST_FORMATS = {**FORMATS, "float64": ("d", "f64")}
ITEMSIZE = {"f": 4, "H": 2, "b": 1, "B": 1, "i": 4, "q": 8, "?": 1, "d": 8}
# a buffer's format (array.array's, memoryview's, numpy's) -> the dtype it holds
DTYPE_OF_FORMAT = {"f": "float32", "e": "float16", "b": "int8", "B": "uint8", "c": "uint8", "i": "int32",
                   "l": "int64", "q": "int64", "?": "bool"}


@dataclass
class Feed:
    """One input ready for the JS runtime: a C-contiguous buffer of the dtype's items, the dtype, the shape (None:
    the model's)."""

    data: memoryview
    dtype: str
    shape: tuple[int, ...] | None

    @property
    def kind(self) -> str:
        return FORMATS[self.dtype][1]


def numpy_loaded() -> Any:
    """numpy, when the program has imported it (outputs are then arrays), else None."""
    return sys.modules.get("numpy")


def _dtype(name: str, value: object) -> str:
    if name not in FORMATS:
        raise InputError(f"input {value!r}: dtype {name!r} is not one wasmrt runs; expected one of "
                         f"{', '.join(FORMATS)}")
    return name


def to_feed(name: str, value: object, shape: Sequence[int] | None = None, dtype: str | None = None) -> Feed:
    """value: a numpy array, or a buffer (memoryview, array.array, bytes, bytearray) whose format gives the dtype
    (bytes: uint8, unless dtype says otherwise); shape defaults to the array's (a 1-D buffer: the model's)."""
    np = numpy_loaded()
    if np is not None and isinstance(value, np.ndarray):
        arr = np.ascontiguousarray(value)  # a copy only when the array is strided
        if arr.dtype.byteorder == ">":
            raise InputError(f"input {name!r}: big-endian arrays are not supported; use .astype('<{arr.dtype.char}')")
        dt = _dtype(dtype or arr.dtype.name, name)
        mv = memoryview(arr.view(np.uint16) if dt == "float16" else arr)
        return Feed(mv.cast("B").cast(FORMATS[dt][0]) if mv.ndim != 1 or mv.format != FORMATS[dt][0] else mv, dt,
                    tuple(shape) if shape is not None else tuple(arr.shape))
    try:
        mv = memoryview(value)  # type: ignore[arg-type]
    except TypeError:
        raise InputError(f"input {name!r}: expected a numpy array or a buffer (memoryview, array.array, bytes) "
                         f"with a shape, got {type(value).__name__}") from None
    if not mv.c_contiguous:
        raise InputError(f"input {name!r}: the buffer is not contiguous")
    fmt = mv.format.lstrip("@=<")
    dt = _dtype(dtype or DTYPE_OF_FORMAT.get(fmt, ""), name) if dtype or fmt in DTYPE_OF_FORMAT else None
    if dt is None:
        raise InputError(f"input {name!r}: buffer format {mv.format!r} has no wasmrt dtype; pass dtype=")
    raw = mv.cast("B")
    size = ITEMSIZE[FORMATS[dt][0]]
    if raw.nbytes % size:
        raise InputError(f"input {name!r}: {raw.nbytes} bytes are not a whole number of {dt} items")
    if shape is None and mv.ndim > 1:
        shape = mv.shape
    if shape is not None:
        shape = tuple(int(d) for d in shape)
        count = 1
        for d in shape:
            count *= d
        if count * size != raw.nbytes:
            raise InputError(f"input {name!r}: shape {list(shape)} holds {count} {dt} items, the buffer "
                             f"{raw.nbytes // size}")
    return Feed(raw.cast(FORMATS[dt][0]), dt, shape)


def make_output(dtype: str, shape: Sequence[int], fill: Callable[[Any], None]) -> Any:
    """An output of dtype and shape whose items fill(buffer) writes into a flat memoryview of the dtype's format: a
    numpy array when numpy is loaded, else a memoryview of that shape (float16: the binary16 bits, format 'H')."""
    if dtype not in HOST_FORMATS:
        raise InputError(f"output dtype {dtype!r} is not one wasmrt knows")
    shape = tuple(int(d) for d in shape)
    fmt = HOST_FORMATS[dtype][0]
    np = numpy_loaded()
    if np is not None:
        arr = np.empty(shape, dtype)
        fill(memoryview(arr).cast("B").cast(fmt))
        return arr
    count = 1
    for d in shape:
        count *= d
    mv = memoryview(bytearray(count * ITEMSIZE[fmt]))
    fill(mv.cast(fmt))
    return mv.cast(fmt, shape) if shape and count else mv.cast(fmt)
