"""`wasmrt bench --vision`'s arithmetic (wasmrt/bench/vision.py) on a made-up page result: per-run model times
against LiteRT.js, the work outside the models, the detector's share of frames and the frames per second. The page
itself runs in `wasmrt bench --vision` (headless Chromium), not here: no timed tests."""

from __future__ import annotations

import json
import math
import shutil

import pytest

from wasmrt.bench import vision


def frame(total: float, runs: list[tuple[str, float]], detector: bool | None = None) -> dict:
    models: dict[str, float] = {}
    for n, ms in runs:
        models[n] = models.get(n, 0.0) + ms
    return {"total": total, "models": models, "runs": [list(r) for r in runs], "found": 1, "detector": detector,
            "parts": {"crop": total / 10}}


def page_pass(scale: float) -> dict:
    s = scale
    return {
        "solutions": {
            # the detector runs on the first frame only (tracked face): per frame its median is 0, per run 4
            "face": [frame(10 * s, [("face_detector", 4 * s), ("face_landmark", 3 * s)], True),
                     frame(6 * s, [("face_landmark", 3 * s)], False), frame(6 * s, [("face_landmark", 3 * s)], False)],
            "segment": [frame(8 * s, [("selfie", 5 * s)]), frame(8 * s, [("selfie", 5 * s)]),
                        frame(8 * s, [("selfie", 5 * s)])],
            # two hands: the landmark model runs twice a frame
            "hands": [frame(30 * s, [("palm_detector", 10 * s), ("hand_landmark", 8 * s), ("hand_landmark", 8 * s)],
                            True)] * 3,
            "hand": [frame(12 * s, [("hand_landmark", 8 * s)], False)] * 3,
        },
        # the models alone: ours on the same inputs a little slower than inside the pipeline
        "alone": {"face_detector": [4.4 * s] * 3, "face_landmark": [3.3 * s] * 3, "selfie": [5.5 * s] * 3,
                  "palm_detector": [11 * s] * 3, "hand_landmark": [8.8 * s] * 3},
        "litert": {"face_detector": [8.8 * s] * 3, "face_landmark": [6.6 * s] * 3, "selfie": [11 * s] * 3,
                   "palm_detector": [22 * s] * 3, "hand_landmark": [17.6 * s] * 3},
        "max_rel_err": {"face_detector": 1e-6 * s, "hand_landmark": None},
        "together_1": [{"total": 50 * s}] * 3,
        "together_n": [{"total": 40 * s}] * 3,
        "together_w": [{"total": 20 * s, "ms": {"hands": 19 * s, "face": 6 * s, "segment": 9 * s}}] * 3,
    }


def test_summary_per_run_per_frame_and_outside():
    s = vision.summarize({"passes": [page_pass(1.0), page_pass(2.0)], "info": {}})
    face, seg, hands = s["face"], s["segment"], s["hands"]
    assert face["total"] == [6.0, 12.0]
    assert face["models"]["face_detector"] == [0.0, 0.0]  # per frame: most frames do not run it
    assert face["runs"]["face_detector"] == [4.0, 8.0]  # per run, where it ran
    assert face["alone"]["face_detector"] == pytest.approx([4.4, 8.8])  # alone: the comparison with LiteRT.js
    assert face["outside"] == [3.0, 6.0]
    assert face["detector"] == pytest.approx([1 / 3, 1 / 3])
    assert seg["outside"] == [3.0, 6.0] and seg["litert"]["selfie"] == [11.0, 22.0]
    assert hands["models"]["hand_landmark"] == [16.0, 32.0] and hands["runs"]["hand_landmark"] == [8.0, 16.0]
    assert hands["outside"] == [4.0, 8.0] and hands["detector"] == [1.0, 1.0]
    assert s["together"] == {"1": [50.0, 100.0], "n": [40.0, 80.0], "workers": [20.0, 40.0],
                             "worker_ms": {"hands": [19.0, 38.0], "face": [6.0, 12.0], "segment": [9.0, 18.0]}}
    assert face["parts"]["crop"] == pytest.approx([0.6, 1.2]) and hands["parts"]["crop"] == [3.0, 6.0]
    # the worst pass's cross-check; outputs that did not line up count as infinitely far
    assert s["max_rel_err"] == {"face_detector": 2e-6, "hand_landmark": math.inf}


