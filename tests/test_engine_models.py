"""The bundled real models on the C engine (native: best path and forced scalar/AVX2; wasm: every variant) vs
python_ref, and EfficientNet-Lite0's top-1 class on two skimage photos on every engine."""

from __future__ import annotations

import functools
import time

import numpy as np
import pytest
from test_engine import engine_model

from python_ref import Interpreter
from wasmrt.compile.converter import convert
from wasmrt.errors import WasmrtError
from wasmrt.zoo import models

pytestmark = pytest.mark.slow

ENGINES = [("native", None), ("native", "scalar"), ("native", "avx2"), ("wasm", "scalar"), ("wasm", "simd"),
           ("wasm", "relaxed")]
ENGINE_IDS = [f"{e}-{v or 'best'}" for e, v in ENGINES]
# float32 accumulation through dozens of layers vs a float64 reference: max error relative to the output range
RTOL = {"default": 2e-4}
# bundled models with ops the WebGPU backend has no WGSL kernel for yet: refused at load, naming the op
NO_WGSL = {"face_landmark_attention": "LANDMARKS_TO_TRANSFORM_MATRIX|TRANSFORM_", "ppocr_rec": "MATMUL|POW"}
# refused whole by the WebGPU backend, which runs float32 models (the reason its error gives)
WEBGPU_REFUSED = {"hand_landmark_full": "is float16; the webgpu backend runs float32 models"}
WEBGPU_MODELS = [n for n in models.BUNDLED if n not in NO_WGSL and n not in WEBGPU_REFUSED]
ERRORS: dict[tuple[str, str], float] = {}  # filled by the tests, printed by the summary test


@functools.cache
def converted(name: str) -> bytes:
    m = models.BUNDLED[name]
    try:
        src = models.model_path(name)
    except Exception as e:  # network or registry trouble, nothing cached
        pytest.skip(f"cannot fetch {name}: {e}")
    try:
        return convert(src, input_shapes=m.input_shapes, preprocess=m.preprocess,
                       labels=m.labels and models.load_labels(m.labels)).data
    except Exception as e:  # the importer of this format is not in the tree yet
        pytest.skip(f"cannot convert {name}: {type(e).__name__}: {e}")


@functools.cache
def reference(name: str) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Random inputs in the range preprocessing produces, and python_ref's outputs."""
    interp = Interpreter(converted(name))
    rng = np.random.default_rng(11)
    feeds = {s.name: rng.uniform(-1, 1, s.shape).astype(s.dtype) for s in interp.inputs}
    return feeds, interp.run(feeds)


@pytest.mark.parametrize(("engine", "variant"), ENGINES, ids=ENGINE_IDS)
@pytest.mark.parametrize("name", list(models.BUNDLED))
def test_model_matches_reference(name: str, engine: str, variant: str | None) -> None:
    feeds, ref = reference(name)
    m = engine_model(converted(name), engine, variant)
    t0 = time.perf_counter()
    got = m.run(feeds)
    dt = time.perf_counter() - t0
    worst = 0.0
    for k, r in ref.items():
        err = float(np.max(np.abs(got[k].astype(np.float64) - r)))
        scale = float(np.max(np.abs(r)))
        worst = max(worst, err / max(scale, 1e-30))
        assert err <= RTOL.get(name, RTOL["default"]) * scale + 1e-6, \
            f"{name} output {k!r}: max error {err:.3g}, output range {scale:.3g}"
    ERRORS[(name, f"{engine}-{m.variant}")] = worst
    print(f"{name} {engine}-{m.variant}: max error / max|ref| = {worst:.2e}, run {dt * 1e3:.0f} ms")
    m.release()


def test_wasm_memory_flat_over_model_reloads() -> None:
    """Reloading a real model (18 MB of weights) in one instance reuses the memory of the previous load."""
    from wasmrt.engines.wasm import WasmInstance, WasmModel

    data = converted("efficientnet_lite0")
    feeds, _ = reference("efficientnet_lite0")
    inst = WasmInstance("simd")
    pages = []
    for _ in range(5):
        m = WasmModel(data, instance=inst)
        m.run(feeds)
        m.release()
        pages.append(inst.pages)
    print(f"efficientnet_lite0: wasm pages after each of 5 load/run/release cycles: {pages}")
    assert len(set(pages)) == 1, pages


# -- EfficientNet-Lite0 on real photos ---------------------------------------------------------------------------
PHOTOS = {"chelsea": set(range(281, 286)), "coffee": {967}}  # cats (tabby .. Egyptian cat), espresso


@functools.cache
def photo_tensor(photo: str) -> np.ndarray:
    skimage_data = pytest.importorskip("skimage.data")
    from wasmrt.compile.ir import Preprocess
    from wasmrt.preprocess import image_to_tensor

    interp = Interpreter(converted("efficientnet_lite0"))
    spec = interp.inputs[0]
    pre = interp.metadata["preprocess"][0]
    image = getattr(skimage_data, photo)()
    return image_to_tensor(image, Preprocess(**pre), spec.shape).astype(np.float32)


@pytest.mark.parametrize(("engine", "variant"), [("ref", None), *ENGINES], ids=["ref", *ENGINE_IDS])
def test_efficientnet_top1_on_photos(engine: str, variant: str | None) -> None:
    data = converted("efficientnet_lite0")
    m = engine_model(data, engine, variant)
    for photo, classes in PHOTOS.items():
        x = photo_tensor(photo)
        (logits,) = m.run({m.inputs[0].name: x}).values()
        top = int(np.argmax(logits.reshape(-1)))
        assert top in classes, f"{photo}: top-1 class {top} on {engine}-{m.variant}, expected one of {sorted(classes)}"


def test_models_under_asan(tmp_path) -> None:
    """Every bundled model loaded and run by the native engine built with AddressSanitizer + UBSan."""
    import subprocess

    from wasmrt.dev import build

    try:
        driver = build.build_asan_driver().path
    except WasmrtError as e:
        pytest.skip(str(e))
    paths = []
    for name in models.BUNDLED:
        try:
            data = converted(name)
        except pytest.skip.Exception:
            continue
        p = tmp_path / f"{name}.wrt"
        p.write_bytes(data)
        paths.append(str(p))
    if not paths:
        pytest.skip("no bundled model available")
    for force in ("scalar", "avx2", "avx512"):
        r = subprocess.run([str(driver), "check", *paths], capture_output=True, text=True, timeout=600,
                           env={"PATH": "/usr/bin:/bin", "WASMRT_FORCE_TARGET": force})
        assert "AddressSanitizer" not in r.stderr and "runtime error" not in r.stderr, r.stderr[-4000:]
        assert r.returncode == 0 and r.stdout.splitlines() == ["0\tok"] * len(paths), (force, r.stdout)
