"""Documentation: generated pages are up to date (docs/ops.md from tests/ops_reference.py, docs/bench/README.md
from tools/gen_bench_docs.py; tests/test_compatibility.py does the same for docs/models.md), a stale page fails
with the command that rewrites it; every relative link and #anchor of the Markdown files resolves; the README stays
short and starts with what a user needs."""

from __future__ import annotations

import difflib
import json
import os
import re
import shutil
import sys
from pathlib import Path
from types import ModuleType
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parent.parent


def check_or_update(path: Path, text: str, test: str = __file__) -> None:
    """Compare a generated page with the committed one; WASMRT_UPDATE_DOCS=1 writes it instead. test: the test
    file that generates it (for the message)."""
    if os.environ.get("WASMRT_UPDATE_DOCS"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return
    old = path.read_text() if path.is_file() else ""
    if old != text:
        diff = "".join(difflib.unified_diff(old.splitlines(True), text.splitlines(True), str(path), "generated", n=1))
        raise AssertionError(f"{path.relative_to(ROOT)} is stale; rewrite it with WASMRT_UPDATE_DOCS=1 "
                             f"pytest {Path(test).relative_to(ROOT)}:\n{diff[:6000]}")


def test_ops_reference_is_up_to_date() -> None:
    import ops_reference

    check_or_update(ROOT / "docs" / "ops.md", ops_reference.render())


def test_one_version_everywhere() -> None:
    """pyproject, the Python package, the npm package and its JS export, and the CHANGELOG's latest entry agree."""
    import json
    import re
    import tomllib

    import wasmrt

    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    js = re.search(r'export const version = "([^"]+)"', (ROOT / "js_bindings" / "src" / "index.js").read_text())
    changelog = re.search(r"^## (\S+)", (ROOT / "CHANGELOG.md").read_text(), re.M)
    found = {"wasmrt.__version__": wasmrt.__version__,
             "js_bindings/package.json": json.loads((ROOT / "js_bindings" / "package.json").read_text())["version"],
             "js_bindings/src/index.js": js and js.group(1), "CHANGELOG.md": changelog and changelog.group(1)}
    assert all(v == version for v in found.values()), (version, found)
    assert (ROOT / "LICENSE").read_text().strip().startswith("Apache License")


# -- the benchmark pages (tools/gen_bench_docs.py) ------------------------------------------------------------------

def _gen_bench_docs() -> ModuleType:
    """tools/gen_bench_docs.py, imported from the checkout."""
    sys.path.insert(0, str(ROOT))
    from tools import gen_bench_docs

    return gen_bench_docs


def test_bench_pages_are_up_to_date() -> None:
    gen = _gen_bench_docs()
    check_or_update(gen.BENCH / gen.OUT_NAME, gen.render())


def _bench_copy(tmp: Path) -> Path:
    bench = tmp / "bench"
    bench.mkdir()
    for f in (ROOT / "docs" / "bench").glob("*.json"):
        shutil.copyfile(f, bench / f.name)
    return bench


def test_bench_pages_follow_the_results(tmp_path: Path) -> None:
    """A changed figure changes the page (so the freshness check sees it), and a result file without a machine, or
    a machine's file that is gone, stops the generator."""
    gen = _gen_bench_docs()
    bench = _bench_copy(tmp_path)
    before = gen.render(bench)
    doc = json.loads((bench / "fp32-zen5.json").read_text())
    row = next(r for r in doc["rows"] if r["ours"] and r["host"] == "native")
    row["median_ms"] = 123.456
    (bench / "fp32-zen5.json").write_text(json.dumps(doc))
    after = gen.render(bench)
    assert after != before and "[123.46](fp32-zen5.json)" in after
    (bench / "extra-run.json").write_text(json.dumps({"rows": []}))
    with pytest.raises(ValueError, match=re.escape("extra-run.json: no machine")):
        gen.render(bench)
    (bench / "extra-run.json").unlink()
    (bench / "fp32-zen5.json").unlink()
    with pytest.raises(ValueError, match=re.escape("fp32-zen5.json: in machines.json but not in docs/bench")):
        gen.render(bench)


def test_bench_pages_link_every_figure() -> None:
    """Each table cell holding a figure is a link to the result file of its row."""
    text = (ROOT / "docs" / "bench" / "README.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| [") and ".json) |" in line]
    assert len(rows) > 200, len(rows)
    for line in rows:
        cells = [c.strip() for c in line.strip("|").split("|")]
        source = re.match(r"\[[^\]]+\]\(([^)]+\.json)\)", cells[0])
        assert source, line
        for cell in cells[1:]:
            for number in re.findall(r"(?<![\w.\-\[])\d+\.\d+(?:-\d+\.\d+)?(?![\w.])", re.sub(r"\[[^\]]*\]\([^)]*\)",
                                                                                             "", cell)):
                raise AssertionError(f"unlinked figure {number} in {line}")
            for target in re.findall(r"\]\(([^)#]+)\)", cell):
                assert target == source.group(1), (target, line)


# -- links and anchors ------------------------------------------------------------------------------------------------

