"""Per-layer algorithm choice: each op's candidates, forced per op at load, the rules (default), the deterministic
choice, the measuring procedure's decision (kernels_wasm/engine/choice.c) fed forced times, and the cache of measured
choices (hostile entries ignored). No test depends on how fast anything runs."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from test_qsparse import graph as int8_sparse_graph
from test_sparse import block_sparse
from test_winograd import RULES, expected_kernel, kernels_of, rule_target

from python_ref import Interpreter
from python_ref.wrt_file import DIGEST_PREFIX, stored_digest
from wasmrt.compile.converter import convert
from wasmrt.compile.ir import Graph
from wasmrt.engines import choose, load

WINO = ["igemm", "winograd F(2x2,3x3)", "winograd F(4x4,3x3)"]
TOL = 2e-4  # Winograd F(4x4)'s written tolerance is below this (python_ref/winograd.py), relative to max|ref|


def mixed_graph(pointwise: bool = True) -> Graph:
    """x [1,10,10,16] -> 3x3 (16->32) -> 3x3 (32->32) -> 3x3 stride 2 -> 1x1 block-sparse (32->24): three ops with
    candidates (Winograd or igemm; sparse or dense), one without (pointwise=False: without the last op)."""
    rng = np.random.default_rng(7)
    g = Graph()
    x = g.add_input("x", (1, 10, 10, 16))
    specs = [("c1", (32, 3, 3, 16), {"pads": (1, 1, 1, 1)}), ("c2", (32, 3, 3, 32), {"pads": (1, 1, 1, 1)}),
             ("s2", (32, 3, 3, 32), {"pads": (1, 1, 1, 1), "strides": (2, 2)})]
    for name, shape, attrs in specs:
        w = g.add_const(f"{name}/w", (rng.standard_normal(shape) * 0.2).astype(np.float32))
        b = g.add_const(f"{name}/b", rng.uniform(-0.5, 0.5, shape[0]).astype(np.float32))
        (x,) = g.add_node("CONV_2D", [x, w, b], {**attrs, "act_min": 0.0}, name=name,
                          outputs=["y"] if name == "s2" and not pointwise else None)
    if not pointwise:
        g.outputs.append(x)
        return g
    w = g.add_const("pw/w", block_sparse(rng, (24, 1, 1, 32), 0.8))
    (y,) = g.add_node("CONV_2D", [x, w], {}, name="pw", outputs=["y"])
    g.outputs.append(y)
    return g


def mixed_model() -> tuple[bytes, dict[str, np.ndarray]]:
    feeds = {"x": np.random.default_rng(8).standard_normal((1, 10, 10, 16)).astype(np.float32)}
    return convert(mixed_graph()).data, feeds


@pytest.fixture(scope="module")
def mixed() -> tuple[bytes, dict[str, np.ndarray], np.ndarray]:
    data, feeds = mixed_model()
    return data, feeds, Interpreter(data).run(feeds)["y"]


def candidates(model) -> dict[str, tuple[list[str], int]]:
    return {r["name"]: (r["candidates"], r["chosen"]) for r in model.plan() if r["candidates"]}


@pytest.fixture(autouse=True)
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("WASMRT_CACHE_DIR", str(tmp_path))
    return tmp_path


@pytest.mark.parametrize("engine", ["native", "wasm"])
def test_candidates_are_listed_and_the_rules_are_the_default(engine: str, mixed) -> None:
    data, _, _ = mixed
    m = load(data, engine)
    assert m.choice_source == "rules"
    got = candidates(m)
    assert set(got) == {"c1", "c2", "pw"}  # the stride-2 conv has igemm only: no choice
    assert got["c1"][0] == WINO and got["c2"][0] == WINO and got["pw"][0] == ["dense", "sparse"]
    # the rules: Winograd per the target's measured table (test_winograd), sparse at 80% block sparsity
    rule = RULES[rule_target(kernels_of(data, "auto", engine)[0])]
    want = [WINO.index(expected_kernel(rule, 10, 10, c, 32)) for c in (16, 32)]
    assert [got["c1"][1], got["c2"][1]] == want and got["pw"][1] == 1
    plan = m.plan()
    assert [r["op"] for r in plan] == list(range(len(plan))) and plan[2]["candidates"] == [] and plan[2]["chosen"] == -1


@pytest.mark.parametrize("engine", ["native", "wasm"])
def test_each_forced_candidate_runs_and_agrees_with_python_ref(engine: str, mixed) -> None:
    from wasmrt.engines.native import NativeModel
    from wasmrt.engines.wasm import WasmModel

    data, feeds, ref = mixed
    make = NativeModel if engine == "native" else WasmModel
    kernels = set()
    for force in range(3):
        m = make(data, force=force)
        got = candidates(m)
        assert got["c1"][1] == force and got["c2"][1] == force
        assert got["pw"][1] == (force if force < 2 else got["pw"][1])  # pw has no index 2: its rules
        kernels |= {r["kernel"] for r in m.plan()}
        err = np.abs(m.run(feeds)["y"] - ref).max()
        assert err <= TOL * np.abs(ref).max(), (force, err)
    m = make(data, choices=[1, 0, -1, 0])  # per op: F(2x2), igemm, the rules (no choice), dense
    assert candidates(m) == {"c1": (WINO, 1), "c2": (WINO, 0), "pw": (["dense", "sparse"], 0)}
    assert len(kernels) >= 4  # igemm, two Winograd kernels, sparse and dense paths were really taken


def test_forced_indices_beyond_the_candidates_leave_the_rules(mixed) -> None:
    from wasmrt.engines.native import NativeModel

    data, _, _ = mixed
    rules = candidates(NativeModel(data))
    assert candidates(NativeModel(data, choices=[7, -5, 3, 2])) == rules
    assert candidates(NativeModel(data, force=9)) == rules


@pytest.mark.parametrize("engine", ["native", "wasm"])
def test_deterministic_is_the_dense_path_with_the_same_bytes_for_any_thread_count(engine: str, mixed) -> None:
    data, feeds, _ = mixed
    outs = []
    for threads in (1, 2, 3):
        m = load(data, engine, variant="simd" if engine == "wasm" else None, threads=threads, choose="deterministic")
        assert m.choice_source == "deterministic"
        assert {k: v[1] for k, v in candidates(m).items()} == {"c1": 0, "c2": 0, "pw": 0}
        outs += [m.run(feeds)["y"], m.run(feeds)["y"]]
    for y in outs[1:]:
        assert y.tobytes() == outs[0].tobytes()


@pytest.mark.parametrize("engine", ["native", "wasm"])
def test_int8_block_sparse_weights_offer_dense_and_sparse(engine: str) -> None:
    data, feeds = int8_sparse_graph("conv3x3_same", density=0.25)
    ref = Interpreter(data).run(feeds)["y"]
    for choose_mode, want in (("deterministic", 0), ("rules", None)):
        m = load(data, engine, choose=choose_mode)
        (row,) = [r for r in m.plan() if r["candidates"]]
        assert row["candidates"] == ["igemm", "sparse"]
        assert want is None or row["chosen"] == want
        np.testing.assert_array_equal(m.run(feeds)["y"], ref)  # int8: bit-exact whichever kernel runs


# -- the measuring procedure's decision (C) -------------------------------------------------------------------------
@pytest.fixture
def tuner(mixed):
    return load(mixed[0], "native")


def test_pick_takes_the_lowest_median_and_keeps_the_rules_within_the_margin(tuner) -> None:
    t = tuner.tune
    passes, warm, budget, margin, most = (int(t("wrt_tune_param", j)) for j in range(5))
    assert passes >= 3 and warm >= 1 and budget > 0 and 0 < margin < 10 and most == choose.MAX_CANDIDATES
    assert t("wrt_tune_param", 5) == -1
    t("wrt_tune_begin", 4)
    for ms in (5.0, 1.0, 1.1, 50.0, 1.2):  # median 1.2 despite an outlier
        t("wrt_tune_time", 0, 2, ms)
    for ms in (2.0, 2.1, 1.9):
        t("wrt_tune_time", 0, 0, ms)
    assert t("wrt_tune_median", 0, 2) == pytest.approx(1.2) and t("wrt_tune_median", 0, 1) == -1
    assert t("wrt_tune_pick", 0, 0) == 2  # much faster than the rules' igemm
    t("wrt_tune_time", 1, 0, 1.0)
    t("wrt_tune_time", 1, 1, 1.0 * (1 - margin / 200))  # faster, but within the margin
    assert t("wrt_tune_pick", 1, 0) == 0 and t("wrt_tune_pick", 1, 1) == 1
    assert t("wrt_tune_pick", 2, 1) == 1  # nothing timed: the rules
    for bad in ((-1, 0, 1.0), (4, 0, 1.0), (0, 4, 1.0), (0, -1, 1.0), (3, 0, float("nan")), (3, 0, -1.0)):
        t("wrt_tune_time", *bad)  # ignored, never written out of bounds
    assert t("wrt_tune_pick", 3, 1) == 1 and t("wrt_tune_median", 9, 0) == -1
    assert t("wrt_tune_begin", 0) == 0 and t("wrt_tune_median", 0, 2) == -1  # forgotten


class FakeClock:
    """Each op timing costs what `speed` says for the candidate index the running model forced (the rules: -1)."""

    def __init__(self, speed: dict[int, float]) -> None:
        self.speed, self.k, self.t = speed, -1, 0.0

    def __call__(self) -> float:
        self.t += self.speed[self.k] / 1e3  # seconds: a timing spans one reading
        return self.t


def test_measure_picks_what_the_times_say_and_loads_it(mixed, monkeypatch: pytest.MonkeyPatch) -> None:
    from wasmrt.engines.native import NativeModel

    data, feeds, ref = mixed
    clock = FakeClock({-1: 3.0, 0: 3.0, 1: 1.0, 2: 2.0})  # index 1 (F(2x2); sparse for pw) fastest everywhere

    def loader(choices, force):
        clock.k = force
        return NativeModel(data, choices=choices, force=force)

    m = choose.measure(loader, clock)
    assert m.choice_source == "measured"
    assert {k: v[1] for k, v in candidates(m).items()} == {"c1": 1, "c2": 1, "pw": 1}
    times = {r["name"]: r["times_ms"] for r in m.plan() if r["candidates"]}
    assert times["c1"] == pytest.approx([3.0, 1.0, 2.0]) and times["pw"] == pytest.approx([3.0, 1.0])
    assert np.abs(m.run(feeds)["y"] - ref).max() <= TOL * np.abs(ref).max()


def test_measured_choices_are_cached_and_reused_without_measuring(mixed, cache_dir: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    data, _, _ = mixed
    m = load(data, "native", choose="measure")
    assert m.choice_source == "measured"
    (entry,) = (cache_dir / "choices").glob("*.json")
    first = candidates(m)

    def no_measure(load):
        raise AssertionError("measured although cached")

    monkeypatch.setattr(choose, "measure", no_measure)
    again = load(data, "native", choose="measure")
    assert again.choice_source == "cache" and candidates(again) == first
    assert again.choice_times == m.choice_times
    assert json.loads(entry.read_text())["choices"][0] == first["c1"][1]


def test_the_key_names_model_engine_device_and_threads() -> None:
    keys = {choose.cache_key("a", "native x", 1), choose.cache_key("b", "native x", 1),
            choose.cache_key("a", "wasm x", 1), choose.cache_key("a", "native x", 2)}
    assert len(keys) == 4


def without_digest(data: bytes) -> bytes:
    """The file as an older writer wrote it: the digest's hex digits left as zeros."""
    digest = stored_digest(data)
    assert digest is not None
    return data.replace(digest.encode(), DIGEST_PREFIX.encode() + b"0" * 64)


