"""`wasmrt demo`: the HTTP server (headers, MIME types, what it refuses to serve) and the CLI's start/stop mode."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from wasmrt.dev.demo_server import ROOT, DemoServer


def _get(url: str) -> tuple[int, dict[str, str], bytes]:
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: object) -> None:
            return None

    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(url, timeout=10) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), b""


def test_headers_mime_types_and_limits() -> None:
    with DemoServer(port=0) as server:
        status, headers, body = _get(server.origin + "/demo/web/index.html")
        assert status == 200 and b"wasmrt" in body
        assert headers["Cross-Origin-Opener-Policy"] == "same-origin"
        assert headers["Cross-Origin-Embedder-Policy"] == "require-corp"
        assert headers["Content-type"].startswith("text/html")
        status, headers, _ = _get(server.origin + "/js_bindings/src/index.js")
        assert status == 200 and headers["Content-type"] == "text/javascript"
        status, _, _ = _get(server.origin + "/")
        assert status == 302
        for path in ("/models/cache/", "/pyproject.toml", "/.git/config", "/demo/../pyproject.toml",
                     "/demo/%2e%2e/pyproject.toml", "/models/%63ache/"):
            assert _get(server.origin + path)[0] == 404, path
        wasm = next((ROOT / "js_bindings" / "dist").glob("*.wasm"), None)
        if wasm:
            status, headers, body = _get(server.origin + f"/js_bindings/dist/{wasm.name}")
            assert status == 200 and headers["Content-type"] == "application/wasm" and body[:4] == b"\0asm"


def test_cli_serves_until_terminated(tmp_path: Path) -> None:
    url_file = tmp_path / "url"
    proc = subprocess.Popen([sys.executable, "-m", "wasmrt.cli.main", "demo", "--port", "0", "--no-build",
                             "--url-file", str(url_file)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ})
    try:
        for _ in range(100):
            if url_file.exists() and url_file.read_text().strip():
                break
            time.sleep(0.1)
        else:
            pytest.fail("the demo server did not start: " + proc.stderr.read() if proc.poll() is not None else "")
        url = url_file.read_text().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/demo/web/")
        assert _get(url)[0] == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    origin = url.removesuffix("/demo/web/")
    for page in ("/demo/web/", "/demo/web/tryon.html", "/demo/web/speed.html"):  # every page's URL is printed
        assert f"{origin}{page}\n" in out, out
