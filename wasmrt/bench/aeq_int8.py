"""A full-integer int8 TFLite model made by Google's own tool (AI Edge Quantizer, PyPI ai-edge-quantizer, recipe
static_wi8_ai8: int8 weights and activations, float input/output with QUANTIZE/DEQUANTIZE at the borders),
calibrated on a folder of .npy input tensors: the peer model wasmrt's TFLite importer is checked against.

Runs in its own environment (ai-edge-quantizer pins protobuf and ml_dtypes versions of its own), which
wasmrt.bench.peers.ensure_aeq makes in the user cache (`wasmrt bench --int8 --peers` does):
    <cache>/peers/aeq-venv/bin/python wasmrt/bench/aeq_int8.py float.tflite calib_npy/ out_int8.tflite [--samples 100]
        [--float-io]
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


def float_io(data: bytes) -> bytes:
    """The model with float32 graph inputs and outputs: a QUANTIZE after each int8 input, a DEQUANTIZE after each
    int8 output (the quantizer gives the graph int8 I/O; peers in a benchmark take and give float32 as ours does)."""
    import flatbuffers
    from ai_edge_litert import schema_py_generated as fb

    m = fb.ModelT.InitFromPackedBuf(bytearray(data), 0)
    g = m.subgraphs[0]
    for buf in m.buffers:  # weights stored after the flatbuffer (offset, size) go back inside: it is rebuilt
        if getattr(buf, "offset", 0) > 1:
            buf.data = np.frombuffer(data[buf.offset:buf.offset + buf.size], np.uint8)
            buf.offset = buf.size = 0

    def opcode(builtin: int) -> int:
        for k, c in enumerate(m.operatorCodes):
            if max(c.builtinCode, c.deprecatedBuiltinCode) == builtin:
                return k
        c = fb.OperatorCodeT()
        c.builtinCode, c.deprecatedBuiltinCode, c.version = builtin, min(builtin, 127), 1
        m.operatorCodes.append(c)
        return len(m.operatorCodes) - 1

    def float_twin(i: int, suffix: str) -> int:
        t, f = g.tensors[i], fb.TensorT()
        f.shape, f.type, f.name, f.buffer = t.shape, fb.TensorType.FLOAT32, (t.name or b"") + suffix.encode(), 0
        if getattr(t, "shapeSignature", None) is not None:
            f.shapeSignature = t.shapeSignature
        g.tensors.append(f)
        return len(g.tensors) - 1

    def op(code: int, src: int, dst: int) -> fb.OperatorT:
        o = fb.OperatorT()
        o.opcodeIndex, o.inputs, o.outputs = code, [src], [dst]
        return o

    remap: dict[int, int] = {}
    pre, post = [], []
    for k, i in enumerate(g.inputs):
        if g.tensors[i].type == fb.TensorType.INT8:
            f = float_twin(i, "_float")
            pre.append(op(opcode(fb.BuiltinOperator.QUANTIZE), f, i))
            g.inputs[k] = remap[i] = f
    for k, i in enumerate(g.outputs):
        if g.tensors[i].type == fb.TensorType.INT8:
            f = float_twin(i, "_float")
            post.append(op(opcode(fb.BuiltinOperator.DEQUANTIZE), i, f))
            g.outputs[k] = remap[i] = f
    g.operators = pre + list(g.operators) + post
    for sig in m.signatureDefs or []:
        for tm in list(sig.inputs or []) + list(sig.outputs or []):
            tm.tensorIndex = remap.get(tm.tensorIndex, tm.tensorIndex)
    b = flatbuffers.Builder(1 << 20)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("calib", help="folder of .npy tensors of the model's (single) input")
    ap.add_argument("output")
    ap.add_argument("--samples", type=int, default=100)
    ap.add_argument("--float-io", action="store_true", help="float32 graph inputs and outputs (see float_io)")
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
    if args.float_io:
        Path(args.output).write_bytes(float_io(Path(args.output).read_bytes()))
    print(f"wrote {args.output} ({Path(args.output).stat().st_size:,} bytes) from {len(files)} samples")
    return 0


if __name__ == "__main__":
    sys.exit(main())
