"""`wasmrt bench` end to end on a small model, one round: the JSON has its fields and every engine's outputs match
python_ref. (The full bench on the real models is a manual run, not CI.)"""

from __future__ import annotations

import itertools
import json
import shutil
import time

import numpy as np
import pytest
from test_export import vision_graph

from wasmrt import paths
from wasmrt.bench.report import pass_ratios, rows_for
from wasmrt.cli.main import main
from wasmrt.dev import build
from wasmrt.export.tflite import export_tflite

ROW_FIELDS = {"model", "host", "engine", "ours", "median_ms", "min_ms", "runs", "gflops", "max_rel_err", "ok",
              "vs_native", "vs_best_peer"}


@pytest.fixture(scope="module")
def small_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("bench") / "small.tflite"
    export_tflite(vision_graph(), path)
    return path


def _bench(tmp_path, model, *extra):
    out = tmp_path / "bench.json"
    code = main(["bench", str(model), "--rounds", "1", "--warmup", "0", "-o", str(out), "--no-chart", *extra])
    return code, json.loads(out.read_text())


def _needs_node():
    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.skip("Node.js and npm are needed for the wasm hosts")


def test_bench_native_and_node_with_peers(tmp_path, small_model, capsys):
    _needs_node()
    code, doc = _bench(tmp_path, small_model, "--hosts", "native,node", "--variants", "scalar,relaxed", "--peers")
    assert code == 0, capsys.readouterr().out
    assert doc["settings"]["rounds"] == 1 and doc["settings"]["threads"] == [1]
    model = doc["models"]["small"]
    assert model["macs"] > 0 and model["outputs"] == ["logits", "probs"]
    engines = {(r["host"], r["engine"]) for r in doc["rows"]}
    assert {("node", "wasmrt-scalar"), ("node", "wasmrt-relaxed"), ("native", "litert"), ("native", "onnxruntime"),
            ("node", "onnxruntime-web"), ("node", "tfjs-wasm"), ("node", "litert.js")} <= engines
    assert any(h == "native" and e.startswith("wasmrt-") for h, e in engines)
    for row in doc["rows"]:
        assert "error" not in row, row
        assert set(row) >= ROW_FIELDS, row
        assert row["ok"] and row["max_rel_err"] < 1e-3, row
        assert row["runs"] == 3 and row["median_ms"] > 0  # three passes of one round
        assert len(row["pass_median_ms"]) == 3 and len(row["pass_cpu_median_ms"]) == 3, row
    ours_native = next(r for r in doc["rows"] if r["host"] == "native" and r["ours"])
    assert ours_native["vs_native"] == pytest.approx(1.0)
    assert doc["settings"]["passes"] == 3 and len(doc["settings"]["load_average"]) == 3
    assert doc["settings"]["idle_gap_ms"] == 0  # one thread: no pool to let sleep
    assert model["made_by"]["tflite"] == "the source model small.tflite"  # LiteRT runs the source file itself
    assert model["made_by"]["onnx"].startswith("wasmrt's exporter")
    printed = capsys.readouterr().out
    assert "median ms" in printed and "x best peer" in printed and "cpu ms" in printed
    assert "node  wasmrt-relaxed / litert.js:" in printed and "(spread " in printed
    assert "LiteRT and LiteRT.js ran source.tflite, made by the source model small.tflite" in printed


def test_bench_threads_scaling_table(tmp_path, small_model, capsys):
    _needs_node()
    code, doc = _bench(tmp_path, small_model, "--hosts", "native,node", "--variants", "simd", "--peers",
                       "--threads", "1,2")
    assert code == 0, capsys.readouterr().out
    rows = {(r["host"], r["engine"]): r for r in doc["rows"]}
    assert {("native", "onnxruntime-t2"), ("native", "litert-t2"), ("node", "wasmrt-simd"), ("node", "wasmrt-simd-t2"),
            ("node", "onnxruntime-web-t2")} <= set(rows)
    assert rows[("node", "wasmrt-simd-t2")]["info"]["threads"] == 2
    for r in rows.values():
        assert r["ok"], r
        threaded = r["info"].get("threads", 1) > 1
        assert ("pass_cpu_median_ms" in r) != threaded, r  # multi-threaded rows on the wall clock only
        # and theirs say how long their threads waited for a core (/proc), one value per timed run (natively and
        # in Node, where reading it disturbs no other thread)
        assert ("wait_median_ms" in r) == threaded, r
        if threaded:
            assert r["wait_of"] == "timed" and r["wait_runs"] == r["runs"], r
            assert r["wait_median_ms"] >= 0 and 0 <= r["waits_over_1ms"] <= r["runs"], r
    printed = capsys.readouterr().out
    assert "thread scaling" in printed and "node  wasmrt-simd: 1 thread" in printed and "2 threads" in printed
    assert "the threads of its process waited for a core" in printed and "a run (median), over 1 ms in" in printed
    # with several threads every run follows an idle pause, so the pools of the engine before have gone to sleep
    assert doc["settings"]["idle_gap_ms"] == 100 and any("idle pause of 100 ms" in n for n in doc["notes"])
    assert main(["bench", str(small_model), "--threads", "0,2"]) == 2
    assert main(["bench", str(small_model), "--threads", "1,2", "--idle-gap", "-1"]) == 2


