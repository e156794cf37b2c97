"""Build a ResNet-18 (He et al. 2016) classifier, 224x224, 1000 classes, as an opset-13 ONNX model with seeded
random weights: a 7x7 stride-2 stem and 3x3 max pool, four stages of two basic blocks (two 3x3 convs each, 64 to
512 channels on 56x56 to 7x7 maps, a 1x1 stride-2 projection where the shape changes), global average pooling and
a fully connected layer. Batch-norm statistics come from a numpy forward pass on image-like inputs (convnet.py).
A dense-3x3 workload for speed tests (Winograd convolutions): its predictions mean nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from wasmrt.zoo.builders import output_main, write_checked
from wasmrt.zoo.builders.convnet import Net, images

STAGES = ((64, 1), (128, 2), (256, 2), (512, 2))  # (channels, first stride)
BLOCKS_PER_STAGE = 2
NUM_CLASSES = 1000
INPUT_SIZE = 224
SEED = 20261128


def build_onnx(preprocess: dict[str, Any] | None = None, seed: int = SEED) -> Any:
    """ResNet-18: input "input" [1,3,224,224] NCHW, output "logits" [1,1000]."""
    rng = np.random.default_rng(seed)
    net = Net(rng, images(rng, INPUT_SIZE))
    x = net.conv_bn("input", 64, 7, 2)
    x = net.max_pool(x, 3, 2, 1)
    cin = 64
    for ch, first in STAGES:
        for b in range(BLOCKS_PER_STAGE):
            stride = first if b == 0 else 1
            y = net.conv_bn(x, ch, 3, stride)
            y = net.conv_bn(y, ch, 3, 1, relu=False)
            short = net.conv_bn(x, ch, 1, stride, relu=False) if stride != 1 or cin != ch else x
            x = net.add_relu(y, short)
            cin = ch
    net.global_pool_fc(x, NUM_CLASSES, "logits")
    return net.model("resnet18", [1, 3, INPUT_SIZE, INPUT_SIZE], "logits", [1, NUM_CLASSES], seed, preprocess)


def build(out: Path, preprocess: dict[str, Any] | None = None) -> Path:
    return write_checked(build_onnx(preprocess), out)


def main(argv: list[str] | None = None) -> int:
    return output_main(__doc__, build, argv)


if __name__ == "__main__":
    raise SystemExit(main())
