"""The npm package as a user gets it: `npm pack` of js_bindings/ (via `wasmrt package`), installed into a temporary
npm project outside the repository. The README's JavaScript snippet type-checks there under `tsc --strict` and runs
in Node and in Chromium from a plain page (import map, no bundler): it classifies the cat and paints lipstick on the
astronaut with the face models the package ships; a missing model folder is one clear error."""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent / "js"))
import js_fixtures

from wasmrt.dev.package import NPM_MODELS

ROOT = Path(__file__).resolve().parent.parent
NPM, NODE, CHROMIUM = shutil.which("npm"), shutil.which("node"), shutil.which("chromium") or "/usr/bin/chromium"
TSC = ROOT / "node_modules" / "typescript" / "bin" / "tsc"
PAGE = """<!doctype html>
<meta charset="utf-8"><title>wasmrt from npm</title><link rel="icon" href="data:,">
<script type="importmap">
{ "imports": { "wasmrt": "./node_modules/wasmrt/src/index.js",
               "wasmrt/vision": "./node_modules/wasmrt/vision/index.js" } }
</script>
<script type="module">
import * as wasmrt from "wasmrt";
import { FaceMesh } from "wasmrt/vision";
import { classify, tryOn } from "./readme.mjs";
const blob = async (f) => (await fetch(f)).blob();
try {
  const label = await classify(await blob("chelsea.png"));
  const face = await wasmrt.image.getPixels(await blob("astronaut.png"));
  const before = face.data.slice();
  const faces = await tryOn(face);
  let changed = 0;
  for (let i = 0; i < before.length; i++) changed += face.data[i] !== before[i];
  const rt = await wasmrt.init();
  let missing = "no error";
  try { await FaceMesh.create(rt, { modelBase: "./no-such-folder/" }); } catch (e) { missing = e.message; }
  window.result = { label, faces, changed, variant: rt.variant, missing };
} catch (e) {
  window.result = { error: String(e?.stack ?? e) };
}
</script>
"""

pytestmark = pytest.mark.skipif(NPM is None or NODE is None or not TSC.exists(),
                                reason="needs npm, node and node_modules (scripts/setup.sh)")