def test_bench_profile_lists_every_op(tmp_path, small_model, capsys):
    _needs_node()
    code, doc = _bench(tmp_path, small_model, "--hosts", "native,node", "--variants", "simd", "--profile")
    assert code == 0
    prof = doc["profile"]["small"]
    ops, cols = prof["ops"], {c["id"]: c for c in prof["columns"]}
    assert len(ops) >= 10 and set(cols) == {"native", "node-simd"}, prof["errors"]
    for c in cols.values():  # in-graph times: one per op, summing to about the whole run
        assert len(c["ms"]) == len(ops) and all(t >= 0 for t in c["ms"])
        assert 0.5 * c["whole_ms"] <= sum(c["ms"]) <= 1.5 * c["whole_ms"] + 0.05
    convs = [k for k, o in enumerate(ops) if o["macs"] > 0]
    assert convs and all(cols["native"]["ms"][k] > 0 for k in convs)
    # Node's clock is its thread's CPU time less what one reading costs: an op of a few us may come out as 0
    assert sum(cols["node-simd"]["ms"][k] for k in convs) > 0
    assert all(ops[k]["kernel"]["native"] for k in convs)
    out = capsys.readouterr().out
    assert "by op type" in out and "by op kind" in out and "x nat" in out


def test_bench_profile_of_a_wrt_file(tmp_path, capsys):
    """A .wrt alone is enough: the profile reads the ops from the file, not from a source graph."""
    from test_engine import CASES

    from wasmrt.compile.converter import convert

    path = tmp_path / "dw.wrt"
    path.write_bytes(convert(CASES["dw3x3"](__import__("numpy").random.default_rng(0))[0]).data)
    code, doc = _bench(tmp_path, path, "--hosts", "native", "--profile")
    assert code == 0
    prof = doc["profile"]["dw"]
    assert [o["type"] for o in prof["ops"]] == ["CONV_2D"] and prof["ops"][0]["kernel"]["native"] == "dwconv 3x3"


@pytest.mark.slow
def test_bench_chromium(tmp_path, small_model):
    _needs_node()
    if shutil.which("chromium") is None:
        pytest.skip("Chromium is not installed")
    code, doc = _bench(tmp_path, small_model, "--hosts", "chromium", "--variants", "simd", "--peers")
    assert code == 0
    rows = {r["engine"]: r for r in doc["rows"]}
    assert {"wasmrt-simd", "onnxruntime-web", "tfjs-wasm", "litert.js"} <= set(rows)
    assert all(r["ok"] for r in rows.values())
    # the wall clock only: asking the driver for the renderer's CPU time idled the page just before each run
    assert all("cpu_median_ms" not in r and len(r["pass_median_ms"]) == 3 for r in rows.values()), rows
    assert doc["hosts"]["chromium"]["crossOriginIsolated"] is True


@pytest.mark.slow
def test_bench_chromium_threads_leave_the_timed_runs_alone(tmp_path, small_model, capsys):
    """In Chromium the waits for a core are read through the driver, around the warm-up runs only (the browser and
    the driver work on after each call, on the cores that a run on several threads needs), and the scaling table
    says so."""
    _needs_node()
    if shutil.which("chromium") is None:
        pytest.skip("Chromium is not installed")
    code, doc = _bench(tmp_path, small_model, "--hosts", "chromium", "--variants", "simd", "--threads", "1,2",
                       "--warmup", "2", "--idle-gap", "0")
    assert code == 0, capsys.readouterr().out
    rows = {r["engine"]: r for r in doc["rows"]}
    threaded = rows["wasmrt-simd-t2"]
    assert threaded["ok"] and threaded["info"]["threads"] == 2, threaded
    assert threaded["wait_of"] == "warmup" and threaded["wait_runs"] == 2 * 3 and threaded["runs"] == 3, threaded
    assert "wait_median_ms" not in rows["wasmrt-simd"]
    assert "over 1 ms in" in capsys.readouterr().out.split("thread scaling")[1].split("warm-up runs")[0]


