"""The vision pipelines' image operations on an engine: the C engine's wrt_img_* functions (native library or a wasm
module) with python_ref.vision's results bit for bit, or python_ref itself (engine "ref").

    ops = image_ops("wasm")                       # "ref", "native" or "wasm" (variant: scalar, simd, relaxed)
    x = ops.sample_input(rgb, cx, cy, w, h, angle, 224, 224, "replicate", 0.0, 255.0)   # float32 [1, 224, 224, 3]
    mask = ops.mask_frame(small, width, height, previous)   # resize_mask then smooth, one engine pass
    out = ops.composite(frame, mask, background); blurred = ops.box_blur(frame, radius)
"""

from __future__ import annotations

import ctypes
import functools
import math
from pathlib import Path
from typing import Any

import numpy as np

from python_ref.vision import sample, segment
from python_ref.vision.constants import BLUR_PASSES, BLUR_RADIUS, SMOOTHING_POLY, SMOOTHING_RATIO
from wasmrt.engines.errors import engine_error
from wasmrt.errors import WasmrtError

BORDERS = ("replicate", "zero")

_c = ctypes
# argument types of the C functions (kernels_wasm/engine/wasmrt.h); "p" a pointer, "z" a size_t
SIGNATURES: dict[str, tuple[Any, str]] = {
    "wrt_img_crop": (_c.c_int, "pziiiddddddiiiddpzi"),
    "wrt_img_resize_mask": (_c.c_int, "pziipzii"),
    "wrt_img_smooth": (_c.c_int, "pppzffffff"),
    "wrt_img_mask_frame": (_c.c_int, "pziippziiffffff"),
    "wrt_img_mask_composite": (_c.c_int, "pziippziiffffffpzipzipz"),
    "wrt_img_composite": (_c.c_int, "pzipzpziiipz"),
    "wrt_img_box_blur_scratch": (_c.c_size_t, "ii"),
    "wrt_img_box_blur": (_c.c_int, "pziiiiipzpz"),
}
_CTYPE = {"p": _c.c_void_p, "z": _c.c_size_t, "i": _c.c_int, "d": _c.c_double, "f": _c.c_float}


def _background(frame: np.ndarray, background: np.ndarray | tuple[int, int, int], who: str) -> tuple[np.ndarray, int]:
    """(its bytes, its channels) as the engine's compositing takes them: an (r, g, b) colour is 3 bytes and 0."""
    if isinstance(background, tuple | list):
        rgb = np.asarray(background, np.uint8)
        if rgb.shape != (3,):
            raise ValueError(f"{who}: a colour is (r, g, b), got {background!r}")
        return rgb, 0
    bg = _image(background, who)
    if bg.shape[:2] != frame.shape[:2]:
        raise ValueError(f"{who}: frame {frame.shape} and background {bg.shape} differ in size")
    return bg, bg.shape[2]


def _image(x: np.ndarray, who: str) -> np.ndarray:
    a = np.ascontiguousarray(x)
    if a.dtype != np.uint8 or a.ndim != 3 or a.shape[2] not in (3, 4):
        raise ValueError(f"{who}: expected an HxWx3 (or x4) uint8 image, got {a.dtype} {a.shape}")
    return a


class _Host:
    """Calls a wrt_img_* function with numpy arrays as its buffers; outputs are new arrays."""

    def call(self, name: str, args: list[Any], outputs: list[np.ndarray]) -> int:
        raise NotImplementedError


class _NativeHost(_Host):
    def __init__(self) -> None:
        from wasmrt.engines.native import library

        self.lib = library()
        for name, (res, kinds) in SIGNATURES.items():
            fn = getattr(self.lib, name)
            fn.restype, fn.argtypes = res, [_CTYPE[k] for k in kinds]

    def call(self, name: str, args: list[Any], outputs: list[np.ndarray]) -> int:
        conv = [a.ctypes.data if isinstance(a, np.ndarray) else a for a in args]
        code = getattr(self.lib, name)(*conv)
        if name.endswith("_scratch"):
            return int(code)
        if code:
            raise engine_error(code, self.lib.wrt_error_message().decode(), "")
        return 0


class _WasmHost(_Host):
    def __init__(self, variant: str | None, folder: Path | None) -> None:
        from wasmrt.engines.wasm import DEFAULT_VARIANT, WasmInstance

        self.wasm = WasmInstance(variant or DEFAULT_VARIANT, folder=folder)
        missing = [n for n in SIGNATURES if n not in self.wasm.exports]
        if missing:
            raise WasmrtError(f"this wasm module lacks the image operations ({', '.join(missing)}): modules built "
                              "for given models (wasmrt build --for) leave them out; use the full modules")

    def call(self, name: str, args: list[Any], outputs: list[np.ndarray]) -> int:
        w = self.wasm
        if name.endswith("_scratch"):
            return w.ptr(name, *(int(a) for a in args))
        placed: list[tuple[int, np.ndarray]] = []
        conv: list[Any] = []
        try:
            for a, kind in zip(args, SIGNATURES[name][1], strict=True):
                if isinstance(a, np.ndarray):
                    p = w.ptr("wrt_alloc", max(a.nbytes, 1))
                    if not p:
                        raise WasmrtError(f"{name}: out of wasm memory for {a.nbytes} bytes")
                    if not any(a is o for o in outputs):
                        w.write(p, a)
                    placed.append((p, a))
                    conv.append(p)
                elif a is None:
                    conv.append(0)
                else:
                    conv.append(float(a) if kind in "df" else int(a))
            code = w.call(name, *conv)
            if code:
                raise engine_error(code, w.error_message(), "")
            for p, a in placed:
                if any(a is o for o in outputs):
                    w.read_into(p, a)
        finally:
            for p, _ in placed:
                w.call("wrt_free", p)
        return 0


