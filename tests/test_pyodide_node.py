"""wasmrt in Pyodide under Node (npm's pyodide, offline): micropip installs the pure-Python wheel `wasmrt package
--pure` builds outside the repository; `import wasmrt` pulls no numpy and no CPython engine; EfficientNet-Lite0 and
the face detector on the JS runtime match python_ref within 1e-5; bad inputs and every hostile-catalogue file give
the error class CPython gives; what needs CPython says so in one line; the face mesh gives the JS pipeline's own
landmarks, the hand tracker the JS pipeline's hands, the selfie mask and the composited frames the JS bytes. One
Pyodide start for the module (tests/js/pyodide_node.mjs runs tests/js/pyodide_checks.py).
The tensor helpers of wasmrt.web (wasmrt/web/tensors.py, numpy-aware) are tested here in CPython."""

from __future__ import annotations

import array
import base64
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent / "js"))
import pyodide_fixtures as fx

from wasmrt.dev import pyodide_files
from wasmrt.errors import InputError, UnavailableError
from wasmrt.web import tensors

ROOT = fx.ROOT


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fx.build_wheel(tmp_path_factory.mktemp("pure-wheel"))


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("pyodide-cases")
    return out, fx.write_cases(out)


@pytest.fixture(scope="module")
def result(wheel: Path, cases: tuple[Path, dict], tmp_path_factory: pytest.TempPathFactory) -> dict:
    why = fx.missing()
    if why:
        pytest.skip(why)
    fixtures, _ = cases
    cfg = tmp_path_factory.mktemp("pyodide-node") / "config.json"
    cfg.write_text(json.dumps({
        "pyodide": str(pyodide_files.pyodide_dir()), "micropip": str(pyodide_files.micropip_wheel()),
        "wheel": str(wheel),
        "checks": str(ROOT / "tests" / "js" / "pyodide_checks.py"), "fixtures": str(fixtures),
        "models": str(ROOT / "models"), "package": str(ROOT / "js_bindings"),
        "wasmPaths": str(ROOT / "wasmrt" / "engines" / "dist")}))
    r = subprocess.run([str(fx.NODE22), str(ROOT / "tests" / "js" / "pyodide_node.mjs"), str(cfg)], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith(("RESULT ", "FAILED "))]
    assert r.returncode == 0 and lines and lines[-1].startswith("RESULT "), (r.stdout[-6000:], r.stderr[-3000:])
    return json.loads(lines[-1][len("RESULT "):])


def floats(b64: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(b64), "<f4")


def test_the_wheel_is_pure_python_without_dependencies_in_pyodide(wheel: Path) -> None:
    assert wheel.name.endswith("-py3-none-any.whl"), wheel.name
    assert not str(wheel).startswith(str(ROOT))
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        meta = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        tag = z.read(next(n for n in names if n.endswith(".dist-info/WHEEL"))).decode()
    assert "Root-Is-Purelib: true" in tag and "Tag: py3-none-any" in tag
    assert not [n for n in names if n.endswith((".so", ".wasm")) or n.startswith(("wasmrt/web/demo", "wasmrt/web/js"))]
    assert "wasmrt/web/__init__.py" in names and "python_ref/errors.py" in names
    required = [ln for ln in meta.splitlines() if ln.startswith("Requires-Dist:") and "extra ==" not in ln]
    assert required and all('sys_platform != "emscripten"' in ln for ln in required), required


def test_import_in_pyodide_pulls_no_numpy_and_no_cpython_engine(result: dict) -> None:
    assert result["numpy_imported"] is False
    assert set(result["modules"]) <= {"wasmrt", "wasmrt.errors", "wasmrt.host", "wasmrt.web", "wasmrt.web.bridge",
                                      "wasmrt.web.tensors"}, result["modules"]
    assert result["variant"] == "relaxed"


