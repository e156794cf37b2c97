"""Build a U-Net (Ronneberger et al. 2015) segmentation network, 128x128 RGB in, one logit per pixel out, as an
opset-13 ONNX model with seeded random weights: four levels of two 3x3 conv + batch-norm + ReLU (32 to 256
channels, 2x2 max pooling down), 2x2 stride-2 transposed convolutions up, skip connections concatenated, a 1x1 head.
Batch-norm statistics come from a numpy forward pass on image-like inputs (convnet.py). A dense-3x3 workload for
speed tests (Winograd convolutions): its masks mean nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from wasmrt.zoo.builders import output_main, write_checked
from wasmrt.zoo.builders.convnet import Net, images

LEVELS = (32, 64, 128, 256)  # channels per level, the last one the bottleneck
INPUT_SIZE = 128
SEED = 20261129


def build_onnx(preprocess: dict[str, Any] | None = None, seed: int = SEED) -> Any:
    """U-Net: input "input" [1,3,128,128] NCHW, output "mask" [1,1,128,128] (logits)."""
    rng = np.random.default_rng(seed)
    net = Net(rng, images(rng, INPUT_SIZE))
    x, skips = "input", []
    for k, ch in enumerate(LEVELS):
        if k:
            x = net.max_pool(x, 2, 2, 0)
        x = net.conv_bn(net.conv_bn(x, ch, 3), ch, 3)
        skips.append(x)
    for ch, skip in zip(reversed(LEVELS[:-1]), reversed(skips[:-1]), strict=True):
        x = net.concat(net.up_bn(x, ch), skip)
        x = net.conv_bn(net.conv_bn(x, ch, 3), ch, 3)
    net.conv_bias(x, 1, "mask")
    return net.model("unet", [1, 3, INPUT_SIZE, INPUT_SIZE], "mask", [1, 1, INPUT_SIZE, INPUT_SIZE], seed, preprocess)


def build(out: Path, preprocess: dict[str, Any] | None = None) -> Path:
    return write_checked(build_onnx(preprocess), out)


def main(argv: list[str] | None = None) -> int:
    return output_main(__doc__, build, argv)


if __name__ == "__main__":
    raise SystemExit(main())