DOC_FILES = ["README.md", "CHANGELOG.md", "js_bindings/README.md", "kernels_wasm/README.md", "python_ref/README.md"]
LINK = re.compile(r"!?\[((?:[^\]\[]|\[[^\]]*\])*)\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def doc_files() -> list[Path]:
    return [ROOT / f for f in DOC_FILES] + sorted((ROOT / "docs").rglob("*.md"))


def _prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks, inline code spans removed."""
    out, fenced = [], False
    for i, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            out.append((i, re.sub(r"`[^`]*`", "", line)))
    return out


def heading_slug(text: str) -> str:
    """GitHub's anchor for a heading: links reduced to their text, lower case, punctuation dropped except - and _,
    spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every anchor of a Markdown file's headings (a repeated heading gets -1, -2, ... as on GitHub)."""
    seen: dict[str, int] = {}
    out = set()
    fenced = False
    for line in path.read_text().splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        m = None if fenced else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            base = heading_slug(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    return out


def broken_links(files: list[Path], root: Path = ROOT) -> list[str]:
    """Each relative link of these Markdown files whose file (or heading, for #anchor) does not exist, as
    "file:line: target (why)"; web links are not followed."""
    problems = []
    for f in files:
        for line_no, line in _prose_lines(f.read_text()):
            for m in LINK.finditer(line):
                target = m.group(2)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:
                    continue
                path_part, _, anchor = target.partition("#")
                dest = (f.parent / unquote(path_part)).resolve() if path_part else f
                where = f"{f.relative_to(root)}:{line_no}: {target}"
                if not dest.is_relative_to(root.resolve()):
                    problems.append(f"{where} (outside the repository)")
                elif not dest.exists():
                    problems.append(f"{where} (no such file)")
                elif anchor and (dest.suffix != ".md" or anchor not in anchors(dest)):
                    problems.append(f"{where} (no heading #{anchor} in {dest.name})")
    return problems


def test_every_link_resolves() -> None:
    files = doc_files()
    assert len(files) >= 15, [str(f) for f in files]
    problems = broken_links(files)
    assert not problems, "broken links:\n" + "\n".join(problems)


def test_the_link_check_finds_broken_links(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text("# A guide\n\n## Two words\n")
    page = tmp_path / "README.md"
    page.write_text("[ok](docs/guide.md) [ok](docs/guide.md#two-words) [ok](#top-level) [web](https://x.org/y)\n"
                    "# Top level\n"
                    "[gone](docs/missing.md) and [bad anchor](docs/guide.md#three-words)\n"
                    "`[in code](nowhere.md)` [self](#nowhere) ![image](docs/pic.png)\n"
                    "```\n[in a block](nowhere.md)\n```\n[out](../../etc/passwd)\n")
    found = broken_links([page], tmp_path)
    assert found == ["README.md:3: docs/missing.md (no such file)",
                     "README.md:3: docs/guide.md#three-words (no heading #three-words in guide.md)",
                     "README.md:4: #nowhere (no heading #nowhere in README.md)",
                     "README.md:4: docs/pic.png (no such file)",
                     "README.md:8: ../../etc/passwd (outside the repository)"], found


def test_heading_anchors_follow_github() -> None:
    assert heading_slug("Versions and licence") == "versions-and-licence"
    assert heading_slug("`wasmrt bench`: native vs wasm, against the peers") == \
        "wasmrt-bench-native-vs-wasm-against-the-peers"
    assert heading_slug("int8 (QS8) kernels") == "int8-qs8-kernels"
    assert heading_slug("Threads, and [hosting](hosting.md)") == "threads-and-hosting"


# -- the README ------------------------------------------------------------------------------------------------------

README_MAX_LINES = 200


def readme_problems(text: str) -> list[str]:
    """What the README must keep: at most README_MAX_LINES lines; its first screen says how to install and shows a
    Python and a JS example; "Adding an op" lists at most 6 files, each an existing file."""
    lines = text.splitlines()
    problems = [f"{len(lines)} lines, more than {README_MAX_LINES}"] if len(lines) > README_MAX_LINES else []
    first = "\n".join(lines[:90])
    for what, needle in (("pip install", "pip install"), ("npm install", "npm install"),
                         ("a Python example", "```python"), ("a JS example", "```js")):
        if needle not in first:
            problems.append(f"no {what} in the first 90 lines")
    section = re.search(r"^## Adding an op\n(.*?)(?=^## )", text, re.M | re.S)
    if not section:
        problems.append("no '## Adding an op' section")
    else:
        items = re.findall(r"^\d+\. ", section.group(1), re.M)
        if not 1 <= len(items) <= 6:
            problems.append(f"'Adding an op' lists {len(items)} files by hand, not 1 to 6")
    return problems


def test_readme_is_short_and_starts_with_what_users_need() -> None:
    assert readme_problems((ROOT / "README.md").read_text()) == []


def test_readme_check_fails_on_a_long_readme() -> None:
    text = (ROOT / "README.md").read_text()
    assert readme_problems(text + "more\n" * README_MAX_LINES)[0].endswith(f"more than {README_MAX_LINES}")
    section = re.search(r"^## Adding an op\n.*?(?=^## )", text, re.M | re.S)
    assert section
    seven = "## Adding an op\n" + "".join(f"{i}. `f{i}.py`\n" for i in range(1, 8)) + "\n"
    assert readme_problems(text.replace(section.group(0), seven)) == [
        "'Adding an op' lists 7 files by hand, not 1 to 6"]
