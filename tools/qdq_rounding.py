"""Where an imported onnxruntime QDQ model differs from onnxruntime's own int8 run, op by op.

    python tools/qdq_rounding.py [--images 4] [--out build/qdq_rounding.json]

onnxruntime's quantize_static (QDQ, per-channel) makes EfficientNet-Lite0 int8 on the calibration photos
(int8_acceptance's model). onnxruntime runs it with every QuantizeLinear output exposed; `wasmrt convert` imports
it and python_ref runs each int8 op on onnxruntime's own int8 inputs, so a difference is that op's arithmetic, not
one carried from an earlier layer. For ADD, onnxruntime's x86-64 kernel (MLAS QLinearAdd) is also emulated: on the
raw uint8 values, fixed = zc - fma(sa/sc, za, f32(sb/sc * zb)), y = round_even(fma(b, sb/sc, fma(a, sa/sc,
fixed))) in float32, where python_ref computes XNNPACK's fp32 form. Saves, per op kind, the largest difference in
steps and how many values differ.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

F32, F64 = np.float32, np.float64


def mlas_add(a: np.ndarray, b: np.ndarray, qa, qb, qc) -> np.ndarray:
    """onnxruntime's x86-64 QLinearAdd on uint8 values (a, b), parameters of python_ref's int8 tensors."""
    sa, sb, sc = (F32(np.asarray(q.scale).reshape(-1)[0]) for q in (qa, qb, qc))
    za, zb, zc = (int(np.asarray(q.zero_point).reshape(-1)[0]) + 128 for q in (qa, qb, qc))
    rac, rbc = F32(sa / sc), F32(sb / sc)
    fixed = F32(F64(zc) - F32(F64(rac) * za + F64(F32(rbc * F32(zb)))))  # fma: one rounding (exact in float64)
    inner = F32(F64(a) * F64(rac) + F64(fixed))
    y = F32(F64(b) * F64(rbc) + F64(inner))
    return np.clip(np.rint(y), 0, 255).astype(np.int64)


def measure(n_images: int = 4) -> dict:
    import int8_acceptance as ia
    import onnx
    import onnxruntime as ort

    from python_ref import dispatch
    from wasmrt.bench.int8 import qdq_int8
    from wasmrt.compile.converter import convert
    from wasmrt.zoo.models import BUNDLED, model_path

    g = ia.float_graph("efficientnet_lite0")
    src = ia.WORK / "efficientnet_lite0_qdq.onnx"
    if not src.is_file():
        ia.WORK.mkdir(parents=True, exist_ok=True)
        qdq_int8(model_path("efficientnet_lite0"), ia.samples(g, "classifier", "calib", 200), src, ia.log)
    ev = ia.samples(g, "classifier", "eval", 600)[:: 600 // n_images][:n_images]
    m = onnx.load(str(src))
    q_input = {n.output[0]: n.input[0] for n in m.graph.node if n.op_type == "QuantizeLinear"}
    exposed = {o.name for o in m.graph.output}
    for q in q_input:
        if q not in exposed:
            m.graph.output.append(onnx.helper.make_tensor_value_info(q, onnx.TensorProto.UINT8, None))
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(m.SerializeToString(), so)
    names = [o.name for o in sess.get_outputs()]
    qg = convert(src, input_shapes=BUNDLED["efficientnet_lite0"].input_shapes).graph
    per_op: dict[str, dict] = {}
    for s in ev:
        theirs = dict(zip(names, sess.run(None, s), strict=True))
        ours = qg.evaluate(s)
        u8 = {}  # our tensor name -> onnxruntime's uint8 values in our layout (NHWC)
        for q, f in q_input.items():
            if f in ours and q in theirs:
                t = theirs[q].astype(np.int64)
                if t.ndim == 4 and ours[f].shape != t.shape:
                    t = np.transpose(t, (0, 2, 3, 1))
                u8[f] = t.reshape(ours[f].shape)
        for n in qg.nodes:
            y = n.outputs[0]
            runtime = [i for i in n.inputs if i and not qg.tensors[i].is_const]
            if y not in u8 or not runtime or not all(i in u8 for i in runtime):
                continue
            ins = [None if not i else qg.tensors[i].data if qg.tensors[i].is_const else (u8[i] - 128).astype(np.int8)
                   for i in n.inputs]
            (got,) = dispatch.run(n.op, ins, n.attrs, qg.quant_of(n))
            kind = n.op + (" depthwise" if n.attrs.get("groups", 1) > 1 else "")
            r = per_op.setdefault(kind, {"ops": set(), "values": 0, "differing": 0, "max_steps": 0})
            d = np.abs(got.astype(np.int64) + 128 - u8[y])
            r["ops"].add(n.name)
            r["values"] += d.size
            r["differing"] += int((d > 0).sum())
            r["max_steps"] = max(r["max_steps"], int(d.max()))
            if n.op == "ADD":
                qa, qb = (qg.tensors[i].quant for i in n.inputs)
                e = np.abs(mlas_add(u8[n.inputs[0]], u8[n.inputs[1]], qa, qb, qg.tensors[y].quant) - u8[y])
                r["mlas_emulation_differing"] = r.get("mlas_emulation_differing", 0) + int((e > 0).sum())
    for r in per_op.values():
        r["ops"] = len(r["ops"])
    return {"images": len(ev), "onnxruntime": ort.__version__, "per_op": per_op}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=4)
    ap.add_argument("--out", default=str(ROOT / "build" / "qdq_rounding.json"))
    args = ap.parse_args(argv)
    r = measure(args.images)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(r, indent=1))
    print(json.dumps(r, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
