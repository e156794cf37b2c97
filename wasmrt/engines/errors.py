"""C engine error codes -> the Python exceptions users see, with the engine's message."""

from __future__ import annotations

from wasmrt.engines.base import ERR_FORMAT, ERR_INPUT, ERR_LIMIT, ERR_NOMEM, ERR_UNSUPPORTED
from wasmrt.errors import InputError, ModelFormatError, OutOfMemoryError, ResourceLimitError, WasmrtError


def engine_error(code: int, message: str, label: str) -> WasmrtError:
    text = f"{label}: {message}" if label else message
    if code in (ERR_FORMAT, ERR_UNSUPPORTED):
        return ModelFormatError(text)
    if code == ERR_INPUT:
        return InputError(text)
    if code == ERR_NOMEM:
        return OutOfMemoryError(f"{text} (out of memory)" if "memory" not in message else text)
    if code == ERR_LIMIT:
        return ResourceLimitError(text)
    return WasmrtError(f"{text} (engine error code {code})")
