"""The C engine's exports on aarch64 NEON under qemu: each call carried to the aarch64 test driver
(kernels_wasm/engine/test/driver.c `call`): the export's name, its argument kinds and words, and one blob holding
every array go to the driver's stdin; the error code, the message and the blob as the call left it come back on
stdout. QemuSteps: wasmrt.train.engine_steps.Steps over it; QemuImageHost: the hosts of wasmrt.vision.imgops."""

from __future__ import annotations

import contextlib
import shutil
import struct
import subprocess
import weakref
from pathlib import Path

import numpy as np
import pytest

from wasmrt.dev import build
from wasmrt.engines.errors import engine_error
from wasmrt.errors import WasmrtError
from wasmrt.train.engine_steps import SIGNATURES, Arg, Out, Steps
from wasmrt.vision.imgops import SIGNATURES as IMG_SIGNATURES
from wasmrt.vision.imgops import _Host

NULL = (1 << 64) - 1
CPUS = ("max", "cortex-a53")  # armv8.2 with dotprod and fp16; plain armv8.0 (the f32 NEON path either way)


def driver() -> Path:
    """The aarch64 driver (built once, cached by build.build_aarch64), or a skip where qemu or the compiler lacks."""
    if not shutil.which("qemu-aarch64"):
        pytest.skip("qemu-aarch64 not installed")
    try:
        return build.build_aarch64().path
    except WasmrtError as e:
        pytest.skip(str(e))


def request(name: str, kinds: str, words: list[int], blob: bytes) -> bytes:
    """The driver's `call` request (format: kernels_wasm/engine/test/driver.c)."""
    return b"".join([struct.pack("<I", len(name)), name.encode(), struct.pack("<I", len(kinds)), kinds.encode(),
                     struct.pack(f"<{len(words)}Q", *words), struct.pack("<Q", len(blob)), blob])


def _stop(proc: subprocess.Popen) -> None:
    proc.stdin.close()  # type: ignore[union-attr]  (the driver ends at the end of its requests)
    proc.wait(timeout=60)


class QemuDriver:
    """The aarch64 driver under `qemu-aarch64 -cpu <cpu>`; refuses to start unless the driver runs NEON. call()
    sends its requests to one driver process, started at the first and ended with this object."""

    def __init__(self, cpu: str, path: Path | None = None) -> None:
        self.cpu = cpu
        self._cmd = ["qemu-aarch64", "-cpu", cpu, str(path or driver())]
        target = subprocess.run([*self._cmd, "target"], capture_output=True, text=True, timeout=60).stdout.strip()
        if target != "neon":
            raise RuntimeError(f"the aarch64 driver runs the {target!r} kernels under -cpu {cpu}, not NEON")
        self.message = ""  # the engine's message after the last call that returned an error
        self._proc: subprocess.Popen | None = None

    def call(self, name: str, kinds: str, args: list, outputs: list[np.ndarray]) -> int:
        """Calls an export with its arguments of the given kinds (a or p: a numpy array or None); the arrays in
        outputs (by identity) receive what the call left in them. Returns the export's result."""
        blob, words = bytearray(), []
        for a, k in zip(args, kinds, strict=True):
            if k in "ap":
                if a is None:
                    words.append(NULL)
                    continue
                blob.extend(b"\0" * (-len(blob) % 64))
                words.append(len(blob))
                blob.extend(np.ascontiguousarray(a).tobytes())
            elif k == "f":
                words.append(int(np.array(a, np.float32).view(np.uint32)))
            elif k == "d":
                words.append(int(np.array(a, np.float64).view(np.uint64)))
            else:
                words.append(int(a) % (1 << 64))
        code, back = self._answer(request(name, kinds, words, bytes(blob)), len(blob))
        for a, k, w in zip(args, kinds, words, strict=True):
            if k in "ap" and any(a is o for o in outputs):
                a[...] = np.frombuffer(back, a.dtype, a.size, w).reshape(a.shape)
        return code

    def _answer(self, req: bytes, blob_size: int) -> tuple[int, bytes]:
        """req sent to the running driver: (error code, the blob after the call)."""
        if self._proc is None:
            self._proc = subprocess.Popen([*self._cmd, "call"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE)
            weakref.finalize(self, _stop, self._proc)
        p = self._proc
        assert p.stdin is not None and p.stdout is not None and p.stderr is not None
        try:
            p.stdin.write(req)
            p.stdin.flush()
            head = p.stdout.read(8)
        except BrokenPipeError:  # the driver refused an earlier part of the request and ended
            head = b""
        if len(head) == 8:
            code, mlen = struct.unpack("<iI", head)
            self.message = p.stdout.read(mlen).decode()
            back = p.stdout.read(blob_size)
            if len(back) == blob_size:
                return code, back
        self._proc = None  # the next call starts a driver again
        with contextlib.suppress(BrokenPipeError):
            p.stdin.close()
        raise RuntimeError(f"aarch64 driver ({p.wait(timeout=60)}): {p.stderr.read().decode()[-500:]}")

    def request(self, req: bytes) -> tuple[int, bytes]:
        """One `call` of a driver of its own: (error code, the blob after the call); RuntimeError where it refused
        the request, with its words."""
        r = subprocess.run([*self._cmd, "call"], input=req, capture_output=True, timeout=120)
        if r.returncode:
            raise RuntimeError(f"aarch64 driver ({r.returncode}): {r.stderr.decode()[-500:]}")
        code, mlen = struct.unpack_from("<iI", r.stdout)
        self.message = r.stdout[8:8 + mlen].decode()
        return code, r.stdout[8 + mlen:]


class QemuSteps(Steps):
    """Steps on the aarch64 driver under qemu (QemuDriver)."""

    def __init__(self, cpu: str, path: Path | None = None) -> None:
        self.engine, self.cpu = "aarch64", cpu
        self.driver = QemuDriver(cpu, path)

    def _invoke(self, name: str, args: tuple[Arg, ...]) -> int:
        arrays = [a.array if isinstance(a, Out) else a for a in args]
        return self.driver.call(name, SIGNATURES[name], arrays, [a.array for a in args if isinstance(a, Out)])

    def request(self, req: bytes) -> tuple[int, bytes]:
        return self.driver.request(req)

    def _message(self) -> str:
        return self.driver.message


class QemuImageHost(_Host):
    """wasmrt.vision.imgops' host on the aarch64 driver: the wrt_img_* exports with the kinds of imgops.SIGNATURES
    (which the driver's call list is generated from)."""

    def __init__(self, cpu: str) -> None:
        self.driver = QemuDriver(cpu)

    def call(self, name: str, args: list, outputs: list[np.ndarray]) -> int:
        code = self.driver.call(name, IMG_SIGNATURES[name][1], args, outputs)
        if name.endswith("_scratch"):
            return code
        if code:
            raise engine_error(code, self.driver.message, "")
        return 0
