"""TFLITE importer: reads a tflite model into the wasmrt IR."""