def test_table_gives_ratios_shares_and_fps():
    s = vision.summarize({"passes": [page_pass(1.0), page_pass(1.0), page_pass(2.0)], "info": {}})
    text = vision.table(s, {"threads": 2, "worker_groups": [["hands"], ["face", "segment"]]})
    two, one = text.split("1 hand tracked")  # the solutions up to hands tracked with maxHands 2; maxHands 1
    rows = {line.split()[0]: line for line in two.splitlines() if line.strip()}
    assert rows["face_detector"].endswith("0.50 (0.50-0.50)")  # alone: 4.4 / 8.8
    assert rows["hand_landmark"].endswith("0.50 (0.50-0.50)")  # 8.8 / 17.6, though it ran twice a frame
    assert "16.00 (16.00-32.00)" in rows["hand_landmark"]  # per frame: two runs of 8
    assert "50% (50%-50%) of the frame" in text  # face: 3 of 6 ms outside the models
    assert rows["rest"].endswith("1.00 (1.00-2.00)")  # hands: 4 ms outside the models, 3 of them the crop
    ones = {line.split()[0]: line for line in one.splitlines() if line.strip()}
    assert ones["rest"].endswith("2.80 (2.80-5.60)")  # 1 hand: 4 ms outside the model, 1.2 of them the crop
    assert "8.00 (8.00-16.00)" in ones["hand_landmark"] and "0% (0%-0%)" in ones["detector"]
    assert "20.0 (10.0-20.0) fps" in text  # together, one thread: 50 ms a frame, 100 in the slow pass
    assert "2 threads: 40.00 (40.00-80.00) ms = 25.0 (12.5-25.0) fps" in text
    assert ("2 Workers at once (hands tracked | face mesh try-on + segmentation; one thread each): 20.00 (20.00-40.00) "
            "ms = 50.0 (25.0-50.0) fps") in text
    assert "in the Workers, per solution: hands tracked 19.00 (19.00-38.00) ms, face mesh try-on 6.00" in text


def test_a_model_that_never_ran_is_not_a_zero():
    p = page_pass(1.0)
    for f in p["solutions"]["hands"]:
        f["runs"] = [r for r in f["runs"] if r[0] != "palm_detector"]
    s = vision.summarize({"passes": [p], "info": {}})
    assert math.isnan(s["hands"]["runs"]["palm_detector"][0])


@pytest.mark.slow
def test_vision_bench_in_chromium(tmp_path, capsys):
    """The page end to end, two frames: every solution finds what the photo holds, every model ran alone beside
    LiteRT.js with outputs within the cross-check's bound, and the table is printed (the times are not checked)."""
    from wasmrt.cli.main import main

    if shutil.which("node") is None or shutil.which("chromium") is None:
        pytest.skip("Node.js and Chromium are needed")
    out = tmp_path / "vision.json"
    try:
        vision.frame()
    except Exception as e:  # offline without the photo cache
        pytest.skip(f"photo not available ({e})")
    code = main(["bench", "--vision", "--rounds", "2", "--warmup", "1", "--passes", "1", "-o", str(out)])
    printed = capsys.readouterr().out
    assert code == 0, printed
    doc = json.loads(out.read_text())
    (p,) = doc["raw"]["passes"]
    assert [f["found"] for f in p["solutions"]["face"]] == [1, 1]
    assert [f["found"] for f in p["solutions"]["hands"]] == [1, 1]  # the V sign
    assert [f["found"] for f in p["solutions"]["hand"]] == [1, 1]
    assert all(f["detector"] is True for f in p["solutions"]["hands"])  # fewer hands than maxHands 2
    assert all(f["detector"] is False for f in p["solutions"]["hand"])  # tracked: maxHands 1
    assert all(f["detector"] is False for f in p["solutions"]["face"])  # tracked since the warm-up frame
    assert set(p["litert"]) == set(p["alone"]) == {*vision.MODELS, "selfie"}
    assert all(0 <= e <= vision.MAX_REL_ERR for e in p["max_rel_err"].values()), p["max_rel_err"]
    assert len(p["together_1"]) == len(p["together_n"]) == len(p["together_w"]) == 2
    assert doc["info"]["worker_groups"] == [["hands"], ["face", "segment"]]
    assert "hands tracked" in printed and "2 threads" in printed
