"""`wasmrt bench --vision`: the vision solutions per frame in headless Chromium (wasmrt/bench/js/vision.mjs).

On one photo frame (a registry photo with a face, a hand and a person, scaled to FRAME_WIDTH), frame after frame:
the face mesh try-on (detector, landmarks, lips recoloured), selfie segmentation (mask at frame size, smoothed, the
background replaced) and hand tracking (palm detector while fewer than max_hands are tracked, landmarks; with
max_hands 2, MediaPipe's default, and with 1), on our relaxed-SIMD build with one thread. Per frame: the
pipeline's total, each model's time inside it and the work outside the models; each model against LiteRT.js
(relaxed-SIMD build, one thread) running the same .tflite on the same input tensor in the same page, interleaved
round by round; then the three solutions one after the other per frame with one thread and with two (intra-op
threads), and at the same time in Workers with one thread each (as many Workers as threads; frames per second).
Three passes; every figure is a median per pass, and the table gives the spread over the passes.
"""

from __future__ import annotations

import argparse
import json
import math
import os
from datetime import datetime
from pathlib import Path

import numpy as np

from wasmrt.errors import InputError

PHOTO = "human_webcam.jpg"  # npm @vladmandic/human (MIT): a face, a V-sign hand and a person (wasmrt/zoo/photos.py)
FRAME_WIDTH = 640
# name in the page -> (bundled .wrt name or None, MediaPipe .tflite source)
MODELS = {
    "face_detector": ("face_detector", "face_detection_short_range.tflite"),
    "face_landmark": ("face_landmark", "face_landmark.tflite"),
    "palm_detector": (None, "palm_detection_full.tflite"),
    "hand_landmark": (None, "hand_landmark_full.tflite"),
}
# idle pause before each round: longer than the threaded runtime's pool threads poll after a run (POLL_WINDOW_NS
# in kernels_wasm/engine/rt_threads.c, 200 ms), so they sleep while the one-thread runtime's frames run
IDLE_MS = 300
MAX_REL_ERR = 1e-3  # ours against LiteRT.js on the same input, as the model bench's cross-check
SOLUTIONS = {"face": ("face mesh try-on", ("face_detector", "face_landmark")),
             "segment": ("segmentation", ("selfie",)),
             "hands": ("hands tracked", ("palm_detector", "hand_landmark")),  # maxHands 2, MediaPipe's default
             "hand": ("1 hand tracked", ("palm_detector", "hand_landmark"))}  # maxHands 1


def frame() -> np.ndarray:
    """The photo scaled to FRAME_WIDTH wide (bilinear), RGBA uint8."""
    from PIL import Image

    from wasmrt.zoo import photos

    img = Image.fromarray(photos.photo(PHOTO))
    h = round(img.height * FRAME_WIDTH / img.width)
    return np.asarray(img.resize((FRAME_WIDTH, h), Image.BILINEAR).convert("RGBA"))


def _wrt(bundled: str | None, source: str) -> bytes:
    from wasmrt.compile.converter import convert
    from wasmrt.paths import models_dir
    from wasmrt.vision import model_bytes
    from wasmrt.zoo import models

    if bundled is None:
        return model_bytes(source)
    path = models_dir() / models.BUNDLED[bundled].wrt
    if path.is_file():
        return path.read_bytes()
    return convert(models.model_path(bundled), preprocess=models.BUNDLED[bundled].preprocess).data


def prepare(folder: Path) -> dict:
    """Write the frame and the models (.wrt and .tflite) into folder; the job's vision part."""
    from python_ref.vision.constants import SELFIE_MODELS
    from python_ref.vision.segment import choose_model
    from wasmrt.zoo import models

    folder.mkdir(parents=True, exist_ok=True)
    rgba = frame()
    (folder / "frame.bin").write_bytes(rgba.tobytes())
    h, w = rgba.shape[:2]
    selfie = SELFIE_MODELS[choose_model(w, h)]["source"]
    files = {}
    for name, (bundled, source) in {**MODELS, "selfie": (None, selfie)}.items():
        (folder / f"{name}.wrt").write_bytes(_wrt(bundled, source))
        (folder / f"{name}.tflite").write_bytes(models.model_path(source).read_bytes())
        files[name] = {"wrt": f"{name}.wrt", "tflite": f"{name}.tflite", "source": source}
    return {"frame": {"file": "frame.bin", "width": w, "height": h, "photo": PHOTO}, "models": files}