def test_bench_warm_runs_come_before_each_timed_run(tmp_path, small_model, monkeypatch, capsys):
    """--warm-runs K: K untimed runs of the engine between the idle pause and each of its timed runs."""
    from wasmrt.engines.native import NativeModel

    calls: list[float] = []
    real = NativeModel._run

    def counted(self, arrays):
        calls.append(time.perf_counter())
        return real(self, arrays)

    monkeypatch.setattr(NativeModel, "_run", counted)
    code, doc = _bench(tmp_path, small_model, "--hosts", "native", "--passes", "1", "--rounds", "3",
                       "--warm-runs", "2", "--idle-gap", "30")
    assert code == 0, capsys.readouterr().out
    assert doc["settings"]["warm_runs"] == 2 and any("2 untimed run(s)" in n for n in doc["notes"])
    assert len(calls) == 1 + 3 * (1 + 2)  # the first run (its outputs are checked), then 3 rounds of 2 + 1
    gaps = [b - a for a, b in itertools.pairwise(calls)]
    assert sum(g > 0.025 for g in gaps) == 3  # one idle pause before each round's first warm run, none in between


def test_bench_rejects_unknown_host(tmp_path, small_model, capsys):
    assert main(["bench", str(small_model), "--hosts", "native,safari"]) == 2
    assert "unknown host 'safari'" in capsys.readouterr().err


def test_bench_feeds_integer_inputs_as_integers(tmp_path):
    """Token ids (int64) reach every engine as integers, valid ones (0 or 1), and the outputs agree."""
    import numpy as np

    from wasmrt.compile.converter import convert
    from wasmrt.compile.ir import Graph

    _needs_node()
    g = Graph()
    ids = g.add_input("ids", (2, 8), np.int64)
    table = g.add_const("table", np.random.default_rng(0).uniform(-1, 1, (5, 4)).astype(np.float32))
    (y,) = g.add_node("GATHER", [table, ids], {"axis": 0}, name="embed", outputs=["y"])
    g.outputs.append(y)
    path = tmp_path / "embed.wrt"
    path.write_bytes(convert(g).data)
    code, doc = _bench(tmp_path, path, "--hosts", "native,node", "--variants", "simd", "--profile")
    assert code == 0
    assert len(doc["rows"]) == 2 and all(r["ok"] and r["max_rel_err"] == 0 for r in doc["rows"]), doc["rows"]


def test_bench_int8_rows_with_peers(tmp_path, small_model, capsys):
    """--int8: the model quantized, run interleaved with the float one; ours bit for bit python_ref's int8 run, the
    peers on their own tools' int8 files (AI Edge Quantizer TFLite, onnxruntime QDQ) within the looser bound."""
    _needs_node()
    code, doc = _bench(tmp_path, small_model, "--hosts", "native,node", "--variants", "relaxed", "--peers", "--int8")
    assert code == 0, capsys.readouterr().out
    q = doc["models"]["small int8"]
    assert q["made_by"]["tflite"].startswith("AI Edge Quantizer") and q["made_by"]["onnx"].startswith("onnxruntime")
    rows = {(r["model"], r["host"], r["engine"]): r for r in doc["rows"]}
    want = {("node", "wasmrt-relaxed"), ("native", "litert"), ("native", "onnxruntime"), ("node", "onnxruntime-web"),
            ("node", "litert.js")}
    assert {("small int8", h, e) for h, e in want} <= set(rows)
    assert not any(m == "small int8" and e.startswith("tfjs") for m, _, e in rows)  # TF.js has no int8
    for (model, _, _), r in rows.items():
        assert "error" not in r and r["ok"], r
        if model == "small int8":
            assert r["max_rel_err"] == 0.0 if r["ours"] else r["tolerance"] == 0.25, r
            assert r["runs"] == 3  # interleaved with the float engines: the same passes
    printed = capsys.readouterr().out
    assert "int8 speed-up over the same engine's float32" in printed
    assert "small                native    litert" in printed


def test_a_cpu_clock_that_saw_a_run_take_no_time_is_left_out():
    """A host whose CPU clock watched the wrong thread gives 0 ms per run: the row falls back to the wall clock, with
    no CPU median and no ratios on it, rather than 0.00 ms and NaN ratios."""
    out = np.zeros(4, np.float32)
    results = {eid: {"outputs": [out], "times_ms": [2.0, 2.1, 2.2, 2.3], "cpu_ms": cpu, "passes": 2}
               for eid, cpu in (("wasmrt-relaxed", [0, 0, 0, 0]), ("litert.js", [2.0, 2.0, 2.1, 2.1]))}
    rows = rows_for("m", 1000, "chromium", results, ["y"], {"y": out})
    by = {r["engine"]: r for r in rows}
    assert "cpu_median_ms" not in by["wasmrt-relaxed"] and by["litert.js"]["pass_cpu_median_ms"] == [2.0, 2.1]
    line = next(s for s in pass_ratios(rows).splitlines() if "wasmrt-relaxed / litert.js" in s)
    assert line.split(":  ")[1].startswith("-  |") and "nan" not in line, line


