"""`wasmrt bench`: native vs wasm speed of our engine, and of the peers on the same graph (see run.py)."""
