"""Model files made from registry packages rather than taken from them: EfficientNet-Lite0 exported to ONNX from its
PyTorch checkpoint (real ImageNet weights), and MobileNetV2 built with random weights for speed tests.
wasmrt.models runs them into the user cache; `python -m wasmrt.builders.NAME -o FILE` runs one by hand."""
