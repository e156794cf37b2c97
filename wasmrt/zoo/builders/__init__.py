"""Model files made from registry packages rather than taken from them: EfficientNet-Lite0 exported to ONNX from its
PyTorch checkpoint (real ImageNet weights), and MobileNetV2 built with random weights for speed tests.
wasmrt.zoo.models runs them into the user cache; `python -m wasmrt.zoo.builders.NAME -o FILE` runs one by hand."""

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