def readme_snippet(path: Path) -> str:
    """The first ```js block of a README."""
    m = re.search(r"```js\n(.*?)```", path.read_text(), re.S)
    assert m, f"{path}: no ```js block"
    return m.group(1)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh npm project with the packed tarball installed, the README snippet, a model and two photos."""
    from PIL import Image

    from wasmrt.dev.package import npm_pack

    tarball = npm_pack(tmp_path_factory.mktemp("pack"), log=lambda _m: None)
    proj = tmp_path_factory.mktemp("npm-project")
    (proj / "package.json").write_text(json.dumps({"name": "uses-wasmrt", "private": True, "type": "module"}))
    r = subprocess.run([NPM, "install", "--no-audit", "--no-fund", "--prefer-offline", str(tarball)], cwd=proj,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    snippet = readme_snippet(ROOT / "README.md")
    assert readme_snippet(ROOT / "js_bindings" / "README.md") == snippet, "the two READMEs show different code"
    (proj / "readme.mjs").write_text(snippet)
    (proj / "models").mkdir()
    shutil.copyfile(ROOT / "models" / "efficientnet_lite0.wrt", proj / "models" / "efficientnet_lite0.wrt")
    for name in ("chelsea.png", "astronaut.png"):
        shutil.copyfile(js_fixtures.skimage_dir() / name, proj / name)
        img = Image.open(proj / name).convert("RGBA")
        np.asarray(img).tofile(proj / f"{name}.rgba")
        (proj / f"{name}.size").write_text(f"{img.width}:{img.height}")
    (proj / "index.html").write_text(PAGE)
    return proj


def test_tarball_holds_the_package(project: Path) -> None:
    pkg = project / "node_modules" / "wasmrt"
    for f in ("LICENSE", "README.md", "dist/wasmrt-simd.wasm", "src/index.d.ts", "vision/index.d.ts"):
        assert (pkg / f).is_file(), f
    assert sorted(p.name for p in (pkg / "models").iterdir()) == sorted(f"{m}.wrt" for m in NPM_MODELS)
    assert (pkg / "LICENSE").read_bytes() == (ROOT / "LICENSE").read_bytes()
    assert (ROOT / "js_bindings" / "LICENSE").read_bytes() == (ROOT / "LICENSE").read_bytes()
    assert json.loads((pkg / "package.json").read_text())["sideEffects"] is False


def test_readme_snippet_type_checks_strict(project: Path) -> None:
    shutil.copyfile(project / "readme.mjs", project / "readme.js")  # checkJs reads .js with the module's types
    (project / "tsconfig.json").write_text(json.dumps({"compilerOptions": {
        "target": "es2022", "module": "nodenext", "moduleResolution": "nodenext", "strict": True, "noEmit": True,
        "allowJs": True, "checkJs": True, "lib": ["es2022", "dom"], "types": []}, "files": ["readme.js"]}))
    r = subprocess.run([NODE, str(TSC), "-p", "tsconfig.json"], cwd=project, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr


def _check(result: dict, where: str) -> None:
    assert "error" not in result, f"{where}: {result.get('error')}"
    assert re.search(js_fixtures.EXPECT_LABEL["chelsea.png"], result["label"]), (where, result["label"])
    assert result["faces"] == 1 and result["changed"] > 300, (where, result)
    assert "no-such-folder" in result["missing"] and "{modelBase}" in result["missing"], (where, result["missing"])


def test_readme_snippet_runs_in_node(project: Path) -> None:
    node = str(js_fixtures.NODE22) if js_fixtures.NODE22.exists() else NODE
    args = [f"{n}.rgba:{(project / f'{n}.size').read_text()}" for n in ("chelsea.png", "astronaut.png")]
    shutil.copyfile(ROOT / "tests" / "js" / "npm_readme.mjs", project / "run_readme.mjs")
    r = subprocess.run([node, "run_readme.mjs", *args], cwd=project, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    _check(json.loads(r.stdout.strip().splitlines()[-1]), "node")


def test_readme_snippet_runs_in_a_plain_page(project: Path) -> None:
    handler = type("Handler", (SimpleHTTPRequestHandler,), {
        "extensions_map": {**SimpleHTTPRequestHandler.extensions_map, ".mjs": "text/javascript",
                           ".js": "text/javascript", ".wasm": "application/wasm",
                           ".wrt": "application/octet-stream"},
        "log_message": lambda *a: None})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(project)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        out = project / "page-result.json"
        r = subprocess.run([NODE, str(ROOT / "tests" / "js" / "npm_page.mjs"),
                            f"http://127.0.0.1:{httpd.server_address[1]}/index.html", str(out)],
                           cwd=ROOT, capture_output=True, text=True, timeout=300, env={"CHROMIUM": CHROMIUM,
                                                                                        "PATH": "/usr/bin:/bin"})
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert r.returncode == 0, r.stderr
    result = json.loads(out.read_text())
    _check(result, "chromium")
    # every failed request (console lines about them carry no URL) but the deliberately missing folder
    unexpected = [m for m in result["logs"] if m.startswith(("HTTP", "pageerror")) and "no-such-folder" not in m]
    assert not unexpected, unexpected


def test_vision_pipelines_load_the_package_models_in_node(project: Path) -> None:
    """HandTracker.create(rt) and SelfieSegmenter.create(rt) with no model options: the lite hand models and both
    selfie models come from the package; an open palm (a photo of OpenCV's documentation) and the astronaut."""
    from PIL import Image

    from wasmrt.zoo import photos

    args = []
    for name, img in (("hand", Image.fromarray(photos.photo("Histogram_Comparison_Source_2.jpg"))),
                      ("person", Image.open(js_fixtures.skimage_dir() / "astronaut.png"))):
        img = img.convert("RGBA")
        np.asarray(img).tofile(project / f"{name}.rgba")
        args.append(f"{name}.rgba:{img.width}:{img.height}")
    node = str(js_fixtures.NODE22) if js_fixtures.NODE22.exists() else NODE
    shutil.copyfile(ROOT / "tests" / "js" / "npm_vision.mjs", project / "run_vision.mjs")
    r = subprocess.run([node, "run_vision.mjs", *args], cwd=project, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["hands"] == 1 and got["gesture"] == "open_palm" and got["landmarks"] == 63, got
    assert got["model"] == "general" and got["maskSize"] == [512, 512] and 0.2 < got["personShare"] < 0.8, got


def test_tarball_has_no_repository_paths(project: Path) -> None:
    """The package's modules never reach outside it (../../models/ and the like)."""
    pkg = project / "node_modules" / "wasmrt"
    for f in [*pkg.rglob("*.js")]:
        for m in re.finditer(r"""["'](\.\./[^"']*)["']""", f.read_text()):
            target = (f.parent / m.group(1)).resolve()
            assert pkg.resolve() in target.parents or target == pkg.resolve(), f"{f.relative_to(pkg)}: {m.group(1)}"

