"""Hostile models (tests/hostile_models.py: constants where activations belong, empty tensors with huge dimensions,
shared tables, plans beyond the budgets) on every engine: each loads and runs equal to python_ref, or is refused
with the error its case names, natively, in wasm, under AddressSanitizer + UBSan, quickly and within its memory
budget. Also: resource limits from Python, Python engines shared across threads, traps as errors, argument errors."""

from __future__ import annotations

import re
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from hostile_models import Case, all_cases, feeds_for

from python_ref import Interpreter
from python_ref.wrt_file import read_wrt
from wasmrt.dev import build
from wasmrt.engines import load
from wasmrt.engines.wasm import WasmInstance
from wasmrt.errors import InputError, ModelFormatError, OutOfMemoryError, ResourceLimitError, WasmrtError

ROOT = Path(__file__).resolve().parents[1]
CASES = all_cases()
RTOL, ATOL = 2e-5, 2e-6  # the engine's per-op tolerance (kernels_wasm/engine/README.md)


def verdict(case: Case, engine: str) -> str:
    """'ok' when it loads and runs equal to python_ref; otherwise the error message."""
    try:
        m = load(case.data, engine)
    except WasmrtError as e:
        return str(e)
    with m:
        feeds = feeds_for(m.inputs)
        got = m.run(feeds)
        assert m.memory_size < 64 << 20, f"{case.name}: claimed {m.memory_size} bytes"
    ref = Interpreter(case.data).run(feeds)
    for k, v in ref.items():
        scale = float(np.abs(v).max()) if v.size else 0.0
        np.testing.assert_allclose(got[k], v, rtol=0, atol=RTOL * scale + ATOL, err_msg=f"{case.name}: {k}")
    return "ok"


@pytest.mark.parametrize("engine", ["native", "wasm"])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_model(case: Case, engine: str) -> None:
    t0 = time.perf_counter()
    got = verdict(case, engine)
    assert time.perf_counter() - t0 < 10, f"{case.name} took {time.perf_counter() - t0:.1f} s (a hang)"
    if case.expect == "ok":
        assert got == "ok", f"{case.name}: {got}"
    else:
        assert re.search(case.expect, got), f"{case.name}: {got!r} does not match {case.expect!r}"
    if case.python_rejects:  # the same rule, the same words, in python_ref's reader
        with pytest.raises(ModelFormatError) as e:
            read_wrt(case.data)
        assert str(e.value) == got


def test_hostile_models_under_asan(tmp_path: Path) -> None:
    """Every case through the ASan + UBSan driver: no report, and the verdict of the native engine."""
    try:
        driver = build.build_asan_driver().path
    except WasmrtError as e:
        pytest.skip(str(e))
    paths = []
    for c in CASES:
        p = tmp_path / f"{c.name}.wrt"
        p.write_bytes(c.data)
        paths.append(str(p))
    r = subprocess.run([str(driver), "check", *paths], capture_output=True, text=True, timeout=300,
                       env={"ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0", "PATH": "/usr/bin:/bin"})
    assert "AddressSanitizer" not in r.stderr and "runtime error" not in r.stderr, r.stderr[-4000:]
    assert r.returncode == 0, r.stderr[-2000:]
    for c, line in zip(CASES, r.stdout.splitlines(), strict=True):
        code, msg = line.split("\t", 1)
        if c.expect == "ok":
            assert code == "0", f"{c.name}: {msg}"
        else:
            assert re.search(c.expect, msg), f"{c.name}: {msg!r}"


# -- resource limits from Python ----------------------------------------------------------------------------------


def real_model() -> bytes:
    return (ROOT / "models" / "face_detector.wrt").read_bytes()


@pytest.mark.parametrize("engine", ["native", "wasm"])
def test_limits_refuse_and_admit(engine: str) -> None:
    data = real_model()
    m = load(data, engine)
    need, work = m.memory_size, m.work if engine == "native" else None
    m.release()
    with pytest.raises(OutOfMemoryError, match=rf"beyond its memory limit of {need // 2} bytes \(max_memory\)"):
        load(data, engine, max_memory=need // 2)
    load(data, engine, max_memory=need).release()
    with pytest.raises(ResourceLimitError, match=r"beyond the model's work limit of 1000000 \(max_work\)"):
        load(data, engine, max_work=1e6)
    if work:
        load(data, engine, max_work=work).release()
    with pytest.raises(ValueError, match="max_memory must be a positive number"):
        load(data, engine, max_memory=-1)


def test_arena_of_2gib_is_refused_by_the_budget() -> None:
    case = next(c for c in CASES if c.name == "arena_2gib")
    with pytest.raises(OutOfMemoryError, match=r"arena 2147483648.*beyond its memory limit"):
        load(case.data, "native")


# -- threads ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ["native", "wasm"])
def test_one_model_shared_by_four_threads(engine: str) -> None:
    """Runs from four threads serialise on the model: every result equals the single-thread one."""
    m = load(real_model(), engine)
    rng = np.random.default_rng(1)
    inputs = [{s.name: rng.uniform(-1, 1, s.shape).astype(s.dtype) for s in m.inputs} for _ in range(6)]
    expected = [m.run(f) for f in inputs]
    wrong: list[str] = []

    def worker(t: int) -> None:
        for k in range(6):
            i = (t + k) % len(inputs)
            out = m.run(inputs[i])
            if any(not np.array_equal(out[n], expected[i][n]) for n in out):
                wrong.append(f"thread {t} run {k}")

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    m.release()
    assert not wrong, wrong


@pytest.mark.parametrize("engine", ["native", "wasm"])
def test_release_during_run_waits(engine: str) -> None:
    m = load((ROOT / "models" / "selfie_segmentation.wrt").read_bytes(), engine)
    feeds = feeds_for(m.inputs)
    errors: list[BaseException] = []
    runs = [0]

    def runner() -> None:
        try:
            while True:
                m.run(feeds)
                runs[0] += 1
        except WasmrtError as e:  # after release: a clean error
            errors.append(e)

    th = threading.Thread(target=runner)
    th.start()
    while runs[0] < 2:
        time.sleep(0.001)
    m.release()
    th.join(timeout=60)
    assert not th.is_alive()
    assert len(errors) == 1 and "released" in str(errors[0]), errors


# -- traps and argument errors --------------------------------------------------------------------------------------


def test_wasm_trap_becomes_an_error_and_stops_the_instance() -> None:
    inst = WasmInstance("simd")
    with pytest.raises(WasmrtError, match=r"the engine crashed in wrt_run: .*out of bounds"):
        inst.call("wrt_run", 0x7FFFFFF0)  # not a model: reads outside linear memory
    with pytest.raises(WasmrtError, match=r"stopped after a crash"):
        inst.call("wrt_num_inputs", 0)


def test_argument_errors_are_clear() -> None:
    with pytest.raises(TypeError, match=r"expected a path \(str or Path\) or the model's bytes, got int"):
        load(5)  # type: ignore[arg-type]
    m = load(real_model(), "native")
    x = np.zeros(m.inputs[0].shape, np.float32)
    by_name = m.run({m.inputs[0].name: x})
    for form in ([x], (x,), x):  # a list in input order, or one array for a one-input model
        out = m.run(form)
        assert all(np.array_equal(out[k], by_name[k]) for k in out)
    with pytest.raises(InputError, match=r"run\(\) got 2 arrays, the model has 1 inputs"):
        m.run([x, x])
    with pytest.raises(InputError, match=r"run\(\) takes \{input name: array\}"):
        m.run("image.png")  # type: ignore[arg-type]
    m.release()
    with pytest.raises(WasmrtError, match="released"):
        m.run([x])
