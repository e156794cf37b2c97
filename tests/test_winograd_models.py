"""Winograd on real models: every dense 3x3 stride-1 convolution of the bundled models (ResNet-18 and U-Net built
for it, PP-OCRv4 det, MobileNetV2, ...), with its real weights and the activations python_ref feeds it, run as
F(2x2, 3x3) and F(4x4, 3x3) on every engine, within the written tolerance (python_ref/winograd.py) of the direct
convolution; and the whole models with Winograd forced within the float tolerance of test_engine_models."""

from __future__ import annotations

import functools
from unittest import mock

import numpy as np
import pytest
from test_engine import engine_model
from test_engine_models import RTOL, converted, reference

from python_ref import Interpreter, dispatch, winograd
from python_ref.ops import conv2d_sums
from wasmrt.compile.converter import convert
from wasmrt.compile.ir import Graph
from wasmrt.engines import load
from wasmrt.zoo import models

pytestmark = pytest.mark.slow

ENGINES = [("native", None), ("native", "scalar"), ("wasm", "scalar"), ("wasm", "simd"), ("wasm", "relaxed")]
ENGINE_IDS = [f"{e}-{v or 'best'}" for e, v in ENGINES]
ALGOS = tuple(winograd.ALGORITHMS)
MAX_LAYERS = 6  # distinct layer shapes checked per model (the largest maps first: where tiles are cut most)


@functools.cache
def winograd_layers(name: str) -> list[tuple[np.ndarray, np.ndarray, np.ndarray | None, dict]]:
    """(x NHWC, w OHWI, bias, attrs) of the model's float CONV_2Ds Winograd applies to, as python_ref runs them on
    test_engine_models' inputs: one per distinct (input shape, weight shape, pads)."""
    feeds, _ = reference(name)
    found: dict[tuple, tuple] = {}
    real = dispatch.run

    def record(op: str, ins: list, attrs: dict, quant: object) -> list:
        x, w = ins[0], ins[1] if len(ins) > 1 else None
        if (op == "CONV_2D" and w is not None and x is not None and x.dtype == np.float32
                and w.dtype == np.float32 and winograd.applies(w.shape, attrs)):
            key = (x.shape, w.shape, tuple(attrs["pads"]))
            b = ins[2] if len(ins) > 2 and ins[2] is not None else None
            found.setdefault(key, (x.copy(), w, b, dict(attrs)))
        return real(op, ins, attrs, quant)

    with mock.patch.object(dispatch, "run", record):
        Interpreter(converted(name)).run(feeds)
    layers = sorted(found.values(), key=lambda t: -t[0].shape[1] * t[0].shape[2])
    return layers[:MAX_LAYERS]


def single_conv(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, attrs: dict) -> bytes:
    """One CONV_2D with the layer's weights, pads and fused clamp (no residual input)."""
    g = Graph()
    xi = g.add_input("x", x.shape)
    ins = [xi, g.add_const("w", w), *([g.add_const("b", b)] if b is not None else [])]
    a = {k: attrs[k] for k in ("pads", "strides", "dilations", "act_min", "act_max") if k in attrs}
    (y,) = g.add_node("CONV_2D", ins, a, name="conv", outputs=["y"])
    g.outputs.append(y)
    return convert(g).data


def direct(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, attrs: dict) -> np.ndarray:
    y = conv2d_sums(x, w, attrs) + (0.0 if b is None else b.astype(np.float64))
    return np.clip(y, attrs.get("act_min", -np.inf), attrs.get("act_max", np.inf))


# The bundled models with dense 3x3 stride-1 convolutions; test_layers_are_listed holds every other bundled model to
# having none, so a model that gains such layers is checked here too.
WITH_LAYERS = ("resnet18", "unet", "ppocr_det")


@pytest.mark.parametrize(("engine", "variant"), ENGINES, ids=ENGINE_IDS)
@pytest.mark.parametrize("name", [n for n in WITH_LAYERS if n in models.BUNDLED])
def test_model_layers_within_written_tolerance(name: str, engine: str, variant: str | None) -> None:
    for x, w, b, attrs in winograd_layers(name):
        data, ref = single_conv(x, w, b, attrs), direct(x, w, b, attrs)
        engine_model(data, engine, variant).release()  # skips where the host lacks this target
        for algo in ALGOS:
            m = load(data, engine, variant, conv=algo)
            got = m.run({"x": x})["y"]
            tol = winograd.tolerance(x, w, b, attrs, winograd.ALGORITHMS[algo])
            err = float(np.abs(got - ref).max())
            assert err <= tol, f"{name} {x.shape} x {w.shape} {algo}: {err:.3g} > {tol:.3g}"
            m.release()


@pytest.mark.parametrize("name", list(models.BUNDLED))
def test_layers_are_listed(name: str) -> None:
    """WITH_LAYERS is exactly the bundled models Winograd applies to."""
    assert bool(winograd_layers(name)) == (name in WITH_LAYERS)


@pytest.mark.parametrize(("engine", "variant"), ENGINES, ids=ENGINE_IDS)
@pytest.mark.parametrize("algo", ALGOS)
@pytest.mark.parametrize("name", list(models.BUNDLED))
def test_model_with_winograd_matches_reference(name: str, engine: str, variant: str | None, algo: str) -> None:
    feeds, ref = reference(name)
    engine_model(converted(name), engine, variant).release()  # skips where the host lacks this target
    m = load(converted(name), engine, variant, conv=algo)
    got = m.run(feeds)
    for k, r in ref.items():
        err = float(np.max(np.abs(got[k].astype(np.float64) - r)))
        scale = float(np.max(np.abs(r)))
        assert err <= RTOL.get(name, RTOL["default"]) * scale + 1e-6, \
            f"{name} {algo} output {k!r}: max error {err:.3g}, output range {scale:.3g}"
    m.release()


@pytest.mark.parametrize(("engine", "variant"), [("native", None), ("wasm", "relaxed")], ids=["native", "wasm"])
@pytest.mark.parametrize("name", ["resnet18", "unet"])
def test_models_do_not_depend_on_threads(name: str, engine: str, variant: str | None) -> None:
    """The rules' choice and Winograd's blocks follow the shapes, not the thread count: the same bytes."""
    feeds, _ = reference(name)
    outs = []
    for t in (1, 2, 3):
        m = load(converted(name), engine, variant, threads=t)
        outs.append(next(iter(m.run(feeds).values())).tobytes())
        m.release()
    assert outs[0] == outs[1] == outs[2]
