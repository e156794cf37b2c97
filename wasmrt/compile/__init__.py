"""Model file -> .wrt: the importers (onnx/, tflite/), the IR, graph passes, the memory planner and the writer."""