def _spread(values: list[float], fmt: str = "{:.2f}") -> str:
    lo, mid, hi = min(values), float(np.median(values)), max(values)
    return f"{fmt.format(mid)} ({fmt.format(lo)}-{fmt.format(hi)})"


def summarize(result: dict) -> dict:
    """Per pass medians, as lists over the passes: {solution: {total, outside (frame total less its model runs),
    models: {name: ms per frame}, runs: {name: ms per run in the pipeline, where it ran}, alone and litert: {name: ms
    per run of the model alone, ours and LiteRT.js's, on the same input}, found (hands or faces), detector (share of
    frames that ran the detector), parts: {name: ms} (where the work outside the models goes: crops, lips,
    mask, compositing)}, together: {"1", "n": ms per frame}, max_rel_err: {name: the largest difference of our
    outputs from LiteRT.js's over our largest magnitude, in any pass (inf: the outputs did not line up)}}."""
    out: dict = {s: {"total": [], "outside": [], "models": {}, "runs": {}, "alone": {}, "litert": {}, "found": [],
                     "detector": [], "parts": {}}
                 for s in SOLUTIONS}
    out["together"] = {"1": [], "n": [], "workers": []}
    out["max_rel_err"] = {}
    for p in result["passes"]:
        for n, e in p.get("max_rel_err", {}).items():
            out["max_rel_err"][n] = max(out["max_rel_err"].get(n, 0.0), math.inf if e is None else e)
        for s, (_, names) in SOLUTIONS.items():
            frames = p["solutions"][s]
            o = out[s]
            o["total"].append(float(np.median([f["total"] for f in frames])))
            o["outside"].append(float(np.median([f["total"] - sum(f["models"].values()) for f in frames])))
            o["found"].append(float(np.median([f["found"] for f in frames])))
            o["detector"].append(float(np.mean([bool(f["detector"]) for f in frames])))
            parts = list(frames[0].get("parts", {}))
            for part in parts:
                o["parts"].setdefault(part, []).append(float(np.median([f["parts"][part] for f in frames])))
            if parts:  # what the named parts leave of the work outside the models (mapping, tracking, copies)
                o["parts"].setdefault("rest", []).append(float(np.median(
                    [f["total"] - sum(f["models"].values()) - sum(f["parts"].values()) for f in frames])))
            for n in names:
                o["models"].setdefault(n, []).append(float(np.median([f["models"].get(n, 0.0) for f in frames])))
                runs = [ms for f in frames for m, ms in f["runs"] if m == n]
                o["runs"].setdefault(n, []).append(float(np.median(runs)) if runs else float("nan"))
                for k in ("alone", "litert"):
                    if n in p.get(k, {}):
                        o[k].setdefault(n, []).append(float(np.median(p[k][n])))
        for k in ("1", "n"):
            out["together"][k].append(float(np.median([f["total"] for f in p[f"together_{k}"]])))
        if p.get("together_w"):  # the solutions at the same time in Workers (pages from before them have none)
            out["together"]["workers"].append(float(np.median([f["total"] for f in p["together_w"]])))
            for k in p["together_w"][0].get("ms", {}):  # each solution's own time in its Worker
                out["together"].setdefault("worker_ms", {}).setdefault(k, []).append(
                    float(np.median([f["ms"][k] for f in p["together_w"]])))
    return out


