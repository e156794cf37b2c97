"""Run inside Pyodide by tests/test_pyodide_node.py and tests/test_pyodide_browser.py (never imported by CPython):
the wasmrt wheel installed by micropip, then every check, results returned as JSON for CPython to compare.

`env` (a dict the driver passes in): package and wasm_paths (wasmrt.web.init), model (name -> what rt.load takes:
a URL, or a path in Pyodide's file system), model_base (FaceMesh.create), and read(file) -> bytes of a fixture file
(an async function of the driver)."""

import base64
import hashlib
import json
import sys
from array import array


def b64(mv) -> str:
    return base64.b64encode(bytes(mv)).decode()


def sha(mv) -> str:
    return hashlib.sha256(bytes(mv)).hexdigest()


async def error_of(awaitable) -> list | None:
    try:
        await awaitable
    except Exception as e:
        return [type(e).__name__, str(e)]
    return None


async def checks(env) -> str:
    import wasmrt
    import wasmrt.errors

    out = {"numpy_imported": "numpy" in sys.modules,
           "modules": sorted(m for m in sys.modules if m.startswith("wasmrt"))}
    cpython_only = {}
    for what in ("wasmrt.compile", "wasmrt.quantize", "wasmrt.engines", "wasmrt.compile.sparsity"):
        try:
            __import__(what)
            cpython_only[what] = None
        except wasmrt.errors.WasmrtError as e:
            cpython_only[what] = [type(e).__name__, str(e)]
    try:
        wasmrt.load("x.wrt")
    except wasmrt.errors.WasmrtError as e:
        cpython_only["wasmrt.load"] = [type(e).__name__, str(e)]
    out["cpython_only"] = cpython_only

    manifest = json.loads(await env["read"]("manifest.json"))
    rt = await wasmrt.web.init(env["package"], variant="relaxed", wasm_paths=env["wasm_paths"])
    out["variant"] = rt.variant

    # EfficientNet-Lite0 by URL / path, an array.array input; the face detector from bytes, a memoryview input
    outputs = {}
    for name, how in (("efficientnet_lite0", "source"), ("face_detector", "bytes")):
        case = manifest["models"][name]
        source = env["model"](name) if how == "source" else await env["read"](case["file"])
        m = await rt.load(source)
        (inp,) = case["inputs"]
        raw = await env["read"](inp["file"])
        x = array("f")
        x.frombytes(raw)
        feed = (x, inp["shape"]) if how == "source" else memoryview(raw).cast("B").cast("f", inp["shape"])
        got = await m.run({inp["name"]: feed})
        first = got[m.outputs[0].name].cast("B").cast("f")  # flat
        outputs[name] = {"inputs": [[t.name, list(t.shape), t.dtype] for t in m.inputs],
                         "outputs": {k: {"shape": list(v.shape), "format": v.format, "b64": b64(v)}
                                     for k, v in got.items()},
                         "labels": len(m.labels),
                         "top": m.labels[max(range(len(first)), key=first.__getitem__)] if m.labels else None}
        m.release()
    out["models"] = outputs

    # wrong input: the same class as CPython's
    m = await rt.load(await env["read"](manifest["models"]["face_detector"]["file"]))
    bad = {}
    for label, feeds in (("shape", {"input": (array("f", [0.0]) * 12, [1, 2, 2, 3])}), ("name", {"nope": array("f")}),
                         ("type", {"input": [1.0, 2.0]})):
        try:
            await m.run(feeds)
            bad[label] = None
        except wasmrt.errors.WasmrtError as e:
            bad[label] = [type(e).__name__, str(e)]
    m.release()
    try:
        m.release()
        await m.run({"input": array("f")})
    except wasmrt.errors.WasmrtError as e:
        bad["released"] = [type(e).__name__, str(e)]
    out["bad_inputs"] = bad

    # the hostile catalogue: load, then run with CPython's feeds
    hostile = {}
    for c in manifest["hostile"]:
        try:
            hm = await rt.load(await env["read"](c["file"]))
        except wasmrt.errors.WasmrtError as e:
            hostile[c["name"]] = [type(e).__name__, str(e)]
            continue
        try:
            await hm.run({f["name"]: (b"" if 0 in f["shape"] else await env["read"](f["file"]), f["shape"], f["dtype"])
                          for f in c["feeds"]})
            hostile[c["name"]] = ["ok", ""]
        except wasmrt.errors.WasmrtError as e:
            hostile[c["name"]] = [type(e).__name__, str(e)]
        finally:
            hm.release()
    out["hostile"] = hostile

    # the face mesh through the JS package's pipeline, on the astronaut
    from wasmrt.vision import FaceMesh

    face = manifest["face"]
    mesh = await FaceMesh.create(rt, model_base=env["model_base"])
    faces = await mesh.detect(await env["read"](face["file"]), face["width"], face["height"])
    out["faces"] = [{"box": f.box, "score": f.score, "shape": list(f.landmarks.shape), "b64": b64(f.landmarks)}
                    for f in faces]
    await mesh.release()

    # hands, selfie mask and compositing through the JS package's pipelines
    from wasmrt.vision import HandTracker, SelfieSegmenter, blur_background, replace_background

    if manifest["hand"]:
        hand = manifest["hand"]
        tracker = await HandTracker.create(rt, model_base=env["model_base"], lite=True, max_hands=2)
        pixels = await env["read"](hand["file"])
        found = await tracker.detect(memoryview(pixels).cast("B", [hand["height"], hand["width"], 3]))
        out["hands"] = [{"handedness": h.handedness, "gesture": h.gesture, "score": h.score, "tracked": h.tracked,
                         "shape": list(h.landmarks.shape), "format": h.landmarks.format, "b64": b64(h.landmarks),
                         "world": b64(h.world), "ran_detector": tracker.ran_detector} for h in found]
        out["bad_frames"] = {"short": await error_of(tracker.detect(b"\0" * 12, 10, 10)),
                             "empty": await error_of(tracker.detect(b"", 0, 0)),
                             "no_size": await error_of(tracker.detect(b"\0" * 12)),
                             "max_hands": await error_of(HandTracker.create(rt, model_base=env["model_base"],
                                                                            lite=True, max_hands=0)),
                             "option": await error_of(HandTracker.create(rt, max_hand=2))}
        await tracker.release()
    seg = await SelfieSegmenter.create(rt, model_base=env["model_base"])
    pixels = await env["read"](face["file"])
    mask = await seg.segment(pixels, face["width"], face["height"])
    replaced = replace_background(pixels, mask, (0, 177, 64))
    out["segment"] = {"model": seg.model, "mask_shape": list(mask.shape), "mask": sha(mask),
                      "replaced_shape": list(replaced.shape), "replaced": sha(replaced),
                      "replaced_hex": sha(replace_background(pixels, mask, "#00b140")),
                      "blurred": sha(blur_background(pixels, mask, radius=8)),
                      "bad": await error_of(seg.segment(b"\0" * 5, 4, 4))}
    one = await SelfieSegmenter.create(rt, model_base=env["model_base"])  # segment and composite in one call
    replaced = await one.replace_background(pixels, (0, 177, 64), face["width"], face["height"])
    out["segment"]["one_call"] = {"replaced": sha(replaced), "mask": sha(one.previous), "model": one.model,
                                  "blurred": sha(await one.blur_background(pixels, 8, face["width"], face["height"])),
                                  "bad": await error_of(one.replace_background(b"\0" * 5, "#000000", 4, 4))}
    await one.release()
    await seg.release()
    return json.dumps(out)

