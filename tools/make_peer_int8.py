"""A full-integer int8 TFLite model made by Google's own tool (AI Edge Quantizer, PyPI ai-edge-quantizer, recipe
static_wi8_ai8: int8 weights and activations, float input/output with QUANTIZE/DEQUANTIZE at the borders),
calibrated on a folder of .npy input tensors: the peer model wasmrt's TFLite importer is checked against.

Runs in its own environment (ai-edge-quantizer pins protobuf and ml_dtypes versions of its own):
    python -m venv build/aeq-venv && build/aeq-venv/bin/pip install ai-edge-quantizer
    build/aeq-venv/bin/python tools/make_peer_int8.py float.tflite calib_npy/ out_int8.tflite [--samples 100]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np


def with_signature(data: bytes) -> bytes:
    """The model with float32 weights and a "serving_default" signature over its graph inputs and outputs (the
    quantizer addresses models by signature; MediaPipe's files have none, and keep their weights in fp16)."""
    import flatbuffers
    from ai_edge_litert import schema_py_generated as fb

    m = fb.ModelT.InitFromPackedBuf(bytearray(data), 0)
    g = m.subgraphs[0]
    # fp16 weights behind DEQUANTIZE become float32 constants, so the quantizer sees (and quantizes) them
    keep = []
    for op in g.operators:
        code = m.operatorCodes[op.opcodeIndex]
        src = g.tensors[op.inputs[0]] if op.inputs is not None and len(op.inputs) else None
        builtin = max(code.builtinCode, code.deprecatedBuiltinCode)
        if builtin == fb.BuiltinOperator.DEQUANTIZE and src.type == fb.TensorType.FLOAT16 and \
                m.buffers[src.buffer].data is not None:
            half = np.frombuffer(bytes(bytearray(m.buffers[src.buffer].data)), np.float16)
            buf = fb.BufferT()
            buf.data = np.frombuffer(half.astype("<f4").tobytes(), np.uint8)
            m.buffers.append(buf)
            g.tensors[op.outputs[0]].buffer = len(m.buffers) - 1
        else:
            keep.append(op)
    g.operators = keep
    if m.signatureDefs:
        b = flatbuffers.Builder(1 << 20)
        b.Finish(m.Pack(b), file_identifier=b"TFL3")
        return bytes(b.Output())

    def maps(indices: list[int]) -> list:
        out = []
        for i in indices:
            t = fb.TensorMapT()
            t.name, t.tensorIndex = g.tensors[i].name, i
            out.append(t)
        return out

    sig = fb.SignatureDefT()
    sig.inputs, sig.outputs = maps(list(g.inputs)), maps(list(g.outputs))
    sig.signatureKey, sig.subgraphIndex = "serving_default", 0
    m.signatureDefs = [sig]
    b = flatbuffers.Builder(1 << 20)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("calib", help="folder of .npy tensors of the model's (single) input")
    ap.add_argument("output")
    ap.add_argument("--samples", type=int, default=100)
    args = ap.parse_args(argv)
    from ai_edge_litert.interpreter import Interpreter
    from ai_edge_quantizer import quantizer, recipe

    model = with_signature(Path(args.model).read_bytes())
    sigs = Interpreter(model_content=model).get_signature_list()
    key = next(iter(sigs))
    (name,) = sigs[key]["inputs"]
    files = sorted(Path(args.calib).glob("*.npy"))[: args.samples]
    data = [{name: np.load(f).astype(np.float32)} for f in files]
    q = quantizer.Quantizer(model)
    q.load_quantization_recipe(recipe.static_wi8_ai8())
    result = q.calibrate({key: data}, num_threads=1)
    q.quantize(result).export_model(args.output, overwrite=True)
    print(f"wrote {args.output} ({Path(args.output).stat().st_size:,} bytes) from {len(files)} samples")
    return 0


if __name__ == "__main__":
    sys.exit(main())