def test_what_needs_cpython_says_so_in_one_line(result: dict) -> None:
    for what, err in result["cpython_only"].items():
        assert err is not None, f"{what} imported in Pyodide"
        name, message = err
        assert name == "UnavailableError" and "\n" not in message, (what, err)
        assert "needs CPython" in message and "wasmrt.web.init()" in message, message


@pytest.mark.parametrize("model", list(fx.MODELS))
def test_models_match_python_ref(result: dict, cases: tuple[Path, dict], model: str) -> None:
    fixtures, manifest = cases
    got = result["models"][model]
    assert got["inputs"] == [[i["name"], i["shape"], "float32"] for i in manifest["models"][model]["inputs"]]
    for k, want_entry in manifest["models"][model]["outputs"].items():
        want = np.fromfile(fixtures / want_entry["file"], "<f4")
        out = got["outputs"][k]
        assert out["shape"] == want_entry["shape"] and out["format"] == "f"
        err = float(np.abs(floats(out["b64"]) - want).max()) / float(np.abs(want).max())
        assert err <= fx.REL_TOL, f"{model} {k}: {err:.2e} x max|ref|"
    if model == "efficientnet_lite0":
        assert got["labels"] == 1000 and re.search(r"\bcat\b", got["top"]), got["top"]


def test_bad_inputs_raise_the_classes_cpython_raises(result: dict) -> None:
    bad = result["bad_inputs"]
    assert bad["shape"][0] == bad["name"][0] == bad["type"][0] == "InputError", bad
    assert "does not match" in bad["shape"][1] and "nope" in bad["name"][1]
    assert bad["released"] == ["WasmrtError", "this model was released"]
    from wasmrt.engines import load

    with load(ROOT / "models" / "face_detector.wrt", "wasm") as m:  # CPython, the same mistakes
        for feeds in ({"input": np.zeros((1, 2, 2, 3), np.float32)}, {"nope": np.zeros(3, np.float32)}):
            with pytest.raises(InputError):
                m.run(feeds)


def test_every_hostile_file_gives_its_cpython_error_class(result: dict, cases: tuple[Path, dict]) -> None:
    _, manifest = cases
    assert len(manifest["hostile"]) == len(result["hostile"]) > 20
    for c in manifest["hostile"]:
        name, message = result["hostile"][c["name"]]
        assert name == c["cpython"], f"{c['name']}: Pyodide {name} ({message}), CPython {c['cpython']}"
        if c["expect"] != "ok":
            assert re.search(c["expect"], message), f"{c['name']}: {message!r} does not match {c['expect']!r}"


def test_face_mesh_finds_the_astronaut_with_the_js_pipelines_landmarks(result: dict) -> None:
    (face,) = result["faces"]
    (js_face,) = result["jsFaces"]
    assert face["shape"] == [468, 3] and face["score"] > 0.9
    x0, y0, x1, y1 = face["box"]
    assert 150 < x0 < x1 < 300 and 50 < y0 < y1 < 200, face["box"]  # the astronaut's face in the 512x512 photo
    np.testing.assert_array_equal(floats(face["b64"]), floats(js_face["b64"]))


def test_hand_tracker_finds_the_js_pipelines_hand(result: dict, cases: tuple[Path, dict]) -> None:
    if cases[1]["hand"] is None:
        pytest.skip("the hand photo is not in the photo cache (python -m wasmrt.zoo.photos)")
    hands, js_hands = result["hands"], result["jsHands"]
    assert len(hands) == len(js_hands) >= 1 and hands[0]["ran_detector"], hands
    for h, js in zip(hands, js_hands, strict=True):
        assert h["shape"] == [21, 3] and h["format"] == "d" and h["score"] > 0.5
        assert (h["handedness"], h["gesture"], h["score"]) == (js["handedness"], js["gesture"], js["score"])
        assert h["b64"] == js["b64"] and h["world"] == js["world"]  # float64 landmarks, bit for bit


