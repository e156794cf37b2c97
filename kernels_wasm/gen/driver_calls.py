"""The test driver's image calls (kernels_wasm/engine/test/wrt_img_calls.h), from the argument kinds that
wasmrt/vision/imgops.py's SIGNATURES declare for its hosts: the kinds are written once, there, and the driver's
`call` reads each argument of a request as they say (p pointer, z size_t, i int, d double, f float)."""

from __future__ import annotations

from pathlib import Path

from wasmrt.vision.imgops import SIGNATURES

HEADER = Path(__file__).resolve().parents[1] / "engine" / "test" / "wrt_img_calls.h"
_READER = {"p": "P", "z": "Z", "i": "I", "d": "D", "f": "F"}  # driver.c's argument macros


def header() -> str:
    rows = []
    for name, (_, kinds) in SIGNATURES.items():
        args = ", ".join(f"{_READER[k]}({i})" for i, k in enumerate(kinds))
        rows.append(f'  X({name}, "{kinds}", {args})')
    body = " \\\n".join(rows)
    return ("/* GENERATED from wasmrt/vision/imgops.py (SIGNATURES) by python -m kernels_wasm.gen: do not edit.\n"
            " * The image exports the test driver's `call` runs: X(name, argument kinds, each argument read). */\n"
            "#ifndef WRT_IMG_CALLS_H\n#define WRT_IMG_CALLS_H\n\n"
            f"#define WRT_IMG_CALLS(X) \\\n{body}\n\n#endif\n")


def generate_driver_calls() -> dict[Path, str]:
    return {HEADER: header()}
