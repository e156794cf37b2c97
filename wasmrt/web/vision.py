"""The JS package's face pipeline (wasmrt/vision's FaceMesh) from Pyodide: `from wasmrt.vision import FaceMesh` there.

    mesh = await FaceMesh.create(rt, model_base="models/")   # rt = await wasmrt.web.init()
    faces = await mesh.detect(frame)     # HxWx3 or HxWx4 uint8 numpy array, or a buffer with width and height
    faces[0].landmarks                   # [468, 3]: x, y in pixels, z (numpy when loaded, else a memoryview)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wasmrt.errors import InputError
from wasmrt.web import Runtime, bridge
from wasmrt.web.tensors import make_output, numpy_loaded

__all__ = ["Face", "FaceMesh"]

OPTIONS = {"model_base": "modelBase", "detector_model": "detectorModel", "landmark_model": "landmarkModel",
           "max_faces": "maxFaces", "min_detection_score": "minDetectionScore", "min_presence": "minPresence",
           "tracking": "tracking", "refine": "refine"}


@dataclass
class Face:
    """One face: box (x_min, y_min, x_max, y_max) in pixels, the presence score, landmarks [N, 3] and the ROI."""

    box: tuple[float, float, float, float]
    score: float
    landmarks: Any
    roi: dict[str, float]


def _pixels(image: Any, width: int | None, height: int | None) -> tuple[memoryview, int, int, int]:
    np = numpy_loaded()
    if np is not None and isinstance(image, np.ndarray):
        if image.ndim != 3 or image.shape[2] not in (3, 4) or image.dtype != np.uint8:
            raise InputError(f"detect: expected an HxWx3 or HxWx4 uint8 image, got {image.dtype} {list(image.shape)}")
        arr = np.ascontiguousarray(image)
        return memoryview(arr).cast("B"), arr.shape[1], arr.shape[0], arr.shape[2]
    try:
        mv = memoryview(image).cast("B")
    except TypeError:
        raise InputError(f"detect: expected a numpy image or a buffer of RGB(A) bytes, got {type(image).__name__}"
                         ) from None
    if width is None or height is None or width * height == 0 or mv.nbytes not in (width * height * 3,
                                                                                     width * height * 4):
        raise InputError(f"detect: a buffer of {mv.nbytes} bytes needs width and height of an RGB or RGBA image")
    return mv, width, height, mv.nbytes // (width * height)


class FaceMesh:
    """Face detection and 468 (refine: 478) landmarks per face, tracked from frame to frame, on the JS pipeline."""

    def __init__(self, js_mesh: Any) -> None:
        self.js = js_mesh

    @classmethod
    async def create(cls, rt: Runtime, **options: Any) -> FaceMesh:
        """options: model_base (folder URL or path of the face models; default: the JS package's models/),
        detector_model, landmark_model, max_faces, min_detection_score, min_presence, tracking, refine."""
        js, ffi = bridge.pyodide_modules()
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            raise TypeError(f"FaceMesh.create: unknown option {unknown[0]!r}; expected {', '.join(OPTIONS)}")
        opts = {OPTIONS[k]: v for k, v in options.items() if v is not None}
        vision = await rt.vision()
        mesh = await bridge.call(vision.FaceMesh.create(rt.js, ffi.to_js(opts, dict_converter=js.Object.fromEntries)))
        return cls(mesh)

    async def detect(self, image: Any, width: int | None = None, height: int | None = None) -> list[Face]:
        """The faces of one frame (RGB or RGBA uint8: a numpy array, or a buffer with width and height)."""
        _, ffi = bridge.pyodide_modules()
        mv, w, h, c = _pixels(image, width, height)
        proxy = ffi.create_proxy(mv)
        try:
            res = await bridge.call(bridge.glue().detect(self.js, proxy, w, h, c))
        finally:
            proxy.destroy()
        faces = []
        for f in res.faces:
            lm = f.landmarks
            b, r = f.box, f.roi
            faces.append(Face((float(b.xMin), float(b.yMin), float(b.xMax), float(b.yMax)), float(f.score),
                              make_output("float32", [lm.length // 3, 3], lm.assign_to),
                              {k: float(getattr(r, k)) for k in ("cx", "cy", "side", "angle")}))
        return faces

    def reset(self) -> None:
        self.js.reset()

    async def release(self) -> None:
        await bridge.call(self.js.release())