def test_a_bad_frame_raises_the_js_error_class(result: dict, cases: tuple[Path, dict]) -> None:
    if cases[1]["hand"] is None:
        pytest.skip("the hand photo is not in the photo cache")
    bad = result["bad_frames"]
    assert bad["short"] == result["jsBadFrame"] == ["TypeError", "HandTracker.detect: expected 10x10x4 bytes, got 12"]
    assert bad["empty"][0] == "TypeError" and "not empty" in bad["empty"][1], bad
    assert bad["no_size"] == ["TypeError", "HandTracker.detect: a buffer of 12 bytes needs the frame's width and "
                                            "height"]
    assert result["segment"]["bad"] == ["TypeError", "SelfieSegmenter.segment: expected 4x4x4 bytes, got 5"]
    assert bad["max_hands"] == ["ValueError", "maxHands must be >= 1, got 0"]  # a JS RangeError
    assert bad["option"][0] == "TypeError" and "unknown option 'max_hand'" in bad["option"][1]


def test_selfie_mask_and_composites_equal_the_js_bytes(result: dict) -> None:
    seg, js = result["segment"], result["jsSegment"]
    assert seg["model"] == js["model"] == "general"
    assert seg["mask_shape"] == [512, 512] and seg["replaced_shape"] == [512, 512, 3]
    assert seg["mask"] == js["mask"]  # sha256 of the float32 mask
    assert seg["replaced"] == seg["replaced_hex"] == js["replaced"]
    assert seg["blurred"] == js["blurred"]
    one = seg["one_call"]  # the segmenter's replace_background: its first frame's mask and composite
    assert one["model"] == "general" and one["mask"] == js["mask"] and one["replaced"] == js["replaced"]
    assert one["blurred"] == js["blurred"]  # the same photo again: its mask smoothed with itself is that mask
    assert one["bad"] == ["TypeError", "SelfieSegmenter.replaceBackground: expected 4x4x4 bytes, got 5"]


# -- the tensor helpers in CPython (no Pyodide needed) --------------------------------------------------------------


def test_formats_are_python_refs_dtypes() -> None:
    from python_ref.wrt_file import DTYPES

    assert set(tensors.FORMATS) == {d.name for d in DTYPES.values()}
    for name, (fmt, _) in tensors.FORMATS.items():
        want = np.dtype(np.uint16 if name == "float16" else name)
        assert np.dtype(fmt) == want and tensors.ITEMSIZE[fmt] == want.itemsize, name


def test_feeds_from_numpy_and_buffers() -> None:
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    f = tensors.to_feed("x", x[:, :, ::2])  # strided: made contiguous
    assert f.dtype == "float32" and f.shape == (2, 3, 2) and f.kind == "f32"
    assert list(f.data) == list(x[:, :, ::2].ravel())
    h = tensors.to_feed("h", np.ones(3, np.float16))
    assert h.kind == "u16" and list(h.data) == [0x3C00] * 3
    b = tensors.to_feed("b", array.array("f", [1, 2, 3, 4]), [2, 2])
    assert b.dtype == "float32" and b.shape == (2, 2) and list(b.data) == [1, 2, 3, 4]
    assert tensors.to_feed("m", memoryview(x)).shape == (2, 3, 4)  # a multi-dimensional buffer keeps its shape
    q = tensors.to_feed("q", np.arange(4, dtype=np.int64).tobytes(), [4], "int64")
    assert q.kind == "i64" and list(q.data) == [0, 1, 2, 3]
    assert tensors.to_feed("u", b"\x01\x02").dtype == "uint8"
    with pytest.raises(InputError, match="holds 6 float32 items, the buffer 4"):
        tensors.to_feed("x", array.array("f", [1, 2, 3, 4]), [2, 3])
    with pytest.raises(InputError, match="expected a numpy array or a buffer"):
        tensors.to_feed("x", [1.0, 2.0])
    with pytest.raises(InputError, match="has no wasmrt dtype"):
        tensors.to_feed("x", array.array("d", [1.0]))
    with pytest.raises(InputError, match="float64"):
        tensors.to_feed("x", np.zeros(2))


