"""The JS package's selfie segmentation and compositing (wasmrt/vision's SelfieSegmenter, replaceBackground,
blurBackground) from Pyodide: `from wasmrt.vision import SelfieSegmenter, replace_background, blur_background`.

    seg = await SelfieSegmenter.create(rt)        # general or landscape model by frame shape; the package's models/
    mask = await seg.segment(frame)               # [H, W] float32 person confidence, smoothed over frames
    out = replace_background(frame, mask, (0, 177, 64))   # [H, W, C] uint8; or an image, or "#rrggbb"
    out = blur_background(frame, mask, radius=8)
    out = await seg.replace_background(frame, (0, 177, 64))   # or segment and composite in one call
"""

from __future__ import annotations

from typing import Any

from wasmrt.web import Runtime, bridge
from wasmrt.web.frames import frame_of, mask_of
from wasmrt.web.hands import js_options
from wasmrt.web.tensors import make_output

__all__ = ["SelfieSegmenter", "blur_background", "replace_background"]

OPTIONS = {"model_base": "modelBase", "general_model": "generalModel", "landscape_model": "landscapeModel",
           "model": "model", "smoothing": "smoothing", "image_ops": "imageOps"}


class SelfieSegmenter:
    """MediaPipe's selfie segmentation on the JS package. After segment(): model ("general" / "landscape", the one
    that ran) and ms (the JS stage times); after replace_background() / blur_background() also previous (the
    frame's mask)."""

    def __init__(self, js_segmenter: Any, vision: Any) -> None:
        self.js = js_segmenter
        self.vision = vision
        self.model: str | None = None
        self.ms: dict[str, float] = {}
        self.previous: Any = None

    @classmethod
    async def create(cls, rt: Runtime, **options: Any) -> SelfieSegmenter:
        """options: model_base, general_model, landscape_model, model ("auto", "general", "landscape"), smoothing
        (the previous mask's weight; 0: off), image_ops."""
        opts = js_options("SelfieSegmenter.create", options, OPTIONS)
        vision = await rt.vision()
        return cls(await bridge.call(vision.SelfieSegmenter.create(rt.js, opts), builtins=True), vision)

    async def segment(self, image: Any, width: int | None = None, height: int | None = None) -> Any:
        """[H, W] float32 person confidence in [0, 1] of one frame (numpy when loaded, else a memoryview)."""
        _, ffi = bridge.pyodide_modules()
        f = frame_of(image, width, height, "SelfieSegmenter.segment")
        proxy = ffi.create_proxy(f.data)
        try:
            res = await bridge.call(bridge.glue().onFrame(self.js, "segment", proxy, f.width, f.height, f.channels),
                                    builtins=True)
            m = res.mask
            mask = make_output("float32", [int(m.height), int(m.width)], m.data.assign_to)
        finally:
            proxy.destroy()
        self.model = str(res.model)
        self.ms = {str(k): float(v) for k, v in res.ms.object_entries()}
        return mask

    async def replace_background(self, image: Any, background: Any, width: int | None = None,
                                 height: int | None = None) -> Any:
        """segment() and replace_background() in one JS call (the mask made and the frame composited in one engine
        pass): [H, W, C] uint8; the frame's mask is then self.previous."""
        return await self._compose("replaceBackground", "replace", image, background, None, width, height)

    async def blur_background(self, image: Any, radius: int | None = None, width: int | None = None,
                              height: int | None = None) -> Any:
        """segment() and blur_background() in one JS call: [H, W, C] uint8; the mask is then self.previous."""
        return await self._compose("blurBackground", "blur", image, None, radius, width, height)

    async def _compose(self, who: str, how: str, image: Any, background: Any, radius: int | None,
                       width: int | None, height: int | None) -> Any:
        _, ffi = bridge.pyodide_modules()
        f = frame_of(image, width, height, f"SelfieSegmenter.{who}")
        proxies = [ffi.create_proxy(f.data)]
        bg, bg_channels = _background(background, f, who, ffi, proxies) if how == "replace" else (None, None)
        try:
            data, w, h, c, mask, model, ms = await bridge.call(bridge.glue().segmentCompose(
                self.js, how, proxies[0], f.width, f.height, f.channels, bg, bg_channels, radius), builtins=True)
            out = make_output("uint8", [int(h), int(w), int(c)], data.assign_to)
            self.previous = make_output("float32", [int(h), int(w)], mask.assign_to)
        finally:
            for p in proxies:
                p.destroy()
        self.model = str(model)
        self.ms = {str(k): float(v) for k, v in ms.object_entries()}
        return out

    def reset(self) -> None:
        """Forget the previous mask (a new scene)."""
        self.js.reset()

    async def release(self) -> None:
        await bridge.call(self.js.release())


def _compose(who: str, how: str, frame: Any, mask: Any, background: Any, radius: int | None,
             width: int | None, height: int | None) -> Any:
    _, ffi = bridge.pyodide_modules()
    m, hw = mask_of(mask, who)
    if width is None and height is None and hw is not None:
        height, width = hw
    f = frame_of(frame, width, height, who)
    proxies = [ffi.create_proxy(f.data), ffi.create_proxy(m)]
    bg, bg_channels = _background(background, f, who, ffi, proxies) if how == "replace" else (None, None)
    try:
        data, w, h, c = bridge.call_sync(bridge.glue().compose, bridge.vision_module(who), how, proxies[0], f.width,
                                         f.height, f.channels, proxies[1], bg, bg_channels, radius, builtins=True)
        return make_output("uint8", [int(h), int(w), int(c)], data.assign_to)
    finally:
        for p in proxies:
            p.destroy()


def _background(background: Any, f: Any, who: str, ffi: Any, proxies: list[Any]) -> tuple[Any, int | None]:
    """A background as the JS compositing takes it, and its channels when it is an image (its buffer's proxy is
    added to proxies, for the caller to destroy)."""
    if isinstance(background, str):
        return background, None
    if isinstance(background, tuple | list):
        return ffi.to_js([int(v) for v in background]), None
    b = frame_of(background, f.width, f.height, who)
    proxies.append(ffi.create_proxy(b.data))
    return proxies[-1], b.channels or b.data.nbytes // max(1, (f.width or 0) * (f.height or 0))


def replace_background(frame: Any, mask: Any, background: Any, *, width: int | None = None,
                       height: int | None = None) -> Any:
    """The frame where the mask says person, background elsewhere: an image of the frame's size, an (r, g, b)
    colour or "#rrggbb". -> [H, W, C] uint8 (the frame's channels). A buffer frame takes the mask's [H, W]."""
    return _compose("replaceBackground", "replace", frame, mask, background, None, width, height)


def blur_background(frame: Any, mask: Any, radius: int | None = None, *, width: int | None = None,
                    height: int | None = None) -> Any:
    """The background box-blurred (JS default radius 8), the person kept. -> [H, W, C] uint8."""
    return _compose("blurBackground", "blur", frame, mask, None, radius, width, height)
