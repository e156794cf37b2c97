"""The C engine's training steps on aarch64 NEON under qemu: wasmrt.train.engine_steps.Steps with each call carried
to the aarch64 test driver (kernels_wasm/engine/test/driver.c `call`): the export's name, its argument kinds and
words, and one blob holding every array go to the driver's stdin; the error code, the message and the blob as the
call left it come back on stdout."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

from wasmrt.dev import build
from wasmrt.errors import WasmrtError
from wasmrt.train.engine_steps import SIGNATURES, Arg, Out, Steps

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


class QemuSteps(Steps):
    """Steps on the aarch64 driver under `qemu-aarch64 -cpu <cpu>`; refuses to start unless the driver runs NEON."""

    def __init__(self, cpu: str, path: Path | None = None) -> None:
        self.engine, self.cpu = "aarch64", cpu
        self._cmd = ["qemu-aarch64", "-cpu", cpu, str(path or driver())]
        target = subprocess.run([*self._cmd, "target"], capture_output=True, text=True, timeout=60).stdout.strip()
        if target != "neon":
            raise RuntimeError(f"the aarch64 driver runs the {target!r} kernels under -cpu {cpu}, not NEON")
        self._last_message = ""

    def _invoke(self, name: str, args: tuple[Arg, ...]) -> int:
        kinds = SIGNATURES[name]
        blob, words = bytearray(), []
        for a, k in zip(args, kinds, strict=True):
            arr = a.array if isinstance(a, Out) else a
            if k == "a":
                if arr is None:
                    words.append(NULL)
                    continue
                blob.extend(b"\0" * (-len(blob) % 64))
                words.append(len(blob))
                blob.extend(np.ascontiguousarray(arr).tobytes())
            elif k == "f":
                words.append(int(np.array(arr, np.float32).view(np.uint32)))
            else:
                words.append(int(arr) % (1 << 64))  # type: ignore[arg-type]
        code, back = self.request(request(name, kinds, words, bytes(blob)))
        assert len(back) == len(blob), f"{name}: the driver returned {len(back)} of {len(blob)} bytes"
        for a, k, w in zip(args, kinds, words, strict=True):
            if k == "a" and isinstance(a, Out):
                a.array[...] = np.frombuffer(back, a.array.dtype, a.array.size, w).reshape(a.array.shape)
        return code

    def request(self, req: bytes) -> tuple[int, bytes]:
        """One `call` of the driver: (error code, the blob after the call); RuntimeError where it refused the
        request, with its words."""
        r = subprocess.run([*self._cmd, "call"], input=req, capture_output=True, timeout=120)
        if r.returncode:
            raise RuntimeError(f"aarch64 driver ({r.returncode}): {r.stderr.decode()[-500:]}")
        code, mlen = struct.unpack_from("<iI", r.stdout)
        self._last_message = r.stdout[8:8 + mlen].decode()
        return code, r.stdout[8 + mlen:]

    def _message(self) -> str:
        return self._last_message
