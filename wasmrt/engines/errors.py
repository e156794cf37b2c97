"""C engine error codes -> the Python exceptions users see, with the engine's message (the code -> class map is
python_ref.errors.ENGINE_ERRORS, which the JS binding's map is generated from)."""

from __future__ import annotations

from python_ref.errors import WasmrtError, error_for_code


def engine_error(code: int, message: str, label: str) -> WasmrtError:
    """label: the model's path or "<bytes>" for a failed load (put before the message), "" for other calls."""
    return error_for_code(code, message, label)
