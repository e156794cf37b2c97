"""Frames for the JS vision pipelines (wasmrt.web.hands, wasmrt.web.segment): an HxWx3 or HxWx4 uint8 numpy array,
or a buffer of RGB(A) bytes with its width and height. They cross to JS as views of Pyodide's memory (no copy); JS
checks a buffer's size, and its TypeError for a bad frame arrives as Python's TypeError."""

from __future__ import annotations

from typing import Any, NamedTuple

from wasmrt.web.tensors import numpy_loaded


class Frame(NamedTuple):
    data: memoryview  # bytes, C order
    width: int | None
    height: int | None
    channels: int | None  # None: JS infers 3 or 4 from the size


def frame_of(image: Any, width: int | None, height: int | None, who: str) -> Frame:
    """A numpy image gives its own size; a buffer needs width and height (JS checks its length against them)."""
    np = numpy_loaded()
    if np is not None and isinstance(image, np.ndarray):
        if image.ndim != 3 or image.shape[2] not in (3, 4) or image.dtype != np.uint8:
            raise TypeError(f"{who}: expected an HxWx3 or HxWx4 uint8 image, got {image.dtype} {list(image.shape)}")
        arr = np.ascontiguousarray(image)
        return Frame(memoryview(arr).cast("B"), arr.shape[1], arr.shape[0], arr.shape[2])
    try:
        mv = memoryview(image)
    except TypeError:
        raise TypeError(f"{who}: expected a numpy image or a buffer of RGB(A) bytes, got {type(image).__name__}"
                        ) from None
    if not mv.c_contiguous:
        raise TypeError(f"{who}: the frame's buffer is not contiguous")
    if mv.ndim == 3 and width is None and height is None:  # a shaped memoryview (H, W, C) says its size
        height, width = mv.shape[0], mv.shape[1]
    if width is None or height is None:
        raise TypeError(f"{who}: a buffer of {mv.nbytes} bytes needs the frame's width and height")
    return Frame(mv.cast("B"), int(width), int(height), None)


def mask_of(mask: Any, who: str) -> tuple[memoryview, tuple[int, int] | None]:
    """A mask (SelfieSegmenter.segment's [H, W] float32, or a float32 buffer) as a flat float32 view and its (H, W)
    when it says it."""
    np = numpy_loaded()
    if np is not None and isinstance(mask, np.ndarray):
        if mask.dtype != np.float32:
            raise TypeError(f"{who}: the mask must be float32, got {mask.dtype}")
        arr = np.ascontiguousarray(mask)
        return memoryview(arr).cast("B").cast("f"), (arr.shape[0], arr.shape[1]) if arr.ndim == 2 else None
    try:
        mv = memoryview(mask)
    except TypeError:
        raise TypeError(f"{who}: the mask must be a float32 array or buffer, got {type(mask).__name__}") from None
    if mv.format.lstrip("@=<") != "f" or not mv.c_contiguous:
        raise TypeError(f"{who}: the mask must be a contiguous float32 buffer, got format {mv.format!r}")
    return mv.cast("B").cast("f"), (mv.shape[0], mv.shape[1]) if mv.ndim == 2 else None