def test_outputs_are_numpy_when_loaded_else_shaped_memoryviews(monkeypatch: pytest.MonkeyPatch) -> None:
    src = np.arange(6, dtype=np.float32)

    def fill(buf: memoryview) -> None:
        buf[:] = memoryview(src).cast("B").cast(buf.format)

    a = tensors.make_output("float32", [2, 3], fill)
    assert isinstance(a, np.ndarray) and a.shape == (2, 3) and (a.ravel() == src).all()
    monkeypatch.setattr(tensors, "numpy_loaded", lambda: None)
    m = tensors.make_output("float32", [2, 3], fill)
    assert isinstance(m, memoryview) and m.shape == (2, 3) and m.tolist() == src.reshape(2, 3).tolist()


def test_frames_and_masks_for_the_js_pipelines() -> None:
    from wasmrt.web.frames import frame_of, mask_of

    img = np.zeros((4, 6, 4), np.uint8)
    f = frame_of(img[:, ::2], None, None, "detect")  # strided: made contiguous
    assert (f.width, f.height, f.channels, f.data.nbytes) == (3, 4, 4, 48)
    assert frame_of(memoryview(bytes(72)).cast("B", [4, 6, 3]), None, None, "detect")[1:] == (6, 4, None)
    assert frame_of(bytearray(72), 6, 4, "detect")[1:] == (6, 4, None)  # JS infers the channels, checks the size
    with pytest.raises(TypeError, match="detect: expected an HxWx3 or HxWx4 uint8 image, got float32"):
        frame_of(img.astype(np.float32), None, None, "detect")
    with pytest.raises(TypeError, match="needs the frame's width and height"):
        frame_of(bytes(12), None, None, "detect")
    with pytest.raises(TypeError, match="got list"):
        frame_of([1, 2], 1, 1, "detect")
    mv, hw = mask_of(np.zeros((4, 6), np.float32), "replace")
    assert mv.format == "f" and len(mv) == 24 and hw == (4, 6)
    assert mask_of(array.array("f", [0.5] * 6), "replace")[1] is None
    with pytest.raises(TypeError, match="float32"):
        mask_of(np.zeros((4, 6)), "replace")


def test_float64_outputs_for_landmarks(monkeypatch: pytest.MonkeyPatch) -> None:
    src = np.arange(63, dtype=np.float64) / 7

    def fill(buf: memoryview) -> None:
        buf[:] = memoryview(src).cast("B").cast(buf.format)

    assert (tensors.make_output("float64", [21, 3], fill) == src.reshape(21, 3)).all()
    monkeypatch.setattr(tensors, "numpy_loaded", lambda: None)
    m = tensors.make_output("float64", [21, 3], fill)
    assert m.format == "d" and m.shape == (21, 3) and m.tolist() == src.reshape(21, 3).tolist()


def test_wasmrt_web_in_cpython_says_it_runs_in_pyodide() -> None:
    import asyncio

    import wasmrt
    from wasmrt.engines import load

    assert wasmrt.load is load  # CPython's package is unchanged
    with pytest.raises(UnavailableError, match="runs in Pyodide"):
        asyncio.run(wasmrt.web.init())


def test_every_js_error_class_has_its_python_class() -> None:
    """wasmrt.web maps a JS error to Python by its class name: the JS package's classes (errors.js ERROR_CLASSES,
    named after python_ref/errors.py's) must all exist in wasmrt.errors, and an unknown name maps to nothing."""
    from wasmrt import errors
    from wasmrt.web import bridge

    text = (ROOT / "js_bindings" / "src" / "errors.js").read_text()
    names = re.search(r"export const ERROR_CLASSES = \{([^}]*)\}", text).group(1).replace("\n", " ").split(",")
    names = [n.strip() for n in names if n.strip()]
    assert len(names) >= 6
    for name in names:
        assert bridge.error_class(name) is getattr(errors, name), name
    assert bridge.error_class("TypeError") is None and bridge.error_class("Path") is None
