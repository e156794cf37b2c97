"""Whether onnxruntime's int8 products are exact on this CPU: on x86-64 without VNNI its u8 x s8 kernels sum pairs
of products with vpmaddubsw, which saturates to int16 (255 * 127 * 2 > 32767), so there its quantized convolutions
and matrix products are no bit-exact oracle. Its own remedy is 7-bit weights (quantize_static(reduce_range=True))."""

from __future__ import annotations

import functools

import numpy as np


@functools.cache
def u8s8_saturates() -> bool:
    """True where onnxruntime's MatMulInteger (uint8 x int8) of 255s by 127s comes out below the exact sum."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    m, k, n = 4, 64, 16
    g = helper.make_graph([helper.make_node("MatMulInteger", ["a", "b"], ["y"])], "probe",
                          [helper.make_tensor_value_info("a", TensorProto.UINT8, (m, k))],
                          [helper.make_tensor_value_info("y", TensorProto.INT32, (m, n))],
                          [numpy_helper.from_array(np.full((k, n), 127, np.int8), "b")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    onnx.checker.check_model(model)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    y = sess.run(None, {"a": np.full((m, k), 255, np.uint8)})[0]
    return bool((y != 255 * 127 * k).any())