class ImageOps:
    """python_ref.vision's image operations (sample.py, segment.py) run by one engine."""

    def __init__(self, engine: str = "native", variant: str | None = None, folder: Path | None = None,
                 host: _Host | None = None) -> None:
        """folder: where the wasm modules are (default: the package's full modules). host: the functions called
        elsewhere (the tests' aarch64 driver under qemu); engine then only names it."""
        if host is None and engine not in ("ref", "native", "wasm"):
            raise ValueError(f"ImageOps: engine must be ref, native or wasm, got {engine!r}")
        self.engine = engine
        self.host: _Host | None = host if host is not None else None if engine == "ref" else \
            _NativeHost() if engine == "native" else _WasmHost(variant, folder)

    def _run(self, name: str, args: list[Any], outputs: list[np.ndarray]) -> int:
        assert self.host is not None
        return self.host.call(name, args, outputs)

    def sample_rect(self, rgb: np.ndarray, cx: float, cy: float, w: float, h: float, angle: float, n_w: int,
                    n_h: int, border: str = "replicate") -> np.ndarray:
        """uint8 [n_h, n_w, 3] (sample.sample_rect)."""
        if self.host is None:
            return sample.sample_rect(rgb, cx, cy, w, h, angle, n_w, n_h, border)
        out = np.empty((max(n_h, 0), max(n_w, 0), 3), np.uint8)
        self._crop(rgb, cx, cy, w, h, angle, n_w, n_h, border, 0.0, 1.0, out, 0)
        return out

    def sample_input(self, rgb: np.ndarray, cx: float, cy: float, w: float, h: float, angle: float, n_w: int,
                     n_h: int, border: str, mean: float, div: float) -> np.ndarray:
        """float32 [1, n_h, n_w, 3] (sample.sample_input)."""
        if self.host is None:
            return sample.sample_input(rgb, cx, cy, w, h, angle, n_w, n_h, border, mean, div)
        out = np.empty((1, max(n_h, 0), max(n_w, 0), 3), np.float32)
        self._crop(rgb, cx, cy, w, h, angle, n_w, n_h, border, mean, div, out, 1)
        return out

    def _crop(self, rgb: np.ndarray, cx: float, cy: float, w: float, h: float, angle: float, n_w: int, n_h: int,
              border: str, mean: float, div: float, out: np.ndarray, out_float: int) -> None:
        if border not in BORDERS:
            raise ValueError(f"sample_rect: border must be replicate or zero, got {border!r}")
        img = _image(rgb, "sample_rect")
        c, s = math.cos(angle), math.sin(angle)
        self._run("wrt_img_crop", [img, img.nbytes, img.shape[1], img.shape[0], img.shape[2], cx, cy, w, h, c, s,
                                   n_w, n_h, int(border == "zero"), mean, div, out, out.nbytes, out_float], [out])

    def resize_mask(self, mask: np.ndarray, width: int, height: int) -> np.ndarray:
        """[h, w] float -> [height, width] float32 (segment.resize_mask)."""
        if self.host is None:
            return segment.resize_mask(mask, width, height)
        m = np.ascontiguousarray(mask, np.float32)
        if m.ndim != 2:
            raise ValueError(f"resize_mask: expected a 2-D mask, got shape {m.shape}")
        out = np.empty((max(height, 0), max(width, 0)), np.float32)
        self._run("wrt_img_resize_mask", [m, m.nbytes, m.shape[1], m.shape[0], out, out.nbytes, width, height], [out])
        return out

    def smooth(self, new: np.ndarray, previous: np.ndarray | None, ratio: float = SMOOTHING_RATIO) -> np.ndarray:
        """segment.smooth (float32)."""
        if self.host is None:
            return segment.smooth(new, previous, ratio)
        n = np.ascontiguousarray(new, np.float32)
        prev = None if previous is None or np.shape(previous) != n.shape else np.ascontiguousarray(previous,
                                                                                                  np.float32)
        out = np.empty_like(n)
        self._run("wrt_img_smooth", [n, prev, out, n.size, ratio, *SMOOTHING_POLY], [out])
        return out

    def mask_frame(self, mask: np.ndarray, width: int, height: int, previous: np.ndarray | None,
                   ratio: float = SMOOTHING_RATIO) -> np.ndarray:
        """A segmenter's frame: resize_mask then smooth with the previous mask, in one engine pass (the same values)."""
        if self.host is None:
            return segment.mask_frame(mask, width, height, previous, ratio)
        m = np.ascontiguousarray(mask, np.float32)
        if m.ndim != 2:
            raise ValueError(f"mask_frame: expected a 2-D mask, got shape {m.shape}")
        out = np.empty((max(height, 0), max(width, 0)), np.float32)
        prev = None if previous is None or np.shape(previous) != out.shape else np.ascontiguousarray(previous,
                                                                                                    np.float32)
        self._run("wrt_img_mask_frame", [m, m.nbytes, m.shape[1], m.shape[0], prev, out, out.nbytes, width, height,
                                         ratio, *SMOOTHING_POLY], [out])
        return out

    def composite(self, frame: np.ndarray, mask: np.ndarray, background: np.ndarray) -> np.ndarray:
        """segment.composite: uint8, the frame's shape."""
        if self.host is None:
            return segment.composite(frame, mask, background)
        fg, bg = _image(frame, "composite"), _image(background, "composite")
        m = np.ascontiguousarray(mask, np.float32)
        if bg.shape[:2] != fg.shape[:2] or m.shape != fg.shape[:2]:
            raise ValueError(f"composite: frame {fg.shape}, mask {m.shape} and background {bg.shape} differ in size")
        return self._composite(fg, m, bg, bg.shape[2])

    def _composite(self, fg: np.ndarray, m: np.ndarray, bg: np.ndarray, bg_channels: int) -> np.ndarray:
        """wrt_img_composite on checked arrays (bg_channels 0: bg is a colour's 3 bytes)."""
        out = np.empty_like(fg)
        h, w = fg.shape[:2]
        self._run("wrt_img_composite", [fg, fg.nbytes, fg.shape[2], m, m.nbytes, bg, bg.nbytes, bg_channels, w, h,
                                        out, out.nbytes], [out])
        return out

    def box_blur(self, rgb: np.ndarray, radius: int = BLUR_RADIUS, passes: int = BLUR_PASSES) -> np.ndarray:
        """segment.box_blur: RGB uint8."""
        if self.host is None:
            return segment.box_blur(rgb, radius, passes)
        img = _image(rgb, "box_blur")
        h, w = img.shape[:2]
        scratch = np.empty(self._run("wrt_img_box_blur_scratch", [w, h], []), np.uint8)
        out = np.empty((h, w, 3), np.uint8)
        self._run("wrt_img_box_blur", [img, img.nbytes, img.shape[2], w, h, radius, passes, out, out.nbytes, scratch,
                                       scratch.nbytes], [out, scratch])
        return out

    def replace_background(self, frame: np.ndarray, mask: np.ndarray,
                           background: np.ndarray | tuple[int, int, int]) -> np.ndarray:
        if self.host is None:
            return segment.replace_background(frame, mask, background)
        fg = _image(frame, "replace_background")
        m = np.ascontiguousarray(mask, np.float32)
        if m.shape != fg.shape[:2]:
            raise ValueError(f"replace_background: frame {fg.shape} and mask {m.shape} differ in size")
        return self._composite(fg, m, *_background(fg, background, "replace_background"))

    def mask_composite(self, mask: np.ndarray, previous: np.ndarray | None, ratio: float, frame: np.ndarray,
                       background: np.ndarray | tuple[int, int, int]) -> tuple[np.ndarray, np.ndarray]:
        """segment.mask_composite in one engine pass (each mask row composited as it is made): (mask, image)."""
        if self.host is None:
            return segment.mask_composite(mask, previous, ratio, frame, background)
        fg = _image(frame, "mask_composite")
        m = np.ascontiguousarray(mask, np.float32)
        if m.ndim != 2:
            raise ValueError(f"mask_composite: expected a 2-D mask, got shape {m.shape}")
        bg, bg_channels = _background(fg, background, "mask_composite")
        h, w = fg.shape[:2]
        made, out = np.empty((h, w), np.float32), np.empty_like(fg)
        prev = None if previous is None or np.shape(previous) != made.shape else np.ascontiguousarray(previous,
                                                                                                     np.float32)
        self._run("wrt_img_mask_composite", [m, m.nbytes, m.shape[1], m.shape[0], prev, made, made.nbytes, w, h, ratio,
                                             *SMOOTHING_POLY, fg, fg.nbytes, fg.shape[2], bg, bg.nbytes, bg_channels,
                                             out, out.nbytes], [made, out])
        return made, out

    def blur_background(self, frame: np.ndarray, mask: np.ndarray, radius: int = BLUR_RADIUS) -> np.ndarray:
        return self.composite(frame, mask, self.box_blur(frame, radius))


@functools.cache
def image_ops(engine: str = "native", variant: str | None = None) -> ImageOps:
    """One ImageOps per engine and variant, per process."""
    return ImageOps(engine, variant)
