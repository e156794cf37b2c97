"""Exporters from the graph IR to the peers' formats (TFLite, ONNX, TF.js graph model), for `wasmrt bench --peers`.

Every engine in the bench then runs the same graph: the one our converter produced, after its passes.
"""
