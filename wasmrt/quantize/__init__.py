"""Post-training quantization: calibration, clipping, fitted rounding, bias correction, sensitivity, report."""
