"""The test driver's calls (kernels_wasm/engine/test/driver_calls.h), from the argument kinds that the hosts declare:
wasmrt/train/engine_steps.py's SIGNATURES (training steps of train.c) and wasmrt/vision/imgops.py's (image operations
of image.c). The kinds are written once, there, and the driver's `call` reads each argument of a request as they say
(a or p pointer, z size_t, i int, d double, f float)."""

from __future__ import annotations

from pathlib import Path

from wasmrt.train.engine_steps import SIGNATURES as TRAIN_SIGNATURES
from wasmrt.vision.imgops import SIGNATURES as IMG_SIGNATURES

HEADER = Path(__file__).resolve().parents[1] / "engine" / "test" / "driver_calls.h"
_READER = {"a": "A", "p": "P", "z": "Z", "i": "I", "d": "D", "f": "F"}  # driver.c's argument macros


def _calls(macro: str, kinds_of: dict[str, str]) -> str:
    rows = []
    for name, kinds in kinds_of.items():
        args = ", ".join(f"{_READER[k]}({i})" for i, k in enumerate(kinds))
        rows.append(f'  X({name}, "{kinds}", {args})')
    return f"#define {macro}(X) \\\n" + " \\\n".join(rows) + "\n"


def header() -> str:
    return ("/* GENERATED from wasmrt/train/engine_steps.py and wasmrt/vision/imgops.py (SIGNATURES)\n"
            " * by python -m kernels_wasm.gen: do not edit. The exports the test driver's `call` runs:\n"
            " * X(name, argument kinds, each argument read). */\n"
            "#ifndef WRT_DRIVER_CALLS_H\n#define WRT_DRIVER_CALLS_H\n\n"
            + _calls("WRT_TRAIN_CALLS", TRAIN_SIGNATURES) + "\n"
            + _calls("WRT_IMG_CALLS", {n: kinds for n, (_, kinds) in IMG_SIGNATURES.items()})
            + "\n#endif\n")


def generate_driver_calls() -> dict[Path, str]:
    return {HEADER: header()}
