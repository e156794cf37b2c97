"""Post-training quantization: calibration, clipping, fitted rounding, bias correction, sensitivity, report."""

from wasmrt.host import require_cpython

require_cpython("wasmrt.quantize")

