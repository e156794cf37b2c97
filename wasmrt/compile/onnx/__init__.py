"""ONNX importer: reads a onnx model into the wasmrt IR."""
