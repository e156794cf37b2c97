"""The playground page (demo/web/) in Debian's Chromium, driven by playwright-core (tests/js/browser.mjs): every
bundled model on every wasm variant, outputs read back and compared with python_ref on the very input the page
made; classification results; the error path (a corrupt .wrt, then a valid model). Screenshots: build/artifacts/."""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent / "js"))
import js_fixtures as support

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CASES = {  # model -> image of its fixed input
    "efficientnet_lite0": "chelsea.png", "face_detector": "astronaut.png",
    "face_landmark": "astronaut.png", "selfie_segmentation": "astronaut.png",
}


def _jobs() -> list[dict]:
    jobs = []
    for variant in ("relaxed", "simd", "scalar"):
        runs = "1" if variant == "scalar" else "5"  # the scalar build is ~10x slower: time fewer runs
        for model, image in CASES.items():
            jobs.append({"id": f"{variant}-{model}", "params": {"variant": variant, "model": model, "image": image,
                                                                "runs": runs}})
        if variant != "scalar":
            jobs.append({"id": f"{variant}-efficientnet_lite0-coffee",
                         "params": {"variant": variant, "model": "efficientnet_lite0", "image": "coffee.png",
                                    "runs": runs}})
    jobs.append({"id": "worker-simd-face_landmark", "params": {"variant": "simd", "worker": "1",
                                                               "model": "face_landmark", "image": "astronaut.png"}})
    corrupt = (support.ROOT / "models" / "face_detector.wrt").read_bytes()[:5000]
    jobs.append({"id": "error-corrupt-then-valid", "params": {"model": "face_detector", "image": "astronaut.png",
                                                              "runs": "1"},
                 "steps": [{"upload": {"selector": "#model-file", "name": "corrupt.wrt",
                                       "b64": base64.b64encode(corrupt).decode()}, "until": "error"},
                           {"click": "[data-model=selfie_segmentation]", "until": "done"}]})
    jobs.append({"id": "webcam-selfie_segmentation", "params": {"model": "selfie_segmentation", "image": "chelsea.png",
                                                          "runs": "1"},
                 "steps": [{"click": "#webcam",
                            "waitFor": "window.playground.state.last?.image === 'webcam' && "
                                       "window.playground.state.last.model === 'selfie_segmentation'"}]})
    return jobs


@pytest.fixture(scope="session")
def browser_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    why = support.missing_prerequisites()
    if why:
        pytest.skip(why)
    if not Path(CHROMIUM).exists():
        pytest.skip("chromium is not installed (apt-get install chromium)")
    from wasmrt.dev.demo_server import DemoServer, copy_samples

    copy_samples()
    tmp = tmp_path_factory.mktemp("browser")
    support.ARTIFACTS.mkdir(parents=True, exist_ok=True)
    jobs_file, results_file = tmp / "jobs.json", tmp / "results.json"
    with DemoServer(port=0) as server:
        jobs_file.write_text(json.dumps({"origin": server.origin, "artifacts": str(support.ARTIFACTS),
                                         "chromium": CHROMIUM, "jobs": _jobs()}))
        r = subprocess.run(["node", str(Path(__file__).parent / "js" / "browser.mjs"), str(jobs_file),
                            str(results_file)], cwd=support.ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"browser driver failed:\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
    results = json.loads(results_file.read_text())
    report = [{k: v for k, v in s.items() if k not in ("inputs", "outputs")} | {"id": e["id"]}
              for e in results["results"] for s in e["snapshots"]]
    (support.ARTIFACTS / "browser-report.json").write_text(json.dumps({"chromium": results["chromium"],
                                                                       "snapshots": report}, indent=1))
    return {e["id"]: e for e in results["results"]}


def _arrays(tensors: dict) -> dict[str, np.ndarray]:
    return {k: np.frombuffer(base64.b64decode(t["b64"]), "<f4").reshape(t["shape"]) for k, t in tensors.items()}


def _check_against_reference(snap: dict, model: str, tol: float = support.REL_TOL) -> dict[str, float]:
    """Outputs of the page vs python_ref on the page's own input; returns relative errors."""
    inputs, outputs = _arrays(snap["inputs"]), _arrays(snap["outputs"])
    ref = support.reference(model, inputs)
    errs = {}
    for k, want in ref.items():
        got = outputs[k]
        assert got.shape == want.shape, k
        scale = float(np.abs(want).max()) or 1.0
        errs[k] = float(np.abs(got - want).max()) / scale
        assert errs[k] <= tol, f"{model} {k}: max error {errs[k]:.2e} x max|ref|"
    return errs


def _snap(results: dict, job: str, k: int = 0) -> dict:
    e = results[job]
    assert not e.get("failure"), e["failure"]
    assert not [m for m in e["logs"] if m.startswith("pageerror")], e["logs"]
    s = e["snapshots"][k]
    assert Path(s["screenshot"]).is_file()
    return s


@pytest.mark.parametrize("variant", ["relaxed", "simd", "scalar"])
@pytest.mark.parametrize("model", list(CASES))
def test_page_matches_reference(browser_results: dict, variant: str, model: str) -> None:
    s = _snap(browser_results, f"{variant}-{model}")
    assert s["state"] == "done", (s["status"], s["error"])
    assert s["last"]["variant"] == variant and s["last"]["model"] == model
    assert browser_results[f"{variant}-{model}"]["crossOriginIsolated"] is True
    errs = _check_against_reference(s, model)
    if model != "face_landmark":  # the landmark input is a rotated face crop, not image.toTensor
        from python_ref import Interpreter
        from wasmrt.compile.ir import Preprocess
        from wasmrt.preprocess import image_to_tensor, read_image

        interp = Interpreter((support.ROOT / "models" / f"{model}.wrt").read_bytes())
        want = image_to_tensor(read_image(support.skimage_dir() / CASES[model]),
                               Preprocess(**interp.metadata["preprocess"][0]), interp.inputs[0].shape)
        got = next(iter(_arrays(s["inputs"]).values()))
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), "image.toTensor differs from preprocess.py"
    t = s["last"]["timings"]
    print(f"\n  chromium {variant:8s} {model:20s} load {t['loadMs']:7.1f} ms  first {t['firstRunMs']:7.1f} ms  "
          f"median {t['medianRunMs']:7.1f} ms  rel err " + ", ".join(f"{k} {v:.1e}" for k, v in errs.items()))