def table(s: dict, info: dict) -> str:
    """The per-frame table (medians over frames, then median (min-max) over passes)."""
    lines = ["ms; in the pipeline: per frame (frames where a model did not run count 0) and per run; alone: the model "
             "on the input its pipeline gave it, ours and LiteRT.js interleaved; each a median over frames, then "
             "median (min-max) over passes",
             f"{'solution':<17} {'part':<15} {'per frame':>19} {'per run':>19} {'alone: ours':>19} "
             f"{'LiteRT.js':>19} {'ours/LiteRT.js':>17}"]
    for key, (title, names) in SOLUTIONS.items():
        o = s[key]
        lines.append(f"{title:<17} {'frame total':<15} {_spread(o['total']):>19}")
        for n in names:
            ours, peer = o["alone"].get(n), o["litert"].get(n)
            ratio = [a / b for a, b in zip(ours, peer, strict=True)] if ours and peer else None
            lines.append(f"{'':<17} {n:<15} {_spread(o['models'][n]):>19} {_spread(o['runs'][n]):>19} "
                         f"{_spread(ours) if ours else '-':>19} {_spread(peer) if peer else '-':>19} "
                         f"{_spread(ratio) if ratio else '-':>17}")
        share = [a / b for a, b in zip(o["outside"], o["total"], strict=True)]
        lines.append(f"{'':<17} {'outside models':<15} {_spread(o['outside']):>19} "
                     f"= {_spread([100 * x for x in share], '{:.0f}%')} of the frame")
        for part, ms in o.get("parts", {}).items():
            lines.append(f"{'':<17} {'  ' + part:<15} {_spread(ms):>19}")
        if key != "segment":
            lines.append(f"{'':<17} {'detector ran':<15} {_spread([100 * x for x in o['detector']], '{:.0f}%'):>19}"
                         f" of the frames")
    errs = s.get("max_rel_err", {})
    if errs:
        lines.append("outputs, ours against LiteRT.js (max |diff| / max |ours|): "
                     + ", ".join(f"{n} {e:.1e}" for n, e in errs.items()))
    t1, tn = s["together"]["1"], s["together"]["n"]
    fps = [1000 / x for x in t1], [1000 / x for x in tn]
    lines.append(f"all three per frame, 1 thread:  {_spread(t1)} ms = {_spread(fps[0], '{:.1f}')} fps")
    lines.append(f"all three per frame, {info.get('threads', '?')} threads: {_spread(tn)} ms = "
                 f"{_spread(fps[1], '{:.1f}')} fps")
    tw = s["together"].get("workers")
    if tw:
        groups = " | ".join(" + ".join(SOLUTIONS[k][0] for k in g) for g in info.get("worker_groups", []))
        lines.append(f"all three per frame, {len(info.get('worker_groups', [])) or '?'} Workers at once ({groups}; "
                     f"one thread each): {_spread(tw)} ms = {_spread([1000 / x for x in tw], '{:.1f}')} fps")
        per = s["together"].get("worker_ms", {})
        if per:
            lines.append("  in the Workers, per solution: " + ", ".join(f"{SOLUTIONS[k][0]} {_spread(v)} ms"
                                                                       for k, v in per.items()))
    return "\n".join(lines)


def run_vision(args: argparse.Namespace, warmup: int, rounds: int, passes: int) -> int:
    from wasmrt.bench import hosts
    from wasmrt.bench.prepare import WORK
    from wasmrt.bench.report import save_json
    from wasmrt.progress import Progress

    threads = max(int(t) for t in str(args.threads).split(","))
    if threads < 2:
        threads = 2  # the three solutions together are timed with two threads unless --threads asks for more
    if args.models:
        raise InputError("--vision runs the vision solutions' own models: give no model")
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    folder = WORK / "vision"
    bar = Progress()
    vision = {**prepare(folder), "warmup": warmup, "rounds": rounds, "passes": passes, "threads": threads,
              "idle_ms": IDLE_MS}
    job = {"vision": vision, "engines": [{"kind": "wasmrt"}, {"kind": "litert"}], "peer_threads": 1,
           **hosts.host_fields("chromium", True)}
    load = os.getloadavg()
    results, host, notes = hosts.run_job(job, folder, "chromium", "vision", bar.update, bar.log, peers=True)
    bar.close()
    res = results["vision"]  # a failure in the page fails the host (run_job raises with its log)
    s = summarize(res)
    print(f"vision, headless Chromium {host.get('version', '')}, relaxed SIMD, frame {vision['frame']['width']}x"
          f"{vision['frame']['height']} ({PHOTO}), {passes} passes x {rounds} frames; load average {load[0]:.2f} "
          f"-> {os.getloadavg()[0]:.2f}")
    print(table(s, res["info"]))
    out = Path(args.output) if args.output else WORK / f"vision-{stamp}.json"
    save_json(out, {"created": stamp, "host": host, "frame": vision["frame"], "models": vision["models"],
                    "settings": {"warmup": warmup, "rounds": rounds, "passes": passes, "threads": threads,
                                 "idle_ms": IDLE_MS, "load_average": [load[0], os.getloadavg()[0]]},
                    "info": res["info"], "summary": s, "raw": res, "notes": notes})
    print(f"results: {out}")
    bad = [n for n, e in s["max_rel_err"].items() if not e <= MAX_REL_ERR]
    if bad or len(s["max_rel_err"]) < len(MODELS) + 1:
        print(f"cross-check FAILED (over {MAX_REL_ERR:g}, or not run) for: {', '.join(bad) or 'a model not run'}")
        return 1
    return 0


if __name__ == "__main__":  # summarize a saved run again: python -m wasmrt.bench.vision RESULT.json
    import sys

    doc = json.loads(Path(sys.argv[1]).read_text())
    print(table(summarize(doc["raw"]), doc["info"]))
