"""Model files made from registry packages rather than taken from them: EfficientNet-Lite0 exported to ONNX from its
PyTorch checkpoint (real ImageNet weights); MobileNetV2, and the dense-3x3 ResNet-18 and U-Net, built with seeded
weights for speed tests.
wasmrt.zoo.models runs them into the user cache; `python -m wasmrt.zoo.builders.NAME -o FILE` runs one by hand."""

from collections.abc import Callable
from pathlib import Path
from typing import Any


def write_checked(model: Any, out: Path) -> Path:
    """Check an onnx.ModelProto and write it to `out` atomically (a stopped build leaves no half file)."""
    import onnx

    onnx.checker.check_model(model)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_bytes(model.SerializeToString())
    tmp.replace(out)
    return out


def output_main(doc: str, build: Callable[[Path], Path], argv: list[str] | None = None) -> int:
    """The command line of a builder whose only argument is its output file (`-o FILE`)."""
    import argparse

    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("-o", "--output", type=Path, required=True, help="output .onnx")
    print(build(ap.parse_args(argv).output))
    return 0