@pytest.mark.parametrize("variant", ["relaxed", "simd", "scalar"])
def test_page_results(browser_results: dict, variant: str) -> None:
    top = _snap(browser_results, f"{variant}-efficientnet_lite0")["last"]["summary"]["top"]
    assert re.search(r"\bcat\b", top[0]["label"]), top[:3]
    if variant != "scalar":
        top = _snap(browser_results, f"{variant}-efficientnet_lite0-coffee")["last"]["summary"]["top"]
        assert "espresso" in top[0]["label"], top[:3]
    faces = _snap(browser_results, f"{variant}-face_detector")["last"]["summary"]["faces"]
    assert len(faces) == 1 and faces[0]["score"] > 0.5, faces
    f = faces[0]  # astronaut.png is 512x512, the face is in the upper middle
    assert 120 < (f["x0"] + f["x1"]) / 2 < 330 and 60 < (f["y0"] + f["y1"]) / 2 < 200, f
    lm = _snap(browser_results, f"{variant}-face_landmark")["last"]["summary"]
    assert lm["landmarks"] == 468 and lm["faceFound"] and lm["presence"] > 0.9, lm
    seg = _snap(browser_results, f"{variant}-selfie_segmentation")["last"]["summary"]
    assert 0.2 < seg["maskMean"] < 0.9, seg
    shown = _snap(browser_results, f"{variant}-face_detector")["timingsShown"]
    words = {"relaxed": "relaxed SIMD", "simd": "SIMD128", "scalar": "scalar (no SIMD)"}[variant]  # describeVariant
    assert shown["t-variant"] == words and all(re.match(r"[\d.]+ ms", shown[k]) for k in ("t-load", "t-first"))


def test_worker_mode(browser_results: dict) -> None:
    s = _snap(browser_results, "worker-simd-face_landmark")
    assert s["state"] == "done" and s["last"]["worker"] is True
    assert "in a Worker" in s["variantInfo"]
    _check_against_reference(s, "face_landmark")


def test_corrupt_model_shows_error_then_next_model_runs(browser_results: dict) -> None:
    before, failed, after = (_snap(browser_results, "error-corrupt-then-valid", k) for k in range(3))
    assert before["state"] == "done"
    assert failed["state"] == "error"
    assert failed["errorName"] == "ModelFormatError"
    assert failed["error"].startswith("ModelFormatError: ") and "corrupt" in failed["error"].lower(), failed["error"]
    assert after["state"] == "done" and after["error"] is None
    assert after["last"]["model"] == "selfie_segmentation"
    _check_against_reference(after, "selfie_segmentation")


def test_webcam(browser_results: dict) -> None:
    """Chromium's synthetic camera through getUserMedia -> <video> -> image.toTensor(video) -> the model."""
    s = _snap(browser_results, "webcam-selfie_segmentation", 1)
    assert s["last"]["image"] == "webcam"
    shape = next(iter(s["inputs"].values()))["shape"]
    assert shape == [1, 256, 256, 3]
    # The synthetic frames are flat colour fields. A float32 running sum in the 64x64 global average pool of the
    # squeeze-excite branch drifted up to 6e-3 of the reference here; the pool sums with compensation now. What is
    # left is the model's conditioning on such frames: one rounding in an early 1x1 conv moves the mask by up to
    # 2.5e-4, and LiteRT (XNNPACK) itself differs from python_ref by 1.7e-4..3.4e-4 on the same frames (ours:
    # 7e-5..4.4e-4 depending on the frame and the kernel target). Hence 1e-3 here, 1e-4 on natural images.
    _check_against_reference(s, "selfie_segmentation", tol=1e-3)
