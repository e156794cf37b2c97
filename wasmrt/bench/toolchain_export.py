"""The peers' own toolchains, run on a model's PyTorch module: litert-torch writes the .tflite that LiteRT and
LiteRT.js run, torch.onnx.export the .onnx that onnxruntime and onnxruntime-web run.

    <toolchain venv>/bin/python toolchain_export.py SOURCE.onnx OUT_DIR

Runs in its own virtual environment (build/peers/toolchain-venv: torch and litert-torch, which the wasmrt package
does not depend on), so it imports nothing from wasmrt. The PyTorch module is the source model's own layers
(nn.Conv2d, nn.BatchNorm2d, nn.ReLU6, nn.Linear, ...) with its weights, built from the source ONNX graph: the
module a PyTorch user of the model would hold. Each toolchain then makes its own decisions (batch-norm folding,
layout, fusions). Prints one JSON line: {"tflite": path, "onnx": path, "max_abs_diff": {...}, "versions": {...}}.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import onnx
import torch
from onnx import helper, numpy_helper
from torch import nn

SUPPORTED = {"Conv", "ConvTranspose", "BatchNormalization", "Clip", "Relu", "Add", "Concat", "MaxPool",
             "GlobalAveragePool", "Flatten", "Gemm"}


class Concat(nn.Module):
    def __init__(self, axis: int) -> None:
        super().__init__()
        self.axis = axis

    def forward(self, *xs: torch.Tensor) -> torch.Tensor:
        return torch.cat(xs, self.axis)


class OnnxModule(nn.Module):
    """The layers of an ONNX graph of SUPPORTED ops as PyTorch modules, run in the graph's order."""

    def __init__(self, model: onnx.ModelProto) -> None:
        super().__init__()
        g = model.graph
        init = {t.name: numpy_helper.to_array(t) for t in g.initializer}
        self.input = g.input[0].name
        self.output = g.output[0].name
        self.layers = nn.ModuleList()
        self.steps: list[tuple[str, int, list[str], str]] = []  # (kind, layer index or -1, inputs, output)
        for n in g.node:
            a = {x.name: helper.get_attribute_value(x) for x in n.attribute}
            layer: nn.Module | None = None
            if n.op_type == "Conv":
                w = init[n.input[1]]
                b = init[n.input[2]] if len(n.input) > 2 and n.input[2] else None
                pt, pl, pb, pr = a.get("pads", (0, 0, 0, 0))
                groups, symmetric = a.get("group", 1), (pt, pl) == (pb, pr)
                conv = nn.Conv2d(w.shape[1] * groups, w.shape[0], tuple(w.shape[2:]),
                                 stride=tuple(a.get("strides", (1, 1))), padding=(pt, pl) if symmetric else 0,
                                 dilation=tuple(a.get("dilations", (1, 1))), groups=groups, bias=b is not None)
                conv.weight.data = torch.from_numpy(w.copy())
                if b is not None:
                    conv.bias.data = torch.from_numpy(b.copy())
                layer = conv if symmetric else nn.Sequential(nn.ZeroPad2d((pl, pr, pt, pb)), conv)
            elif n.op_type == "ConvTranspose":
                w = init[n.input[1]]  # [Cin, Cout / groups, kh, kw]
                b = init[n.input[2]] if len(n.input) > 2 and n.input[2] else None
                pads, groups = a.get("pads", (0, 0, 0, 0)), a.get("group", 1)
                if tuple(pads[:2]) != tuple(pads[2:]) or any(a.get("output_padding", ())):
                    raise SystemExit("toolchain_export: ConvTranspose with asymmetric or output padding")
                conv = nn.ConvTranspose2d(w.shape[0], w.shape[1] * groups, tuple(w.shape[2:]),
                                          stride=tuple(a.get("strides", (1, 1))), padding=tuple(pads[:2]),
                                          dilation=tuple(a.get("dilations", (1, 1))), groups=groups,
                                          bias=b is not None)
                conv.weight.data = torch.from_numpy(w.copy())
                if b is not None:
                    conv.bias.data = torch.from_numpy(b.copy())
                layer = conv
            elif n.op_type == "MaxPool":
                pt, pl, pb, pr = a.get("pads", (0, 0, 0, 0))
                if (pt, pl) != (pb, pr) or a.get("ceil_mode", 0):
                    raise SystemExit("toolchain_export: MaxPool with asymmetric padding or ceil_mode")
                layer = nn.MaxPool2d(tuple(a["kernel_shape"]), stride=tuple(a.get("strides", (1, 1))), padding=(pt, pl))
            elif n.op_type == "BatchNormalization":
                scale = init[n.input[1]]
                layer = nn.BatchNorm2d(scale.shape[0], eps=a.get("epsilon", 1e-5))
                for attr, src in zip(("weight", "bias", "running_mean", "running_var"), n.input[1:5], strict=True):
                    getattr(layer, attr).data = torch.from_numpy(init[src].copy())
            elif n.op_type == "Clip":
                bound = [float(init[i].reshape(-1)[0]) if i else None for i in [*n.input[1:3], "", ""][:2]]
                lo = a.get("min", -np.inf) if bound[0] is None else bound[0]
                hi = a.get("max", np.inf) if bound[1] is None else bound[1]
                layer = nn.ReLU6() if (lo, hi) == (0.0, 6.0) else nn.Hardtanh(lo, hi)
            elif n.op_type == "Relu":
                layer = nn.ReLU()
            elif n.op_type == "GlobalAveragePool":
                layer = nn.AdaptiveAvgPool2d(1)
            elif n.op_type == "Flatten":
                layer = nn.Flatten(a.get("axis", 1))
            elif n.op_type == "Gemm":
                w, b = init[n.input[1]], init[n.input[2]]
                if not a.get("transB", 0):
                    w = w.T
                layer = nn.Linear(w.shape[1], w.shape[0])
                layer.weight.data = torch.from_numpy(np.ascontiguousarray(w))
                layer.bias.data = torch.from_numpy(b.copy())
            elif n.op_type == "Concat":
                layer = Concat(a.get("axis", 1))
            elif n.op_type != "Add":
                raise SystemExit(f"toolchain_export: {n.op_type} is not among the ops it builds ({sorted(SUPPORTED)})")
            if layer is not None:
                self.layers.append(layer)
            ins = [i for i in n.input if i and i not in init]
            self.steps.append((n.op_type, len(self.layers) - 1 if layer is not None else -1, ins, n.output[0]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        env = {self.input: x}
        for kind, k, ins, out in self.steps:
            if kind == "Add":
                env[out] = env[ins[0]] + env[ins[1]]
            elif kind == "Concat":
                env[out] = self.layers[k](*(env[i] for i in ins))
            else:
                env[out] = self.layers[k](env[ins[0]])
        return env[self.output]


def main() -> None:
    src, out = Path(sys.argv[1]), Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    model = onnx.load(str(src))
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    module = OnnxModule(model).eval()
    x = torch.from_numpy(np.random.default_rng(0).uniform(-1, 1, shape).astype(np.float32))
    with torch.no_grad():
        want = module(x).numpy()
    import litert_torch

    tflite = out / "model.tflite"
    litert_torch.convert(module, (x,)).export(str(tflite))
    onnx_path = out / "model.onnx"
    torch.onnx.export(module, (x,), str(onnx_path), input_names=[model.graph.input[0].name],
                      output_names=[model.graph.output[0].name], opset_version=18, external_data=False)
    diffs = {}
    from ai_edge_litert.interpreter import Interpreter

    interp = Interpreter(model_path=str(tflite))
    interp.allocate_tensors()
    interp.set_tensor(interp.get_input_details()[0]["index"], x.numpy())
    interp.invoke()
    diffs["tflite"] = float(np.abs(interp.get_tensor(interp.get_output_details()[0]["index"]) - want).max())
    import importlib.metadata as md

    versions = {p: md.version(p) for p in ("torch", "litert-torch", "onnx")}
    print(json.dumps({"tflite": str(tflite), "onnx": str(onnx_path), "max_abs_diff": diffs, "versions": versions}))


if __name__ == "__main__":
    main()