def test_each_native_pass_creates_its_engines_starting_with_another():
    """The engine created first in a process runs slower than its twins (bench README): pass p starts creating at
    engine p, returns the engines in report order, and an engine that cannot be created leaves None and a note."""
    from wasmrt.bench.native import Engine, make_engines

    created: list[str] = []

    def maker(name: str):
        def create() -> Engine:
            if name == "broken":
                raise RuntimeError("no such runtime")
            created.append(name)
            return Engine(name, list, {})
        return name, create

    makers = [maker(n) for n in ("ours", "litert", "broken", "onnxruntime")]
    for p, first in ((0, "ours"), (1, "litert"), (3, "onnxruntime"), (5, "litert")):
        created.clear()
        notes: list[str] = []
        made = make_engines(makers, notes, p)
        assert created[0] == first and sorted(created) == ["litert", "onnxruntime", "ours"]
        assert [e.id if e else None for e in made] == ["ours", "litert", None, "onnxruntime"]
        assert notes == ["broken: no such runtime"]


def test_bench_baseline_conv_rows(tmp_path, small_model, capsys):
    """--baseline-conv: this build with the convolutions forced, interleaved as the @baseline rows, with ratios."""
    _needs_node()
    code, doc = _bench(tmp_path, small_model, "--hosts", "native,node", "--variants", "relaxed", "--passes", "1",
                       "--baseline-conv", "igemm")
    assert code == 0, capsys.readouterr().out
    assert doc["settings"]["baseline_conv"] == "igemm"
    base = {r["host"]: r for r in doc["rows"] if r["engine"].endswith("@baseline")}
    assert set(base) == {"native", "node"} and all(r["ok"] for r in base.values()), base
    assert base["native"]["info"]["conv"] == "igemm"
    printed = capsys.readouterr().out
    assert "node  wasmrt-relaxed / wasmrt-relaxed@baseline:" in printed
    assert "forced to igemm" in printed
    assert main(["bench", str(small_model), "--baseline", str(tmp_path), "--baseline-conv", "igemm"]) == 2
    assert "give one" in capsys.readouterr().err


def _baseline_checkout(root, binding):
    """A folder laid out as a built checkout (bench --baseline DIR): this build's modules and native library, and
    `binding` as its JS binding folder."""
    (root / "wasmrt" / "engines").mkdir(parents=True)
    (root / "wasmrt" / "engines" / "dist").symlink_to(paths.wasm_dir())
    (root / "build" / "native").mkdir(parents=True)
    (root / "build" / "native" / "libwasmrt.so").symlink_to(build.build_native().path)
    (root / "js_bindings").symlink_to(binding)
    return root


def test_bench_baseline_checkout(tmp_path, small_model, capsys):
    """--baseline DIR: DIR's own JS binding runs DIR's modules (an older binding with its modules), its native
    library natively, interleaved as the @baseline rows with ratios."""
    _needs_node()
    base = _baseline_checkout(tmp_path / "base", paths.js_bindings())
    code, doc = _bench(tmp_path, small_model, "--hosts", "native,node", "--variants", "relaxed", "--passes", "1",
                       "--baseline", str(base))
    assert code == 0, capsys.readouterr().out
    rows = {(r["host"], r["engine"]): r for r in doc["rows"]}
    assert rows[("node", "wasmrt-relaxed@baseline")]["ok"], rows
    assert any(h == "native" and e.endswith("@baseline") and r["ok"] for (h, e), r in rows.items()), rows
    assert "node  wasmrt-relaxed / wasmrt-relaxed@baseline:" in capsys.readouterr().out
    # the baseline's binding, not this one: a binding whose init throws makes only the @baseline row fail
    fake = tmp_path / "fake_js"
    (fake / "src").mkdir(parents=True)
    (fake / "src" / "index.js").write_text('export async function init() { throw new Error("baseline binding"); }\n')
    code, doc = _bench(tmp_path, small_model, "--hosts", "node", "--variants", "relaxed", "--passes", "1",
                       "--baseline", str(_baseline_checkout(tmp_path / "fake", fake)))
    assert code == 0
    rows = {r["engine"]: r for r in doc["rows"]}
    assert "baseline binding" in rows["wasmrt-relaxed@baseline"]["error"] and rows["wasmrt-relaxed"]["ok"], rows
    assert main(["bench", str(small_model), "--baseline", str(tmp_path / "fake_js")]) == 2
    assert "wasmrt build --only wasm" in capsys.readouterr().err
