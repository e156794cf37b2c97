"""`wasmrt quantize --report`: how far the int8 model is from the float one, per layer and at the outputs.

Per layer (every op output the quantizer made int8): SQNR = 10 log10(sum f^2 / sum (f - dq)^2) in dB, where f is the
float model's value and dq the int8 model's value dequantized, plus the RMS and largest error in quantization steps.
At the outputs: for a classifier (labels stored and an output of that many classes) the top-1 and top-5 agreement
with the float model, otherwise the error relative to the output's range. The int8 model runs on python_ref (the
definition), the float model on the native engine.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from python_ref import quant as qm
from wasmrt.compile.ir import Graph
from wasmrt.compile.quantizer import Plan
from wasmrt.quantize.calibrate import Tracer, activations


@dataclass
class LayerError:
    name: str
    op: str
    sqnr_db: float
    rms_steps: float
    max_steps: float


@dataclass
class OutputError:
    name: str
    samples: int
    top1: float | None = None  # classifiers: agreement with the float model
    top5: float | None = None
    max_abs: float = 0.0
    mean_abs: float = 0.0
    range: float = 0.0  # max - min of the float output over the samples

    def line(self) -> str:
        if self.top1 is not None:
            return (f"{self.name}: top-1 agreement with float {100 * self.top1:.1f}%, top-5 {100 * self.top5:.1f}% "
                    f"({self.samples} samples)")
        rel = self.max_abs / self.range if self.range else 0.0
        return (f"{self.name}: max |int8 - float| {self.max_abs:.4g} ({100 * rel:.2f}% of the output's range "
                f"{self.range:.4g}), mean {self.mean_abs:.4g} ({self.samples} samples)")


@dataclass
class Report:
    layers: list[LayerError]
    outputs: list[OutputError]
    float_bytes: int = 0
    int8_bytes: int = 0
    kept_float: dict[str, str] | None = None

    def text(self) -> str:
        lines = [f"{'layer':48s} {'op':18s} {'SQNR dB':>8s} {'RMS steps':>10s} {'max steps':>10s}"]
        lines += [f"{e.name[:48]:48s} {e.op:18s} {e.sqnr_db:8.1f} {e.rms_steps:10.2f} {e.max_steps:10.1f}"
                  for e in self.layers]
        lines.append("")
        lines += [o.line() for o in self.outputs]
        if self.float_bytes:
            lines.append(f"size: {self.int8_bytes:,} bytes int8 vs {self.float_bytes:,} float32 "
                         f"({self.int8_bytes / self.float_bytes:.3f}x)")
        if self.kept_float:
            lines.append("kept float: " + ", ".join(f"{k} ({v})" for k, v in self.kept_float.items()))
        return "\n".join(lines)

    def save_json(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=1))


def is_classifier(graph: Graph, output: str) -> bool:
    labels = graph.metadata.labels
    return bool(labels) and graph.tensors[output].shape[-1] == len(labels)


def measure(src: Graph, qg: Graph, plan: Plan, samples: list[dict[str, np.ndarray]],
            progress: Callable[[str, int, int], None] | None = None) -> Report:
    names = activations(src)
    trace = Tracer(src, names)
    sums: dict[str, np.ndarray] = {}  # [sum f^2, sum err^2, count, max |err| / step]
    outs: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {o: [] for o in src.outputs}
    for k, s in enumerate(samples):
        f = trace(s)
        q = qg.evaluate(s)
        for name, qname in plan.int8.items():
            t = qg.tensors[qname]
            if name not in f or t.quant is None:
                continue
            err = qm.dequantize(q[qname], t.quant).astype(np.float64) - f[name].astype(np.float64)
            acc = sums.setdefault(name, np.zeros(4))
            acc += [float(np.sum(np.square(f[name], dtype=np.float64))), float(np.sum(err * err)), err.size, 0.0]
            acc[3] = max(acc[3], float(np.max(np.abs(err))) / float(t.quant.s) if err.size else 0.0)
        for o in src.outputs:
            outs[o].append((f[o].reshape(-1).astype(np.float64), q[o].reshape(-1).astype(np.float64)))
        if progress:
            progress("report (int8 on python_ref)", k + 1, len(samples))
    producers = src.producers()
    layers = []
    for name, (ff, ee, n, mx) in sums.items():
        step = float(qg.tensors[plan.int8[name]].quant.s)
        sqnr = 10 * np.log10(ff / ee) if ee > 0 else float("inf")
        layers.append(LayerError(name, producers[name].op if name in producers else "input", float(sqnr),
                                 float(np.sqrt(ee / max(n, 1)) / step), float(mx)))
    return Report(layers, [_output_error(src, o, v) for o, v in outs.items()])


def _output_error(src: Graph, name: str, pairs: list[tuple[np.ndarray, np.ndarray]]) -> OutputError:
    f = np.stack([p[0] for p in pairs])
    q = np.stack([p[1] for p in pairs])
    e = OutputError(name, len(pairs), max_abs=float(np.max(np.abs(q - f))), mean_abs=float(np.mean(np.abs(q - f))),
                    range=float(f.max() - f.min()))
    if is_classifier(src, name):
        e.top1 = float(np.mean(np.argmax(f, 1) == np.argmax(q, 1)))
        top5 = np.argsort(-q, axis=1)[:, :5]
        e.top5 = float(np.mean([a in t for a, t in zip(np.argmax(f, 1), top5, strict=True)]))
    return e


def save_plot(path: Path, report: Report, title: str, log: Callable[[str], None]) -> bool:
    """SQNR per layer in graph order (bars), RMS error in steps (line), the output summary as the title."""
    from wasmrt.progress import pyplot

    plt = pyplot(log)
    if plt is None:
        log("matplotlib is not available: no plot")
        return False
    n = len(report.layers)
    fig, ax = plt.subplots(figsize=(max(8.0, 0.16 * n + 3), 4.5))
    x = np.arange(n)
    sqnr = [min(e.sqnr_db, 80.0) for e in report.layers]
    ax.bar(x, sqnr, color="#1c7ed6", label="SQNR (dB, left)")
    ax.set_ylabel("SQNR vs float (dB)")
    ax.set_xticks(x, [e.name[-28:] for e in report.layers], rotation=90, fontsize=5)
    ax2 = ax.twinx()
    ax2.plot(x, [e.rms_steps for e in report.layers], color="#d9480f", marker=".", label="RMS error (steps, right)")
    ax2.set_ylabel("RMS error (quantization steps)")
    ax.set_title(title + "\n" + "; ".join(o.line() for o in report.outputs), fontsize=8)
    fig.legend(loc="upper right", fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True