def test_the_writer_stores_the_digest_of_the_file_with_its_digits_as_zeros(mixed) -> None:
    data = mixed[0]
    digest = stored_digest(data)
    assert digest is not None and digest.startswith(DIGEST_PREFIX)
    assert hashlib.sha256(without_digest(data)).hexdigest() == digest[len(DIGEST_PREFIX):]
    assert stored_digest(without_digest(data)) is None and stored_digest(b"junk" * 4) is None
    assert convert(mixed_graph()).data == data  # the same content, the same digest


@pytest.mark.parametrize("engine", ["native", "wasm"])
def test_a_cached_choice_is_forced_at_the_one_load_without_hashing_the_file(engine: str, mixed, cache_dir: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    data, feeds, ref = mixed
    load(data, engine, choose="measure")
    (path,) = (cache_dir / "choices").glob("*.json")
    entry = json.loads(path.read_text())
    rules = candidates(load(data, engine))
    entry["choices"][0] = 2 if rules["c1"][1] != 2 else 0  # a choice the rules would not make: no second load hides
    path.write_text(json.dumps(entry))
    cls = type(load(data, engine))
    loads = []
    real_init = cls.__init__

    def counting_init(self, *args, **kwargs):
        loads.append(kwargs.get("choices"))
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(cls, "__init__", counting_init)
    real_sha256 = hashlib.sha256

    def sha256(b: bytes = b"", **kw):
        if data in bytes(b):
            pytest.fail("hashed the file for the key")
        return real_sha256(b, **kw)

    monkeypatch.setattr(choose.hashlib, "sha256", sha256)
    m = load(data, engine, choose="measure")
    assert m.choice_source == "cache" and len(loads) == 1
    assert candidates(m)["c1"][1] == entry["choices"][0]
    assert np.abs(m.run(feeds)["y"] - ref).max() <= TOL * np.abs(ref).max()


def test_a_file_claiming_another_files_digest_is_measured_again(mixed, cache_dir: Path) -> None:
    """The digest is the writer's word, not checked at load: an entry it finds counts only if it fits the model."""
    data, _, _ = mixed
    load(data, "native", choose="measure")
    (path,) = (cache_dir / "choices").glob("*.json")
    g = mixed_graph(pointwise=False)  # one op with candidates fewer
    other = convert(g).data
    impostor = other.replace(stored_digest(other).encode(), stored_digest(data).encode())
    assert stored_digest(impostor) == stored_digest(data)
    m = load(impostor, "native", choose="measure")
    assert m.choice_source == "measured"
    assert json.loads(path.read_text())["counts"] == [len(r["candidates"]) for r in m.plan()]
    want = Interpreter(other).run({"x": mixed[1]["x"]})
    got = m.run({"x": mixed[1]["x"]})
    for k, v in want.items():
        assert np.abs(got[k] - v).max() <= TOL * np.abs(v).max()


def test_a_file_without_the_digest_is_hashed_and_cached_as_before(mixed, cache_dir: Path) -> None:
    data, feeds, ref = mixed
    old = without_digest(data)
    assert load(old, "wasm", choose="measure").choice_source == "measured"
    again = load(old, "wasm", choose="measure")
    assert again.choice_source == "cache"
    assert np.abs(again.run(feeds)["y"] - ref).max() <= TOL * np.abs(ref).max()


HOSTILE = {
    "not json": "{\"version\": 1, \"choices\": [",
    "not an object": "[1, 2, 3]",
    "wrong version": None,
    "wrong op count": None,
    "index out of range": None,
    "index on an op without candidates": None,
    "wrong types": None,
    "times of the wrong shape": None,
    "nested too deep": "[" * 100000 + "]" * 100000,
    "huge": None,
}


def hostile_entry(kind: str, good: dict) -> str:
    e = json.loads(json.dumps(good))
    if HOSTILE[kind] is not None:
        return HOSTILE[kind]
    if kind == "wrong version":
        e["version"] = 2
    elif kind == "wrong op count":
        e["choices"], e["counts"] = e["choices"][:-1], e["counts"][:-1]
    elif kind == "index out of range":
        e["choices"][0] = 3
    elif kind == "index on an op without candidates":
        e["choices"][2] = 0
    elif kind == "wrong types":
        e["choices"][0] = "1"
    elif kind == "times of the wrong shape":
        e["times"]["0"] = [1.0]
    elif kind == "huge":
        e["pad"] = "x" * (choose.MAX_CACHE_BYTES + 1)
    return json.dumps(e)


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_hostile_cache_entries_are_ignored_and_measured_again(kind: str, mixed, cache_dir: Path) -> None:
    data, feeds, ref = mixed
    load(data, "native", choose="measure")
    (path,) = (cache_dir / "choices").glob("*.json")
    good = json.loads(path.read_text())
    path.write_text(hostile_entry(kind, good))
    m = load(data, "native", choose="measure")
    assert m.choice_source == "measured", kind
    assert choose.read_cache(path) is not None  # rewritten with a good entry
    assert np.abs(m.run(feeds)["y"] - ref).max() <= TOL * np.abs(ref).max()


def test_a_fitting_entry_of_another_model_is_not_taken(mixed, cache_dir: Path) -> None:
    """An entry of the right shape whose op count or candidates differ from the loaded model's is measured again."""
    data, _, _ = mixed
    load(data, "native", choose="measure")
    (path,) = (cache_dir / "choices").glob("*.json")
    good = json.loads(path.read_text())
    good["counts"][2], good["choices"][2] = 2, 1  # the stride-2 op has no candidates in the loaded model
    path.write_text(json.dumps(good))
    assert choose.read_cache(path) is not None
    assert load(data, "native", choose="measure").choice_source == "measured"


def test_a_bad_mode_is_refused(mixed) -> None:
    with pytest.raises(ValueError, match="choose must be one of rules, measure, deterministic"):
        load(mixed[0], "native", choose="fastest")
    with pytest.raises(ValueError, match="choose applies to the C engine"):
        load(mixed[0], "ref", choose="measure")


def test_inspect_lists_the_choices(mixed, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from wasmrt.cli.main import main

    path = tmp_path / "mixed.wrt"
    path.write_bytes(mixed[0])
    assert main(["inspect", str(path), "--choices", "deterministic", "--engine", "native"]) == 0
    out = capsys.readouterr().out
    assert "algorithm choices (deterministic):" in out
    assert "c2 " in out and "*igemm, winograd F(2x2,3x3), winograd F(4x4,3x3)" in out and "*dense, sparse" in out


def test_a_model_without_alternatives_is_loaded_once_and_not_timed(cache_dir: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    g = Graph()
    x = g.add_input("x", (1, 6, 6, 4))
    w = g.add_const("w", np.ones((4, 3, 3, 4), np.float32))
    (y,) = g.add_node("CONV_2D", [x, w], {"strides": (2, 2)}, name="s2", outputs=["y"])
    g.outputs.append(y)
    data = convert(g).data
    monkeypatch.setattr(choose, "measure", lambda *a, **k: pytest.fail("measured a model without alternatives"))
    m = load(data, "native", choose="measure")
    assert m.choice_source == "measured"
    (entry,) = cache_dir.glob("**/*.json")  # it says there is nothing to choose: the next load asks no op
    assert json.loads(entry.read_text())["counts"] == [0]
    assert load(data, "native", choose="measure").choice_source == "cache"
    entry.unlink()
    monkeypatch.setattr(choose, "cache_key", lambda *a: pytest.fail("digested a model without alternatives"))
    m = load(without_digest(data), "native", choose="measure")  # an older file: not even hashed
    assert m.choice_source == "measured" and not list(cache_dir.glob("**/*.json"))


def test_chromium_caches_in_cache_storage_then_indexeddb(mixed, tmp_path: Path) -> None:
    """tests/js/choose_browser.mjs: measured once, then read from Cache Storage; a hostile entry there is measured
    again; with Cache Storage hidden, the same through IndexedDB."""
    import shutil
    import subprocess
    import sys

    sys.path.insert(0, str(Path(__file__).parent / "js"))
    import js_fixtures as support

    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    why = support.missing_prerequisites()
    if why or not Path(chromium).exists():
        pytest.skip(why or "Debian's chromium is not installed")
    model, out = tmp_path / "mixed.wrt", tmp_path / "result.json"
    model.write_bytes(mixed[0])
    r = subprocess.run([str(support.NODE22), str(support.ROOT / "tests" / "js" / "choose_browser.mjs"),
                        str(support.ROOT), str(model), str(out), chromium],
                       cwd=support.ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads(out.read_text())
    assert "error" not in res and not res["pageErrors"], res
    assert res["cacheStorage"] == ["measured", "cache", True, 3], res
    assert res["hostile"] == "measured"
    assert res["indexedDB"] == ["measured", "cache", True, 3], res
